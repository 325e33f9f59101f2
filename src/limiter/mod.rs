//! Server-side limit models: the rule a rate-limited API applies to each key.
//!
//! A [`Limiter`] is told the time and asked to admit one request; it never reads a clock, so
//! the sim engine and the live server run the very same code.

mod concurrency;
mod faults;
mod fixed_window;
mod gcra;
mod headers;
mod latency;
mod leaky_bucket;
mod occ;
mod sliding_window;
mod sliding_window_counter;
mod stacked;
mod token_bucket;

use serde::{Deserialize, Serialize};

pub use concurrency::{Concurrency, ConcurrencyConfig};
pub use faults::{FaultConfig, FaultProblem, Faulty};
pub use fixed_window::{FixedWindow, FixedWindowConfig, WindowStart};
pub use gcra::{Gcra, GcraConfig};
pub use headers::{Headers, flask_limiter_waits, whole_second_quota};
pub use latency::{Latency, LatencySampler};
pub use leaky_bucket::{Delay, LeakyBucket, LeakyBucketConfig, NginxRate, RatePer};
pub use occ::{Occ, OccConfig};
pub use sliding_window::{SlidingWindow, SlidingWindowConfig};
pub use sliding_window_counter::{SlidingWindowCounter, SlidingWindowCounterConfig};
pub use stacked::{Shows, Stacked, StackedConfig};
pub use token_bucket::{TokenBucket, TokenBucketConfig};

use crate::config::{ConfigError, ParamProblem, typed};
use crate::exchange::Status;
use crate::time::Nanos;

/// The server's answer to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub status: Status,
    /// Whole requests left for this key after the decision (`RateLimit-Remaining`).
    pub remaining: u64,
    /// `RateLimit-Limit`; 0 when the answer carries no rate-limit headers at all (an injected
    /// fault), and then `remaining` means nothing.
    pub limit: u64,
    /// On refusal, how long until a request would be admitted (`Retry-After`).
    pub retry_after: Option<Nanos>,
    /// Until the key's allowance is whole again: a bucket full, a fixed window's next reset, a
    /// sliding window's last request out of it (the IETF `t`, GitHub's reset). 0 when the rule
    /// states none.
    pub reset: Nanos,
    /// The policy's window: how long the key takes to earn `limit` at its rate, a window
    /// rule's own window (the IETF policy's `w`). 0 when the rule states none.
    pub window: Nanos,
}

impl Decision {
    /// The reset an answer states: on a refusal the wait until a request is admitted (so a
    /// client told only the reset, as GitHub's primary limit tells it, waits just long enough),
    /// else until the allowance is whole.
    pub fn stated_reset(&self) -> Nanos {
        if self.status == Status::Limited {
            self.retry_after.unwrap_or(0)
        } else {
            self.reset
        }
    }

    /// Whether the answer carries `RateLimit-*` headers.
    pub fn has_headers(&self) -> bool {
        self.limit > 0
    }
}

/// A decision and how long the server holds its answer before it sends it.
///
/// nginx's `limit_req` admits a request beyond its rate but within its burst at once (it is
/// counted on arrival) and serves it late; every other rule here answers at once, `hold` 0.
/// The hold is kept beside the [`Decision`] rather than in it because the header dialects
/// build and read decisions field by field, and a held answer's headers are those of any
/// other: its times (`reset`, `retry_after`) count from when the answer leaves, `hold` after
/// the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    pub decision: Decision,
    /// How long after the decision the answer is sent.
    pub hold: Nanos,
}

