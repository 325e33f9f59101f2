//! `atb`: ATB, the Adaptive Token Bucket of Farkiani, Liu & Crowley, "Rethinking HTTP API Rate
//! Limiting: A Client-Side Approach" (2025, arXiv 2510.04516), as the authors' code has it
//! (github.com/Bfarkiani/ratelimiter: `ATB.py`, its `TokenBucket` and `Client.run`, and the
//! configuration of the paper's runs, `configs/ATB/config_1.json`).
//!
//! Each process sends through a token bucket of its own (no coordination: ATB is the paper's
//! "offline" client). Before every send a thread takes a token; a bucket with less than one
//! makes it wait `(1 − tokens) / rate`. The bucket's rate `r` (tokens per second) learns from
//! every answer:
//!
//! ```text
//! success:            r ← round₂(max(r + min_increase, r × step))
//!                     step = first_step while r < the rate at the last failure, else second_step
//! 429, 408, 425, 5xx: last failure rate ← r;  r ← max(min_rate, round₂(r / 2));  tokens ← 0
//! ```
//!
//! `round₂` rounds to hundredths of a token per second, as the source does (`round(x, 2)`); the
//! rate starts at `initial_rate_per_min / 60`, so rounded. Defaults are those of
//! `config_1.json`; where `ATB.py` falls back to other values when the file lacks a field, they
//! are named in brackets on each parameter. `window` and `third_step`, which the source reads,
//! are never used by it and are not parameters here.
//!
//! Where this is an interpretation of the source:
//! - The source's client sends one request at a time. Here a process's threads share its
//!   bucket and every answer (of any thread) adjusts the rate.
//! - A thread that finds less than a whole token reserves the next one (the bucket goes into
//!   debt) and waits until it is due, instead of sleeping and taking whatever is there then: for
//!   one sender this is the source's wait exactly, and for several it serves them in the order
//!   they asked instead of letting the first to wake take every token. "Bucket emptied" on a
//!   failure then means no token left (`tokens ← min(tokens, 0)`), keeping other threads'
//!   reservations.
//! - The bucket refills continuously at the rate in force (the source adds the tokens of the
//!   whole time since the last take at the current rate, and only when a token is taken).
//! - A transport failure counts as a failure (the source retries it after 1 s without changing
//!   the rate; the engine's `error` status does not tell it from a 500, 502 or 504, which the
//!   source does treat as failures).
//! - `initial_congestion_per_sec`: the source compares its `initial_congestion` unconverted with
//!   its per-second rate, so the value is per second; at the default 300 the first failure, not
//!   the setting, decides when `second_step` starts (and both steps are 1.2 anyway).

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_non_negative, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AtbConfig {
    /// Tokens the bucket holds at most. Default 40 [4].
    pub bucket_size: f64,
    /// Tokens in the bucket at start. Default 1 [1].
    pub initial_tokens: f64,
    /// The bucket's rate at start, in tokens per minute. Default 40 [1].
    pub initial_rate_per_min: f64,
    /// The rate that counts as "the rate at the last failure" before any failure, per second.
    /// Default 300 [60].
    pub initial_congestion_per_sec: f64,
    /// Growth factor per success below the rate of the last failure. Default 1.2 [1.5].
    pub first_step: f64,
    /// Growth factor per success at or above it. Default 1.2 [1.2].
    pub second_step: f64,
    /// The least a success adds, tokens per second. Default 0.01 (fixed in the source).
    pub min_increase_per_sec: f64,
    /// The lowest rate, tokens per second. Default 0.01 (fixed in the source).
    pub min_rate_per_sec: f64,
}

impl Default for AtbConfig {
    fn default() -> Self {
        AtbConfig {
            bucket_size: 40.0,
            initial_tokens: 1.0,
            initial_rate_per_min: 40.0,
            initial_congestion_per_sec: 300.0,
            first_step: 1.2,
            second_step: 1.2,
            min_increase_per_sec: 0.01,
            min_rate_per_sec: 0.01,
        }
    }
}

impl Algorithm for AtbConfig {
    const NAME: &'static str = "atb";
    const DESCRIPTION: &'static str = "ATB (Farkiani et al. 2025): own token bucket, rate ×1.2 per success, halved and emptied on 429/5xx";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_bucket(
            &mut out,
            self.bucket_size,
            self.initial_tokens,
            self.initial_rate_per_min,
            self.min_rate_per_sec,
        );
        check_non_negative(
            &mut out,
            "initial_congestion_per_sec",
            self.initial_congestion_per_sec,
        );
        check_step(&mut out, "first_step", self.first_step);
        check_step(&mut out, "second_step", self.second_step);
        check_positive(&mut out, "min_increase_per_sec", self.min_increase_per_sec);
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

