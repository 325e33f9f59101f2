//! Who sent a request, as `serve --record` (`src/recording/`) and the `/_dashboard` page name
//! it: the `X-Client-Id` header when the client sends one (`group/name`, the group optional),
//! else the request's key (by its fingerprint, never the token), else the TCP peer's IP
//! address; and the table of clients both keep, capped the same way, so the page shows the
//! ids `clients.csv` will hold.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use super::KeyId;
use crate::exchange::DEFAULT_KEY;

/// Distinct clients named one by one; requests of clients first seen past this count
/// together as one client, [`OVERFLOW_NAME`] in group [`OVERFLOW_GROUP`].
pub const MAX_CLIENTS: usize = 10_000;
/// Distinct groups; clients of groups first seen past this go to group [`OTHER_GROUP`].
pub const MAX_GROUPS: usize = 100;

pub const OVERFLOW_GROUP: &str = "overflow";
pub const OVERFLOW_NAME: &str = "<overflow>";
pub const OTHER_GROUP: &str = "other";

/// The group of clients that name none (no `/` in `X-Client-Id`, or no header at all).
pub const DEFAULT_GROUP: &str = "clients";

/// The longest client name kept; a longer `X-Client-Id` is cut (names land in CSV files).
pub const MAX_NAME_CHARS: usize = 200;
/// The longest group name kept.
pub const MAX_GROUP_CHARS: usize = 64;

/// How a client was told apart from the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentifiedBy {
    Header,
    Key,
    Peer,
}

impl IdentifiedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            IdentifiedBy::Header => "x-client-id",
            IdentifiedBy::Key => "key",
            IdentifiedBy::Peer => "peer",
        }
    }
}

/// One recorded client: the group it belongs to and its name within the group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientName {
    pub group: String,
    pub name: String,
    pub by: IdentifiedBy,
}

impl ClientName {
    /// One text for the pair: `group/name` (a group never holds a `/`).
    pub fn key(&self) -> String {
        format!("{}/{}", self.group, self.name)
    }

    /// Name the sender of a request. The port of the peer is left out: a client that opens a
    /// new connection per request would otherwise count as a new client each time.
    pub fn of(client_id: Option<&str>, key: Option<&KeyId>, peer: IpAddr) -> ClientName {
        if let Some(id) = client_id.map(str::trim).filter(|id| !id.is_empty()) {
            let (group, name) = match id.split_once('/') {
                Some((g, rest)) if !rest.is_empty() => (group_name(g), rest),
                _ => (DEFAULT_GROUP.to_string(), id),
            };
            return ClientName {
                group,
                name: name.chars().take(MAX_NAME_CHARS).collect(),
                by: IdentifiedBy::Header,
            };
        }
        match key {
            Some(k) => ClientName {
                group: DEFAULT_GROUP.into(),
                name: format!("key:{}", k.shown()),
                by: IdentifiedBy::Key,
            },
            None => ClientName {
                group: DEFAULT_GROUP.into(),
                name: format!("peer:{peer}"),
                by: IdentifiedBy::Peer,
            },
        }
    }
}

/// A group name a scenario accepts (`[[clients]] name`: not empty, no `.`, not `*` and not a
/// number): letters, digits, `_` and `-` kept, anything else made `_`, cut to
/// [`MAX_GROUP_CHARS`]; a number gets a `g` in front.
pub fn group_name(raw: &str) -> String {
    let s: String = raw
        .chars()
        .take(MAX_GROUP_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        DEFAULT_GROUP.to_string()
    } else if s.parse::<usize>().is_ok() {
        format!("g{s}")
    } else {
        s
    }
}

/// A cap a new client met, for the one who keeps the table to say so once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capped {
    /// [`MAX_CLIENTS`] reached: from now on new clients are the overflow client.
    Clients,
    /// [`MAX_GROUPS`] reached: from now on new groups are [`OTHER_GROUP`].
    Groups,
}

/// The clients seen so far, each with a dense index, in the order first seen.
#[derive(Debug, Default)]
pub struct ClientTable {
    /// [`identity`] → index.
    index: HashMap<String, u32>,
    names: Vec<ClientName>,
    /// Every client's `group/name` as named: distinct, even where two keys share a
    /// fingerprint.
    shown: HashSet<String>,
    groups: Vec<String>,
    overflow: Option<u32>,
    /// [`KeyId::id`] → the key's name in a recording: its fingerprint, made distinct.
    key_names: HashMap<u64, String>,
    /// Every name in `key_names`.
    shown_keys: HashSet<String>,
}

