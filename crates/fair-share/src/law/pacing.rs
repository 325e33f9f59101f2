//! Pacing: when each thread sends. Every mode steers one number, the per-thread rate `x`;
//! this file turns it into sends. A process paces its threads on one common phase that advances
//! at `x` per second: thread `i` of `n` sends when the phase passes `k + (i + u)/n` (`u` drawn
//! once per process), give or take `jitter / n` (scaled to what the bucket tolerates: nothing on
//! a bucket of one token). The process's sends are therefore evenly spaced, `1/(n·x)` apart,
//! and stay so when `x` changes: a small bucket sees one regular stream per process instead of
//! `n` random ones (on the API-shape matrix, 122 of 208 cells met their targets with it, 81
//! with independent per-thread spacing). A waiting thread looks at the rate again every eighth
//! of its spacing, so a change of rate reaches it. A refusal stops the phase for its
//! `Retry-After`, less its rounding: every thread of the process holds (unless a fixed window's
//! predicted reset explains it: `refusal.rs`).

use super::Law;
use crate::draw::Draw;
use crate::time::{Nanos, from_secs, nanos, secs};

/// One thread's place in line and what holds it back.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ThreadState {
    /// The process phase at which this thread sends next.
    pub(super) target: Option<f64>,
    pub(super) last_send: Option<Nanos>,
    /// This send's jitter, in phase units.
    pub(super) jit: f64,
    /// Not before this (Retry-After, error backoff).
    pub(super) hold: Nanos,
    pub(super) errors: u32,
}

/// The process's phase: periods of the per-thread rate elapsed, continuous across rate changes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Clock {
    pub(super) at: Nanos,
    pub(super) phase: f64,
}

/// A waiting thread looks at the rate again this many times per spacing `1/x` (unitless): often
/// enough that a cut or a rise reaches it within an eighth of a send.
pub(super) const POLLS_PER_PERIOD: f64 = 8.0;
/// The smallest per-thread rate, as a fraction of the crowd's share `R / K` (unitless): a floor
/// far below any share, so a process cut by many refusals can still climb back.
pub(super) const MIN_RATE_OF_SHARE: f64 = 0.01;

impl Law {
    pub(super) fn clamp_rate(&self, x: f64) -> f64 {
        let hi = self.cfg.max_rate * self.rate;
        let lo = self.rate / self.cfg.crowd * MIN_RATE_OF_SHARE;
        x.clamp(lo, hi)
    }

    /// The window length `W = window_periods/x/√n`, seconds: a window of the law lasts at least
    /// this (a process of many threads sees its own effect sooner).
    pub fn window_secs(&self) -> f64 {
        self.cfg.window_periods / self.x / (self.threads.len() as f64).sqrt()
    }

    /// How long a window lasts at rest: one own period, or long enough for `min_flow` tokens
    /// at `R`.
    pub(super) fn loop_secs(&self) -> f64 {
        self.window_secs().max(self.cfg.min_flow / self.rate)
    }

    pub(super) fn clock_at(&self, now: Nanos) -> f64 {
        self.clock.phase + secs(now.saturating_sub(self.clock.at)) * self.x
    }

    pub(super) fn set_rate(&mut self, now: Nanos, x: f64) {
        let now = now.max(self.clock.at);
        self.clock = Clock {
            at: now,
            phase: self.clock_at(now),
        };
        self.x = self.clamp_rate(x);
    }

    /// How long `thread` still waits: until the process phase reaches its target, looked at
    /// again every eighth of a period so rate changes reach it, and at least until its hold
    /// ends. A hold (a `Retry-After`, an error's backoff) is waited out whole: no change of
    /// rate can end it sooner, and looking again every eighth of a period through it made a
    /// thread of a fast process held for minutes ask millions of times.
    pub(super) fn wait(&self, now: Nanos, thread: usize) -> Nanos {
        let th = &self.threads[thread];
        let pacing = match th.target {
            Some(target) => {
                let due = target + th.jit - self.clock_at(now);
                from_secs(due.max(0.0) / self.x)
            }
            None => 0,
        };
        let poll = from_secs(self.spacing() / POLLS_PER_PERIOD).max(1);
        let held = th.hold.max(self.clock.at).saturating_sub(now);
        pacing.min(poll).max(held)
    }

    /// The key is empty until `until` (a 429's `Retry-After`) for every thread of the process,
    /// not only the one refused: the process's phase stops until then, so that its threads
    /// resume in their order, one spacing apart, instead of each taking a 429 of its own and
    /// then all sending at once.
    pub(super) fn hold_process(&mut self, now: Nanos, until: Nanos) {
        if until > self.clock.at.max(now) {
            self.clock = Clock {
                at: until,
                phase: self.clock_at(now),
            };
        }
    }

    pub(super) fn draw_jitter(&self, draw: &mut (impl Draw + ?Sized)) -> f64 {
        let j = self.cfg.jitter;
        if j <= 0.0 {
            return 0.0;
        }
        // A bucket tolerates a burst of `B − 1` tokens beyond its refill: from two tokens on,
        // the jitter's shortest spacing, `(1 − 2·jitter)` of a period, fits in it; a bucket of
        // one token refuses any send sooner than `1/R` after the last, and the jitter would
        // cap the process at `1 − 2·jitter` of it. The draw is made all the same, so that the
        // order of the draws does not depend on the bucket.
        let fits = (self.limit - 1.0).clamp(0.0, 1.0);
        draw.within(-j, j) * fits / self.threads.len() as f64
    }

    pub(crate) fn delay_ns(
        &mut self,
        now: Nanos,
        thread: usize,
        draw: &mut (impl Draw + ?Sized),
    ) -> Nanos {
        if self.threads[thread].target.is_none() {
            let n = self.threads.len() as f64;
            let spread = (secs(nanos(self.cfg.first_spread)) * self.x).max(1.0);
            // Every thread of the process in line, one `1/(n·x0)` after the other, from an
            // offset drawn once per process.
            let offset = match self.offset {
                Some(o) => o,
                None => {
                    let o = draw.below(0.0, 1.0);
                    self.offset = Some(o);
                    self.clock = Clock {
                        at: now,
                        phase: 0.0,
                    };
                    o
                }
            };
            let slot = (thread as f64 + offset) / n * spread;
            self.threads[thread].target = Some(slot);
        }
        self.threads[thread].jit = self.draw_jitter(draw);
        self.wait(now, thread)
    }

    pub(crate) fn acquire_ns(&mut self, now: Nanos, thread: usize) -> Nanos {
        let more = self.wait(now, thread);
        if more == 0 {
            let phase = self.clock_at(now);
            let th = &mut self.threads[thread];
            let target = th.target.unwrap_or(phase);
            let mut next = target + 1.0;
            if next < phase + 0.5 {
                next += (phase + 0.5 - next).ceil();
            }
            th.target = Some(next);
            th.last_send = Some(now);
        }
        more
    }
}
