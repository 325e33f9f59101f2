//! The state machine shared by the three "ExponentialIncrease…Decrease" classes of the Ruby gem
//! `rate_throttle_client` (Richard Schneeman, zombocom/rate_throttle_client), which grew out of the
//! Heroku GCRA demo client. Each algorithm file (`gem_gradual`, `gem_proportional`,
//! `gem_remaining`) supplies its decrease; the rest is here, as the gem's `call` does it:
//!
//! ```text
//! sleep_for = @sleep_for                    # the process's shared value, read per call
//! sleep(sleep_for + jitter(sleep_for))      # before the first attempt too
//! while (req = yield).status == 429
//!   sleep_for += min_sleep
//!   sleep(sleep_for + jitter(sleep_for))
//!   sleep_for *= multiplier
//! end
//! sleep_for = decrease(sleep_for), never below 0
//! @sleep_for = sleep_for                    # written back when the call ends
//! ```
//!
//! with `jitter(v) = v × rand(0.0..0.1)`. A call ends on any answer that is not a 429, so a 5xx
//! decreases like a success (the gem only loops on 429).

use super::{Throttle, proportional_jitter};
use crate::config::{ParamProblem, check_non_negative};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{Nanos, from_secs};

/// How a class lowers `sleep_for` when a call ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decrease {
    /// ExponentialIncreaseGradualDecrease: by a fixed amount of seconds.
    Gradual(f64),
    /// ExponentialIncreaseProportionalDecrease: by `sleep_for / divisor`.
    Proportional(f64),
    /// ExponentialIncreaseProportionalRemainingDecrease: by `sleep_for × remaining / divisor`.
    Remaining(f64),
}

impl Decrease {
    /// `sleep_for` after a call that ended with `remaining` requests left (a missing header
    /// reads as 0, as Ruby's `nil.to_i`); never below 0.
    pub fn apply(self, sleep_for: f64, remaining: Option<u64>) -> f64 {
        let amount = match self {
            Decrease::Gradual(by) => by,
            Decrease::Proportional(divisor) => sleep_for / divisor,
            Decrease::Remaining(divisor) => sleep_for * remaining.unwrap_or(0) as f64 / divisor,
        };
        if sleep_for >= amount {
            sleep_for - amount
        } else {
            0.0
        }
    }
}

/// The numbers every ExponentialIncrease class shares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemParams {
    /// Seconds added on each 429. The gem's `MIN_SLEEP = 3600 / 4500` = 0.8 s.
    pub min_sleep: f64,
    /// Applied after each 429's sleep. The gem's 1.2.
    pub multiplier: f64,
    /// Jitter as a fraction of the sleep. The gem's 0.1.
    pub jitter: f64,
    /// `@sleep_for` at start. The gem's `start_sleep_for: 0`.
    pub initial_sleep: f64,
    pub decrease: Decrease,
}

/// One process's shared `@sleep_for` and each thread's call in progress.
pub struct GemIncrease {
    p: GemParams,
    shared: f64,
    /// Per thread: the call's own `sleep_for`, while a call is in progress.
    local: Vec<Option<f64>>,
    /// Per thread: the sleep owed before retrying a 429.
    retry_sleep: Vec<Option<f64>>,
    limited: u64,
}

impl GemIncrease {
    pub fn new(p: GemParams, threads: usize) -> Self {
        GemIncrease {
            shared: p.initial_sleep,
            p,
            local: vec![None; threads.max(1)],
            retry_sleep: vec![None; threads.max(1)],
            limited: 0,
        }
    }

    /// The wait before `thread`'s next attempt: a new call's, or a 429 retry's.
    pub fn wait_before(&mut self, thread: usize, rng: &mut SimRng) -> Nanos {
        let sleep = match self.retry_sleep[thread].take() {
            Some(s) => s,
            None => *self.local[thread].insert(self.shared),
        };
        from_secs(sleep + proportional_jitter(sleep, self.p.jitter, rng))
    }

    /// The answer to `thread`'s attempt.
    pub fn answer(&mut self, thread: usize, status: Status, remaining: Option<u64>) {
        let current = self.local[thread].unwrap_or(self.shared);
        if status == Status::Limited {
            self.limited += 1;
            let sleep = current + self.p.min_sleep;
            self.retry_sleep[thread] = Some(sleep);
            self.local[thread] = Some(sleep * self.p.multiplier);
            return;
        }
        self.local[thread] = None;
        self.shared = self.p.decrease.apply(current, remaining);
    }
}

