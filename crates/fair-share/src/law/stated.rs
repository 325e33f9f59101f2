//! Reading the stated resets: what `RateLimit-Reset` (or `x-ratelimit-reset`) says of the
//! server's shape, beside the level.
//!
//! - *A whole period at any level* (`read_reset`): a bucket states the time until it is whole,
//!   `(B − r)/R`; a sliding window a whole period whatever the level (its newest request leaves
//!   a period later). With a slack `σ = max(0.02·period, resolution)` for the rounding, three
//!   answered readings in a row over more than `2σ`, each stating at least `period − σ` and
//!   more than `(B − r)/R + 1.5σ`, say sliding window; one `1.5σ` short of a period (a window
//!   counting down), or no quota known to tell `(B − r)/R` by, says not.
//! - *An end that stays put* (`read_fixed_end`): with the period known, two successes more than
//!   two resolutions apart that state the same end (`t` + reset, within a resolution), the count
//!   lower at the second and the end first stated at most a period (and a resolution) ahead,
//!   are a fixed window before any turnover: a bucket's end moves on as it is used, a sliding
//!   window's is a period after its newest request, and a sliding-window counter's stays put
//!   but more than a period ahead. The end is rounded up to the resolution, so the reset is
//!   placed in the resolution below both ends. A refusal whose reset is its `Retry-After`, more
//!   than two resolutions off, reads the end too (its count 0), one resolution after the first.
//!   Without a quota known the end cannot be placed, but no bucket states it: the refill is
//!   then the limit over the longest reset stated (`refill.rs`).
//! - *An end that drifts* (`read_end_drift`): on a fixed window, an end more than two
//!   resolutions from the one its window's first success stated, and not whole periods on,
//!   without a turnover of the level, is a sliding-window counter's next drop or a sliding
//!   log's oldest admission: no fixed window.
//! - *The period* (`read_period`), for a server that states a limit and a reset but no policy
//!   (GitHub): a fixed window's end is the same instant on every answer until it turns over. Two
//!   ends in a row, each stated alike for more than two resolutions, with a turnover of the level
//!   at the first, are one period apart: the quota becomes the limit per that period, the
//!   shorter of the last two periods read (a window opened by its key's first request starts a
//!   little late). Each end is the earliest its answers stated: a reset in seconds to go is
//!   rounded at the phase each answer was made, a resolution off on its own. A stated or
//!   configured quota wins.

use std::time::Duration;

use super::fixed::{RESET_MATCH, narrowed};
use super::modes::Evidence;
use super::{Law, Sample};
use crate::answer::Policy;
use crate::time::{Nanos, nanos, secs};

/// A window end the stated resets agree on: as first stated (seconds), the earliest any answer
/// stated, and from when to when it was said.
///
/// A reset in whole seconds to go (`x-ratelimit-reset: 3`, `RateLimit-Reset`) names the end
/// rounded at whatever phase the answer was made, anywhere in the resolution above it; an epoch
/// second names the same instant on every answer. The earliest stated is the tightest of those
/// bounds: read over a window's answers it comes within their spacing of the end, where the
/// first reading alone is a resolution off, and two first readings a 5-s period apart read 4 s
/// or 6 s as often as 5.
#[derive(Clone, Copy, Debug)]
pub(super) struct WindowEnd {
    pub(super) end: f64,
    pub(super) earliest: f64,
    pub(super) since: f64,
    pub(super) seen: f64,
}

/// What the stated resets have said so far.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct StatedResets {
    /// On a fixed window, the end its first success stated since the mode or the last
    /// turnover: every later end of the same window is within a resolution of it
    /// (`read_end_drift`).
    /// With the answer's latency, seconds.
    pub(super) fixed_end: Option<(f64, f64)>,
    /// A fixed window's stated end has drifted within a window: the server's ends (a sliding
    /// log's oldest admission, a counter's next drop) stay put for a while now and then, and
    /// say no fixed window when they do. Only the level's turnovers place one from then on.
    pub(super) end_drifted: bool,
    /// Readings in a row whose stated reset says sliding window (see `read_reset`).
    pub(super) sliding_votes: u32,
    /// When the first of them came.
    pub(super) sliding_since: Option<f64>,
    /// The window end the stated resets say now, without a policy (see `read_period`).
    pub(super) window_end: Option<WindowEnd>,
    /// The one before it, if it was stated alike for long enough.
    pub(super) last_end: Option<f64>,
    /// The first success that stated the current end (`t` + reset), and its level, for
    /// `read_fixed_end`.
    pub(super) stated_end: Option<(f64, Sample)>,
    /// The period read at the current window end (the end, the period), and the one read at
    /// the end before it: the period taken is the shorter of the two (`read_period`).
    pub(super) period_read: Option<(f64, f64)>,
    pub(super) period_before: Option<f64>,
}

