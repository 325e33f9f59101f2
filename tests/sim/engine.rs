//! Engine mechanics on small scenarios written inline.

use throttle_sim::engine::sim::summarize;

use crate::common;
use common::inline;
use throttle_sim::scenario::parse_scenario;

#[test]
fn a_finite_workload_clears_and_its_threads_stop() {
    // 2 unthrottled threads, 10 jobs each, 20 ms per answer and plenty of tokens:
    // each thread needs 10 round trips, so the last job is done at 200 ms.
    let s = summarize(&inline(
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
    let s = summarize(&inline(
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
    let s = summarize(&inline(
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
    let s = summarize(&inline(text));
    assert_eq!(s.metrics.peak_requests, Some(3));
    assert_eq!(s.metrics.peak_process_requests, Some(2));
    assert_eq!(s.groups[0].metrics.peak_requests, Some(2));
    assert_eq!(s.groups[1].metrics.peak_requests, Some(1));
    assert_eq!(s.groups[1].metrics.peak_process_requests, Some(1));
    // A window a little longer than the spacing of 1.02 s sees two rounds.
    let s = summarize(&inline(
        &text.replace("\"1s\"\n[server]", "\"1030ms\"\n[server]"),
    ));
    assert_eq!(s.metrics.peak_requests, Some(6));
    // Without a window the metrics are null, and `[expect]` on them is missed.
    let s = summarize(&inline(&format!(
        "{}\n[expect]\npeak_requests = [0, 10]\n",
        text.replace("peak_window = \"1s\"\n", "")
    )));
    assert_eq!(s.metrics.peak_requests, None);
    assert_eq!(s.missed().count(), 1);
}

#[test]
fn a_concurrency_slot_is_held_from_admission_to_answer_and_refusals_hold_none() {
    // 5 unthrottled threads, at most 2 in flight, every answer 20 ms after its request: each
    // round the two threads whose answers free the slots get them again at once, and the
    // three refused threads must not free slots they never held. 50 rounds in 1 s.
    let s = summarize(&inline(
        r#"
[run]
duration = "1s"
sample_every = "1s"
[server]
kind = "concurrency"
max_in_flight = 2
latency = "20ms"
[[clients]]
name = "eager"
threads = 5
algorithm = "none"
"#,
    ));
    assert_eq!(s.metrics.ok, 2 * 50);
    assert_eq!(s.metrics.requests, 5 * 50);
    assert_eq!(s.metrics.limited, 3 * 50);
    // The rule states no bound over time, so capacity and utilization are 0.
    assert_eq!((s.metrics.capacity, s.metrics.utilization), (0.0, 0.0));
}

#[test]
fn occ_clients_that_retry_at_once_succeed_one_per_round_trip() {
    // The AWS post's resource with unthrottled clients and a fixed 20 ms hop: 10 clients read
    // at 20 ms and write at 60 ms, one wins, the others read again 40 ms later...: one success
    // per round of four hops, 10 + 9 + ... + 1 writes, the last answered after 10 rounds.
    let s = summarize(&inline(
        r#"
[run]
duration = "1m"
[server]
kind = "occ"
latency = "20ms"
[[clients]]
name = "writers"
threads = 10
jobs = 1
algorithm = "none"
"#,
    ));
    assert_eq!(s.metrics.ok, 10);
    assert_eq!(s.metrics.requests, 55);
    assert_eq!(s.metrics.limited, 45);
    assert_eq!(s.metrics.time_to_clear, Some(0.8));
}

/// 50 clients of `algorithm` on the AWS post's network (every hop |N(10 ms, 2 ms)|): the mean
/// write calls and time to clear over seeds 0..20.
fn occ_means(algorithm: &str) -> (f64, f64) {
    let text = format!(
        r#"
[run]
duration = "10m"
[server]
kind = "occ"
latency = {{ distribution = "normal", mean = "10ms", sd = "2ms" }}
[[clients]]
name = "writers"
processes = 50
jobs = 1
{algorithm}
"#
    );
    let (mut calls, mut time) = (0.0, 0.0);
    for seed in 0..20 {
        let mut scenario = inline(&text);
        scenario.run.seed = Some(seed);
        let s = summarize(&scenario);
        assert_eq!(s.metrics.ok, 50);
        calls += s.metrics.requests as f64 / 20.0;
        time += s.metrics.time_to_clear.unwrap() / 20.0;
    }
    (calls, time)
}

#[test]
fn occ_reads_are_round_trips_of_their_own_with_random_hops() {
    // With every hop random, a client's read-to-write gap varies, so a write often gets in
    // between others' reads and writes: fewer calls than the lockstep n(n + 1)/2 = 1275. An
    // independent model of the post's simulator gives 689 ± 1 calls (500 trials) and 1.14 s;
    // 20 seeds here spread about ±4 calls around their mean.
    let (calls, time) = occ_means(r#"algorithm = "none""#);
    assert!((675.0..705.0).contains(&calls), "no backoff: {calls} calls");
    assert!((1.05..1.25).contains(&time), "no backoff: {time} s");
    // Full jitter with the post's settings (5 ms × 2^attempt is base 10 ms here) halves the
    // work and takes longer (the model: 332 calls, 2.9 s).
    let (calls, time) = occ_means(
        r#"algorithm = "backoff"
jitter = "full"
base = "10ms"
cap = "2s""#,
    );
    assert!(
        (325.0..340.0).contains(&calls),
        "full jitter: {calls} calls"
    );
    assert!((2.4..3.4).contains(&time), "full jitter: {time} s");
}

#[test]
fn occ_clients_that_space_their_writes_do_not_conflict() {
    // 4 processes of one thread each, a fixed 1 s wait before every write: all write at 1 s,
    // conflict but one, and retry 1 s later... unless the writes are spread out by jitter.
    let text = r#"
[run]
duration = "1m"
[server]
kind = "occ"
latency = "20ms"
[[clients]]
name = "writers"
processes = 4
jobs = 1
algorithm = "fixed"
sleep = "1s"
"#;
    let lockstep = summarize(&inline(text));
    assert_eq!(lockstep.metrics.requests, 4 + 3 + 2 + 1);
    let spread = summarize(&inline(
        &text.replace("sleep = \"1s\"", "sleep = \"1s\"\njitter = 1.0"),
    ));
    assert_eq!(spread.metrics.ok, 4);
    assert!(spread.metrics.requests < lockstep.metrics.requests);
}

#[test]
fn an_outage_answers_503_and_random_errors_follow_the_seed() {
    // One request per second for 60 s against plenty of tokens; down from 10 s to 20 s.
    let text = r#"
[run]
duration = "60s"
seed = 5
[server]
limit = 1000
period = "1s"
latency = "1s"
outages = [["10s", "20s"]]
[[clients]]
name = "steady"
algorithm = "none"
"#;
    let s = summarize(&inline(text));
    assert_eq!(s.metrics.requests, 60);
    assert_eq!(s.metrics.errors, 10);
    assert_eq!(s.metrics.ok, 50);

    let noisy = text.replace("outages = [[\"10s\", \"20s\"]]", "error_rate = 0.5");
    let a = summarize(&inline(&noisy));
    assert_eq!(a, summarize(&inline(&noisy)));
    assert!(
        (15..=45).contains(&a.metrics.errors),
        "{}",
        a.metrics.errors
    );
    assert_eq!(a.metrics.ok + a.metrics.errors, 60);
    let other_seed = summarize(&inline(&noisy.replace("seed = 5", "seed = 6")));
    assert_ne!(a.metrics.errors, 0);
    assert_ne!(
        (a.metrics.errors, a.metrics.wait_p99),
        (other_seed.metrics.errors, other_seed.metrics.wait_p99)
    );
}

/// nginx's `limit_req` without `nodelay` admits a request beyond its rate at once but holds
/// its answer: an unthrottled client that sends again on every answer is paced at the rate
/// with no refusal, where `nodelay` gives it the burst at once and then 429s.
#[test]
fn a_held_answer_arrives_after_its_hold_and_paces_the_client() {
    let text = r#"
[run]
duration = "10s"
[server]
kind = "leaky-bucket"
rate = "1r/s"
burst = 5
latency = "10ms"
[[clients]]
name = "eager"
algorithm = "none"
"#;
    // Sent at 0 (stored 0), 10 ms (990: held 990 ms, back at 1,010 ms), then every second,
    // each drained 1000 and held 990 ms again: 11 sends before 10 s, all served.
    let s = summarize(&inline(text));
    assert_eq!((s.metrics.ok, s.metrics.limited), (11, 0));
    assert_eq!(s, summarize(&inline(text)));
    // nodelay: 6 in the first 50 ms, then one per second once 950 has drained since 50 ms,
    // at 1 s, 2 s, … 9 s; every other send, 10 ms apart, refused.
    let s = summarize(&inline(
        &text.replace("burst = 5", "burst = 5\ndelay = \"nodelay\""),
    ));
    assert_eq!((s.metrics.ok, s.metrics.limited), (15, 985));
}

#[test]
fn the_server_model_scenarios_pass_their_expectations() {
    for name in ["occ_contention", "outage"] {
        let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        let s = summarize(&parse_scenario(&text, &path, name, &[], 0).unwrap());
        assert!(!s.expect.is_empty(), "{name} states no expectation");
        for v in &s.expect {
            assert!(v.pass, "{name}: {v:?}");
        }
    }
}
