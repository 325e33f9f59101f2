//! A process that joins a busy key, against windows that state when their *next* request is let
//! in: a sliding log stating when its oldest admission leaves (Flask-Limiter's moving window)
//! and a sliding-window counter stating its next drop, in Flask-Limiter's fields (a limit and
//! an epoch-second reset, no period). The processes that were there first read a whole period
//! from their first answers; the newcomer only ever reads resets under a second at a level near
//! empty, which is what a bucket that fills within a second states, and it learns a refill many
//! times the key's. docs/fair-share-notes.md ("Measured on 0.27.0 and left open") has the
//! numbers and what was tried.

use crate::common::agreement::sim_requests;

/// The key's window and the judged periods, seconds.
const PERIOD: f64 = 5.0;
/// The run's length, seconds.
const RUN: f64 = 60.0;
/// The newcomer starts here; the periods judged start two periods later.
const JOIN: f64 = 20.0;

/// Three processes of four threads on 50 per 5 s from the start, a fourth of four threads
/// joining at 20 s, a minute in all (simulated in memory), in the server rule `rule`: each
/// judged period's 2xx per process (the newcomer last), from two periods after the join.
fn periods_after_join(rule: &str, seed: u64) -> Vec<Vec<u64>> {
    let scenario = format!(
        r#"name = "join"
[run]
duration = "{RUN}s"
sample_every = "{PERIOD}s"
[server]
{rule}
limit = 50
window = "{PERIOD}s"
headers = "flask-limiter"
latency = "1.3ms"
[[clients]]
name = "stay"
processes = 3
threads = 4
algorithm = "fair-share"
[[clients]]
name = "late"
processes = 1
threads = 4
algorithm = "fair-share"
start = "{JOIN}s"
"#
    );
    let text = sim_requests(&scenario, seed);
    let mut rows = csv::Reader::from_reader(text.as_bytes());
    let head = rows.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (t, group, process, status) = (col("t"), col("group"), col("process"), col("status"));
    let first = ((JOIN / PERIOD) as usize) + 2;
    let mut periods = vec![vec![0u64; 4]; (RUN / PERIOD) as usize - first];
    for row in rows.records() {
        let row = row.unwrap();
        let k = (row[t].parse::<f64>().unwrap() / PERIOD) as usize;
        if row[status] != *"ok" || k < first || k - first >= periods.len() {
            continue;
        }
        let who = match &row[group] {
            "late" => 3,
            _ => row[process].parse::<usize>().unwrap(),
        };
        periods[k - first][who] += 1;
    }
    periods
}

/// The newcomer's share of the 2xx over the judged periods.
fn newcomer_share(periods: &[Vec<u64>]) -> f64 {
    let late: u64 = periods.iter().map(|p| p[3]).sum();
    let all: u64 = periods.iter().flatten().sum();
    late as f64 / all.max(1) as f64
}

/// Issue 43's rule for every limiter is that a process never keeps more than twice another's
/// share for long: over the judged periods, the newcomer's 2xx lie between half and twice the
/// mean of the others', a share of the four between 1/7 and 2/5 (fair: 1/4).
fn assert_shared(rule: &str) {
    for seed in 1..=3 {
        let periods = periods_after_join(rule, seed);
        let share = newcomer_share(&periods);
        assert!(
            (1.0 / 7.0..=0.4).contains(&share),
            "seed {seed}: the newcomer took {share:.2} of the 2xx; per period (the newcomer last): {periods:?}"
        );
    }
}

/// Held on the fixed window opened by the first request that is Flask-Limiter's default
/// strategy: there the newcomer reads the window's end, and takes 0.22 to 0.37 of the 2xx.
#[test]
fn a_newcomer_shares_a_busy_fixed_window() {
    assert_shared("kind = \"fixed-window\"\nstart = \"first-request\"");
}

#[test]
#[ignore = "fails with fair-share 0.27.0 to 0.30.0: the newcomer on a busy sliding log stating its oldest admission learns a refill of 89 to 145 a second (the key's is 10) from resets under a second, and takes 0.79 to 0.84 of the 2xx on seeds 1 to 3 (fair: 0.25); docs/fair-share-notes.md, \"Measured on 0.27.0 and left open\""]
fn a_newcomer_shares_a_busy_sliding_log_stating_its_oldest_admission() {
    assert_shared("kind = \"sliding-window\"\nreset = \"oldest\"");
}

#[test]
#[ignore = "fails with fair-share 0.27.0 to 0.30.0: as on the sliding log, the newcomer on a busy sliding-window counter stating its next drop takes 0.61 to 0.67 of the 2xx on seeds 1 to 3 (fair: 0.25); docs/fair-share-notes.md, \"Measured on 0.27.0 and left open\""]
fn a_newcomer_shares_a_busy_counter_stating_its_next_drop() {
    assert_shared("kind = \"sliding-window-counter\"\nreset = \"next-drop\"");
}