/// A stated reset is read with a slack of this share of the period (unitless), or of its
/// resolution if more: a bucket says at most `(B − r)/R` plus the rounding, a sliding window a
/// whole period, and a live server at a time scale rounds whole seconds of its own.
pub(super) const SLIDING_SLACK: f64 = 0.02;
/// Readings in a row that make a sliding window: one could be a fixed window just turned over,
/// which says a whole period too, for a second.
pub(super) const SLIDING_VOTES: u32 = 3;
/// Two stated resets name the same window end within one resolution of the header (whole
/// seconds, and a client's clock a little off the server's), and an end is a fixed window's
/// once it was stated alike for longer than this many resolutions.
pub(super) const STEADY_END: f64 = 2.0;
/// Seconds of floating-point slack on an end's drift: ends stated in whole epoch seconds differ
/// by whole seconds, and one that moved by exactly its resolution and latency is not beyond it.
pub(super) const END_DRIFT_EPSILON: f64 = 1e-6;

impl Law {
    /// How finely the server states its resets, in the client's seconds (`reset_resolution`).
    pub(super) fn resolution(&self) -> f64 {
        secs(nanos(self.cfg.reset_resolution))
    }

    /// The stated reset's rounding, in the client's time: a whole second, or more where a live
    /// server's second stands for more of it (a time scale); a share of the period if more.
    pub(super) fn reset_slack(&self) -> f64 {
        (self.period * SLIDING_SLACK).max(self.resolution())
    }

    /// A stated reset (seconds) read at `t` with the level `r`: a bucket is whole again after
    /// `(B − r)/R` (the header rounds up to a whole second); a sliding window says a whole
    /// period whatever the level (its newest request leaves the window a period later). With a
    /// slack of `max(0.02 · period, 1 s)` for the rounding: three readings in a row over more
    /// than two slacks, each within a slack of the period and more than 1.5 slacks beyond the
    /// bucket's, make it a sliding window; a reading 1.5 slacks short of a period undoes it.
    pub(super) fn read_reset(&mut self, t: f64, stated: f64, r: f64) {
        // Without a stated, given or learned quota the bucket's own reset cannot be told.
        if self.mode.is_fixed() || !self.knows_quota() {
            self.mode.on(Evidence::ResetsSayNotSliding);
            self.stated.sliding_votes = 0;
            self.stated.sliding_since = None;
            return;
        }
        let bucket = (self.limit - r).max(0.0) / self.rate;
        let slack = self.reset_slack();
        if stated >= self.period - slack && stated > bucket + 1.5 * slack {
            let since = *self.stated.sliding_since.get_or_insert(t);
            self.stated.sliding_votes = self.stated.sliding_votes.saturating_add(1);
            // Over more than the header's resolution: a fixed window that has just turned over
            // says a whole period too, for a second.
            if self.stated.sliding_votes >= SLIDING_VOTES && t - since > 2.0 * slack {
                self.mode.on(Evidence::ResetsSaySliding);
            }
        } else if stated < self.period - 1.5 * slack {
            self.stated.sliding_votes = 0;
            self.stated.sliding_since = None;
            self.mode.on(Evidence::ResetsSayNotSliding);
        }
    }

