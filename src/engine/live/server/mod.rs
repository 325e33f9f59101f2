//! The mock rate-limited API as a real hyper 1.x HTTP/1.1 server: its settings
//! (`settings.rs`), the key table (`keys.rs`), the request handler (`handler.rs`), `serve`'s live
//! page (`dashboard.rs`, naming clients as `identity.rs` does), the path
//! through a limit kept in Redis (`shared_limit.rs`, `shared_gcra.rs`), what `serve --record`
//! is told (`observer.rs`), and the listeners (`listen.rs`); here, the state they share.
//!
//! Every request goes through the very `Limiter` the sim uses, behind one mutex, told the time
//! by a [`ScaledClock`]. Keys are the `Authorization` header (or `?key=`), mapped to the dense
//! indices limiters expect; requests without either share the default key. The answer waits
//! out the scenario's latency (in real time) after the decision, as in the sim, and the rule's
//! hold before that when it serves a request late; the limiter hears `release` when it is
//! sent.

mod dashboard;
mod handler;
pub mod identity;
mod keys;
mod listen;
mod observer;
mod settings;
mod shared_gcra;
mod shared_limit;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

pub use dashboard::{Dashboard, View};
pub use keys::{KeyId, KeyStats, MAX_KEYS, distinct_names};
pub use listen::{Running, bind, serve, serve_per_thread};
pub use observer::{Observer, Seen};
pub use settings::ServerSettings;
pub use shared_gcra::{SharedGcra, SharedGcraError};

use self::keys::Keyed;
use self::shared_limit::InFront;
use super::ScaledClock;
use crate::exchange::{DEFAULT_KEY, Status};
use crate::limiter::{Decision, LatencySampler};
use crate::rng::{Stream, stream};
use crate::time::Nanos;

/// The header our own clients send so limiters that tell clients apart (`admit_from`) see the
/// same client indices as in the sim.
pub const CLIENT_ID: &str = "x-client-id";

/// The header our own clients stamp each request with: the run's virtual time (nanoseconds)
/// as it was written. The scenario's latency is the whole trip; the loopback's own trip,
/// tens of microseconds, is multiplied by the time scale into milliseconds of virtual time,
/// so the server holds the answer for the latency less the trip (taken as the trip here,
/// measured, twice: there and back), keeping the trip the client measures the scenario's
/// (docs/live-timing.md).
pub const SENT_AT: &str = "x-sim-sent-at";

/// The server's shared state; one reference count to clone into every request.
#[derive(Clone)]
pub struct ServerState(Arc<Shared>);

/// What every connection of one server shares.
pub struct Shared {
    keyed: Mutex<Keyed>,
    clock: ScaledClock,
    latency: LatencySampler,
    connections: AtomicU64,
    /// Redis calls that failed (answered 503), for the log.
    store_failures: AtomicU64,
    settings: ServerSettings,
}

impl std::ops::Deref for ServerState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl ServerState {
    pub fn new(settings: ServerSettings, clock: ScaledClock) -> Self {
        // The same rule, faults and fault stream as the sim builds. With a shared limit the
        // faults still come first, in front of Redis.
        let rule = settings.limiter.build();
        let rate = rule.rate_per_sec();
        let rule = match settings.shared_limit {
            Some(_) => Box::new(InFront { rate }),
            None => rule,
        };
        let limiter = settings
            .faults
            .wrap(rule, stream(settings.seed, 0, Stream::Server));
        let mut keyed = Keyed {
            limiter,
            index: HashMap::new(),
            names: Vec::new(),
            ids: Vec::new(),
            stats: Vec::new(),
            rng: stream(settings.seed, u64::MAX, Stream::Network),
            default: 0,
            overflow: None,
        };
        for k in &settings.keys {
            keyed.key(k);
        }
        keyed.default = keyed.key(DEFAULT_KEY);
        ServerState(Arc::new(Shared {
            keyed: Mutex::new(keyed),
            latency: settings.latency.sampler(),
            clock,
            connections: AtomicU64::new(0),
            store_failures: AtomicU64::new(0),
            settings,
        }))
    }

    pub fn clock(&self) -> ScaledClock {
        self.clock
    }

    /// The most 2xx one key could get over `[0, duration]` (for the summary's capacity).
    pub fn capacity(&self, duration: Nanos) -> f64 {
        self.lock().limiter.capacity(duration)
    }

    /// Decide one request of `key` (the default key without one) at the clock's time, count
    /// it, and tell `seen` of it before the lock is let go, so that observers (a recording)
    /// hear the decisions in the order they were taken: the decision, the key's index, the
    /// time it was decided and the latency to wait before answering.
    fn decide(
        &self,
        key: Option<&KeyId>,
        client: usize,
        seen: impl FnOnce(&Decision, Nanos),
    ) -> (Decision, usize, Nanos, Nanos) {
        let mut k = self.lock();
        let (d, index, now, latency) = self.admit(&mut k, key, client);
        k.stats[index].add(d.status);
        seen(&d, latency);
        // Only an admitted request held a place in flight (as in the sim).
        if latency == 0 && d.status == Status::Ok {
            k.limiter.release(now, index);
        }
        (d, index, now, latency)
    }

