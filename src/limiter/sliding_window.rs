//! `sliding-window`: the sliding-window **log**, the exact form of the rule that the
//! sliding-window counter (Cloudflare's, Redis recipes') approximates: a request at `t` is
//! admitted when fewer than `limit` requests were admitted in the half-open window
//! `(t − window, t]`. Unlike `fixed-window` there is no boundary where twice the limit can
//! pass: in *any* interval of length `window`, at most `limit` are admitted.
//!
//! Why the log and not the counter approximation (previous window's count weighted by its
//! overlap)? The approximation can be wrong in both directions by up to the previous window's
//! count, which would make "never more than `limit` in any window" untestable; the log is exact
//! and what the approximation approximates. Its cost is memory: up to `limit` timestamps per key
//! (8 bytes each), held only for keys that are used.
//!
//! A refused request takes nothing; its `Retry-After` is when the oldest admission in the
//! window leaves it. `RateLimit-Remaining` is `limit` minus the admissions in the window.
//!
//! The reset an answer states is, by default, when the key's allowance is whole again: when the
//! newest admission leaves the window, a whole window after a busy key's last request. With
//! `reset = "oldest"` it is when the oldest admission leaves it (when one more would be
//! admitted if the window were full, a window from now if it is empty), as Flask-Limiter's
//! moving window (`limits`) states it: under a second on a busy 5-s window, where the default
//! says 5 s.
//!
//! Parameters and defaults (the default `gcra`'s nominal rate):
//! - `limit`: requests admitted in any window. Default 4500.
//! - `window`: the window's length. Default 1 h.
//! - `reset`: `"whole"` or `"oldest"`. Default `"whole"` (written out only when it is not).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Decision, Limiter, Rule};
use crate::config::{ParamProblem, check_quota};
use crate::exchange::Status;
use crate::time::{HumanDuration, NANOS_PER_SEC, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlidingWindowConfig {
    /// Requests per window. Default 4500.
    pub limit: u64,
    /// Default 1 h.
    pub window: HumanDuration,
    /// Which instant the answers state as the reset. Default when the allowance is whole.
    #[serde(skip_serializing_if = "SlidingReset::is_whole")]
    pub reset: SlidingReset,
}

impl Default for SlidingWindowConfig {
    fn default() -> Self {
        SlidingWindowConfig {
            limit: 4500,
            window: HumanDuration::from_secs(3600),
            reset: SlidingReset::Whole,
        }
    }
}

/// The reset a sliding log states on its answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlidingReset {
    /// When the newest admission leaves the window: the allowance is whole again.
    #[default]
    Whole,
    /// When the oldest admission leaves it (a window from now if there is none): Flask-Limiter's
    /// moving window.
    Oldest,
}

impl SlidingReset {
    fn is_whole(&self) -> bool {
        *self == SlidingReset::Whole
    }
}

impl Rule for SlidingWindowConfig {
    const NAME: &'static str = "sliding-window";
    const DESCRIPTION: &'static str = "sliding-window log (exact, not the counter approximation): at most `limit` in any `window`";

    const NOTES: &'static [&'static str] = &[
        "reset = \"whole\" (the default, not written out: the reset stated is when the newest admission leaves the window) or \"oldest\" (when the oldest leaves it, as Flask-Limiter's moving window states)",
    ];

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_quota(
            &mut out,
            ("limit", self.limit, "request per window"),
            ("window", self.window),
        );
        out
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(SlidingWindow::new(self))
    }
}

pub struct SlidingWindow {
    limit: u64,
    window: Nanos,
    reset: SlidingReset,
    /// Per key, the times of the admissions still inside the window, oldest first.
    logs: Vec<VecDeque<Nanos>>,
}

impl SlidingWindow {
    pub fn new(cfg: &SlidingWindowConfig) -> Self {
        SlidingWindow {
            limit: cfg.limit.max(1),
            window: cfg.window.nanos().max(1),
            reset: cfg.reset,
            logs: Vec::new(),
        }
    }
}

