//! Reading the level: what the remaining count's moves say of the server. A jump up by more
//! than the refill explains is a fixed window's turnover (not in sliding mode, where requests
//! sent together leave the window together a period later and the level jumps as they do); a
//! rise on a fixed window without a reset says the server refills after all; a first reading
//! near the top is a full start, over once the level is down in the price's range.

use super::modes::Evidence;
use super::{Law, Sample};
use crate::time::{Nanos, secs};

/// A rise of the level by this fraction of the bucket (unitless) more than the refill explains
/// is a fixed window's reset: far above the rounding of a count and a bucket's noise...
pub(super) const RESET_JUMP: f64 = 0.1;
/// ... or by this many tokens, on a small bucket (the count is an integer: one token of
/// rounding at each reading).
pub(super) const MIN_RESET_TOKENS: f64 = 2.0;

impl Law {
    /// A reading `s` of the level, counted at `s.t` (seconds), read at `now`: the full start's
    /// surplus, a fixed window's turnover, or a fixed window that refills after all. True on a
    /// turnover (the window of the law is then carried across it, and the reading says no more).
    pub(super) fn read_level(&mut self, now: Nanos, s: Sample) -> bool {
        let Sample { t, r } = s;
        if self.level.newest.is_none() && r >= self.cfg.full_level * self.limit {
            self.mode.on(Evidence::FullAtFirstReading);
        } else if r <= self.reserve() + self.slope() * self.crowd().ln() {
            // Down in the price's range: the surplus is spent.
            self.mode.on(Evidence::LevelInPriceRange);
        }
        // Counted at `t` give or take this (a heavy-tailed latency's answer can come long after).
        let slack = (secs(now) - t).max(0.0);
        // The reading before, if this one is later: the jump is read against it.
        let before = self.level.newest.filter(|n| t >= n.t);
        let before_slack = self.level.newest_slack;
        if self.level.newest.is_none() || before.is_some() {
            self.level.newest = Some(s);
            self.level.newest_slack = slack;
        }
        if let Some(newest) = before {
            let refill = self.refill() * (t - newest.t + slack + before_slack);
            // On a sliding window the level jumps when requests sent together leave it, a
            // period after they were sent: an echo, not a turnover. Read as a
            // turnover, it threw a slow process out of sliding mode, and the fixed window's
            // target and a bucket's pull lifted it 30-fold in one window.
            if !self.mode.is_sliding()
                && r > newest.r + refill + (self.limit * RESET_JUMP).max(MIN_RESET_TOKENS)
            {
                // A fixed window turned over: what came before says nothing, and from now on
                // the level is read as a window's allowance.
                // The reset fell between the two readings.
                self.place_reset(newest.t, t);
                self.stated.fixed_end = None;
                self.carry_window(newest, s);
                return true;
            }
            if self.mode.is_fixed() && r > newest.r + MIN_RESET_TOKENS {
                // The level came back without a reset: the server refills after all.
                self.mode.on(Evidence::RefilledWithoutReset);
            }
        }
        false
    }
}
