//! Stacked limits: a short limit in front of a long one on the same key ("10 per second; 100
//! per minute", a burst limit before a daily quota). Libraries that stack limits answer a
//! success with one limit's fields (Flask-Limiter shows the shortest window's until another is
//! breached) and a refusal with the refusing limit's. So the successes describe the short
//! limit, and a refusal can state a limit the successes never did.
//!
//! Read as any other answer, that refusal would make its limit the bucket `B` until the next
//! success puts the short one back: the bucket flips with every refusal, and nothing ever
//! bounds the rate by the long limit, which keeps refusing (a key of 10 per second and 100
//! per minute, told nothing: 3.5 % of one thread's requests refused, 7.3 % of four threads').
//!
//! The rule: a refusal that states a limit `L` other than the last success's is another
//! limit's. It leaves `B` alone, and its reset `T` (the later of its reset and its
//! `Retry-After`) bounds the key's total rate: the limit admits `L` per period and its
//! period is at least `T`, less the reset's rounding (one resolution), so the key takes at
//! most `L / (T − resolution)` per second. Only a wait longer than two resolutions says
//! anything: a shorter one is within the rounding. The bound holds for the rest of the run
//! (the long limit does not go away) and is the lowest any refusal gave; every mode's target
//! total is held under it (`bucket.rs`, `sliding.rs`).

use super::Law;
use crate::answer::{Answer, Status};
use crate::time::{nanos, secs};

/// What refusals by another limit than the successes' have shown.
#[derive(Clone, Copy, Debug)]
pub(super) struct OtherLimit {
    /// The limit the last success stated (none before a success stated one).
    success_limit: Option<f64>,
    /// The key's total rate, requests per second, is at most this: infinite until a refusal
    /// stated another limit.
    pub(super) cap: f64,
}

impl Default for OtherLimit {
    fn default() -> Self {
        OtherLimit {
            success_limit: None,
            cap: f64::INFINITY,
        }
    }
}

impl Law {
    /// Takes the limit `answer` states, if any: a refusal by another limit than the successes'
    /// bounds the total (see the module's words) and leaves the bucket; any other answer's
    /// limit is the bucket. Returns whether a limit was stated.
    pub(super) fn take_stated_limit(&mut self, answer: &Answer) -> bool {
        let Some(limit) = answer.limit.filter(|l| *l > 0).map(|l| l as f64) else {
            return false;
        };
        self.held_top.limit_stated = true;
        let success_limit = self.other_limit.success_limit;
        if answer.status == Status::Limited && success_limit.is_some_and(|s| s != limit) {
            let res = self.resolution();
            let stated = |d: Option<std::time::Duration>| d.map_or(0.0, |d| secs(nanos(d)));
            let wait = stated(answer.reset).max(stated(answer.retry_after));
            if wait > 2.0 * res {
                let cap = &mut self.other_limit.cap;
                *cap = cap.min(limit / (wait - res));
            }
            return true;
        }
        self.limit = limit;
        if answer.status == Status::Ok {
            self.other_limit.success_limit = Some(limit);
        }
        true
    }
}