    /// A fixed window states its end, the same instant on every answer until it turns over,
    /// while its count falls; a bucket's end (when it is whole again) moves on as it is used
    /// (`S/R` seconds per second) and stays put only while nobody takes a token, and a sliding
    /// window's is a period after its newest request. So two successes more than two
    /// resolutions apart that state the same end (within a resolution), the count lower at the
    /// second, are a fixed window: its reset is placed at once, without waiting for a
    /// turnover. A process that joins a busy window then spreads what is left to the reset as
    /// the others do, instead of draining it as a bucket's surplus. Needs the period (a stated
    /// or given quota).
    ///
    /// A refusal that states the same reset as its `Retry-After`, further off than two
    /// resolutions, is such a reading too (its count 0): the whole allowance comes back at one
    /// instant, where a bucket would give one token back after `1/R`. Its reading may follow the
    /// first by one resolution only (`apart`): the window of 50 per 5 s that a crowd spends in
    /// its first 2.5 s leaves no two successes 2 s apart to read it by, and the processes that
    /// could not tell it were cut twice for the same empty window while the one that could was not.
    pub(super) fn read_fixed_end(&mut self, t: f64, stated: f64, r: f64, apart: f64) {
        if self.mode.is_fixed() || self.stated.end_drifted {
            self.stated.stated_end = None;
            return;
        }
        let end = t + stated;
        let same = self.resolution();
        let Some((first_end, first)) = self
            .stated
            .stated_end
            .filter(|(e, _)| (end - e).abs() <= same)
        else {
            self.stated.stated_end = Some((end, Sample { t, r }));
            return;
        };
        if !(r < first.r && t - first.t > apart) {
            return;
        }
        if !self.knows_quota() {
            // Without a period the window cannot be placed, but it is no bucket: a bucket's end
            // moves on by more than the time passed while its count falls. The refill is then
            // `B` over the longest reset stated (`refill.rs`), and the next end read places it.
            self.learned.no_bucket = true;
            self.stated.stated_end = None;
            return;
        }
        // A fixed window's end is never more than a period away: an end first stated from
        // further off is not one (a sliding-window counter states when its allowance is whole
        // again, the end of the window after this one while the previous still weighs).
        let within_a_period = first_end - first.t <= self.period + same;
        if within_a_period {
            // A stated end is rounded up to the resolution: the end is within one below it.
            let first = narrowed(None, first_end - same, first_end, self.period);
            let resets = narrowed(Some(first), end - same, end, self.period);
            self.mode.on(Evidence::StatedEndStaysPut { resets });
            self.stated.stated_end = None;
            self.level.window = None;
        }
    }

    /// On a fixed window every success of one window states its end to within a resolution
    /// (the reset is rounded up) and the answer's latency (the server counted the request
    /// somewhere between its send and the answer, `t`), and the next window's a period later.
    /// An end that drifted further than a resolution and the larger latency of the two answers,
    /// not by whole periods, since the last turnover of the level is no fixed window's: a
    /// sliding-window counter's next drop or a sliding log's oldest admission, whose first
    /// window (nothing weighed yet, nothing left yet) stated an end that stayed put. Two
    /// resolutions and no latency, as before, read one answer slow by 3 s of a fixed window of
    /// 2 h 12 min as a drift, and that process alone ran bucket mode and took the window's
    /// whole allowance (50 × 6 threads, fairness 0.03); and they let a counter's end move by
    /// exactly two seconds (GitHub's epoch-second resets) unread.
    pub(super) fn read_end_drift(&mut self, t: f64, stated: f64, latency: f64) {
        if !self.mode.is_fixed() {
            self.stated.fixed_end = None;
            return;
        }
        let end = t + stated;
        let Some((first, first_latency)) = self.stated.fixed_end else {
            self.stated.fixed_end = Some((end, latency));
            return;
        };
        let (drift, res, period) = ((end - first).abs(), self.resolution(), self.period);
        let slack = res + latency.max(first_latency) + END_DRIFT_EPSILON;
        if drift <= slack {
            return;
        }
        // Whole periods later is the next window's end, a turnover the level did not show (a
        // crowd spent the new allowance before this process read it); on a period of a few
        // resolutions the ends cannot tell, and the level's turnovers alone reset the end.
        let whole_periods =
            period > 4.0 * res && (drift - (drift / period).round() * period).abs() <= slack;
        if whole_periods {
            self.stated.fixed_end = Some((end, latency));
        } else {
            self.mode.on(Evidence::EndDrifted);
            self.stated.fixed_end = None;
            self.stated.end_drifted = true;
        }
    }

