//! The store on a real Redis server: the very commands the coordinating algorithms name, under a
//! namespace of the run, with Redis's own expiry.
//!
//! Time: Redis expires keys on its own (real) clock and ignores the `now` it is told. With
//! a live run's `time_scale`, a TTL of `t` virtual milliseconds goes to Redis as
//! `⌈t / scale⌉` real ones (rounded up, so a lock never lasts less than its interval of
//! virtual time) and a PTTL of `r` real milliseconds comes back as `⌊r × scale⌋` virtual ones
//! (rounded down, as Redis rounds). At scale 1 both are exact.
//!
//! Steps that must not interleave with other processes' are Lua scripts, which Redis runs
//! atomically: `INCR` + `PEXPIRE` of a new window key, `INCRBY`/`SADD` + `PEXPIRE` of a slot key,
//! the Discord job queue's whole window step, and a GCRA reservation. The GCRA is the one exception
//! to Redis's clock: it runs on the caller's virtual time, which every process of a live run shares
//! (as `window-queue`'s window numbers do), so it decides exactly as the memory store.

use std::sync::{Arc, LazyLock, OnceLock};

use redis::Script;

use super::{RedisLink, Store, StoreError, StoreResult, Ttl, WindowAdmit};
use crate::time::Nanos;

/// `INCR` and, on a new key, `PEXPIRE`, atomically.
static INCR_WITH_EXPIRY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return v
",
    )
});

/// The Discord job queue's window step (see `Store::window_admit`): returns -1 to run, else the
/// waiting count before this job.
static WINDOW_ADMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local calls = redis.call('INCR', KEYS[1])
if calls == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if calls <= tonumber(ARGV[2]) then
  if ARGV[3] == '1' then redis.call('DECR', KEYS[2]) end
  return -1
end
local waiting = redis.call('INCR', KEYS[2]) - 1
if waiting < 0 then waiting = 0 end
return waiting
",
    )
});

/// `INCRBY` and, on a key without expiry, `PEXPIRE`, atomically. ARGV: delta, ttl ms.
static INCR_BY_WITH_EXPIRY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v
",
    )
});

/// `SADD` and, on a key without expiry, `PEXPIRE`, atomically. ARGV: member, ttl ms.
static SADD_WITH_EXPIRY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local added = redis.call('SADD', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return added
",
    )
});

/// One GCRA reservation (`store::gcra_step`) on the caller's virtual clock, which the processes
/// of a live run share. ARGV: interval ns, burst, now ns, scale. The key holds the theoretical
/// arrival time and outlives it by a real second (a key found stale counts as missing).
/// Returns the wait in virtual ns.
static GCRA_RESERVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local scale = tonumber(ARGV[4])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then tat = math.max(now, tonumber(stored)) end
local due = math.max(now, tat - (burst - 1) * interval)
local next_tat = tat + interval
local ttl = math.ceil((next_tat - now) / 1000000 / scale) + 1000
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX', ttl)
return due - now
",
    )
});

/// A [`Store`] on Redis. Every key is `namespace + key`; every call is bounded by the link's
/// timeout. After the first failure every call fails at once with the same error, so a run
/// whose Redis went away ends quickly instead of timing out once per thread.
pub struct RedisStore {
    link: RedisLink,
    namespace: String,
    scale: f64,
    failed: Arc<OnceLock<StoreError>>,
}

impl RedisStore {
    /// `namespace` prefixes every key (e.g. `throttle-sim:run:<id>:`); `scale` is the live
    /// run's `time_scale`.
    pub fn new(link: RedisLink, namespace: &str, scale: f64) -> Self {
        RedisStore {
            link,
            namespace: namespace.to_string(),
            scale: if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                1.0
            },
            failed: Arc::default(),
        }
    }

    pub(super) fn failure_cell(&self) -> Arc<OnceLock<StoreError>> {
        self.failed.clone()
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.namespace)
    }

    /// Virtual milliseconds as the real ones Redis counts, rounded up, at least 1.
    pub fn real_ms(&self, virtual_ms: u64) -> u64 {
        ((virtual_ms as f64 / self.scale).ceil() as u64).max(1)
    }

    /// Real milliseconds Redis reports as virtual ones, rounded down.
    pub fn virtual_ms(&self, real_ms: u64) -> u64 {
        (real_ms as f64 * self.scale).floor() as u64
    }

    fn call<T, F, Fut>(&self, op: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(redis::aio::ConnectionManager) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = redis::RedisResult<T>> + Send + 'static,
    {
        if let Some(e) = self.failed.get() {
            return Err(e.clone());
        }
        let r = self.link.call_blocking(op);
        if let Err(e) = &r {
            let _ = self.failed.set(e.clone());
        }
        r
    }
}

/// What `SET … NX` answered: `OK` when the key was set, nil when it was there already. Any
/// other answer (a bulk string, an integer: not a Redis server, or a proxy that rewrites) is
/// a store error, never a lock taken: taken as one, every process sent at once.
fn set_nx_answer(answer: &redis::Value) -> redis::RedisResult<bool> {
    match answer {
        redis::Value::Okay => Ok(true),
        redis::Value::SimpleString(s) if s == "OK" => Ok(true),
        redis::Value::Nil => Ok(false),
        other => Err(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "SET NX answered neither OK nor nil",
            format!("{other:?}"),
        ))),
    }
}

