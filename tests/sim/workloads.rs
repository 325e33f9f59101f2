//! Workloads and stop rules: a shared job pool, stopping on the server's
//! `remaining`, and a bucket that never refills, on inline scenarios whose numbers are worked
//! out by hand in each test.

use throttle_sim::engine::sim::summarize;

use crate::common;
use common::inline;

const UNLIMITED: &str = r#"
[run]
duration = "1m"
sample_every = "1s"
[server]
limit = 1000
period = "1s"
latency = "20ms"
"#;

#[test]
fn a_pool_is_drained_by_all_threads_together() {
    // 3 unthrottled threads share 10 jobs, 20 ms per round trip. Each takes one at 0 ms
    // (7 left), and one more at 20 ms (4 left) and at 40 ms (1 left); at 60 ms thread 0 takes
    // the last and the other two find the pool empty. Its 2xx at 80 ms clears the pool.
    let s = summarize(&inline(&format!(
        "{UNLIMITED}[[clients]]\nname = \"q\"\nthreads = 3\npool = 10\nalgorithm = \"none\"\n"
    )));
    assert_eq!((s.metrics.requests, s.metrics.ok), (10, 10));
    assert_eq!(s.metrics.time_to_clear, Some(0.08));
    assert_eq!(s.groups[0].metrics.time_to_clear, Some(0.08));
    // The same with `jobs = 10` is 10 jobs per thread: 30 in all, done at 200 ms.
    let s = summarize(&inline(&format!(
        "{UNLIMITED}[[clients]]\nname = \"q\"\nthreads = 3\njobs = 10\nalgorithm = \"none\"\n"
    )));
    assert_eq!((s.metrics.ok, s.metrics.time_to_clear), (30, Some(0.2)));
}

#[test]
fn more_threads_than_jobs_leave_some_idle_and_still_clear() {
    // 5 threads, 2 jobs: threads 0 and 1 take them at 0 ms and are done at 20 ms.
    let s = summarize(&inline(&format!(
        "{UNLIMITED}[[clients]]\nname = \"q\"\nthreads = 5\npool = 2\nalgorithm = \"none\"\n"
    )));
    assert_eq!((s.metrics.requests, s.metrics.ok), (2, 2));
    assert_eq!(s.metrics.time_to_clear, Some(0.02));
}

#[test]
fn a_bucket_without_refill_is_a_stock_and_a_bigger_pool_never_clears() {
    // 5 tokens that never come back, 8 jobs: 5 succeed, then every request is a 429.
    for kind in ["", "kind = \"token-bucket\"\nrate = 1000\nburst = 5\n"] {
        let limit = if kind.is_empty() {
            "limit = 5\nperiod = \"1s\"\n"
        } else {
            ""
        };
        let s = summarize(&inline(&format!(
            r#"
[run]
duration = "10s"
[server]
{kind}{limit}refill = false
latency = "20ms"
[[clients]]
name = "q"
threads = 2
pool = 8
algorithm = "fixed"
sleep = "1s"
"#
        )));
        assert_eq!(s.metrics.ok, 5, "{kind}");
        assert_eq!(s.metrics.capacity, 5.0, "{kind}");
        assert_eq!(
            s.metrics.time_to_clear, None,
            "{kind}: 3 jobs never got a 2xx"
        );
        assert!(s.metrics.limited > 0, "{kind}");
    }
}

#[test]
fn threads_stop_once_remaining_falls_to_the_threshold() {
    // 100 tokens, no refill, two unthrottled threads, 20 ms per round trip. In round k (both
    // send at (k−1)×20 ms) thread 0 is told 100 − (2k − 1) left and thread 1 100 − 2k. Thread 1
    // hears 10 in round 45 (answer at 900 ms) and stops; thread 0 hears 11, then 9 in round 46
    // (920 ms) and stops: 91 requests, cleared at 0.92 s.
    let s = summarize(&inline(
        r#"
[run]
duration = "1m"
[server]
limit = 100
period = "1h"
refill = false
latency = "20ms"
[[clients]]
name = "drain"
threads = 2
stop_when_remaining_at_most = 10
algorithm = "none"
"#,
    ));
    assert_eq!((s.metrics.requests, s.metrics.ok), (91, 91));
    assert_eq!(s.metrics.time_to_clear, Some(0.92));
}
