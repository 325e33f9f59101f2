//! Shared state that several client processes coordinate through, with the exact semantics of the
//! Redis commands the coordinating algorithms name (Rebased's Redis interval lock's `SET NX PX` and
//! `PTTL`, the Discord job queue's `INCR` window counters and `DECR`).
//!
//! Two implementations of one [`Store`] trait:
//! - [`MemoryStore`]: a key space in this process, told the time like everything else (keys
//!   expire on the virtual clock). The sim always uses it, so sim runs stay deterministic; so
//!   does a live run without `[store] url`, whose coordinating processes must then be one.
//! - [`RedisStore`]: a real Redis server, through which real OS processes coordinate. Keys
//!   expire on Redis's own clock; with a `time_scale`, TTLs go to Redis scaled to real
//!   milliseconds and PTTLs come back scaled to virtual ones, so the algorithm sees one
//!   consistent virtual time either way.
//!
//! Algorithms stay synchronous and pure: they call the store with the time they are told, and
//! a store that cannot answer returns a [`StoreError`] that the algorithm treats as "not now"
//! (it never sends without the store's permission). The error is also kept in
//! [`SharedStore::failure`], where the live engine sees it and ends the run.

mod memory;
mod redis_link;
mod redis_store;

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde::{Deserialize, Serialize};

pub use memory::MemoryStore;
pub use redis_link::{CALL_TIMEOUT, RedisLink};
pub use redis_store::RedisStore;

use crate::time::Nanos;

/// `PTTL`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// The key does not exist (Redis: -2).
    Missing,
    /// The key exists without an expiry (Redis: -1).
    Persistent,
    /// Milliseconds left, rounded down as Redis does.
    Millis(u64),
}

/// The Discord job queue's decision for one job (see [`Store::window_admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowAdmit {
    /// The window's count is within the reservoir: run now.
    Run,
    /// Over the reservoir: the job joined the waiting count, which held `waiting` before it.
    Wait { waiting: u64 },
}

/// A store call that got no answer: Redis unreachable, too slow, or gone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the store at {url} failed: {message}")]
pub struct StoreError {
    pub url: String,
    pub message: String,
}

