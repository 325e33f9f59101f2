//! The `[expect]` table `fit` writes under the scenario: the fitted scenario is run in the
//! sim over its own seeds, and the ranges are drawn around the means those runs gave, so
//! `throttle-sim check DIR/fit.toml` passes on the file as written and fails when a change to
//! the client or to the sim makes it do worse on this API.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::compare::seeds_from;
use crate::engine::{self, sim};
use crate::record::Metrics;
use crate::scenario::{ScenarioError, read_scenario};

/// The means over the seeds of the metrics the ranges are drawn around.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seen {
    pub ratio_429: f64,
    pub utilization: f64,
    pub fairness: f64,
    pub seeds: usize,
}

/// How far below the mean utilization and fairness may fall before `check` calls it a miss.
const SLACK: f64 = 0.05;
/// The most the 429 ratio may rise above its mean, whichever is larger: twice the mean, or
/// the mean plus half a percent (a run that drew none may draw a few).
const RATIO_429_SLACK: f64 = 0.005;

/// Run the scenario at `path` in the sim over its `[run] seeds` (from its seed, as `check`
/// runs them) and return the means.
pub fn run_scenario(path: &Path) -> Result<Seen, ScenarioError> {
    let scenario = read_scenario(path, &[], 0)?;
    let n = scenario.run.seeds.map_or(1, |n| n as usize);
    let seeds = seeds_from(scenario.run.seed(), n);
    let never = AtomicBool::new(false);
    let runs: Vec<Metrics> = crate::parallel::run_all(seeds.len(), crate::parallel::cores(), |i| {
        let mut one = scenario.clone();
        one.run.seed = Some(seeds[i]);
        let mut quiet = |_| {};
        let control = engine::Control {
            progress: &mut quiet,
            interrupt: &never,
        };
        sim::run(&one, std::io::sink(), None::<std::io::Sink>, control)
            .expect("writing to a sink cannot fail")
            .metrics
    });
    let mean = |f: &dyn Fn(&Metrics) -> f64| runs.iter().map(f).sum::<f64>() / runs.len() as f64;
    Ok(Seen {
        ratio_429: mean(&|m| m.ratio_429),
        utilization: mean(&|m| m.utilization),
        fairness: mean(&|m| m.fairness),
        seeds: runs.len(),
    })
}

/// `x` rounded down (`down`) or up to three decimals.
fn round3(x: f64, down: bool) -> f64 {
    let k = x * 1000.0;
    // The tolerance keeps 0.005 from rounding up to 0.006 for the float noise in its product.
    let r = if down {
        (k + 1e-9).floor()
    } else {
        (k - 1e-9).ceil()
    };
    r / 1000.0
}

/// The `[expect]` table around what the runs saw, with a comment saying where it came from.
pub fn table(seen: &Seen) -> String {
    let ratio_hi = round3(
        (seen.ratio_429 * 2.0).max(seen.ratio_429 + RATIO_429_SLACK),
        false,
    );
    let util_lo = round3((seen.utilization - SLACK).max(0.0), true);
    let util_hi = round3((seen.utilization + SLACK).max(1.0), false);
    let fair_lo = round3((seen.fairness - SLACK).max(0.0), true);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n# Ranges around what this scenario gave when fit ran it over its {} seeds (means: 429s \
         {:.3} %,\n# utilization {:.3}, fairness {:.3}): `throttle-sim check` on this file passes \
         as written,\n# and fails when the clients do worse on this API.",
        seen.seeds,
        seen.ratio_429 * 100.0,
        seen.utilization,
        seen.fairness
    );
    let _ = writeln!(s, "[expect]");
    let _ = writeln!(s, "ratio_429 = [0.0, {ratio_hi:?}]");
    let _ = writeln!(s, "utilization = [{util_lo:?}, {util_hi:?}]");
    let _ = writeln!(s, "fairness = [{fair_lo:?}, 1.0]");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranges_hold_the_means_they_are_drawn_around() {
        for seen in [
            Seen {
                ratio_429: 0.0,
                utilization: 0.987,
                fairness: 1.0,
                seeds: 10,
            },
            Seen {
                ratio_429: 0.123_456,
                utilization: 1.02,
                fairness: 0.000_4,
                seeds: 1,
            },
        ] {
            let text = table(&seen);
            let doc: toml::Table = text.parse().unwrap();
            let range = |m: &str| -> (f64, f64) {
                let a = doc["expect"][m].as_array().unwrap();
                (a[0].as_float().unwrap(), a[1].as_float().unwrap())
            };
            for (m, v) in [
                ("ratio_429", seen.ratio_429),
                ("utilization", seen.utilization),
                ("fairness", seen.fairness),
            ] {
                let (lo, hi) = range(m);
                assert!(
                    lo <= v && v <= hi,
                    "{m} = {v} outside [{lo}, {hi}]:\n{text}"
                );
            }
        }
    }
}
