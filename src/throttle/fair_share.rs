//! `fair-share`: a blind client that needs no count of its peers and still shares a key's
//! quota equally, holding a small reserve of tokens instead of running into 429s. The law
//! itself is the library crate `crates/fair-share/` (its lib.rs has every formula; the same
//! crate is what a real client embeds, and `ports/` holds it in Ruby, Python and JavaScript);
//! this file is its parameters as a scenario writes them, and the adapter that hands it the
//! simulator's time, answers and random numbers. docs/fair-share.md is the porter's page.

use std::time::Duration;

use fair_share::{Answer, Draw, Law, Params, Policy};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::ParamProblem;
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, duration_nanos};

/// `fair-share`'s parameters as a scenario writes them (durations as `"250ms"`, `"1h"`): the
/// fields of [`fair_share::Params`], named alike, where each is documented with its default and
/// unit (`crates/fair-share/src/params.rs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FairShareConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<HumanDuration>,
    pub first_spread: HumanDuration,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_sleep: Option<HumanDuration>,
    pub reserve: f64,
    pub span: f64,
    pub crowd: f64,
    pub gain: f64,
    pub window_periods: f64,
    pub min_samples: u32,
    pub min_flow: f64,
    pub drain_windows: f64,
    pub drain_fill: f64,
    pub full_level: f64,
    pub full_drain: f64,
    pub pull_periods: f64,
    pub pull_max: f64,
    pub decrease: f64,
    pub retry_jitter: f64,
    pub jitter: f64,
    pub increase: f64,
    pub error_backoff: HumanDuration,
    pub error_backoff_max: HumanDuration,
    pub max_rate: f64,
    pub reset_resolution: HumanDuration,
}

/// The law's own defaults (`crates/fair-share/src/params.rs`), so there is one list of them.
impl Default for FairShareConfig {
    fn default() -> Self {
        let p = Params::default();
        let h = |d: Duration| HumanDuration(duration_nanos(d));
        FairShareConfig {
            quota: p.quota,
            period: p.period.map(h),
            first_spread: h(p.first_spread),
            initial_sleep: p.initial_sleep.map(h),
            reserve: p.reserve,
            span: p.span,
            crowd: p.crowd,
            gain: p.gain,
            window_periods: p.window_periods,
            min_samples: p.min_samples,
            min_flow: p.min_flow,
            drain_windows: p.drain_windows,
            drain_fill: p.drain_fill,
            full_level: p.full_level,
            full_drain: p.full_drain,
            pull_periods: p.pull_periods,
            pull_max: p.pull_max,
            decrease: p.decrease,
            retry_jitter: p.retry_jitter,
            jitter: p.jitter,
            increase: p.increase,
            error_backoff: h(p.error_backoff),
            error_backoff_max: h(p.error_backoff_max),
            max_rate: p.max_rate,
            reset_resolution: h(p.reset_resolution),
        }
    }
}

impl Algorithm for FairShareConfig {
    const NAME: &'static str = "fair-share";
    const UNITS: &'static [(&'static str, &'static str)] = fair_share::UNITS;
    const DESCRIPTION: &'static str = "blind: steer the total rate (read from remaining's slope) to the refill, pull every process to one price of the level";

    fn problems(&self) -> Vec<ParamProblem> {
        self.check()
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

impl FairShareConfig {
    /// The law's parameters: the same fields, durations as `Duration`.
    pub fn params(&self) -> Params {
        let d = |h: HumanDuration| Duration::from_nanos(h.nanos());
        Params {
            quota: self.quota,
            period: self.period.map(d),
            first_spread: d(self.first_spread),
            initial_sleep: self.initial_sleep.map(d),
            reserve: self.reserve,
            span: self.span,
            crowd: self.crowd,
            gain: self.gain,
            window_periods: self.window_periods,
            min_samples: self.min_samples,
            min_flow: self.min_flow,
            drain_windows: self.drain_windows,
            drain_fill: self.drain_fill,
            full_level: self.full_level,
            full_drain: self.full_drain,
            pull_periods: self.pull_periods,
            pull_max: self.pull_max,
            decrease: self.decrease,
            retry_jitter: self.retry_jitter,
            jitter: self.jitter,
            increase: self.increase,
            error_backoff: d(self.error_backoff),
            error_backoff_max: d(self.error_backoff_max),
            max_rate: self.max_rate,
            reset_resolution: d(self.reset_resolution),
        }
    }

    fn check(&self) -> Vec<ParamProblem> {
        self.params().problems()
    }

    pub fn build(&self, ctx: BuildContext) -> FairShare {
        let mut params = self.params();
        // A live run at a time scale: the server's whole seconds are `time_scale` of the
        // clients' (virtual) seconds.
        if ctx.time_scale > 1.0 {
            params.reset_resolution = params.reset_resolution.mul_f64(ctx.time_scale);
        }
        FairShare(Law::new(ctx.threads, params))
    }
}

/// One process's law, driven by the simulator.
pub struct FairShare(Law);

/// The simulator's seeded generator, as the law draws: the same calls, in the same order, as
/// when the law lived in this file, so a seed gives the same run.
struct SimDraw<'a>(&'a mut SimRng);

