//! The in-memory store: Redis semantics on the virtual clock, for the sim (always) and for a
//! live run whose coordinating processes are one.

use std::collections::HashMap;

use super::{Store, StoreResult, Ttl};
use crate::time::NANOS_PER_MS;
use crate::time::Nanos;

#[derive(Clone, Debug)]
struct Entry {
    value: i64,
    /// Absolute expiry on the store's clock, if any.
    expires_at: Option<Nanos>,
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

    /// `SET key value NX PX ttl_ms`: true when the key was absent (or expired) and is now set.
    pub fn set_nx_px(&mut self, key: &str, value: i64, ttl_ms: u64, now: Nanos) -> bool {
        if self.live(key, now).is_some() {
            return false;
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                value,
                expires_at: Some(now.saturating_add(ttl_ms.saturating_mul(NANOS_PER_MS))),
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

    /// `GET key` as an integer.
    pub fn get(&mut self, key: &str, now: Nanos) -> Option<i64> {
        self.live(key, now).map(|e| e.value)
    }

    /// `INCRBY key delta`: a missing key counts from 0 and keeps no expiry.
    pub fn incr_by(&mut self, key: &str, delta: i64, now: Nanos) -> i64 {
        if let Some(e) = self.live(key, now) {
            e.value += delta;
            return e.value;
        }
        self.entries.insert(
            key.to_string(),
            Entry {
                value: delta,
                expires_at: None,
            },
        );
        delta
    }

    /// `INCR key` then, when the key was new, `PEXPIRE key ttl_ms`, as one atomic step (the
    /// window counters of seed 004 must not outlive their window).
    pub fn incr_with_expiry(&mut self, key: &str, ttl_ms: u64, now: Nanos) -> i64 {
        let v = self.incr_by(key, 1, now);
        if v == 1
            && let Some(e) = self.entries.get_mut(key)
        {
            e.expires_at = Some(now.saturating_add(ttl_ms.saturating_mul(NANOS_PER_MS)));
        }
        v
    }

    /// `DEL key`: true when a live key was removed.
    pub fn del(&mut self, key: &str, now: Nanos) -> bool {
        self.live(key, now).is_some() && self.entries.remove(key).is_some()
    }
}

/// Every call succeeds: the store is this process's memory.
impl Store for MemoryStore {
    fn set_nx_px(&mut self, key: &str, value: i64, ttl_ms: u64, now: Nanos) -> StoreResult<bool> {
        Ok(MemoryStore::set_nx_px(self, key, value, ttl_ms, now))
    }

    fn pttl(&mut self, key: &str, now: Nanos) -> StoreResult<Ttl> {
        Ok(MemoryStore::pttl(self, key, now))
    }

    fn get(&mut self, key: &str, now: Nanos) -> StoreResult<Option<i64>> {
        Ok(MemoryStore::get(self, key, now))
    }

    fn incr_by(&mut self, key: &str, delta: i64, now: Nanos) -> StoreResult<i64> {
        Ok(MemoryStore::incr_by(self, key, delta, now))
    }

    fn incr_with_expiry(&mut self, key: &str, ttl_ms: u64, now: Nanos) -> StoreResult<i64> {
        Ok(MemoryStore::incr_with_expiry(self, key, ttl_ms, now))
    }

    fn del(&mut self, key: &str, now: Nanos) -> StoreResult<bool> {
        Ok(MemoryStore::del(self, key, now))
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
        assert_eq!(s.incr_with_expiry("w:0", 10_000, 0), 1);
        assert_eq!(s.incr_with_expiry("w:0", 10_000, 5_000 * MS), 2);
        // The expiry is set by the first INCR only.
        assert_eq!(s.pttl("w:0", 5_000 * MS), Ttl::Millis(5_000));
        assert_eq!(s.incr_with_expiry("w:0", 10_000, 10_000 * MS), 1);
        assert_eq!(s.incr_by("queued", 1, 0), 1);
        assert_eq!(s.incr_by("queued", -1, 0), 0);
        assert_eq!(s.pttl("queued", 0), Ttl::Persistent);
        assert!(s.del("queued", 0));
        assert_eq!(s.get("queued", 0), None);
    }
}
