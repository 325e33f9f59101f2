//! `shared-bucket`: what teams that already run Redis do — every process takes a token from one
//! client-side bucket in the shared store before it sends, the bucket set to the server's rate.
//! Bottleneck's clustering (the Node.js limiter keeps `minTime`'s next free slot and its
//! reservoir in Redis, updated by Lua scripts) and redis-cell (`CL.THROTTLE key max_burst
//! count period`, a GCRA in a Redis module) are the common forms.
//!
//! The bucket is a GCRA with one token every `interval = period / limit` (rounded up to the
//! nanosecond, so never faster than the server's rate) and at most `burst` at once. A thread
//! reserves the next token in one atomic store step and waits until it is due
//! ([`crate::store::Store::gcra_reserve`]):
//!
//! ```text
//! tat  ← max(tat, now)                         (the bucket's theoretical arrival time)
//! due  ← max(now, tat − (burst − 1) × interval)
//! tat  ← tat + interval
//! ```
//!
//! so the processes' sends are spaced `interval` apart in the order they asked, whatever their
//! number, without any of them knowing it. It is coordinated (it needs the store: in memory in
//! the sim, Redis in a live run with `[store] url`) and knows the rate; it reads no answer, as
//! those tools do not. The bucket is keyed by the server key the group sends with, so groups
//! sharing a token share a bucket; `bucket` names another.
//!
//! Defaults: the server's rate is the Heroku GCRA demo server's, 4500 per hour. `burst` is 1
//! (redis-cell's `max_burst = 0`; Bottleneck's `minTime` alone): neither tool fixes one, and 1
//! never sends faster than the rate, so the server's bucket never drains. A server bucket that
//! starts full is then not spent, which costs utilization; a larger `burst` spends it (at the risk
//! of 429s when the server's bucket starts lower than the client's).

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_quota};
use crate::exchange::Response;
use crate::rng::SimRng;
use crate::store::SharedStore;
use crate::time::{HumanDuration, Nanos, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SharedBucketConfig {
    /// Requests the server allows per `period` (its rate). Default 4500.
    pub limit: u64,
    /// Default 1 h.
    pub period: HumanDuration,
    /// Tokens the bucket lets go at once. Default 1.
    pub burst: u64,
    /// The store key of the bucket. Default: the server key the group sends with, so every
    /// group on one API token shares one bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
}

impl Default for SharedBucketConfig {
    fn default() -> Self {
        SharedBucketConfig {
            limit: 4500,
            period: HumanDuration::from_secs(3600),
            burst: 1,
            bucket: None,
        }
    }
}

impl Algorithm for SharedBucketConfig {
    const NAME: &'static str = "shared-bucket";
    const DESCRIPTION: &'static str = "every process takes a token from one GCRA in the shared store at the server's rate (Bottleneck, redis-cell)";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        check_quota(
            &mut out,
            ("limit", self.limit, "request per period"),
            ("period", self.period),
        );
        if self.burst == 0 {
            out.push(("burst", "must be at least 1 token (got 0)".to_string()));
        }
        if self.bucket.as_deref().is_some_and(|b| b.trim().is_empty()) {
            out.push(("bucket", "must not be empty".to_string()));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }

    fn store_scope(&self, _group: &str, key: &str) -> Option<String> {
        Some(self.bucket_key(key))
    }
}

impl SharedBucketConfig {
    /// The store key of the bucket the processes of a group sending with `key` share.
    pub fn bucket_key(&self, key: &str) -> String {
        format!("shared-bucket:{}", self.bucket.as_deref().unwrap_or(key))
    }

    /// Time between two tokens.
    pub fn interval(&self) -> Nanos {
        self.period.nanos().div_ceil(self.limit.max(1)).max(1)
    }

    pub fn build(&self, ctx: BuildContext) -> SharedBucket {
        SharedBucket {
            key: self.bucket_key(&ctx.key),
            interval: self.interval(),
            burst: self.burst.max(1),
            store: ctx.store,
            due: vec![None; ctx.threads.max(1)],
            last_wait: 0,
        }
    }
}

pub struct SharedBucket {
    key: String,
    interval: Nanos,
    burst: u64,
    store: SharedStore,
    /// Per thread: when its reserved token is due.
    due: Vec<Option<Nanos>>,
    last_wait: Nanos,
}

