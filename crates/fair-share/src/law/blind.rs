//! **Blind mode** (no count): the server sends no remaining count (nginx's `limit_req`, most API
//! gateways): there is no level to read, only the quota the process was told (or the
//! default) and which of its own requests were refused. Refusals hit the processes of a key
//! in proportion to what they send, so every process sees the same share of them; the law
//! steers that share to `BLIND_REFUSALS`, whatever the number of processes:
//!
//! - a process never sends faster than the whole quota `R` it was told;
//! - a success lets it climb by `probe · min(R/X, 10)²` per second of success, `X` its own rate: a
//!   process below its fair share climbs faster, which is what makes shares equal (with
//!   `R/X` to the first power shares stayed apart for hours, gauntlet no_header's fairness
//!   0.82; to the third, a crowd of small processes climbed into floods before the probe
//!   could shrink);
//! - a refusal cuts it to `BLIND_CUT^(1/n)`: a refused thread is one of `n`, as if each
//!   thread were a process of its own cut to `BLIND_CUT`;
//! - the probe grows a little with every success and shrinks with every refusal, so that
//!   it rests where `BLIND_REFUSALS` of the answers are refused (more processes, each
//!   climbing, probe harder together; their probes shrink until the share is back);
//! - **a blocked key**: a second refusal in a row (no success between) says the key refuses
//!   everything for now (a window spent, or a limiter that counts refused requests too, as
//!   HAProxy's request rate does, so that sending while refused keeps the key blocked). The
//!   whole process holds for `BLOCKED_HOLD` spacings `1/x` of its rate just cut, and for
//!   `BLOCKED_HOLD_AGAIN` whenever a request sent after that hold began is refused too (one
//!   sent before it says nothing new), at most a period. Refusals after the first hold still
//!   cut the rate but leave the probe: they say the key is blocked, not that the climb was too
//!   fast. A success ends the run. Without it, every thread went on knocking at its own pace:
//!   3 × 4 threads told 50 per 5 s on HAProxy were refused 27 times at the start, and the
//!   probe, shrunk by each, took 50 periods to climb back (utilization 0.26; with it 0.94).
//!
//! An additive increase of a fixed size (the classic AIMD) drew refusals in proportion to
//! the square of the number of processes and, scaled by `1/B` as it was, flooded small
//! buckets: 57 % 429s for 3 × 4 threads on nginx's 5 r/s with a burst of 10.

use super::Law;
use super::modes::Evidence;
use crate::time::{Nanos, from_secs, secs};

/// The share of refusals the probe aims for (unitless): half a percent, low enough to meet the
/// targets, high enough that the refusals still say where the quota is.
pub(super) const BLIND_REFUSALS: f64 = 0.005;
/// Blind to the count: how hard one answer moves the probe (its log, per answer). One refusal
/// divides it by e; 200 successes (at `BLIND_REFUSALS`) multiply it by e.
pub(super) const BLIND_ADAPT: f64 = 1.0;
/// A thread's rate after its refusal, as a share of what it was (unitless); a process of `n`
/// threads takes its `n`-th root, as if each thread were a process of its own.
pub(super) const BLIND_CUT: f64 = 0.3;
/// Blind to the count: how far below the quota a process's rate counts in its climb, `R/X`. A
/// crowd of small processes each at a hundredth of the quota climbed ten thousand times faster
/// than the probe and flooded before their probes could shrink (50 one-thread processes beside
/// a pool of 50 threads on Heroku's bucket: 29 % 429s; 16 % capped at 10).
pub(super) const BLIND_BELOW_MAX: f64 = 10.0;
/// Blind to the count, a blocked key: how long the process holds at the second refusal in a
/// row, in spacings `1/x` of its rate (unitless). One spacing: each thread gives up one send,
/// enough for a short window (HAProxy's 5 s) to forget the refused ones.
pub(super) const BLOCKED_HOLD: f64 = 1.0;
/// ... and when a request sent after that hold began is refused too (unitless). Doubling on
/// and on instead (up to a period) held processes apart for hours after a long window's reset:
/// fairness fell, 0.925 to 0.372 on 494 processes beside a bucket of 83,179 an hour.
pub(super) const BLOCKED_HOLD_AGAIN: f64 = 2.0;
/// The probe's bounds, in `R²` per second.
pub(super) const BLIND_PROBE_MIN: f64 = 1e-6;
pub(super) const BLIND_PROBE_MAX: f64 = 1.0;

impl Law {
    /// A success without a count: climb.
    pub(super) fn blind_success(&mut self, now: Nanos) {
        let since = self
            .cuts
            .last_increase
            .map_or(0.0, |t| secs(now - t.min(now)));
        self.cuts.last_increase = Some(now);
        let n = self.threads.len() as f64;
        let own = n * self.x;
        let below = (self.rate / own).min(BLIND_BELOW_MAX);
        let climb = self.cuts.probe * below * below * since;
        self.set_rate(now, ((own + climb) / n).min(self.rate / n));
        self.cuts.probe = (self.cuts.probe * (BLIND_ADAPT * BLIND_REFUSALS).exp())
            .min(self.rate * self.rate * BLIND_PROBE_MAX);
        self.cuts.refused_in_a_row = 0;
        self.cuts.blocked_hold_at = None;
    }

    /// A refusal without a count, of a request sent at `sent`: cut, probe less, and hold the
    /// process where the key is blocked.
    pub(super) fn blind_refusal(&mut self, now: Nanos, sent: Nanos) {
        self.cuts.refused_in_a_row = self.cuts.refused_in_a_row.saturating_add(1);
        let n = self.threads.len() as f64;
        self.set_rate(now, self.x * (BLIND_CUT.ln() / n).exp());
        // Once the process holds for a blocked key, a refusal says the key is still blocked,
        // not that the climb was too fast: the probe stays.
        if self.cuts.blocked_hold_at.is_none() {
            self.cuts.probe = (self.cuts.probe * (-BLIND_ADAPT * (1.0 - BLIND_REFUSALS)).exp())
                .max(self.rate * self.rate * BLIND_PROBE_MIN);
        }
        // The climb counts seconds of success since the cut.
        self.cuts.last_increase = Some(now);
        self.cuts.last_decrease = Some(now);
        self.cuts.decreases += 1;
        self.mode.on(Evidence::RateCut);
        if self.cuts.refused_in_a_row >= 2 {
            let spacings = match self.cuts.blocked_hold_at {
                None => Some(BLOCKED_HOLD),
                Some(at) if sent >= at => Some(BLOCKED_HOLD_AGAIN),
                Some(_) => None,
            };
            if let Some(k) = spacings {
                self.cuts.blocked_hold_at = Some(now);
                let hold = (k / self.x).min(self.period);
                self.hold_process(now, now.saturating_add(from_secs(hold)));
            }
        }
    }
}
