//! How much memory a run will hold, known before it starts: the engine and the recorder keep
//! state per process and per thread (and a live run starts an OS process per client process),
//! so a scenario of millions of processes can ask for more than the machine has. Such a run
//! is refused with the estimate, rather than aborted by the allocator gigabytes later.

use crate::scenario::{Mode, Scenario};

/// The sim's and the parent's state per client process: its throttle, the recorder's
/// counters, and its entry in `summary.json` (about 190 bytes of text), with room for the
/// heavier algorithms (measured: 1.2 KB for `fixed`, 1.6 KB for `fair-share`).
pub const PER_PROCESS: u64 = 4 << 10;
/// Per client thread (measured: 0.5-0.6 KB).
pub const PER_THREAD: u64 = 1 << 10;
/// A live run's worker: an OS process of its own (about 7 MB resident each).
pub const PER_WORKER: u64 = 8 << 20;
/// A live thread inside its worker: a task, its connection and buffers.
pub const PER_LIVE_THREAD: u64 = 64 << 10;

/// A run that would need more memory than is free for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{processes} process{} of {threads} thread{} in all would need about {} of memory ({}), \
     more than the {} free on this machine: run fewer processes (a group's threads share a \
     process{})",
    if *processes == 1 { "" } else { "es" },
    if *threads == 1 { "" } else { "s" },
    gb(*needed),
    per_unit(*live),
    gb(*available),
    if *live { ", and each live process is an OS process" } else { "" }
)]
pub struct TooBigForMemory {
    pub processes: u64,
    pub threads: u64,
    pub needed: u64,
    pub available: u64,
    pub live: bool,
}

fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

fn per_unit(live: bool) -> &'static str {
    if live {
        "about 8 MB a process, 64 KB a thread"
    } else {
        "about 4 KB a process, 1 KB a thread"
    }
}

/// About how many bytes a run of `scenario` holds.
pub fn memory_estimate(scenario: &Scenario) -> u64 {
    let (processes, threads) = sizes(scenario);
    let own = processes
        .saturating_mul(PER_PROCESS)
        .saturating_add(threads.saturating_mul(PER_THREAD));
    match scenario.run.mode {
        Mode::Sim => own,
        Mode::Live => own
            .saturating_add(processes.saturating_mul(PER_WORKER))
            .saturating_add(threads.saturating_mul(PER_LIVE_THREAD)),
    }
}

/// `Some` when a run of `scenario` would need more than `available` bytes.
pub fn too_big_for(scenario: &Scenario, available: u64) -> Option<TooBigForMemory> {
    let needed = memory_estimate(scenario);
    let (processes, threads) = sizes(scenario);
    (needed > available).then_some(TooBigForMemory {
        processes,
        threads,
        needed,
        available,
        live: scenario.run.mode == Mode::Live,
    })
}

/// Client processes and threads in all.
fn sizes(scenario: &Scenario) -> (u64, u64) {
    let processes = scenario
        .clients
        .iter()
        .map(|g| u64::from(g.common.processes))
        .sum();
    (processes, scenario.threads_total())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario;

    fn scenario(processes: u64, threads: u64, mode: &str) -> Scenario {
        let text = format!(
            "name = \"m\"\n[run]\nmode = \"{mode}\"\nduration = \"1m\"\n[[clients]]\nname = \"a\"\n\
             processes = {processes}\nthreads = {threads}\n"
        );
        parse_scenario(&text, "m.toml", "m", &[], 1).unwrap()
    }

    /// 10 million processes passed validation and aborted at 12 GB, after a 1.8 GB
    /// summary.json; `client --processes 100000` (7 MB a worker) had no bound at all.
    #[test]
    fn a_run_past_the_machine_s_memory_is_refused_with_the_estimate() {
        let free = 16_000_000_000;
        let e = too_big_for(&scenario(10_000_000, 1, "sim"), free).unwrap();
        assert!(e.needed > 40_000_000_000, "{e:?}");
        assert!(
            e.to_string().starts_with(
                "10000000 processes of 10000000 threads in all would need about 51.2 GB"
            ),
            "{e}"
        );
        assert!(e.to_string().contains("the 16.0 GB free"), "{e}");
        let e = too_big_for(&scenario(100_000, 1, "live"), free).unwrap();
        assert!(e.to_string().contains("about 8 MB a process"), "{e}");
        // What the bundled scenarios and the large sweeps run fits.
        assert_eq!(too_big_for(&scenario(400, 25, "sim"), free), None);
        assert_eq!(too_big_for(&scenario(1, 200_000, "sim"), free), None);
        assert_eq!(too_big_for(&scenario(25, 4, "live"), free), None);
    }
}