impl Throttle for SharedBucket {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        if let Some(due) = self.due[thread] {
            if now >= due {
                self.due[thread] = None;
                return Acquire::Send;
            }
            return Acquire::Wait(due - now);
        }
        let reserved = self
            .store
            .lock()
            .gcra_reserve(&self.key, self.interval, self.burst, now);
        match reserved {
            Ok(0) => Acquire::Send,
            Ok(wait) => {
                self.last_wait = wait;
                self.due[thread] = Some(now + wait);
                Acquire::Wait(wait)
            }
            // A store that cannot answer grants nothing; the engine sees the failure and ends
            // the run.
            Err(_) => Acquire::Wait(self.interval),
        }
    }

    fn on_response(&mut self, _: Nanos, _: usize, _: &Response, _: &mut SimRng) {}

    /// The last wait for a token, in seconds.
    fn sleep_value(&self) -> f64 {
        secs(self.last_wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn ctx(threads: usize, key: &str, store: &SharedStore) -> BuildContext {
        BuildContext {
            key: key.into(),
            store: store.clone(),
            ..BuildContext::solo(threads)
        }
    }

    #[test]
    fn the_interval_is_the_servers_rate_rounded_up() {
        assert_eq!(SharedBucketConfig::default().interval(), 800_000_000);
        let odd = SharedBucketConfig {
            limit: 3,
            period: HumanDuration::from_secs(1),
            ..SharedBucketConfig::default()
        };
        assert_eq!(odd.interval(), 333_333_334);
    }

    #[test]
    fn processes_on_one_key_take_turns_from_one_bucket() {
        let store = crate::store::shared();
        let cfg = SharedBucketConfig::default();
        let mut a = cfg.build(ctx(2, "token", &store));
        let mut b = cfg.build(ctx(1, "token", &store));
        let mut other = cfg.build(ctx(1, "other-token", &store));
        let mut rng = test_rng();
        let gap = 800 * S / 1000;
        assert_eq!(a.acquire(0, 0, &mut rng), Acquire::Send);
        assert_eq!(b.acquire(0, 0, &mut rng), Acquire::Wait(gap));
        assert_eq!(a.acquire(0, 1, &mut rng), Acquire::Wait(2 * gap));
        // Another key has its own bucket.
        assert_eq!(other.acquire(0, 0, &mut rng), Acquire::Send);
        // Nobody sends before its token is due; each sends when it is.
        assert_eq!(b.acquire(gap - 1, 0, &mut rng), Acquire::Wait(1));
        assert_eq!(b.acquire(gap, 0, &mut rng), Acquire::Send);
        assert_eq!(a.acquire(2 * gap, 1, &mut rng), Acquire::Send);
        // The next reservation queues behind the two given out.
        assert_eq!(b.acquire(2 * gap, 0, &mut rng), Acquire::Wait(gap));
        assert!((b.sleep_value() - 0.8).abs() < 1e-9);
    }

    #[test]
    fn a_burst_goes_at_once_then_the_rate_holds_over_many_processes() {
        let store = crate::store::shared();
        let cfg = SharedBucketConfig {
            limit: 60,
            period: HumanDuration::from_secs(60),
            burst: 3,
            bucket: Some("api".into()),
        };
        let mut procs: Vec<SharedBucket> = (0..10)
            .map(|i| cfg.build(ctx(1, &format!("key{i}"), &store)))
            .collect();
        let mut rng = test_rng();
        let mut sent_at = Vec::new();
        let mut wake = vec![0; procs.len()];
        // Every process asks as soon as it may, for 100 s.
        for _ in 0..2000 {
            let (i, &now) = wake.iter().enumerate().min_by_key(|(_, t)| **t).unwrap();
            if now > 100 * S {
                break;
            }
            match procs[i].acquire(now, 0, &mut rng) {
                Acquire::Send => {
                    sent_at.push(now);
                    wake[i] = now + 1;
                }
                Acquire::Wait(w) => wake[i] = now + w,
                Acquire::GiveUp => unreachable!(),
            }
        }
        // The burst of 3 at 0, then one per second, across processes naming one bucket.
        assert_eq!(&sent_at[..3], &[0, 0, 0]);
        assert_eq!(sent_at.len(), 3 + 100);
        for pair in sent_at[3..].windows(2) {
            assert_eq!(pair[1] - pair[0], S);
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let cfg = SharedBucketConfig {
            limit: 0,
            period: HumanDuration::from_secs(0),
            burst: 0,
            bucket: Some(" ".into()),
        };
        let fields: Vec<&str> = cfg.problems().iter().map(|p| p.0).collect();
        assert_eq!(fields, ["limit", "period", "burst", "bucket"]);
        assert!(SharedBucketConfig::default().problems().is_empty());
    }
}