impl StoreError {
    pub fn new(url: &str, message: impl Into<String>) -> Self {
        StoreError {
            // `redis://:password@host` is shown without its password.
            url: crate::redact::shown_url(url),
            message: message.into(),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// What the coordinating algorithms need from a shared key space. Every method names the Redis
/// command whose semantics it has; `now` is the caller's virtual time (the memory store's
/// clock; Redis uses its own).
pub trait Store: Send {
    /// `SET key value NX PX ttl_ms`: true when the key was absent (or expired) and is now set.
    fn set_nx_px(&mut self, key: &str, value: i64, ttl_ms: u64, now: Nanos) -> StoreResult<bool>;
    /// `PTTL key`.
    fn pttl(&mut self, key: &str, now: Nanos) -> StoreResult<Ttl>;
    /// `GET key` as an integer.
    fn get(&mut self, key: &str, now: Nanos) -> StoreResult<Option<i64>>;
    /// `INCRBY key delta` (`DECR` is `delta = -1`): a missing key counts from 0 and keeps no
    /// expiry.
    fn incr_by(&mut self, key: &str, delta: i64, now: Nanos) -> StoreResult<i64>;
    /// `INCR key` then, when the key was new, `PEXPIRE key ttl_ms`, as one atomic step (a
    /// window counter must never be left without its expiry).
    fn incr_with_expiry(&mut self, key: &str, ttl_ms: u64, now: Nanos) -> StoreResult<i64>;
    /// `DEL key`: true when a live key was removed.
    fn del(&mut self, key: &str, now: Nanos) -> StoreResult<bool>;
    /// `INCRBY key delta` then, when the key has no expiry, `PEXPIRE key ttl_ms`, as one atomic
    /// step (a count per time slot, e.g. AATB's requests per 2 s).
    fn incr_by_with_expiry(
        &mut self,
        key: &str,
        delta: i64,
        ttl_ms: u64,
        now: Nanos,
    ) -> StoreResult<i64>;
    /// `MGET key…` as integers (a missing key, or one of another kind, is `None`).
    fn mget(&mut self, keys: &[String], now: Nanos) -> StoreResult<Vec<Option<i64>>>;
    /// `SADD key member` then, when the key has no expiry, `PEXPIRE key ttl_ms`, as one atomic
    /// step: true when the member is new (e.g. AATB's clients seen per 10 s).
    fn sadd_with_expiry(
        &mut self,
        key: &str,
        member: &str,
        ttl_ms: u64,
        now: Nanos,
    ) -> StoreResult<bool>;
    /// `SUNION key…`, counted: how many distinct members the sets hold together.
    fn sunion_count(&mut self, keys: &[String], now: Nanos) -> StoreResult<u64>;
    /// Reserve one token of a GCRA kept at `key` (a client-side bucket several processes
    /// share, as Bottleneck's clustering and redis-cell keep one): one token every `interval`,
    /// at most `burst` at once. Returns how long after `now` the reserved token is due (0: at
    /// once); every caller gets its own token, in the order they ask. See [`gcra_step`].
    fn gcra_reserve(
        &mut self,
        key: &str,
        interval: Nanos,
        burst: u64,
        now: Nanos,
    ) -> StoreResult<Nanos>;

    /// The Discord job queue's flow chart for one job, as one atomic step so that no other
    /// process's job comes between the window check and the waiting count: `calls = INCR calls_key`
    /// (with `PEXPIRE window_ms` when new); if `calls <= reservoir` the job runs, first leaving the
    /// waiting count (`DECR enqueued_key`) if it had been delayed; otherwise it joins it (`INCR
    /// enqueued_key`), and the count before it is returned.
    ///
    /// The default runs the steps one after another, which is atomic for a store behind the
    /// [`SharedStore`] mutex; a store other processes share must override it.
    fn window_admit(
        &mut self,
        calls_key: &str,
        window_ms: u64,
        reservoir: u64,
        enqueued_key: &str,
        was_delayed: bool,
        now: Nanos,
    ) -> StoreResult<WindowAdmit> {
        let calls = self.incr_with_expiry(calls_key, window_ms, now)?;
        if calls <= i64::try_from(reservoir).unwrap_or(i64::MAX) {
            if was_delayed {
                self.incr_by(enqueued_key, -1, now)?;
            }
            return Ok(WindowAdmit::Run);
        }
        let waiting = self.incr_by(enqueued_key, 1, now)? - 1;
        Ok(WindowAdmit::Wait {
            waiting: waiting.max(0) as u64,
        })
    }
}

/// One GCRA reservation in "virtual scheduling" form: with `tat` the bucket's theoretical
/// arrival time (at least `now`; `now` for a bucket never used or idle long enough to be full),
/// the reserved token is due at `max(now, tat − (burst − 1) × interval)` and the next
/// theoretical arrival time is `tat + interval`. Returns `(due, next tat)`. A bucket whose
/// theoretical arrival time has passed is full, so its key may expire then.
pub fn gcra_step(tat: Nanos, interval: Nanos, burst: u64, now: Nanos) -> (Nanos, Nanos) {
    let tat = tat.max(now);
    let tolerance = interval.saturating_mul(burst.max(1) - 1);
    let due = tat.saturating_sub(tolerance).max(now);
    (due, tat.saturating_add(interval))
}

/// The store as the threads (and, through Redis, the processes) of a run share it, with the
/// first failure it met.
#[derive(Clone)]
pub struct SharedStore {
    store: Arc<Mutex<Box<dyn Store>>>,
    failed: Arc<OnceLock<StoreError>>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("failed", &self.failed.get())
            .finish_non_exhaustive()
    }
}

impl SharedStore {
    /// A fresh in-memory store.
    pub fn memory() -> Self {
        SharedStore {
            store: Arc::new(Mutex::new(Box::new(MemoryStore::new()))),
            failed: Arc::default(),
        }
    }

    /// A Redis store; its failures show in [`SharedStore::failure`].
    pub fn redis(store: RedisStore) -> Self {
        let failed = store.failure_cell();
        SharedStore {
            store: Arc::new(Mutex::new(Box::new(store))),
            failed,
        }
    }

    /// The store, for one call or a few that belong together.
    pub fn lock(&self) -> MutexGuard<'_, Box<dyn Store>> {
        // A panic in another thread cannot leave a store call half-done in a way that matters
        // more than stopping would.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first call that failed, if one did; read without the lock.
    pub fn failure(&self) -> Option<&StoreError> {
        self.failed.get()
    }
}

/// A fresh in-memory store (the sim's, and every test's).
pub fn shared() -> SharedStore {
    SharedStore::memory()
}

/// `[store]` in a scenario: where the processes of a live run keep their shared state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// A Redis server, `redis://host:port[/db]`. Without it the store is in memory: always in
    /// sim mode, and in a live run whose coordinating processes are one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl StoreConfig {
    pub fn is_empty(&self) -> bool {
        self.url.is_none()
    }

    /// What is wrong with the url, if anything.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        match &self.url {
            Some(url) => check_url(url)
                .err()
                .map(|e| vec![("url", e.to_string())])
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

/// Why a url names no Redis this program can use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("`{url}` is not a url; write e.g. redis://127.0.0.1:6379")]
    NoScheme { url: String },
    #[error("`{url}`: TLS (rediss://) is not supported; use redis:// on a trusted network")]
    Tls { url: String },
    #[error(
        "`{url}`: unknown scheme `{scheme}://`, expected redis://host:port, e.g. \
         redis://127.0.0.1:6379"
    )]
    UnknownScheme { url: String, scheme: String },
    #[error("`{url}` is not a Redis url: {reason}")]
    NotRedis { url: String, reason: String },
}

