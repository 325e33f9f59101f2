//! Who sent a request, as `serve --record` names it: the `X-Client-Id` header when the client
//! sends one (`group/name`, the group optional), else the request's key (by its fingerprint,
//! never the token), else the TCP peer's IP address.

use std::net::IpAddr;

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
    pub fn of(client_id: Option<&str>, key: Option<&str>, peer: IpAddr) -> ClientName {
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
                name: format!("key:{}", crate::fingerprint::fingerprint(k)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> IpAddr {
        "127.0.0.1".parse().unwrap()
    }

    #[test]
    fn the_header_names_group_and_client() {
        let c = ClientName::of(Some("py/proc-3/thread-2"), Some("Bearer t"), peer());
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
        let c = ClientName::of(None, Some("Bearer secret"), peer());
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
