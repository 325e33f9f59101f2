//! `concurrency`: a concurrent-requests limiter, as Stripe describes in "Scaling your API with
//! rate limiters" (2017): each key may have at most `max_in_flight` requests in flight; one more
//! gets 429 at once.
//!
//! "In flight" means admitted and not yet answered: a request counts from the moment it is
//! admitted until its answer has been delivered ([`Limiter::release`], which engines call once
//! for every request whose decision was `Ok`, when that answer arrives). A refused request
//! never holds a slot, so it is never released. The rule knows nothing about time: the most it
//! can serve depends on how long the server takes to answer, which is the engine's business.
//!
//! Parameters and defaults:
//! - `max_in_flight`: requests a key may have in flight. Default 20 (Stripe's example).
//!
//! A 429 here carries no `Retry-After` (the rule cannot know when a slot frees);
//! `RateLimit-Remaining` is the number of free slots and `RateLimit-Limit` is `max_in_flight`.

use serde::{Deserialize, Serialize};

use super::{Decision, Limiter, Rule};
use crate::config::ParamProblem;
use crate::exchange::Status;
use crate::time::Nanos;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConcurrencyConfig {
    /// Requests in flight per key. Default 20.
    pub max_in_flight: u64,
}

impl Default for ConcurrencyConfig {
    fn default() -> Self {
        ConcurrencyConfig { max_in_flight: 20 }
    }
}

impl Rule for ConcurrencyConfig {
    const NAME: &'static str = "concurrency";
    const DESCRIPTION: &'static str =
        "concurrent-requests limiter: at most `max_in_flight` admitted and unanswered (Stripe's)";

    fn problems(&self) -> Vec<ParamProblem> {
        if self.max_in_flight == 0 {
            vec![("max_in_flight", "must be at least 1".to_string())]
        } else {
            Vec::new()
        }
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(Concurrency::new(self))
    }
}

pub struct Concurrency {
    max: u64,
    in_flight: Vec<u64>,
}

impl Concurrency {
    pub fn new(cfg: &ConcurrencyConfig) -> Self {
        Concurrency {
            max: cfg.max_in_flight.max(1),
            in_flight: Vec::new(),
        }
    }

    /// Requests of `key` admitted and not yet released.
    pub fn in_flight(&self, key: usize) -> u64 {
        self.in_flight.get(key).copied().unwrap_or(0)
    }
}

impl Limiter for Concurrency {
    fn admit(&mut self, _now: Nanos, key: usize) -> Decision {
        if key >= self.in_flight.len() {
            self.in_flight.resize(key + 1, 0);
        }
        let n = &mut self.in_flight[key];
        let status = if *n < self.max {
            *n += 1;
            Status::Ok
        } else {
            Status::Limited
        };
        Decision {
            status,
            remaining: self.max - *n,
            limit: self.max,
            retry_after: None,
            reset: 0,
            window: 0,
        }
    }

    fn release(&mut self, _now: Nanos, key: usize) {
        if let Some(n) = self.in_flight.get_mut(key) {
            *n = n.saturating_sub(1);
        }
    }

    /// 0: "no bound this rule can state". Over time the rule admits without limit as long as
    /// answers come back fast enough (`max_in_flight × duration / service time`), and the
    /// service time is the engine's latency, not the rule's. The summary then reports
    /// utilization 0.
    fn capacity(&self, _duration: Nanos) -> f64 {
        0.0
    }

    /// 0, "unknown", for the same reason as [`Limiter::capacity`].
    fn rate_per_sec(&self) -> f64 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limiter(max: u64) -> Concurrency {
        Concurrency::new(&ConcurrencyConfig { max_in_flight: max })
    }

    #[test]
    fn admits_up_to_the_maximum_and_frees_a_slot_on_release() {
        let mut c = limiter(2);
        let d: Vec<_> = (0..3).map(|_| c.admit(0, 0)).collect();
        assert_eq!(
            d.iter()
                .map(|d| (d.status, d.remaining))
                .collect::<Vec<_>>(),
            [(Status::Ok, 1), (Status::Ok, 0), (Status::Limited, 0)]
        );
        assert_eq!((d[2].limit, d[2].retry_after), (2, None));
        assert_eq!(c.in_flight(0), 2);
        c.release(5, 0);
        assert_eq!(c.in_flight(0), 1);
        assert_eq!(c.admit(5, 0).status, Status::Ok);
        assert_eq!(c.admit(5, 0).status, Status::Limited);
    }

    #[test]
    fn keys_have_their_own_slots_and_stray_releases_are_harmless() {
        let mut c = limiter(1);
        c.release(0, 3);
        assert_eq!(c.admit(0, 0).status, Status::Ok);
        assert_eq!(c.admit(0, 1).status, Status::Ok);
        assert_eq!(c.admit(0, 0).status, Status::Limited);
        c.release(1, 0);
        c.release(1, 0);
        assert_eq!(c.in_flight(0), 0);
        assert_eq!(c.capacity(3_600_000_000_000), 0.0);
    }

    #[test]
    fn a_zero_maximum_is_refused() {
        let fields: Vec<_> = ConcurrencyConfig { max_in_flight: 0 }
            .problems()
            .into_iter()
            .map(|p| p.0)
            .collect();
        assert_eq!(fields, ["max_in_flight"]);
    }

    proptest! {
        /// Whatever the order of requests and answers, the requests admitted and not yet
        /// answered never exceed the maximum, and a request is refused only when it is reached.
        #[test]
        fn never_more_than_the_maximum_in_flight(
            max in 1u64..8,
            ops in proptest::collection::vec(any::<bool>(), 1..300),
        ) {
            let mut c = limiter(max);
            let mut open = 0u64;
            for (t, send) in ops.into_iter().enumerate() {
                if send {
                    let d = c.admit(t as Nanos, 0);
                    prop_assert_eq!(d.status == Status::Ok, open < max);
                    if d.status == Status::Ok {
                        open += 1;
                    }
                } else if open > 0 {
                    c.release(t as Nanos, 0);
                    open -= 1;
                }
                prop_assert!(open <= max);
                prop_assert_eq!(c.in_flight(0), open);
            }
        }
    }
}