impl Draw for SimDraw<'_> {
    fn below(&mut self, lo: f64, hi: f64) -> f64 {
        self.0.random_range(lo..hi)
    }
    fn within(&mut self, lo: f64, hi: f64) -> f64 {
        self.0.random_range(lo..=hi)
    }
}

fn time(n: Nanos) -> Duration {
    Duration::from_nanos(n)
}

/// What the simulator's client read, as the law reads it: bounded as `Answer::read` bounds
/// what a live client reads (no wait, reset or window beyond `MAX_SERVER_WAIT`), so that the
/// sim's law is told what a live one would be.
fn answer(r: &Response) -> Answer {
    Answer {
        status: match r.status {
            Status::Ok => fair_share::Status::Ok,
            Status::Limited => fair_share::Status::Limited,
            Status::Unavailable => fair_share::Status::Unavailable,
            Status::Error => fair_share::Status::Error,
        },
        remaining: r.remaining,
        limit: r.limit,
        retry_after: r.retry_after.map(time),
        policy: r.quota.map(|q| Policy {
            limit: q.limit,
            window: time(q.window),
        }),
        reset: r.reset.map(time),
        latency: time(r.latency),
    }
    .bounded()
}

impl Throttle for FairShare {
    fn delay(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        let wait = self.0.delay(time(now), thread, &mut SimDraw(rng));
        duration_nanos(wait)
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        match self.0.acquire(time(now), thread) {
            Duration::ZERO => Acquire::Send,
            more => Acquire::Wait(duration_nanos(more)),
        }
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, rng: &mut SimRng) {
        self.0
            .on_response(time(now), thread, &answer(response), &mut SimDraw(rng));
    }

    fn sleep_value(&self) -> f64 {
        self.0.spacing()
    }

    fn backoffs(&self) -> u64 {
        self.0.backoffs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        assert!(FairShareConfig::default().problems().is_empty());
        let bad = FairShareConfig {
            decrease: 1.0,
            reserve: 1.5,
            min_samples: 1,
            ..FairShareConfig::default()
        };
        let fields: Vec<&str> = bad.problems().iter().map(|p| p.0).collect();
        assert_eq!(fields, ["reserve", "decrease", "min_samples"]);
    }

    #[test]
    fn every_field_reaches_the_law() {
        let cfg = FairShareConfig {
            quota: Some(100.0),
            period: Some(HumanDuration::from_secs(60)),
            first_spread: HumanDuration::from_millis(1500),
            initial_sleep: Some(HumanDuration::from_secs(2)),
            error_backoff: HumanDuration::from_secs(3),
            error_backoff_max: HumanDuration::from_secs(30),
            jitter: 0.2,
            ..FairShareConfig::default()
        };
        let p = cfg.params();
        assert_eq!(p.quota, Some(100.0));
        assert_eq!(p.period, Some(Duration::from_secs(60)));
        assert_eq!(p.first_spread, Duration::from_millis(1500));
        assert_eq!(p.initial_sleep, Some(Duration::from_secs(2)));
        assert_eq!(
            (p.error_backoff, p.error_backoff_max),
            (Duration::from_secs(3), Duration::from_secs(30))
        );
        assert_eq!(p.jitter, 0.2);
        // The defaults are the law's own, there and back.
        assert_eq!(FairShareConfig::default().params(), Params::default());
    }

    #[test]
    fn every_status_and_field_of_an_answer_reaches_the_law() {
        let r = Response {
            status: Status::Limited,
            remaining: Some(3),
            limit: Some(10),
            retry_after: Some(1_500_000_000),
            quota: Some(crate::exchange::Quota {
                limit: 10,
                window: 60_000_000_000,
            }),
            reset: Some(2_000_000_000),
            latency: 20_000_000,
        };
        let a = answer(&r);
        assert_eq!(a.status, fair_share::Status::Limited);
        assert_eq!((a.remaining, a.limit), (Some(3), Some(10)));
        assert_eq!(a.retry_after, Some(Duration::from_millis(1500)));
        assert_eq!(
            a.policy.map(|p| (p.limit, p.window)),
            Some((10, Duration::from_secs(60)))
        );
        assert_eq!(a.reset, Some(Duration::from_secs(2)));
        assert_eq!(a.latency, Duration::from_millis(20));
        for (s, want) in [
            (Status::Ok, fair_share::Status::Ok),
            (Status::Unavailable, fair_share::Status::Unavailable),
            (Status::Error, fair_share::Status::Error),
        ] {
            assert_eq!(answer(&Response::bare(s)).status, want);
        }
    }
}