/// A Redis url this program can use, or why not (the error shows the url without its
/// password).
pub fn check_url(raw: &str) -> Result<(), UrlError> {
    let shown = crate::redact::shown_url(raw);
    let url = shown.as_str();
    let scheme = raw.split("://").next().unwrap_or_default();
    if !raw.contains("://") {
        return Err(UrlError::NoScheme { url: url.into() });
    }
    match scheme {
        "redis" => {}
        "rediss" => return Err(UrlError::Tls { url: url.into() }),
        other => {
            return Err(UrlError::UnknownScheme {
                url: url.into(),
                scheme: other.into(),
            });
        }
    }
    ::redis::Client::open(raw)
        .map(|_| ())
        .map_err(|e| UrlError::NotRedis {
            url: url.into(),
            reason: e.to_string(),
        })
}

/// Turn any text into a key segment without glob or separator characters, so a namespace can
/// be matched by `SCAN MATCH prefix*` safely.
pub fn key_segment(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NANOS_PER_MS;

    #[test]
    fn urls_are_checked_for_their_scheme() {
        assert!(check_url("redis://127.0.0.1:6379").is_ok());
        assert!(check_url("redis://127.0.0.1:6379/3").is_ok());
        let e = check_url("http://127.0.0.1:6379").unwrap_err();
        assert!(matches!(&e, UrlError::UnknownScheme { scheme, .. } if scheme == "http"));
        assert!(e.to_string().contains("unknown scheme `http://`"), "{e}");
        let e = check_url("rediss://h:1").unwrap_err();
        assert!(matches!(e, UrlError::Tls { .. }), "{e}");
        let e = check_url("localhost:6379").unwrap_err();
        assert!(matches!(e, UrlError::NoScheme { .. }), "{e}");
        assert!(e.to_string().contains("not a url"), "{e}");
    }

    #[test]
    fn key_segments_have_no_glob_characters() {
        assert_eq!(key_segment("fast slow*[x]?"), "fast_slow__x__");
        assert_eq!(key_segment(""), "_");
    }

    #[test]
    fn the_default_window_step_follows_the_flow_chart() {
        let mut s = MemoryStore::new();
        let st: &mut dyn Store = &mut s;
        assert_eq!(
            st.window_admit("c:0", 1000, 1, "q", false, 0),
            Ok(WindowAdmit::Run)
        );
        assert_eq!(
            st.window_admit("c:0", 1000, 1, "q", false, 0),
            Ok(WindowAdmit::Wait { waiting: 0 })
        );
        assert_eq!(
            st.window_admit("c:0", 1000, 1, "q", false, 0),
            Ok(WindowAdmit::Wait { waiting: 1 })
        );
        // The next window: a delayed job runs and leaves the waiting count.
        let t = 1000 * NANOS_PER_MS;
        assert_eq!(
            st.window_admit("c:1", 1000, 1, "q", true, t),
            Ok(WindowAdmit::Run)
        );
        assert_eq!(st.get("q", t), Ok(Some(1)));
    }
}
