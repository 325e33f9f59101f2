//! The three tests every configuration has, on its shared runs (`runs.rs`):
//!
//! - [`fit`]: `fit` on the `fixed` trace names the binding rule, its limit and its period
//!   within [`FIT_TOLERANCE`], or says it cannot tell where the configuration allows it. This
//!   and the next prove the instrument.
//! - [`sim_agrees`]: the sim of the same fleet against the limiter's model, over [`SIM_SEEDS`]
//!   seeds, and the live run's ratio_429, utilization and fairness (`measure.rs`'s `Metrics`,
//!   taken from both `requests.csv` alike) within `spread` of the sim's mean, or the floor
//!   below; a run that disagrees gets one more live run, which must agree.
//! - [`fair_share_targets`]: the live run against the project's targets for fair-share. Where
//!   fair-share misses them today, the test is ignored with the numbers measured in its reason.
//!
//! A failing test keeps what it judged (the trace, the live and one sim `requests.csv`, the
//! scenario) in a folder it names.

use std::path::PathBuf;

use crate::agreement::{sim_requests, spread, stats};
use crate::harness;
use crate::measure::{Bound, MOST_LOPSIDED_PERIODS, Metrics, Setup, lopsided_periods};
use crate::runs::{self, Live};

/// How far `fit`'s limit and period may be from the configured ones, as a share of them.
const FIT_TOLERANCE: f64 = 0.10;

/// The seeds the sim runs the fleet over (40 s of 12 threads takes the sim milliseconds).
const SIM_SEEDS: u64 = 20;

/// The least tolerances of the live run against the sim's mean, for a measure whose seeds
/// hardly vary: those `tests/live_agreement.rs` holds fair-share to (0.5 points of 429s, 0.03
/// of utilization and of fairness). Only nginx's utilization comes below them: 1.000 on every
/// seed of the delayed bucket (sd 0.0006 over 30 seeds; 1.000 in 10 live runs), 0.9996 ± 0.0029
/// without delay (0.998 ± 0.002 in 10 live runs, 1.003 where the bucket held a few tokens at
/// the start of what is measured).
///
/// Measured over 10 to 15 live runs of each configuration against 30 sim seeds, the live runs
/// deviate from each other 0.4 to 1.7 times as much as the sim's seeds do (`spread` takes it as
/// twice). fair-share's own spread on these windows is wide (fairness 0.08 to 0.17 from seed
/// to seed, 429s about a point), so here one live run can only show a gross disagreement: the
/// line printed says where a tolerance covers all of [0, 1]. The means over many runs agree
/// everywhere but on Flask-Limiter's moving window and sliding-window counter, whose stated
/// reset the model does not state (`flask_limiter.rs`).
const RATIO_429_FLOOR: f64 = 0.005;
const UTILIZATION_FLOOR: f64 = 0.03;
const FAIRNESS_FLOOR: f64 = 0.03;

/// `fit` on the trace of `fixed` names the rule, or cannot tell where allowed.
pub fn fit(name: &str) {
    let setup = runs::setup(name);
    let runs = runs::runs(name);
    let fitted = runs
        .fitted
        .as_ref()
        .unwrap_or_else(|e| panic!("{name}: the trace for fit failed: {e}"));
    let (said, miss) = judge_fit(setup, &fitted.said);
    println!("{name}: fit: {said} (both runs in {:.1} s)", runs.seconds);
    if let Some(miss) = miss {
        let kept = keep(name, &[("requests.csv", &fitted.csv)]);
        panic!("{name}: {miss}; the trace is kept in {}", kept.display());
    }
}