impl Held {
    /// A decision answered at once.
    pub fn now(decision: Decision) -> Self {
        Held { decision, hold: 0 }
    }
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
    /// As [`Limiter::admit_from`], with how long the server holds the answer (a rule that
    /// serves some admitted requests late, as nginx's `limit_req` does). The engines call this
    /// one; rules that answer at once keep the default, a hold of 0.
    fn admit_held(&mut self, now: Nanos, key: usize, client: usize) -> Held {
        Held::now(self.admit_from(now, key, client))
    }
    /// Whether a client reads the key's state in a round trip of its own before each request
    /// (`occ`: read the row's version, then write with it). The sim then sends a read before
    /// every request, each of the four legs a draw of the server's latency, and tells the rule
    /// with [`Limiter::read`] when the read reaches it.
    fn reads_first(&self) -> bool {
        false
    }
    /// Client `client`'s read of `key` reaches the server at `now` (only for rules that
    /// [`Limiter::reads_first`]).
    fn read(&mut self, _now: Nanos, _key: usize, _client: usize) {}
    /// The answer to a request this rule admitted (`Status::Ok`) has been delivered at `now`:
    /// the request is no longer in flight. Engines call it exactly once per admitted request
    /// and never for a refused one (a refusal never held a slot). For models that count
    /// requests in flight.
    fn release(&mut self, _now: Nanos, _key: usize) {}
    /// The most 2xx this rule could give one key over `[0, duration]`; 0 for rules that set
    /// no bound over time (e.g. `concurrency`, whose bound depends on the service time).
    fn capacity(&self, duration: Nanos) -> f64;
    /// As [`Limiter::capacity`], when the rule is never consulted during the `closed` windows
    /// (sorted, disjoint, half-open; fault injection's outages). The default, `capacity`,
    /// is an upper bound; rules override it with the exact figure.
    fn capacity_with_outages(&self, duration: Nanos, _closed: &[(Nanos, Nanos)]) -> f64 {
        self.capacity(duration)
    }
    /// The sustained rate one key is allowed, in requests per second; 0 when the rule has
    /// none (`concurrency`, `occ`).
    fn rate_per_sec(&self) -> f64;
}

/// One step of the path to a parameter inside the `[server]` table: a field, or an entry of a
/// list of rules (`stacked`'s `limits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamStep {
    Field(&'static str),
    Index(usize),
}

/// A parameter out of its valid range, and where it is: `[Field("limit")]` for a rule's own
/// `limit`, `[Field("limits"), Index(1), Field("limit")]` for the second stacked limit's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleProblem {
    pub at: Vec<ParamStep>,
    pub message: String,
}

impl RuleProblem {
    /// A problem with one of the rule's own fields.
    pub fn at_field(field: &'static str, message: String) -> Self {
        RuleProblem {
            at: vec![ParamStep::Field(field)],
            message,
        }
    }

    /// The path as a scenario writes it: `limits[1].limit`.
    pub fn path(at: &[ParamStep]) -> String {
        let mut out = String::new();
        for step in at {
            match step {
                ParamStep::Field(f) if out.is_empty() => out.push_str(f),
                ParamStep::Field(f) => {
                    out.push('.');
                    out.push_str(f);
                }
                ParamStep::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

/// Everything about one server rule, implemented by its config type in the rule's own file;
/// the registry below asks for nothing else.
pub trait Rule: Sized {
    /// Its `kind = "..."` name; also the kebab-case name of its registry entry, which serde
    /// uses as the tag (`registry_tests` checks that they agree).
    const NAME: &'static str;
    /// One line for `throttle-sim list`: what the rule is and where it comes from.
    const DESCRIPTION: &'static str;
    /// Lines `throttle-sim list` prints under the parameters: the values a parameter takes
    /// where its default does not show them.
    const NOTES: &'static [&'static str] = &[];
    /// Parameters out of their valid range.
    fn problems(&self) -> Vec<ParamProblem> {
        Vec::new()
    }
    /// As [`Rule::problems`], each with the path to its field. A rule that holds other rules
    /// (`stacked`) overrides this one, to name the entry a problem is in.
    fn problems_at(&self) -> Vec<RuleProblem> {
        self.problems()
            .into_iter()
            .map(|(field, message)| RuleProblem::at_field(field, message))
            .collect()
    }
    /// The rule, holding the state of every key.
    fn limiter(&self) -> Box<dyn Limiter>;
}

/// Writes [`LimiterConfig`] and its lookups from one list of `Variant(Config)` entries.
macro_rules! registry {
    ($($variant:ident($config:ty)),+ $(,)?) => {
        /// Which rule the server applies; `kind = "..."` in the `[server]` table. Each
        /// variant's docs are its config type's [`Rule::DESCRIPTION`].
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "kebab-case")]
        pub enum LimiterConfig {
            $($variant($config),)+
        }

        impl LimiterConfig {
            /// The kinds the `kind` field accepts, in registry order.
            pub const NAMES: &'static [&'static str] = &[$(<$config as Rule>::NAME,)+];

            pub fn name(&self) -> &'static str {
                match self {
                    $(LimiterConfig::$variant(_) => <$config as Rule>::NAME,)+
                }
            }

            /// One line for `throttle-sim list`: what the rule is and where it comes from.
            pub fn describe(name: &str) -> Option<&'static str> {
                $(if name == <$config as Rule>::NAME {
                    return Some(<$config as Rule>::DESCRIPTION);
                })+
                None
            }

