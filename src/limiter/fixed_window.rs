//! `fixed-window`: the fixed-window counter. It is the count the Discord job queue's fixed window
//! keeps in Redis per `⌊timestamp / window⌋` for Discord's "10 requests per 10 s", here as the
//! server's rule, and the rule of the many APIs that reset a count on the hour.
//!
//! Time is cut into windows aligned to t = 0: a request at `t` belongs to window
//! `floor(t / window)`. Each key may have `limit` requests admitted per window; the count
//! starts again at 0 when a new window begins. A refused request takes nothing, and its
//! `Retry-After` is the time to the next window's start. Up to `2 × limit` requests can be
//! admitted within one `window` of time across a boundary; that is this rule's known weakness.
//!
//! Parameters and defaults (the same nominal rate as the default `gcra`, so changing only
//! `kind` compares rules):
//! - `limit`: requests admitted per window. Default 4500.
//! - `window`: the window's length. Default 1 h.
//!
//! Everything is integer nanoseconds and whole counts: no rounding anywhere.

use serde::{Deserialize, Serialize};

use super::{Decision, Limiter, Rule};
use crate::config::{ParamProblem, check_quota};
use crate::exchange::Status;
use crate::time::{HumanDuration, NANOS_PER_SEC, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixedWindowConfig {
    /// Requests per window. Default 4500.
    pub limit: u64,
    /// Default 1 h.
    pub window: HumanDuration,
}

impl Default for FixedWindowConfig {
    fn default() -> Self {
        FixedWindowConfig {
            limit: 4500,
            window: HumanDuration::from_secs(3600),
        }
    }
}

impl Rule for FixedWindowConfig {
    const NAME: &'static str = "fixed-window";
    const DESCRIPTION: &'static str = "fixed-window counter: `limit` per `window`, windows aligned to t = 0, Retry-After to the next window (the Discord job queue's fixed window)";

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
        Box::new(FixedWindow::new(self))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counter {
    /// `floor(t / window)` of the window `count` belongs to.
    window: u64,
    count: u64,
}

pub struct FixedWindow {
    limit: u64,
    window: Nanos,
    keys: Vec<Counter>,
}

impl FixedWindow {
    pub fn new(cfg: &FixedWindowConfig) -> Self {
        FixedWindow {
            limit: cfg.limit.max(1),
            window: cfg.window.nanos().max(1),
            keys: Vec::new(),
        }
    }
}

impl Limiter for FixedWindow {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        if key >= self.keys.len() {
            self.keys.resize(key + 1, Counter::default());
        }
        let (limit, window) = (self.limit, self.window);
        let c = &mut self.keys[key];
        let current = now / window;
        if current != c.window {
            *c = Counter {
                window: current,
                count: 0,
            };
        }
        let (status, retry_after) = if c.count < limit {
            c.count += 1;
            (Status::Ok, None)
        } else {
            // The next window starts at (current + 1) × window, which is > now.
            let next = (current + 1).saturating_mul(window);
            (Status::Limited, Some(next - now))
        };
        Decision {
            status,
            remaining: limit - c.count,
            limit,
            retry_after,
            reset: (current + 1).saturating_mul(window) - now,
            window,
        }
    }

    /// Every window that starts before the end gives `limit`: `ceil(duration / window) × limit`
    /// (nothing is sent at the end instant itself).
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    /// A window gives its `limit` if some instant of it before the end is outside every
    /// outage; a window entirely inside an outage gives nothing.
    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        let w = self.window;
        let windows = duration.div_ceil(w);
        let mut dead: u64 = 0;
        for &(a, b) in closed {
            let b = b.min(duration);
            if a >= b {
                continue;
            }
            // Window k is covered when k × w ≥ a and its usable end min((k+1) × w, duration)
            // ≤ b; `closed` is disjoint, so no window is counted twice.
            let first = a.div_ceil(w);
            let end = if b >= duration { windows } else { b / w };
            dead += end.saturating_sub(first);
        }
        (windows - dead.min(windows)) as f64 * self.limit as f64
    }

    fn rate_per_sec(&self) -> f64 {
        self.limit as f64 * NANOS_PER_SEC as f64 / self.window as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: Nanos = NANOS_PER_SEC;

    fn fixed(limit: u64, window_s: u64) -> FixedWindow {
        FixedWindow::new(&FixedWindowConfig {
            limit,
            window: HumanDuration::from_secs(window_s),
        })
    }

    #[test]
    fn counts_per_window_and_refuses_until_the_next_starts() {
        let mut f = fixed(3, 10);
        let d: Vec<_> = (0..3).map(|i| f.admit(i * S, 0)).collect();
        assert_eq!(d.iter().map(|d| d.remaining).collect::<Vec<_>>(), [2, 1, 0]);
        assert!(d.iter().all(|d| d.status == Status::Ok && d.limit == 3));
        let refused = f.admit(7 * S + 250_000_000, 0);
        assert_eq!(refused.status, Status::Limited);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after, Some(2 * S + 750_000_000));
        // Windows are aligned to t = 0: 10 s starts a fresh one, whatever the first request.
        let d = f.admit(10 * S, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 2));
    }

    #[test]
    fn a_refusal_takes_nothing_and_the_last_nanosecond_is_still_the_old_window() {
        let mut f = fixed(1, 10);
        assert_eq!(f.admit(0, 0).status, Status::Ok);
        for _ in 0..5 {
            assert_eq!(f.admit(S, 0).status, Status::Limited);
        }
        let d = f.admit(10 * S - 1, 0);
        assert_eq!((d.status, d.retry_after), (Status::Limited, Some(1)));
        assert_eq!(f.admit(10 * S, 0).status, Status::Ok);
    }

    #[test]
    fn a_boundary_lets_two_windows_worth_through_in_a_moment() {
        let mut f = fixed(5, 60);
        let ok = [59 * S, 60 * S]
            .iter()
            .flat_map(|&t| (0..10).map(move |_| t))
            .filter(|&t| f.admit(t, 0).status == Status::Ok)
            .count();
        assert_eq!(ok, 10);
    }

    #[test]
    fn keys_count_separately() {
        let mut f = fixed(1, 10);
        assert_eq!(f.admit(0, 0).status, Status::Ok);
        assert_eq!(f.admit(0, 2).status, Status::Ok);
        assert_eq!(f.admit(0, 2).status, Status::Limited);
        assert_eq!(f.admit(S, 1).status, Status::Ok);
    }

    #[test]
    fn capacity_counts_windows_that_start_before_the_end() {
        let f = fixed(4500, 3600);
        assert!((f.rate_per_sec() - 1.25).abs() < 1e-12);
        assert_eq!(f.capacity(5 * 3600 * S), 5.0 * 4500.0);
        assert_eq!(f.capacity(5 * 3600 * S + 1), 6.0 * 4500.0);
        assert_eq!(f.capacity(0), 0.0);
    }

    #[test]
    fn capacity_drops_only_the_windows_an_outage_covers() {
        let f = fixed(10, 60);
        let d = 10 * 60 * S;
        // [90 s, 300 s) covers windows [120, 180) and [180, 240) and [240, 300) entirely.
        assert_eq!(f.capacity_with_outages(d, &[(90 * S, 300 * S)]), 70.0);
        // Touching only part of a window leaves it usable.
        assert_eq!(f.capacity_with_outages(d, &[(61 * S, 119 * S)]), 100.0);
        // An outage to the end covers the last windows, including a partial one.
        let f = fixed(10, 60);
        assert_eq!(
            f.capacity_with_outages(570 * S, &[(480 * S, 600 * S)]),
            80.0
        );
    }

    /// A client that asks every `step` gets exactly what the capacity says.
    #[test]
    fn a_greedy_client_gets_the_capacity_around_an_outage() {
        let mut f = fixed(3, 10);
        let (d, outage) = (100 * S, (25 * S, 61 * S));
        let step = S / 4;
        let ok = (0..d / step)
            .map(|i| i * step)
            .filter(|t| !(outage.0..outage.1).contains(t))
            .filter(|&t| f.admit(t, 0).status == Status::Ok)
            .count();
        assert_eq!(ok as f64, f.capacity_with_outages(d, &[outage]));
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = FixedWindowConfig {
            limit: 0,
            window: HumanDuration(0),
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["limit", "window"]);
    }

    proptest! {
        /// No window ever holds more than `limit` admissions, so by any time t at most
        /// `limit × (floor(t / window) + 1)` are admitted.
        #[test]
        fn never_admits_more_than_limit_per_window(
            limit in 1u64..50,
            window_ms in 1u64..10_000,
            gaps in proptest::collection::vec(0u64..500_000_000, 1..400),
        ) {
            let mut f = FixedWindow::new(&FixedWindowConfig {
                limit,
                window: HumanDuration::from_millis(window_ms),
            });
            let window = window_ms * 1_000_000;
            let (mut now, mut admitted) = (0u64, 0u64);
            let mut per_window = std::collections::BTreeMap::<u64, u64>::new();
            for gap in gaps {
                now += gap;
                let d = f.admit(now, 0);
                if d.status == Status::Ok {
                    admitted += 1;
                    *per_window.entry(now / window).or_default() += 1;
                } else {
                    // A refusal says exactly when the next window opens.
                    prop_assert_eq!(d.retry_after, Some((now / window + 1) * window - now));
                }
                prop_assert!(per_window.values().all(|&c| c <= limit));
                prop_assert!(admitted <= limit * (now / window + 1));
            }
        }
    }
}
