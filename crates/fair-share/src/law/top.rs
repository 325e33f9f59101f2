//! **A bucket held at its top**: the refill is more than the law believes. Where the refill `R`
//! is neither configured nor stated by a policy whose window is longer than the reset's
//! resolution (a window stated at the resolution may be a shorter one rounded up, its rate then
//! a floor), the law runs on a guess: the default quota, or a bound learned from the stated
//! resets, which near the top say little (a token bucket of 39 a second and 2 tokens, stated as
//! `2;w=1`, read as 2 a second). A window of the law whose every reading finds the bucket at
//! its top, `B − 1` after the request counted, lost refill to overflow: the process's own sends
//! were all refilled, so `R` is at least what it was admitted, and it doubles its rate to find
//! out how much more. The window after such a probe reads the bucket drained by it, and what
//! the process was admitted there plus the level's rise bounds `R` from below:
//! `R ≥ (k + Δr − 1)/(Δt + slacks)`, `k` its own successes, the count rounded down, and `Δt`
//! widened by how far each reading's count may lie before the time it is read at. Only these
//! windows are read so: elsewhere the level's rise may be a sliding window's echo of a burst.

use super::window::LawWindow;
use super::{Law, Sample, Update};
use crate::time::{Nanos, nanos, secs};

/// A window that held the top multiplies the rate by this (unitless): the bucket overflowed
/// the whole window, so the refill is at least the rate sent, and doubling finds it in
/// `log2` of the error windows (one thread alone on 393 a minute, 2 tokens, told nothing but
/// GitHub's headers: the default quota of 1.25 a second, six windows).
pub(super) const TOP_PROBE_STEP: f64 = 2.0;
/// The top says the refill is more than believed only where the process took at least this
/// share of it (unitless; the bound is below the rate sent by a token and the slacks): a
/// process cut below the refill finds the top held and learns nothing, and probing from there
/// drained a bucket of 2 tokens after each refusal's cut.
pub(super) const PROBE_FROM_REFILL: f64 = 0.9;

impl Law {
    /// Whether a reading of `r` finds the bucket at its top: `B − 1`, the request just counted.
    /// A bucket of one token has no top apart from its floor: every reading is 0.
    pub(super) fn at_top(&self, r: f64) -> bool {
        self.limit >= 2.0 && r >= self.limit - 1.0
    }

    /// Whether the refill may be more than the law believes: neither configured nor stated by
    /// a policy whose window is longer than the reset's resolution.
    pub(super) fn refill_in_doubt(&self) -> bool {
        self.cfg.quota.is_none()
            && self
                .policy
                .is_none_or(|q| secs(nanos(q.window)) <= self.resolution())
    }

    /// A bucket's window `w`, closed at `last`, read for the refill when it is in doubt: the top
    /// held while the process took at least the refill believed raises `R` to what it was
    /// admitted and doubles its rate (the window's update, the D step and the pull skipped);
    /// the window after such a probe raises `R` to the bound it reads, and the D step and the
    /// pull follow as usual (`None`).
    pub(super) fn read_top(&mut self, now: Nanos, w: LawWindow, last: Sample) -> Option<Update> {
        if !self.refill_in_doubt() {
            self.learned.probing = false;
            return None;
        }
        let proven = self.proven_refill(w, last);
        let held = w.top_held && proven >= PROBE_FROM_REFILL * self.rate;
        if held || self.learned.probing {
            self.raise_refill(proven);
        }
        self.learned.probing = held;
        if !held {
            return None;
        }
        let total = w.admitted / (last.t - w.first.t);
        self.set_rate(now, self.x * TOP_PROBE_STEP);
        Some(Update {
            total,
            target: TOP_PROBE_STEP * total,
            pull: 0.0,
        })
    }

    /// A refusal ends a probe: the bucket it drained bounds the refill, read from the window
    /// open until then (which the cut drops).
    pub(super) fn probe_refused(&mut self) {
        if !std::mem::take(&mut self.learned.probing) || !self.refill_in_doubt() {
            return;
        }
        if let Some(w) = self.level.window {
            let proven = self.proven_refill(w, w.last);
            self.raise_refill(proven);
        }
    }

    /// `(k + Δr − 1)/(Δt + slacks)` over `w` up to `last`, tokens per second: at most the
    /// refill of a bucket (0 for a window without time).
    fn proven_refill(&self, w: LawWindow, last: Sample) -> f64 {
        if last.t <= w.first.t {
            return 0.0;
        }
        let span = last.t - w.first.t + w.first_slack + w.last_slack;
        (w.admitted + last.r - w.first.r - 1.0) / span
    }

    /// `R` is at least `proven`: raised to it if it is more (the rate stays; the D step moves
    /// it).
    fn raise_refill(&mut self, proven: f64) {
        if proven > self.rate {
            self.rate = proven;
            self.period = self.limit / proven;
            self.learned.refill_bound = Some(proven);
        }
    }
}