/// What `fit` said, in words, and what is wrong with it, if anything.
fn judge_fit(setup: &Setup, f: &serde_json::Value) -> (String, Option<String>) {
    let (rule, limit, period) = setup.binding().as_fitted();
    let wanted = format!("a {rule} of {limit} per {period} s");
    let r = &f["rule"];
    let dialect = f["dialect"].as_str().unwrap_or("?");
    if r.is_null() {
        let why = f["cannot_tell"].as_str().unwrap_or("(no reason given)");
        let said = format!("cannot tell ({dialect} dialect): {why}");
        let allowed = setup.cannot_tell.is_some_and(|words| why.contains(words));
        let miss = (!allowed).then(|| format!("fit cannot tell, where it should find {wanted}"));
        return (said, miss);
    }
    let got_rule = r["rule"].as_str().unwrap_or("?");
    let got_limit = r["size"].as_f64().or(r["limit"].as_f64()).unwrap_or(0.0);
    let got_period = r["period"].as_f64().or(r["window"].as_f64()).unwrap_or(0.0);
    // A fixed window on the clock's grid or opened by the first request: either is right for
    // the libraries' windows, which open with a key's first request.
    let start = r["start"]
        .as_str()
        .map_or(String::new(), |s| format!(" ({s})"));
    let said = format!(
        "{got_rule}{start} of {got_limit} per {got_period:.2} s (confidence {:.2}, {dialect} \
         dialect)",
        f["confidence"].as_f64().unwrap_or(0.0)
    );
    let close = |got: f64, want: f64| (got - want).abs() <= FIT_TOLERANCE * want;
    let right = got_rule == rule && close(got_limit, limit) && close(got_period, period);
    let miss = (!right).then(|| format!("fit said {said}, not {wanted}"));
    (said, miss)
}

/// The live fair-share run lies within `spread` of the sim's mean over seeds of the same fleet
/// against the limiter's model.
///
/// A run that disagrees is followed by one more live run of its own, as
/// `tests/live_agreement.rs` does (`retried`): a live run is one draw, and fair-share's
/// outcome on these windows has a long tail (one process taking most of the 2xx: Flask-
/// Limiter's fixed window once gave fairness 0.46, where 20 sim seeds give 0.91 ± 0.06 and 30
/// give 0.62 at the least, and 20 live runs 0.68 at the least). A model that disagrees
/// disagrees again, and fails with both runs printed and kept.
pub fn sim_agrees(name: &str) {
    let setup = runs::setup(name);
    let scenario = setup.scenario("fair-share");
    let sims = sim_runs(setup, &scenario);
    let three: Vec<[f64; 3]> = sims.iter().map(|(m, _)| m.three()).collect();
    let sim = stats(&three);
    println!("{name}: sim seed 0: {}", sims[0].0.line());
    let first = live_run(name);
    let Some(disagreement) = disagrees(name, setup, first, &sim) else {
        return;
    };
    println!("{name}: disagreed once, running it live again: {disagreement}");
    let again = runs::fair_share_again(setup)
        .unwrap_or_else(|e| panic!("{name}: the second fair-share run failed: {e}"));
    let Some(second) = disagrees(name, setup, &again, &sim) else {
        return;
    };
    let kept = keep(
        name,
        &[
            ("live-requests.csv", &first.csv),
            ("live-again-requests.csv", &again.csv),
            ("sim-seed-0-requests.csv", &sims[0].1),
            ("scenario.toml", &scenario),
        ],
    );
    panic!(
        "{name}: the live runs disagree with the sim of its model: {second} (and before it: \
         {disagreement})\n  against {}; both live runs and the sim's requests are kept in {}",
        first.versions,
        kept.display(),
    );
}

