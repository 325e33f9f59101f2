//! Reading the quota: what the law knows of the refill `R` and the period. A stated policy
//! (`RateLimit-Policy`) or a configured quota gives them; without either, GitHub's headers (a
//! limit and a reset, no policy) still tell them. A fixed window's period is read from its
//! stated ends (`stated.rs`); a bucket's or sliding window's refill is learned here from the
//! stated resets: a bucket is whole again `(B − r)/R` after the answer, and a sliding window has
//! `B` again a period `B/R` after its newest request, so each answer whose stated end moved by
//! more than a resolution since the process's last one, or whose count rose under the same end
//! (a bucket filling; no fixed window's count rises between its resets), bounds the refill from
//! below, `R ≥ (B − r − 1)/reset`, and the refill is the largest bound seen. Two answers in a
//! row that state the same reset at levels further apart than a bucket's reset allows
//! (`2·res·(B − r + 1)/(reset − res) + 1`) are a sliding window's: its refill is `B/reset` at
//! once. A bucket's reset is also rounded up by less than a resolution, so each answer caps its
//! refill, `R ≤ (B − r + 1)/(reset − res)`; a lower bound above the lowest cap or one that
//! would have the bucket take more than a week to fill, a fixed
//! window's turnover, or an end that stays put while the count falls (`stated.rs`), is no
//! bucket: the refill is then `B` over the longest reset stated, the window's period from
//! below, until a period is read. A bucket kept full says nothing by its resets (one second and
//! `B − 1` whatever its refill): there, until a stated reset has bounded the refill, a process
//! that reads itself as the whole total learns it from its own successes, `R ≥ (successes + Δr −
//! 1)/Δt` over a window of the law, and doubles its rate while the bucket stays full (`bucket.rs`).
//! Whenever `R` and the period move, the rate moves with them, so a process that ran on a wrong
//! quota is at its share of the right one at once.

use super::window::LawWindow;
use super::{Law, Sample};
use crate::answer::Policy;
use crate::time::{Nanos, nanos, secs};

/// An answer's stated reset, for `learn_refill`: the end it names (`t` + reset, seconds),
/// when it came, the reset itself and the level read with it.
#[derive(Clone, Copy, Debug)]
pub(super) struct StatedReset {
    pub(super) end: f64,
    pub(super) at: f64,
    pub(super) reset: f64,
    pub(super) r: f64,
}

/// What the stated resets have taught of the refill.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LearnedRefill {
    /// The end (`t` + reset) the last answer stated, when it came, the reset it stated and the
    /// level it read.
    pub(super) moving_end: Option<StatedReset>,
    /// The refill learned from the stated resets or the process's successes, if any.
    pub(super) refill_bound: Option<f64>,
    /// Whether a stated reset has bounded the refill: then the process's own successes no
    /// longer do (`learn_refill_from_successes`).
    pub(super) from_resets: bool,
    /// The lowest ceiling the stated resets put on a bucket's refill, `(B − r + 1)/(reset − res)`...
    pub(super) refill_ceiling: Option<f64>,
    /// ... the longest reset stated...
    pub(super) longest_reset: f64,
    /// ... and whether a lower bound rose above that ceiling or the level turned over as a
    /// fixed window's: no bucket states such resets.
    pub(super) no_bucket: bool,
}

/// No bucket takes longer than this to fill from empty (seconds: a week, seven times the
/// longest period public APIs state). A lower bound on the refill from a stated reset that
/// says longer, `B/R`, is a window's reset read as a bucket's: a sliding-window counter of 5,760
/// per 17 minutes stating its next drop 1,522 s off with 2 requests counted read as a bucket
/// filling in 101 days, and a lone process of 152 threads sent 5 requests in 84 minutes.
pub(super) const MAX_BUCKET_FILL_SECS: f64 = 7.0 * 86_400.0;

/// The stated resets pin a bucket's refill once their lowest ceiling is within this factor
/// of their highest lower bound (unitless).
pub(super) const PINNED_RATIO: f64 = 1.5;

/// A stated quota's refill, requests per second, computed as the simulator always has
/// (`limit · 10⁹ / window`) so both give the same rate to the last bit.
pub(super) fn policy_rate(limit: u64, window: Nanos) -> f64 {
    if window == 0 {
        return 0.0;
    }
    limit as f64 * 1e9 / window as f64
}

impl Law {
    /// Whether the law knows the quota: stated, given, or learned from the stated resets.
    pub(super) fn knows_quota(&self) -> bool {
        self.policy.is_some() || self.cfg.quota.is_some() || self.learned.refill_bound.is_some()
    }

