//! `sre-adaptive`: client-side throttling from Google's *Site Reliability Engineering* book
//! (chapter 21, "Handling Overload", adaptive throttling). Each client (here: each process)
//! counts, over the last `window` (2 minutes), the requests its application attempted and the
//! ones the server accepted, and rejects a new request locally with probability
//!
//! ```text
//! p = max(0, (requests − K × accepts) / (requests + 1))        K = 2
//! ```
//!
//! Locally rejected requests count as attempted, so a client whose server refuses everything
//! rejects more and more of its own. The book leaves what a rejected caller does to the
//! application; here it waits `reject_wait` and tries again. Counts are kept in 120 slices of
//! the window, so the window slides by a 120th of its length.

use std::collections::VecDeque;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_nonzero_duration, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos};

/// Slices the window is counted in.
const SLICES: u64 = 120;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SreAdaptiveConfig {
    /// The multiplier K: the client sends up to K times what the server accepts. Default 2.
    pub k: f64,
    /// The window of the counts. Default 2 min.
    pub window: HumanDuration,
    /// How long a locally rejected request waits before trying again. Default 1 s (the book
    /// leaves it to the application).
    pub reject_wait: HumanDuration,
}

impl Default for SreAdaptiveConfig {
    fn default() -> Self {
        SreAdaptiveConfig {
            k: 2.0,
            window: HumanDuration::from_secs(120),
            reject_wait: HumanDuration::from_secs(1),
        }
    }
}

impl SreAdaptiveConfig {
    pub fn build(&self, _: BuildContext) -> SreAdaptive {
        SreAdaptive {
            slice: self.window.nanos() / SLICES,
            cfg: self.clone(),
            slices: VecDeque::new(),
            requests: 0,
            accepts: 0,
            rejected: 0,
            last_p: 0.0,
        }
    }
}

impl Algorithm for SreAdaptiveConfig {
    const NAME: &'static str = "sre-adaptive";
    const DESCRIPTION: &'static str = "Google SRE client-side throttling: reject locally with p = (requests − 2·accepts)/(requests + 1)";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_positive(&mut out, "k", self.k);
        if self.window.nanos() < SLICES {
            out.push((
                "window",
                format!("must be at least 120ns (got {})", self.window),
            ));
        }
        check_nonzero_duration(&mut out, "reject_wait", self.reject_wait);
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

pub struct SreAdaptive {
    cfg: SreAdaptiveConfig,
    slice: Nanos,
    /// `(slice index, requests, accepts)`, oldest first.
    slices: VecDeque<(u64, u64, u64)>,
    requests: u64,
    accepts: u64,
    rejected: u64,
    last_p: f64,
}

impl SreAdaptive {
    /// Drop the slices that left the window, and make sure the current one exists.
    fn advance(&mut self, now: Nanos) -> &mut (u64, u64, u64) {
        let current = now / self.slice;
        while let Some(&(i, r, a)) = self.slices.front() {
            if i + SLICES > current {
                break;
            }
            self.requests -= r;
            self.accepts -= a;
            self.slices.pop_front();
        }
        if self.slices.back().is_none_or(|s| s.0 != current) {
            self.slices.push_back((current, 0, 0));
        }
        self.slices.back_mut().expect("just pushed")
    }

    /// `max(0, (requests − K × accepts) / (requests + 1))` on the counts so far.
    pub fn reject_probability(&self) -> f64 {
        let r = self.requests as f64;
        ((r - self.cfg.k * self.accepts as f64) / (r + 1.0)).max(0.0)
    }
}

impl Throttle for SreAdaptive {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, _: usize, rng: &mut SimRng) -> Acquire {
        self.advance(now).1 += 1;
        let p = self.reject_probability();
        self.requests += 1;
        self.last_p = p;
        if p > 0.0 && rng.random::<f64>() < p {
            self.rejected += 1;
            return Acquire::Wait(self.cfg.reject_wait.nanos());
        }
        Acquire::Send
    }

    fn on_response(&mut self, now: Nanos, _: usize, response: &Response, _: &mut SimRng) {
        if response.status == Status::Ok {
            self.advance(now).2 += 1;
            self.accepts += 1;
        }
    }

    /// The last rejection probability (a fraction, not seconds).
    fn sleep_value(&self) -> f64 {
        self.last_p
    }

    /// Requests rejected locally.
    fn backoffs(&self) -> u64 {
        self.rejected
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn build() -> SreAdaptive {
        SreAdaptiveConfig::default().build(BuildContext::solo(1))
    }

    #[test]
    fn probability_on_fixed_numbers() {
        let mut t = build();
        t.requests = 100;
        t.accepts = 30;
        // (100 − 60) / 101.
        assert!((t.reject_probability() - 40.0 / 101.0).abs() < 1e-12);
        t.accepts = 50;
        assert_eq!(t.reject_probability(), 0.0);
    }

    #[test]
    fn a_healthy_server_is_never_throttled_locally() {
        let mut t = build();
        let mut rng = test_rng();
        for i in 0..1000 {
            assert_eq!(t.acquire(i * S / 10, 0, &mut rng), Acquire::Send);
            t.on_response(i * S / 10, 0, &Response::bare(Status::Ok), &mut rng);
        }
        assert_eq!(t.backoffs(), 0);
    }

    #[test]
    fn a_refusing_server_gets_fewer_and_fewer_requests_and_recovery_is_slow_then_fast() {
        let mut t = build();
        let mut rng = test_rng();
        let mut sent = 0;
        let mut now = 0;
        // One attempt every 100 ms for one minute, every sent one refused.
        for _ in 0..600 {
            if t.acquire(now, 0, &mut rng) == Acquire::Send {
                sent += 1;
                t.on_response(now, 0, &Response::bare(Status::Limited), &mut rng);
            }
            now += S / 10;
        }
        assert!(sent < 30, "{sent} of 600 sent");
        assert!(t.reject_probability() > 0.99);
        // The server recovers. Locally rejected attempts still count as requests, so the
        // probability only falls as far as `2p − 1` per window: slowly from near 1, then fast.
        let mut p_each_window = Vec::new();
        for _ in 0..20 {
            for _ in 0..1200 {
                if t.acquire(now, 0, &mut rng) == Acquire::Send {
                    t.on_response(now, 0, &Response::bare(Status::Ok), &mut rng);
                }
                now += S / 10;
            }
            p_each_window.push(t.reject_probability());
        }
        assert!(p_each_window[0] > 0.9, "{p_each_window:?}");
        assert!(
            p_each_window.windows(2).all(|w| w[1] <= w[0]),
            "{p_each_window:?}"
        );
        assert_eq!(p_each_window[19], 0.0, "{p_each_window:?}");
        // The window holds two minutes of attempts, no more.
        assert!(t.requests <= 1200 + 10, "{}", t.requests);
    }
}
