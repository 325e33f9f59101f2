//! **Sliding window** mode: the server counts the requests of the last period, and the level is
//! what that period left unused, `B − r` what it took. So the level is read as the total rate:
//! `S = max((B − r̄)/period, −Δr/Δt)`. The fall, `S(t) − S(t − period)`, is a lower bound of the
//! rate now and is acted on within a window; the period's average is given `γ·Δt/period` of the
//! gain. The target is the whole quota, `B/period`: a token left unused is lost a period later,
//! and the refusals at the floor carry the signal. There is no pull (the level sits at the floor
//! whatever the shares, so the price says nothing), and a 429 takes one request per period off
//! the process, `x·(1 − 1/(n·x·period))`, instead of a halving. A jump of the level is requests
//! sent together leaving the window a period later, not a turnover (`level.rs`).

use super::{Law, MIN_TOTAL_OF_RATE, Sample, Update, clamp_step};
use crate::time::Nanos;

/// The D gain per window is `γ` spread over this many periods (unitless) while the level reads
/// the period's average: one reading of it stands for a whole period.
pub(super) const SLIDING_GAIN_PERIODS: f64 = 1.0;

impl Law {
    /// A window on a sliding window: what the last period took is `B − r`, so the total is
    /// `(B − r̄)/period` (or the level's fall, while nothing has yet left the period), steered
    /// toward `B/period` with the gain spread over one period (the reading is a
    /// period's average). No pull: the level sits at the reserve whatever the shares, so the
    /// price says nothing there.
    pub(super) fn apply_sliding_window(
        &mut self,
        now: Nanos,
        first: Sample,
        last: Sample,
    ) -> Update {
        let dt = last.t - first.t;
        let mean = (first.r + last.r) / 2.0;
        let average = (self.limit - mean) / self.period;
        let fall = (first.r - last.r) / dt;
        let total = average.max(fall).max(self.rate * MIN_TOTAL_OF_RATE);
        // Every token left unused is lost a period later, and the refusals carry the signal at
        // the floor (one request per period each): no reserve.
        // (Under another limit's bound: `stacked.rs`.)
        let target = (self.limit / self.period).min(self.other_limit.cap);
        // The level falling faster than the period's average says the rate is high now (the
        // fall is `S(t) − S(t − period)`, a lower bound of `S(t)`): act within a window, as on a
        // bucket. Otherwise the reading is an average over the period: spread the gain.
        let gain = if fall > average {
            self.cfg.gain
        } else {
            self.cfg.gain * (SLIDING_GAIN_PERIODS * dt / self.period).min(1.0)
        };
        let ln_x = self.x.ln() + gain * clamp_step((target / total).ln());
        self.set_rate(now, ln_x.exp());
        Update {
            total,
            target,
            pull: 0.0,
        }
    }

    /// The factor a refusal cuts the rate by: one request per period off the process, at least
    /// `decrease` (a refusal at the level's floor is the law aiming at it).
    pub(super) fn sliding_cut(&self) -> f64 {
        let n = self.threads.len() as f64;
        let per_period = n * self.x * self.period;
        (1.0 - 1.0 / per_period.max(1.0)).max(self.cfg.decrease)
    }
}