/// What tells a client apart: its `group/name`, except that a client named by its key is told
/// apart by the key as the server tells keys apart ([`KeyId::id`]), not by the fingerprint its
/// name shows (two tokens may share one: `Bearer tok157397` and `Bearer tok678860` both show
/// `fnv:820a5676`).
fn identity(id: &ClientName, key: Option<&KeyId>) -> String {
    match (id.by, key) {
        // A NUL never appears in a header value, so this never equals a `group/name`.
        (IdentifiedBy::Key, Some(k)) => format!("{}\0{:016x}", id.group, k.id()),
        _ => id.key(),
    }
}

impl ClientTable {
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn name(&self, i: u32) -> &ClientName {
        &self.names[i as usize]
    }

    /// The index of the client `id` (sending with `key`), registering it while the caps allow
    /// (past them, the overflow client's, or the client in group [`OTHER_GROUP`]); whether it
    /// is new; and the cap met the first time one is. A new client whose `group/name` another
    /// has already is named `name#2` (`#3`, …).
    pub fn client(
        &mut self,
        mut id: ClientName,
        key: Option<&KeyId>,
    ) -> (u32, bool, Option<Capped>) {
        if let Some(&i) = self.index.get(&identity(&id, key)) {
            return (i, false, None);
        }
        if self.names.len() >= MAX_CLIENTS {
            if let Some(i) = self.overflow {
                return (i, false, None);
            }
            id = ClientName {
                group: OVERFLOW_GROUP.into(),
                name: OVERFLOW_NAME.into(),
                by: IdentifiedBy::Header,
            };
            let i = self.push(id, key);
            self.overflow = Some(i);
            return (i, true, Some(Capped::Clients));
        }
        let mut capped = None;
        if !self.groups.contains(&id.group) {
            if self.groups.len() >= MAX_GROUPS {
                if !self.groups.iter().any(|g| g == OTHER_GROUP) {
                    capped = Some(Capped::Groups);
                }
                id.group = OTHER_GROUP.into();
                if let Some(&i) = self.index.get(&identity(&id, key)) {
                    return (i, false, None);
                }
            }
            if !self.groups.contains(&id.group) {
                self.groups.push(id.group.clone());
            }
        }
        (self.push(id, key), true, capped)
    }

    /// The name a recording gives the server key `key`: one name per key as the server tells
    /// keys apart, so two tokens that share a fingerprint are two keys there too (the later
    /// `fnv:…#2`); the default key, and requests without one, are [`DEFAULT_KEY`].
    pub fn key_name(&mut self, key: Option<&KeyId>) -> String {
        let Some(k) = key else {
            return DEFAULT_KEY.to_string();
        };
        if let Some(name) = self.key_names.get(&k.id()) {
            return name.clone();
        }
        let base = k.shown();
        let mut name = base.clone();
        let mut n = 1;
        while self.shown_keys.contains(&name) {
            n += 1;
            name = format!("{base}#{n}");
        }
        self.shown_keys.insert(name.clone());
        self.key_names.insert(k.id(), name.clone());
        name
    }