    /// With the lock held (`k`): the index of `key`, the clock's time (read under the lock, so
    /// the limiter is told times in order), the rule's decision, and the time to wait before
    /// answering: the latency, plus the rule's hold when it serves the request late (waited
    /// out as the latency is, after the lock is let go, on the scaled clock).
    fn admit(
        &self,
        k: &mut Keyed,
        key: Option<&KeyId>,
        client: usize,
    ) -> (Decision, usize, Nanos, Nanos) {
        let index = k.index_of(key);
        let now = self.clock.now();
        let held = k.limiter.admit_held(now, index, client);
        let latency = self.latency.sample(&mut k.rng).saturating_add(held.hold);
        (held.decision, index, now, latency)
    }

    /// Counters per key, in key order, each key shown as [`KeyId::shown`] says: never the
    /// token itself. Two tokens whose fingerprints agree stay two entries: the later is
    /// shown with `#2`, `#3`, … after the fingerprint, in the order the keys were first seen.
    pub fn stats(&self) -> Vec<(String, KeyStats)> {
        let k = self.lock();
        let shown = distinct_names(k.names.iter().cloned());
        shown.into_iter().zip(k.stats.iter().copied()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Keyed> {
        // A panic while holding the lock cannot leave the counters half-written in a way that
        // matters more than stopping the server would.
        self.keyed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The key table as the server's state holds it: built from the server's settings, so these
/// tests stand here, above both the keys (`keys.rs`) and the settings (`settings.rs`).
#[cfg(test)]
mod tests {
    use super::keys::OVERFLOW_KEY;
    use super::*;
    use crate::limiter::{Latency, LimiterConfig};

    #[test]
    fn two_tokens_with_one_fingerprint_stay_two_keys() {
        // A key is the whole token, not its shown fingerprint: these two fingerprint alike
        // (fnv:820a5676), and /_stats once showed one.
        let (a, b) = ("Bearer tok157397", "Bearer tok678860");
        assert_eq!(KeyId::of(a).shown(), KeyId::of(b).shown());
        let settings = ServerSettings::new(LimiterConfig::default(), Latency::default(), 1);
        let state = ServerState::new(settings, ScaledClock::starting_now(1.0));
        {
            let mut k = state.lock();
            let (ia, ib) = (k.key(a), k.key(b));
            assert_ne!(ia, ib);
            for _ in 0..5 {
                k.stats[ia].add(crate::exchange::Status::Ok);
            }
            for _ in 0..2 {
                k.stats[ib].add(crate::exchange::Status::Ok);
            }
        }
        let stats = state.stats();
        let fp = KeyId::of(a).shown();
        let a_stats = stats.iter().find(|(n, _)| *n == fp).unwrap();
        let b_stats = stats.iter().find(|(n, _)| *n == format!("{fp}#2")).unwrap();
        assert_eq!((a_stats.1.requests, b_stats.1.requests), (5, 2));
    }

    /// A key costs the server the same few bytes whatever the token's length: 3,000 tokens of
    /// 60 KB held about 535 MB, every one in full.
    #[test]
    fn a_key_costs_a_few_bytes_whatever_its_token() {
        let settings = ServerSettings::new(LimiterConfig::default(), Latency::default(), 1);
        let state = ServerState::new(settings, ScaledClock::starting_now(1.0));
        let mut k = state.lock();
        let tokens = 300;
        for i in 0..tokens {
            let token = format!("Bearer {i:05}{}", "x".repeat(60_000));
            let index = k.key(&token);
            assert_eq!(k.key(&token), index, "a key keeps its index");
        }
        // Every distinct token has its own bucket.
        assert_eq!(k.names.len(), tokens + 1);
        let held: usize = k.names.iter().map(String::len).sum();
        assert!(held <= (tokens + 1) * 16, "{held} bytes of names");
        assert!(k.names.iter().all(|n| !n.contains("xxxx")));
        let stored = k.stored_name(1);
        assert!(stored.len() <= 24 && !stored.contains("Bearer"), "{stored}");
    }

    #[test]
    fn registered_keys_keep_their_indices_and_new_keys_stop_at_the_cap() {
        let mut settings = ServerSettings::new(LimiterConfig::default(), Latency::default(), 1);
        settings.keys = vec!["a".into(), "b".into()];
        let state = ServerState::new(settings, ScaledClock::starting_now(1.0));
        let mut k = state.lock();
        assert_eq!((k.key("a"), k.key("b")), (0, 1));
        assert_eq!(k.key(DEFAULT_KEY), 2);
        assert_eq!(k.index_of(None), 2);
        for i in 0..MAX_KEYS {
            k.key(&format!("client-{i}"));
        }
        // Past the cap every new key lands in one shared bucket.
        let overflow = k.key("one-more");
        assert_eq!(k.key("and-another"), overflow);
        assert_eq!(k.names.len(), MAX_KEYS + 1);
        assert_eq!(k.names[overflow], OVERFLOW_KEY);
    }
}
