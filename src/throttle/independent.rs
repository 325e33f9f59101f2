//! `independent`: a bound, like the `oracle`, but for senders that stay independent of each
//! other. It measures what random phases alone cost, so that a law's misses on a small bucket
//! can be told apart from what no law of independent processes can avoid.
//!
//! Each process knows what no client can (`BuildContext::population`): the key's sustained
//! rate `R` and the threads `N(t)` on it. It sends at `load` times its fair share, exactly as
//! `fair-share` paces a process once it has found its rate: its `n` threads take turns on one
//! clock, the phase `φ`, which advances by `x = load · R / N(t)` per second (one unit per
//! thread's period), and thread `i` sends its `k`-th request when `φ ≥ k + (i + u) / n + ε`,
//! where `u ~ U[0, 1)` is drawn once per process and `ε ~ U[−jitter, jitter] / n` per send.
//!
//! Nothing else: by default it never reads an answer, never reacts to a 429, never lines its
//! processes up with each other. Its processes' phases are independent and uniform, so many
//! one-thread processes together arrive as a near-Poisson stream, and what a small bucket
//! refuses from them is the floor under any law that keeps its processes independent (they
//! would have to find the gaps in each other's sends, and each hears the key once per own
//! period `N/R`).
//! The start is not what it measures: each thread's first send falls within its first period.
//!
//! Two switches measure what could beat that floor: processes that learn their phases.
//! With `rephase`, a process whose request is refused moves to a new random place in its
//! period (its threads keep their order), so refused processes look for a free phase while
//! the served ones keep theirs. With `spread`, each process's rate is off by a random share
//! within `±spread`, drawn once: the disagreement between blind processes' rates. Equal
//! periods let the phases settle; periods that differ by a share make every phase drift past
//! every other.
//!
//! A thread whose answer comes back after its turn sends at once and skips the turns it
//! missed. Outages are not waited out. Rules without a rate (`concurrency`, `occ`) give it
//! nothing to pace by: it sends without waiting.
//!
//! Parameters and defaults:
//! - `load`: the fleet's offered rate as a share of `R`. Default 1.
//! - `jitter`: each send's offset, as a share of the process's spacing between sends (as
//!   `fair-share`'s threads in line). Default 0.1; below 0.5, so turns keep their order.
//! - `rephase`: a refused process moves to a new random phase. Default false.
//! - `spread`: each process's rate is `1 ± U(spread)` times the others'. Default 0; below 0.5.

use rand::RngExt;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::{Acquire, Algorithm, BuildContext, Population, Throttle};
use crate::config::{ParamProblem, check_positive};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IndependentConfig {
    /// The fleet's offered rate as a share of the key's rate. Default 1.
    pub load: f64,
    /// Each send's random offset, as a share of the process's spacing between sends. Default
    /// 0.1.
    pub jitter: f64,
    /// A refused process moves to a new random phase. Default false.
    pub rephase: bool,
    /// Each process's rate is off by a random share within `±spread`. Default 0.
    pub spread: f64,
}

impl Default for IndependentConfig {
    fn default() -> Self {
        IndependentConfig {
            load: 1.0,
            jitter: 0.1,
            rephase: false,
            spread: 0.0,
        }
    }
}

impl IndependentConfig {
    pub fn build(&self, ctx: BuildContext) -> Independent {
        let threads = ctx.threads.max(1);
        Independent {
            population: ctx.population,
            load: self.load,
            jitter: self.jitter,
            rephase: self.rephase,
            spread: self.spread,
            skew: 1.0,
            threads,
            clock: None,
            offset: 0.0,
            turn: vec![0; threads],
            planned: vec![None; threads],
            rate: 0.0,
        }
    }
}

