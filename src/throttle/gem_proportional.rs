//! `gem-proportional`: `ExponentialIncreaseProportionalDecrease` of the Ruby gem
//! `rate_throttle_client` (zombocom/rate_throttle_client, Richard Schneeman, grown out of seed
//! 002). Shared `sleep_for`, slept before every attempt; on a 429 `sleep_for += min_sleep`,
//! sleep, then `sleep_for *= multiplier`; when the call ends `sleep_for -= sleep_for /
//! decrease_divisor` (never below 0). The state machine is in `gem_increase`.

use serde::{Deserialize, Serialize};

use super::gem_increase::{Decrease, GemIncrease, GemParams, check_gem_params};
use super::{Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::time::HumanDuration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GemProportionalConfig {
    /// Added on each 429. Default 0.8 s, the gem's `MIN_SLEEP = 3600 / 4500`.
    pub min_sleep: HumanDuration,
    /// Applied after each 429's sleep. Default 1.2.
    pub multiplier: f64,
    /// Jitter as a fraction of the sleep, uniform in `[0, jitter × sleep]`. Default 0.1.
    pub jitter: f64,
    /// `sleep_for` at start. Default 0 s (`start_sleep_for: 0`).
    pub initial_sleep: HumanDuration,
    /// The decrease is `sleep_for / decrease_divisor`. Default 4500, the gem's `MAX_LIMIT`.
    pub decrease_divisor: f64,
}

impl Default for GemProportionalConfig {
    fn default() -> Self {
        GemProportionalConfig {
            min_sleep: HumanDuration::from_millis(800),
            multiplier: 1.2,
            jitter: 0.1,
            initial_sleep: HumanDuration::from_secs(0),
            decrease_divisor: 4500.0,
        }
    }
}

impl GemProportionalConfig {
    fn params(&self) -> GemParams {
        GemParams {
            min_sleep: self.min_sleep.secs(),
            multiplier: self.multiplier,
            jitter: self.jitter,
            initial_sleep: self.initial_sleep.secs(),
            decrease: Decrease::Proportional(self.decrease_divisor),
        }
    }

    pub fn build(&self, ctx: BuildContext) -> GemIncrease {
        GemIncrease::new(self.params(), ctx.threads)
    }
}

impl Algorithm for GemProportionalConfig {
    const NAME: &'static str = "gem-proportional";
    const DESCRIPTION: &'static str =
        "rate_throttle_client: shared sleep, +0.8 s and ×1.2 on 429, −sleep/4500 per call";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_gem_params(&mut out, &self.params());
        check_positive(&mut out, "decrease_divisor", self.decrease_divisor);
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

    #[test]
    fn each_success_takes_off_one_4500th() {
        let cfg = GemProportionalConfig {
            initial_sleep: HumanDuration::from_secs(9),
            ..GemProportionalConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        let ok = Response {
            status: Status::Ok,
            remaining: Some(1),
            limit: None,
            retry_after: None,
            latency: 0,
            quota: None,
            reset: None,
        };
        for _ in 0..2 {
            t.delay(0, 0, &mut rng);
            t.on_response(0, 0, &ok, &mut rng);
        }
        let want = 9.0 * (1.0 - 1.0 / 4500.0) * (1.0 - 1.0 / 4500.0);
        assert!((t.sleep_value() - want).abs() < 1e-12);
        let bad = GemProportionalConfig {
            decrease_divisor: 0.0,
            ..GemProportionalConfig::default()
        };
        assert_eq!(bad.problems()[0].0, "decrease_divisor");
    }
}
