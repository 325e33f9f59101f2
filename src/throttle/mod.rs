//! Client-side throttling algorithms: pure state machines that are told the time.
//!
//! One [`Throttle`] instance belongs to one client *process*; that process's threads share it,
//! which is how the Heroku GCRA demo client's threads share `sleep_for`. Engines ask
//! [`Throttle::delay`] before every send and report every answer through [`Throttle::on_response`];
//! no algorithm sleeps, reads a clock or owns its randomness, so each is testable on virtual time
//! in microseconds.

mod aatb;
mod aatb_telemetry;
mod aimd;
mod atb;
mod aws_adaptive;
mod backoff;
mod baseline;
mod dual_bucket;
mod failure_window;
mod fair_share;
mod gem_backoff;
mod gem_gradual;
mod gem_increase;
mod gem_proportional;
mod gem_remaining;
mod independent;
mod interval_lock;
mod oracle;
mod schneems;
mod shared_bucket;
mod sre_adaptive;
mod window_queue;

use serde::{Deserialize, Serialize};

pub use aatb::{Aatb, AatbConfig};
pub use aimd::{Aimd, AimdConfig};
pub use atb::{Atb, AtbConfig};
pub use aws_adaptive::{AwsAdaptive, AwsAdaptiveConfig};
pub use backoff::{Backoff, BackoffConfig, Jitter};
pub use baseline::{FixedConfig, NoneConfig};
pub use dual_bucket::{DualBucket, DualBucketConfig, MovingWindow, Workload};
pub use failure_window::{FailureWindow, FailureWindowConfig};
pub use fair_share::{FairShare, FairShareConfig};
pub use gem_backoff::{GemBackoff, GemBackoffConfig};
pub use gem_gradual::GemGradualConfig;
pub use gem_increase::GemIncrease;
pub use gem_proportional::GemProportionalConfig;
pub use gem_remaining::GemRemainingConfig;
pub use independent::{Independent, IndependentConfig};
pub use interval_lock::{IntervalLock, IntervalLockConfig};
pub use oracle::{Oracle, OracleConfig};
pub use schneems::{Schneems, SchneemsConfig};
pub use shared_bucket::{SharedBucket, SharedBucketConfig};
pub use sre_adaptive::{SreAdaptive, SreAdaptiveConfig};
pub use window_queue::{WindowQueue, WindowQueueConfig};

use std::sync::Arc;

use crate::config::{ConfigError, ParamProblem, typed};
use crate::exchange::{DEFAULT_KEY, Response};
use crate::rng::SimRng;
use crate::store::SharedStore;
use crate::time::Nanos;

/// What an algorithm may know about where it runs when it is built.
#[derive(Clone, Debug)]
pub struct BuildContext {
    /// Threads of the process that will share this instance.
    pub threads: usize,
    /// The client group's name: a prefix for keys in the shared store, so the processes of a
    /// group coordinate with each other and with no other group.
    pub group: String,
    /// 0-based index of this process within its group.
    pub process: usize,
    /// The server key (API token) the group sends with: what the algorithms that coordinate
    /// per token (`shared-bucket`'s bucket, `aatb`'s aggregator) key their state by.
    pub key: String,
    /// State shared by every process of the run (the Redis of Rebased's interval lock and of
    /// the Discord job queue).
    pub store: SharedStore,
    /// Virtual seconds per real second: a live run's `time_scale` (a server's whole seconds
    /// are that many of the clients'); 1 in the sim.
    pub time_scale: f64,
    /// Who uses the same server key over time; only the bounds ([`Algorithm::BOUND`]) may look.
    pub population: Arc<Population>,
}

impl BuildContext {
    /// A context for one process alone (tests, single-process tools).
    pub fn solo(threads: usize) -> Self {
        BuildContext {
            threads,
            group: "clients".into(),
            process: 0,
            key: DEFAULT_KEY.into(),
            store: crate::store::shared(),
            time_scale: 1.0,
            population: Arc::new(Population::default()),
        }
    }
}

