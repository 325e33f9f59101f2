//! `gem-remaining`: `ExponentialIncreaseProportionalRemainingDecrease` of the Ruby gem
//! `rate_throttle_client` (zombocom/rate_throttle_client, Richard Schneeman, grown out of seed
//! 002). Shared `sleep_for`, slept before every attempt; on a 429 `sleep_for += min_sleep`,
//! sleep, then `sleep_for *= multiplier`; when the call ends `sleep_for -= sleep_for ×
//! RateLimit-Remaining / decrease_divisor` (never below 0; a missing header reads as 0). The
//! state machine is in `gem_increase`.

use serde::{Deserialize, Serialize};

use super::gem_increase::{Decrease, GemIncrease, GemParams, check_gem_params};
use super::{Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::time::HumanDuration;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GemRemainingConfig {
    /// Added on each 429. Default 0.8 s, the gem's `MIN_SLEEP = 3600 / 4500`.
    pub min_sleep: HumanDuration,
    /// Applied after each 429's sleep. Default 1.2.
    pub multiplier: f64,
    /// Jitter as a fraction of the sleep, uniform in `[0, jitter × sleep]`. Default 0.1.
    pub jitter: f64,
    /// `sleep_for` at start. Default 0 s (`start_sleep_for: 0`).
    pub initial_sleep: HumanDuration,
    /// The decrease is `sleep_for × remaining / decrease_divisor`. Default 4500, the gem's
    /// `MAX_LIMIT`.
    pub decrease_divisor: f64,
}

impl Default for GemRemainingConfig {
    fn default() -> Self {
        GemRemainingConfig {
            min_sleep: HumanDuration::from_millis(800),
            multiplier: 1.2,
            jitter: 0.1,
            initial_sleep: HumanDuration::from_secs(0),
            decrease_divisor: 4500.0,
        }
    }
}

impl GemRemainingConfig {
    fn params(&self) -> GemParams {
        GemParams {
            min_sleep: self.min_sleep.secs(),
            multiplier: self.multiplier,
            jitter: self.jitter,
            initial_sleep: self.initial_sleep.secs(),
            decrease: Decrease::Remaining(self.decrease_divisor),
        }
    }

    pub fn build(&self, ctx: BuildContext) -> GemIncrease {
        GemIncrease::new(self.params(), ctx.threads)
    }
}

impl Algorithm for GemRemainingConfig {
    const NAME: &'static str = "gem-remaining";
    const DESCRIPTION: &'static str = "rate_throttle_client: shared sleep, +0.8 s and ×1.2 on 429, −sleep×remaining/4500 per call";

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

    fn ok(remaining: Option<u64>) -> Response {
        Response {
            status: Status::Ok,
            remaining,
            limit: None,
            retry_after: None,
            latency: 0,
            quota: None,
            reset: None,
        }
    }

    #[test]
    fn the_decrease_follows_remaining() {
        let cfg = GemRemainingConfig {
            initial_sleep: HumanDuration::from_secs(9),
            ..GemRemainingConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        t.delay(0, 0, &mut rng);
        // 450 left of 4500: a tenth comes off.
        t.on_response(0, 0, &ok(Some(450)), &mut rng);
        assert!((t.sleep_value() - 8.1).abs() < 1e-12);
        // Nothing left, or no header: nothing comes off.
        t.delay(0, 0, &mut rng);
        t.on_response(0, 0, &ok(Some(0)), &mut rng);
        t.delay(0, 0, &mut rng);
        t.on_response(0, 0, &ok(None), &mut rng);
        assert!((t.sleep_value() - 8.1).abs() < 1e-12);
        // A full bucket takes it all.
        t.delay(0, 0, &mut rng);
        t.on_response(0, 0, &ok(Some(4500)), &mut rng);
        assert_eq!(t.sleep_value(), 0.0);
    }
}
