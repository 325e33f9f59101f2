//! The in-memory store: Redis semantics on the virtual clock, for the sim (always) and for a
//! live run whose coordinating processes are one.

use std::collections::{BTreeSet, HashMap};

use super::{Store, StoreError, StoreResult, Ttl};
use crate::time::NANOS_PER_MS;
use crate::time::Nanos;

/// A key's value: a Redis string holding an integer, or a Redis set.
#[derive(Clone, Debug)]
enum Value {
    Int(i64),
    Set(BTreeSet<String>),
}

#[derive(Clone, Debug)]
struct Entry {
    value: Value,
    /// Absolute expiry on the store's clock, if any.
    expires_at: Option<Nanos>,
}

/// An integer command on a set key, or a set command on an integer: what Redis answers then.
fn wrong_type(key: &str) -> StoreError {
    StoreError::new(
        "memory",
        format!("WRONGTYPE key `{key}` holds the other kind of value"),
    )
}

/// An in-memory key space with Redis semantics, on virtual time.
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: HashMap<String, Entry>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn live(&mut self, key: &str, now: Nanos) -> Option<&mut Entry> {
        let expired = self
            .entries
            .get(key)
            .is_some_and(|e| e.expires_at.is_some_and(|t| t <= now));
        if expired {
            self.entries.remove(key);
        }
        self.entries.get_mut(key)
    }

    fn expiry(now: Nanos, ttl_ms: u64) -> Option<Nanos> {
        Some(now.saturating_add(ttl_ms.saturating_mul(NANOS_PER_MS)))
    }

    /// `SET key value NX PX ttl_ms`: true when the key was absent (or expired) and is now set.
    pub fn set_nx_px(&mut self, key: &str, value: i64, ttl_ms: u64, now: Nanos) -> bool {
        if self.live(key, now).is_some() {
            return false;
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                value: Value::Int(value),
                expires_at: Self::expiry(now, ttl_ms),
            },
        );
        true
    }

    /// `PTTL key`.
    pub fn pttl(&mut self, key: &str, now: Nanos) -> Ttl {
        match self.live(key, now) {
            None => Ttl::Missing,
            Some(Entry {
                expires_at: None, ..
            }) => Ttl::Persistent,
            Some(Entry {
                expires_at: Some(t),
                ..
            }) => Ttl::Millis((*t - now) / NANOS_PER_MS),
        }
    }

    /// `DEL key`: true when a live key was removed.
    pub fn del(&mut self, key: &str, now: Nanos) -> bool {
        self.live(key, now).is_some() && self.entries.remove(key).is_some()
    }
}

/// Every call on a key of the right kind succeeds: the store is this process's memory.
/// (The integer and set commands are written here, once; `set_nx_px`, `pttl` and `del`,
/// which cannot fail, are also plain methods.)
impl Store for MemoryStore {
    fn set_nx_px(&mut self, key: &str, value: i64, ttl_ms: u64, now: Nanos) -> StoreResult<bool> {
        Ok(MemoryStore::set_nx_px(self, key, value, ttl_ms, now))
    }

    fn pttl(&mut self, key: &str, now: Nanos) -> StoreResult<Ttl> {
        Ok(MemoryStore::pttl(self, key, now))
    }

    fn mget(&mut self, keys: &[String], now: Nanos) -> StoreResult<Vec<Option<i64>>> {
        // MGET answers nil for a key of another kind, where GET fails.
        Ok(keys
            .iter()
            .map(|k| self.get(k, now).ok().flatten())
            .collect())
    }

    fn del(&mut self, key: &str, now: Nanos) -> StoreResult<bool> {
        Ok(MemoryStore::del(self, key, now))
    }

    /// `GET key` as an integer.
    fn get(&mut self, key: &str, now: Nanos) -> StoreResult<Option<i64>> {
        match self.live(key, now) {
            None => Ok(None),
            Some(Entry {
                value: Value::Int(v),
                ..
            }) => Ok(Some(*v)),
            Some(_) => Err(wrong_type(key)),
        }
    }

