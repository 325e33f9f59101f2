//! The `independent` bound (src/throttle/independent.rs): what random phases cost many
//! one-thread processes on a small bucket, and what learning phases buys back, only on equal
//! periods. docs/fair-share-notes.md ("What independent senders cannot avoid") rests on these.

use std::path::Path;

use throttle_sim::engine::sim::summarize;
use throttle_sim::record::Summary;
use throttle_sim::scenario::{Override, read_scenario};

/// 100 one-thread processes of `independent` on a GCRA of 5 a second with a bucket of 5, for
/// 30 minutes at 0.98 of the rate, without jitter, seed 42, with `sets` on top.
fn hundred_singles_on_five_tokens(sets: &[&str]) -> Summary {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/heroku_5x5.toml");
    let mut overrides: Vec<Override> = [
        "server.limit=5",
        "server.period=1s",
        "server.initial=5",
        "clients.workers.processes=100",
        "clients.workers.threads=1",
        "clients.*.algorithm=independent",
        "clients.*.load=0.98",
        "clients.*.jitter=0",
        "run.duration=30m",
        "expect={}",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    overrides.extend(sets.iter().map(|s| s.parse::<Override>().unwrap()));
    summarize(&read_scenario(&path, &overrides, 42).unwrap())
}

#[test]
fn independent_phases_are_refused_more_than_the_targets_allow_on_five_tokens() {
    let m = hundred_singles_on_five_tokens(&[]).metrics;
    // A near-Poisson stream at 0.98 of the refill: several percent refused, and the
    // utilization short of 0.97 for it.
    assert!(m.ratio_429_late > 0.02, "{m:?}");
    assert!(m.utilization < 0.97, "{m:?}");
}

#[test]
fn learning_phases_beats_that_floor_only_on_equal_periods() {
    let equal = hundred_singles_on_five_tokens(&["clients.*.rephase=true"]).metrics;
    assert!(equal.ratio_429_late < 0.005, "{equal:?}");
    assert!(equal.utilization > 0.97, "{equal:?}");
    // Rates 2 % apart: every phase drifts past every other, and the refusals come back.
    let apart =
        hundred_singles_on_five_tokens(&["clients.*.rephase=true", "clients.*.spread=0.02"]);
    assert!(apart.metrics.ratio_429_late > 0.02, "{:?}", apart.metrics);
}
