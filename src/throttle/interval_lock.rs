//! `interval-lock`: Rebased's Redis interval lock, their rate limiter for the Toggl API ("a
//! limiter shared by many processes through Redis"; docs/sources.md), every number a
//! parameter whose default is theirs.
//!
//! Before each call a thread claims the time slot with `SET lock 'locked' NX PX interval`. If
//! another caller holds it, the thread waits `PTTL(lock) + offset(retries)` and claims again,
//! where a missing key (PTTL negative) counts as a full interval and
//!
//! ```text
//! offset(retries) = max(10 ms, 50 ms − min(retries, 50) ms)
//! ```
//!
//! so callers that have waited longer wake earlier and are served first. A caller that is still
//! refused after `timeout` gives up (Rebased's limiter raises `TimedOut`; the engine counts it in
//! `timed_out` and the thread moves on to its next job). The lock lives in the run's shared store,
//! so every process of the group — or of every group naming the same `lock` — shares it, as
//! Rebased's web server, Rake tasks, background jobs and cron shared one Redis key: in the sim an
//! in-memory store, in a live run a real Redis (`[store] url`).

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::ParamProblem;
use crate::exchange::Response;
use crate::rng::SimRng;
use crate::store::{SharedStore, Ttl};
use crate::time::{HumanDuration, NANOS_PER_MS, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IntervalLockConfig {
    /// The lock's TTL: the least time between two calls. Default 1 s (`@interval = 1`).
    pub interval: HumanDuration,
    /// How long a caller waits for a slot before giving up. Default 15 s (`@timeout = 15`).
    pub timeout: HumanDuration,
    /// The offset after the first refusal, shrinking by 1 ms per retry. Default 50 ms.
    pub max_offset: HumanDuration,
    /// The smallest offset, so nobody asks just before the key expires. Default 10 ms.
    pub min_offset: HumanDuration,
    /// The store key of the lock. Default: the group's name, so the processes of one group
    /// share a lock; groups naming the same `lock` share it too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
}

impl Default for IntervalLockConfig {
    fn default() -> Self {
        IntervalLockConfig {
            interval: HumanDuration::from_secs(1),
            timeout: HumanDuration::from_secs(15),
            max_offset: HumanDuration::from_millis(50),
            min_offset: HumanDuration::from_millis(10),
            lock: None,
        }
    }
}

impl IntervalLockConfig {
    /// The store key of the lock the processes of `group` share.
    pub fn lock_key(&self, group: &str) -> String {
        format!("interval-lock:{}", self.lock.as_deref().unwrap_or(group))
    }

    pub fn build(&self, ctx: BuildContext) -> IntervalLock {
        IntervalLock {
            key: self.lock_key(&ctx.group),
            cfg: self.clone(),
            store: ctx.store,
            waiting_since: vec![None; ctx.threads.max(1)],
            retries: vec![0; ctx.threads.max(1)],
            refusals: 0,
            last_wait: 0,
        }
    }
}

impl Algorithm for IntervalLockConfig {
    const NAME: &'static str = "interval-lock";
    const DESCRIPTION: &'static str = "Rebased's Redis interval lock, shared by a group's processes: SET NX PX 1 s, wait PTTL + offset, 15 s timeout";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        if self.interval.nanos() < NANOS_PER_MS {
            out.push((
                "interval",
                format!(
                    "must be at least 1ms, the lock's TTL is whole milliseconds (got {})",
                    self.interval
                ),
            ));
        }
        if self.min_offset > self.max_offset {
            out.push((
                "min_offset",
                format!(
                    "must be at most max_offset ({}) (got {})",
                    self.max_offset, self.min_offset
                ),
            ));
        }
        if self.lock.as_deref().is_some_and(|l| l.trim().is_empty()) {
            out.push(("lock", "must not be empty".to_string()));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }

    fn store_scope(&self, group: &str, _key: &str) -> Option<String> {
        Some(self.lock_key(group))
    }
}

pub struct IntervalLock {
    cfg: IntervalLockConfig,
    key: String,
    store: SharedStore,
    /// Per thread: when the current call started waiting for a slot (`started_at`).
    waiting_since: Vec<Option<Nanos>>,
    /// Per thread: refusals in the current call.
    retries: Vec<u32>,
    refusals: u64,
    last_wait: Nanos,
}

impl IntervalLock {
    /// `max(min_offset, max_offset − retries ms)`: Rebased's `[10, 50 - [retries, 50].min].max`.
    pub fn offset(&self, retries: u32) -> Nanos {
        let shrink = u64::from(retries).saturating_mul(NANOS_PER_MS);
        self.cfg
            .max_offset
            .nanos()
            .saturating_sub(shrink)
            .max(self.cfg.min_offset.nanos())
    }

    fn interval_ms(&self) -> u64 {
        self.cfg.interval.nanos() / NANOS_PER_MS
    }

    /// `seconds_until_next_slot`: the lock's time left (a full interval when the key is gone)
    /// plus the offset.
    pub fn wait_after_refusal(&self, ttl: Ttl, retries: u32) -> Nanos {
        let ttl_ms = match ttl {
            Ttl::Millis(ms) => ms,
            Ttl::Missing | Ttl::Persistent => self.interval_ms(),
        };
        ttl_ms * NANOS_PER_MS + self.offset(retries)
    }

    fn end_call(&mut self, thread: usize) {
        self.waiting_since[thread] = None;
        self.retries[thread] = 0;
    }
}

