//! **Fixed window** mode: the level is an allowance that nothing refills until the next reset,
//! one period after the last. What is left at a reset is lost, so the rule is to spend the
//! allowance evenly to its reset, keeping a reserve that shrinks to nothing by then. The total
//! is the level's fall, `S = −Δr/Δt`, plus the process's own refusals (an allowance spent reads
//! 0 however many more are refused); the target is what is left (one more: the count was read
//! after its own request was taken) less three quarters of the reserve scaled by what is left of
//! the period, plus the whole allowances of the server's windows a longer window of the law
//! spans, over `h = max(left, W)`, and at least a few of the header's resolutions (at most
//! half the period: the reset is known to its rounding only). The price is read against the even-spend plan
//! `p(t) = (B − r0)·left/period`, the pull is slower (`P` = 4), and a window of the law closes
//! after at most `0.3·B` tokens and carries on across the resets it spans.
//!
//! Where the resets fall is the span every turnover seen agrees on, modulo the period, and the
//! reset is its middle: from one turnover alone two processes' resets could differ by their
//! readings' spacing, their plans by as many seconds of the allowance, and they would price one
//! level apart and keep unequal shares. A refusal that the predicted reset explains (its
//! `Retry-After` within a tenth of a period and half that span of it, or a resolution more, since
//! it is rounded up), for a process that sends at least 4 per window, holds the thread to the
//! reset without a cut.

use super::modes::Evidence;
use super::{Law, Sample};
use crate::time::{Nanos, from_secs, secs};

/// A window of the law closes after at most this share of the allowance (unitless), so that it
/// closes between two of the server's resets.
pub(super) const MAX_FLOW_OF_ALLOWANCE: f64 = 0.3;
/// On a fixed window the pull's loop gain per window is at most `1/WINDOW_PULL_PERIODS`
/// (on a bucket `1/pull_periods`): there the pull holds the level above the even-spend plan,
/// and what is left at the reset is lost (at 1.5, GitHub's 5,000 per hour loses 0.3 % of its
/// utilization, and fixed windows of 100 per minute 1.4 %).
pub(super) const WINDOW_PULL_PERIODS: f64 = 4.0;
/// The target keeps this share of the reserve `r0` (unitless) in the server's current window,
/// shrinking to nothing by the reset, and none in the windows to come, where it would be lost (the
/// whole reserve left a lone process of 200 threads on a 10-per-second window at 0.93 of the
/// allowance; a quarter of it drew its 429s).
pub(super) const WINDOW_RESERVE_SHARE: f64 = 0.75;
/// The price spans at least this many tokens: what the level holds is lost at the reset, so a
/// narrow price, held low.
pub(super) const MIN_SPAN_TOKENS: f64 = 4.0;
/// The target never falls below this fraction of `R` (unitless): a window read as spent still
/// sends a little, to read the next reset.
pub(super) const MIN_WINDOW_TARGET_OF_RATE: f64 = 0.05;
/// A 429 that the reset explains cuts no rate when the process (its threads in line) sends at
/// least this many requests per window; on a shorter window the refusal may as well say the
/// rate is high.
pub(super) const MIN_SENDS_PER_WINDOW: f64 = 4.0;
/// A `Retry-After` within this fraction of a period (unitless) of the predicted reset, widened
/// by half the span where the resets fall and, after it, by a resolution, is that reset; a
/// stated window end within this fraction of a turnover is that turnover (`stated.rs`).
pub(super) const RESET_MATCH: f64 = 0.1;
/// A reset placed this close after a reading (seconds) still falls between it and the next.
pub(super) const RESET_TIME_SLACK: f64 = 1e-9;
/// The allowance left is spread over at least this many of the header's resolutions (unitless,
/// whole seconds mostly)...
pub(super) const HORIZON_RESOLUTIONS: f64 = 2.5;
/// ... but over at most this share of the period (unitless). The reset is known only to within
/// the header's rounding, and a window opened by its key's first request after the last one
/// closed (express-rate-limit, Flask-Limiter) turns over a little later each period than the
/// turnovers seen say: spread over what the law believes is left, a level above the plan a
/// moment before a reset that has not come asked for several times the quota, a step each
/// process took at a different moment, and the shares drifted apart (express-rate-limit's 50 per
/// 5 s in the simulator, 3 × 4 threads: fairness 0.80 before this floor and the two rules beside
/// it, `window_spent` below and a refusal's stated end in `stated.rs`; 0.97 with all three). On
/// an hourly window the floor is a few seconds.
pub(super) const MAX_HORIZON_OF_PERIOD: f64 = 0.5;

