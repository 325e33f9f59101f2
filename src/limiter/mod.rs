//! Server-side limit models: the rule a rate-limited API applies to each key.
//!
//! A [`Limiter`] is told the time and asked to admit one request; it never reads a clock, so
//! the sim engine and the live server run the very same code.

mod gcra;
mod latency;

use serde::{Deserialize, Serialize};

pub use gcra::{Gcra, GcraConfig};
pub use latency::Latency;

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
