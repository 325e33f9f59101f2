//! `fixed-window`: the fixed-window counter. It is the count the Discord job queue's fixed window
//! keeps in Redis per `⌊timestamp / window⌋` for Discord's "10 requests per 10 s", here as the
//! server's rule, and the rule of the many APIs that reset a count on the hour.
//!
//! Each key may have `limit` requests admitted per window; the count starts again at 0 when a
//! new window begins. Where windows begin is `start`:
//! - `"clock"` (the default): time is cut into windows aligned to t = 0, and a request at `t`
//!   belongs to window `floor(t / window)`, whoever asked before.
//! - `"first-request"`: a key's window opens with the first request after its last window
//!   ended and lasts `window` from there. This is what most deployed fixed windows do,
//!   because they keep a counter that expires: the Python `limits` library (Flask-Limiter's
//!   `fixed-window` strategy) sets the counter's expiry when its increment made it 1,
//!   express-rate-limit's memory store moves a key's reset to `now + windowMs` once the old
//!   one has passed, and @fastify/rate-limit's local store restarts a key whose
//!   `iterationStartMs + timeWindow` is past. A key idle for a while therefore has its windows
//!   shifted against every other key's and against the clock.
//!
//! A refused request takes nothing, and its `Retry-After` is the time to the end of its
//! window (the next window's start on the clock grid); the reset stated on every answer is
//! that same end. The three libraries above do count a refused request (they increment before
//! they compare), but that changes nothing a client can see: the remaining count they state
//! is clamped at 0, and the window's end was fixed by its first request, so a refusal neither
//! moves nor extends it. (@fastify/rate-limit's opt-in `continueExceeding` does restart the
//! window on each refusal; that option is not modelled.)
//!
//! Up to `2 × limit` requests can be admitted within one `window` of time across a boundary,
//! in either mode; that is this rule's known weakness.
//!
//! Parameters and defaults (the same nominal rate as the default `gcra`, so changing only
//! `kind` compares rules):
//! - `limit`: requests admitted per window. Default 4500.
//! - `window`: the window's length. Default 1 h.
//! - `start`: `"clock"` or `"first-request"`. Default `"clock"` (written out only when it is
//!   not, so existing scenarios record exactly what they did before).
//!
//! Everything is integer nanoseconds and whole counts: no rounding anywhere.

use serde::{Deserialize, Serialize};

use super::sliding_window::window_batches;
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
    /// Where a key's windows begin. Default on the clock's grid.
    #[serde(skip_serializing_if = "WindowStart::is_clock")]
    pub start: WindowStart,
}

impl Default for FixedWindowConfig {
    fn default() -> Self {
        FixedWindowConfig {
            limit: 4500,
            window: HumanDuration::from_secs(3600),
            start: WindowStart::Clock,
        }
    }
}

/// Where a key's fixed windows begin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WindowStart {
    /// On a grid aligned to t = 0, the same for every key.
    #[default]
    Clock,
    /// At the key's first request after its last window ended (a counter that expires).
    FirstRequest,
}

impl WindowStart {
    pub(super) fn is_clock(&self) -> bool {
        *self == WindowStart::Clock
    }
}