    /// The refill from the stated resets, for a server that states a limit and a reset but no
    /// policy (GitHub's headers) and is no fixed window: a bucket is whole again `(B − r)/R`
    /// after the answer, and a sliding window has `B` again a period `B/R` after its newest
    /// request, so `(B − r − 1)/reset` is at most `R` for both (the count is rounded down, the
    /// reset up). The refill is the largest such bound, read from answers whose stated end
    /// moved since this process's last one (a fixed window's stays put until it turns over,
    /// and `read_period` reads its quota), and the rate moves with it as with a stated quota.
    ///
    /// A bucket's reset grows by `1/R` per token taken, so two answers in a row that
    /// state the same reset (within a resolution each way) read levels at most `2·res·R + 1`
    /// apart, `R` being at most `(B − r + 1)/(reset − res)`. Levels further apart under one
    /// reset are a sliding window's (a period at any level): its period is the reset, its
    /// refill `B/reset`. Without this the bound above reaches `B/period` only once the level is
    /// near empty, hours into an hourly window.
    ///
    /// A bucket's reset is also rounded up by less than a resolution, so each answer
    /// caps its refill, `R ≤ (B − r + 1)/(reset − res)`. A lower bound above the lowest cap, one
    /// that would have the bucket fill in more than [`MAX_BUCKET_FILL_SECS`], or
    /// a fixed window's turnover read from the level, says no bucket: the refill is then `B`
    /// over the longest reset stated, the window's period from below (see
    /// `refill_from_longest_reset`).
    pub(super) fn learn_refill(&mut self, now: Nanos, stated: f64, r: f64) {
        if self.cfg.quota.is_some() || self.policy.is_some() {
            return;
        }
        self.learned.longest_reset = self.learned.longest_reset.max(stated);
        // A fixed window read from the level's turnover is no bucket either: until
        // `read_period` reads its period, the refill comes from the longest reset stated, not
        // the default quota's hour.
        self.learned.no_bucket |= self.mode.is_fixed();
        if self.learned.no_bucket {
            self.refill_from_longest_reset(now);
            return;
        }
        let t = secs(now);
        let end = t + stated;
        let res = self.resolution();
        if stated > res {
            let ceiling = (self.limit - r + 1.0) / (stated - res);
            self.learned.refill_ceiling = Some(
                self.learned
                    .refill_ceiling
                    .map_or(ceiling, |c| c.min(ceiling)),
            );
        }
        let last = self.learned.moving_end.replace(StatedReset {
            end,
            at: t,
            reset: stated,
            r,
        });
        // A fixed window's stated end stays put while its count falls, and its
        // `(B − r − 1)/reset` bounds nothing; an end that moved, or a count that rose (no fixed
        // window's does between its resets: a bucket filling while nobody takes much states
        // the same end too), is a bucket's or a sliding window's.
        let Some(last) = last.filter(|l| t > l.at && ((end - l.end).abs() > res || r > l.r + 1.0))
        else {
            return;
        };
        if stated <= 0.0 {
            return;
        }
        let mut bound = (self.limit - r - 1.0) / stated;
        if stated > 2.0 * res && (stated - last.reset).abs() <= res {
            let bucket_rate_at_most = (self.limit - r.min(last.r) + 1.0) / (stated - res);
            if (r - last.r).abs() > 2.0 * res * bucket_rate_at_most + 1.0 {
                bound = bound.max(self.limit / stated);
            }
        }
        // A bucket this slow to fill is no bucket at all: a window's reset (a counter's next
        // drop) read as a bucket's.
        let too_slow = bound > 0.0 && self.limit / bound > MAX_BUCKET_FILL_SECS;
        if too_slow
            || self
                .learned
                .refill_ceiling
                .is_some_and(|ceiling| bound > ceiling)
        {
            self.learned.no_bucket = true;
            self.refill_from_longest_reset(now);
            return;
        }
        if bound > self.learned.refill_bound.unwrap_or(0.0) {
            self.learned.from_resets = true;
            self.learn_refill_of(now, bound, self.limit / bound);
        }
    }

