//! `gem-backoff`: `ExponentialBackoff` of the Ruby gem `rate_throttle_client`
//! (zombocom/rate_throttle_client, Richard Schneeman), the plain retry loop the gem measures
//! its throttles against. No sleep before the first attempt and no state between calls; each
//! call starts at `sleep_for = min_sleep` and after every 429 sleeps `sleep_for +
//! jitter(sleep_for)` then multiplies `sleep_for` by `multiplier`.

use serde::{Deserialize, Serialize};

use super::gem_increase::{Decrease, GemParams, check_gem_params};
use super::{Algorithm, BuildContext, Throttle, proportional_jitter};
use crate::config::ParamProblem;
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GemBackoffConfig {
    /// The first retry's sleep. Default 0.8 s, the gem's `MIN_SLEEP = 3600 / 4500`.
    pub min_sleep: HumanDuration,
    /// Applied after each retry's sleep. Default 1.2.
    pub multiplier: f64,
    /// Jitter as a fraction of the sleep, uniform in `[0, jitter × sleep]`. Default 0.1.
    pub jitter: f64,
}

impl Default for GemBackoffConfig {
    fn default() -> Self {
        GemBackoffConfig {
            min_sleep: HumanDuration::from_millis(800),
            multiplier: 1.2,
            jitter: 0.1,
        }
    }
}

impl GemBackoffConfig {
    pub fn build(&self, ctx: BuildContext) -> GemBackoff {
        GemBackoff {
            cfg: self.clone(),
            sleep_for: vec![None; ctx.threads.max(1)],
            owed: vec![None; ctx.threads.max(1)],
            limited: 0,
        }
    }
}

impl Algorithm for GemBackoffConfig {
    const NAME: &'static str = "gem-backoff";
    const DESCRIPTION: &'static str =
        "rate_throttle_client's ExponentialBackoff: retry 429s after 0.8 s × 1.2^n, no state";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        let p = GemParams {
            min_sleep: self.min_sleep.secs(),
            multiplier: self.multiplier,
            jitter: self.jitter,
            initial_sleep: 0.0,
            decrease: Decrease::Gradual(0.0),
        };
        check_gem_params(&mut out, &p);
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

pub struct GemBackoff {
    cfg: GemBackoffConfig,
    /// Per thread: the call's `sleep_for` once it has seen a 429.
    sleep_for: Vec<Option<f64>>,
    /// Per thread: the sleep owed before the retry.
    owed: Vec<Option<f64>>,
    limited: u64,
}

impl Throttle for GemBackoff {
    fn delay(&mut self, _: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        match self.owed[thread].take() {
            Some(s) => from_secs(s + proportional_jitter(s, self.cfg.jitter, rng)),
            None => 0,
        }
    }

    fn on_response(&mut self, _: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        if response.status == Status::Limited {
            self.limited += 1;
            let s = self.sleep_for[thread].unwrap_or(self.cfg.min_sleep.secs());
            self.owed[thread] = Some(s);
            self.sleep_for[thread] = Some(s * self.cfg.multiplier);
        } else {
            self.sleep_for[thread] = None;
        }
    }

    /// The mean of the threads' current retry sleeps (0 for a thread not retrying), seconds.
    fn sleep_value(&self) -> f64 {
        let sum: f64 = self.sleep_for.iter().map(|s| s.unwrap_or(0.0)).sum();
        sum / self.sleep_for.len() as f64
    }

    /// 429s seen.
    fn backoffs(&self) -> u64 {
        self.limited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    #[test]
    fn retries_sleep_min_sleep_then_grow_by_the_multiplier_and_reset_on_success() {
        let cfg = GemBackoffConfig {
            jitter: 0.0,
            ..GemBackoffConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(2));
        let mut rng = test_rng();
        assert_eq!(t.delay(0, 0, &mut rng), 0);
        let mut sleeps = Vec::new();
        for _ in 0..3 {
            t.on_response(0, 0, &Response::bare(Status::Limited), &mut rng);
            sleeps.push(t.delay(0, 0, &mut rng));
        }
        assert_eq!(sleeps, [from_secs(0.8), from_secs(0.96), from_secs(1.152)]);
        // The other thread is not retrying: no sleep.
        assert_eq!(t.delay(0, 1, &mut rng), 0);
        t.on_response(0, 0, &Response::bare(Status::Ok), &mut rng);
        assert_eq!(t.delay(0, 0, &mut rng), 0);
        t.on_response(0, 0, &Response::bare(Status::Limited), &mut rng);
        assert_eq!(t.delay(0, 0, &mut rng), from_secs(0.8));
        assert_eq!(t.backoffs(), 4);
    }
}
