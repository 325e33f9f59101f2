//! `aws-adaptive`: the AWS SDKs' "adaptive" retry mode, as botocore implements it
//! (`botocore/retries/adaptive.py`, `throttling.py`, `bucket.py`, `standard.py`): the standard
//! mode's retries plus a client-side rate limiter.
//!
//! - A CUBIC send rate (C = `scale_constant` 0.4, β = `beta` 0.7): after a throttle at time
//!   `t_fail` with rate `w_max`, `rate(t) = C × (t − t_fail − K)³ + w_max` with
//!   `K = ∛(w_max × (1 − β) / C)`, and the throttle itself sets the rate to `β × w_max`.
//! - The measured rate: answers counted in `rate_bucket` (0.5 s) buckets, smoothed as
//!   `measured = smoothing × current + (1 − smoothing) × measured` (smoothing 0.8).
//! - A client token bucket whose fill rate is `max(max_rate, min_fill_rate)` (0.5/s), holding
//!   at most `max(max_rate, 1)` tokens, switched on at the first throttle; from then on each
//!   send takes a token and waits for one when there is none. After every answer
//!   `max_rate = min(CUBIC rate, max_rate_scale × measured)` (scale 2).
//! - Retries: a 429 or 5xx is retried after `random(0, 1) × min(2^(attempt − 1), max_backoff)`
//!   seconds (max_backoff 20 s); after `max_attempts` (3) failed attempts the call fails and the
//!   thread moves on to its next job (counted in `timed_out`). Only 429 counts as a throttle.
//!
//! The clock of each process starts when its first thread first asks, as a client created when
//! the process starts. (botocore's waiters are also woken when the rate changes; here a waiting
//! thread asks again when the wait it was given is over.)

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AwsAdaptiveConfig {
    /// CUBIC's C. Default 0.4.
    pub scale_constant: f64,
    /// CUBIC's β, the rate kept after a throttle. Default 0.7.
    pub beta: f64,
    /// Weight of the newest bucket in the measured rate. Default 0.8.
    pub smoothing: f64,
    /// The measured rate's bucket. Default 0.5 s.
    pub rate_bucket: HumanDuration,
    /// The token bucket's least fill rate, requests per second. Default 0.5.
    pub min_fill_rate: f64,
    /// The rate is at most this many times the measured rate. Default 2.
    pub max_rate_scale: f64,
    /// Attempts per call, the first included; 0 retries forever. Default 3.
    pub max_attempts: u32,
    /// The longest retry backoff. Default 20 s.
    pub max_backoff: HumanDuration,
}

impl Default for AwsAdaptiveConfig {
    fn default() -> Self {
        AwsAdaptiveConfig {
            scale_constant: 0.4,
            beta: 0.7,
            smoothing: 0.8,
            rate_bucket: HumanDuration::from_millis(500),
            min_fill_rate: 0.5,
            max_rate_scale: 2.0,
            max_attempts: 3,
            max_backoff: HumanDuration::from_secs(20),
        }
    }
}

impl AwsAdaptiveConfig {
    pub fn build(&self, ctx: BuildContext) -> AwsAdaptive {
        let threads = ctx.threads.max(1);
        AwsAdaptive {
            cubic: Cubic::new(self.scale_constant, self.beta, 0.0, 0.0),
            clocker: RateClocker::new(self.smoothing, self.rate_bucket.secs(), 0.0),
            bucket: TokenBucket::new(1.0, self.min_fill_rate),
            cfg: self.clone(),
            started: false,
            enabled: false,
            attempts: vec![0; threads],
            owed: vec![None; threads],
            give_up: vec![false; threads],
            throttles: 0,
        }
    }
}

