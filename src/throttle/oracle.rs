//! `oracle`: not a real client but the bound the others are measured against. It knows what
//! no client can (`BuildContext::population`): the server's rule for its key (the sustained
//! rate `R`, what a bucket holds at t = 0, whether requests are counted in windows) and which
//! threads use that key at any time, and every thread has its place in line among them.
//!
//! **Slots.** The key's rate is cut into slots, slot `m` at `t_m = ⌈(m + φ) / R⌉`, and at time
//! `t` slot `m` belongs to the thread whose place in line is `m mod N(t)`, `N(t)` the threads on
//! the key then. Each thread sends in its own slots only, so the threads share the rate exactly
//! equally, no two send in one slot, and no more is ever sent than the rule admits:
//! - bucket rules (`gcra`, `token-bucket`): `φ = 1`, so slot `m` comes when the `m + 1`-th
//!   token has been refilled. A thread whose answer came back after its next slot sends at
//!   once (the token waits in the bucket), catching up on the slots it missed while the
//!   population did not change.
//! - window rules (`fixed-window`, `sliding-window`): `φ = 0`, so every window of length
//!   `limit / R` aligned to t = 0 holds exactly `limit` slots, and any such window, aligned or
//!   not, at most `limit`. A thread never sends after its slot (it might land in a window that
//!   is already full): a late answer skips to its next slot.
//! - the sliding-window counter (`sliding-window-counter`): as a window rule, but `φ = ½`. On
//!   the grid (`φ = 0`) the previous window's `limit` slots weigh `limit − j` at the `j`-th
//!   slot of the next, which has counted `j`: exactly the limit, refused. Half a slot later
//!   they weigh half a request less, and every window still holds exactly `limit` slots.
//!
//! **Burst.** With `burst` on (the default), what the rule admits at t = 0 beyond its rate (a
//! bucket's initial tokens) is shared equally among the threads running at t = 0, each
//! spending its share at once, back to back.
//!
//! **Faults.** It knows the server's outages: a slot inside one waits for its end (a bucket
//! keeps the tokens, and the slots missed are caught up at once) or, on a window rule, moves to
//! the thread's first slot after it. On a bucket, a slot answered 500 or 503 is sent again.
//!
//! **Where it is not the bound.** It spends nothing a bucket refills while no thread uses the
//! key (a population with a gap, or whose first group starts after t = 0, beyond the initial
//! tokens); on a window rule the slots an outage covers, or that a random 500 wasted, are
//! lost, and a thread whose latency exceeds its spacing `N / R` skips slots; when the
//! population changes, the slots of that instant may go unused. Rules without a rate
//! (`concurrency`, `occ`) give it nothing to plan with: it sends without waiting. It reads no
//! response header, so `[server] headers` changes nothing for it.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::{Acquire, Algorithm, BuildContext, Population, Throttle};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{Nanos, from_secs, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OracleConfig {
    /// Share what the rule admits at t = 0 beyond its rate (a bucket's initial tokens)
    /// equally among the threads running then, spent at once. Default true.
    pub burst: bool,
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig { burst: true }
    }
}

impl OracleConfig {
    pub fn build(&self, ctx: BuildContext) -> Oracle {
        let threads = ctx.threads.max(1);
        let population = ctx.population;
        let first = (ctx.process * threads) as u32;
        // The initial allowance, shared by the threads running at t = 0 in line order.
        let starts_at_zero = population
            .windows
            .iter()
            .zip(&population.groups)
            .any(|((start, _, _), name)| *name == ctx.group && *start == 0);
        let extra = (0..threads as u32)
            .map(|local| {
                let n = u64::from(population.active_threads(0));
                if !self.burst || !starts_at_zero || n == 0 || population.rate_per_sec <= 0.0 {
                    return 0;
                }
                let allowance = population.allowance.max(0.0).floor() as u64;
                let rank = u64::from(population.rank(0, &ctx.group, first + local));
                // The slots start with place 0, so the last places get the remainder.
                allowance / n + u64::from(rank >= n - allowance % n)
            })
            .collect();
        let phase = match (population.windowed_rule, population.weighted_rule) {
            (false, _) => 1.0,
            (true, false) => 0.0,
            (true, true) => 0.5,
        };
        Oracle {
            bucket: !population.windowed_rule,
            phase,
            population,
            group: ctx.group,
            first,
            extra,
            planned: vec![None; threads],
            cursor: vec![None; threads],
            spacing: 0,
        }
    }
}

