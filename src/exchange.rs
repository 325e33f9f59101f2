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
