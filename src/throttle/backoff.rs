//! `backoff`: Keen's full-jitter retry, the retry policy proposed for an SDK's ad-hoc queries
//! (docs/sources.md), with the four delay formulas of the AWS Architecture Blog's "Exponential
//! Backoff And Jitter" (Marc Brooker, 2015), which the proposal cites as [1].
//!
//! As the proposal says, failures are recorded per key (Keen's project; in the sim a
//! process uses one key, so its threads share the record): a 429 or a 503 adds one to its kind's
//! count and stamps the time of the most recent failure; a success clears both. Before each
//! request the record is looked up, 503s first ("prioritizing 503 codes"), and the request is
//! delayed until `delay` after the most recent failure of that kind, unless that has already
//! passed. With `f` failures and `exp = min(cap, base × 2^(f − 1))`, each request draws:
//!
//! ```text
//! none          delay = exp
//! full          delay = random(0, exp)                     (the proposal's choice)
//! equal         delay = exp / 2 + random(0, exp / 2)
//! decorrelated  delay = min(cap, random(base, 3 × previous))
//! ```
//!
//! where `previous` is the delay the last failed request had waited (at least `base`).
//! Without failures nothing is delayed: the client sends as soon as it wants to.
//!
//! How `base` maps onto the usual formulas. The post writes its exponential ones as
//! `min(cap, base_post × 2^attempt)`; its simulator counts `attempt` from 1 at the first
//! failure, so the first delay is `2 × base_post`. Here the first delay of `none`, `full` and
//! `equal` is `base` itself (`base × 2^(failures − 1)`), so `base = 2 × base_post`. Decorrelated
//! jitter uses `base` as the lower bound of every draw and the first `previous`, exactly as the
//! post's `base`, so there `base = base_post`. Worked example, the post's settings (base 5 ms,
//! cap 2 s; `scenarios/occ_contention.toml`): `jitter = "none"`, `"full"` or `"equal"` with
//! `base = "10ms"`, `cap = "2s"` (delays 10, 20, 40 ms … up to 2 s, jittered as the formula
//! says); `jitter = "decorrelated"` with `base = "5ms"`, `cap = "2s"` (the first delay random
//! in 5-15 ms).

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs};

/// The AWS blog's four ways of choosing a delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Jitter {
    /// Plain capped exponential backoff.
    None,
    /// `random(0, exp)`: Keen's full-jitter formula.
    #[default]
    Full,
    /// Half fixed, half random.
    Equal,
    /// Each delay random between `base` and three times the previous.
    Decorrelated,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackoffConfig {
    /// `full` (default, the proposal's), `none`, `equal` or `decorrelated`.
    pub jitter: Jitter,
    /// `base_delay`. Default 30 s ("a base_delay of 30 seconds could make sense").
    pub base: HumanDuration,
    /// `max_delay`, the cap. The proposal leaves it open; default 1 h, the window of the
    /// implementation it replaces.
    pub cap: HumanDuration,
    /// Record 503s like 429s, and look them up first. Default true (as proposed);
    /// off, 503s are ignored.
    pub count_503: bool,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            jitter: Jitter::Full,
            base: HumanDuration::from_secs(30),
            cap: HumanDuration::from_secs(3600),
            count_503: true,
        }
    }
}

impl BackoffConfig {
    pub fn build(&self, ctx: BuildContext) -> Backoff {
        Backoff {
            cfg: self.clone(),
            limited: Record::new(self.base.secs()),
            unavailable: Record::new(self.base.secs()),
            drawn: vec![0.0; ctx.threads.max(1)],
            recorded: 0,
        }
    }
}

impl Algorithm for BackoffConfig {
    const NAME: &'static str = "backoff";
    const DESCRIPTION: &'static str = "Keen's full-jitter retry: per-key backoff after 429/503 (503 first), full/equal/decorrelated/no jitter";
    const NOTES: &'static [&'static str] = &[
        "none/full/equal: exp = min(cap, base × 2^(failures − 1)), so the first delay's ceiling is base;",
        "  none waits exp, full random(0, exp), equal exp/2 + random(0, exp/2).",
        "decorrelated: min(cap, random(base, 3 × previous)), base the lower bound and first previous.",
        "The AWS post's min(cap, b × 2^attempt) counts attempt from 1, so its b = 5 ms, cap = 2 s is",
        "  base = \"10ms\" for none/full/equal and base = \"5ms\" for decorrelated (cap = \"2s\").",
    ];

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_positive(&mut out, "base", self.base.secs());
        if self.cap < self.base {
            out.push((
                "cap",
                format!("must be at least base ({}) (got {})", self.base, self.cap),
            ));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

/// One kind's failures for the key.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Record {
    failures: u32,
    last_failure: Nanos,
    /// Decorrelated jitter's previous delay, seconds.
    previous: f64,
}

