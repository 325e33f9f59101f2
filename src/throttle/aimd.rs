//! `aimd`: additive increase, multiplicative decrease of a send rate, the rule of TCP's
//! congestion avoidance (Jacobson 1988; Chiu and Jain 1989) applied to requests per second.
//!
//! Each process paces its sends at `rate`: the next send of any of its threads is one `1 /
//! rate` after the previous one. Every success adds `increase / rate`, so a process that
//! sends at its rate gains `increase` requests per second every second; a 429 or 503 multiplies
//! the rate by `decrease`, at most once per round (answers to requests sent before the last
//! decrease do not decrease again, as TCP halves once per window of losses). The rate stays
//! within `[min_rate, max_rate]`. The defaults are ours; no single source fixes them.

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{Nanos, from_secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AimdConfig {
    /// Requests per second at start. Default 1.
    pub initial_rate: f64,
    /// Requests per second gained per second of successes. Default 0.01.
    pub increase: f64,
    /// Factor applied on a 429 or 503. Default 0.5, TCP's halving.
    pub decrease: f64,
    /// The lowest rate, requests per second. Default 0.01 (one request per 100 s).
    pub min_rate: f64,
    /// The highest rate, requests per second. Default 1000.
    pub max_rate: f64,
}

impl Default for AimdConfig {
    fn default() -> Self {
        AimdConfig {
            initial_rate: 1.0,
            increase: 0.01,
            decrease: 0.5,
            min_rate: 0.01,
            max_rate: 1000.0,
        }
    }
}

impl AimdConfig {
    pub fn build(&self, ctx: BuildContext) -> Aimd {
        Aimd {
            rate: self.initial_rate,
            cfg: self.clone(),
            next_slot: 0,
            last_decrease: None,
            sent_at: vec![0; ctx.threads.max(1)],
            decreases: 0,
        }
    }
}

impl Algorithm for AimdConfig {
    const NAME: &'static str = "aimd";
    const DESCRIPTION: &'static str =
        "additive increase, multiplicative decrease of each process's send rate";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_positive(&mut out, "initial_rate", self.initial_rate);
        check_positive(&mut out, "increase", self.increase);
        if !(self.decrease > 0.0 && self.decrease < 1.0) {
            out.push((
                "decrease",
                format!("must be above 0 and below 1 (got {})", self.decrease),
            ));
        }
        check_positive(&mut out, "min_rate", self.min_rate);
        if !(self.max_rate.is_finite() && self.max_rate >= self.min_rate) {
            out.push((
                "max_rate",
                format!(
                    "must be at least min_rate ({}) (got {})",
                    self.min_rate, self.max_rate
                ),
            ));
        }
        if !(self.min_rate..=self.max_rate).contains(&self.initial_rate) {
            out.push((
                "initial_rate",
                format!(
                    "must be from min_rate to max_rate (got {})",
                    self.initial_rate
                ),
            ));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

pub struct Aimd {
    cfg: AimdConfig,
    /// Requests per second.
    rate: f64,
    /// The earliest time the process's next send may go.
    next_slot: Nanos,
    last_decrease: Option<Nanos>,
    /// Per thread: when its request in flight was sent.
    sent_at: Vec<Nanos>,
    decreases: u64,
}

impl Aimd {
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

impl Throttle for Aimd {
    fn delay(&mut self, now: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        let slot = self.next_slot.max(now);
        self.next_slot = slot.saturating_add(from_secs(1.0 / self.rate));
        slot - now
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        self.sent_at[thread] = now;
        Acquire::Send
    }

    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        match response.status {
            Status::Ok => {
                self.rate = (self.rate + self.cfg.increase / self.rate).min(self.cfg.max_rate);
            }
            Status::Limited | Status::Unavailable => {
                if self.last_decrease.is_none_or(|d| self.sent_at[thread] >= d) {
                    self.rate = (self.rate * self.cfg.decrease).max(self.cfg.min_rate);
                    self.last_decrease = Some(now);
                    self.decreases += 1;
                }
            }
            Status::Error => {}
        }
    }

    /// Seconds between the process's sends, `1 / rate`.
    fn sleep_value(&self) -> f64 {
        1.0 / self.rate
    }

    /// Decreases.
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

    #[test]
    fn threads_of_a_process_share_one_pace() {
        let cfg = AimdConfig {
            initial_rate: 4.0,
            ..AimdConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(3));
        let mut rng = test_rng();
        let slots: Vec<Nanos> = (0..3).map(|th| t.delay(0, th, &mut rng)).collect();
        assert_eq!(slots, [0, S / 4, S / 2]);
        // A thread asking after the reserved slots goes at once.
        assert_eq!(t.delay(5 * S, 0, &mut rng), 0);
    }

    #[test]
    fn success_adds_increase_over_rate_and_a_429_halves_once_per_round() {
        let cfg = AimdConfig {
            initial_rate: 2.0,
            increase: 0.1,
            ..AimdConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(2));
        let mut rng = test_rng();
        t.acquire(0, 0, &mut rng);
        t.on_response(S, 0, &Response::bare(Status::Ok), &mut rng);
        assert!((t.rate() - 2.05).abs() < 1e-12);
        // Both threads' requests went out at 1 s and come back refused.
        t.acquire(S, 0, &mut rng);
        t.acquire(S, 1, &mut rng);
        t.on_response(2 * S, 0, &Response::bare(Status::Limited), &mut rng);
        t.on_response(2 * S, 1, &Response::bare(Status::Limited), &mut rng);
        assert!((t.rate() - 1.025).abs() < 1e-12);
        assert_eq!(t.backoffs(), 1);
        // A request sent after the decrease may decrease again.
        t.acquire(3 * S, 1, &mut rng);
        t.on_response(3 * S, 1, &Response::bare(Status::Unavailable), &mut rng);
        assert!((t.rate() - 0.5125).abs() < 1e-12);
        assert!((t.sleep_value() - 1.0 / 0.5125).abs() < 1e-12);
    }

    #[test]
    fn the_rate_stays_within_its_bounds() {
        let cfg = AimdConfig {
            initial_rate: 0.02,
            min_rate: 0.01,
            max_rate: 0.03,
            increase: 1.0,
            ..AimdConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        for i in 0..5 {
            t.acquire(i * S, 0, &mut rng);
            t.on_response(i * S, 0, &Response::bare(Status::Limited), &mut rng);
        }
        assert_eq!(t.rate(), 0.01);
        t.on_response(9 * S, 0, &Response::bare(Status::Ok), &mut rng);
        assert_eq!(t.rate(), 0.03);
    }
}