    /// A fixed window's period from its stated reset, for a server that states a limit and a
    /// reset but no policy (GitHub's `x-ratelimit-limit` and `x-ratelimit-reset`). A fixed
    /// window's stated reset is its end, the same instant on every answer until it turns over;
    /// a bucket's (when it is whole again) or a sliding window's (a period after the newest
    /// request) moves with the clock while it is used. Two ends in a row, each stated alike
    /// over more than [`STEADY_END`], with the count jumping up at the first, are a period
    /// apart: the quota is the limit per that period. A configured or stated quota wins.
    ///
    /// Each end is the earliest stated over its window's answers ([`WindowEnd`]): a reset in
    /// seconds to go (@fastify/rate-limit's `x-ratelimit-reset`) is rounded up at whatever
    /// phase each answer was made, and two windows' first readings alone read a 5-s period as
    /// 4 s (a quarter over the quota) or 6 s now and then. Two ends can still read further
    /// apart than a period: a window opened by its key's first request after the last one
    /// closed (express-rate-limit, Flask-Limiter, @fastify/rate-limit) starts a little after
    /// the end, and an epoch second is rounded up. A 5-s window's ends, drifting a tenth of a
    /// second a window, read 6 s apart now and then, and the rate fell to five sixths of the
    /// quota for good. So the period taken is the shorter of the last two read: one long
    /// reading in a row changes nothing, and one short one (an answer's latency) lasts a
    /// window.
    ///
    /// A period is never read shorter than [`STEADY_END`] resolutions (and a second): no
    /// fixed window that short states an end alike for that long, so two ends read closer are
    /// one end rounded at two phases, or a sliding-window counter's next drop moving on by a
    /// second. Read as a period of 1 s, a counter of 3,597 an hour (@fastify/rate-limit's
    /// fields, 8 × 8 threads) became a quota of 3,597 a second, and a process sent at 4 × that
    /// for the rest of the run: 82 % of its requests refused.
    pub(super) fn read_period(&mut self, now: Nanos, stated: f64) {
        if self.cfg.quota.is_some() || self.stated_policy {
            return;
        }
        let t = secs(now);
        let end = t + stated;
        let first = WindowEnd {
            end,
            earliest: end,
            since: t,
            seen: t,
        };
        let Some(mut cur) = self.stated.window_end else {
            self.stated.window_end = Some(first);
            return;
        };
        let (same, steady_for) = (self.resolution(), STEADY_END * self.resolution());
        if (end - cur.end).abs() <= same {
            cur.seen = t;
            cur.earliest = cur.earliest.min(end);
            self.stated.window_end = Some(cur);
        } else {
            let steady = |w: &WindowEnd| w.seen - w.since > steady_for;
            self.stated.last_end = Some(cur).filter(steady).map(|w| w.earliest);
            self.stated.window_end = Some(first);
            return;
        }
        let (Some(last), true) = (self.stated.last_end, cur.seen - cur.since > steady_for) else {
            return;
        };
        // Read again as the end narrows; the window's first reading names it.
        let read = (cur.earliest - last).round();
        match self.stated.period_read {
            Some((end, _)) if end == cur.end => self.stated.period_read = Some((end, read)),
            _ => {
                self.stated.period_before = self.stated.period_read.map(|(_, p)| p);
                self.stated.period_read = Some((cur.end, read));
            }
        }
        let period = self
            .stated
            .period_before
            .map_or(read, |before| read.min(before));
        // And the count jumped back up there (`observe`'s turnover): a bucket left alone is
        // whole again at one instant too, but fills up to it smoothly.
        let turned_over = self
            .reset_at()
            .is_some_and(|at| (at - last).abs() <= RESET_MATCH * period + same);
        let shortest = steady_for.max(1.0);
        if turned_over && period >= shortest && period <= secs(nanos(crate::MAX_SERVER_WAIT)) {
            let q = Policy {
                limit: self.limit as u64,
                window: Duration::from_secs(period as u64),
            };
            self.take_policy(now, q, false);
        }
    }
}
