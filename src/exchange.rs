//! What one request came back with, as a client sees it: the vocabulary the client
//! algorithms (`throttle/`), the server rules (`limiter/`), the engines and the recorder share.
//! It sits on the ground floor so neither algorithm family has to open the other.

use serde::{Deserialize, Serialize};

use crate::time::Nanos;

/// The server key of a request whose group names none (`[[clients]] key`): groups without a
/// key share its bucket, and the live server files unkeyed requests under it.
pub const DEFAULT_KEY: &str = "default";

/// What a request came back with, as a client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// 2xx.
    Ok,
    /// 429 Too Many Requests.
    Limited,
    /// 503 Service Unavailable (counted with `errors`; some algorithms treat it like a 429).
    Unavailable,
    /// Any other 5xx, or a transport failure (refused, reset, timed out).
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Limited => "limited",
            Status::Unavailable => "unavailable",
            Status::Error => "error",
        }
    }
}

/// A quota the server states: `limit` requests per `window` (the IETF `RateLimit-Policy`'s
/// `q` and `w`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quota {
    pub limit: u64,
    pub window: Nanos,
}

impl Quota {
    /// Requests per second.
    pub fn rate(self) -> f64 {
        if self.window == 0 {
            return 0.0;
        }
        self.limit as f64 * crate::time::NANOS_PER_SEC as f64 / self.window as f64
    }
}

/// One response, with the headers the algorithms may read. Serializable because a live
/// worker reports each one to its parent (`engine/live/protocol.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub status: Status,
    /// `RateLimit-Remaining`, when the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<u64>,
    /// `RateLimit-Limit`, when the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// `Retry-After`, when the server sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Nanos>,
    /// The quota policy, when the server stated one (`RateLimit-Policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
    /// How long until the key's allowance is whole again or its window resets, when the server
    /// said (the IETF `t`, GitHub's `x-ratelimit-reset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<Nanos>,
    /// Time from send to answer.
    pub latency: Nanos,
}

impl Response {
    /// An answer without rate-limit headers (a transport error, or a server that sends none).
    pub fn bare(status: Status) -> Self {
        Response {
            status,
            remaining: None,
            limit: None,
            retry_after: None,
            quota: None,
            reset: None,
            latency: 0,
        }
    }

    /// The same answer with a `RateLimit-Remaining`.
    pub fn with_remaining(self, remaining: u64) -> Self {
        Response {
            remaining: Some(remaining),
            ..self
        }
    }
}

/// The rate-limit fields of an answer that `requests.csv` keeps as sent (its raw columns,
/// after the parsed ones): every field the live client reads, in this order, and no other
/// header, so no secret is ever written.
pub const RAW_FIELDS: [&str; 30] = [
    "ratelimit",
    "ratelimit-policy",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-reset-after",
    "x-ratelimit-used",
    "x-ratelimit-replenish-rate",
    "x-ratelimit-burst-capacity",
    "x-ratelimit-requested-tokens",
    "x-ratelimit-fillrate",
    "x-ratelimit-interval-seconds",
    "x-rate-limit",
    "x-rate-limit-limit",
    "x-rate-limit-remaining",
    "x-rate-limit-reset",
    "x-rate-limit-duration",
    "x-shopify-shop-api-call-limit",
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
    "retry-after",
    "retry-after-ms",
    "x-ms-retry-after-ms",
    "x-ratelimit-retry-after",
    "x-rate-limit-retry-after-seconds",
    "x-retry-in",
];

/// The most bytes of one raw field kept: a longer value is cut (at a character boundary).
pub const RAW_MAX_BYTES: usize = 200;

/// What an answer's rate-limit fields said, as sent: one value per [`RAW_FIELDS`] name,
/// `None` where the answer did not carry it. Each value is at most [`RAW_MAX_BYTES`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawFields(pub [Option<String>; RAW_FIELDS.len()]);

impl RawFields {
    /// The fields `get` finds by name (lower case), each cut to [`RAW_MAX_BYTES`]; `None`
    /// when the answer carried none of them.
    pub fn collect<'a>(get: impl Fn(&str) -> Option<&'a [u8]>) -> Option<RawFields> {
        let mut out = RawFields::default();
        for (slot, name) in out.0.iter_mut().zip(RAW_FIELDS) {
            *slot = get(name).map(bounded);
        }
        out.0.iter().any(Option::is_some).then_some(out)
    }
}

/// A header value as text (bytes that are not UTF-8 replaced), at most [`RAW_MAX_BYTES`].
fn bounded(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(RAW_MAX_BYTES)]);
    let mut s = text.into_owned();
    // A replacement character is 3 bytes: the lossy text of a cut may run past the bound.
    while s.len() > RAW_MAX_BYTES {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_fields_keep_only_rate_limit_fields_each_bounded() {
        let long = "x".repeat(5000);
        let bad = [0xffu8; 300];
        let get = |name: &str| -> Option<&[u8]> {
            match name {
                "ratelimit" => Some(b"\"default\";r=3;t=1"),
                "retry-after" => Some(long.as_bytes()),
                "retry-after-ms" => Some(&bad),
                _ => None,
            }
        };
        let raw = RawFields::collect(get).unwrap();
        let at = |name: &str| &raw.0[RAW_FIELDS.iter().position(|f| *f == name).unwrap()];
        assert_eq!(at("ratelimit").as_deref(), Some("\"default\";r=3;t=1"));
        assert_eq!(at("retry-after").as_ref().unwrap().len(), RAW_MAX_BYTES);
        assert!(at("retry-after-ms").as_ref().unwrap().len() <= RAW_MAX_BYTES);
        assert_eq!(raw.0.iter().filter(|v| v.is_some()).count(), 3);
        assert_eq!(RawFields::collect(|_| None), None);
    }
}
