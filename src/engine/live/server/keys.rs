//! The server's keys: each request's key (its `Authorization`, else `?key=`) mapped to the
//! dense index the limiter expects, bounded in number, with counters, and shown by
//! fingerprint, never as typed.

use std::collections::HashMap;

use hyper::Request;

use crate::exchange::DEFAULT_KEY;
use crate::limiter::Limiter;
use crate::record::Counts;
use crate::rng::SimRng;

/// Distinct keys the server tracks; past this, new keys share one overflow bucket, so a
/// client inventing keys cannot grow the server's memory without bound.
pub const MAX_KEYS: usize = 100_000;
pub(super) const OVERFLOW_KEY: &str = "<overflow>";

/// Counters of one key, as `GET /_stats` shows them: a recorder's counts, one per answer.
pub type KeyStats = Counts;

/// The rule and every key's place in it, behind the server's one mutex.
pub(super) struct Keyed {
    pub(super) limiter: Box<dyn Limiter>,
    pub(super) index: HashMap<String, usize>,
    pub(super) names: Vec<String>,
    pub(super) stats: Vec<KeyStats>,
    pub(super) rng: SimRng,
    /// The index of the shared key of requests without one, found without hashing its name.
    pub(super) default: usize,
}

impl Keyed {
    /// The index of a request's key, the shared default key without one.
    pub(super) fn index_of(&mut self, key: Option<&str>) -> usize {
        match key {
            Some(name) => self.key(name),
            None => self.default,
        }
    }

    pub(super) fn key(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let name = if self.names.len() >= MAX_KEYS {
            OVERFLOW_KEY
        } else {
            name
        };
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.stats.push(KeyStats::default());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// A key as `/_stats` and the Ctrl-C summary show it: the shared key of requests without one
/// and the overflow bucket by name, every token by its fingerprint.
pub fn shown_key(name: &str) -> String {
    if name == DEFAULT_KEY || name == OVERFLOW_KEY {
        name.to_string()
    } else {
        crate::fingerprint::fingerprint(name)
    }
}

/// `names` made distinct in order: a name seen before gets `#2`, `#3`, … (the first keeps
/// its own), so two keys whose fingerprints agree are never shown, or counted, as one.
pub fn distinct_names(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let mut shown = name.clone();
        let n = seen.entry(name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            shown = format!("{name}#{n}");
            // A name that itself ends in `#2` cannot take another's place.
            while seen.contains_key(&shown) {
                *seen.get_mut(&name).expect("just inserted") += 1;
                shown = format!("{name}#{}", seen[&name]);
            }
            seen.insert(shown.clone(), 1);
        }
        out.push(shown);
    }
    out
}

/// The key of a request: its `Authorization` header, else its `?key=` parameter.
pub(super) fn key_of<B>(req: &Request<B>) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(v) = req.headers().get(hyper::header::AUTHORIZATION) {
        return Some(String::from_utf8_lossy(v.as_bytes()));
    }
    req.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "key")
            .map(|(_, v)| v.into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::live::ScaledClock;
    use crate::engine::live::server::{ServerSettings, ServerState};
    use crate::limiter::{Latency, LimiterConfig};

    #[test]
    fn the_key_is_the_authorization_header_else_the_key_parameter() {
        let r = Request::builder().uri("/x?a=1&key=k1").body(()).unwrap();
        assert_eq!(key_of(&r).as_deref(), Some("k1"));
        let r = Request::builder()
            .uri("/x?key=k1")
            .header("Authorization", "Bearer t")
            .body(())
            .unwrap();
        assert_eq!(key_of(&r).as_deref(), Some("Bearer t"));
        let r = Request::builder().uri("/x?keys=no").body(()).unwrap();
        assert_eq!(key_of(&r), None);
    }

    #[test]
    fn two_tokens_with_one_fingerprint_stay_two_keys() {
        // Issue 23, bug 8: these two fingerprint alike (fnv:820a5676); /_stats showed one.
        let (a, b) = ("Bearer tok157397", "Bearer tok678860");
        assert_eq!(shown_key(a), shown_key(b));
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
        let fp = shown_key(a);
        let a_stats = stats.iter().find(|(n, _)| *n == fp).unwrap();
        let b_stats = stats.iter().find(|(n, _)| *n == format!("{fp}#2")).unwrap();
        assert_eq!((a_stats.1.requests, b_stats.1.requests), (5, 2));
    }

    #[test]
    fn distinct_names_number_repeats_and_never_collide() {
        let names = ["a", "b", "a", "a#2", "a"].map(String::from);
        assert_eq!(
            distinct_names(names.into_iter()),
            vec!["a", "b", "a#2", "a#2#2", "a#3"]
        );
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