/// Where the resets fall once a fixed window turned over between `lo` and `hi` (seconds), from
/// where the turnovers seen before put them (`span`), the period being `period` seconds. Its resets are a period
/// apart, so every turnover seen narrows down where they fall: the span kept so far,
/// shifted by whole periods, is cut to this one (or replaced by it, if they do not meet:
/// the period was not what the law believed). The reset is placed at the span's middle.
/// Read from one turnover alone, it could be off by the readings' spacing, and the
/// even-spend level the price is read against by as many seconds of the allowance: two
/// processes would price the same level differently and their shares would stay apart.
pub(super) fn narrowed(span: Option<(f64, f64)>, lo: f64, hi: f64, period: f64) -> (f64, f64) {
    match span {
        Some((a, b)) => {
            let shift = (((lo + hi) - (a + b)) / 2.0 / period).round() * period;
            let (from, to) = (lo.max(a + shift), hi.min(b + shift));
            if from <= to { (from, to) } else { (lo, hi) }
        }
        None => (lo, hi),
    }
}

impl Law {
    pub(super) fn to_reset(&self, t: f64) -> Option<f64> {
        let period = self.period;
        self.reset_at()
            .map(|reset| period - (t - reset).rem_euclid(period))
    }

    /// A reset of the fixed window: the middle of the span its turnovers agree on.
    pub(super) fn reset_at(&self) -> Option<f64> {
        self.mode.reset_span().map(|(lo, hi)| (lo + hi) / 2.0)
    }

    pub(super) fn planned(&self, t: f64) -> f64 {
        self.to_reset(t).map_or(0.0, |left| {
            (self.limit - self.reserve()).max(0.0) * left / self.period
        })
    }

    /// The tokens a window must see taken: `min_flow`, but on a fixed window at most a share
    /// of its allowance (a window of the law must close between two of the server's resets).
    pub(super) fn min_flow(&self) -> f64 {
        if self.mode.is_fixed() {
            self.cfg.min_flow.min(self.limit * MAX_FLOW_OF_ALLOWANCE)
        } else {
            self.cfg.min_flow
        }
    }

    /// The target total on a fixed window with `left` seconds to its next reset, at the level
    /// `r`: what is left, and the allowances of the server's windows a window of the law spans,
    /// spread over what is left or that window if longer.
    pub(super) fn window_target(&self, r: f64, left: f64) -> f64 {
        // What is left at the reset is lost: the reserve shrinks to nothing by then.
        let reserve = WINDOW_RESERVE_SHARE * self.reserve() * (left / self.period).min(1.0);
        // Spread over a window of the law at least; one longer than what is left spans the
        // reset, and the allowances of the server's windows that follow are spent in it
        // too, whole: a reserve kept in them would be lost at their resets.
        let horizon = left.max(self.window_secs()).max(self.least_horizon());
        let later = self.limit * (horizon - left) / self.period;
        // `r` is read after the request it answers was counted: the allowance at that
        // instant held one more.
        ((r + 1.0 - reserve + later) / horizon).max(self.rate * MIN_WINDOW_TARGET_OF_RATE)
    }

    /// The shortest time the allowance left is spread over: a few of the header's resolutions,
    /// at most half the period.
    pub(super) fn least_horizon(&self) -> f64 {
        (HORIZON_RESOLUTIONS * self.resolution()).min(MAX_HORIZON_OF_PERIOD * self.period)
    }