impl Algorithm for OracleConfig {
    const NAME: &'static str = "oracle";
    const BOUND: bool = true;
    const DESCRIPTION: &'static str = "the bound: knows the rule and every thread on the key; each \
         thread sends in its own slots of the rate (window rules: exactly `limit` per window), a \
         bucket's initial tokens shared equally, outages waited out. Not the bound with no \
         thread on the key for a while (that refill is unspent), or on a window rule after \
         outages and random errors or when latency exceeds a thread's spacing (slots lost)";

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

pub struct Oracle {
    population: Arc<Population>,
    group: String,
    /// The place in line of this process's first thread within its group.
    first: u32,
    /// `φ`: slot `m` is at `(m + φ) / R`.
    phase: f64,
    /// The rule is a bucket: a slot's token waits for a late sender, and an outage keeps it.
    bucket: bool,
    /// Per thread: initial allowance left to spend.
    extra: Vec<u64>,
    /// Per thread: the slot its current wait ends at.
    planned: Vec<Option<u64>>,
    /// Per thread (bucket rules): the slot after its last send, and the population then.
    cursor: Vec<Option<(u64, u32)>>,
    /// The spacing last computed (for the chart).
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

    /// When slot `m` is: `⌈(m + φ) / R⌉` (never early, so never before its token or window).
    fn slot_time(&self, m: u64) -> Nanos {
        ((m as f64 + self.phase) * 1e9 / self.population.rate_per_sec).ceil() as Nanos
    }

    /// The first slot at or after `now`.
    fn first_slot(&self, now: Nanos) -> u64 {
        let x = now as f64 * self.population.rate_per_sec / 1e9 - self.phase;
        let mut m = x.ceil().max(0.0) as u64;
        while m > 0 && self.slot_time(m - 1) >= now {
            m -= 1;
        }
        while self.slot_time(m) < now {
            m += 1;
        }
        m
    }

    /// The thread's place in line and the threads on the key at `now`.
    fn line(&self, now: Nanos, thread: usize) -> (u64, u64) {
        let n = u64::from(self.population.active_threads(now).max(1));
        let rank = u64::from(
            self.population
                .rank(now, &self.group, self.first + thread as u32),
        );
        (rank % n, n)
    }

    /// The first slot from `from` on that belongs to place `rank` of `n`.
    fn own_slot(from: u64, rank: u64, n: u64) -> u64 {
        from + (rank + n - from % n) % n
    }

