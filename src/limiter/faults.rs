//! Fault injection for any server kind: outage windows answered with 503 and random 500s, as a
//! wrapper around the rule. It is what Keen's full-jitter retry retries against (503 counted like
//! 429) and what the backoff algorithms of the AWS post are for.
//!
//! Fields of `[server]` (shared by every kind):
//! - `outages`: `[["10m", "12m"], ...]`, half-open windows `[start, end)` of run time. A request
//!   arriving inside one gets 503 ([`Status::Unavailable`]) and never reaches the rule, so it
//!   takes no token (a bucket keeps refilling meanwhile). Windows must lie inside the run,
//!   start before they end, and not overlap (touching is fine: `[["1m","2m"],["2m","3m"]]` is
//!   one outage from 1 to 3 minutes). Overlaps are refused rather than merged, as they are
//!   most likely a typo. An outage sends no `Retry-After`: nobody knows when it will end.
//!   Default: none.
//! - `error_rate`: the probability, from 0 to 1, that a request outside an outage gets a random
//!   500 ([`Status::Error`]). The failure happens before the rule is consulted (a front end
//!   failing), so it too takes no token and holds no concurrency slot; the most 2xx a key can
//!   get is unchanged, only the calls to get them grow. Default 0.
//!
//! An injected fault carries no rate-limit headers (`Decision::limit` 0). The randomness comes
//! from a stream of the run's seed that the engine hands over, drawn once per request outside
//! an outage (and never when `error_rate` is 0), so runs stay deterministic.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Decision, Held, Limiter};
use crate::exchange::Status;
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos};

/// The fault fields of `[server]`, as typed from the file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultConfig {
    /// `[start, end)` windows answered with 503.
    pub outages: Vec<[HumanDuration; 2]>,
    /// Probability of a random 500. Default 0.
    pub error_rate: f64,
}

/// A fault field out of range: the field, the outage's index when it is about one, the text.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultProblem {
    pub field: &'static str,
    pub index: Option<usize>,
    pub message: String,
}

impl FaultConfig {
    pub fn is_empty(&self) -> bool {
        self.outages.is_empty() && self.error_rate == 0.0
    }

    /// Range checks against a run of `duration`.
    pub fn problems(&self, duration: HumanDuration) -> Vec<FaultProblem> {
        let mut out = Vec::new();
        let mut problem = |index, message: String| {
            out.push(FaultProblem {
                field: "outages",
                index: Some(index),
                message,
            })
        };
        for (i, &[start, end]) in self.outages.iter().enumerate() {
            if start >= end {
                problem(
                    i,
                    format!("starts at {start}, not before its end {end}; write [start, end]"),
                );
            } else if end > duration {
                problem(
                    i,
                    format!("ends at {end}, after the end of the run ({duration})"),
                );
            }
            if let Some(j) = (0..i).find(|&j| {
                let [s, e] = self.outages[j];
                s < end && start < e && s < e
            }) {
                let [s, e] = self.outages[j];
                problem(
                    i,
                    format!("{start}–{end} overlaps outages[{j}] ({s}–{e}); make them one window"),
                );
            }
        }
        if !(self.error_rate.is_finite() && (0.0..=1.0).contains(&self.error_rate)) {
            out.push(FaultProblem {
                field: "error_rate",
                index: None,
                message: format!(
                    "must be a probability from 0 to 1 (got {})",
                    self.error_rate
                ),
            });
        }
        out
    }

    /// Sorted, touching windows joined, empty ones dropped.
    fn windows(&self) -> Vec<(Nanos, Nanos)> {
        let mut w: Vec<(Nanos, Nanos)> = self
            .outages
            .iter()
            .map(|[s, e]| (s.nanos(), e.nanos()))
            .filter(|(s, e)| s < e)
            .collect();
        w.sort_unstable();
        let mut joined: Vec<(Nanos, Nanos)> = Vec::with_capacity(w.len());
        for (s, e) in w {
            match joined.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => joined.push((s, e)),
            }
        }
        joined
    }

    /// `inner` with these faults, or `inner` itself when there are none. Call only on a
    /// config without [`FaultConfig::problems`]; `rng` must come from the run's seed.
    pub fn wrap(&self, inner: Box<dyn Limiter>, rng: SimRng) -> Box<dyn Limiter> {
        if self.is_empty() {
            return inner;
        }
        Box::new(Faulty {
            inner,
            outages: self.windows(),
            next_outage: 0,
            error_rate: self.error_rate,
            rng,
        })
    }
}

