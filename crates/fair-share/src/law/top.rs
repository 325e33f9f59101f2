//! Reading the bucket's top where no answer states a limit (Heroku's fields: the remaining
//! count alone). The law then takes the quota it was told for the bucket, `B = Q`, and reads a
//! level far below `Q` as a bucket drained below its reserve. But many servers keep a bucket
//! much smaller than their quota (a burst of 14 on 23,745 a minute): their level never rises
//! above it, the law reads the total as the refill (`R − Δr/Δt` with `Δr = 0`) and steps down
//! toward a target under the refill every window without end. A lone process of 7 threads there
//! sent 0.3 % of what it was allowed, and nothing ever refused it.
//!
//! The evidence that tells a full small bucket from a crowd holding a big one low: the law cut
//! its own rate a great deal and the level did not rise. A crowd's level rises as soon as the
//! crowd sends less (every process of it steps down alike); a full bucket's cannot. So where no
//! limit is stated and nothing has refused the process, once its per-thread rate has fallen to
//! [`HELD_TOP_CUT`] below what it was while every reading stayed within a count of the highest
//! one, the bucket is read as holding that highest count and the request just counted:
//! `B = top + 1`. A reading more than a count below the top, or a new top, starts the test
//! again from the rate then. A process refused after its start is left alone: its level is a
//! crowd's, and processes that changed their bucket at different times parted (114 one-thread
//! processes on a bucket of 786 told 4,477 per 5 minutes: fairness 0.994 → 0.569 when any
//! process could take it). Refusals in the start's flood (before any window of the law
//! closed) say nothing of the bucket's size: a process cut there runs the test from its first
//! reading after the start, at the rate then (2 processes of 18 threads on nginx's 144 a
//! second with a burst of 9, told the quota, Heroku's fields: cut once each at the start, they
//! stepped down against a level of 9 for 80 minutes, to 0.04 of the quota).

use super::Law;

/// How far the per-thread rate falls (unitless, a factor) while the level holds at its top
/// before the top is read as the bucket's: a quarter, far beyond the few percent a window of
/// the law steps, and reached within a few windows when the law steps down against a level
/// it cannot raise.
pub(super) const HELD_TOP_CUT: f64 = 4.0;

/// The highest count read where no limit is stated, and the per-thread rate when the level
/// last reached it (or last left it).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HeldTop {
    /// Whether any answer stated a limit: then the bucket is that, and this reader rests.
    pub(super) limit_stated: bool,
    /// The highest count read, or `None` before the first.
    pub(super) top: Option<f64>,
    /// The per-thread rate when the test started.
    pub(super) x_at: f64,
    /// The process's cuts at its first reading after the start (none before): the test runs
    /// while no cut has come since.
    pub(super) steady_cuts: Option<u64>,
}

impl Law {
    /// A count `r` read on an answer that states no limit: the test of a held top (see the
    /// module's words). Runs after the limit is taken and before the level is read, so that a
    /// bucket read here steers this very answer's window.
    pub(super) fn read_top(&mut self, r: f64, refused: bool) {
        let held = &mut self.held_top;
        if held.limit_stated {
            return;
        }
        match held.top {
            Some(top) if r <= top && r + 1.0 >= top && !refused => {
                let cuts = self.cuts.decreases;
                if held.steady_cuts.is_none() && !self.mode.before_first_window() {
                    held.steady_cuts = Some(cuts);
                    if cuts > 0 {
                        // Cut in the start's flood: the test starts now.
                        held.x_at = self.x;
                        return;
                    }
                }
                let uncut = cuts == 0 || held.steady_cuts == Some(cuts);
                let test = uncut && top >= 1.0 && top + 1.0 < self.limit;
                if test && self.x < held.x_at / HELD_TOP_CUT {
                    self.limit = top + 1.0;
                    held.x_at = self.x;
                }
            }
            _ => {
                held.top = Some(held.top.map_or(r, |top| top.max(r)));
                held.x_at = self.x;
            }
        }
    }
}
