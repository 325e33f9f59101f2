//! `token-bucket`: the classic token bucket, as API gateways configure it (e.g. Amazon API
//! Gateway's throttling: a steady "rate" and a separate "burst"). The bucket holds at most
//! `burst` tokens and is refilled continuously at `rate` tokens per `period`; each admitted
//! request takes one token; a request that finds less than one whole token gets 429 and takes
//! nothing, with `Retry-After` the time until one whole token is there.
//!
//! It is `gcra` with the bucket's size set apart from the rate: `gcra` is this rule with
//! `burst = limit`. A small burst forces clients to space their requests evenly; a large one
//! lets them save up.
//!
//! Parameters and defaults (the default `gcra`'s sustained rate, and the Heroku GCRA demo's run's
//! 500 tokens as the burst):
//! - `rate`: tokens added per `period`. Default 4500.
//! - `period`: default 1 h.
//! - `burst`: the bucket's size, the most requests admitted at one instant. Default 500.
//! - `initial`: tokens at t = 0. Default: full (`burst`).
//! - `refill`: `false` makes a bucket that only decreases (a fixed stock to drain). Default
//!   true.
//!
//! `RateLimit-Limit` is `burst` (the most a key can have), `RateLimit-Remaining` the whole
//! tokens left. The level is kept in exact integer units, one token = `period` in nanoseconds,
//! refilled by `rate` units per nanosecond, so rounding can never admit a request too many.

use serde::{Deserialize, Serialize};

use super::{Decision, Limiter, Rule};
use crate::config::{ParamProblem, check_quota};
use crate::exchange::Status;
use crate::time::{HumanDuration, NANOS_PER_SEC, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenBucketConfig {
    /// Tokens per period. Default 4500.
    pub rate: u64,
    /// Default 1 h.
    pub period: HumanDuration,
    /// The bucket's size. Default 500.
    pub burst: u64,
    /// Tokens in the bucket at t = 0. Default: full (`burst`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial: Option<u64>,
    /// `false`: the bucket is never refilled, it only decreases. Default true.
    pub refill: bool,
}

impl Default for TokenBucketConfig {
    fn default() -> Self {
        TokenBucketConfig {
            rate: 4500,
            period: HumanDuration::from_secs(3600),
            burst: 500,
            initial: None,
            refill: true,
        }
    }
}

impl TokenBucketConfig {
    pub fn initial_tokens(&self) -> u64 {
        self.initial.unwrap_or(self.burst)
    }
}

impl Rule for TokenBucketConfig {
    const NAME: &'static str = "token-bucket";
    const DESCRIPTION: &'static str = "token bucket: `rate` tokens per `period` into a bucket of `burst` (API gateways' rate and burst)";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_quota(
            &mut out,
            ("rate", self.rate, "token per period"),
            ("period", self.period),
        );
        if self.burst == 0 {
            out.push(("burst", "must be at least 1 token".to_string()));
        }
        if let Some(i) = self.initial
            && i > self.burst
        {
            out.push((
                "initial",
                format!("must be at most burst ({}) (got {i})", self.burst),
            ));
        }
        out
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(TokenBucket::new(self))
    }
}

#[derive(Clone, Copy, Debug)]
struct Level {
    units: u128,
    updated: Nanos,
}

pub struct TokenBucket {
    rate: u64,
    burst: u64,
    /// Units per token: the period in nanoseconds.
    token: u128,
    initial: u128,
    refill: bool,
    buckets: Vec<Level>,
}

impl TokenBucket {
    pub fn new(cfg: &TokenBucketConfig) -> Self {
        let burst = cfg.burst.max(1);
        let token = u128::from(cfg.period.nanos().max(1));
        TokenBucket {
            rate: cfg.rate.max(1),
            burst,
            token,
            initial: u128::from(cfg.initial_tokens().min(burst)) * token,
            refill: cfg.refill,
            buckets: Vec::new(),
        }
    }
}