            /// The lines `throttle-sim list` prints under the parameters of `name`.
            pub fn notes(name: &str) -> &'static [&'static str] {
                $(if name == <$config as Rule>::NAME {
                    return <$config as Rule>::NOTES;
                })+
                &[]
            }

            /// Type the parameters of the kind `name` (the tag already removed); `None` if
            /// unknown.
            pub fn from_params(name: &str, params: toml::Value) -> Option<Result<Self, ConfigError>> {
                $(if name == <$config as Rule>::NAME {
                    return Some(typed::<$config>(params).map(LimiterConfig::$variant));
                })+
                None
            }

            pub fn build(&self) -> Box<dyn Limiter> {
                match self {
                    $(LimiterConfig::$variant(c) => c.limiter(),)+
                }
            }

            /// Parameters out of their valid range: where each is and what is wrong.
            pub fn problems(&self) -> Vec<RuleProblem> {
                match self {
                    $(LimiterConfig::$variant(c) => Rule::problems_at(c),)+
                }
            }
        }
    };
}

// The registry: one line per server rule, in the order `list` shows them. The variant's
// kebab-case name is the rule's `kind`.
registry! {
    Gcra(GcraConfig),
    FixedWindow(FixedWindowConfig),
    SlidingWindow(SlidingWindowConfig),
    SlidingWindowCounter(SlidingWindowCounterConfig),
    TokenBucket(TokenBucketConfig),
    LeakyBucket(LeakyBucketConfig),
    Concurrency(ConcurrencyConfig),
    Occ(OccConfig),
    Stacked(StackedConfig),
}

impl Default for LimiterConfig {
    fn default() -> Self {
        LimiterConfig::Gcra(GcraConfig::default())
    }
}

impl LimiterConfig {
    /// Whether the rule counts requests in windows, so a request sent later than planned may
    /// land in a window that is already full (what the `oracle` plans around).
    pub fn counts_in_windows(&self) -> bool {
        match self {
            LimiterConfig::FixedWindow(_)
            | LimiterConfig::SlidingWindow(_)
            | LimiterConfig::SlidingWindowCounter(_) => true,
            LimiterConfig::Stacked(s) => s.limits.iter().any(Self::counts_in_windows),
            _ => false,
        }
    }

    /// Whether the rule weighs a previous window's count by the share of it still inside the
    /// sliding window (`sliding-window-counter`): requests paced exactly at its rate with their
    /// sends on the window grid then weigh exactly the limit and are refused.
    pub fn weighs_the_previous_window(&self) -> bool {
        match self {
            LimiterConfig::SlidingWindowCounter(_) => true,
            LimiterConfig::Stacked(s) => s.limits.iter().any(Self::weighs_the_previous_window),
            _ => false,
        }
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn every_kind_has_valid_defaults_a_description_and_round_trips() {
        for name in LimiterConfig::NAMES {
            let cfg = LimiterConfig::from_params(name, toml::Value::Table(toml::Table::new()))
                .unwrap_or_else(|| panic!("{name}: unknown"))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(cfg.name(), *name);
            assert!(LimiterConfig::describe(name).is_some(), "{name}");
            assert!(cfg.problems().is_empty(), "{name}: defaults invalid");
            let text = toml::to_string(&cfg).unwrap();
            let back: LimiterConfig = toml::from_str(&text).unwrap();
            assert_eq!(back, cfg, "{name}");
            // Every kind answers a first request from a fresh key.
            let d = cfg.build().admit(0, 0);
            assert!(d.has_headers(), "{name}");
        }
        assert!(
            LimiterConfig::from_params("leaky", toml::Value::Table(Default::default())).is_none()
        );
    }
}