    /// A bucket gave at least what the process took from it while its level did not fall:
    /// `R·Δt ≥ successes + Δr` over a window of the law (others only take more, a full bucket
    /// only loses more), so `R ≥ (successes + Δr − 1)/Δt`, the count rounded down. Where no
    /// quota is stated or told, this is the only bound on a bucket kept full or refilling
    /// faster than its stated resets resolve (a reset of one whole second says at most a token
    /// a second), which would otherwise hold the law at the default quota's rate. Taken after
    /// the first window (a start's burst has left the period), from windows whose level rose by
    /// at most a count's rounding, so that the bound is never above the process's own admitted
    /// rate; and never above a cap the stated resets put on a bucket.
    pub(super) fn learn_refill_from_successes(&mut self, now: Nanos, w: &LawWindow, last: Sample) {
        if !self.refill_unproven() {
            return;
        }
        let (dt, rise) = (last.t - w.first.t, last.r - w.first.r);
        if dt <= 0.0 || rise > 1.0 {
            return;
        }
        let bound = (w.successes + rise - 1.0) / dt;
        let capped = self.learned.refill_ceiling.is_some_and(|c| bound > c);
        if bound > self.rate && !capped {
            self.learn_refill_of(now, bound, self.limit / bound);
        }
    }

    /// A bucket's refill that nothing states, tells or bounds from its resets, past the first
    /// window: what the process's successes bound (`learn_refill_from_successes`) and a full bucket probes
    /// (`bucket.rs`).
    pub(super) fn refill_unproven(&self) -> bool {
        self.cfg.quota.is_none()
            && self.policy.is_none()
            && !self.refill_pinned()
            && !self.learned.no_bucket
            && !self.mode.is_fixed()
            && !self.mode.before_first_window()
    }

    /// Whether the stated resets pin the refill: a lower bound from them, and a ceiling less
    /// than `PINNED_RATIO` times it. A bound alone may be half the refill (on a bucket kept
    /// near full, `(B − r − 1)/reset` counts one token of the two a reset of 2 tokens says), or
    /// a quarter of it and less with no ceiling at all (resets of one resolution, which cap
    /// nothing: a bucket of 6 at 3.9 a second read as 1 a second from a reset of 1 s at 4 left).
    fn refill_pinned(&self) -> bool {
        self.learned.from_resets
            && match (self.learned.refill_bound, self.learned.refill_ceiling) {
                (Some(b), Some(c)) => c <= PINNED_RATIO * b,
                _ => false,
            }
    }

    /// A bucket of unproven refill read full at both ends of a window of the law, the process
    /// sending all the while and never refused: the refill is more than everyone took, by an
    /// amount no count shows (the level cannot rise above the top). The process doubles its
    /// rate, as a connection's slow start does, until the level comes down.
    pub(super) fn overflowing(&self, w: &LawWindow, last: Sample) -> bool {
        let top = self.limit - 1.0;
        // On a bucket of one or two tokens the top is also where a crowd leaves it.
        self.refill_unproven()
            && self.limit > 2.0
            && w.successes > 0.0
            && w.refused == 0.0
            && w.first.r >= top
            && last.r >= top
    }

    /// The stated resets are no bucket's, so the server is a window and the longest
    /// reset stated is its period from below: the refill is `B` over it.
    pub(super) fn refill_from_longest_reset(&mut self, now: Nanos) {
        if self.learned.longest_reset <= 0.0 {
            return;
        }
        let rate = self.limit / self.learned.longest_reset;
        if self.learned.refill_bound != Some(rate) {
            self.learn_refill_of(now, rate, self.learned.longest_reset);
        }
    }

    /// The refill learned is now `rate` over `period`: kept as the bound later answers must
    /// beat, and taken as `R`.
    fn learn_refill_of(&mut self, now: Nanos, rate: f64, period: f64) {
        self.learned.refill_bound = Some(rate);
        self.move_refill(now, rate, period);
    }

    /// The server stated its quota: `R` and the period follow it, and the rate moves with `R`
    /// (a process that started on the default quota is at its share of the real one at once).
    pub(super) fn take_policy(&mut self, now: Nanos, q: Policy, limit_from_quota: bool) {
        if self.policy == Some(q) {
            return;
        }
        self.policy = Some(q);
        let window = nanos(q.window);
        if limit_from_quota {
            self.limit = q.limit as f64;
        }
        self.move_refill(now, policy_rate(q.limit, window), secs(window));
    }

    /// `R` and the period are now `rate` and `period`: the per-thread rate moves with `R`, so a
    /// process that ran on a wrong quota is at its share of the right one at once.
    pub(super) fn move_refill(&mut self, now: Nanos, rate: f64, period: f64) {
        let scale = rate / self.rate;
        self.rate = rate;
        self.period = period;
        self.set_rate(now, self.x * scale);
    }
}