/// Everything a perfect observer knows: the server's rule for the key this process uses, and
/// who uses that key at any time. Real clients cannot know this; the bounds
/// (`oracle`, `independent`) do.
#[derive(Clone, Debug, Default)]
pub struct Population {
    /// The server's sustained rate for the key, in requests per second (0 when unknown).
    pub rate_per_sec: f64,
    /// `(start, stop, threads)` of every group on the key, in the scenario's order.
    pub windows: Vec<(Nanos, Nanos, u32)>,
    /// The names of those groups, in the same order.
    pub groups: Vec<String>,
    /// Requests the rule admits at t = 0 beyond its rate: a bucket's initial tokens (the
    /// rule's `capacity(0)`; 0 for window rules).
    pub allowance: f64,
    /// The rule counts requests in windows (`fixed-window`, `sliding-window`,
    /// `sliding-window-counter`): a request sent later than planned may land in a window that
    /// is already full, so none is.
    pub windowed_rule: bool,
    /// The rule weighs the previous window's count by its share still inside the sliding
    /// window (`sliding-window-counter`): a request paced exactly at the rate with its send on
    /// the window grid weighs exactly the limit and is refused, so the slots sit half a slot
    /// off the grid.
    pub weighted_rule: bool,
    /// `[start, end)` of the server's outages (answered 503, the rule not consulted), sorted.
    pub outages: Vec<(Nanos, Nanos)>,
}

impl Population {
    /// The end of the outage `t` falls in, if it falls in one.
    pub fn outage_end(&self, t: Nanos) -> Option<Nanos> {
        self.outages
            .iter()
            .find(|&&(a, b)| a <= t && t < b)
            .map(|&(_, b)| b)
    }

    /// Threads on the key at `now`.
    pub fn active_threads(&self, now: Nanos) -> u32 {
        self.windows
            .iter()
            .filter(|(start, stop, _)| *start <= now && now < *stop)
            .map(|w| w.2)
            .sum()
    }

    /// The place in line at `now` of the `first`-th thread of group `group` among the threads
    /// on the key then (groups in the scenario's order): 0 ≤ rank < `active_threads(now)`
    /// while the group runs.
    pub fn rank(&self, now: Nanos, group: &str, first: u32) -> u32 {
        let mut before = 0;
        for ((start, stop, threads), name) in self.windows.iter().zip(&self.groups) {
            if name == group {
                break;
            }
            if *start <= now && now < *stop {
                before += threads;
            }
        }
        before + first
    }
}

/// What a thread does once the wait [`Throttle::delay`] chose is over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// Send the request now.
    Send,
    /// A local limiter refused (a lock held elsewhere, a local bucket empty, a client-side
    /// rejection): wait this long, then ask again. Nothing is sent.
    Wait(Nanos),
    /// Abandon this job (e.g. the 15 s timeout of Rebased's Redis interval lock); the thread moves
    /// on to its next job.
    GiveUp,
}

/// A client-side throttle shared by the threads of one process.
pub trait Throttle: Send {
    /// How long `thread` waits before its next send, asked at `now` (jitter included).
    fn delay(&mut self, now: Nanos, thread: usize, rng: &mut SimRng) -> Nanos;
    /// Asked when the wait is over, just before sending; algorithms with a local gate (a lock,
    /// a local bucket) answer here. The default sends.
    fn acquire(&mut self, _now: Nanos, _thread: usize, _rng: &mut SimRng) -> Acquire {
        Acquire::Send
    }
    /// The answer to `thread`'s last request arrived at `now`.
    fn on_response(&mut self, now: Nanos, thread: usize, response: &Response, rng: &mut SimRng);
    /// The state worth charting, in seconds (the Heroku GCRA demo client's `sleep_for`).
    fn sleep_value(&self) -> f64;
    /// How many times this process backed off (the Heroku GCRA demo client's `rate_limit_count`).
    fn backoffs(&self) -> u64 {
        0
    }
}

