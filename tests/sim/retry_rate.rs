//! `retry_rate_thread_mean`: the mean over threads of each thread's 429s /
//! requests, overall and per group, on a run whose counts are worked out by hand.

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::parse_scenario;

#[test]
fn the_thread_mean_weighs_threads_alike_where_the_pooled_ratio_does_not() {
    // One request per hour is allowed, 100 ms round trips. `a` sleeps 1 s: sends at 1.0 s
    // (the only 2xx), 2.1, 3.2, … 9.8 s: 9 requests, 8 429s. `b` sleeps 3 s: sends at 3.0, 6.1
    // and 9.2 s: 3 requests, 3 429s. `c` joins at 10.4 s and would first send at 11.4 s, after
    // the end: no requests, so it is left out of the mean.
    let s = parse_scenario(
        r#"
[run]
duration = "10.5s"
[server]
kind = "fixed-window"
limit = 1
window = "1h"
latency = "100ms"
[[clients]]
name = "a"
algorithm = "fixed"
sleep = "1s"
[[clients]]
name = "b"
key = "default"
algorithm = "fixed"
sleep = "3s"
[[clients]]
name = "c"
start = "10.4s"
algorithm = "fixed"
sleep = "1s"
[expect]
retry_rate_thread_mean = [0.944, 0.945]
"#,
        "inline.toml",
        "inline",
        &[],
        1,
    )
    .unwrap();
    let sum = summarize(&s);
    let m = &sum.metrics;
    assert_eq!((m.requests, m.limited), (12, 11));
    assert!((m.ratio_429 - 11.0 / 12.0).abs() < 1e-12);
    let mean = m.retry_rate_thread_mean.unwrap();
    assert!((mean - (8.0 / 9.0 + 1.0) / 2.0).abs() < 1e-12, "{mean}");
    let group = |i: usize| sum.groups[i].metrics.retry_rate_thread_mean;
    assert!((group(0).unwrap() - 8.0 / 9.0).abs() < 1e-12);
    assert_eq!(group(1), Some(1.0));
    assert_eq!(group(2), None, "a group that sent nothing has no rate");
    assert!(sum.missed().next().is_none(), "[expect] can bound it");
    let json = serde_json::to_value(&sum).unwrap();
    assert!(json["retry_rate_thread_mean"].is_f64());
    assert!(json["groups"][2]["retry_rate_thread_mean"].is_null());
}