impl Throttle for IntervalLock {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        let started = *self.waiting_since[thread].get_or_insert(now);
        let interval_ms = self.interval_ms();
        let mut store = self.store.lock();
        // A store that cannot answer grants nothing: the thread waits a full interval, as for
        // a lock whose TTL cannot be read, and the engine sees the failure and ends the run.
        let claimed = store.set_nx_px(&self.key, 1, interval_ms, now);
        if claimed == Ok(true) {
            drop(store);
            self.end_call(thread);
            return Acquire::Send;
        }
        if now - started > self.cfg.timeout.nanos() {
            drop(store);
            self.end_call(thread);
            return Acquire::GiveUp;
        }
        let ttl = match claimed {
            Ok(_) => store.pttl(&self.key, now).unwrap_or(Ttl::Missing),
            Err(_) => Ttl::Missing,
        };
        drop(store);
        self.retries[thread] += 1;
        self.refusals += 1;
        let wait = self.wait_after_refusal(ttl, self.retries[thread]);
        self.last_wait = wait;
        Acquire::Wait(wait)
    }

    fn on_response(&mut self, _: Nanos, _: usize, _: &Response, _: &mut SimRng) {}

    /// The last wait a refused claim chose, in seconds.
    fn sleep_value(&self) -> f64 {
        crate::time::secs(self.last_wait)
    }

    /// Refused claims.
    fn backoffs(&self) -> u64 {
        self.refusals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    const MS: Nanos = NANOS_PER_MS;

    fn ctx(threads: usize, group: &str, store: &SharedStore) -> BuildContext {
        BuildContext {
            group: group.into(),
            store: store.clone(),
            ..BuildContext::solo(threads)
        }
    }

    #[test]
    fn offset_matches_rebaseds_table() {
        let store = crate::store::shared();
        let t = IntervalLockConfig::default().build(ctx(1, "g", &store));
        // calculate_next_slot_offset(0) => 50, (5) => 45, ... (50) => 10, (100) => 10.
        for (retries, ms) in [(0, 50), (5, 45), (10, 40), (15, 35), (50, 10), (100, 10)] {
            assert_eq!(t.offset(retries), ms * MS, "retries {retries}");
        }
        assert_eq!(t.offset(39), 11 * MS);
        assert_eq!(t.offset(40), 10 * MS);
    }

    #[test]
    fn a_missing_key_counts_as_a_full_interval() {
        let store = crate::store::shared();
        let t = IntervalLockConfig::default().build(ctx(1, "g", &store));
        assert_eq!(t.wait_after_refusal(Ttl::Missing, 1), 1000 * MS + 49 * MS);
        assert_eq!(t.wait_after_refusal(Ttl::Persistent, 1), 1049 * MS);
        assert_eq!(t.wait_after_refusal(Ttl::Millis(300), 3), 347 * MS);
    }

    #[test]
    fn processes_of_a_group_share_one_lock_and_wait_its_ttl_plus_offset() {
        let store = crate::store::shared();
        let cfg = IntervalLockConfig::default();
        let mut a = cfg.build(ctx(1, "web", &store));
        let mut b = cfg.build(ctx(1, "web", &store));
        let mut other = cfg.build(ctx(1, "cron", &store));
        let mut rng = test_rng();
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Send);
        // 250 ms later the lock has 750 ms left; the first retry's offset is 49 ms.
        assert_eq!(b.acquire(250 * MS, 0, &mut rng), Acquire::Wait(799 * MS));
        // Another group has its own lock.
        assert_eq!(other.acquire(250 * MS, 0, &mut rng), Acquire::Send);
        // b wakes at 1049 ms: the lock expired at 1000 ms, so it gets it.
        assert_eq!(b.acquire(1049 * MS, 0, &mut rng), Acquire::Send);
        assert_eq!(
            a.acquire(1100 * MS, 0, &mut rng),
            Acquire::Wait(949 * MS + 49 * MS)
        );
    }

    #[test]
    fn groups_naming_the_same_lock_share_it() {
        let store = crate::store::shared();
        let cfg = IntervalLockConfig {
            lock: Some("harmonogram".into()),
            ..IntervalLockConfig::default()
        };
        let mut web = cfg.build(ctx(1, "web", &store));
        let mut cron = cfg.build(ctx(1, "cron", &store));
        let mut rng = test_rng();
        assert_eq!(web.acquire(0, 0, &mut rng), Acquire::Send);
        assert!(matches!(cron.acquire(MS, 0, &mut rng), Acquire::Wait(_)));
    }

    #[test]
    fn retries_shrink_the_offset_and_the_timeout_gives_up() {
        let store = crate::store::shared();
        let mut holder = IntervalLockConfig::default().build(ctx(1, "g", &store));
        let mut waiter = IntervalLockConfig::default().build(ctx(2, "g", &store));
        let mut rng = test_rng();
        // The holder takes the lock every time it expires, just before the waiter asks.
        let mut now = 0;
        let mut waits = Vec::new();
        loop {
            if holder.acquire(now, 0, &mut rng) != Acquire::Send {
                panic!("the holder asks exactly at expiry");
            }
            match waiter.acquire(now, 1, &mut rng) {
                Acquire::Wait(d) => {
                    waits.push(d);
                    // The holder comes back exactly when the lock expires.
                    now += 1000 * MS;
                }
                Acquire::GiveUp => break,
                Acquire::Send => panic!("the waiter never finds the lock free"),
            }
        }
        // Retry r waits the full second plus 50 − r ms.
        assert_eq!(waits[0], 1049 * MS);
        assert_eq!(waits[1], 1048 * MS);
        // Waiting started at 0; the 16th refusal at 15 s is not yet past the timeout, the
        // 17th at 16 s is.
        assert_eq!(waits.len(), 16);
        assert_eq!(waiter.backoffs(), 16);
        // The next call starts afresh.
        assert!(matches!(waiter.acquire(now, 1, &mut rng), Acquire::Wait(d) if d == 1049 * MS));
    }
}
