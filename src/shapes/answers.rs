//! How a drawn API answers: its latency and the dialect of its rate-limit fields.
//!
//! Latency is fixed in half the shapes and lognormal in the other half: a fixed one isolates
//! the rule, a heavy tail is what a real network gives (an answer ten times the median now and
//! then reorders a process's readings). The dialect is any of the five the sim's server writes
//! (`src/limiter/headers.rs`), each as likely: the law must read every one, and where one
//! states no quota (`heroku`, `none`) its clients are told it, as docs/fair-share.md says to.

use super::draw::{chance, log_uniform_int, one_of, uniform};
use crate::rng::SimRng;
use crate::time::HumanDuration;

/// The fastest and slowest fixed latency or lognormal median drawn, in milliseconds: from a
/// server in the same rack to one across the world behind a slow handler.
pub const LATENCY_MS: (u64, u64) = (1, 300);
/// The spread of a lognormal latency: at 0.25 the 99th percentile is 1.8 times the median, at
/// 1.25 it is 18 times (the matrix's heavy tail is 1, ten times).
pub const SIGMA: (f64, f64) = (0.25, 1.25);
/// Share of the shapes whose latency is lognormal rather than fixed.
pub const LOGNORMAL_SHARE: f64 = 0.5;

/// The dialects, as `[server] headers` names them.
pub const DIALECTS: [&str; 6] = ["full", "ietf", "heroku", "github", "fastify", "none"];

/// One shape's latency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Latency {
    Fixed { ms: u64 },
    LogNormal { median_ms: u64, sigma: f64 },
}

impl Latency {
    /// Its 99th percentile in seconds: one answer in a hundred comes later. A thread whose
    /// turn comes sooner than this after its last send finds its answer still out now and
    /// then, and on a window rule the slot it misses is lost (the `oracle` misses utilization
    /// there), so the sizing keeps a thread's fair-share period above it.
    pub fn p99_secs(&self) -> f64 {
        /// The standard normal's 99th percentile.
        const Z99: f64 = 2.326_347_874;
        match *self {
            Latency::Fixed { ms } => ms as f64 / 1000.0,
            Latency::LogNormal { median_ms, sigma } => {
                median_ms as f64 / 1000.0 * (Z99 * sigma).exp()
            }
        }
    }

    /// As `[server] latency` takes it.
    pub fn toml(&self) -> String {
        match *self {
            Latency::Fixed { ms } => format!("\"{}\"", HumanDuration::from_millis(ms)),
            Latency::LogNormal { median_ms, sigma } => format!(
                "{{ distribution = \"lognormal\", median = \"{}\", sigma = {sigma:?} }}",
                HumanDuration::from_millis(median_ms)
            ),
        }
    }

    /// "20ms" or "lognormal 20ms σ 1.0", for the shape's description.
    pub fn describe(&self) -> String {
        match *self {
            Latency::Fixed { ms } => format!("latency {}", HumanDuration::from_millis(ms)),
            Latency::LogNormal { median_ms, sigma } => format!(
                "latency lognormal, median {}, sigma {sigma:?}",
                HumanDuration::from_millis(median_ms)
            ),
        }
    }
}

/// A latency: fixed or lognormal, the fixed value or the median log-uniform in
/// [`LATENCY_MS`] (whole milliseconds), sigma uniform in [`SIGMA`] in steps of 0.05.
pub fn draw_latency(rng: &mut SimRng) -> Latency {
    let lognormal = chance(rng, LOGNORMAL_SHARE);
    let ms = log_uniform_int(rng, LATENCY_MS.0, LATENCY_MS.1);
    if !lognormal {
        return Latency::Fixed { ms };
    }
    let sigma = (uniform(rng, SIGMA.0, SIGMA.1) * 20.0).round() / 20.0;
    Latency::LogNormal {
        median_ms: ms,
        sigma,
    }
}

/// A dialect, each of [`DIALECTS`] as likely.
pub fn draw_dialect(rng: &mut SimRng) -> &'static str {
    one_of(rng, &DIALECTS)
}

/// Whether answers in `dialect` state the quota (`RateLimit-Limit`, the IETF policy, GitHub's
/// `x-ratelimit-limit`); where they do not, the clients are told it.
pub fn states_quota(dialect: &str) -> bool {
    !matches!(dialect, "heroku" | "none")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    #[test]
    fn a_lognormal_tail_is_far_above_its_median_and_both_forms_are_valid_toml() {
        let l = Latency::LogNormal {
            median_ms: 20,
            sigma: 1.0,
        };
        // The matrix's heavy tail: one answer in a hundred after ten times the median.
        assert!((l.p99_secs() - 0.2048).abs() < 1e-3, "{}", l.p99_secs());
        assert_eq!(Latency::Fixed { ms: 250 }.p99_secs(), 0.25);
        for l in [l, Latency::Fixed { ms: 250 }] {
            let text = format!("latency = {}", l.toml());
            assert!(text.parse::<toml::Table>().is_ok(), "{text}");
        }
        assert_eq!(Latency::Fixed { ms: 1 }.toml(), "\"1ms\"");
    }

    #[test]
    fn draws_stay_in_their_ranges() {
        let mut rng = test_rng();
        for _ in 0..2000 {
            match draw_latency(&mut rng) {
                Latency::Fixed { ms } => assert!((1..=300).contains(&ms)),
                Latency::LogNormal { median_ms, sigma } => {
                    assert!((1..=300).contains(&median_ms));
                    assert!((0.25..=1.25).contains(&sigma), "{sigma}");
                }
            }
        }
    }
}