/// Everything about one client algorithm, implemented by its config type in the algorithm's
/// own file; the registry below asks for nothing else.
pub trait Algorithm: Sized {
    /// Its `algorithm = "..."` name; also the kebab-case name of its registry entry, which
    /// serde uses as the tag (`registry_tests` checks that they agree).
    const NAME: &'static str;
    /// One line for `throttle-sim list`: what the algorithm is and where it comes from.
    const DESCRIPTION: &'static str;
    /// Lines `throttle-sim list` prints under the parameters, for what a parameter means that
    /// its name and default cannot say. Default none.
    const NOTES: &'static [&'static str] = &[];
    /// What each parameter's number counts, by name, for `throttle-sim list`. Default none.
    const UNITS: &'static [(&'static str, &'static str)] = &[];
    /// A bound, not a client: it reads [`BuildContext::population`], what no real client can
    /// know. `advise` never ranks one. Default false.
    const BOUND: bool = false;
    /// Parameters out of their valid range.
    fn problems(&self) -> Vec<ParamProblem> {
        Vec::new()
    }
    /// One instance for one process.
    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle>;
    /// What the processes of `group`, sending with the server key `key`, coordinate on in the
    /// shared store, for the algorithms that coordinate at all: processes with the same scope
    /// must share one store.
    fn store_scope(&self, _group: &str, _key: &str) -> Option<String> {
        None
    }
}

/// Writes [`ThrottleConfig`] and its lookups from one list of `Variant(Config)` entries.
macro_rules! registry {
    ($($variant:ident($config:ty)),+ $(,)?) => {
        /// Which algorithm a client group runs, with its parameters; `algorithm = "..."` in
        /// TOML. Each variant's docs are its config type's [`Algorithm::DESCRIPTION`].
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "algorithm", rename_all = "kebab-case")]
        pub enum ThrottleConfig {
            $($variant($config),)+
        }

        impl ThrottleConfig {
            /// The algorithm names the `algorithm` field accepts, in registry order.
            pub const NAMES: &'static [&'static str] = &[$(<$config as Algorithm>::NAME,)+];

            /// One line for `throttle-sim list`: what the algorithm is and where it comes from.
            pub fn describe(name: &str) -> Option<&'static str> {
                $(if name == <$config as Algorithm>::NAME {
                    return Some(<$config as Algorithm>::DESCRIPTION);
                })+
                None
            }

            /// The lines `throttle-sim list` prints under the parameters of `name`.
            pub fn notes(name: &str) -> &'static [&'static str] {
                $(if name == <$config as Algorithm>::NAME {
                    return <$config as Algorithm>::NOTES;
                })+
                &[]
            }

            /// The units `throttle-sim list` prints next to the parameters of `name`.
            pub fn units(name: &str) -> &'static [(&'static str, &'static str)] {
                $(if name == <$config as Algorithm>::NAME {
                    return <$config as Algorithm>::UNITS;
                })+
                &[]
            }

            /// Whether `name` is a bound, told the thread count ([`Algorithm::BOUND`]).
            pub fn is_bound(name: &str) -> bool {
                $(if name == <$config as Algorithm>::NAME {
                    return <$config as Algorithm>::BOUND;
                })+
                false
            }

            pub fn name(&self) -> &'static str {
                match self {
                    $(ThrottleConfig::$variant(_) => <$config as Algorithm>::NAME,)+
                }
            }

            /// Type the parameters of the algorithm `name` (the tag already removed), with the
            /// path of any bad field; `None` for an unknown name.
            pub fn from_params(name: &str, params: toml::Value) -> Option<Result<Self, ConfigError>> {
                $(if name == <$config as Algorithm>::NAME {
                    return Some(typed::<$config>(params).map(ThrottleConfig::$variant));
                })+
                None
            }

            /// Build one instance for one process.
            pub fn build(&self, ctx: BuildContext) -> Box<dyn Throttle> {
                match self {
                    $(ThrottleConfig::$variant(c) => c.throttle(ctx),)+
                }
            }

            /// Parameters out of their valid range.
            pub fn problems(&self) -> Vec<ParamProblem> {
                match self {
                    $(ThrottleConfig::$variant(c) => Algorithm::problems(c),)+
                }
            }

            /// What the processes of `group`, sending with the server key `key`, coordinate on
            /// in the shared store, for the algorithms that coordinate at all: processes with
            /// the same scope must share one store.
            pub fn store_scope(&self, group: &str, key: &str) -> Option<String> {
                match self {
                    $(ThrottleConfig::$variant(c) => Algorithm::store_scope(c, group, key),)+
                }
            }
        }
    };
}

