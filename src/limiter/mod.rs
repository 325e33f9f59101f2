//! Server-side limit models: the rule a rate-limited API applies to each key.
//!
//! A [`Limiter`] is told the time and asked to admit one request; it never reads a clock, so
//! the sim engine and the live server run the very same code.

mod gcra;
mod latency;

use serde::{Deserialize, Serialize};

pub use gcra::{Gcra, GcraConfig};
pub use latency::{Latency, LatencySampler};

use crate::throttle::{ConfigError, Status, typed};
use crate::time::Nanos;

/// The server's answer to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub status: Status,
    /// Whole requests left for this key after the decision (`RateLimit-Remaining`).
    pub remaining: u64,
    /// `RateLimit-Limit`.
    pub limit: u64,
    /// On refusal, how long until a request would be admitted (`Retry-After`).
    pub retry_after: Option<Nanos>,
}

/// One server rule, holding the state of every key. Keys are dense indices given out by the
/// engine (the sim) or by the server's key table (live).
pub trait Limiter: Send {
    /// Decide on one request for `key` arriving at `now`. Calls come in time order.
    fn admit(&mut self, now: Nanos, key: usize) -> Decision;
    /// As [`Limiter::admit`], for models whose answer depends on which client asks (e.g. the
    /// optimistic-concurrency row, where each client writes the version it read). `client`
    /// is the engine's global thread index.
    fn admit_from(&mut self, now: Nanos, key: usize, _client: usize) -> Decision {
        self.admit(now, key)
    }
    /// The answer to an admitted or refused request has been delivered at `now` (the request
    /// is no longer in flight). For models that count requests in flight.
    fn release(&mut self, _now: Nanos, _key: usize) {}
    /// The most 2xx this rule could give one key over `[0, duration]`.
    fn capacity(&self, duration: Nanos) -> f64;
    /// The sustained rate one key is allowed, in requests per second.
    fn rate_per_sec(&self) -> f64;
}

/// Which rule the server applies; `kind = "..."` in the `[server]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LimiterConfig {
    /// Heroku-style GCRA, seed 002's server (the default).
    Gcra(GcraConfig),
}

impl Default for LimiterConfig {
    fn default() -> Self {
        LimiterConfig::Gcra(GcraConfig::default())
    }
}

impl LimiterConfig {
    pub const NAMES: &'static [&'static str] = &["gcra"];

    pub fn name(&self) -> &'static str {
        match self {
            LimiterConfig::Gcra(_) => "gcra",
        }
    }

    /// One line for `throttle-sim list`: what the rule is and where it comes from.
    pub fn describe(name: &str) -> Option<&'static str> {
        Some(match name {
            "gcra" => {
                "Heroku-style GCRA: `limit` per `period`, refilled continuously (seed 002's server)"
            }
            _ => return None,
        })
    }

    /// Type the parameters of the kind `name` (the tag already removed); `None` if unknown.
    pub fn from_params(name: &str, params: toml::Value) -> Option<Result<Self, ConfigError>> {
        Some(match name {
            "gcra" => typed(params).map(LimiterConfig::Gcra),
            _ => return None,
        })
    }

    pub fn build(&self) -> Box<dyn Limiter> {
        match self {
            LimiterConfig::Gcra(c) => Box::new(Gcra::new(c)),
        }
    }

    /// Parameters out of their valid range: field name and what is wrong.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        match self {
            LimiterConfig::Gcra(c) => c.problems(),
        }
    }
}