impl Store for RedisStore {
    fn set_nx_px(&mut self, key: &str, value: i64, ttl_ms: u64, _: Nanos) -> StoreResult<bool> {
        let (key, ttl) = (self.key(key), self.real_ms(ttl_ms));
        self.call(move |mut c| async move {
            let answer: redis::Value = redis::cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("NX")
                .arg("PX")
                .arg(ttl)
                .query_async(&mut c)
                .await?;
            set_nx_answer(&answer)
        })
    }

    fn pttl(&mut self, key: &str, _: Nanos) -> StoreResult<Ttl> {
        let key = self.key(key);
        let ms: i64 = self.call(move |mut c| async move {
            redis::cmd("PTTL").arg(&key).query_async(&mut c).await
        })?;
        Ok(match ms {
            -2 => Ttl::Missing,
            ms if ms < 0 => Ttl::Persistent,
            ms => Ttl::Millis(self.virtual_ms(ms as u64)),
        })
    }

    fn get(&mut self, key: &str, _: Nanos) -> StoreResult<Option<i64>> {
        let key = self.key(key);
        self.call(move |mut c| async move { redis::cmd("GET").arg(&key).query_async(&mut c).await })
    }

    fn incr_by(&mut self, key: &str, delta: i64, _: Nanos) -> StoreResult<i64> {
        let key = self.key(key);
        self.call(move |mut c| async move {
            redis::cmd("INCRBY")
                .arg(&key)
                .arg(delta)
                .query_async(&mut c)
                .await
        })
    }

    fn incr_with_expiry(&mut self, key: &str, ttl_ms: u64, _: Nanos) -> StoreResult<i64> {
        let (key, ttl) = (self.key(key), self.real_ms(ttl_ms));
        self.call(move |mut c| async move {
            INCR_WITH_EXPIRY
                .key(&key)
                .arg(ttl)
                .invoke_async(&mut c)
                .await
        })
    }

    fn del(&mut self, key: &str, _: Nanos) -> StoreResult<bool> {
        let key = self.key(key);
        self.call(move |mut c| async move {
            let n: u64 = redis::cmd("DEL").arg(&key).query_async(&mut c).await?;
            Ok(n > 0)
        })
    }

    fn incr_by_with_expiry(
        &mut self,
        key: &str,
        delta: i64,
        ttl_ms: u64,
        _: Nanos,
    ) -> StoreResult<i64> {
        let (key, ttl) = (self.key(key), self.real_ms(ttl_ms));
        self.call(move |mut c| async move {
            INCR_BY_WITH_EXPIRY
                .key(&key)
                .arg(delta)
                .arg(ttl)
                .invoke_async(&mut c)
                .await
        })
    }

    fn mget(&mut self, keys: &[String], _: Nanos) -> StoreResult<Vec<Option<i64>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        self.call(move |mut c| async move {
            let values: Vec<Option<String>> =
                redis::cmd("MGET").arg(&keys).query_async(&mut c).await?;
            Ok(values
                .into_iter()
                .map(|v| v.and_then(|v| v.parse().ok()))
                .collect())
        })
    }

    fn sadd_with_expiry(
        &mut self,
        key: &str,
        member: &str,
        ttl_ms: u64,
        _: Nanos,
    ) -> StoreResult<bool> {
        let (key, ttl, member) = (self.key(key), self.real_ms(ttl_ms), member.to_string());
        self.call(move |mut c| async move {
            let added: i64 = SADD_WITH_EXPIRY
                .key(&key)
                .arg(member)
                .arg(ttl)
                .invoke_async(&mut c)
                .await?;
            Ok(added == 1)
        })
    }

    fn sunion_count(&mut self, keys: &[String], _: Nanos) -> StoreResult<u64> {
        if keys.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = keys.iter().map(|k| self.key(k)).collect();
        self.call(move |mut c| async move {
            let members: Vec<String> = redis::cmd("SUNION").arg(&keys).query_async(&mut c).await?;
            Ok(members.len() as u64)
        })
    }

    fn gcra_reserve(
        &mut self,
        key: &str,
        interval: Nanos,
        burst: u64,
        now: Nanos,
    ) -> StoreResult<Nanos> {
        let (key, scale) = (self.key(key), self.scale);
        let wait: i64 = self.call(move |mut c| async move {
            GCRA_RESERVE
                .key(&key)
                .arg(interval)
                .arg(burst.max(1))
                .arg(now)
                .arg(scale)
                .invoke_async(&mut c)
                .await
        })?;
        Ok(wait.max(0) as Nanos)
    }

    fn window_admit(
        &mut self,
        calls_key: &str,
        window_ms: u64,
        reservoir: u64,
        enqueued_key: &str,
        was_delayed: bool,
        _: Nanos,
    ) -> StoreResult<WindowAdmit> {
        let (calls, enqueued) = (self.key(calls_key), self.key(enqueued_key));
        let ttl = self.real_ms(window_ms);
        let r: i64 = self.call(move |mut c| async move {
            WINDOW_ADMIT
                .key(&calls)
                .key(&enqueued)
                .arg(ttl)
                .arg(reservoir)
                .arg(if was_delayed { "1" } else { "0" })
                .invoke_async(&mut c)
                .await
        })?;
        Ok(if r < 0 {
            WindowAdmit::Run
        } else {
            WindowAdmit::Wait { waiting: r as u64 }
        })
    }
}