impl Record {
    fn new(base: f64) -> Self {
        Record {
            failures: 0,
            last_failure: 0,
            previous: base,
        }
    }
}

pub struct Backoff {
    cfg: BackoffConfig,
    limited: Record,
    unavailable: Record,
    /// Per thread: the delay its pending request drew, seconds.
    drawn: Vec<f64>,
    recorded: u64,
}

impl Backoff {
    /// `min(cap, base × 2^(failures − 1))`, seconds; 0 without failures.
    pub fn ceiling(&self, failures: u32) -> f64 {
        if failures == 0 {
            return 0.0;
        }
        let doublings = (failures - 1).min(1024) as i32;
        (self.cfg.base.secs() * 2f64.powi(doublings)).min(self.cfg.cap.secs())
    }

    /// The record a request looks up: 503s first.
    fn record(&self) -> Option<&Record> {
        if self.cfg.count_503 && self.unavailable.failures > 0 {
            Some(&self.unavailable)
        } else if self.limited.failures > 0 {
            Some(&self.limited)
        } else {
            None
        }
    }

    /// One draw of the delay after `failures` failures, seconds.
    pub fn draw(&self, failures: u32, previous: f64, rng: &mut SimRng) -> f64 {
        let exp = self.ceiling(failures);
        let uniform = |rng: &mut SimRng, lo: f64, hi: f64| {
            if hi > lo {
                rng.random_range(lo..=hi)
            } else {
                lo
            }
        };
        match self.cfg.jitter {
            Jitter::None => exp,
            Jitter::Full => uniform(rng, 0.0, exp),
            Jitter::Equal => exp / 2.0 + uniform(rng, 0.0, exp / 2.0),
            Jitter::Decorrelated => {
                let base = self.cfg.base.secs();
                uniform(rng, base, 3.0 * previous.max(base)).min(self.cfg.cap.secs())
            }
        }
    }
}

impl Throttle for Backoff {
    fn delay(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        let Some(&record) = self.record() else {
            self.drawn[thread] = 0.0;
            return 0;
        };
        let d = self.draw(record.failures, record.previous, rng);
        self.drawn[thread] = d;
        record
            .last_failure
            .saturating_add(from_secs(d))
            .saturating_sub(now)
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        let base = self.cfg.base.secs();
        let record = match response.status {
            Status::Ok => {
                self.limited = Record::new(base);
                self.unavailable = Record::new(base);
                return;
            }
            Status::Limited => &mut self.limited,
            Status::Unavailable if self.cfg.count_503 => &mut self.unavailable,
            Status::Unavailable | Status::Error => return,
        };
        record.failures = record.failures.saturating_add(1);
        record.last_failure = now;
        record.previous = self.drawn[thread].max(base);
        self.recorded += 1;
    }

    /// The un-jittered ceiling of the record a request would look up, seconds.
    fn sleep_value(&self) -> f64 {
        self.record().map_or(0.0, |r| self.ceiling(r.failures))
    }

