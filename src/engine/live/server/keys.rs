//! The server's keys: each request's key (its `Authorization`, else `?key=`) mapped to the
//! dense index the limiter expects, bounded in number, with counters. A key is held as a
//! [`KeyId`] from the moment it is read: what a key costs the server is the same whatever the
//! client sends, and no token is kept, shown or written.

use std::collections::HashMap;

use hyper::Request;

use crate::exchange::DEFAULT_KEY;
use crate::fingerprint::{fnv1a64, keyed_hash, shown_hash};
use crate::limiter::Limiter;
use crate::record::Counts;
use crate::rng::SimRng;

/// Distinct keys the server tracks; past this, new keys share one overflow bucket, so a
/// client inventing keys cannot grow the server's memory without bound.
pub const MAX_KEYS: usize = 100_000;
pub(super) const OVERFLOW_KEY: &str = "<overflow>";

/// Counters of one key, as `GET /_stats` shows them: a recorder's counts, one per answer.
pub type KeyStats = Counts;

/// A request's key as the server holds it, in a few fixed bytes whatever the token's length:
/// `id` tells keys apart (a hash keyed afresh each run, [`keyed_hash`]), `stable` is the
/// token's FNV-1a hash, the same in every process (the shown fingerprint, and a bucket's name
/// in Redis, which instances share). The default key, named by the scenario or sent as
/// `Authorization: default` by our own clients, stays itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyId {
    id: u64,
    stable: u64,
    default: bool,
}

impl KeyId {
    pub fn of(token: &str) -> KeyId {
        KeyId {
            id: keyed_hash(token.as_bytes()),
            stable: fnv1a64(token.as_bytes()),
            default: token == DEFAULT_KEY,
        }
    }

    /// What tells this key from every other in this run.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// As `/_stats`, the Ctrl-C summary and a recording show it: the default key by name,
    /// every token by its fingerprint (`fnv:820a5676`), which two tokens may share.
    pub fn shown(&self) -> String {
        if self.default {
            DEFAULT_KEY.to_string()
        } else {
            shown_hash(self.stable)
        }
    }

    /// The name of its bucket where instances share them (`serve --store`): all 64 bits of
    /// the stable hash, so every instance names one token's bucket alike.
    pub fn stored(&self) -> String {
        if self.default {
            DEFAULT_KEY.to_string()
        } else {
            format!("fnv64:{:016x}", self.stable)
        }
    }
}

/// The rule and every key's place in it, behind the server's one mutex.
pub(super) struct Keyed {
    pub(super) limiter: Box<dyn Limiter>,
    /// [`KeyId::id`] → index.
    pub(super) index: HashMap<u64, usize>,
    /// Per index: the key as [`KeyId::shown`] shows it.
    pub(super) names: Vec<String>,
    /// Per index: the key, for the name of its bucket in Redis; `None` for the overflow.
    pub(super) ids: Vec<Option<KeyId>>,
    pub(super) stats: Vec<KeyStats>,
    pub(super) rng: SimRng,
    /// The index of the shared key of requests without one, found without hashing its name.
    pub(super) default: usize,
    /// The index every key past [`MAX_KEYS`] shares, once there is one.
    pub(super) overflow: Option<usize>,
}

impl Keyed {
    /// The index of a request's key, the shared default key without one.
    pub(super) fn index_of(&mut self, key: Option<&KeyId>) -> usize {
        match key {
            Some(k) => self.key_id(k),
            None => self.default,
        }
    }

    /// The index of the key whose token is `name` (a scenario's key, or a test's).
    pub(super) fn key(&mut self, name: &str) -> usize {
        self.key_id(&KeyId::of(name))
    }

    fn key_id(&mut self, key: &KeyId) -> usize {
        if let Some(&i) = self.index.get(&key.id) {
            return i;
        }
        if self.names.len() >= MAX_KEYS {
            return match self.overflow {
                Some(i) => i,
                None => {
                    let i = self.push(OVERFLOW_KEY.to_string(), None);
                    self.overflow = Some(i);
                    i
                }
            };
        }
        let i = self.push(key.shown(), Some(*key));
        self.index.insert(key.id, i);
        i
    }

    fn push(&mut self, shown: String, id: Option<KeyId>) -> usize {
        self.names.push(shown);
        self.ids.push(id);
        self.stats.push(KeyStats::default());
        self.names.len() - 1
    }

    /// The name of key `index`'s bucket in Redis (`serve --store`).
    pub(super) fn stored_name(&self, index: usize) -> String {
        self.ids[index].map_or_else(|| OVERFLOW_KEY.to_string(), |k| k.stored())
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

/// A request's key as the server holds it: the token is read and let go at once.
pub(super) fn key_id_of<B>(req: &Request<B>) -> Option<KeyId> {
    key_of(req).map(|token| KeyId::of(&token))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn distinct_names_number_repeats_and_never_collide() {
        let names = ["a", "b", "a", "a#2", "a"].map(String::from);
        assert_eq!(
            distinct_names(names.into_iter()),
            vec!["a", "b", "a#2", "a#2#2", "a#3"]
        );
    }
}
