//! A window of the law: the answers since its first reading, from which it measures the total
//! send rate of everyone, `S = R − Δr/Δt` (on a fixed window `−Δr/Δt`, on a sliding window what
//! the last period took). A window closes once it has lasted `W = window_periods / (x·√n)` (a
//! process of many threads sees its own effect sooner; its first window `0.7 W`), holds
//! `min_samples` answers and has seen `min_flow` tokens taken (`S·Δt`, so the integer count is a
//! small error); then the mode's rules steer the rate (`bucket.rs`, `sliding.rs`).

use super::modes::Evidence;
use super::{Law, Sample, Update};
use crate::time::Nanos;

/// A window of the law. On a fixed window it may span the server's resets: the level is then
/// read against the first reading after the last of them, and what was taken before that is
/// counted apart (`fixed.rs`, `carry_window`).
#[derive(Clone, Copy, Debug)]
pub(super) struct LawWindow {
    pub(super) first: Sample,
    pub(super) samples: u32,
    /// The reading the level is read against: the first, or the first after the last turnover.
    pub(super) since: Sample,
    /// Tokens taken before `since`: the level's fall up to each turnover, and what the
    /// allowance lost after each reset before its first reading (`B − r`).
    pub(super) taken: f64,
    /// The process's own refusals in the window: on a fixed window, requests the level cannot
    /// show (an allowance spent reads 0 however many more come).
    pub(super) refused: f64,
    /// The latest reading so far.
    pub(super) last: Sample,
    /// Tokens the refill may have lost to a full bucket, which the level's slope cannot show
    /// (see `observe`).
    pub(super) overflow: f64,
    /// The process's own successes read after the first reading: on a bucket, tokens the
    /// refill gave at the least (`refill.rs`, `learn_refill_from_successes`).
    pub(super) successes: f64,
}

impl LawWindow {
    pub(super) fn new(s: Sample) -> LawWindow {
        LawWindow {
            first: s,
            samples: 1,
            since: s,
            taken: 0.0,
            refused: 0.0,
            last: s,
            overflow: 0.0,
            successes: 0.0,
        }
    }
}

/// A process's first window lasts this fraction of `W` (unitless): before it closes, the
/// process runs at its start rate, which may be far from its share, and closing it early brings
/// the first correction forward (fast_slow's convergence 63 s at 1.0, 57 s at 0.7; at 0.5 a
/// hundred threads' first round is misread).
pub(super) const FIRST_WINDOW: f64 = 0.7;

impl Law {
    /// Starts a new window at `s`.
    pub(super) fn open_window(&mut self, s: Sample) {
        self.level.window = Some(LawWindow::new(s));
    }

    /// A reading of the level at `t` (seconds): read what it says of the server, then open,
    /// extend or close the window of the law.
    pub(super) fn observe(&mut self, now: Nanos, t: f64, r: f64) -> Option<Update> {
        let s = Sample { t, r };
        if self.read_level(now, s) {
            return None;
        }
        let (limit, refill) = (self.limit, self.refill());
        let Some(w) = self.level.window.as_mut() else {
            self.open_window(s);
            return None;
        };
        w.samples += 1;
        if t > w.last.t {
            // A reading at the top (`B − 1`, the request just counted) found the bucket full:
            // since the reading before, it refilled from `w.last.r` and then overflowed for
            // at most the time left over. Others' requests only shorten that, so this is the
            // most it lost; for a process alone it is what it lost.
            if r >= limit - 1.0 && refill > 0.0 {
                let fill = (limit - w.last.r).max(0.0) / refill;
                w.overflow += ((t - w.last.t) - fill).max(0.0) * refill;
            }
            w.last = s;
        }
        let w = *w;
        // Counted with the nominal refill even on a windowed server: a window then closes a
        // little sooner.
        let flow = self.rate * (t - w.first.t) - (r - w.since.r) + w.taken;
        let periods = if self.mode.before_first_window() {
            FIRST_WINDOW
        } else {
            1.0
        };
        if t - w.first.t >= self.window_secs() * periods
            && w.samples >= self.cfg.min_samples
            && flow >= self.min_flow()
        {
            let update = self.apply_window(now, w, s);
            self.mode.on(Evidence::WindowClosed);
            self.open_window(s);
            return Some(update);
        }
        None
    }
}