    /// A success sent at `t` stated its window's end `stated` seconds on from when the server
    /// counted it, no sooner than `t`. The end is rounded up to the header's resolution, so the
    /// window closes no sooner than `stated − resolution` from `t` (from the answer's arrival
    /// less half its latency, an answer slow on its way back put the end seconds late: 10 ×
    /// 4 threads on 3,000 per 10 minutes with a heavy-tailed latency, fairness 0.71). A reset
    /// predicted sooner than that is late news: a window opened by its key's
    /// first request after the last one closed (express-rate-limit, @fastify/rate-limit,
    /// Flask-Limiter) turns over later each period than the turnovers seen say, and a law that
    /// spends the allowance to the reset it predicts runs it out early, then knocks on the
    /// empty window until the real reset (express-rate-limit's 100 a minute in the simulator, 3
    /// × 4 threads: 2.2 % 429s after the first two minutes, 0.5 % with this and
    /// [`Law::hold_spent_window`]). The resets move on to that earliest end, no further: the
    /// next success's stated end moves them again if the end is later still. An end further
    /// than a period (and a resolution) away is no fixed window's.
    pub(super) fn read_stated_end(&mut self, t: f64, stated: f64) {
        let (Some((lo, hi)), Some(left)) = (self.mode.reset_span(), self.to_reset(t)) else {
            return;
        };
        let res = self.resolution();
        let least = stated - res;
        if stated <= self.period + res && left < least {
            let later = least - left;
            self.mode.on(Evidence::StatedEndLater {
                resets: (lo + later, hi + later),
            });
        }
    }

    /// A success sent at `sent` read the allowance spent (its count 0) on a fixed window whose
    /// end it stated `stated` seconds on: the key is empty until that end less its
    /// rounding, for every thread of the process, whose requests until then would each take a
    /// 429 of their own (one per thread per window: 2 % of the requests of 3 × 4 threads on 100
    /// a minute). The process's phase stops until then, and its threads resume in their order
    /// (`pacing.rs`).
    pub(super) fn hold_spent_window(&mut self, now: Nanos, sent: Nanos, stated: f64) {
        let sure = stated - self.resolution();
        if self.mode.is_fixed() && sure > 0.0 {
            self.hold_process(now, sent.saturating_add(from_secs(sure)));
        }
    }

    /// A fixed window turned over between `lo` and `hi` (seconds): see [`narrowed`].
    pub(super) fn place_reset(&mut self, lo: f64, hi: f64) {
        let resets = narrowed(self.mode.reset_span(), lo, hi, self.period);
        self.mode.on(Evidence::Turnover { resets });
    }

    /// A fixed window turned over between `newest` and `s`, inside an open window of the law:
    /// it carries on across the reset, counting the level's fall up to `newest` and,
    /// when the reset placed falls between the two, what the new allowance lost before `s`.
    /// Dropping the window instead would keep a slow process (fewer answers per server window
    /// than a window of the law needs) from ever closing one.
    pub(super) fn carry_window(&mut self, newest: Sample, s: Sample) {
        let turnover = self
            .to_reset(newest.t)
            .is_some_and(|left| newest.t + left <= s.t + RESET_TIME_SLACK);
        let limit = self.limit;
        let Some(w) = self.level.window.as_mut() else {
            self.open_window(s);
            return;
        };
        w.taken += (w.since.r - newest.r).max(0.0);
        if turnover {
            w.taken += (limit - s.r).max(0.0);
        }
        w.since = s;
    }

    /// Whether a refusal read at `now` with this `Retry-After` is a fixed window's allowance
    /// spent: it says to come back at the reset the level's jumps predict, and nothing says the
    /// rate is too high for the next window. The `Retry-After` may say up to a resolution more
    /// (it is rounded up), and the reset is predicted to within a tenth of a period and half the
    /// span the turnovers agree on, either way: a reset predicted early by a window that starts
    /// at its key's first request, refused just after the prediction, must not cut a process
    /// its neighbours, paced a little differently, were never cut for.
    pub(super) fn window_spent(&self, now: Nanos, retry_after: Option<Nanos>) -> bool {
        let span = self.mode.reset_span().map_or(0.0, |(lo, hi)| hi - lo);
        let within = RESET_MATCH * self.period + span / 2.0;
        self.period * self.x * self.threads.len() as f64 >= MIN_SENDS_PER_WINDOW
            && retry_after
                .zip(self.to_reset(secs(now)))
                .is_some_and(|(ra, left)| {
                    // How much later than the predicted reset it says, on the circle of the
                    // period (a reset predicted a moment ago is the next one's a period on),
                    // from `−within` on.
                    let later = (secs(ra) - left + within).rem_euclid(self.period) - within;
                    later <= self.resolution() + within
                })
    }
}