impl Limiter for TokenBucket {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        if key >= self.buckets.len() {
            let fresh = Level {
                units: self.initial,
                updated: 0,
            };
            self.buckets.resize(key + 1, fresh);
        }
        let (rate, token) = (self.rate, self.token);
        let capacity = u128::from(self.burst) * token;
        let refill = self.refill;
        let b = &mut self.buckets[key];
        if refill && now > b.updated {
            let refill = u128::from(now - b.updated) * u128::from(rate);
            b.units = (b.units + refill).min(capacity);
            b.updated = now;
        }
        let (status, retry_after) = if b.units >= token {
            b.units -= token;
            (Status::Ok, None)
        } else if !refill {
            (Status::Limited, None)
        } else {
            let wait = (token - b.units).div_ceil(u128::from(rate));
            (
                Status::Limited,
                Some(u64::try_from(wait).unwrap_or(u64::MAX)),
            )
        };
        let (reset, window) = if refill {
            let rate = u128::from(rate);
            ((capacity - b.units).div_ceil(rate), capacity.div_ceil(rate))
        } else {
            (0, 0)
        };
        Decision {
            status,
            remaining: u64::try_from(b.units / token).unwrap_or(u64::MAX),
            limit: self.burst,
            retry_after,
            reset: u64::try_from(reset).unwrap_or(u64::MAX),
            window: u64::try_from(window).unwrap_or(u64::MAX),
        }
    }

    /// `initial + rate × duration / period`: every token that ever enters the bucket.
    fn capacity(&self, duration: Nanos) -> f64 {
        self.capacity_with_outages(duration, &[])
    }

    fn capacity_with_outages(&self, duration: Nanos, closed: &[(Nanos, Nanos)]) -> f64 {
        let token = self.token as f64;
        if !self.refill {
            return if closed.iter().any(|&(a, b)| a == 0 && b >= duration) {
                0.0
            } else {
                self.initial as f64 / token
            };
        }
        bucket_capacity_with_outages(
            self.initial as f64 / token,
            self.burst as f64,
            self.rate as f64 / token,
            duration,
            closed,
        )
    }

    fn rate_per_sec(&self) -> f64 {
        self.rate as f64 * NANOS_PER_SEC as f64 / self.token as f64
    }
}