    /// Failures recorded.
    fn backoffs(&self) -> u64 {
        self.recorded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn build(jitter: Jitter) -> Backoff {
        BackoffConfig {
            jitter,
            base: HumanDuration::from_secs(30),
            cap: HumanDuration::from_secs(300),
            count_503: true,
        }
        .build(BuildContext::solo(2))
    }

    #[test]
    fn the_ceiling_doubles_from_base_up_to_the_cap() {
        let b = build(Jitter::None);
        let got: Vec<f64> = (0..7).map(|f| b.ceiling(f)).collect();
        assert_eq!(got, [0.0, 30.0, 60.0, 120.0, 240.0, 300.0, 300.0]);
        assert_eq!(b.ceiling(u32::MAX), 300.0);
    }

    #[test]
    fn each_jitter_draws_within_its_range() {
        let mut rng = test_rng();
        for _ in 0..2000 {
            // Three failures: exp = min(300, 30 × 4) = 120.
            assert_eq!(build(Jitter::None).draw(3, 30.0, &mut rng), 120.0);
            let full = build(Jitter::Full).draw(3, 30.0, &mut rng);
            assert!((0.0..=120.0).contains(&full));
            let equal = build(Jitter::Equal).draw(3, 30.0, &mut rng);
            assert!((60.0..=120.0).contains(&equal));
            let dec = build(Jitter::Decorrelated).draw(3, 50.0, &mut rng);
            assert!((30.0..=150.0).contains(&dec));
            assert!(build(Jitter::Decorrelated).draw(9, 200.0, &mut rng) <= 300.0);
        }
        // Full jitter spreads over the whole range.
        let b = build(Jitter::Full);
        let draws: Vec<f64> = (0..2000).map(|_| b.draw(3, 30.0, &mut rng)).collect();
        assert!(draws.iter().any(|&d| d < 10.0) && draws.iter().any(|&d| d > 110.0));
    }

    #[test]
    fn a_request_waits_from_the_last_failure_unless_that_has_passed() {
        let mut b = build(Jitter::None);
        let mut rng = test_rng();
        assert_eq!(b.delay(0, 0, &mut rng), 0);
        b.on_response(100 * S, 0, &Response::bare(Status::Limited), &mut rng);
        // One failure: 30 s after it, whoever asks.
        assert_eq!(b.delay(100 * S, 0, &mut rng), 30 * S);
        assert_eq!(b.delay(110 * S, 1, &mut rng), 20 * S);
        assert_eq!(b.delay(140 * S, 1, &mut rng), 0);
        b.on_response(130 * S, 0, &Response::bare(Status::Limited), &mut rng);
        assert_eq!(b.delay(130 * S, 0, &mut rng), 60 * S);
        b.on_response(200 * S, 0, &Response::bare(Status::Ok), &mut rng);
        assert_eq!(b.delay(200 * S, 0, &mut rng), 0);
        assert_eq!(b.backoffs(), 2);
    }

    #[test]
    fn service_unavailable_is_recorded_apart_and_looked_up_first() {
        let mut b = build(Jitter::None);
        let mut rng = test_rng();
        for t in [10, 20, 30] {
            b.on_response(t * S, 0, &Response::bare(Status::Limited), &mut rng);
        }
        b.on_response(40 * S, 1, &Response::bare(Status::Unavailable), &mut rng);
        // The 503 record (one failure, at 40 s) wins over three 429s.
        assert_eq!(b.delay(40 * S, 0, &mut rng), 30 * S);
        assert_eq!(b.sleep_value(), 30.0);
        // A success clears both.
        b.on_response(50 * S, 0, &Response::bare(Status::Ok), &mut rng);
        assert_eq!(b.sleep_value(), 0.0);
        // Without count_503, 503s are ignored.
        let mut ignoring = BackoffConfig {
            count_503: false,
            ..BackoffConfig::default()
        }
        .build(BuildContext::solo(1));
        ignoring.on_response(S, 0, &Response::bare(Status::Unavailable), &mut rng);
        assert_eq!(ignoring.delay(S, 0, &mut rng), 0);
        ignoring.on_response(S, 0, &Response::bare(Status::Error), &mut rng);
        assert_eq!(ignoring.backoffs(), 0);
    }

    #[test]
    fn decorrelated_grows_from_the_delay_the_failed_request_waited() {
        let mut b = build(Jitter::Decorrelated);
        let mut rng = test_rng();
        b.on_response(0, 0, &Response::bare(Status::Limited), &mut rng);
        assert_eq!(b.limited.previous, 30.0);
        let first = b.delay(0, 0, &mut rng);
        assert!((30 * S..=90 * S).contains(&first));
        b.on_response(first, 0, &Response::bare(Status::Limited), &mut rng);
        assert!((b.limited.previous - crate::time::secs(first)).abs() < 1e-6);
    }

    #[test]
    fn a_cap_below_base_is_refused() {
        let cfg = BackoffConfig {
            cap: HumanDuration::from_secs(1),
            ..BackoffConfig::default()
        };
        assert_eq!(cfg.problems()[0].0, "cap");
    }
}
