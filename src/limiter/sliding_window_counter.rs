//! `sliding-window-counter`: the sliding-window **counter**, the cheap approximation of the
//! sliding log that most deployed "sliding windows" are: the Python `limits` library's
//! `sliding-window-counter` strategy (Flask-Limiter's `RATELIMIT_STRATEGY =
//! "sliding-window-counter"`), Cloudflare's rate limiting and many API gateways. Two counters
//! per key stand in for the log of timestamps.
//!
//! Time is cut into windows of `window` aligned to t = 0, as `limits` cuts them with its
//! in-memory storage (the keys are `⌊t / window⌋`, on the clock; its Redis storage instead
//! starts a key's pair of windows at its first request, which is not modelled). A request at
//! `t`, a share `e / window` into its window, weighs
//!
//! ```text
//! weighted = previous × (1 − e / window) + current
//! ```
//!
//! `previous` being the admissions of the window before and `current` those of this one so
//! far: the previous window counts by the share of it the sliding window `(t − window, t]`
//! still covers, as if its requests had been spread evenly. The request is admitted when
//! `⌊weighted⌋ + 1 ≤ limit`, and then counted in `current`. A refused request counts nothing:
//! `limits` compares before it increments, and its memory storage's `incr` only runs on an
//! admission.
//!
//! What it states: `remaining` is `limit − ⌊weighted⌋` after the decision (what `limits`'
//! window stats return). On a refusal `Retry-After` is the exact wait until the weighted count
//! has fallen far enough to admit; `limits` reports the time until the previous window's share
//! next drops by one whole request (or the current window ends), which is the same instant,
//! and Flask-Limiter writes it in whole seconds (`Retry-After: 3` on a limit of 3 per 10 s,
//! whose previous window loses a request every 3.3 s). The reset stated on an admission is by
//! default, as for every rule here, until the allowance is whole again (`⌊weighted⌋ = 0`);
//! with `reset = "next-drop"` it is what `limits` states: the time until the previous window's
//! share next drops by a whole request, `left mod (window / previous)`, or with nothing from
//! the previous window until the current one ends (0 for a key with no count at all).
//!
//! Two options model other counters of this kind:
//! - `start = "first-request"`: the windows follow on from a key's first request, one after
//!   another, instead of lying on the clock's grid; a request after two whole windows with no
//!   request starts them again at its own instant. This is HAProxy's rate counter
//!   (`http_req_rate(period)` of a stick table, its `freq_ctr` period), which rotates a window
//!   forward by one period when it ends and starts afresh after two.
//! - `refused = "counted"`: a refused request is counted as an admitted one is. HAProxy's
//!   `http-request track-sc0` counts every request it tracks before `deny` reads the rate, so
//!   a client that keeps sending while refused keeps the count above the limit: it is let in
//!   again only once its own rate falls below the limit.
//!
//! Its known error, and why the exact `sliding-window` log is also here: requests bunched at
//! the end of a window weigh as if spread over it, so up to `2 × limit` can be admitted in one
//! `window` of time (the whole `limit` at the end of one window, then the current share of the
//! next); and requests bunched at its start weigh too little, so a client pacing exactly at
//! `limit / window` with its sends on the grid is refused. Every grid window still holds at
//! most `limit`.
//!
//! Parameters and defaults (the default `gcra`'s nominal rate):
//! - `limit`: requests admitted per window. Default 4500.
//! - `window`: the window's length. Default 1 h.
//! - `reset`: `"whole"` or `"next-drop"`. Default `"whole"` (written out only when it is not).
//! - `start`: `"clock"` or `"first-request"`. Default `"clock"` (written out only when it is
//!   not).
//! - `refused`: `"free"` or `"counted"`. Default `"free"` (written out only when it is not).
//!
//! Everything is integer nanoseconds and whole counts: the comparisons are made on
//! `previous × (window − e)` against multiples of `window`, exactly.

use serde::{Deserialize, Serialize};