    /// The slot `thread` aims at next, asked at `now`, and when to send in it: its time, or
    /// the end of the outage it falls in (a bucket keeps the tokens; a window rule moves on to
    /// the thread's first slot after the outage).
    fn plan(&self, now: Nanos, thread: usize, from: Option<u64>) -> (u64, Nanos) {
        let (rank, n) = self.line(now, thread);
        let from = from.unwrap_or_else(|| match self.cursor[thread] {
            // A bucket keeps the tokens of slots a slow answer made this thread miss.
            Some((c, was)) if self.bucket && was == n as u32 => c,
            _ => self.first_slot(now),
        });
        let mut m = Self::own_slot(from, rank, n);
        let mut at = self.slot_time(m);
        while let Some(end) = self.population.outage_end(at.max(now)) {
            if self.bucket {
                at = end;
            } else {
                m = Self::own_slot(self.first_slot(end), rank, n);
                at = self.slot_time(m);
            }
        }
        (m, at)
    }
}

impl Throttle for Oracle {
    fn delay(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Nanos {
        let Some(spacing) = self.spacing(now) else {
            return 0;
        };
        self.spacing = spacing;
        if self.extra[thread] > 0 {
            return 0;
        }
        let (m, at) = self.plan(now, thread, None);
        self.planned[thread] = Some(m);
        at.saturating_sub(now)
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        if self.population.rate_per_sec <= 0.0 {
            return Acquire::Send;
        }
        if self.extra[thread] > 0 {
            self.extra[thread] -= 1;
            return Acquire::Send;
        }
        let (rank, n) = self.line(now, thread);
        let m = match self.planned[thread] {
            Some(m) => m,
            None => self.plan(now, thread, None).0,
        };
        if m % n == rank {
            self.cursor[thread] = Some((m + 1, n as u32));
            self.planned[thread] = None;
            return Acquire::Send;
        }
        // The population changed while this thread waited: the slot is another's now.
        let (m, at) = self.plan(now, thread, Some(self.first_slot(now)));
        self.planned[thread] = Some(m);
        Acquire::Wait(at.saturating_sub(now).max(1))
    }

    fn on_response(&mut self, _: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        // A 503 or 500 came from in front of the rule: the bucket kept the slot's token, so
        // the slot is sent again (at once, as a late one).
        let failed = matches!(response.status, Status::Unavailable | Status::Error);
        if failed
            && self.bucket
            && let Some((next, n)) = self.cursor[thread]
        {
            self.cursor[thread] = Some((next.saturating_sub(1), n));
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
    const MS: Nanos = S / 1000;

    fn ctx(threads: usize, group: &str, process: usize, population: Population) -> BuildContext {
        BuildContext {
            population: Arc::new(population),
            group: group.into(),
            process,
            ..BuildContext::solo(threads)
        }
    }

    /// 4500/h; `clients` (10 threads) throughout, `late` (15) from 1 h to 3 h.
    fn heroku(allowance: f64, windowed_rule: bool) -> Population {
        Population {
            rate_per_sec: 1.25,
            windows: vec![(0, 5 * 3600 * S, 10), (3600 * S, 3 * 3600 * S, 15)],
            groups: vec!["clients".into(), "late".into()],
            allowance,
            windowed_rule,
            weighted_rule: false,
            outages: Vec::new(),
        }
    }

    fn ok() -> Response {
        Response::bare(Status::Ok)
    }

    /// Wait, send, and return when the send went out.
    fn send(t: &mut Oracle, now: Nanos, thread: usize) -> Nanos {
        let mut rng = test_rng();
        let at = now + t.delay(now, thread, &mut rng);
        assert_eq!(t.acquire(at, thread, &mut rng), Acquire::Send);
        at
    }

    #[test]
    fn each_thread_sends_in_its_own_slots_of_the_shared_rate() {
        let mut t = OracleConfig { burst: false }.build(ctx(10, "clients", 0, heroku(0.0, false)));
        // Slot m at (m + 1) / 1.25 s; thread 3 of 10 owns slots 3, 13, 23, …
        assert_eq!(send(&mut t, 0, 3), 3200 * MS);
        t.on_response(3220 * MS, 3, &ok(), &mut test_rng());
        assert_eq!(send(&mut t, 3220 * MS, 3), 11_200 * MS);
        assert_eq!(t.sleep_value(), 8.0);
        // From 1 h, 25 threads: every 20 s, and the late group's threads come after these 10.
        let late = OracleConfig { burst: false }.build(ctx(15, "late", 0, heroku(0.0, false)));
        assert_eq!(late.line(3600 * S, 0), (10, 25));
        let at = send(&mut t, 3600 * S, 3);
        let m = (at as f64 * 1.25 / 1e9).round() as u64 - 1;
        assert_eq!(m % 25, 3, "slot {m}");
        assert!(at - 3600 * S <= 20 * S);
    }

    #[test]
    fn a_late_answer_catches_up_on_a_bucket_and_skips_on_a_window_rule() {
        // Thread 3 of 10 owns slots 3, 13, 23. Bucket (φ = 1): at 3.2, 11.2, 19.2 s; window
        // rule (φ = 0): at 2.4, 10.4, 18.4 s. Its first answer comes back 12 s, after slot 13.
        for (windowed, first, next) in [(false, 3200 * MS, 12 * S), (true, 2400 * MS, 18_400 * MS)]
        {
            let mut t =
                OracleConfig { burst: false }.build(ctx(10, "clients", 0, heroku(0.0, windowed)));
            assert_eq!(send(&mut t, 0, 3), first);
            // The bucket kept slot 13's token: send at once. A window may be full: skip to 23.
            assert_eq!(send(&mut t, 12 * S, 3), next, "windowed {windowed}");
        }
    }

    #[test]
    fn window_rules_put_exactly_the_limit_in_every_aligned_window() {
        // 25 threads of a fixed window of 4500 per hour: every hour holds 4500 slots.
        let p = Population {
            rate_per_sec: 1.25,
            windows: vec![(0, 10 * 3600 * S, 25)],
            groups: vec!["clients".into()],
            allowance: 0.0,
            windowed_rule: true,
            weighted_rule: false,
            outages: Vec::new(),
        };
        let t = OracleConfig::default().build(ctx(25, "clients", 0, p));
        for k in [0u64, 1, 7] {
            let (a, b) = (t.first_slot(k * 3600 * S), t.first_slot((k + 1) * 3600 * S));
            assert_eq!(b - a, 4500, "window {k}");
        }
    }

    #[test]
    fn on_a_sliding_window_counter_the_slots_sit_half_a_slot_off_the_grid() {
        let p = Population {
            rate_per_sec: 1.25,
            windows: vec![(0, 3600 * S, 1)],
            groups: vec!["clients".into()],
            windowed_rule: true,
            weighted_rule: true,
            ..Population::default()
        };
        let mut t = OracleConfig { burst: false }.build(ctx(1, "clients", 0, p));
        // Slot m at (m + ½) × 0.8 s; a late answer still skips, as on any window rule.
        assert_eq!(send(&mut t, 0, 0), 400 * MS);
        t.on_response(420 * MS, 0, &ok(), &mut test_rng());
        assert_eq!(send(&mut t, 420 * MS, 0), 1200 * MS);
        assert_eq!(send(&mut t, 2100 * MS, 0), 2800 * MS);
    }

    #[test]
    fn the_initial_allowance_is_shared_equally_and_spent_at_once() {
        // 25 tokens among 10 threads: places 5-9 get 3 (the slots favour places 0-4), 0-4 get 2.
        let mut t = OracleConfig::default().build(ctx(10, "clients", 0, heroku(25.0, false)));
        assert_eq!(t.extra, vec![2, 2, 2, 2, 2, 3, 3, 3, 3, 3]);
        let mut rng = test_rng();
        for _ in 0..3 {
            assert_eq!(t.delay(0, 9, &mut rng), 0);
            assert_eq!(t.acquire(0, 9, &mut rng), Acquire::Send);
        }
        assert!(t.delay(0, 9, &mut rng) > 0);
        // A group that joins later gets none; `burst = false` none either.
        let late = OracleConfig::default().build(ctx(15, "late", 0, heroku(25.0, false)));
        assert!(late.extra.iter().all(|&e| e == 0));
        let off = OracleConfig { burst: false }.build(ctx(10, "clients", 0, heroku(25.0, false)));
        assert!(off.extra.iter().all(|&e| e == 0));
    }

    #[test]
    fn places_in_line_follow_group_process_and_thread() {
        let p = heroku(0.0, false);
        // Process 2 of `late` (5 threads a process): its thread 1 is 10 + 2·5 + 1 = 21st.
        let t = OracleConfig::default().build(ctx(5, "late", 2, p));
        assert_eq!(t.line(2 * 3600 * S, 1), (21, 25));
    }

    #[test]
    fn a_slot_taken_over_by_a_changed_population_is_waited_out() {
        let mut t = OracleConfig { burst: false }.build(ctx(10, "clients", 0, heroku(0.0, false)));
        let mut rng = test_rng();
        // Planned just before the late group joins, asked just after: 25 threads now.
        let d = t.delay(3599 * S, 9, &mut rng);
        let at = 3599 * S + d;
        assert!(at >= 3600 * S);
        match t.acquire(at, 9, &mut rng) {
            Acquire::Send => {
                let m = (at as f64 * 1.25 / 1e9).round() as u64 - 1;
                assert_eq!(m % 25, 9);
            }
            Acquire::Wait(w) => {
                let m = ((at + w) as f64 * 1.25 / 1e9).round() as u64 - 1;
                assert_eq!(m % 25, 9);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn outages_are_waited_out_and_failed_slots_sent_again_on_a_bucket() {
        let with_outage = |windowed| Population {
            outages: vec![(10 * S, 20 * S)],
            ..heroku(0.0, windowed)
        };
        // Thread 3's slots: bucket 3.2, 11.2, 19.2 s; window rule 2.4, 10.4, 18.4, 26.4 s.
        let mut t = OracleConfig { burst: false }.build(ctx(10, "clients", 0, with_outage(false)));
        assert_eq!(send(&mut t, 0, 3), 3200 * MS);
        // Slot 13 (11.2 s) is in the outage: sent when it ends, then slot 23 (19.2 s) at once.
        assert_eq!(send(&mut t, 4 * S, 3), 20 * S);
        assert_eq!(send(&mut t, 20 * S, 3), 20 * S);
        // A 503 gives the slot back: the same slot is sent again, at once.
        t.on_response(
            20 * S,
            3,
            &Response::bare(Status::Unavailable),
            &mut test_rng(),
        );
        assert_eq!(send(&mut t, 20 * S, 3), 20 * S);
        assert_eq!(send(&mut t, 20 * S, 3), 27_200 * MS);
        // A window rule skips the outage's slots.
        let mut w = OracleConfig { burst: false }.build(ctx(10, "clients", 0, with_outage(true)));
        assert_eq!(send(&mut w, 0, 3), 2400 * MS);
        assert_eq!(send(&mut w, 4 * S, 3), 26_400 * MS);
    }

    #[test]
    fn without_a_known_rate_it_does_not_wait() {
        let mut t = OracleConfig::default().build(BuildContext::solo(1));
        assert_eq!(t.delay(0, 0, &mut test_rng()), 0);
        assert_eq!(t.acquire(0, 0, &mut test_rng()), Acquire::Send);
    }
}