impl Limiter for SlidingWindow {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        if key >= self.logs.len() {
            self.logs.resize_with(key + 1, VecDeque::new);
        }
        let (limit, window) = (self.limit, self.window);
        let log = &mut self.logs[key];
        // An admission at `s` is inside (now − window, now] while s + window > now.
        while log
            .front()
            .is_some_and(|&s| s.saturating_add(window) <= now)
        {
            log.pop_front();
        }
        let (status, retry_after) = if (log.len() as u64) < limit {
            log.push_back(now);
            (Status::Ok, None)
        } else {
            let oldest = *log.front().expect("a full log is not empty");
            (Status::Limited, Some(oldest + window - now))
        };
        let reset = match self.reset {
            // Whole again when the newest request in the window has left it.
            SlidingReset::Whole => log.back().map_or(0, |&s| (s + window).saturating_sub(now)),
            SlidingReset::Oldest => log
                .front()
                .map_or(window, |&s| (s + window).saturating_sub(now)),
        };
        Decision {
            status,
            remaining: limit - log.len() as u64,
            limit,
            retry_after,
            reset,
            window,
        }
    }

    /// `ceil(duration / window) × limit`: the first `limit` at t = 0, then `limit` more every
    /// `window` (no schedule does better: any `window`-long interval holds at most `limit`).
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    /// The earliest schedule is the best one: `limit` at the first open instant, then `limit`
    /// at the first open instant at least `window` later, and so on until the end.
    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        window_batches(self.window, duration, closed) as f64 * self.limit as f64
    }

    fn rate_per_sec(&self) -> f64 {
        self.limit as f64 * NANOS_PER_SEC as f64 / self.window as f64
    }
}

