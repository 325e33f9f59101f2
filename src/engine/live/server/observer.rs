//! What `serve --record` hears of every answered request.

use std::net::IpAddr;

use crate::exchange::{Response, Status};
use crate::time::Nanos;

/// One answered request, as `serve --record` sees it from the server's side.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    /// The `X-Client-Id` header, when sent and readable.
    pub client_id: Option<&'a str>,
    /// The request's key (`Authorization` or `?key=`), when it had one: as the server holds
    /// it, never the token.
    pub key: Option<super::KeyId>,
    /// The TCP peer's address.
    pub peer: IpAddr,
    pub status: Status,
    /// The `RateLimit-Remaining` the answer carries, if it carries one.
    pub remaining: Option<u64>,
    /// Virtual time the answer waits before it is sent (every answer, as in the sim).
    pub latency: Nanos,
    /// The answer as a client of the server's dialect reads it (`limiter::Headers::response`:
    /// its limit, `Retry-After`, policy and reset), for `serve --record --log-requests`.
    pub answer: Response,
}

/// Something that wants to hear of every answered request (`serve --record`). It is called on
/// the serving threads before the latency wait, under the lock the rule decides in where the
/// rule is the server's own, so it hears the decisions in the order they were taken; it reads
/// the time itself, so that what it is told comes in the order it hears it.
pub trait Observer: Send + Sync + std::fmt::Debug {
    fn observe(&self, seen: Seen<'_>);
}
