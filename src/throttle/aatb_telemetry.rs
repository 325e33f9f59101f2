//! AATB's telemetry aggregator (Farkiani, Liu & Crowley 2025; `telemetry.py` in
//! github.com/Bfarkiani/ratelimiter), kept in the run's shared store instead of a UDP server, so
//! every process that reports to it sees the same figures: in memory in the sim, Redis in a live
//! run.
//!
//! The source's controller keeps three rolling sums, each over the slots completed before the
//! report (a report never sees its own slot):
//! - requests: the `sent` counts clients report, summed over the last `window / period_total`
//!   slots of `period_total` (30 s / 2 s = 15 slots);
//! - 429s: the congestion reports among them, over the same slots;
//! - active clients: the distinct clients that reported in the last `2 × window /
//!   period_active` slots of `period_active` (60 s / 10 s = 6 slots), at least 1.
//!
//! Here each slot is a store key numbered `⌊now / period⌋` on the run's clock: a count
//! (`INCRBY`) for requests and 429s, a set (`SADD`) for the clients, each expiring once no
//! report can read it.

use crate::store::{SharedStore, StoreResult};
use crate::time::{NANOS_PER_MS, Nanos};

/// The controller's reply (`ReceivedData` without `token_rate`, which the client knows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aggregate {
    pub total_requests: u64,
    /// At least 1, as the source answers.
    pub active_clients: u64,
    pub reported_429: u64,
}

/// The slots of one aggregator in the store.
#[derive(Clone, Debug)]
pub struct Telemetry {
    prefix: String,
    store: SharedStore,
    period_total: Nanos,
    total_slots: u64,
    period_active: Nanos,
    active_slots: u64,
}

impl Telemetry {
    /// The aggregator under `prefix`: sums over `window` in slots of `period_total`, clients
    /// over twice `window` in slots of `period_active` (both counts rounded, as the source's
    /// `round(window / period)`, at least 1).
    pub fn new(
        store: SharedStore,
        prefix: String,
        window: Nanos,
        period_total: Nanos,
        period_active: Nanos,
    ) -> Self {
        let slots = |span: Nanos, period: Nanos| {
            ((span as f64 / period.max(1) as f64).round() as u64).max(1)
        };
        Telemetry {
            prefix,
            store,
            period_total: period_total.max(1),
            total_slots: slots(window, period_total),
            period_active: period_active.max(1),
            active_slots: slots(window.saturating_mul(2), period_active),
        }
    }

    fn key(&self, what: &str, slot: u64) -> String {
        format!("{}:{what}:{slot}", self.prefix)
    }

    /// The completed slots before `now`'s, newest first.
    fn past(&self, what: &str, now: Nanos, period: Nanos, count: u64) -> Vec<String> {
        let current = now / period;
        (1..=count.min(current))
            .map(|back| self.key(what, current - back))
            .collect()
    }

    /// How long a slot's key must live: until the last report that reads it, plus a slot.
    fn ttl_ms(period: Nanos, slots: u64) -> u64 {
        period
            .saturating_mul(slots + 2)
            .div_ceil(NANOS_PER_MS)
            .max(1)
    }

    /// `client` reports `sent` requests answered since its last report, as a congestion report
    /// (after a 429 or 5xx) or a routine one; the reply is what the aggregator knew before it.
    pub fn report(
        &self,
        now: Nanos,
        client: &str,
        sent: u64,
        congestion: bool,
    ) -> StoreResult<Aggregate> {
        let requests = self.past("requests", now, self.period_total, self.total_slots);
        let limited = self.past("429", now, self.period_total, self.total_slots);
        let active = self.past("active", now, self.period_active, self.active_slots);
        let total_ttl = Self::ttl_ms(self.period_total, self.total_slots);
        let slot = now / self.period_total;
        let mut store = self.store.lock();
        store.incr_by_with_expiry(
            &self.key("requests", slot),
            i64::try_from(sent).unwrap_or(i64::MAX),
            total_ttl,
            now,
        )?;
        if congestion {
            store.incr_by_with_expiry(&self.key("429", slot), 1, total_ttl, now)?;
        }
        store.sadd_with_expiry(
            &self.key("active", now / self.period_active),
            client,
            Self::ttl_ms(self.period_active, self.active_slots),
            now,
        )?;
        let sum =
            |values: Vec<Option<i64>>| values.into_iter().flatten().sum::<i64>().max(0) as u64;
        Ok(Aggregate {
            total_requests: sum(store.mget(&requests, now)?),
            reported_429: sum(store.mget(&limited, now)?),
            active_clients: store.sunion_count(&active, now)?.max(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn telemetry(store: &SharedStore) -> Telemetry {
        Telemetry::new(store.clone(), "t".into(), 30 * S, 2 * S, 10 * S)
    }

    #[test]
    fn replies_sum_the_completed_slots_of_the_window() {
        let store = crate::store::shared();
        let t = telemetry(&store);
        // The first reply knows nothing yet, not even its own report.
        let first = t.report(S, "a", 5, false).unwrap();
        assert_eq!(
            first,
            Aggregate {
                total_requests: 0,
                active_clients: 1,
                reported_429: 0
            }
        );
        t.report(3 * S, "b", 7, true).unwrap();
        // At 4 s the slots [0, 2) and [2, 4) are complete: 12 requests, one 429. The clients
        // are counted per completed 10 s slot, none yet.
        assert_eq!(
            t.report(4 * S, "a", 0, false).unwrap(),
            Aggregate {
                total_requests: 12,
                active_clients: 1,
                reported_429: 1
            }
        );
        // At 10 s the first 10 s slot is complete: two clients.
        assert_eq!(t.report(10 * S, "c", 1, false).unwrap().active_clients, 2);
        // At 32 s the slot [0, 2) has left the 15-slot window; [2, 4) is still in it.
        let at32 = t.report(32 * S, "c", 0, false).unwrap();
        assert_eq!((at32.total_requests, at32.reported_429), (8, 1));
        // At 36 s only the report at 10 s is left. Clients are counted over 60 s: a, b, c.
        let at36 = t.report(36 * S, "c", 0, false).unwrap();
        assert_eq!((at36.total_requests, at36.reported_429), (1, 0));
        assert_eq!(at36.active_clients, 3);
        // At 70 s the slot [0, 10) has left the six slots of clients: c only.
        assert_eq!(t.report(70 * S, "c", 0, false).unwrap().active_clients, 1);
    }

    #[test]
    fn aggregators_with_other_prefixes_are_apart() {
        let store = crate::store::shared();
        let a = telemetry(&store);
        let b = Telemetry::new(store.clone(), "u".into(), 30 * S, 2 * S, 10 * S);
        a.report(0, "x", 9, true).unwrap();
        assert_eq!(b.report(2 * S, "y", 0, false).unwrap().total_requests, 0);
        assert_eq!(a.report(2 * S, "y", 0, false).unwrap().total_requests, 9);
    }
}