/// A rule behind outages and random errors.
pub struct Faulty {
    inner: Box<dyn Limiter>,
    /// Sorted and disjoint.
    outages: Vec<(Nanos, Nanos)>,
    /// The first outage that has not ended yet (calls come in time order).
    next_outage: usize,
    error_rate: f64,
    rng: SimRng,
}

impl Faulty {
    /// The fault injected at `now`, if any.
    fn fault(&mut self, now: Nanos) -> Option<Status> {
        while self
            .outages
            .get(self.next_outage)
            .is_some_and(|&(_, end)| end <= now)
        {
            self.next_outage += 1;
        }
        if self
            .outages
            .get(self.next_outage)
            .is_some_and(|&(start, _)| start <= now)
        {
            return Some(Status::Unavailable);
        }
        (self.error_rate > 0.0 && self.rng.random_bool(self.error_rate)).then_some(Status::Error)
    }
}

fn fault_answer(status: Status) -> Decision {
    Decision {
        status,
        remaining: 0,
        limit: 0,
        retry_after: None,
        reset: 0,
        window: 0,
    }
}

impl Limiter for Faulty {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        match self.fault(now) {
            Some(status) => fault_answer(status),
            None => self.inner.admit(now, key),
        }
    }

    fn admit_from(&mut self, now: Nanos, key: usize, client: usize) -> Decision {
        match self.fault(now) {
            Some(status) => fault_answer(status),
            None => self.inner.admit_from(now, key, client),
        }
    }

    /// A fault is answered at once; what reaches the rule is held as the rule says.
    fn admit_held(&mut self, now: Nanos, key: usize, client: usize) -> Held {
        match self.fault(now) {
            Some(status) => Held::now(fault_answer(status)),
            None => self.inner.admit_held(now, key, client),
        }
    }

    fn reads_first(&self) -> bool {
        self.inner.reads_first()
    }

    /// A read is not a request the faults apply to: it always reaches the rule.
    fn read(&mut self, now: Nanos, key: usize, client: usize) {
        self.inner.read(now, key, client);
    }

    /// Only requests the rule admitted are released, and faults never reach the rule.
    fn release(&mut self, now: Nanos, key: usize) {
        self.inner.release(now, key);
    }

    /// What the rule could give outside the outages; random 500s take nothing from it.
    fn capacity(&self, duration: Nanos) -> f64 {
        self.inner.capacity_with_outages(duration, &self.outages)
    }

    fn rate_per_sec(&self) -> f64 {
        self.inner.rate_per_sec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::{Concurrency, ConcurrencyConfig, Gcra, GcraConfig};
    use crate::rng::test_rng;
    use proptest::prelude::*;

    const S: Nanos = crate::time::NANOS_PER_SEC;

    fn d(s: u64) -> HumanDuration {
        HumanDuration::from_secs(s)
    }

    fn gcra(limit: u64, period_s: u64) -> Box<dyn Limiter> {
        Box::new(Gcra::new(&GcraConfig {
            limit,
            period: d(period_s),
            initial: None,
            ..Default::default()
        }))
    }

    fn faults(outages: &[[u64; 2]], error_rate: f64) -> FaultConfig {
        FaultConfig {
            outages: outages.iter().map(|&[s, e]| [d(s), d(e)]).collect(),
            error_rate,
        }
    }

    #[test]
    fn an_outage_answers_503_without_headers_and_takes_no_token() {
        let mut l = faults(&[[10, 20]], 0.0).wrap(gcra(1, 100), test_rng());
        let x = l.admit(10 * S, 0);
        assert_eq!(x.status, Status::Unavailable);
        assert_eq!((x.limit, x.retry_after), (0, None));
        assert_eq!(l.admit(20 * S - 1, 0).status, Status::Unavailable);
        // The end is open: at 20 s the rule answers, and its one token is still there.
        let x = l.admit(20 * S, 0);
        assert_eq!((x.status, x.limit), (Status::Ok, 1));
        assert_eq!(l.admit(20 * S, 0).status, Status::Limited);
    }

    #[test]
    fn touching_windows_are_one_outage_and_order_does_not_matter() {
        let cfg = faults(&[[30, 40], [10, 20], [20, 30]], 0.0);
        assert!(cfg.problems(d(60)).is_empty());
        assert_eq!(cfg.windows(), [(10 * S, 40 * S)]);
        let mut l = cfg.wrap(gcra(100, 1), test_rng());
        for t in [10, 20, 25, 30, 39] {
            assert_eq!(l.admit(t * S, 0).status, Status::Unavailable, "{t}");
        }
        assert_eq!(l.admit(40 * S, 0).status, Status::Ok);
    }

    #[test]
    fn bad_windows_and_rates_are_named() {
        let cfg = faults(&[[5, 5], [10, 30], [20, 40], [50, 70]], 1.5);
        let p = cfg.problems(d(60));
        let got: Vec<_> = p.iter().map(|p| (p.field, p.index)).collect();
        assert_eq!(
            got,
            [
                ("outages", Some(0)),
                ("outages", Some(2)),
                ("outages", Some(3)),
                ("error_rate", None)
            ]
        );
        assert!(
            p[0].message.contains("not before its end"),
            "{}",
            p[0].message
        );
        assert!(
            p[1].message.contains("overlaps outages[1]"),
            "{}",
            p[1].message
        );
        assert!(
            p[2].message.contains("after the end of the run (1m)"),
            "{}",
            p[2].message
        );
        assert!(faults(&[], f64::NAN).problems(d(60)).len() == 1);
        assert!(faults(&[], 1.0).problems(d(60)).is_empty());
    }

    #[test]
    fn no_faults_means_the_rule_itself() {
        let mut l = FaultConfig::default().wrap(gcra(2, 1), test_rng());
        assert_eq!(l.admit(0, 0).limit, 2);
        assert!((l.capacity(10 * S) - 22.0).abs() < 1e-9);
    }

    #[test]
    fn errors_come_at_the_chosen_rate_take_no_token_and_repeat_with_the_seed() {
        let run = |rng| {
            let mut l = faults(&[], 0.25).wrap(gcra(1_000_000, 1), rng);
            (0..20_000)
                .map(|i| l.admit(i * S / 1000, 0).status)
                .collect::<Vec<_>>()
        };
        let a = run(test_rng());
        let errors = a.iter().filter(|&&s| s == Status::Error).count();
        assert!((4_600..5_400).contains(&errors), "{errors}");
        assert!(a.iter().all(|&s| s == Status::Ok || s == Status::Error));
        assert_eq!(a, run(test_rng()));
        // Every request is a 500 at rate 1, and the bucket is untouched.
        let mut l = faults(&[], 1.0).wrap(gcra(1, 100), test_rng());
        assert!((0..50).all(|_| l.admit(0, 0).status == Status::Error));
    }

    #[test]
    fn faults_never_take_or_free_a_concurrency_slot() {
        let inner = Box::new(Concurrency::new(&ConcurrencyConfig { max_in_flight: 1 }));
        let mut l = faults(&[[1, 2]], 0.0).wrap(inner, test_rng());
        assert_eq!(l.admit(0, 0).status, Status::Ok);
        assert_eq!(l.admit(S, 0).status, Status::Unavailable);
        assert_eq!(l.admit(2 * S, 0).status, Status::Limited);
        l.release(2 * S, 0);
        assert_eq!(l.admit(2 * S, 0).status, Status::Ok);
    }

    #[test]
    fn capacity_leaves_out_what_outages_withhold() {
        // 60 per minute, full at start: a 2-minute outage collects 120, the bucket keeps 60.
        let l = faults(&[[120, 240]], 0.3).wrap(gcra(60, 60), test_rng());
        assert!((l.capacity(600 * S) - (660.0 - 60.0)).abs() < 1e-6);
        assert!((l.rate_per_sec() - 1.0).abs() < 1e-12);
    }

    proptest! {
        /// Nothing is admitted inside an outage, whatever the rule and the times.
        #[test]
        fn nothing_is_admitted_during_an_outage(
            start in 0u64..100,
            len in 1u64..100,
            gaps in proptest::collection::vec(0u64..3 * S, 1..200),
        ) {
            let (s, e) = (start * S, (start + len) * S);
            let mut l = faults(&[[start, start + len]], 0.0).wrap(gcra(1000, 1), test_rng());
            let mut now = 0;
            for gap in gaps {
                now += gap;
                let status = l.admit(now, 0).status;
                prop_assert_eq!(status == Status::Unavailable, (s..e).contains(&now));
            }
        }
    }
}