/// How many batches fit in `[0, duration)` when each is sent at one open instant at least
/// `window` after the one before, the first at the first open instant (`closed`: sorted,
/// disjoint, half-open outages). Sending each batch as early as it may go is the best
/// schedule, so this is the most windows a rule whose windows follow its requests can fill:
/// the sliding log's, and a fixed window opened by a key's first request.
pub(super) fn window_batches(window: Nanos, duration: Nanos, closed: &[(Nanos, Nanos)]) -> u64 {
    let (mut batches, mut next) = (0u64, 0u64);
    for &(a, b) in closed {
        let a = a.min(duration);
        if next < a {
            let n = (a - next).div_ceil(window);
            batches += n;
            next = next.saturating_add(n.saturating_mul(window));
        }
        if next < b {
            next = b;
        }
    }
    if next < duration {
        batches += (duration - next).div_ceil(window);
    }
    batches
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: Nanos = NANOS_PER_SEC;

    fn sliding(limit: u64, window_s: u64) -> SlidingWindow {
        SlidingWindow::new(&SlidingWindowConfig {
            limit,
            window: HumanDuration::from_secs(window_s),
            ..SlidingWindowConfig::default()
        })
    }

    #[test]
    fn the_reset_is_when_the_newest_leaves_or_with_oldest_when_the_oldest_does() {
        let cfg: SlidingWindowConfig = toml::from_str("reset = \"oldest\"").unwrap();
        assert_eq!(cfg.reset, SlidingReset::Oldest);
        assert!(
            !toml::to_string(&SlidingWindowConfig::default())
                .unwrap()
                .contains("reset")
        );
        assert!(toml::from_str::<SlidingWindowConfig>("reset = \"newest\"").is_err());
        let mut whole = sliding(3, 10);
        let mut oldest = SlidingWindow::new(&SlidingWindowConfig {
            limit: 3,
            window: HumanDuration::from_secs(10),
            reset: SlidingReset::Oldest,
        });
        // Admissions at 0, 4 and 6 s; the answers at 6 s and a refusal at 9 s.
        for t in [0, 4 * S] {
            whole.admit(t, 0);
            oldest.admit(t, 0);
        }
        assert_eq!(whole.admit(6 * S, 0).reset, 10 * S);
        assert_eq!(oldest.admit(6 * S, 0).reset, 4 * S);
        assert_eq!(whole.admit(9 * S, 0).reset, 7 * S);
        let refused = oldest.admit(9 * S, 0);
        assert_eq!((refused.reset, refused.retry_after), (S, Some(S)));
        // An empty log states a whole window from now.
        assert_eq!(oldest.admit(100 * S, 1).reset, 10 * S);
    }

    #[test]
    fn admits_limit_in_any_window_and_says_when_the_oldest_leaves() {
        let mut s = sliding(3, 10);
        for (t, remaining) in [(0, 2), (4 * S, 1), (6 * S, 0)] {
            let d = s.admit(t, 0);
            assert_eq!((d.status, d.remaining, d.limit), (Status::Ok, remaining, 3));
        }
        let d = s.admit(9 * S, 0);
        assert_eq!((d.status, d.retry_after), (Status::Limited, Some(S)));
        // At 10 s the admission at 0 has left (10 − 10, 10]; the one at 4 s has not.
        let d = s.admit(10 * S, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 0));
        let d = s.admit(13 * S, 0);
        assert_eq!((d.status, d.retry_after), (Status::Limited, Some(S)));
    }

    #[test]
    fn no_boundary_lets_twice_the_limit_through() {
        // Where a fixed window of 60 s would admit 10 around t = 60 s, this admits 5.
        let mut s = sliding(5, 60);
        let ok = [59 * S, 60 * S]
            .iter()
            .flat_map(|&t| (0..10).map(move |_| t))
            .filter(|&t| s.admit(t, 0).status == Status::Ok)
            .count();
        assert_eq!(ok, 5);
    }

    #[test]
    fn refusals_are_not_logged_and_keys_are_separate() {
        let mut s = sliding(1, 10);
        assert_eq!(s.admit(0, 0).status, Status::Ok);
        for t in 1..10 {
            assert_eq!(s.admit(t * S, 0).status, Status::Limited);
        }
        assert_eq!(s.admit(10 * S, 0).status, Status::Ok);
        assert_eq!(s.admit(10 * S, 1).status, Status::Ok);
    }

    #[test]
    fn capacity_is_one_limit_per_window_started() {
        let s = sliding(4500, 3600);
        assert!((s.rate_per_sec() - 1.25).abs() < 1e-12);
        assert_eq!(s.capacity(5 * 3600 * S), 5.0 * 4500.0);
        assert_eq!(s.capacity(1), 4500.0);
        assert_eq!(s.capacity(0), 0.0);
    }

    #[test]
    fn capacity_around_an_outage_is_what_a_greedy_client_gets() {
        let (limit, d) = (4, 100 * S);
        for outage in [
            (15 * S, 42 * S),
            (0, 5 * S),
            (95 * S, 200 * S),
            (30 * S, 30 * S),
        ] {
            let mut s = sliding(limit, 10);
            let step = S / 8;
            let ok = (0..d / step)
                .map(|i| i * step)
                .filter(|t| !(outage.0..outage.1).contains(t))
                .filter(|&t| s.admit(t, 0).status == Status::Ok)
                .count();
            assert_eq!(
                ok as f64,
                s.capacity_with_outages(d, &[outage]),
                "outage {outage:?}"
            );
        }
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = SlidingWindowConfig {
            limit: 0,
            window: HumanDuration(0),
            ..SlidingWindowConfig::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["limit", "window"]);
    }

    proptest! {
        /// In every window (t − window, t] ending at an admission, at most `limit` admissions.
        #[test]
        fn never_admits_more_than_limit_in_any_window(
            limit in 1u64..20,
            window_ms in 1u64..5_000,
            gaps in proptest::collection::vec(0u64..300_000_000, 1..300),
        ) {
            let mut s = SlidingWindow::new(&SlidingWindowConfig {
                limit,
                window: HumanDuration::from_millis(window_ms),
                ..SlidingWindowConfig::default()
            });
            let window = window_ms * 1_000_000;
            let mut admitted: Vec<u64> = Vec::new();
            let mut now = 0u64;
            for gap in gaps {
                now += gap;
                let d = s.admit(now, 0);
                let inside = admitted.iter().filter(|&&a| a + window > now).count() as u64;
                // The rule is exact: admitted iff the window had room.
                prop_assert_eq!(d.status == Status::Ok, inside < limit);
                if d.status == Status::Ok {
                    admitted.push(now);
                }
                let inside = admitted.iter().filter(|&&a| a + window > now).count() as u64;
                prop_assert!(inside <= limit);
                prop_assert_eq!(d.remaining, limit - inside);
            }
        }
    }
}
