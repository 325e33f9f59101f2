//! Keen's per-query failure window (`failure-window`) in the engine: dropped requests are counted
//! and are neither requests nor 429s, and `scenarios/failure_window.toml`'s variants meet the
//! ranges each sets for itself.

use std::path::Path;

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::{Override, Scenario, parse_scenario, read_scenario};

#[test]
fn dropped_requests_are_counted_apart_from_requests_and_429s() {
    // One thread, one request a second, one allowed per hour, 100 ms round trips; 2 failures
    // within 10 s block the query. Sends at 1.0 s (2xx), 2.1 and 3.2 s (429s at 2.2 and 3.3 s:
    // blocked until 12.2 s). Drops at 4.3 … 11.3 s (8). At 12.3 s the window is over: sends at
    // 12.3 and 13.4 s (429s at 12.4 and 13.5 s: blocked until 22.4 s), drops at 14.5 … 19.5 s
    // (6) before the run ends at 20 s.
    let s: Scenario = parse_scenario(
        r#"
[run]
duration = "20s"
[server]
kind = "fixed-window"
limit = 1
window = "1h"
latency = "100ms"
[[clients]]
name = "q"
algorithm = "failure-window"
threshold = 2
window = "10s"
interval = "1s"
"#,
        "inline.toml",
        "inline",
        &[],
        1,
    )
    .unwrap();
    let m = summarize(&s).metrics;
    assert_eq!((m.requests, m.ok, m.limited), (5, 1, 4));
    assert_eq!(m.timed_out, 14);
}

#[test]
fn every_variant_of_the_bundled_scenario_meets_its_own_ranges() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/failure_window.toml");
    let base = read_scenario(&path, &[], 0).unwrap();
    assert_eq!(base.variants.len(), 2);
    for v in &base.variants {
        let sets: Vec<Override> = v
            .set
            .iter()
            .map(|(p, value)| Override::new(p, value.clone()).unwrap())
            .collect();
        let scenario = read_scenario(&path, &sets, 0).unwrap();
        let summary = summarize(&scenario);
        let missed: Vec<_> = summary
            .missed()
            .map(|e| format!("{} = {:?} outside {:?}", e.metric, e.value, e.range))
            .collect();
        assert!(missed.is_empty(), "{}: {missed:?}", v.name);
    }
}