    fn push(&mut self, mut id: ClientName, key: Option<&KeyId>) -> u32 {
        let i = self.names.len() as u32;
        self.index.insert(identity(&id, key), i);
        // Two clients never share a name: the later of two keys with one fingerprint is
        // `key:fnv:…#2`.
        let base = id.name.clone();
        let mut n = 1;
        while self.shown.contains(&id.key()) {
            n += 1;
            id.name = format!("{base}#{n}");
        }
        self.shown.insert(id.key());
        self.names.push(id);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(group: &str, name: &str) -> ClientName {
        ClientName {
            group: group.into(),
            name: name.into(),
            by: IdentifiedBy::Header,
        }
    }

    #[test]
    fn a_flood_of_client_ids_stops_at_the_cap() {
        let mut t = ClientTable::default();
        assert_eq!(t.client(named("a", "x"), None), (0, true, None));
        assert_eq!(t.client(named("a", "x"), None), (0, false, None));
        for i in 1..MAX_CLIENTS {
            t.client(named("a", &format!("c{i}")), None);
        }
        let (over, new, capped) = t.client(named("a", "one-more"), None);
        assert!(new);
        assert_eq!(capped, Some(Capped::Clients));
        assert_eq!(
            t.client(named("b", "and-another"), None),
            (over, false, None)
        );
        assert_eq!(t.len(), MAX_CLIENTS + 1);
        assert_eq!(t.name(over).name, OVERFLOW_NAME);
    }

    #[test]
    fn two_keys_with_one_fingerprint_are_two_clients() {
        // A client is its key, not the key's shown fingerprint: both show as fnv:820a5676,
        // and were once recorded as one client.
        let mut t = ClientTable::default();
        let peer = "127.0.0.1".parse().unwrap();
        let (a, b) = (KeyId::of("Bearer tok157397"), KeyId::of("Bearer tok678860"));
        let (a, b) = (Some(&a), Some(&b));
        let (ca, ..) = t.client(ClientName::of(None, a, peer), a);
        let (cb, ..) = t.client(ClientName::of(None, b, peer), b);
        assert_ne!(ca, cb);
        assert_eq!(t.client(ClientName::of(None, a, peer), a).0, ca);
        assert_eq!(t.client(ClientName::of(None, b, peer), b).0, cb);
        assert_eq!(t.name(ca).name, "key:fnv:820a5676");
        assert_eq!(t.name(cb).name, "key:fnv:820a5676#2");
        // A client that names itself so takes no other's place either.
        let (c, ..) = t.client(named(DEFAULT_GROUP, "key:fnv:820a5676#2"), None);
        assert_ne!(c, cb);
        assert_eq!(t.name(c).name, "key:fnv:820a5676#2#2");
    }

    #[test]
    fn groups_past_the_cap_share_one() {
        let mut t = ClientTable::default();
        for g in 0..MAX_GROUPS {
            t.client(named(&format!("g{g}"), "c"), None);
        }
        let (a, _, capped) = t.client(named("late", "c"), None);
        assert_eq!(capped, Some(Capped::Groups));
        let (b, _, capped) = t.client(named("later", "d"), None);
        assert_eq!(capped, None, "said once");
        assert_ne!(a, b);
        assert_eq!(t.name(a).group, OTHER_GROUP);
        assert_eq!(t.name(b).group, OTHER_GROUP);
        assert_eq!(t.groups.len(), MAX_GROUPS + 1);
        // The same late client again is the same one.
        assert_eq!(t.client(named("late", "c"), None).0, a);
    }

    fn peer() -> IpAddr {
        "127.0.0.1".parse().unwrap()
    }

    #[test]
    fn the_header_names_group_and_client() {
        let c = ClientName::of(
            Some("py/proc-3/thread-2"),
            Some(&KeyId::of("Bearer t")),
            peer(),
        );
        assert_eq!(
            (c.group.as_str(), c.name.as_str()),
            ("py", "proc-3/thread-2")
        );
        assert_eq!(c.by, IdentifiedBy::Header);
        let c = ClientName::of(Some("thread-2"), None, peer());
        assert_eq!(
            (c.group.as_str(), c.name.as_str()),
            (DEFAULT_GROUP, "thread-2")
        );
        // A trailing slash names no client: the whole header is the name.
        let c = ClientName::of(Some("x/"), None, peer());
        assert_eq!((c.group.as_str(), c.name.as_str()), (DEFAULT_GROUP, "x/"));
    }

    #[test]
    fn without_the_header_the_key_then_the_peer() {
        let c = ClientName::of(None, Some(&KeyId::of("Bearer secret")), peer());
        assert_eq!(c.by, IdentifiedBy::Key);
        assert!(
            c.name.starts_with("key:") && !c.name.contains("secret"),
            "{}",
            c.name
        );
        let c = ClientName::of(Some("  "), None, peer());
        assert_eq!(
            (c.name.as_str(), c.by),
            ("peer:127.0.0.1", IdentifiedBy::Peer)
        );
    }

    #[test]
    fn group_names_are_ones_a_scenario_accepts() {
        assert_eq!(group_name("web.prod"), "web_prod");
        assert_eq!(group_name("42"), "g42");
        assert_eq!(group_name(""), DEFAULT_GROUP);
        assert_eq!(group_name("*"), "_");
        assert_eq!(group_name(&"x".repeat(500)).len(), MAX_GROUP_CHARS);
        let long = ClientName::of(Some(&"n".repeat(1000)), None, peer());
        assert_eq!(long.name.chars().count(), MAX_NAME_CHARS);
    }
}
