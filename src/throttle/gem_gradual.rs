//! `gem-gradual`: `ExponentialIncreaseGradualDecrease` of the Ruby gem `rate_throttle_client`
//! (zombocom/rate_throttle_client, Richard Schneeman, grown out of the Heroku GCRA demo client).
//! Shared `sleep_for`, slept before every attempt; on a 429 `sleep_for += min_sleep`, sleep, then
//! `sleep_for *= multiplier`; when the call ends, `sleep_for -= decrease` (never below 0). The
//! state machine is in `gem_increase`.

use serde::{Deserialize, Serialize};

use super::gem_increase::{Decrease, GemIncrease, GemParams, check_gem_params};
use super::{Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_non_negative};
use crate::time::HumanDuration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GemGradualConfig {
    /// Added on each 429. Default 0.8 s, the gem's `MIN_SLEEP = 3600 / 4500`.
    pub min_sleep: HumanDuration,
    /// Applied after each 429's sleep. Default 1.2.
    pub multiplier: f64,
    /// Jitter as a fraction of the sleep, uniform in `[0, jitter × sleep]`. Default 0.1.
    pub jitter: f64,
    /// `sleep_for` at start. Default 0 s (`start_sleep_for: 0`).
    pub initial_sleep: HumanDuration,
    /// Subtracted when a call ends. Default: `min_sleep`, as the gem's
    /// `decrease || @minimum_sleep`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decrease: Option<HumanDuration>,
}

impl Default for GemGradualConfig {
    fn default() -> Self {
        GemGradualConfig {
            min_sleep: HumanDuration::from_millis(800),
            multiplier: 1.2,
            jitter: 0.1,
            initial_sleep: HumanDuration::from_secs(0),
            decrease: None,
        }
    }
}

impl GemGradualConfig {
    fn params(&self) -> GemParams {
        GemParams {
            min_sleep: self.min_sleep.secs(),
            multiplier: self.multiplier,
            jitter: self.jitter,
            initial_sleep: self.initial_sleep.secs(),
            decrease: Decrease::Gradual(self.decrease.unwrap_or(self.min_sleep).secs()),
        }
    }

    pub fn build(&self, ctx: BuildContext) -> GemIncrease {
        GemIncrease::new(self.params(), ctx.threads)
    }
}

impl Algorithm for GemGradualConfig {
    const NAME: &'static str = "gem-gradual";
    const DESCRIPTION: &'static str =
        "rate_throttle_client: shared sleep, +0.8 s and ×1.2 on 429, −0.8 s per call";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_gem_params(&mut out, &self.params());
        if let Some(d) = self.decrease {
            check_non_negative(&mut out, "decrease", d.secs());
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{Response, Status};
    use crate::rng::test_rng;
    use crate::throttle::Throttle;
    use crate::time::from_secs;

    fn answer(status: Status) -> Response {
        Response {
            status,
            remaining: Some(4000),
            limit: Some(4500),
            retry_after: None,
            latency: 0,
            quota: None,
            reset: None,
        }
    }

    #[test]
    fn each_success_takes_off_min_sleep_down_to_zero() {
        let cfg = GemGradualConfig {
            initial_sleep: HumanDuration::from_secs(2),
            jitter: 0.0,
            ..GemGradualConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        let mut sleeps = Vec::new();
        for _ in 0..4 {
            sleeps.push(t.delay(0, 0, &mut rng));
            t.on_response(0, 0, &answer(Status::Ok), &mut rng);
        }
        assert_eq!(sleeps, [from_secs(2.0), from_secs(1.2), from_secs(0.4), 0]);
        assert_eq!(t.sleep_value(), 0.0);
    }

    #[test]
    fn an_explicit_decrease_replaces_min_sleep() {
        let cfg = GemGradualConfig {
            initial_sleep: HumanDuration::from_secs(2),
            decrease: Some(HumanDuration::from_millis(500)),
            ..GemGradualConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        t.delay(0, 0, &mut rng);
        t.on_response(0, 0, &answer(Status::Ok), &mut rng);
        assert!((t.sleep_value() - 1.5).abs() < 1e-12);
        let bad = GemGradualConfig {
            multiplier: 0.5,
            ..GemGradualConfig::default()
        };
        assert_eq!(bad.problems()[0].0, "multiplier");
    }
}