    /// `INCRBY key delta`: a missing key counts from 0 and keeps no expiry.
    fn incr_by(&mut self, key: &str, delta: i64, now: Nanos) -> StoreResult<i64> {
        match self.live(key, now) {
            Some(Entry {
                value: Value::Int(v),
                ..
            }) => {
                *v += delta;
                return Ok(*v);
            }
            Some(_) => return Err(wrong_type(key)),
            None => {}
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                value: Value::Int(delta),
                expires_at: None,
            },
        );
        Ok(delta)
    }

    /// `INCR key` then, when the key was new, `PEXPIRE key ttl_ms`, as one atomic step (the
    /// window counters of the Discord job queue must not outlive their window).
    fn incr_with_expiry(&mut self, key: &str, ttl_ms: u64, now: Nanos) -> StoreResult<i64> {
        let v = self.incr_by(key, 1, now)?;
        if v == 1
            && let Some(e) = self.entries.get_mut(key)
        {
            e.expires_at = Self::expiry(now, ttl_ms);
        }
        Ok(v)
    }

    /// `INCRBY key delta` then, when the key has no expiry, `PEXPIRE key ttl_ms`.
    fn incr_by_with_expiry(
        &mut self,
        key: &str,
        delta: i64,
        ttl_ms: u64,
        now: Nanos,
    ) -> StoreResult<i64> {
        let v = self.incr_by(key, delta, now)?;
        if let Some(e) = self.entries.get_mut(key)
            && e.expires_at.is_none()
        {
            e.expires_at = Self::expiry(now, ttl_ms);
        }
        Ok(v)
    }

    /// `SADD key member` then, when the key has no expiry, `PEXPIRE key ttl_ms`: true when the
    /// member is new.
    fn sadd_with_expiry(
        &mut self,
        key: &str,
        member: &str,
        ttl_ms: u64,
        now: Nanos,
    ) -> StoreResult<bool> {
        let entry = match self.live(key, now) {
            Some(e) => e,
            None => self.entries.entry(key.to_string()).or_insert(Entry {
                value: Value::Set(BTreeSet::new()),
                expires_at: None,
            }),
        };
        let Value::Set(set) = &mut entry.value else {
            return Err(wrong_type(key));
        };
        let added = set.insert(member.to_string());
        if entry.expires_at.is_none() {
            entry.expires_at = Self::expiry(now, ttl_ms);
        }
        Ok(added)
    }

    /// `SUNION key…`, counted: the distinct members of the live sets among `keys`.
    fn sunion_count(&mut self, keys: &[String], now: Nanos) -> StoreResult<u64> {
        let mut union: BTreeSet<&str> = BTreeSet::new();
        for key in keys {
            self.live(key, now);
        }
        for key in keys {
            match self.entries.get(key) {
                None => {}
                Some(Entry {
                    value: Value::Set(s),
                    ..
                }) => union.extend(s.iter().map(String::as_str)),
                Some(_) => return Err(wrong_type(key)),
            }
        }
        Ok(union.len() as u64)
    }

    /// A GCRA reservation (see [`Store::gcra_reserve`]); the key holds the theoretical arrival
    /// time in nanoseconds and expires when it passes.
    fn gcra_reserve(
        &mut self,
        key: &str,
        interval: Nanos,
        burst: u64,
        now: Nanos,
    ) -> StoreResult<Nanos> {
        let tat = self
            .get(key, now)?
            .map_or(now, |t| (t.max(0) as Nanos).max(now));
        let (due, next) = super::gcra_step(tat, interval, burst, now);
        self.entries.insert(
            key.to_string(),
            Entry {
                value: Value::Int(i64::try_from(next).unwrap_or(i64::MAX)),
                expires_at: Some(next),
            },
        );
        Ok(due - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = NANOS_PER_MS;

    #[test]
    fn set_nx_px_claims_once_until_expiry() {
        let mut s = MemoryStore::new();
        assert!(s.set_nx_px("lock", 1, 1000, 0));
        assert!(!s.set_nx_px("lock", 1, 1000, 999 * MS));
        assert_eq!(s.pttl("lock", 250 * MS), Ttl::Millis(750));
        // Redis rounds the remaining time down to whole milliseconds.
        assert_eq!(s.pttl("lock", 250 * MS + 1), Ttl::Millis(749));
        assert!(s.set_nx_px("lock", 1, 1000, 1000 * MS));
        assert_eq!(s.pttl("other", 0), Ttl::Missing);
    }

    #[test]
    fn counters_count_and_window_keys_expire() {
        let mut s = MemoryStore::new();
        assert_eq!(s.incr_with_expiry("w:0", 10_000, 0), Ok(1));
        assert_eq!(s.incr_with_expiry("w:0", 10_000, 5_000 * MS), Ok(2));
        // The expiry is set by the first INCR only.
        assert_eq!(s.pttl("w:0", 5_000 * MS), Ttl::Millis(5_000));
        assert_eq!(s.incr_with_expiry("w:0", 10_000, 10_000 * MS), Ok(1));
        assert_eq!(s.incr_by("queued", 1, 0), Ok(1));
        assert_eq!(s.incr_by("queued", -1, 0), Ok(0));
        assert_eq!(s.pttl("queued", 0), Ttl::Persistent);
        assert!(s.del("queued", 0));
        assert_eq!(s.get("queued", 0), Ok(None));
    }

    #[test]
    fn counts_by_delta_take_their_expiry_once() {
        let mut s = MemoryStore::new();
        assert_eq!(s.incr_by_with_expiry("sent:0", 4, 2_000, 0), Ok(4));
        assert_eq!(s.incr_by_with_expiry("sent:0", 3, 2_000, 1_000 * MS), Ok(7));
        assert_eq!(s.pttl("sent:0", 1_000 * MS), Ttl::Millis(1_000));
        // A count that was kept without expiry gets one.
        assert_eq!(s.incr_by("plain", 2, 0), Ok(2));
        assert_eq!(s.incr_by_with_expiry("plain", 0, 500, 0), Ok(2));
        assert_eq!(s.pttl("plain", 0), Ttl::Millis(500));
        assert_eq!(s.get("sent:0", 2_000 * MS), Ok(None));
    }

    #[test]
    fn sets_count_distinct_members_across_live_keys() {
        let mut s = MemoryStore::new();
        assert_eq!(s.sadd_with_expiry("a:0", "p1", 10_000, 0), Ok(true));
        assert_eq!(s.sadd_with_expiry("a:0", "p1", 10_000, 0), Ok(false));
        assert_eq!(
            s.sadd_with_expiry("a:1", "p1", 10_000, 5_000 * MS),
            Ok(true)
        );
        assert_eq!(
            s.sadd_with_expiry("a:1", "p2", 10_000, 5_000 * MS),
            Ok(true)
        );
        let keys = ["a:0".to_string(), "a:1".to_string(), "a:2".to_string()];
        assert_eq!(s.sunion_count(&keys, 6_000 * MS), Ok(2));
        // a:0 expires at 10 s, a:1 (expiry from its first member) at 15 s.
        assert_eq!(s.sunion_count(&keys, 12_000 * MS), Ok(2));
        assert_eq!(s.sunion_count(&keys, 15_000 * MS), Ok(0));
        // Kinds do not mix, as in Redis.
        assert!(s.incr_by("a:3", 1, 0).is_ok());
        assert!(s.sadd_with_expiry("a:3", "p", 1, 0).is_err());
        assert!(s.sadd_with_expiry("b", "p", 1_000, 0).is_ok());
        assert!(s.get("b", 0).is_err());
        let mixed = ["a:3".to_string(), "b".to_string(), "none".to_string()];
        assert_eq!(
            Store::mget(&mut s, &mixed, 0),
            Ok(vec![Some(1), None, None])
        );
    }

    #[test]
    fn gcra_reservations_allow_the_burst_then_space_by_the_interval() {
        let mut s = MemoryStore::new();
        let t = 800 * MS;
        // A burst of 2 at once, then one per interval, in order of asking.
        assert_eq!(s.gcra_reserve("b", t, 2, 0), Ok(0));
        assert_eq!(s.gcra_reserve("b", t, 2, 0), Ok(0));
        assert_eq!(s.gcra_reserve("b", t, 2, 0), Ok(t));
        assert_eq!(s.gcra_reserve("b", t, 2, 100 * MS), Ok(2 * t - 100 * MS));
        // Idle long enough, the bucket is full again and the key gone.
        assert_eq!(s.pttl("b", 10 * t), Ttl::Missing);
        assert_eq!(s.gcra_reserve("b", t, 1, 10 * t), Ok(0));
        assert_eq!(s.gcra_reserve("b", t, 1, 10 * t), Ok(t));
    }
}