impl Algorithm for AwsAdaptiveConfig {
    const NAME: &'static str = "aws-adaptive";
    const DESCRIPTION: &'static str =
        "the AWS SDKs' adaptive retry mode: CUBIC rate, measured rate, client token bucket";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_positive(&mut out, "scale_constant", self.scale_constant);
        for (field, v) in [("beta", self.beta), ("smoothing", self.smoothing)] {
            if !(v > 0.0 && v <= 1.0) {
                out.push((field, format!("must be above 0 and at most 1 (got {v})")));
            }
        }
        check_positive(&mut out, "rate_bucket", self.rate_bucket.secs());
        check_positive(&mut out, "min_fill_rate", self.min_fill_rate);
        check_positive(&mut out, "max_rate_scale", self.max_rate_scale);
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

/// CUBIC's rate after a throttle (botocore's `CubicCalculator`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cubic {
    c: f64,
    beta: f64,
    w_max: f64,
    k: f64,
    last_fail: f64,
}

impl Cubic {
    pub fn new(c: f64, beta: f64, w_max: f64, start: f64) -> Self {
        let mut cubic = Cubic {
            c,
            beta,
            w_max,
            k: 0.0,
            last_fail: start,
        };
        cubic.k = cubic.zero_point();
        cubic
    }

    fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - self.beta) / self.c).cbrt()
    }

    pub fn success(&self, t: f64) -> f64 {
        self.c * (t - self.last_fail - self.k).powi(3) + self.w_max
    }

    pub fn throttled(&mut self, rate: f64, t: f64) -> f64 {
        self.w_max = rate;
        self.k = self.zero_point();
        self.last_fail = t;
        rate * self.beta
    }
}

/// The smoothed rate of answers (botocore's `RateClocker`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateClocker {
    smoothing: f64,
    scale: f64,
    count: f64,
    measured: f64,
    last_bucket: f64,
}

impl RateClocker {
    pub fn new(smoothing: f64, bucket: f64, start: f64) -> Self {
        RateClocker {
            smoothing,
            scale: 1.0 / bucket,
            count: 0.0,
            measured: 0.0,
            last_bucket: start.floor(),
        }
    }

    pub fn record(&mut self, t: f64) -> f64 {
        let bucket = (t * self.scale).floor() / self.scale;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let current = self.count / (bucket - self.last_bucket);
            self.measured = current * self.smoothing + self.measured * (1.0 - self.smoothing);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        self.measured
    }
}

/// The client's token bucket (botocore's `TokenBucket`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenBucket {
    min_rate: f64,
    fill_rate: f64,
    max_capacity: f64,
    current: f64,
    last: Option<f64>,
}

impl TokenBucket {
    pub fn new(max_rate: f64, min_rate: f64) -> Self {
        TokenBucket {
            min_rate,
            fill_rate: max_rate.max(min_rate),
            max_capacity: max_rate.max(1.0),
            current: 0.0,
            last: None,
        }
    }

    fn refill(&mut self, t: f64) {
        if let Some(last) = self.last {
            let filled = self.current + (t - last).max(0.0) * self.fill_rate;
            self.current = filled.min(self.max_capacity);
        }
        self.last = Some(t);
    }

    pub fn set_max_rate(&mut self, rate: f64, t: f64) {
        self.refill(t);
        self.fill_rate = rate.max(self.min_rate);
        self.max_capacity = if rate >= 1.0 { rate } else { 1.0 };
        self.current = self.current.min(self.max_capacity);
    }

    /// Take a token at `t`, or say how many seconds until one is there.
    pub fn acquire(&mut self, t: f64) -> Result<(), f64> {
        self.refill(t);
        // Float refills may stop a hair short of a whole token.
        if self.current >= 1.0 - 1e-9 {
            self.current = (self.current - 1.0).max(0.0);
            Ok(())
        } else {
            Err((1.0 - self.current) / self.fill_rate)
        }
    }

    pub fn fill_rate(&self) -> f64 {
        self.fill_rate
    }
}

pub struct AwsAdaptive {
    cfg: AwsAdaptiveConfig,
    cubic: Cubic,
    clocker: RateClocker,
    bucket: TokenBucket,
    started: bool,
    enabled: bool,
    /// Per thread: failed attempts of the current call.
    attempts: Vec<u32>,
    /// Per thread: the backoff owed before the retry, seconds.
    owed: Vec<Option<f64>>,
    /// Per thread: the call failed for good; the next job starts.
    give_up: Vec<bool>,
    throttles: u64,
}