// The registry: one line per algorithm, in the order `list` shows them. The variant's
// kebab-case name is the algorithm's name.
registry! {
    Schneems(SchneemsConfig),
    None(NoneConfig),
    Fixed(FixedConfig),
    DualBucket(DualBucketConfig),
    IntervalLock(IntervalLockConfig),
    Backoff(BackoffConfig),
    FailureWindow(FailureWindowConfig),
    WindowQueue(WindowQueueConfig),
    GemBackoff(GemBackoffConfig),
    GemGradual(GemGradualConfig),
    GemProportional(GemProportionalConfig),
    GemRemaining(GemRemainingConfig),
    AwsAdaptive(AwsAdaptiveConfig),
    SreAdaptive(SreAdaptiveConfig),
    Aimd(AimdConfig),
    Oracle(OracleConfig),
    Independent(IndependentConfig),
    Atb(AtbConfig),
    SharedBucket(SharedBucketConfig),
    Aatb(AatbConfig),
    FairShare(FairShareConfig),
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig::Schneems(SchneemsConfig::default())
    }
}

/// The parameters of each algorithm its results are most sensitive to: what `advise` tries at
/// half and twice their default when the algorithm ranks first, and what `list` names under
/// "tune". An algorithm not named has none worth a search (its parameters are a source
/// system's own settings, or a workload's).
pub const TUNABLE: &[(&str, &[&str])] = &[
    ("fair-share", &["reserve", "window_periods"]),
    ("schneems", &["initial_sleep", "min_sleep"]),
    ("aimd", &["increase", "decrease"]),
    ("gem-proportional", &["multiplier", "decrease_divisor"]),
    ("gem-remaining", &["multiplier", "decrease_divisor"]),
    ("gem-gradual", &["multiplier", "min_sleep"]),
    ("gem-backoff", &["multiplier", "min_sleep"]),
    ("atb", &["first_step", "second_step"]),
    ("aws-adaptive", &["beta", "scale_constant"]),
    ("sre-adaptive", &["k"]),
    ("backoff", &["base", "cap"]),
];

impl ThrottleConfig {
    /// The parameters of `name` worth a search ([`TUNABLE`]).
    pub fn tunable(name: &str) -> &'static [&'static str] {
        TUNABLE
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(&[], |(_, p)| p)
    }

    /// The algorithm `name` with every parameter at its default.
    pub fn defaults(name: &str) -> Option<Self> {
        Self::from_params(name, toml::Value::Table(toml::Table::new()))?.ok()
    }
}

/// Uniform jitter in `[0, fraction × base]` seconds, drawing nothing when there is none to add
/// (so switching jitter off does not shift the random stream of anything else).
pub(crate) fn proportional_jitter(base: f64, fraction: f64, rng: &mut SimRng) -> f64 {
    use rand::RngExt;
    let span = base * fraction;
    if span > 0.0 {
        rng.random_range(0.0..=span)
    } else {
        0.0
    }
}

#[cfg(test)]
mod registry_tests {
    use super::*;

    #[test]
    fn the_bounds_are_the_oracle_and_independent() {
        let bounds: Vec<&str> = (ThrottleConfig::NAMES.iter().copied())
            .filter(|n| ThrottleConfig::is_bound(n))
            .collect();
        assert_eq!(bounds, ["oracle", "independent"]);
        assert!(!ThrottleConfig::is_bound("fair-share") && !ThrottleConfig::is_bound("nope"));
    }

    #[test]
    fn every_name_has_defaults_a_description_and_round_trips() {
        for name in ThrottleConfig::NAMES {
            let cfg =
                ThrottleConfig::defaults(name).unwrap_or_else(|| panic!("{name}: no defaults"));
            assert_eq!(cfg.name(), *name);
            assert!(
                ThrottleConfig::describe(name).is_some(),
                "{name}: no description"
            );
            assert!(cfg.problems().is_empty(), "{name}: defaults invalid");
            // serde's tag (the variant's kebab-case name) is the registered name.
            let text = toml::to_string(&cfg).unwrap();
            assert!(
                text.starts_with(&format!("algorithm = \"{name}\"\n")),
                "{name}: serialized as {text}"
            );
            let back: ThrottleConfig = toml::from_str(&text).unwrap();
            assert_eq!(back, cfg, "{name}");
        }
    }
}
