//! Three readings that took a whole fleet's share from `fair-share` 0.24.0 on the generated
//! shapes, each held here on a small scenario that showed it (crates/fair-share/CHANGELOG.md,
//! 0.25.0): a stated end moved by one slow answer, a start's refusals that kept the held top
//! from being read, and a counter's far next drop read as a bucket that fills in months.

use throttle_sim::engine::sim::summarize;
use throttle_sim::record::Metrics;

use crate::common::inline;

fn run(text: &str) -> Metrics {
    summarize(&inline(text)).metrics
}

/// Ten processes of four threads on a fixed window of 3,000 per 10 minutes (IETF's fields), with
/// heavy-tailed latency (median 250 ms, σ = 1): now and then one answer comes seconds after the
/// server counted it, and its end (`t` + reset) lies that much later. Read against two
/// resolutions, that was the end drifting: the process read a bucket again, full, and drained
/// its "surplus" at up to four times the quota while the others spent the window evenly
/// (fairness 0.31–0.51 on seeds 1–4). An end is now allowed a resolution and the latency of
/// the slower of the two answers.
#[test]
fn a_slow_answer_does_not_move_a_fixed_windows_end() {
    let text = r#"
[run]
duration = "40m"
seed = 1
[server]
kind = "fixed-window"
limit = 3000
window = "10m"
headers = "ietf"
latency = { distribution = "lognormal", median = "250ms", sigma = 1.0 }
[[clients]]
name = "w"
processes = 10
threads = 4
algorithm = "fair-share"
"#;
    let m = run(text);
    assert!(m.fairness > 0.9, "{m:?}");
    assert!(m.ratio_429 < 0.005, "{m:?}");
}

/// nginx's 144 a second with a burst of 9, in Heroku's fields (the count alone), under two
/// processes of 18 threads told the quota: both are refused in the start's crowd and cut, and
/// the held top, which left a process once refused alone, never read the bucket of 10 tokens.
/// They stepped down against a count of 9 they could not raise, to 0.03 of the quota in 10
/// minutes. A cut before any window of the law closed no longer keeps the test from running.
#[test]
fn a_cut_in_the_start_leaves_the_held_top_to_be_read() {
    let text = r#"
[run]
duration = "5m"
seed = 1
[server]
kind = "leaky-bucket"
rate = "144r/s"
burst = 9
delay = "nodelay"
headers = "heroku"
latency = "1ms"
[[clients]]
name = "w"
processes = 2
threads = 18
algorithm = "fair-share"
quota = 144
period = "1s"
"#;
    let m = run(text);
    assert!(m.utilization > 0.9, "{m:?}");
    assert!(m.ratio_429 < 0.005, "{m:?}");
}

/// A sliding-window counter of 5,760 per 16 min 55 s in @fastify/rate-limit's fields (a limit
/// and a reset, no policy, nothing told), under one process of 8 threads: with two requests
/// counted it states its next drop 1,522 s off, which as a bucket's reset bounds the refill at
/// 1/1,522 a second, a bucket filling in 101 days. The process sent 5 requests in half an hour.
/// A bound that slow is now no bucket's: the refill is the limit over the longest reset stated
/// (about 0.57 of the counter's rate, its period read from below).
#[test]
fn a_counters_far_next_drop_is_no_bucket_filling_in_months() {
    let text = r#"
[run]
duration = "30m"
seed = 1
[server]
kind = "sliding-window-counter"
limit = 5760
window = "16m55s"
headers = "fastify"
latency = "12ms"
[[clients]]
name = "w"
processes = 1
threads = 8
algorithm = "fair-share"
"#;
    let m = run(text);
    assert!(m.utilization > 0.4, "{m:?}");
    assert!(m.ratio_429 < 0.005, "{m:?}");
}
