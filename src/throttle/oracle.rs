//! `oracle`: not a real client but the bound the others are measured against. It knows what
//! no client can: the server's sustained rate `R` for its key and how many threads `N(t)` use
//! that key at any time (`BuildContext::population`). Each thread sends every `N(t) / R`
//! seconds, its first send at a random phase within that spacing so threads do not collide,
//! which is exactly the server's rate shared equally. With `burst` on (the default) it also
//! spends what the server says is left beyond one request per thread: while the last
//! `RateLimit-Remaining` its process saw is above `N(t)`, threads send without waiting, so a
//! bucket's initial allowance is used too.

use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::{Acquire, Algorithm, BuildContext, Population, Throttle};
use crate::exchange::Response;
use crate::rng::SimRng;
use crate::time::{Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OracleConfig {
    /// Spend the remaining allowance above one request per thread without waiting. Default
    /// true.
    pub burst: bool,
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig { burst: true }
    }
}

impl OracleConfig {
    pub fn build(&self, ctx: BuildContext) -> Oracle {
        Oracle {
            burst: self.burst,
            population: ctx.population,
            last_send: vec![None; ctx.threads.max(1)],
            last_remaining: None,
            spacing: 0,
        }
    }
}

impl Algorithm for OracleConfig {
    const NAME: &'static str = "oracle";
    const DESCRIPTION: &'static str =
        "the bound: knows the server's rate and the thread count, spaces requests exactly";

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

pub struct Oracle {
    burst: bool,
    population: Arc<Population>,
    /// Per thread: its last send.
    last_send: Vec<Option<Nanos>>,
    /// The newest `RateLimit-Remaining` the process saw.
    last_remaining: Option<u64>,
    /// The spacing last computed.
    spacing: Nanos,
}

impl Oracle {
    /// `N(now) / R`: each thread's share of the server's rate, as a spacing.
    pub fn spacing(&self, now: Nanos) -> Option<Nanos> {
        let rate = self.population.rate_per_sec;
        (rate > 0.0).then(|| {
            let threads = self.population.active_threads(now).max(1);
            from_secs(f64::from(threads) / rate)
        })
    }
}

impl Throttle for Oracle {
    fn delay(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        let Some(spacing) = self.spacing(now) else {
            return 0;
        };
        self.spacing = spacing;
        let threads = u64::from(self.population.active_threads(now).max(1));
        if self.burst && self.last_remaining.is_some_and(|r| r > threads) {
            return 0;
        }
        match self.last_send[thread] {
            None if spacing > 0 => rng.random_range(0..spacing),
            None => 0,
            Some(sent) => sent.saturating_add(spacing).saturating_sub(now),
        }
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        self.last_send[thread] = Some(now);
        Acquire::Send
    }

    fn on_response(&mut self, _: Nanos, _: usize, response: &Response, _: &mut SimRng) {
        if response.remaining.is_some() {
            self.last_remaining = response.remaining;
        }
    }

    /// Each thread's spacing, `N / R`, seconds.
    fn sleep_value(&self) -> f64 {
        secs(self.spacing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Status;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn ctx(threads: usize, population: Population) -> BuildContext {
        BuildContext {
            population: Arc::new(population),
            ..BuildContext::solo(threads)
        }
    }

    fn heroku() -> Population {
        // 4500/h; 10 threads throughout, 15 more from 1 h to 3 h.
        Population {
            rate_per_sec: 1.25,
            windows: vec![(0, 5 * 3600 * S, 10), (3600 * S, 3 * 3600 * S, 15)],
        }
    }

    fn answer(remaining: u64) -> Response {
        Response {
            status: Status::Ok,
            remaining: Some(remaining),
            limit: None,
            retry_after: None,
            latency: 0,
        }
    }

    #[test]
    fn threads_share_the_rate_equally_as_the_population_changes() {
        let cfg = OracleConfig { burst: false };
        let mut t = cfg.build(ctx(1, heroku()));
        let mut rng = test_rng();
        // 10 threads at 1.25/s: one send each 8 s; the first at a random phase.
        let first = t.delay(0, 0, &mut rng);
        assert!(first < 8 * S);
        t.acquire(first, 0, &mut rng);
        assert_eq!(t.delay(first, 0, &mut rng), 8 * S);
        // An answer 20 ms later waits out the rest of the spacing.
        assert_eq!(t.delay(first + S / 50, 0, &mut rng), 8 * S - S / 50);
        assert_eq!(t.sleep_value(), 8.0);
        // With 25 threads, 20 s.
        t.acquire(2 * 3600 * S, 0, &mut rng);
        assert_eq!(t.delay(2 * 3600 * S, 0, &mut rng), 20 * S);
    }

    #[test]
    fn burst_spends_what_is_left_above_one_per_thread() {
        let mut t = OracleConfig::default().build(ctx(1, heroku()));
        let mut rng = test_rng();
        t.acquire(0, 0, &mut rng);
        t.on_response(S, 0, &answer(11), &mut rng);
        assert_eq!(t.delay(S, 0, &mut rng), 0);
        t.on_response(S, 0, &answer(10), &mut rng);
        assert_eq!(t.delay(S, 0, &mut rng), 7 * S);
    }

    #[test]
    fn without_a_known_rate_it_does_not_wait() {
        let mut t = OracleConfig::default().build(BuildContext::solo(1));
        assert_eq!(t.delay(0, 0, &mut test_rng()), 0);
    }
}