use super::fixed_window::WindowStart;
use super::{Decision, Limiter, Rule};
use crate::config::{ParamProblem, check_quota};
use crate::exchange::Status;
use crate::time::{HumanDuration, NANOS_PER_SEC, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlidingWindowCounterConfig {
    /// Requests per window. Default 4500.
    pub limit: u64,
    /// Default 1 h.
    pub window: HumanDuration,
    /// Which instant the answers state as the reset. Default when the allowance is whole.
    #[serde(skip_serializing_if = "CounterReset::is_whole")]
    pub reset: CounterReset,
    /// Where a key's windows begin. Default on the clock's grid.
    #[serde(skip_serializing_if = "WindowStart::is_clock")]
    pub start: WindowStart,
    /// Whether a refused request is counted. Default not.
    #[serde(skip_serializing_if = "Refused::is_free")]
    pub refused: Refused,
}

/// Whether a counter counts the requests it refuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Refused {
    /// Only admissions are counted (`limits`, Flask-Limiter).
    #[default]
    Free,
    /// Every request is counted, refused or not (HAProxy's tracked request rate).
    Counted,
}

impl Refused {
    fn is_free(&self) -> bool {
        *self == Refused::Free
    }
}

impl Default for SlidingWindowCounterConfig {
    fn default() -> Self {
        SlidingWindowCounterConfig {
            limit: 4500,
            window: HumanDuration::from_secs(3600),
            reset: CounterReset::Whole,
            start: WindowStart::Clock,
            refused: Refused::Free,
        }
    }
}

/// The reset a sliding-window counter states on its answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterReset {
    /// When the weighted count is 0 again: the allowance is whole.
    #[default]
    Whole,
    /// When the weighted count next drops by a whole request, as `limits` (Flask-Limiter)
    /// states it.
    NextDrop,
}

impl CounterReset {
    fn is_whole(&self) -> bool {
        *self == CounterReset::Whole
    }
}

impl Rule for SlidingWindowCounterConfig {
    const NAME: &'static str = "sliding-window-counter";
    const DESCRIPTION: &'static str = "sliding-window counter: the previous clock window's count weighted by its share still in the sliding window, plus the current one's, at most `limit` (Flask-Limiter/`limits`' sliding-window-counter, Cloudflare's)";

    const NOTES: &'static [&'static str] = &[
        "reset = \"whole\" (the default, not written out: the reset stated is when the weighted count is 0 again) or \"next-drop\" (when it next drops by a whole request, as Flask-Limiter states it)",
        "start = \"clock\" (the default, not written out: windows on a grid from t = 0) or \"first-request\" (windows follow on from a key's first request, afresh after two empty ones, as HAProxy's request rate)",
        "refused = \"free\" (the default, not written out: a refusal counts nothing) or \"counted\" (every request counts, refused or not, as HAProxy's tracked request rate)",
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
        Box::new(SlidingWindowCounter::new(self))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// When the window `current` counts opened (`None` before the key's first request).
    opened: Option<Nanos>,
    previous: u64,
    current: u64,
}

pub struct SlidingWindowCounter {
    limit: u64,
    window: Nanos,
    reset: CounterReset,
    start: WindowStart,
    refused: Refused,
    keys: Vec<Counts>,
}

impl SlidingWindowCounter {
    pub fn new(cfg: &SlidingWindowCounterConfig) -> Self {
        SlidingWindowCounter {
            limit: cfg.limit.max(1),
            window: cfg.window.nanos().max(1),
            reset: cfg.reset,
            start: cfg.start,
            refused: cfg.refused,
            keys: Vec::new(),
        }
    }

    /// The counts of the window `now` falls in, from those of the key's last request, and
    /// how long that window has to go.
    fn roll(&self, c: Counts, now: Nanos) -> (Counts, Nanos) {
        let window = self.window;
        // When the window `now` falls in opened.
        let start = match (self.start, c.opened) {
            (WindowStart::Clock, _) => now - now % window,
            // (A request that reaches the limiter before the window it opened, as answers
            // that cross on the way can, is in that window.)
            (WindowStart::FirstRequest, Some(at)) if now.saturating_sub(at) < window => at,
            // One window on: the next of the key's windows.
            (WindowStart::FirstRequest, Some(at)) if now.saturating_sub(at) < 2 * window => {
                at + window
            }
            // The key's first request, or two whole windows with nothing: afresh.
            (WindowStart::FirstRequest, _) => now,
        };
        let left = start + window - now;
        if c.opened == Some(start) {
            return (c, left);
        }
        // The window before this one, if it is the one counted last, or nothing.
        let follows = c
            .opened
            .is_some_and(|at| at.saturating_add(window) == start);
        let c = Counts {
            opened: Some(start),
            previous: if follows { c.current } else { 0 },
            current: 0,
        };
        (c, left)
    }