/// The most a continuously refilled bucket (`initial` tokens at t = 0, at most `burst`,
/// `per_nano` tokens per nanosecond) can give over `[0, duration]` when no token may be taken
/// during the `closed` windows (sorted, disjoint, half-open).
///
/// The best a client can do is take every token as soon as it is there, so the bucket is
/// empty whenever an outage starts (full at t = 0 with `initial`); an outage of length ℓ then
/// loses what overflows, `max(0, start level + per_nano × ℓ − burst)`, and one that lasts to the
/// end loses all it collects.
pub(super) fn bucket_capacity_with_outages(
    initial: f64,
    burst: f64,
    per_nano: f64,
    duration: Nanos,
    closed: &[(Nanos, Nanos)],
) -> f64 {
    let mut lost = 0.0;
    for &(a, b) in closed {
        let b = b.min(duration);
        if a >= b {
            continue;
        }
        let start_level = if a == 0 { initial } else { 0.0 };
        let collected = start_level + per_nano * (b - a) as f64;
        lost += if b >= duration {
            collected
        } else {
            (collected - burst).max(0.0)
        };
    }
    (initial + per_nano * duration as f64 - lost).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: Nanos = NANOS_PER_SEC;

    fn bucket(rate: u64, period_s: u64, burst: u64, initial: u64) -> TokenBucket {
        TokenBucket::new(&TokenBucketConfig {
            rate,
            period: HumanDuration::from_secs(period_s),
            burst,
            initial: Some(initial),
            ..Default::default()
        })
    }

    #[test]
    fn without_refill_the_bucket_only_decreases() {
        let mut b = TokenBucket::new(&TokenBucketConfig {
            rate: 100,
            period: HumanDuration::from_secs(1),
            burst: 5,
            initial: Some(2),
            refill: false,
        });
        let oks = (0..6)
            .filter(|&i| b.admit(i * 60 * S, 0).status == Status::Ok)
            .count();
        assert_eq!(
            oks, 2,
            "two tokens; at 100 per second a refill would have filled it"
        );
        assert_eq!(b.admit(3600 * S, 0).retry_after, None);
        assert_eq!(b.capacity(3600 * S), 2.0);
    }

    #[test]
    fn a_burst_then_one_token_per_interval() {
        // 2 per second, at most 3 at once, full at start.
        let mut b = bucket(2, 1, 3, 3);
        let d: Vec<_> = (0..4).map(|_| b.admit(0, 0)).collect();
        assert_eq!(
            d.iter().map(|d| d.remaining).collect::<Vec<_>>(),
            [2, 1, 0, 0]
        );
        assert_eq!(d[0].limit, 3);
        assert_eq!(d[3].status, Status::Limited);
        assert_eq!(d[3].retry_after, Some(S / 2));
        assert_eq!(b.admit(S / 2, 0).status, Status::Ok);
        let d = b.admit(S / 2 + S / 4, 0);
        assert_eq!((d.status, d.retry_after), (Status::Limited, Some(S / 4)));
    }

    #[test]
    fn the_burst_caps_what_a_quiet_key_saves_up_unlike_gcra() {
        // GCRA with limit 60 per minute would hold 60 after a quiet minute; this holds 5.
        let mut b = bucket(60, 60, 5, 0);
        let ok = (0..20)
            .filter(|_| b.admit(3600 * S, 0).status == Status::Ok)
            .count();
        assert_eq!(ok, 5);
    }

    #[test]
    fn keys_have_their_own_buckets_and_initial_may_be_empty() {
        let mut b = bucket(1, 1, 2, 0);
        assert_eq!(b.admit(0, 0).status, Status::Limited);
        assert_eq!(b.admit(S, 0).status, Status::Ok);
        assert_eq!(b.admit(S, 0).status, Status::Limited);
        assert_eq!(b.admit(S, 4).status, Status::Ok);
    }

    #[test]
    fn capacity_is_initial_plus_refill_minus_what_outages_spill() {
        let b = bucket(4500, 3600, 500, 100);
        assert!((b.rate_per_sec() - 1.25).abs() < 1e-12);
        assert!((b.capacity(3600 * S) - 4600.0).abs() < 1e-6);
        // A 10-minute outage collects 750 tokens; 500 fit, 250 spill.
        let c = b.capacity_with_outages(3600 * S, &[(600 * S, 1200 * S)]);
        assert!((c - 4350.0).abs() < 1e-6, "{c}");
        // An outage at the start spills the initial tokens too, and one to the end loses all.
        let c = b.capacity_with_outages(3600 * S, &[(0, 600 * S)]);
        assert!((c - 4600.0 + 350.0).abs() < 1e-6, "{c}");
        let c = b.capacity_with_outages(3600 * S, &[(3000 * S, 4000 * S)]);
        assert!((c - 4600.0 + 750.0).abs() < 1e-6, "{c}");
    }

    #[test]
    fn a_greedy_client_gets_the_capacity_around_an_outage() {
        // 1 token per second, burst 5, outage [20 s, 40 s): 20 collected, 15 spill.
        let mut b = bucket(1, 1, 5, 5);
        let (d, outage) = (100 * S, (20 * S, 40 * S));
        let step = S / 10;
        let ok = (0..=d / step)
            .map(|i| i * step)
            .filter(|t| !(outage.0..outage.1).contains(t))
            .filter(|&t| b.admit(t, 0).status == Status::Ok)
            .count();
        // 5 at once, 19 more by 19 s, the 5 saved up during the outage at 40 s, 60 more by 100 s;
        // the bound also counts the token still refilling when the outage starts.
        assert_eq!(ok, 90 - 1);
        let c = b.capacity_with_outages(d, &[outage]);
        assert!((c - 90.0).abs() < 1e-9, "{c}");
    }

    #[test]
    fn invalid_parameters_are_named() {
        let cfg = TokenBucketConfig {
            rate: 0,
            period: HumanDuration(0),
            burst: 0,
            initial: Some(1),
            ..Default::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["rate", "period", "burst", "initial"]);
    }

    proptest! {
        /// By any time t, at most `initial + rate × t / period` admitted; and between any two
        /// times s ≤ t, at most `burst + rate × (t − s) / period` (the bucket never holds more
        /// than `burst`). Checked in exact integers.
        #[test]
        fn never_admits_more_than_burst_plus_refill(
            rate in 1u64..1_000,
            period_ms in 1u64..100_000,
            burst in 1u64..50,
            initial_frac in 0.0f64..=1.0,
            gaps in proptest::collection::vec(0u64..200_000_000, 1..300),
        ) {
            let initial = (burst as f64 * initial_frac) as u64;
            let mut b = TokenBucket::new(&TokenBucketConfig {
                rate,
                period: HumanDuration::from_millis(period_ms),
                burst,
                initial: Some(initial),
                ..Default::default()
            });
            let period = u128::from(period_ms) * 1_000_000;
            let (rate, burst) = (u128::from(rate), u128::from(burst));
            let mut admitted: Vec<u64> = Vec::new();
            let mut now = 0u64;
            for gap in gaps {
                now += gap;
                if b.admit(now, 0).status == Status::Ok {
                    admitted.push(now);
                }
                let n = admitted.len() as u128;
                prop_assert!(n * period <= u128::from(initial) * period + rate * u128::from(now));
                for (i, &s) in admitted.iter().enumerate() {
                    let since = admitted.len() as u128 - i as u128;
                    prop_assert!(since * period <= burst * period + rate * u128::from(now - s));
                }
            }
        }
    }
}