impl Algorithm for IndependentConfig {
    const NAME: &'static str = "independent";
    const BOUND: bool = true;
    const DESCRIPTION: &'static str = "a bound for independent senders: knows the rule's rate and \
         every thread on the key, and sends at `load` times its fair share, threads in line \
         from a random phase, never lining up with other processes. What random phases \
         alone cost on a small bucket; `rephase` (a refused process moves to a new random \
         phase) and `spread` (rates off by up to that share) measure what learning phases \
         could do";
    const UNITS: &'static [(&'static str, &'static str)] = &[
        ("load", "of the key's rate"),
        ("jitter", "of the process's spacing between sends"),
        ("spread", "of the process's rate"),
    ];

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_positive(&mut out, "load", self.load);
        for (name, value) in [("jitter", self.jitter), ("spread", self.spread)] {
            if !(0.0..0.5).contains(&value) {
                out.push((
                    name,
                    format!("must be at least 0 and below 0.5 (got {value})"),
                ));
            }
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

pub struct Independent {
    population: Arc<Population>,
    load: f64,
    jitter: f64,
    rephase: bool,
    spread: f64,
    /// This process's rate as a share of the fair one: `1 ± U(spread)`, drawn at the first call.
    skew: f64,
    threads: usize,
    /// `(t, φ)`: the phase at the last time it was advanced; none before the first call.
    clock: Option<(Nanos, f64)>,
    /// `u`: the process's random place in a period, drawn at the first call.
    offset: f64,
    /// Per thread: the index `k` of its next turn.
    turn: Vec<u64>,
    /// Per thread: the phase its current wait ends at.
    planned: Vec<Option<f64>>,
    /// The per-thread rate last used, for the chart.
    rate: f64,
}

impl Independent {
    /// `x = load · R / N(now)`, per thread and second.
    fn per_thread_rate(&self, now: Nanos) -> f64 {
        let threads = self.population.active_threads(now).max(1);
        self.load * self.skew * self.population.rate_per_sec / f64::from(threads)
    }

    /// The phase at `now`: what it was at the last call plus `∫ x dt` since, cut at every
    /// change of the population in between.
    fn advance(&mut self, now: Nanos, rng: &mut SimRng) -> f64 {
        if self.clock.is_none() {
            self.offset = rng.random_range(0.0..1.0);
            // No draw without a spread, so the default's random stream is the same.
            if self.spread > 0.0 {
                self.skew = 1.0 + rng.random_range(-self.spread..=self.spread);
            }
        }
        let (mut from, mut phi) = *self.clock.get_or_insert((now, 0.0));
        let mut changes: Vec<Nanos> = (self.population.windows.iter())
            .flat_map(|&(start, stop, _)| [start, stop])
            .filter(|&t| from < t && t < now)
            .collect();
        changes.sort_unstable();
        for t in changes.into_iter().chain([now]) {
            phi += self.per_thread_rate(from) * secs(t.saturating_sub(from));
            from = t;
        }
        self.clock = Some((now, phi));
        phi
    }

    /// Where `thread` sits in a period: `(i + u)/n`, the threads in line from the offset.
    fn place(&self, thread: usize) -> f64 {
        (thread as f64 + self.offset) / self.threads as f64
    }

    /// The phase `thread`'s current wait ends at, planned now if it has none.
    fn planned_or_next(&mut self, thread: usize, phi: f64, rng: &mut SimRng) -> f64 {
        match self.planned[thread] {
            Some(target) => target,
            None => self.next_turn(thread, phi, rng),
        }
    }

    /// The phase at which `thread` sends next: its turn `k` at `k + (i + u)/n`, jittered; a
    /// thread that missed it sends at once, and its next turn is its first after now (the
    /// turns it missed are skipped, not sent in a burst).
    fn next_turn(&mut self, thread: usize, phi: f64, rng: &mut SimRng) -> f64 {
        let place = self.place(thread);
        let spread = self.jitter / self.threads as f64;
        let jitter = if spread > 0.0 {
            rng.random_range(-spread..=spread)
        } else {
            0.0
        };
        let k = self.turn[thread];
        let target = k as f64 + place + jitter;
        if target > phi {
            return target;
        }
        self.turn[thread] = ((phi - place).floor().max(0.0) as u64).max(k);
        phi
    }

    /// How long until the phase reaches `target`, at the rate that holds now.
    fn wait_for(&self, now: Nanos, phi: f64, target: f64) -> Nanos {
        if target <= phi {
            return 0;
        }
        from_secs((target - phi) / self.per_thread_rate(now))
    }
}

impl Throttle for Independent {
    fn delay(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Nanos {
        if self.population.rate_per_sec <= 0.0 {
            return 0;
        }
        let phi = self.advance(now, rng);
        self.rate = self.per_thread_rate(now);
        let target = self.planned_or_next(thread, phi, rng);
        self.planned[thread] = Some(target);
        self.wait_for(now, phi, target)
    }

    fn acquire(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Acquire {
        if self.population.rate_per_sec <= 0.0 {
            return Acquire::Send;
        }
        let phi = self.advance(now, rng);
        let target = self.planned_or_next(thread, phi, rng);
        // The population grew while this thread waited: the phase turns slower, wait on.
        let wait = self.wait_for(now, phi, target);
        if wait > 0 {
            self.planned[thread] = Some(target);
            return Acquire::Wait(wait);
        }
        self.planned[thread] = None;
        self.turn[thread] += 1;
        Acquire::Send
    }

    /// With `rephase`, a refusal moves the process to a new random phase: every thread's next
    /// turn is its first at the new place after now.
    fn on_response(&mut self, now: Nanos, _: usize, response: &Response, rng: &mut SimRng) {
        if !self.rephase
            || response.status != Status::Limited
            || self.population.rate_per_sec <= 0.0
        {
            return;
        }
        let phi = self.advance(now, rng);
        self.offset = rng.random_range(0.0..1.0);
        for thread in 0..self.threads {
            self.turn[thread] = (phi - self.place(thread)).ceil().max(0.0) as u64;
            self.planned[thread] = None;
        }
    }

    /// Each thread's period, `1 / x`, seconds.
    fn sleep_value(&self) -> f64 {
        if self.rate > 0.0 {
            1.0 / self.rate
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    /// 5 per second; `threads` threads of group `clients` throughout, and `late` threads of
    /// group `late` from 100 s on.
    fn population(threads: u32, late: u32) -> Arc<Population> {
        Arc::new(Population {
            rate_per_sec: 5.0,
            windows: vec![(0, 1000 * S, threads), (100 * S, 1000 * S, late)],
            groups: vec!["clients".into(), "late".into()],
            ..Population::default()
        })
    }

    fn build(load: f64, jitter: f64, threads: usize, population: Arc<Population>) -> Independent {
        let cfg = IndependentConfig {
            load,
            jitter,
            ..IndependentConfig::default()
        };
        cfg.build(BuildContext {
            population,
            ..BuildContext::solo(threads)
        })
    }

    /// Every send of every thread of `t` until `end`, in time order, each thread asking again
    /// 20 ms after its send (its answer's latency).
    fn sends(t: &mut Independent, end: Nanos) -> Vec<(Nanos, usize)> {
        let mut rng = test_rng();
        let mut next: Vec<Nanos> = (0..t.threads).map(|i| t.delay(0, i, &mut rng)).collect();
        let mut out = Vec::new();
        loop {
            let (thread, &at) = next.iter().enumerate().min_by_key(|(_, at)| **at).unwrap();
            if at >= end {
                return out;
            }
            match t.acquire(at, thread, &mut rng) {
                Acquire::Send => {
                    out.push((at, thread));
                    let back = at + S / 50;
                    next[thread] = back + t.delay(back, thread, &mut rng);
                }
                Acquire::Wait(w) => next[thread] = at + w,
                Acquire::GiveUp => unreachable!("it never gives up"),
            }
        }
    }

    #[test]
    fn a_thread_sends_at_its_share_of_the_rate_within_its_jitter() {
        // 10 threads on 5 per second: each 2 s apart, ±0.1 of that.
        let mut t = build(1.0, 0.1, 1, population(10, 0));
        let times: Vec<f64> = sends(&mut t, 100 * S).iter().map(|s| secs(s.0)).collect();
        assert!(times[0] < 2.0 * 1.1, "first send {}", times[0]);
        assert!((49..=50).contains(&times.len()), "{} sends", times.len());
        for gap in times.windows(2).map(|w| w[1] - w[0]) {
            assert!((1.6 - 1e-6..=2.4 + 1e-6).contains(&gap), "gap {gap}");
        }
        assert!((t.sleep_value() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_process_threads_take_turns_at_an_even_spacing() {
        // 4 threads of 4 on 5 per second, no jitter: one send every 0.2 s, threads in turn.
        let mut t = build(1.0, 0.0, 4, population(4, 0));
        let s = sends(&mut t, 40 * S);
        assert_eq!(s.len(), 200);
        for w in s.windows(2) {
            let gap = secs(w[1].0 - w[0].0);
            assert!((gap - 0.2).abs() < 1e-6, "gap {gap}");
            assert_eq!(w[1].1, (w[0].1 + 1) % 4, "turns out of order");
        }
    }

    #[test]
    fn the_load_scales_the_rate_and_a_crowd_that_grows_slows_it() {
        // Alone on 5 per second at load 0.5: 2.5 a second. From 100 s, 4 more threads on the
        // key: 0.5 a second.
        let mut t = build(0.5, 0.1, 1, population(1, 4));
        let s = sends(&mut t, 200 * S);
        let before = s.iter().filter(|x| x.0 < 100 * S).count();
        let after = s.iter().filter(|x| x.0 >= 101 * S).count();
        assert!((248..=251).contains(&before), "{before} before");
        assert!((49..=51).contains(&after), "{after} after");
    }

    #[test]
    fn a_late_thread_sends_at_once_and_skips_the_turns_it_missed() {
        let mut rng = test_rng();
        let mut t = build(1.0, 0.0, 1, population(1, 0));
        let first = t.delay(0, 0, &mut rng);
        assert_eq!(t.acquire(first, 0, &mut rng), Acquire::Send);
        // Its answer comes back 10.5 periods (2.1 s) later: no wait, and its next turn is the
        // first after that send (half a period on), not a burst of the ten it missed.
        let late = first + 2100 * S / 1000;
        assert_eq!(t.delay(late, 0, &mut rng), 0);
        assert_eq!(t.acquire(late, 0, &mut rng), Acquire::Send);
        let next = t.delay(late, 0, &mut rng);
        assert!(next.abs_diff(S / 10) < 1000, "next wait {next}");
    }

    #[test]
    fn without_a_rate_it_does_not_wait_and_bad_parameters_are_named() {
        let mut rng = test_rng();
        let mut t = build(1.0, 0.1, 2, Arc::new(Population::default()));
        assert_eq!(t.delay(0, 1, &mut rng), 0);
        assert_eq!(t.acquire(0, 1, &mut rng), Acquire::Send);
        let names =
            |c: IndependentConfig| -> Vec<&str> { c.problems().into_iter().map(|p| p.0).collect() };
        let cfg = |load, jitter, spread| IndependentConfig {
            load,
            jitter,
            spread,
            rephase: true,
        };
        assert_eq!(names(cfg(0.0, 0.1, 0.0)), ["load"]);
        assert_eq!(
            names(cfg(f64::NAN, 0.5, -0.1)),
            ["load", "jitter", "spread"]
        );
        assert!(names(IndependentConfig::default()).is_empty());
    }

    #[test]
    fn a_refused_process_moves_to_a_new_phase_only_with_rephase() {
        // 10 threads on 5 per second, no jitter: this one sends every 2 s at its place.
        let refused = Response::bare(Status::Limited);
        let ok = Response::bare(Status::Ok);
        for rephase in [false, true] {
            let mut rng = test_rng();
            let mut t = IndependentConfig {
                jitter: 0.0,
                rephase,
                ..IndependentConfig::default()
            }
            .build(BuildContext {
                population: population(10, 0),
                ..BuildContext::solo(1)
            });
            let first = t.delay(0, 0, &mut rng);
            assert_eq!(t.acquire(first, 0, &mut rng), Acquire::Send);
            let back = first + S / 50;
            // Served: the next send is one period after the first.
            t.on_response(back, 0, &ok, &mut rng);
            let second = back + t.delay(back, 0, &mut rng);
            assert!(
                second.abs_diff(first + 2 * S) < 1000,
                "rephase {rephase}: {second}"
            );
            assert_eq!(t.acquire(second, 0, &mut rng), Acquire::Send);
            // Refused: with rephase, a new place within the next period; without, the old one.
            let back = second + S / 50;
            t.on_response(back, 0, &refused, &mut rng);
            let third = back + t.delay(back, 0, &mut rng);
            let on_schedule = third.abs_diff(first + 4 * S) < 1000;
            assert_eq!(
                on_schedule, !rephase,
                "rephase {rephase}: third send at {third}"
            );
            assert!(third > back && third <= back + 2 * S, "{third}");
        }
    }

    #[test]
    fn a_spread_skews_each_process_rate_once_within_its_bounds() {
        let rate = |spread: f64, seed: u64| {
            let mut t = IndependentConfig {
                spread,
                ..IndependentConfig::default()
            }
            .build(BuildContext {
                population: population(10, 0),
                ..BuildContext::solo(1)
            });
            let mut rng = crate::rng::stream(seed, 0, crate::rng::Stream::Throttle);
            t.delay(0, 0, &mut rng);
            1.0 / t.sleep_value()
        };
        // Fair share 0.5 a second; within ±10 %, and not the same for every process.
        let skewed: Vec<f64> = (0..20).map(|seed| rate(0.1, seed)).collect();
        assert!(
            skewed.iter().all(|r| (0.45..=0.55).contains(r)),
            "{skewed:?}"
        );
        assert!(skewed.iter().any(|r| (r - 0.5).abs() > 0.01), "{skewed:?}");
        assert!((0..20).all(|seed| (rate(0.0, seed) - 0.5).abs() < 1e-12));
    }
}
