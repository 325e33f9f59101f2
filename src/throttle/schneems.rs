//! `schneems`: the Heroku GCRA demo client (Richard Schneeman's "Rate Limit GCRA Client
//! Demo"; docs/sources.md), every knob a parameter whose default is the demo's value.
//!
//! The state belongs to the process and its threads share it. Before each request a thread
//! waits `sleep_for + U[0, jitter × sleep_for]`. On a 429 the first thread to see one becomes
//! "the retrying thread" and alone may change the shared state ("don't double dip"); it
//! multiplies `sleep_for` only when its retry at the current value is refused too ("don't
//! double on first 429"). On success:
//!
//! ```text
//! sleep_for -= remaining × sleep_for / (max_limit × time_factor)
//! time_factor = 1 / (1 − e^(−seconds_since_last_multiply / time_factor_period))
//! ```
//!
//! so a process decreases fast when the server has plenty left and when it has not been rate
//! limited for a long time, and slowly when it is "flappy".

use serde::{Deserialize, Serialize};

use super::{Algorithm, BuildContext, Throttle, proportional_jitter};
use crate::config::{ParamProblem, check_non_negative, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchneemsConfig {
    /// `sleep_for` at start. Default 1.6 s.
    pub initial_sleep: HumanDuration,
    /// `sleep_for` never goes below this. Default 80 ms.
    pub min_sleep: HumanDuration,
    /// Jitter as a fraction of `sleep_for`, uniform in `[0, jitter × sleep_for]`. Default 0.1
    /// ("0 to 10% seems reasonable").
    pub jitter: f64,
    /// The server's limit the client assumes, the one number it must know. Default 4500.
    pub max_limit: f64,
    /// Denominator of the time factor's exponent. Default 3600 s, as the demo's text gives.
    pub time_factor_period: HumanDuration,
    /// How long ago the last multiply is taken to be at start. Default 1800 s.
    pub initial_since_multiply: HumanDuration,
    /// Factor applied to `sleep_for` when backing off. Default 2 (doubling).
    pub multiplier: f64,
    /// Wait `sleep_for` before requests even before the first 429. Default true; the original
    /// demo code sent without sleeping until its first 429.
    pub sleep_before_first_429: bool,
    /// Use the time factor in the decrease (off: time_factor = 1).
    pub time_factor: bool,
    /// Use `remaining` in the decrease (off: remaining = 1).
    pub remaining_term: bool,
    /// Only the first thread that sees a 429 changes the shared state.
    pub no_double_dip: bool,
    /// Multiply on the first 429 instead of first retrying at the current value.
    pub double_on_first_429: bool,
}

impl Default for SchneemsConfig {
    fn default() -> Self {
        SchneemsConfig {
            initial_sleep: HumanDuration::from_millis(1600),
            min_sleep: HumanDuration::from_millis(80),
            jitter: 0.1,
            max_limit: 4500.0,
            time_factor_period: HumanDuration::from_secs(3600),
            initial_since_multiply: HumanDuration::from_secs(1800),
            multiplier: 2.0,
            sleep_before_first_429: true,
            time_factor: true,
            remaining_term: true,
            no_double_dip: true,
            double_on_first_429: false,
        }
    }
}

impl Algorithm for SchneemsConfig {
    const NAME: &'static str = "schneems";
    const DESCRIPTION: &'static str = "the Heroku GCRA demo client: double on 429, decrease by remaining and time since the last doubling";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_non_negative(&mut out, "jitter", self.jitter);
        check_positive(&mut out, "max_limit", self.max_limit);
        check_positive(
            &mut out,
            "time_factor_period",
            self.time_factor_period.secs(),
        );
        if !(self.multiplier.is_finite() && self.multiplier > 1.0) {
            out.push((
                "multiplier",
                format!("must be above 1 to back off (got {})", self.multiplier),
            ));
        }
        if self.initial_sleep < self.min_sleep {
            out.push((
                "initial_sleep",
                format!(
                    "must be at least min_sleep ({}) (got {})",
                    self.min_sleep, self.initial_sleep
                ),
            ));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(Schneems::new(self.clone(), ctx))
    }
}

/// One process's shared state.
pub struct Schneems {
    cfg: SchneemsConfig,
    /// Seconds.
    sleep_for: f64,
    rate_limit_count: u64,
    /// Seconds since run start; negative before the first multiply.
    last_multiply_at: f64,
    /// The thread allowed to change the state while a 429 streak lasts.
    retry_thread: Option<usize>,
    /// Consecutive 429s per thread.
    streak: Vec<u32>,
    seen_429: bool,
}

impl Schneems {
    pub fn new(cfg: SchneemsConfig, ctx: BuildContext) -> Self {
        Schneems {
            sleep_for: cfg.initial_sleep.secs(),
            last_multiply_at: -cfg.initial_since_multiply.secs(),
            rate_limit_count: 0,
            retry_thread: None,
            streak: vec![0; ctx.threads.max(1)],
            seen_429: false,
            cfg,
        }
    }

    /// `1 − e^(−t / period)`, the reciprocal of the demo's time factor. Kept in this form so a
    /// multiply that just happened gives 0 (no decrease) instead of an infinite factor.
    fn inverse_time_factor(&self, now: f64) -> f64 {
        if !self.cfg.time_factor {
            return 1.0;
        }
        let since = (now - self.last_multiply_at).max(0.0);
        1.0 - (-since / self.cfg.time_factor_period.secs()).exp()
    }

    /// How much one success at `now` with `remaining` left takes off `sleep_for`.
    pub fn decrease(&self, now: f64, remaining: Option<u64>) -> f64 {
        let remaining = match (self.cfg.remaining_term, remaining) {
            (true, Some(r)) => r as f64,
            // A server that does not say how many are left gives the term no information.
            _ => 1.0,
        };
        remaining * self.sleep_for * self.inverse_time_factor(now) / self.cfg.max_limit
    }

    fn on_limited(&mut self, now: f64, thread: usize) {
        self.seen_429 = true;
        if self.cfg.no_double_dip {
            match self.retry_thread {
                None => self.retry_thread = Some(thread),
                Some(t) if t != thread => return,
                Some(_) => {}
            }
        }
        let streak = &mut self.streak[thread];
        *streak = streak.saturating_add(1);
        if self.cfg.double_on_first_429 || *streak >= 2 {
            self.sleep_for *= self.cfg.multiplier;
            self.last_multiply_at = now;
            self.rate_limit_count += 1;
        }
    }

    fn on_ok(&mut self, now: f64, thread: usize, remaining: Option<u64>) {
        if self.retry_thread == Some(thread) {
            self.retry_thread = None;
        }
        self.streak[thread] = 0;
        let floor = self.cfg.min_sleep.secs();
        // The decrease is never negative, so at the floor it cannot move `sleep_for`: skip its
        // `exp`, which busy clients at their floor would otherwise pay on every 2xx.
        if self.sleep_for <= floor {
            self.sleep_for = floor;
            return;
        }
        let next = self.sleep_for - self.decrease(now, remaining);
        self.sleep_for = next.max(floor);
    }
}

impl Throttle for Schneems {
    fn delay(&mut self, _now: Nanos, _thread: usize, rng: &mut SimRng) -> Nanos {
        if !self.cfg.sleep_before_first_429 && !self.seen_429 {
            return 0;
        }
        let base = self.sleep_for;
        from_secs(base + proportional_jitter(base, self.cfg.jitter, rng))
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        let now = secs(now);
        match response.status {
            Status::Limited => self.on_limited(now, thread),
            Status::Ok => self.on_ok(now, thread, response.remaining),
            // The demo client reacts to 429 only; errors neither raise nor lower the sleep.
            Status::Unavailable | Status::Error => {}
        }
    }

    fn sleep_value(&self) -> f64 {
        self.sleep_for
    }

    fn backoffs(&self) -> u64 {
        self.rate_limit_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    fn ctx(threads: usize) -> BuildContext {
        BuildContext::solo(threads)
    }

    fn resp(status: Status, remaining: u64) -> Response {
        Response {
            status,
            remaining: Some(remaining),
            limit: Some(4500),
            retry_after: None,
            latency: 0,
            quota: None,
            reset: None,
        }
    }

    fn at(s: f64) -> Nanos {
        from_secs(s)
    }

    #[test]
    fn decrease_matches_the_demos_formula_on_fixed_numbers() {
        let cfg = SchneemsConfig {
            initial_sleep: HumanDuration::from_secs(20),
            ..SchneemsConfig::default()
        };
        let t = Schneems::new(cfg, ctx(1));
        // At t = 1800 s the last multiply was 3600 s ago: time factor 1 / (1 − e^−1).
        let tf = 1.0 / (1.0 - (-1.0f64).exp());
        let want = 100.0 * 20.0 / (4500.0 * tf);
        assert!((t.decrease(1800.0, Some(100)) - want).abs() < 1e-12);
        // The demo's worked example without the time factor: with 100 left, a 20 s client
        // drops by 100 × 20 / 4500 = 0.44 s.
        let no_tf = SchneemsConfig {
            initial_sleep: HumanDuration::from_secs(20),
            time_factor: false,
            ..SchneemsConfig::default()
        };
        let t = Schneems::new(no_tf, ctx(1));
        assert!((t.decrease(0.0, Some(100)) - 100.0 * 20.0 / 4500.0).abs() < 1e-12);
    }

    #[test]
    fn time_factor_matches_the_demos_examples() {
        // "1.0/(1.0 - Math::E ** -(30/3600.0)) # => 120" and "... (3600/3600.0) => 1.58".
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(1));
        t.last_multiply_at = 0.0;
        assert!((1.0 / t.inverse_time_factor(30.0) - 120.5).abs() < 0.01);
        assert!((1.0 / t.inverse_time_factor(3600.0) - 1.5819767068693265).abs() < 1e-9);
        // Just multiplied: no decrease at all.
        assert_eq!(t.decrease(0.0, Some(4500)), 0.0);
    }

    #[test]
    fn decrease_grows_with_remaining_and_with_time_since_multiply() {
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(1));
        t.last_multiply_at = 0.0;
        assert!(t.decrease(600.0, Some(1000)) > t.decrease(600.0, Some(10)));
        assert!(t.decrease(3600.0, Some(100)) > t.decrease(60.0, Some(100)));
    }

    #[test]
    fn switching_the_remaining_term_off_uses_one() {
        let cfg = SchneemsConfig {
            remaining_term: false,
            ..SchneemsConfig::default()
        };
        let t = Schneems::new(cfg, ctx(1));
        assert_eq!(t.decrease(100.0, Some(4000)), t.decrease(100.0, Some(1)));
    }

    #[test]
    fn success_never_goes_below_min_sleep() {
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(1));
        let mut rng = test_rng();
        for i in 0..10_000 {
            t.on_response(at(i as f64), 0, &resp(Status::Ok, 4500), &mut rng);
        }
        assert!((t.sleep_value() - 0.08).abs() < 1e-12);
    }

    #[test]
    fn first_429_retries_at_the_same_value_and_the_second_doubles() {
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(2));
        let mut rng = test_rng();
        t.on_response(at(10.0), 0, &resp(Status::Limited, 0), &mut rng);
        assert_eq!(t.sleep_value(), 1.6);
        assert_eq!(t.backoffs(), 0);
        t.on_response(at(12.0), 0, &resp(Status::Limited, 0), &mut rng);
        assert_eq!(t.sleep_value(), 3.2);
        assert_eq!(t.backoffs(), 1);
        assert_eq!(t.last_multiply_at, 12.0);
        t.on_response(at(16.0), 0, &resp(Status::Limited, 0), &mut rng);
        assert_eq!(t.sleep_value(), 6.4);
    }

    #[test]
    fn only_the_retrying_thread_changes_the_state() {
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(3));
        let mut rng = test_rng();
        t.on_response(at(1.0), 1, &resp(Status::Limited, 0), &mut rng);
        // Threads 0 and 2 see 429s too: no double dipping.
        for _ in 0..5 {
            t.on_response(at(2.0), 0, &resp(Status::Limited, 0), &mut rng);
            t.on_response(at(2.0), 2, &resp(Status::Limited, 0), &mut rng);
        }
        assert_eq!(t.backoffs(), 0);
        t.on_response(at(3.0), 1, &resp(Status::Limited, 0), &mut rng);
        assert_eq!(t.backoffs(), 1);
        // The retrying thread succeeds and hands the role back.
        t.on_response(at(9.0), 1, &resp(Status::Ok, 0), &mut rng);
        t.on_response(at(10.0), 2, &resp(Status::Limited, 0), &mut rng);
        t.on_response(at(11.0), 2, &resp(Status::Limited, 0), &mut rng);
        assert_eq!(t.backoffs(), 2);
    }

    #[test]
    fn without_no_double_dip_every_thread_doubles() {
        let cfg = SchneemsConfig {
            no_double_dip: false,
            double_on_first_429: true,
            ..SchneemsConfig::default()
        };
        let mut t = Schneems::new(cfg, ctx(3));
        let mut rng = test_rng();
        for thread in 0..3 {
            t.on_response(at(1.0), thread, &resp(Status::Limited, 0), &mut rng);
        }
        assert_eq!(t.backoffs(), 3);
        assert!((t.sleep_value() - 1.6 * 8.0).abs() < 1e-9);
    }

    #[test]
    fn delay_is_sleep_plus_up_to_ten_percent() {
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(1));
        let mut rng = test_rng();
        let (lo, hi) = (at(1.6), at(1.76));
        let mut max = 0;
        for _ in 0..2000 {
            let d = t.delay(0, 0, &mut rng);
            assert!((lo..=hi).contains(&d), "{d}");
            max = max.max(d);
        }
        assert!(max > at(1.74), "jitter should reach close to 10%: {max}");
    }

    #[test]
    fn the_original_demo_sent_without_sleeping_until_its_first_429() {
        let cfg = SchneemsConfig {
            sleep_before_first_429: false,
            ..SchneemsConfig::default()
        };
        let mut t = Schneems::new(cfg, ctx(1));
        let mut rng = test_rng();
        assert_eq!(t.delay(0, 0, &mut rng), 0);
        t.on_response(NANOS_PER_SEC, 0, &resp(Status::Limited, 0), &mut rng);
        assert!(t.delay(NANOS_PER_SEC, 0, &mut rng) >= at(1.6));
    }

    #[test]
    fn errors_leave_the_state_alone() {
        let mut t = Schneems::new(SchneemsConfig::default(), ctx(1));
        let mut rng = test_rng();
        let e = Response::bare(Status::Error);
        t.on_response(at(5.0), 0, &e, &mut rng);
        assert_eq!(t.sleep_value(), 1.6);
        assert_eq!(t.backoffs(), 0);
    }

    #[test]
    fn bad_parameters_are_named() {
        let cfg = SchneemsConfig {
            jitter: -0.1,
            multiplier: 1.0,
            max_limit: 0.0,
            ..SchneemsConfig::default()
        };
        let fields: Vec<_> = cfg.problems().into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["jitter", "max_limit", "multiplier"]);
    }
}
