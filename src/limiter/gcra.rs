//! `gcra`: the Generic Cell Rate Algorithm as Heroku's API applies it (the Heroku GCRA demo
//! server): a bucket of `limit` tokens refilled continuously at `limit` per `period`; each admitted
//! request takes one token; a request that finds less than one whole token gets 429 and takes
//! nothing.
//!
//! Two options, off by default, make it the Heroku GCRA demo server itself (server/config.ru in the
//! rate_throttle_clients repository), which is not the textbook rule: it takes a token
//! *before* deciding, so a refused request costs one too and the level can fall below zero
//! (`refused_cost = 1`), and it refuses when the whole tokens left after taking would be 0 or
//! less, so the last token is never granted (`keep_last = true`). Clients that keep sending
//! while refused then dig the bucket deeper and wait longer for it to refill
//! (`scenarios/heroku_5x5_demo_server.toml`).
//!
//! `refill = false` turns it into a stock that only decreases (the rate_throttle_client gem's
//! "time to clear" benchmark); a refusal then has no `Retry-After`.
//!
//! The level is kept in exact integer units (one token = `period` in nanoseconds, refill =
//! `limit` units per nanosecond), so no rounding drift can ever admit one request too many.

use serde::{Deserialize, Serialize};

use super::{Decision, Limiter, Rule};
use crate::config::{ParamProblem, check_quota};
use crate::exchange::Status;
use crate::time::{HumanDuration, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GcraConfig {
    /// Tokens per period, and the bucket's size. Default 4500.
    pub limit: u64,
    /// Default 1 h.
    pub period: HumanDuration,
    /// Tokens in the bucket at t = 0. Default: full (`limit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial: Option<u64>,
    /// `false`: the bucket is never refilled, it only decreases (the rate_throttle_client
    /// gem's "time to clear" benchmark drains a fixed stock). Default true.
    pub refill: bool,
    /// Tokens a refused request takes (the demo server's 1): the level may go below zero, and
    /// a client that keeps asking keeps it there. Default 0.
    pub refused_cost: u64,
    /// Never grant the last token: admit only when at least one whole token is left after
    /// taking (the demo server). Default false.
    pub keep_last: bool,
}

impl Default for GcraConfig {
    fn default() -> Self {
        GcraConfig {
            limit: 4500,
            period: HumanDuration::from_secs(3600),
            initial: None,
            refill: true,
            refused_cost: 0,
            keep_last: false,
        }
    }
}

impl GcraConfig {
    pub fn initial_tokens(&self) -> u64 {
        self.initial.unwrap_or(self.limit)
    }
}

impl Rule for GcraConfig {
    const NAME: &'static str = "gcra";
    const DESCRIPTION: &'static str = "Heroku-style GCRA: `limit` per `period`, refilled continuously (the Heroku GCRA demo server; `refused_cost = 1`, `keep_last = true`: its demo server)";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_quota(
            &mut out,
            ("limit", self.limit, "request per period"),
            ("period", self.period),
        );
        if self.refused_cost > self.limit {
            out.push((
                "refused_cost",
                format!(
                    "must be at most limit ({}) (got {})",
                    self.limit, self.refused_cost
                ),
            ));
        }
        if let Some(i) = self.initial
            && i > self.limit
        {
            out.push((
                "initial",
                format!("must be at most limit ({}) (got {i})", self.limit),
            ));
        }
        out
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(Gcra::new(self))
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Below zero only with `refused_cost`.
    level: i128,
    updated: Nanos,
}

pub struct Gcra {
    limit: u64,
    /// Units per token.
    token: u128,
    capacity: u128,
    initial: u128,
    refill: bool,
    /// Units a request needs to be admitted: one token, or two with `keep_last`.
    need: i128,
    refused_cost: i128,
    buckets: Vec<Bucket>,
}

impl Gcra {
    pub fn new(cfg: &GcraConfig) -> Self {
        let token = u128::from(cfg.period.nanos().max(1));
        let limit = cfg.limit.max(1);
        Gcra {
            limit,
            token,
            capacity: u128::from(limit) * token,
            initial: u128::from(cfg.initial_tokens().min(limit)) * token,
            refill: cfg.refill,
            need: token as i128 * if cfg.keep_last { 2 } else { 1 },
            refused_cost: i128::from(cfg.refused_cost.min(limit)) * token as i128,
            buckets: Vec::new(),
        }
    }

    fn bucket(&mut self, key: usize) -> &mut Bucket {
        if key >= self.buckets.len() {
            let fresh = Bucket {
                level: self.initial as i128,
                updated: 0,
            };
            self.buckets.resize(key + 1, fresh);
        }
        &mut self.buckets[key]
    }

    fn whole_tokens(&self, level: i128) -> u64 {
        let level = level.max(0) as u128;
        // Fast path: both fit in 64 bits for every realistic limit.
        match (u64::try_from(level), u64::try_from(self.token)) {
            (Ok(l), Ok(t)) => l / t,
            _ => (level / self.token) as u64,
        }
    }
}