    /// `⌊previous × left / window⌋`: the previous window's weight with `left` of the current
    /// window to go, in whole requests.
    fn weighed(&self, previous: u64, left: Nanos) -> u64 {
        let w = u128::from(self.window);
        u64::try_from(u128::from(previous) * u128::from(left) / w).unwrap_or(u64::MAX)
    }

    /// How long before a count of `previous` (weighed with `left` to go) and `current` lets
    /// the weighted count fall below `below`: at once, later in this window, or in the next
    /// one, where `current` is the previous count and nothing is counted yet.
    fn until_below(&self, previous: u64, current: u64, left: Nanos, below: u64) -> Nanos {
        let w = u128::from(self.window);
        // ⌊p × ℓ / w⌋ + c < below  ⟺  p × ℓ < (below − c) × w, true once ℓ ≤ ⌊(room × w − 1) / p⌋.
        let fits = |p: u64, c: u64, left: Nanos| -> Option<Nanos> {
            let room = u128::from(below.checked_sub(c).filter(|&r| r > 0)?);
            if p == 0 {
                return Some(0);
            }
            let most = (room * w - 1) / u128::from(p);
            Some(left.saturating_sub(u64::try_from(most).unwrap_or(u64::MAX)))
        };
        match fits(previous, current, left) {
            Some(wait) => wait,
            // Not in this window: from the next one's start, the current count is the previous.
            None => left.saturating_add(fits(current, 0, self.window).unwrap_or(self.window)),
        }
    }
}

impl Limiter for SlidingWindowCounter {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        if key >= self.keys.len() {
            self.keys.resize(key + 1, Counts::default());
        }
        let (limit, window) = (self.limit, self.window);
        let (mut c, left) = self.roll(self.keys[key], now);
        let admitted = self.weighed(c.previous, left) + c.current < limit;
        if admitted || self.refused == Refused::Counted {
            c.current = c.current.saturating_add(1);
        }
        self.keys[key] = c;
        let weighted = self.weighed(c.previous, left) + c.current;
        let retry_after = (!admitted).then(|| self.until_below(c.previous, c.current, left, limit));
        Decision {
            status: if admitted {
                Status::Ok
            } else {
                Status::Limited
            },
            remaining: limit.saturating_sub(weighted),
            limit,
            retry_after,
            reset: match self.reset {
                CounterReset::Whole => self.until_below(c.previous, c.current, left, 1),
                CounterReset::NextDrop if c.previous > 0 => left % (window / c.previous).max(1),
                CounterReset::NextDrop if c.current > 0 => left,
                CounterReset::NextDrop => 0,
            },
            window,
        }
    }

    /// The most a client can get: see [`Limiter::capacity_with_outages`].
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    /// The best schedule sends each window's requests at its last open instant before the
    /// end, where the previous window weighs least: a window whose last nanosecond is open
    /// gives the whole `limit` (the previous count weighs nothing there), and one cut by an
    /// outage or by the end gives `limit − ⌊previous × left / window⌋`. Taking all a window
    /// can give is best even though it weighs on the next window: one more request here
    /// costs the next window at most one.
    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        if duration == 0 {
            return 0.0;
        }
        let w = self.window;
        let last = (duration - 1) / w;
        let (mut total, mut previous, mut k) = (0u64, 0u64, 0u64);
        while k <= last {
            // The next window an outage touches, or the last one: those before it are whole.
            let touched = closed
                .iter()
                .find(|&&(_, b)| b > k.saturating_mul(w))
                .map_or(last, |&(a, _)| (a / w).max(k))
                .min(last);
            if touched > k {
                let (given, count) = self.whole_windows(touched - k, previous);
                total = total.saturating_add(given);
                previous = count;
                k = touched;
                continue;
            }
            match latest_open(k, w, duration, closed) {
                Some(at) => {
                    let left = w - (at - k * w);
                    previous = self.limit - self.weighed(previous, left).min(self.limit);
                    total = total.saturating_add(previous);
                    k += 1;
                }
                None => {
                    // Closed to its end, and so is every window until the outage ends.
                    previous = 0;
                    let end = closed
                        .iter()
                        .find(|&&(a, b)| a <= k * w && b > k * w)
                        .map_or(0, |&(_, b)| b / w);
                    k = end.max(k + 1);
                }
            }
        }
        total as f64
    }

    fn rate_per_sec(&self) -> f64 {
        self.limit as f64 * NANOS_PER_SEC as f64 / self.window as f64
    }
}