impl AwsAdaptive {
    fn start(&mut self, t: f64) {
        if !self.started {
            self.started = true;
            self.cubic = Cubic::new(self.cfg.scale_constant, self.cfg.beta, 0.0, t);
            self.clocker = RateClocker::new(self.cfg.smoothing, self.cfg.rate_bucket.secs(), t);
            self.bucket.refill(t);
        }
    }

    /// `random(0, 1) × min(2^(attempt − 1), max_backoff)` after the failed `attempt` (1-based).
    pub fn backoff(&self, attempt: u32, rng: &mut SimRng) -> f64 {
        let ceiling = 2f64
            .powi(attempt.saturating_sub(1).min(1024) as i32)
            .min(self.cfg.max_backoff.secs());
        rng.random::<f64>() * ceiling
    }
}

impl Throttle for AwsAdaptive {
    fn delay(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Nanos {
        self.start(secs(now));
        self.owed[thread].take().map_or(0, from_secs)
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        if std::mem::take(&mut self.give_up[thread]) {
            return Acquire::GiveUp;
        }
        if !self.enabled {
            return Acquire::Send;
        }
        match self.bucket.acquire(secs(now)) {
            Ok(()) => Acquire::Send,
            Err(wait) => Acquire::Wait(from_secs(wait).max(1)),
        }
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, rng: &mut SimRng) {
        let t = secs(now);
        self.start(t);
        let measured = self.clocker.record(t);
        let new_rate = if response.status == Status::Limited {
            let rate = if self.enabled {
                measured.min(self.bucket.fill_rate())
            } else {
                measured
            };
            self.enabled = true;
            self.throttles += 1;
            self.cubic.throttled(rate, t)
        } else {
            self.cubic.success(t)
        };
        self.bucket
            .set_max_rate(new_rate.min(self.cfg.max_rate_scale * measured), t);
        if response.status == Status::Ok {
            self.attempts[thread] = 0;
            return;
        }
        self.attempts[thread] += 1;
        let attempt = self.attempts[thread];
        if self.cfg.max_attempts > 0 && attempt >= self.cfg.max_attempts {
            self.attempts[thread] = 0;
            self.give_up[thread] = true;
        } else {
            self.owed[thread] = Some(self.backoff(attempt, rng));
        }
    }

    /// Seconds between sends at the token bucket's rate once it is on; 0 before.
    fn sleep_value(&self) -> f64 {
        if self.enabled {
            1.0 / self.bucket.fill_rate()
        } else {
            0.0
        }
    }

    /// Throttles seen.
    fn backoffs(&self) -> u64 {
        self.throttles
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    #[test]
    fn cubic_on_fixed_numbers() {
        let mut c = Cubic::new(0.4, 0.7, 0.0, 0.0);
        // No throttle yet: 0.4 × t³.
        assert!((c.success(2.0) - 3.2).abs() < 1e-12);
        // Throttled at 10 req/s at t = 5: the rate drops to 7, K = ∛(10 × 0.3 / 0.4) = ∛7.5.
        assert!((c.throttled(10.0, 5.0) - 7.0).abs() < 1e-12);
        let k = 7.5f64.cbrt();
        assert!((c.success(5.0) - 7.0).abs() < 1e-9);
        // Back at w_max K seconds after the throttle, and beyond it afterwards.
        assert!((c.success(5.0 + k) - 10.0).abs() < 1e-12);
        assert!((c.success(5.0 + k + 1.0) - 10.4).abs() < 1e-9);
    }

    #[test]
    fn the_measured_rate_is_smoothed_over_half_second_buckets() {
        let mut r = RateClocker::new(0.8, 0.5, 0.0);
        // Four answers in [0, 0.5): nothing measured until a later bucket starts.
        for t in [0.1, 0.2, 0.3, 0.4] {
            assert_eq!(r.record(t), 0.0);
        }
        // The fifth answer at 0.6 closes 0.5 s: 5 / 0.5 = 10/s, weighted 0.8.
        assert!((r.record(0.6) - 8.0).abs() < 1e-12);
        // One more at 1.2: 1 / 0.5 = 2/s → 0.8 × 2 + 0.2 × 8.
        assert!((r.record(1.2) - 3.2).abs() < 1e-12);
    }

    #[test]
    fn the_token_bucket_fills_at_its_rate_up_to_its_capacity() {
        let mut b = TokenBucket::new(1.0, 0.5);
        b.refill(0.0);
        assert_eq!(b.acquire(0.0), Err(1.0));
        assert_eq!(b.acquire(1.0), Ok(()));
        // A rate below the minimum fills at the minimum, holding one token at most.
        b.set_max_rate(0.1, 1.0);
        assert_eq!(b.acquire(1.0), Err(2.0));
        assert_eq!(b.acquire(100.0), Ok(()));
        assert_eq!(b.acquire(100.0), Err(2.0));
        // A rate of 4 holds up to 4 tokens.
        b.set_max_rate(4.0, 100.0);
        for _ in 0..4 {
            assert_eq!(b.acquire(110.0), Ok(()));
        }
        assert_eq!(b.acquire(110.0), Err(0.25));
    }

    #[test]
    fn the_bucket_switches_on_at_the_first_throttle() {
        let mut t = AwsAdaptiveConfig::default().build(BuildContext::solo(1));
        let mut rng = test_rng();
        let mut now = 0;
        for _ in 0..40 {
            assert_eq!(t.delay(now, 0, &mut rng), 0);
            assert_eq!(t.acquire(now, 0, &mut rng), Acquire::Send);
            now += S / 10;
            t.on_response(now, 0, &Response::bare(Status::Ok), &mut rng);
        }
        assert_eq!(t.sleep_value(), 0.0);
        t.on_response(now, 0, &Response::bare(Status::Limited), &mut rng);
        assert_eq!(t.backoffs(), 1);
        // Ten answers a second were measured: the rate drops to about 0.7 × 10.
        let rate = 1.0 / t.sleep_value();
        assert!((6.0..8.0).contains(&rate), "{rate}");
        // The retry waits its backoff, then the bucket spaces the sends.
        let backoff = t.delay(now, 0, &mut rng);
        assert!(backoff <= S);
        now += backoff;
        let mut sends = 0;
        let start = now;
        while now < start + 2 * S {
            match t.acquire(now, 0, &mut rng) {
                Acquire::Send => {
                    sends += 1;
                    t.on_response(now, 0, &Response::bare(Status::Ok), &mut rng);
                }
                Acquire::Wait(w) => now += w,
                Acquire::GiveUp => unreachable!(),
            }
        }
        // Without the bucket the loop would never advance; with it, about 7–10 a second
        // plus the few tokens stored.
        assert!((10..=30).contains(&sends), "{sends} sends in 2 s");
    }

    #[test]
    fn a_call_fails_after_max_attempts() {
        let mut t = AwsAdaptiveConfig::default().build(BuildContext::solo(1));
        let mut rng = test_rng();
        let mut backoffs = Vec::new();
        t.delay(0, 0, &mut rng);
        for _ in 0..2 {
            t.on_response(S, 0, &Response::bare(Status::Unavailable), &mut rng);
            backoffs.push(t.delay(S, 0, &mut rng));
        }
        assert!(backoffs[0] <= S && backoffs[1] <= 2 * S);
        // 503s are retried but are no throttle.
        assert_eq!(t.backoffs(), 0);
        t.on_response(S, 0, &Response::bare(Status::Unavailable), &mut rng);
        assert_eq!(t.delay(S, 0, &mut rng), 0);
        assert_eq!(t.acquire(S, 0, &mut rng), Acquire::GiveUp);
        assert_eq!(t.acquire(S, 0, &mut rng), Acquire::Send);
    }

    #[test]
    fn backoff_ceiling_doubles_up_to_max_backoff() {
        let t = AwsAdaptiveConfig::default().build(BuildContext::solo(1));
        let mut rng = test_rng();
        let mut max = [0.0f64; 7];
        for _ in 0..3000 {
            for (a, m) in max.iter_mut().enumerate() {
                *m = m.max(t.backoff(a as u32 + 1, &mut rng));
            }
        }
        let ceilings = [1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0];
        for (m, c) in max.iter().zip(ceilings) {
            assert!(*m <= c && *m > 0.95 * c, "{m} vs {c}");
        }
    }
}