impl Limiter for Gcra {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        let (limit, token, capacity, refill) = (
            self.limit,
            self.token as i128,
            self.capacity as i128,
            self.refill,
        );
        let (need, refused_cost) = (self.need, self.refused_cost);
        let b = self.bucket(key);
        if refill && now > b.updated {
            let refill = i128::from(now - b.updated) * i128::from(limit);
            b.level = (b.level + refill).min(capacity);
            b.updated = now;
        }
        let (status, retry_after) = if b.level >= need {
            b.level -= token;
            (Status::Ok, None)
        } else if !refill {
            b.level -= refused_cost;
            // Nothing will ever come back: no time to name.
            (Status::Limited, None)
        } else {
            b.level -= refused_cost;
            let missing = (need - b.level) as u128;
            let wait = missing.div_ceil(u128::from(limit));
            (
                Status::Limited,
                Some(u64::try_from(wait).unwrap_or(u64::MAX)),
            )
        };
        let level = b.level;
        let missing = (capacity - level).max(0) as u128;
        let reset = if refill {
            u64::try_from(missing.div_ceil(u128::from(limit))).unwrap_or(u64::MAX)
        } else {
            0
        };
        Decision {
            status,
            remaining: self.whole_tokens(level),
            limit,
            retry_after,
            reset,
            window: u64::try_from(token).unwrap_or(u64::MAX),
        }
    }

    fn rate_per_sec(&self) -> f64 {
        self.limit as f64 * crate::time::NANOS_PER_SEC as f64 / self.token as f64
    }

    fn capacity(&self, duration: Nanos) -> f64 {
        let initial = self.initial as f64 / self.token as f64;
        if !self.refill {
            return initial;
        }
        initial + self.limit as f64 * duration as f64 / self.token as f64
    }

    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        let token = self.token as f64;
        if !self.refill {
            // Outages only delay taking the stock, unless one lasts to the end.
            return if closed.iter().any(|&(a, b)| a == 0 && b >= duration) {
                0.0
            } else {
                self.initial as f64 / token
            };
        }
        super::token_bucket::bucket_capacity_with_outages(
            self.initial as f64 / token,
            self.limit as f64,
            self.limit as f64 / token,
            duration,
            closed,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NANOS_PER_SEC;
    use proptest::prelude::*;

    fn gcra(limit: u64, period_s: u64, initial: u64) -> Gcra {
        Gcra::new(&GcraConfig {
            limit,
            period: HumanDuration::from_secs(period_s),
            initial: Some(initial),
            ..Default::default()
        })
    }

    #[test]
    fn admits_the_initial_tokens_then_refuses() {
        let mut g = gcra(4500, 3600, 3);
        let d: Vec<_> = (0..4).map(|_| g.admit(0, 0)).collect();
        assert_eq!(d[0].remaining, 2);
        assert_eq!(d[2].status, Status::Ok);
        assert_eq!(d[2].remaining, 0);
        assert_eq!(d[3].status, Status::Limited);
        assert_eq!(d[3].limit, 4500);
        // 4500 per hour: one token every 0.8 s, and none has refilled yet.
        assert_eq!(d[3].retry_after, Some(800_000_000));
    }

    #[test]
    fn refills_continuously_and_reports_retry_after() {
        let mut g = gcra(4500, 3600, 0);
        assert_eq!(g.admit(0, 0).status, Status::Limited);
        let d = g.admit(300_000_000, 0);
        assert_eq!(d.status, Status::Limited);
        assert_eq!(d.retry_after, Some(500_000_000));
        let d = g.admit(800_000_000, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 0));
        // A refusal takes nothing: after 0.8 s more there is exactly one token again.
        assert_eq!(g.admit(900_000_000, 0).status, Status::Limited);
        assert_eq!(g.admit(1_600_000_000, 0).status, Status::Ok);
    }

    #[test]
    fn refill_is_capped_at_the_limit() {
        let mut g = gcra(10, 10, 0);
        let d = g.admit(1000 * NANOS_PER_SEC, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 9));
    }

    #[test]
    fn without_refill_the_bucket_only_decreases() {
        let mut g = Gcra::new(&GcraConfig {
            limit: 10,
            period: HumanDuration::from_secs(10),
            initial: Some(3),
            refill: false,
            ..Default::default()
        });
        let oks = (0..10)
            .filter(|&i| g.admit(i * 1000 * NANOS_PER_SEC, 0).status == Status::Ok)
            .count();
        assert_eq!(oks, 3, "three tokens, and 9000 s of waiting adds none");
        let d = g.admit(100_000 * NANOS_PER_SEC, 0);
        assert_eq!(
            (d.status, d.remaining, d.retry_after),
            (Status::Limited, 0, None)
        );
        assert_eq!(g.capacity(100_000 * NANOS_PER_SEC), 3.0);
    }

    fn demo(limit: u64, period_s: u64, initial: u64, refused_cost: u64, keep_last: bool) -> Gcra {
        Gcra::new(&GcraConfig {
            limit,
            period: HumanDuration::from_secs(period_s),
            initial: Some(initial),
            refused_cost,
            keep_last,
            ..Default::default()
        })
    }

    #[test]
    fn keep_last_never_grants_the_last_token() {
        // 3 tokens: the demo server admits while at least one whole token is left after
        // taking, so 2 pass and the third (which would leave 0) is refused.
        let mut g = demo(3600, 3600, 3, 0, true);
        let d: Vec<_> = (0..3).map(|_| g.admit(0, 0)).collect();
        assert_eq!(d[0].status, Status::Ok);
        assert_eq!((d[1].status, d[1].remaining), (Status::Ok, 1));
        assert_eq!(d[2].status, Status::Limited);
        // One token left, two needed: one more second at one token per second.
        assert_eq!(d[2].retry_after, Some(NANOS_PER_SEC));
        assert_eq!(g.admit(NANOS_PER_SEC, 0).status, Status::Ok);
    }

    #[test]
    fn a_refused_request_costs_a_token_and_digs_below_zero() {
        // One token per second, 1 in the bucket, refusals cost one, last token kept (the demo
        // server). At 0: level 1 < 2, refused, level 0. Four more refusals at 0 take it to −4.
        let mut g = demo(3600, 3600, 1, 1, true);
        for _ in 0..5 {
            assert_eq!(g.admit(0, 0).status, Status::Limited);
        }
        // At 5 s the level is −4 + 5 = 1: still refused (now 0), and it says 2 s more.
        let d = g.admit(5 * NANOS_PER_SEC, 0);
        assert_eq!((d.status, d.remaining), (Status::Limited, 0));
        assert_eq!(d.retry_after, Some(2 * NANOS_PER_SEC));
        // At 7 s: level 2, admitted, 1 left.
        let d = g.admit(7 * NANOS_PER_SEC, 0);
        assert_eq!((d.status, d.remaining), (Status::Ok, 1));
        // The textbook rule would have admitted at 0 already.
        assert_eq!(demo(3600, 3600, 1, 0, false).admit(0, 0).status, Status::Ok);
    }

    #[test]
    fn keys_have_their_own_buckets() {
        let mut g = gcra(10, 10, 1);
        assert_eq!(g.admit(0, 0).status, Status::Ok);
        assert_eq!(g.admit(0, 0).status, Status::Limited);
        assert_eq!(g.admit(0, 3).status, Status::Ok);
    }

    #[test]
    fn capacity_is_initial_plus_refill() {
        let g = gcra(4500, 3600, 500);
        assert!((g.rate_per_sec() - 1.25).abs() < 1e-12);
        assert!((g.capacity(5 * 3600 * NANOS_PER_SEC) - 23_000.0).abs() < 1e-6);
    }

    #[test]
    fn an_outage_longer_than_the_bucket_spills_the_rest() {
        // 60 per minute: a 90 s outage collects 90 tokens, the bucket keeps 60.
        let g = gcra(60, 60, 60);
        let c = g.capacity_with_outages(
            600 * NANOS_PER_SEC,
            &[(60 * NANOS_PER_SEC, 150 * NANOS_PER_SEC)],
        );
        assert!((c - (660.0 - 30.0)).abs() < 1e-6, "{c}");
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = GcraConfig {
            limit: 0,
            period: HumanDuration(0),
            initial: Some(5),
            ..Default::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["limit", "period", "initial"]);
        let cfg = GcraConfig {
            limit: 10,
            refused_cost: 11,
            ..Default::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["refused_cost"]);
    }

    proptest! {
        /// By any time t the GCRA has admitted at most `initial + limit × t / period`.
        #[test]
        fn never_admits_more_than_initial_plus_refill(
            limit in 1u64..10_000,
            period_ms in 1u64..10_000_000,
            initial_frac in 0.0f64..=1.0,
            gaps in proptest::collection::vec(0u64..2_000_000_000, 1..400),
        ) {
            let initial = (limit as f64 * initial_frac) as u64;
            let mut g = Gcra::new(&GcraConfig {
                limit,
                period: HumanDuration::from_millis(period_ms),
                initial: Some(initial),
                ..Default::default()
            });
            let period = u128::from(period_ms) * 1_000_000;
            let (mut now, mut admitted) = (0u64, 0u128);
            for gap in gaps {
                now += gap;
                if g.admit(now, 0).status == Status::Ok {
                    admitted += 1;
                }
                // admitted ≤ initial + limit × now / period, in exact integers.
                prop_assert!(admitted * period <= u128::from(initial) * period + u128::from(limit) * u128::from(now));
            }
        }
    }
}
