//! **Refusals and errors**, in every mode. A 429 cuts the rate once per round (answers to
//! requests sent before the last cut do not cut again), and the cut is the mode's:
//!
//! - blind (no count): `0.3^(1/n)`, and the probe shrinks; from the second refusal in a row the
//!   whole process holds, the key blocked (`blind.rs`);
//! - sliding window: one request per period off the process (`sliding.rs`);
//! - a bucket that holds the crowd's swing: in the [`Phase::Start`] phase (no window closed, no
//!   cut yet) a crowd emptied it before anyone could read it, and every process of a crowd
//!   started together is refused at least once: each takes the same deep cut to `n/(2√K)` of its
//!   rate (at most `decrease`), instead of halving its way down through about `log2 N`
//!   refusals; later, a refusal marks one thread, so a process of `n` threads takes an `n`-th
//!   of the cut, `decrease^(1/n)` (`n` refusals cut it as one refusal each cuts `n` one-thread
//!   processes);
//! - otherwise `decrease`;
//!
//! except on a fixed window whose predicted reset explains the refusal (`fixed.rs`): then the
//! thread holds to the reset and the rate stays. A cut also drops the window of the law, whose
//! readings came from the rate just cut. Every refused thread waits at least the `Retry-After`,
//! stretched by `U[0, retry_jitter]·min(Retry-After, 1/x)`, and, unless the reset explained it,
//! the whole process holds for the `Retry-After` less its rounding (`pacing.rs`, `hold_process`):
//! the key is empty for all its threads. Where it explains it (`spent`), the whole process
//! holds to the reset as well, unless the `Retry-After` is too coarse to place the reset.
//!
//! A 503 or a transport error changes no rate but holds the thread back for `error_backoff`,
//! doubling per consecutive error up to `error_backoff_max`.

use super::Law;
use super::modes::{Evidence, Phase};
use crate::answer::Answer;
use crate::draw::Draw;
use crate::time::{Nanos, from_secs, nanos, secs};

/// A fixed window's allowance refused where the reset explains it holds the whole process to
/// the reset where the wait is more than this many resolutions of the header (unitless): a
/// `Retry-After` of 2 s, rounded up from anywhere in the second below, places the reset too
/// loosely to hold every thread on (express-rate-limit's 50 per 5 s: 429s 1.7 % to 4.2 %).
pub(super) const HOLD_RESOLUTIONS: f64 = 4.0;
/// Consecutive errors beyond this many no longer double the backoff (it is capped anyway, and
/// `2^30` is past any cap a day long).
pub(super) const MAX_ERROR_DOUBLINGS: u32 = 30;

impl Law {
    /// A 429 to a request sent at `sent`: cut the rate once per round (unless a fixed window's
    /// reset explains it), and hold the thread for the `Retry-After`, stretched.
    pub(super) fn refused(
        &mut self,
        now: Nanos,
        thread: usize,
        sent: Nanos,
        answer: &Answer,
        draw: &mut (impl Draw + ?Sized),
    ) {
        self.threads[thread].errors = 0;
        let period = from_secs(self.spacing());
        let retry_after = answer.retry_after.map(nanos);
        let window_spent = self.window_spent(now, retry_after);
        if !self.mode.reads_count() {
            self.blind_refusal(now, sent);
        } else if !window_spent
            && self
                .cuts
                .last_decrease
                .is_none_or(|d| sent >= d && now >= d.saturating_add(period))
        {
            // On a sliding window a refusal at the level's floor is the law aiming at
            // it: the process gives up one request per period, not half its rate (`sliding.rs`).
            let n = self.threads.len() as f64;
            let factor = if self.mode.is_sliding() {
                self.sliding_cut()
            } else if self.mode.reads_count() && self.holds_the_crowd() {
                if self.mode.phase == Phase::Start {
                    // Refused before any window could read the level, on a bucket deep
                    // enough to hold a crowd's swing: a crowd emptied it. Every process of a
                    // crowd started together is refused at least once, so all take this cut
                    // alike and stay fair; halving alone left each of them about `log2 N`
                    // refusals to take.
                    (n / self.crowd_swing()).min(self.cfg.decrease)
                } else {
                    // A refusal marks one thread, so a process of `n` threads takes an
                    // `n`-th of the cut, `decrease^(1/n)`: `n` refusals cut it once, as one
                    // refusal each cuts `n` one-thread processes once. Halving the whole
                    // process cut a pool of 500 threads 500 times harder than a single beside
                    // it, and the pool ended at a fifth of a single's per-thread rate.
                    (self.cfg.decrease.ln() / n).exp()
                }
            } else {
                self.cfg.decrease
            };
            self.set_rate(now, self.x * factor);
            self.cuts.last_decrease = Some(now);
            self.cuts.decreases += 1;
            self.mode.on(Evidence::RateCut);
            self.level.window = None;
        }
        let wait = match retry_after {
            Some(ra) => {
                let stretch = if self.cfg.retry_jitter > 0.0 {
                    draw.within(0.0, self.cfg.retry_jitter)
                } else {
                    0.0
                };
                from_secs(secs(ra) + stretch * secs(ra).min(self.spacing()))
            }
            None => 0,
        };
        self.threads[thread].hold = now.saturating_add(wait);
        // The key is surely empty for the `Retry-After` less its rounding (whole seconds,
        // rounded up): for every thread of the process, not only the one refused. Where the
        // predicted reset explains the refusal, the process holds to that reset instead, if
        // the `Retry-After` places it closely enough (`spent`).
        if let Some(ra) = retry_after.filter(|_| !window_spent) {
            let sure = ra.saturating_sub(nanos(self.cfg.reset_resolution));
            self.hold_process(now, now.saturating_add(sure));
        } else if let Some(until) = retry_after.and_then(|ra| self.spent(now, ra)) {
            self.hold_process(now, until);
        }
    }

    /// A fixed window spent before its reset: the key is empty until the reset for every
    /// thread, which would otherwise each take a 429 of its own there, one spacing after the
    /// other (Flask-Limiter's 30 a minute: 12 probes of 3 × 4 threads in the first window; on
    /// a fresh 100 a minute, 3 × 4 threads drew 3 % 429s over the first three minutes with the
    /// hold kept to windows spent in their first half, 0.7 % with it in every window). Where
    /// the wait is more than [`HOLD_RESOLUTIONS`] of the header's resolution, so that its
    /// rounding is a small part of it: the process holds to the later of the `Retry-After`
    /// less its rounding and the predicted reset.
    fn spent(&self, now: Nanos, retry_after: Nanos) -> Option<Nanos> {
        let (ra, left) = (secs(retry_after), self.to_reset(secs(now))?);
        (ra > HOLD_RESOLUTIONS * self.resolution())
            .then(|| now.saturating_add(from_secs((ra - self.resolution()).max(left.min(ra)))))
    }

    /// An error or a 503 on `thread`'s request: hold the thread, doubling per error in a row.
    pub(super) fn back_off(&mut self, now: Nanos, thread: usize) {
        let th = &mut self.threads[thread];
        let doublings = th.errors.min(MAX_ERROR_DOUBLINGS) as i32;
        let base = secs(nanos(self.cfg.error_backoff)) * 2f64.powi(doublings);
        let wait = base.min(secs(nanos(self.cfg.error_backoff_max)));
        th.errors = th.errors.saturating_add(1);
        th.hold = now.saturating_add(from_secs(wait));
    }
}
