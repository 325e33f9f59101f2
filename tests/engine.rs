//! Engine mechanics on small scenarios written inline.

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::{Scenario, parse_scenario};

fn scenario(text: &str) -> Scenario {
    parse_scenario(text, "inline.toml", "inline", &[], 1).unwrap()
}

#[test]
fn a_finite_workload_clears_and_its_threads_stop() {
    // 2 unthrottled threads, 10 jobs each, 20 ms per answer and plenty of tokens:
    // each thread needs 10 round trips, so the last job is done at 200 ms.
    let s = summarize(&scenario(
        r#"
[run]
duration = "1m"
sample_every = "1s"
[server]
limit = 1000
period = "1s"
latency = "20ms"
[[clients]]
name = "batch"
threads = 2
jobs = 10
algorithm = "none"
"#,
    ));
    assert_eq!(s.metrics.ok, 20);
    assert_eq!(s.metrics.requests, 20);
    assert_eq!(s.metrics.time_to_clear, Some(0.2));
}

#[test]
fn a_workload_that_cannot_clear_has_no_time_to_clear() {
    // One token per minute cannot serve 5 jobs in one minute.
    let s = summarize(&scenario(
        r#"
[run]
duration = "1m"
[server]
limit = 1
period = "1m"
[[clients]]
name = "batch"
jobs = 5
algorithm = "fixed"
sleep = "1s"
"#,
    ));
    assert!(s.metrics.ok < 5);
    assert_eq!(s.metrics.time_to_clear, None);
}

#[test]
fn unthrottled_clients_get_exactly_the_capacity() {
    let s = summarize(&scenario(
        r#"
[run]
duration = "10m"
[server]
limit = 60
period = "1m"
initial = 0
latency = "1ms"
[[clients]]
name = "greedy"
processes = 3
threads = 4
algorithm = "none"
"#,
    ));
    // 1 token per second for 600 s, each taken the instant it refills; the one that refills
    // at exactly 600 s cannot be used, as nothing is sent at the end instant.
    assert_eq!(s.metrics.ok, 599);
    assert!((s.metrics.utilization - 599.0 / 600.0).abs() < 1e-9);
    assert!(s.metrics.ratio_429 > 0.99);
}

#[test]
fn the_same_seed_gives_the_same_summary_and_another_seed_another() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/heroku_5x5.toml"
    ))
    .unwrap();
    let a = summarize(&parse_scenario(&text, "h", "h", &[], 0).unwrap());
    let b = summarize(&parse_scenario(&text, "h", "h", &[], 0).unwrap());
    let c =
        summarize(&parse_scenario(&text, "h", "h", &["run.seed=43".parse().unwrap()], 0).unwrap());
    assert_eq!(a, b);
    assert_ne!(a.metrics.requests, c.metrics.requests);
}

#[test]
fn peaks_count_the_busiest_window_per_process_group_and_key() {
    // Threads that sleep exactly 1 s and get answers after 20 ms send at 1 s, 2.02 s, 3.04 s…:
    // the two threads of `pair` always send together, `single` with them, on one key.
    let text = r#"
[run]
duration = "1m"
peak_window = "1s"
[server]
limit = 1000
period = "1s"
latency = "20ms"
[[clients]]
name = "pair"
threads = 2
algorithm = "fixed"
[[clients]]
name = "single"
algorithm = "fixed"
"#;
    let s = summarize(&scenario(text));
    assert_eq!(s.metrics.peak_requests, Some(3));
    assert_eq!(s.metrics.peak_process_requests, Some(2));
    assert_eq!(s.groups[0].metrics.peak_requests, Some(2));
    assert_eq!(s.groups[1].metrics.peak_requests, Some(1));
    assert_eq!(s.groups[1].metrics.peak_process_requests, Some(1));
    // A window a little longer than the spacing of 1.02 s sees two rounds.
    let s = summarize(&scenario(
        &text.replace("\"1s\"\n[server]", "\"1030ms\"\n[server]"),
    ));
    assert_eq!(s.metrics.peak_requests, Some(6));
    // Without a window the metrics are null, and `[expect]` on them is missed.
    let s = summarize(&scenario(&format!(
        "{}\n[expect]\npeak_requests = [0, 10]\n",
        text.replace("peak_window = \"1s\"\n", "")
    )));
    assert_eq!(s.metrics.peak_requests, None);
    assert_eq!(s.missed().count(), 1);
}