impl AtbConfig {
    pub fn build(&self, ctx: BuildContext) -> Atb {
        Atb {
            bucket: AdaptiveBucket::new(
                self.bucket_size,
                self.initial_tokens,
                self.initial_rate_per_min,
                self.min_rate_per_sec,
                ctx.threads,
            ),
            last_congestion: self.initial_congestion_per_sec,
            cfg: self.clone(),
            decreases: 0,
        }
    }
}

/// The checks ATB and AATB share for their buckets.
pub(crate) fn check_bucket(
    out: &mut Vec<ParamProblem>,
    size: f64,
    initial_tokens: f64,
    initial_rate_per_min: f64,
    min_rate_per_sec: f64,
) {
    if !(size.is_finite() && size >= 1.0) {
        out.push((
            "bucket_size",
            format!("must be at least 1 token (got {size})"),
        ));
    }
    if !(initial_tokens.is_finite() && (0.0..=size.max(0.0)).contains(&initial_tokens)) {
        out.push((
            "initial_tokens",
            format!("must be from 0 to bucket_size ({size}) (got {initial_tokens})"),
        ));
    }
    check_positive(out, "initial_rate_per_min", initial_rate_per_min);
    check_positive(out, "min_rate_per_sec", min_rate_per_sec);
}

pub(crate) fn check_step(out: &mut Vec<ParamProblem>, field: &'static str, v: f64) {
    if !(v.is_finite() && v >= 1.0) {
        out.push((field, format!("must be a factor of 1 or more (got {v})")));
    }
}

/// `x` rounded to hundredths, as the source's `round(x, 2)` (which differs only at exact
/// binary halves).
pub(crate) fn hundredths(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The source's `convert_rate`: per minute to per second, rounded, at least the lowest rate.
pub(crate) fn initial_rate(per_min: f64, min_rate: f64) -> f64 {
    hundredths(per_min / 60.0).max(min_rate)
}

/// The rate after a decrease: divided, rounded, at least the lowest rate (ATB halves; AATB
/// halves or divides by 3).
pub(crate) fn divided(rate: f64, divisor: f64, min_rate: f64) -> f64 {
    hundredths(rate / divisor).max(min_rate)
}

/// The source's `max(rate + min_increase, rate × step)`, rounded.
pub(crate) fn grown(rate: f64, step: f64, min_increase: f64) -> f64 {
    hundredths((rate + min_increase).max(rate * step))
}

/// A token bucket whose rate the algorithm sets, shared by a process's threads; a thread that
/// finds no whole token reserves the next and is told when it is due.
#[derive(Clone, Debug)]
pub(crate) struct AdaptiveBucket {
    size: f64,
    /// Below 0 when threads hold reservations.
    tokens: f64,
    /// Tokens per second.
    rate: f64,
    /// When `tokens` was last brought up to date (`None` before the first call: the bucket
    /// starts when the process does).
    updated: Option<Nanos>,
    /// Per thread: when its reserved token is due.
    due: Vec<Option<Nanos>>,
}

impl AdaptiveBucket {
    /// A bucket as both algorithms' parameters describe it: the rate given per minute.
    pub(crate) fn new(
        size: f64,
        tokens: f64,
        rate_per_min: f64,
        min_rate: f64,
        threads: usize,
    ) -> Self {
        AdaptiveBucket {
            size,
            tokens,
            rate: initial_rate(rate_per_min, min_rate),
            updated: None,
            due: vec![None; threads.max(1)],
        }
    }

    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// The time between tokens, `1 / rate`, in seconds: what both algorithms report as
    /// their sleep value.
    pub(crate) fn spacing(&self) -> f64 {
        1.0 / self.rate
    }

    #[cfg(test)]
    pub(crate) fn tokens(&self) -> f64 {
        self.tokens
    }

    /// Add the tokens made since the last update, up to the bucket's size. Time before
    /// `updated` (a hold that is not over yet) makes none.
    fn refill(&mut self, now: Nanos) {
        let last = *self.updated.get_or_insert(now);
        if now > last {
            self.tokens = (self.tokens + secs(now - last) * self.rate).min(self.size);
            self.updated = Some(now);
        }
    }

    /// Take a token for `thread`: at once if the bucket has a whole one, else reserve the next
    /// and wait until it is due; a thread asking again at or after its due time sends.
    pub(crate) fn take(&mut self, now: Nanos, thread: usize) -> Acquire {
        if let Some(due) = self.due[thread] {
            if now >= due {
                self.due[thread] = None;
                return Acquire::Send;
            }
            return Acquire::Wait(due - now);
        }
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            return Acquire::Send;
        }
        let wait = from_secs(-self.tokens / self.rate).max(1);
        self.due[thread] = Some(now + wait);
        Acquire::Wait(wait)
    }

    /// Change the rate from `now` on.
    pub(crate) fn set_rate(&mut self, now: Nanos, rate: f64) {
        self.refill(now);
        self.rate = rate;
    }

    pub(crate) fn set_tokens(&mut self, now: Nanos, tokens: f64) {
        self.refill(now);
        self.tokens = tokens.min(self.size);
    }

    /// Make no tokens before `until` (the bucket of a process told to hold its sends).
    pub(crate) fn pause_until(&mut self, now: Nanos, until: Nanos) {
        self.refill(now);
        self.updated = Some(until.max(now));
    }

    /// No whole token left; reservations stand.
    pub(crate) fn empty(&mut self, now: Nanos) {
        self.refill(now);
        self.tokens = self.tokens.min(0.0);
    }
}

