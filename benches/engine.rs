//! Regression benchmarks of the sim engine's hot paths, with divan:
//!
//!     cargo bench --bench engine
//!
//! - `sim_series_on` / `sim_series_off`: whole sim runs of 25, 1,000 and 10,000 threads
//!   (processes of 25 threads against a limit high enough to keep them busy, the
//!   `scripts/bench_sim.py` case), counted in simulated requests per second; series rows
//!   every 60 s are formatted (and dropped), or only one tick at the end.
//! - `tick`: one sampling tick of 10,000 threads at each `[run] series` level, counted in
//!   threads per second.
//!
//! The numbers of the whole runs are those `scripts/bench_sim.py` gives through the binary,
//! less the file writes; the script is the one to quote, these are for catching regressions.

use divan::counter::ItemsCount;
use divan::{Bencher, black_box};
use throttle_sim::engine::sim;
use throttle_sim::record::Recorder;
use throttle_sim::scenario::{Layout, Scenario, SeriesLevel, parse_scenario};

fn main() {
    divan::main();
}

/// `threads` threads (processes of 25) of schneems against GCRA at 10 M/h for `duration`.
fn busy(threads: usize, duration: &str, sample_every: &str) -> Scenario {
    let text = format!(
        r#"name = "bench"
[run]
duration = "{duration}"
seed = 42
sample_every = "{sample_every}"
[server]
limit = 10000000
period = "1h"
initial = 500
latency = "20ms"
[[clients]]
name = "workers"
processes = {processes}
threads = {per}
algorithm = "schneems"
max_limit = 10000000.0
"#,
        processes = threads.div_ceil(25),
        per = threads.min(25),
    );
    parse_scenario(&text, "bench.toml", "bench", &[], 42).expect("the bench scenario is valid")
}

/// About a second of work at 5 M requests/s whatever the thread count (25 threads send
/// about 250 a second, more threads are held to the limit's 2,778).
fn duration_for(threads: usize) -> &'static str {
    if threads <= 25 { "3h" } else { "20m" }
}

fn bench_run(bencher: Bencher, scenario: Scenario) {
    let requests = sim::summarize(&scenario).metrics.requests;
    bencher
        .counter(ItemsCount::new(requests))
        .bench(|| black_box(sim::summarize(black_box(&scenario))));
}

#[divan::bench(args = [25, 1000, 10000], sample_count = 5, sample_size = 1)]
fn sim_series_on(bencher: Bencher, threads: usize) {
    bench_run(bencher, busy(threads, duration_for(threads), "60s"));
}

#[divan::bench(args = [25, 1000, 10000], sample_count = 5, sample_size = 1)]
fn sim_series_off(bencher: Bencher, threads: usize) {
    let d = duration_for(threads);
    bench_run(bencher, busy(threads, d, d));
}

#[divan::bench(args = ["thread", "process", "group"], sample_count = 20)]
fn tick(bencher: Bencher, level: &str) {
    let level = match level {
        "thread" => SeriesLevel::Thread,
        "process" => SeriesLevel::Process,
        _ => SeriesLevel::Group,
    };
    let scenario = busy(10_000, "100h", "1s");
    let layout = Layout::new(&scenario);
    let sleeps = vec![1.25; layout.processes.len()];
    let mut rec = Recorder::new(
        &layout,
        1_000_000_000,
        std::io::sink(),
        None::<std::io::Sink>,
    )
    .expect("a sink takes the header")
    .with_series_level(level);
    bencher
        .counter(ItemsCount::new(layout.threads.len()))
        .bench_local(|| {
            let t = rec
                .next_tick()
                .expect("100 h of 1 s ticks outlast the bench");
            rec.tick(t, black_box(&sleeps))
                .expect("a sink takes every row");
        });
}
