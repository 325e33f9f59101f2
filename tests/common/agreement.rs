//! What a live run is held to: the sim's mean and deviation over seeds of the same scenario,
//! and the `spread` a live run may stray from that mean (`tests/live_agreement.rs`, where the
//! rule was measured, `tests/ports/` and `tests/real/`). One live run at a time in a test
//! binary where runs are fast enough to measure each other on a small machine
//! ([`one_at_a_time`]), or several beside each other where each steers by rate and is light
//! ([`beside_other_light_runs`]); `tests/real/` runs its real limiters' configurations at once,
//! each at about ten requests a second.

use std::sync::atomic::AtomicBool;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use throttle_sim::engine::Control;
use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::{Override, parse_scenario};

static LIVE: RwLock<()> = RwLock::new(());

/// Hold this while a live run measures timing: no other live run of the test binary runs
/// meanwhile.
pub fn one_at_a_time() -> RwLockWriteGuard<'static, ()> {
    LIVE.write().unwrap_or_else(|e| e.into_inner())
}

/// Hold this while a light live run (at most about a hundred requests a second, an algorithm
/// that steers by rate rather than by the instant of each answer) may run beside others like
/// it, never beside one that holds [`one_at_a_time`].
pub fn beside_other_light_runs() -> RwLockReadGuard<'static, ()> {
    LIVE.read().unwrap_or_else(|e| e.into_inner())
}

/// The sim's mean and sample standard deviation over seeds `0..seeds` of `text` with `sets`,
/// of ratio_429, utilization, requests and fairness (in that order).
pub fn sim_stats(text: &str, sets: &[&str], seeds: u64) -> [(f64, f64); 4] {
    let overrides: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let runs: Vec<[f64; 4]> = (0..seeds)
        .map(|seed| {
            let mut s = parse_scenario(text, "scenario.toml", "scenario", &overrides, 0).unwrap();
            s.run.seed = Some(seed);
            let m = summarize(&s).metrics;
            [m.ratio_429, m.utilization, m.requests as f64, m.fairness]
        })
        .collect();
    stats(&runs)
}

/// The requests.csv of the sim of `scenario` with `seed`, made in memory.
pub fn sim_requests(scenario: &str, seed: u64) -> String {
    let mut s = parse_scenario(scenario, "scenario.toml", "scenario", &[], 0)
        .unwrap_or_else(|e| panic!("the sim's scenario: {e}\n{scenario}"));
    s.run.seed = Some(seed);
    let never = AtomicBool::new(false);
    let mut ignore = |_| {};
    let control = Control {
        progress: &mut ignore,
        interrupt: &never,
    };
    let mut csv = Vec::new();
    throttle_sim::engine::sim::run(&s, std::io::sink(), Some(&mut csv), control)
        .expect("a sim run writing to memory");
    String::from_utf8(csv).expect("requests.csv is UTF-8")
}

/// The mean and sample standard deviation of each of `N` measures over runs (one array each).
pub fn stats<const N: usize>(runs: &[[f64; N]]) -> [(f64, f64); N] {
    let n = runs.len() as f64;
    std::array::from_fn(|i| {
        let mean = runs.iter().map(|r| r[i]).sum::<f64>() / n;
        let var = runs.iter().map(|r| (r[i] - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        (mean, var.sqrt())
    })
}

/// `f`'s result, or its panic's message: a live run made in a thread of its own, for a test
/// other than the one that started it, reports its failure to the test that needs it.
pub fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// How many times the sim's seed-to-seed deviation a live run's own is taken to be (measured
/// 1.8 on heroku_5x5 at 10×, `tests/live_agreement.rs`).
pub const LIVE_NOISE: f64 = 2.0;

/// Three standard deviations of (live − sim mean) when the sim's seeds deviate by `sim_sd`.
pub fn spread(sim_sd: f64) -> f64 {
    3.0 * sim_sd * (1.0 + LIVE_NOISE * LIVE_NOISE).sqrt()
}