pub struct Atb {
    cfg: AtbConfig,
    bucket: AdaptiveBucket,
    /// Tokens per second at the last failure (`last_congestion_rate`).
    last_congestion: f64,
    decreases: u64,
}

impl Atb {
    /// The bucket's rate, tokens per second.
    pub fn rate(&self) -> f64 {
        self.bucket.rate()
    }
}

/// The answers the source counts as failures: 429 and the 5xx (and 408/425, which the engine
/// does not produce).
pub(crate) fn is_failure(status: Status) -> bool {
    !matches!(status, Status::Ok)
}

impl Throttle for Atb {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        self.bucket.take(now, thread)
    }

    fn on_response(&mut self, now: Nanos, _: usize, response: &Response, _: &mut SimRng) {
        let rate = self.bucket.rate();
        if is_failure(response.status) {
            self.last_congestion = rate;
            let halved = divided(rate, 2.0, self.cfg.min_rate_per_sec);
            self.bucket.set_rate(now, halved);
            self.bucket.empty(now);
            self.decreases += 1;
        } else {
            let step = if rate < self.last_congestion {
                self.cfg.first_step
            } else {
                self.cfg.second_step
            };
            let new = grown(rate, step, self.cfg.min_increase_per_sec);
            self.bucket.set_rate(now, new);
        }
    }

    /// The bucket's spacing, `1 / rate`, in seconds.
    fn sleep_value(&self) -> f64 {
        self.bucket.spacing()
    }

    /// Failures that halved the rate.
    fn backoffs(&self) -> u64 {
        self.decreases
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn atb(threads: usize) -> Atb {
        AtbConfig::default().build(BuildContext::solo(threads))
    }

    fn answer(status: Status) -> Response {
        Response::bare(status)
    }

    #[test]
    fn the_rate_starts_at_the_configured_rate_per_minute_rounded() {
        assert_eq!(atb(1).rate(), 0.67);
        // The source's fallback of 1 per minute rounds to 0.02 per second.
        assert_eq!(initial_rate(1.0, 0.01), 0.02);
        assert_eq!(initial_rate(0.1, 0.01), 0.01);
    }

    #[test]
    fn one_token_then_one_per_interval() {
        let mut t = atb(1);
        let mut rng = test_rng();
        assert_eq!(t.acquire(0, 0, &mut rng), Acquire::Send);
        // No token left: the next is due in 1 / 0.67 s.
        let wait = from_secs(1.0 / 0.67);
        assert_eq!(t.acquire(0, 0, &mut rng), Acquire::Wait(wait));
        assert_eq!(t.acquire(wait, 0, &mut rng), Acquire::Send);
    }

    #[test]
    fn successes_grow_the_rate_by_the_step_or_the_least_increase() {
        let mut t = atb(1);
        let mut rng = test_rng();
        t.on_response(S, 0, &answer(Status::Ok), &mut rng);
        // 0.67 × 1.2 = 0.804 → 0.80.
        assert_eq!(t.rate(), 0.8);
        t.on_response(S, 0, &answer(Status::Ok), &mut rng);
        assert_eq!(t.rate(), 0.96);
        // At the lowest rate the step adds less than the least increase.
        assert_eq!(grown(0.01, 1.2, 0.01), 0.02);
        assert_eq!(grown(0.04, 1.2, 0.01), 0.05);
    }

    #[test]
    fn a_failure_halves_the_rate_and_empties_the_bucket() {
        let mut t = atb(1);
        let mut rng = test_rng();
        // The bucket starts with the process; a minute at 0.67/s fills it (40).
        assert_eq!(t.acquire(0, 0, &mut rng), Acquire::Send);
        assert_eq!(t.acquire(60 * S, 0, &mut rng), Acquire::Send);
        assert_eq!(t.bucket.tokens(), 39.0);
        t.on_response(60 * S, 0, &answer(Status::Limited), &mut rng);
        // 0.67 / 2 = 0.335 → 0.34 (Python's round gives the same for this value).
        assert_eq!(t.rate(), 0.34);
        assert_eq!(t.backoffs(), 1);
        assert_eq!(
            t.acquire(60 * S, 0, &mut rng),
            Acquire::Wait(from_secs(1.0 / 0.34))
        );
        // 503 and other 5xx count as failures too; the rate never goes below 0.01.
        for _ in 0..10 {
            t.on_response(61 * S, 0, &answer(Status::Unavailable), &mut rng);
        }
        assert_eq!(t.rate(), 0.01);
    }

    #[test]
    fn below_the_last_failure_rate_the_first_step_applies() {
        let cfg = AtbConfig {
            initial_rate_per_min: 60.0,
            first_step: 1.4,
            second_step: 1.1,
            ..AtbConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        let mut after = |status| {
            t.on_response(0, 0, &answer(status), &mut rng);
            t.rate()
        };
        // Before any failure the last failure rate is 300/s: the first step.
        assert_eq!(after(Status::Ok), 1.4);
        assert_eq!(after(Status::Limited), 0.7);
        // Below 1.4, the rate at that failure: × 1.4 (1.372 → 1.37, 1.918 → 1.92).
        assert_eq!(after(Status::Ok), 0.98);
        assert_eq!(after(Status::Ok), 1.37);
        assert_eq!(after(Status::Ok), 1.92);
        // At or above it: × 1.1 (2.112 → 2.11).
        assert_eq!(after(Status::Ok), 2.11);
    }

    #[test]
    fn threads_waiting_for_tokens_are_served_in_the_order_they_asked() {
        let mut t = atb(3);
        let mut rng = test_rng();
        let mut ask = |now: Nanos, thread: usize| match t.acquire(now, thread, &mut rng) {
            Acquire::Send => 0,
            Acquire::Wait(w) => w,
            Acquire::GiveUp => panic!("ATB never gives up"),
        };
        let gap = 1.0 / 0.67;
        let near = |w: Nanos, s: f64| w.abs_diff(from_secs(s)) <= 2;
        assert_eq!(ask(0, 0), 0);
        let w1 = ask(0, 1);
        let w2 = ask(0, 2);
        assert!(near(w1, gap) && near(w2, 2.0 * gap), "{w1} {w2}");
        // Thread 0 asks again before thread 1's token is due: it queues behind thread 2.
        let half = from_secs(gap / 2.0);
        let w0 = ask(half, 0);
        assert!(near(w0, 2.5 * gap), "{w0}");
        // Each sends when its own token is due, not before.
        assert_eq!(ask(w1 - 1, 1), 1);
        assert_eq!(ask(w1, 1), 0);
        assert_eq!(ask(w2, 2), 0);
        // A failure empties the bucket but leaves the reservation standing.
        t.on_response(w2, 2, &answer(Status::Limited), &mut rng);
        assert_eq!(t.acquire(half + w0, 0, &mut rng), Acquire::Send);
    }

    #[test]
    fn bad_parameters_are_named() {
        let cfg = AtbConfig {
            bucket_size: 0.5,
            initial_tokens: 2.0,
            first_step: 0.9,
            min_rate_per_sec: 0.0,
            ..AtbConfig::default()
        };
        let fields: Vec<&str> = cfg.problems().iter().map(|p| p.0).collect();
        assert_eq!(
            fields,
            [
                "bucket_size",
                "initial_tokens",
                "min_rate_per_sec",
                "first_step"
            ]
        );
        assert!(AtbConfig::default().problems().is_empty());
    }
}