impl SlidingWindowCounter {
    /// What `n` windows open to their last nanosecond give after a window that admitted
    /// `previous`, and the count of the last of them. Each gives `limit − ⌊previous / window⌋`
    /// (sent with 1 ns to go), which is `limit` for any window longer than `limit` ns: the run
    /// is summed at once when it repeats.
    fn whole_windows(&self, n: u64, mut previous: u64) -> (u64, u64) {
        let mut total = 0u64;
        for i in 0..n {
            let count = self.limit - self.weighed(previous, 1).min(self.limit);
            if count == previous {
                return (total.saturating_add(count.saturating_mul(n - i)), count);
            }
            total = total.saturating_add(count);
            previous = count;
        }
        (total, previous)
    }
}

/// The last instant of window `k` (of length `w`) before `duration` that no outage covers,
/// if there is one.
fn latest_open(k: u64, w: Nanos, duration: Nanos, closed: &[(Nanos, Nanos)]) -> Option<Nanos> {
    let start = k * w;
    let mut at = start.saturating_add(w).min(duration).checked_sub(1)?;
    // `closed` is sorted and disjoint: walk back through the outages that cover `at`.
    for &(a, b) in closed.iter().rev() {
        if a <= at && at < b {
            at = a.checked_sub(1)?;
        }
    }
    (at >= start).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: Nanos = NANOS_PER_SEC;

    fn counter(limit: u64, window: Nanos) -> SlidingWindowCounter {
        SlidingWindowCounter::new(&SlidingWindowCounterConfig {
            limit,
            window: HumanDuration(window),
            ..SlidingWindowCounterConfig::default()
        })
    }

    /// HAProxy's counter: windows from the first request, refusals counted.
    fn haproxy(limit: u64, window: Nanos) -> SlidingWindowCounter {
        let cfg: SlidingWindowCounterConfig =
            toml::from_str("start = \"first-request\"\nrefused = \"counted\"").unwrap();
        assert!(
            toml::to_string(&cfg)
                .unwrap()
                .contains("refused = \"counted\"")
        );
        let default = SlidingWindowCounterConfig::default();
        assert!(!toml::to_string(&default).unwrap().contains("refused"));
        SlidingWindowCounter::new(&SlidingWindowCounterConfig {
            limit,
            window: HumanDuration(window),
            ..cfg
        })
    }

    fn ok(c: &mut SlidingWindowCounter, at: Nanos) -> bool {
        c.admit(at, 0).status == Status::Ok
    }

    #[test]
    fn refusals_counted_keep_a_client_that_keeps_sending_out() {
        // 5 per 5 s, 10 sent at 3 s: 5 admitted, 5 refused and counted.
        let mut c = haproxy(5, 5 * S);
        let sent: Vec<bool> = (0..10).map(|i| ok(&mut c, 3 * S + i)).collect();
        assert_eq!(sent.iter().filter(|&&a| a).count(), 5);
        // The window opened at 3 s: at 8.5 s the previous 10 still weigh 9, refused (and
        // counted); uncounted refusals would weigh 5 × 0.9 = 4 and let one in.
        assert!(!ok(&mut c, 8 * S + S / 2));
        let mut free = counter(5, 5 * S);
        for i in 0..10 {
            free.admit(3 * S + i, 0);
        }
        // On the clock's grid the window opened at 5 s: at 8.5 s the 5 admitted weigh 1.
        assert!(ok(&mut free, 8 * S + S / 2));
        // Two whole windows with nothing: afresh, the window opens at 20 s.
        assert!(ok(&mut c, 20 * S));
        assert!((0..4).all(|i| ok(&mut c, 24 * S + i)));
        assert!(!ok(&mut c, 24 * S + 10));
    }

    #[test]
    fn windows_from_the_first_request_follow_on_one_period_at_a_time() {
        let mut c = haproxy(10, 10 * S);
        // Opened at 3 s: 10 admitted by 12.9 s fill it.
        assert!((0..10).all(|i| ok(&mut c, 3 * S + i * S)));
        assert!(!ok(&mut c, 12 * S + S / 2));
        // At 13 s the next window opens (not afresh at 13 s after the gap: on from 3 s), the
        // 11 counted before weigh 11 × 0.9: ⌊9.9⌋ = 9, one more fits.
        assert!(ok(&mut c, 14 * S));
        assert!(!ok(&mut c, 14 * S + 1));
        // 19 s on, at 33 s: 13 s is 20 s back, two windows: afresh.
        assert!((0..10).all(|i| ok(&mut c, 33 * S + i)));
    }

    #[test]
    fn a_request_that_arrives_before_its_window_opened_is_counted_in_it() {
        // Requests that cross on the way reach the limiter out of order: one at 4.9 s after
        // the window opened at 5 s is in that window, not the start of a fresh one.
        let mut c = haproxy(2, 10 * S);
        assert!(ok(&mut c, 5 * S));
        assert!(ok(&mut c, 5 * S - S / 10));
        assert!(!ok(&mut c, 6 * S));
        // The window still ends 10 s after 5 s.
        assert!(ok(&mut c, 15 * S + 10 * S / 2));
    }

    #[test]
    fn with_next_drop_the_reset_is_when_the_weighted_count_next_drops_by_one() {
        let cfg: SlidingWindowCounterConfig = toml::from_str("reset = \"next-drop\"").unwrap();
        assert_eq!(cfg.reset, CounterReset::NextDrop);
        let default = SlidingWindowCounterConfig::default();
        assert!(!toml::to_string(&default).unwrap().contains("reset"));
        let mut c = SlidingWindowCounter::new(&SlidingWindowCounterConfig {
            limit: 10,
            window: HumanDuration(10 * S),
            reset: CounterReset::NextDrop,
            ..SlidingWindowCounterConfig::default()
        });
        // Five requests in the window [0, 10 s): with nothing from the window before, the
        // reset is this window's end.
        for t in [S, 2 * S, 3 * S, 4 * S] {
            c.admit(t, 0);
        }
        assert_eq!(c.admit(4 * S, 0).reset, 6 * S);
        // At 13 s, 7 s to go, the previous five weigh a request less every 2 s: the next drop
        // is 7 mod 2 = 1 s away.
        assert_eq!(c.admit(13 * S, 0).reset, S);
        // A key whose last count is two windows old: this request alone, to the window's end.
        let mut empty = SlidingWindowCounter::new(&SlidingWindowCounterConfig {
            limit: 1,
            window: HumanDuration(10 * S),
            reset: CounterReset::NextDrop,
            ..SlidingWindowCounterConfig::default()
        });
        empty.admit(0, 0);
        assert_eq!(empty.admit(25 * S, 0).reset, 5 * S);
    }

    #[test]
    fn the_previous_window_weighs_by_its_share_still_inside() {
        let mut c = counter(3, 10 * S);
        for t in [1, 2, 3] {
            assert_eq!(c.admit(t * S, 0).status, Status::Ok);
        }
        assert_eq!(c.admit(4 * S, 0).status, Status::Limited);
        // 10.5 s: 3 × 0.95 = 2.85 weighs 2, so one more fits.
        let d = c.admit(10 * S + S / 2, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 0));
        // 11 s: 3 × 0.9 + 1 = 3.7 is full. The previous window's 3 requests weigh one less
        // every 10/3 s: 2.7 drops under 2 once 2/3 of the window is left, at 13⅓ s.
        let d = c.admit(11 * S, 0);
        assert_eq!(d.status, Status::Limited);
        assert_eq!(d.retry_after, Some(2 * S + S / 3 + 1));
        assert_eq!(c.admit(13 * S + S / 3, 0).status, Status::Limited);
        let d = c.admit(13 * S + S / 3 + 1, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 0));
    }

    #[test]
    fn a_refusal_counts_nothing() {
        let mut c = counter(2, 10 * S);
        assert_eq!(c.admit(0, 0).status, Status::Ok);
        assert_eq!(c.admit(0, 0).status, Status::Ok);
        for i in 1..40 {
            assert_eq!(c.admit(i * S / 4, 0).status, Status::Limited);
        }
        // In the next window only the two admissions weigh: 2 × 0.45 = 0.9 weighs nothing.
        let d = c.admit(15 * S + S / 2, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 1));
    }

    #[test]
    fn a_full_window_refuses_until_just_after_the_next_begins() {
        let mut c = counter(4, 10 * S);
        for _ in 0..4 {
            assert_eq!(c.admit(9 * S, 0).status, Status::Ok);
        }
        let d = c.admit(9 * S, 0);
        // At 10 s the previous 4 weigh all of 4; a nanosecond later, 3.99… weighs 3.
        assert_eq!(d.retry_after, Some(S + 1));
        assert_eq!(c.admit(10 * S, 0).status, Status::Limited);
        assert_eq!(c.admit(10 * S + 1, 0).status, Status::Ok);
    }

    #[test]
    fn requests_bunched_at_a_boundary_pass_twice_the_limit_in_one_window_of_time() {
        let mut c = counter(10, 60 * S);
        let ok = |c: &mut SlidingWindowCounter, t: Nanos, n: usize| {
            (0..n)
                .filter(|_| c.admit(t, 0).status == Status::Ok)
                .count()
        };
        // The whole limit in the last second of one window, then at 118 s the previous window
        // weighs 10 × 2/60, nothing: 10 more, 20 within a minute.
        assert_eq!(ok(&mut c, 59 * S, 20), 10);
        assert_eq!(ok(&mut c, 118 * S, 20), 10);
    }

    #[test]
    fn pacing_on_the_grid_is_refused_and_half_a_slot_later_is_not() {
        // 4 per 4 s sent every second: in the second window the previous weighs 4 − j at the
        // j-th second and j are counted, exactly the limit.
        let mut c = counter(4, 4 * S);
        let on_grid = (0..12)
            .filter(|&i| c.admit(i * S, 0).status == Status::Ok)
            .count();
        assert!(on_grid < 12, "{on_grid}");
        let mut c = counter(4, 4 * S);
        assert!((0..12).all(|i| c.admit(i * S + S / 2, 0).status == Status::Ok));
    }

    #[test]
    fn the_reset_is_when_the_weighted_count_is_below_one() {
        let mut c = counter(5, 10 * S);
        // One request at 2 s: whole again once it has left the next window's weight, which
        // happens as soon as the next window begins (1 × 1.0 weighs 1 only at its start).
        let d = c.admit(2 * S, 0);
        assert_eq!(d.reset, 8 * S + 1);
        assert_eq!(c.admit(10 * S + 1, 0).remaining, 4);
        // A fresh key, after its request, has one counted: the same.
        assert_eq!(c.admit(0, 1).reset, 10 * S + 1);
    }

    #[test]
    fn keys_are_separate_and_an_idle_key_forgets() {
        let mut c = counter(1, 10 * S);
        assert_eq!(c.admit(0, 0).status, Status::Ok);
        assert_eq!(c.admit(0, 3).status, Status::Ok);
        assert_eq!(c.admit(S, 0).status, Status::Limited);
        // Two windows later nothing weighs.
        assert_eq!(c.admit(20 * S, 0).status, Status::Ok);
    }

    #[test]
    fn capacity_is_the_limit_per_window_less_what_the_last_one_cannot_use() {
        let c = counter(4500, 3600 * S);
        assert!((c.rate_per_sec() - 1.25).abs() < 1e-12);
        assert_eq!(c.capacity(0), 0.0);
        assert_eq!(c.capacity(1), 4500.0);
        assert_eq!(c.capacity(3600 * S), 4500.0);
        // 1 ns into the second window the first weighs all of it.
        assert_eq!(c.capacity(3600 * S + 1), 4500.0);
        // Half into the second window it weighs half.
        assert_eq!(c.capacity(5400 * S + 1), 4500.0 + 2250.0);
        assert_eq!(c.capacity(5 * 3600 * S), 5.0 * 4500.0);
    }

    /// Sending as many as are admitted at each window's last open instant gets exactly the
    /// capacity, around outages too.
    #[test]
    fn the_latest_instants_of_each_window_get_the_capacity() {
        let w = 10 * S;
        for (d, closed) in [
            (100 * S, vec![]),
            (95 * S, vec![]),
            (100 * S, vec![(25 * S, 61 * S)]),
            (100 * S, vec![(9 * S + S / 2, 10 * S), (29 * S, 55 * S)]),
            (100 * S, vec![(95 * S, 200 * S)]),
            (100 * S, vec![(0, 5 * S)]),
        ] {
            let mut c = counter(6, w);
            let mut ok = 0;
            for k in 0..d.div_ceil(w) {
                let Some(at) = latest_open(k, w, d, &closed) else {
                    continue;
                };
                ok += (0..20)
                    .filter(|_| c.admit(at, 0).status == Status::Ok)
                    .count();
            }
            assert_eq!(
                ok as f64,
                c.capacity_with_outages(d, &closed),
                "{d} {closed:?}"
            );
        }
    }

    #[test]
    fn a_long_outage_over_short_windows_is_skipped_at_once() {
        let c = counter(3, 1_000_000);
        let day = 86_400 * S;
        // Open for the first and last second: 1,000 windows each.
        let got = c.capacity_with_outages(day, &[(S, day - S)]);
        assert_eq!(got, 2.0 * 1000.0 * 3.0);
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = SlidingWindowCounterConfig {
            limit: 0,
            window: HumanDuration(0),
            ..SlidingWindowCounterConfig::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["limit", "window"]);
    }

    proptest! {
        /// Against the rule as `limits` writes it (`⌊weighted⌋ + 1 > limit` refuses): each
        /// decision agrees, no grid window holds more than `limit`, no window of time more
        /// than twice it, a refusal's wait is the first instant that admits, and nothing
        /// passes the capacity.
        #[test]
        fn admits_as_limits_does_and_never_more_than_the_bounds(
            limit in 1u64..20,
            window_ms in 1u64..5_000,
            gaps in proptest::collection::vec(0u64..300_000_000, 1..300),
        ) {
            let w = window_ms * 1_000_000;
            let mut c = counter(limit, w);
            let mut admitted: Vec<u64> = Vec::new();
            let mut now = 0u64;
            for gap in gaps {
                now += gap;
                let k = now / w;
                let count = |admitted: &[u64], j: u64| {
                    admitted.iter().filter(|&&a| a / w == j).count() as u128
                };
                let previous = if k > 0 { count(&admitted, k - 1) } else { 0 };
                let weighted =
                    previous * u128::from(w - now % w) / u128::from(w) + count(&admitted, k);
                let d = c.admit(now, 0);
                // `limits` refuses when the weighted count's floor plus the cost (1) passes the limit.
                let limits_refuses = weighted + 1 > u128::from(limit);
                prop_assert_eq!(d.status == Status::Ok, !limits_refuses);
                if d.status == Status::Ok {
                    admitted.push(now);
                } else {
                    let wait = d.retry_after.expect("a refusal says when");
                    prop_assert!(wait > 0);
                    // A probe on a copy: refused a nanosecond before, admitted at the wait.
                    let mut probe = SlidingWindowCounter { keys: c.keys.clone(), ..counter(limit, w) };
                    if wait > 1 {
                        prop_assert_eq!(probe.admit(now + wait - 1, 0).status, Status::Limited);
                    }
                    prop_assert_eq!(probe.admit(now + wait, 0).status, Status::Ok);
                }
                prop_assert!(count(&admitted, k) <= u128::from(limit));
                let recent = admitted.iter().filter(|&&a| a + w > now).count() as u64;
                prop_assert!(recent <= 2 * limit);
                prop_assert!(admitted.len() as f64 <= c.capacity(now + 1));
            }
        }
    }
}