/// How `live` stands against the sim's (mean, deviation) of each measure, printed; what it
/// disagrees on, if anything.
fn disagrees(name: &str, setup: &Setup, live: &Live, sim: &[(f64, f64); 3]) -> Option<String> {
    let measured = Metrics::of(&live.rows, setup);
    let floors = [RATIO_429_FLOOR, UTILIZATION_FLOOR, FAIRNESS_FLOOR];
    let mut lines = Vec::new();
    let mut disagree = Vec::new();
    for (i, what) in ["ratio_429", "utilization", "fairness"].iter().enumerate() {
        let (mean, sd) = sim[i];
        let tolerance = spread(sd).max(floors[i]);
        let got = measured.three()[i];
        let whole = if mean - tolerance <= 0.0 && mean + tolerance >= 1.0 {
            ", all of [0, 1]"
        } else {
            ""
        };
        let line = format!(
            "{what} live {got:.4}, sim {mean:.4} ± {sd:.4} over {SIM_SEEDS} seeds (tolerance \
             {tolerance:.4}{whole})"
        );
        if (got - mean).abs() > tolerance {
            disagree.push(line.clone());
        }
        lines.push(line);
    }
    println!("{name}: live: {}", measured.line());
    println!("{name}: {}", lines.join("; "));
    (!disagree.is_empty()).then(|| format!("{} ({})", disagree.join("; "), measured.line()))
}

/// The live fair-share run meets the project's targets: the configuration's own (`COUNTED`
/// for a limiter that states a count), or, where the `independent` bound on the limiter's
/// model misses those too, within the bound's numbers (`measure.rs`'s `Bound`). Where the
/// limiter states a count, no process keeps more than twice another's 2xx for more than
/// `MOST_LOPSIDED_PERIODS` periods in a row, from the run's start.
pub fn fair_share_targets(name: &str) {
    let setup = runs::setup(name);
    let live = live_run(name);
    let measured = Metrics::of(&live.rows, setup);
    println!(
        "{name}: fair-share from {:.0} s to {:.0} s: {}",
        setup.settled_from(),
        setup.seconds(),
        measured.line()
    );
    let mut misses = measured.misses(&setup.targets);
    if setup.targets.min_fairness.is_some() {
        if !misses.is_empty() {
            let bound = independent_bound(setup);
            println!(
                "{name}: the independent bound on the model: {}",
                bound.line()
            );
            if !bound.meets(&setup.targets) {
                println!("{name}: which misses the targets too: fair-share is held within it");
                misses = measured.misses_within(&bound);
            }
        }
        let (periods, from) = lopsided_periods(&live.rows, setup);
        println!(
            "{name}: one process over twice another's 2xx for at most {periods} periods in a row"
        );
        if periods > MOST_LOPSIDED_PERIODS {
            misses.push(format!(
                "one process got more than twice another's 2xx for {periods} periods in a row \
                 from {from:.0} s (at most {MOST_LOPSIDED_PERIODS})"
            ));
        }
    }
    if !misses.is_empty() {
        let kept = keep(name, &[("requests.csv", &live.csv)]);
        panic!(
            "{name}: fair-share misses: {}\n  {}\n  against {}; the run is kept in {}",
            misses.join("; "),
            measured.line(),
            live.versions,
            kept.display(),
        );
    }
}

/// The `independent` bound on the limiter's model, the live run's fleet for as long, over
/// [`SIM_SEEDS`] seeds.
fn independent_bound(setup: &Setup) -> Bound {
    let seeds: Vec<Metrics> = sim_runs(setup, &setup.scenario("independent"))
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    Bound::of(&seeds)
}

/// The sim of `scenario` over [`SIM_SEEDS`] seeds: each seed's measures, taken as the live
/// run's are, and its `requests.csv`.
fn sim_runs(setup: &Setup, scenario: &str) -> Vec<(Metrics, String)> {
    (0..SIM_SEEDS)
        .map(|seed| {
            let csv = sim_requests(scenario, seed);
            (Metrics::of(&harness::requests(&csv), setup), csv)
        })
        .collect()
}

/// The configuration's live fair-share run, or the test fails with why there is none.
fn live_run(name: &str) -> &'static Live {
    runs::runs(name)
        .live
        .as_ref()
        .unwrap_or_else(|e| panic!("{name}: the fair-share run failed: {e}"))
}

/// A new folder that outlives the test, holding `files` (name, text).
fn keep(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = tempfile::Builder::new()
        .prefix(&format!("throttle-sim-real-{name}-"))
        .tempdir()
        .expect("a temporary folder")
        .keep();
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    dir
}