impl Throttle for GemIncrease {
    fn delay(&mut self, _: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        self.wait_before(thread, rng)
    }

    fn on_response(&mut self, _: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        self.answer(thread, response.status, response.remaining);
    }

    /// The shared `@sleep_for`, seconds.
    fn sleep_value(&self) -> f64 {
        self.shared
    }

    /// 429s seen.
    fn backoffs(&self) -> u64 {
        self.limited
    }
}

/// The range checks every gem class shares.
pub fn check_gem_params(out: &mut Vec<ParamProblem>, p: &GemParams) {
    check_non_negative(out, "min_sleep", p.min_sleep);
    if !(p.multiplier.is_finite() && p.multiplier >= 1.0) {
        out.push((
            "multiplier",
            format!("must be at least 1 (got {})", p.multiplier),
        ));
    }
    check_non_negative(out, "jitter", p.jitter);
    check_non_negative(out, "initial_sleep", p.initial_sleep);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    fn params(decrease: Decrease) -> GemParams {
        GemParams {
            min_sleep: 0.8,
            multiplier: 1.2,
            jitter: 0.0,
            initial_sleep: 0.0,
            decrease,
        }
    }

    #[test]
    fn decreases_on_fixed_numbers() {
        assert_eq!(Decrease::Gradual(0.8).apply(2.0, None), 1.2);
        assert_eq!(Decrease::Gradual(0.8).apply(0.5, None), 0.0);
        assert_eq!(Decrease::Proportional(4500.0).apply(9.0, None), 9.0 - 0.002);
        assert_eq!(Decrease::Remaining(4500.0).apply(9.0, Some(100)), 9.0 - 0.2);
        assert_eq!(Decrease::Remaining(4500.0).apply(9.0, None), 9.0);
        // More remaining than the divisor would go negative: 0 instead.
        assert_eq!(Decrease::Remaining(4500.0).apply(9.0, Some(5000)), 0.0);
    }

    #[test]
    fn a_429_adds_min_sleep_sleeps_then_multiplies() {
        let mut g = GemIncrease::new(params(Decrease::Gradual(0.8)), 1);
        let mut rng = test_rng();
        // First call: no sleep at 0.
        assert_eq!(g.wait_before(0, &mut rng), 0);
        g.answer(0, Status::Limited, None);
        // sleep_for 0 + 0.8 = 0.8 before the retry, then × 1.2 = 0.96.
        assert_eq!(g.wait_before(0, &mut rng), from_secs(0.8));
        g.answer(0, Status::Limited, None);
        // 0.96 + 0.8 = 1.76 before the next retry, then 2.112.
        assert_eq!(g.wait_before(0, &mut rng), from_secs(1.76));
        g.answer(0, Status::Ok, None);
        // The call ends: 2.112 − 0.8 = 1.312 is written back.
        assert!((g.sleep_value() - 1.312).abs() < 1e-12);
        assert_eq!(g.wait_before(0, &mut rng), from_secs(1.312));
        assert_eq!(g.backoffs(), 2);
    }

    #[test]
    fn threads_read_the_shared_value_at_call_start_and_the_last_writer_wins() {
        let mut g = GemIncrease::new(params(Decrease::Gradual(0.8)), 2);
        let mut rng = test_rng();
        g.wait_before(0, &mut rng);
        g.wait_before(1, &mut rng);
        g.answer(0, Status::Limited, None);
        g.answer(0, Status::Ok, None);
        // Thread 0 wrote back 0.96 − 0.8.
        assert!((g.sleep_value() - 0.16).abs() < 1e-12);
        // Thread 1's call started at 0 and succeeds: it writes 0, erasing thread 0's value.
        g.answer(1, Status::Ok, None);
        assert_eq!(g.sleep_value(), 0.0);
    }

    #[test]
    fn jitter_is_up_to_a_tenth_of_the_sleep() {
        let p = GemParams {
            jitter: 0.1,
            initial_sleep: 2.0,
            ..params(Decrease::Gradual(0.8))
        };
        let mut g = GemIncrease::new(p, 1);
        let mut rng = test_rng();
        for _ in 0..500 {
            let d = g.wait_before(0, &mut rng);
            assert!((from_secs(2.0)..=from_secs(2.2)).contains(&d));
            g.local[0] = None;
        }
    }
}
