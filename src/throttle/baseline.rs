//! Baselines the adaptive algorithms are measured against.

use serde::{Deserialize, Serialize};

use super::{Algorithm, BuildContext, Throttle, proportional_jitter};
use crate::config::{ParamProblem, check_non_negative};
use crate::exchange::Response;
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs};

/// `none`: no throttling at all; a 429 is retried at once. Shows what the server sees from a
/// client that ignores its limit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoneConfig {}

impl NoneConfig {
    pub fn build(&self) -> Unthrottled {
        Unthrottled
    }
}

impl Algorithm for NoneConfig {
    const NAME: &'static str = "none";
    const DESCRIPTION: &'static str = "no throttling: send again as soon as an answer arrives";

    fn throttle(&self, _ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build())
    }
}

pub struct Unthrottled;

impl Throttle for Unthrottled {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }
    fn on_response(&mut self, _: Nanos, _: usize, _: &Response, _: &mut SimRng) {}
    fn sleep_value(&self) -> f64 {
        0.0
    }
}

/// `fixed`: the same sleep before every request whatever the server says (the `sleep 1` that
/// Rebased's Redis interval lock replaced: it stopped working as soon as several processes
/// made calls).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixedConfig {
    /// The wait before every request. Default 1 s, as that `sleep 1`.
    pub sleep: HumanDuration,
    /// Extra wait, uniform in `[0, jitter × sleep]`. Default 0: that `sleep 1` had none. Without
    /// it, and with a constant latency, every thread sends at the same instants; the sim
    /// decides requests of one instant in thread order (deterministically), so the same
    /// threads get the tokens every time and fairness is decided by index (Jain 0.28 for 4
    /// processes over a limit a quarter of their demand; 0.98 with `jitter = 0.1`).
    pub jitter: f64,
}

impl Default for FixedConfig {
    fn default() -> Self {
        FixedConfig {
            sleep: HumanDuration::from_secs(1),
            jitter: 0.0,
        }
    }
}

impl FixedConfig {
    pub fn build(&self) -> FixedSleep {
        FixedSleep {
            sleep: self.sleep.secs(),
            jitter: self.jitter,
        }
    }
}

impl Algorithm for FixedConfig {
    const NAME: &'static str = "fixed";
    const DESCRIPTION: &'static str = "a constant sleep before every request (the naive `sleep 1` of Rebased's Redis interval lock); with jitter 0 and a constant latency its threads send in lockstep and the first by index always wins: set jitter to share fairly";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_non_negative(&mut out, "jitter", self.jitter);
        out
    }

    fn throttle(&self, _ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build())
    }
}

pub struct FixedSleep {
    sleep: f64,
    jitter: f64,
}

impl Throttle for FixedSleep {
    fn delay(&mut self, _: Nanos, _: usize, rng: &mut SimRng) -> Nanos {
        from_secs(self.sleep + proportional_jitter(self.sleep, self.jitter, rng))
    }
    fn on_response(&mut self, _: Nanos, _: usize, _: &Response, _: &mut SimRng) {}
    fn sleep_value(&self) -> f64 {
        self.sleep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Status;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    #[test]
    fn unthrottled_never_waits_even_after_429() {
        let mut t = NoneConfig::default().build();
        let mut rng = test_rng();
        let r = Response {
            status: Status::Limited,
            remaining: Some(0),
            limit: Some(10),
            retry_after: Some(NANOS_PER_SEC),
            latency: 0,
            quota: None,
            reset: None,
        };
        t.on_response(5, 0, &r, &mut rng);
        assert_eq!(t.delay(5, 0, &mut rng), 0);
    }

    #[test]
    fn fixed_waits_its_sleep_plus_bounded_jitter() {
        let cfg = FixedConfig {
            sleep: HumanDuration::from_secs(2),
            jitter: 0.5,
        };
        let mut t = cfg.build();
        let mut rng = test_rng();
        for _ in 0..1000 {
            let d = t.delay(0, 0, &mut rng);
            assert!((2 * NANOS_PER_SEC..=3 * NANOS_PER_SEC).contains(&d), "{d}");
        }
        let mut exact = FixedConfig::default().build();
        assert_eq!(exact.delay(0, 0, &mut rng), NANOS_PER_SEC);
    }
}
