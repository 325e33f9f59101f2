//! The `independent` bound (src/throttle/independent.rs): what random phases cost many
//! one-thread processes on a small bucket, and what learning phases buys back, only on equal
//! periods. docs/fair-share-notes.md ("What independent senders cannot avoid") rests on these.

use throttle_sim::record::Summary;

use crate::common::bundled;

/// 100 one-thread processes of `independent` on a GCRA of 5 a second with a bucket of 5, for
/// 30 minutes at 0.98 of the rate, without jitter, seed 42, with `sets` on top.
fn hundred_singles_on_five_tokens(sets: &[&str]) -> Summary {
    let base = [
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
    ];
    bundled("heroku_5x5.toml", &[&base[..], sets].concat())
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