impl Rule for FixedWindowConfig {
    const NAME: &'static str = "fixed-window";
    const DESCRIPTION: &'static str = "fixed-window counter: `limit` per `window`, windows aligned to t = 0 (the Discord job queue's fixed window) or, with `start = \"first-request\"`, opened by a key's first request (Flask-Limiter/`limits`, express-rate-limit, @fastify/rate-limit); Retry-After to the window's end";

    const NOTES: &'static [&'static str] = &[
        "start = \"clock\" (the default, not written out: windows on a grid from t = 0) or \"first-request\" (a key's window opens with its first request after the last one ended)",
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
        Box::new(FixedWindow::new(self))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counter {
    /// When the window `count` belongs to ends (exclusive); 0 before the key's first request,
    /// so that request always opens a window.
    end: Nanos,
    count: u64,
}

pub struct FixedWindow {
    limit: u64,
    window: Nanos,
    start: WindowStart,
    keys: Vec<Counter>,
}

impl FixedWindow {
    pub fn new(cfg: &FixedWindowConfig) -> Self {
        FixedWindow {
            limit: cfg.limit.max(1),
            window: cfg.window.nanos().max(1),
            start: cfg.start,
            keys: Vec::new(),
        }
    }

    /// The end of the window a request at `now` opens, once the key's last one has ended.
    fn end_of_window_opened_at(&self, now: Nanos) -> Nanos {
        match self.start {
            WindowStart::Clock => (now / self.window + 1).saturating_mul(self.window),
            WindowStart::FirstRequest => now.saturating_add(self.window),
        }
    }
}

impl Limiter for FixedWindow {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        if key >= self.keys.len() {
            self.keys.resize(key + 1, Counter::default());
        }
        let limit = self.limit;
        let opened_end = self.end_of_window_opened_at(now);
        let c = &mut self.keys[key];
        // A window is [end − window, end): at its end instant the next one begins.
        if now >= c.end {
            *c = Counter {
                end: opened_end,
                count: 0,
            };
        }
        let (status, retry_after) = if c.count < limit {
            c.count += 1;
            (Status::Ok, None)
        } else {
            // The window ends after now, by the test above.
            (Status::Limited, Some(c.end - now))
        };
        Decision {
            status,
            remaining: limit - c.count,
            limit,
            retry_after,
            reset: c.end - now,
            window: self.window,
        }
    }

    /// Every window that starts before the end gives `limit`: `ceil(duration / window) × limit`
    /// (nothing is sent at the end instant itself). Windows opened by a first request do no
    /// better: the earliest a window can open is when the one before it ends.
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    /// On the clock grid, a window gives its `limit` if some instant of it before the end is
    /// outside every outage; a window entirely inside an outage gives nothing. Windows opened
    /// by requests give the most when each opens at the first open instant after the last one
    /// ended, the same schedule as the sliding log's best.
    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        if self.start == WindowStart::FirstRequest {
            return window_batches(self.window, duration, closed) as f64 * self.limit as f64;
        }
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
            start: WindowStart::Clock,
        })
    }

    fn from_first(limit: u64, window_s: u64) -> FixedWindow {
        FixedWindow::new(&FixedWindowConfig {
            limit,
            window: HumanDuration::from_secs(window_s),
            start: WindowStart::FirstRequest,
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
    fn a_first_request_opens_the_window_and_the_reset_is_its_end() {
        let mut f = from_first(3, 10);
        // Nothing until 4 s: the window is [4 s, 14 s), not the clock's [0, 10 s).
        let d: Vec<_> = [4, 5, 9].iter().map(|&t| f.admit(t * S, 0)).collect();
        assert!(d.iter().all(|d| d.status == Status::Ok && d.limit == 3));
        assert_eq!(d.iter().map(|d| d.remaining).collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!(d[0].reset, 10 * S);
        assert_eq!(d[2].reset, 5 * S);
        // 10 s would be a new window on the clock; here it is still the one opened at 4 s.
        let refused = f.admit(10 * S, 0);
        assert_eq!(refused.status, Status::Limited);
        assert_eq!(refused.retry_after, Some(4 * S));
        assert_eq!(refused.reset, 4 * S);
        assert_eq!(f.admit(14 * S - 1, 0).status, Status::Limited);
        let d = f.admit(14 * S, 0);
        assert_eq!((d.status, d.remaining, d.reset), (Status::Ok, 2, 10 * S));
    }

    #[test]
    fn an_idle_key_opens_its_next_window_at_its_next_request() {
        let mut f = from_first(2, 10);
        assert_eq!(f.admit(0, 0).status, Status::Ok);
        // Idle from 0 to 37.5 s: the next window is [37.5 s, 47.5 s), off the clock's grid.
        let t = 37 * S + S / 2;
        assert_eq!(f.admit(t, 0).status, Status::Ok);
        assert_eq!(f.admit(t, 0).status, Status::Ok);
        let refused = f.admit(40 * S, 0);
        assert_eq!(refused.retry_after, Some(7 * S + S / 2));
        // Refusals neither move nor extend the window.
        for i in 0..20 {
            assert_eq!(f.admit(40 * S + i * S / 4, 0).status, Status::Limited);
        }
        assert_eq!(f.admit(t + 10 * S, 0).status, Status::Ok);
        // Another key's windows are its own.
        assert_eq!(f.admit(41 * S, 1).reset, 10 * S);
    }

    #[test]
    fn windows_opened_by_requests_give_the_same_capacity_without_outages() {
        let (clock, first) = (fixed(10, 60), from_first(10, 60));
        for d in [0, 1, 60 * S, 60 * S + 1, 3600 * S + 7] {
            assert_eq!(clock.capacity(d), first.capacity(d), "{d}");
        }
    }

    /// After an outage the next window opens at its end and the windows after it shift with
    /// it, where the clock's grid still uses the sliver of a window an outage leaves open.
    #[test]
    fn a_greedy_client_gets_the_capacity_of_windows_opened_by_requests() {
        let (d, outage) = (100 * S, (25 * S, 61 * S));
        let mut f = from_first(3, 10);
        let step = S / 4;
        let ok = (0..d / step)
            .map(|i| i * step)
            .filter(|t| !(outage.0..outage.1).contains(t))
            .filter(|&t| f.admit(t, 0).status == Status::Ok)
            .count();
        // [0,10) [10,20) [20,30) then [61,71) [71,81) [81,91) [91,101): 7 windows.
        assert_eq!(ok, 21);
        assert_eq!(ok as f64, f.capacity_with_outages(d, &[outage]));
        assert_eq!(fixed(3, 10).capacity_with_outages(d, &[outage]), 21.0);
        // Until 95 s with an outage to 68 s: the clock has [60, 70) to [90, 95), four windows;
        // opened by requests they are [68, 78), [78, 88) and [88, 98), three.
        let (d, outage) = (95 * S, (25 * S, 68 * S));
        assert_eq!(fixed(3, 10).capacity_with_outages(d, &[outage]), 21.0);
        assert_eq!(from_first(3, 10).capacity_with_outages(d, &[outage]), 18.0);
    }

    #[test]
    fn start_reads_and_is_written_only_when_not_the_clock() {
        let cfg: FixedWindowConfig = toml::from_str("start = \"first-request\"").unwrap();
        assert_eq!(cfg.start, WindowStart::FirstRequest);
        assert!(
            toml::to_string(&cfg)
                .unwrap()
                .contains("start = \"first-request\"")
        );
        let text = toml::to_string(&FixedWindowConfig::default()).unwrap();
        assert!(!text.contains("start"), "{text}");
        let e = toml::from_str::<FixedWindowConfig>("start = \"sliding\"").unwrap_err();
        assert!(e.to_string().contains("first-request"), "{e}");
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = FixedWindowConfig {
            limit: 0,
            window: HumanDuration(0),
            start: WindowStart::FirstRequest,
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
                start: WindowStart::Clock,
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

        /// With windows opened by requests: each window starts at a request no earlier than
        /// the end of the one before, holds at most `limit`, and a refusal names its end.
        /// So by any time t at most `limit × (floor(t / window) + 1)` are admitted, as on the
        /// clock's grid, and never more than the capacity.
        #[test]
        fn windows_opened_by_requests_never_admit_more_than_limit(
            limit in 1u64..50,
            window_ms in 1u64..10_000,
            gaps in proptest::collection::vec(0u64..500_000_000, 1..400),
        ) {
            let mut f = FixedWindow::new(&FixedWindowConfig {
                limit,
                window: HumanDuration::from_millis(window_ms),
                start: WindowStart::FirstRequest,
            });
            let window = window_ms * 1_000_000;
            let (mut now, mut admitted) = (0u64, 0u64);
            // The model: (the window's start, admissions in it).
            let mut open: Option<(u64, u64)> = None;
            for gap in gaps {
                now += gap;
                let d = f.admit(now, 0);
                if open.is_none_or(|(start, _)| now >= start + window) {
                    open = Some((now, 0));
                }
                let (start, count) = open.as_mut().expect("just opened");
                prop_assert_eq!(d.status == Status::Ok, *count < limit);
                if d.status == Status::Ok {
                    *count += 1;
                    admitted += 1;
                } else {
                    prop_assert_eq!(d.retry_after, Some(*start + window - now));
                }
                prop_assert_eq!(d.reset, *start + window - now);
                prop_assert_eq!(d.remaining, limit - *count);
                prop_assert!(admitted <= limit * (now / window + 1));
                prop_assert!(admitted as f64 <= f.capacity(now + 1));
            }
        }
    }
}
