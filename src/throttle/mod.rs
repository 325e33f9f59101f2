//! Client-side throttling algorithms: pure state machines that are told the time.
//!
//! One [`Throttle`] instance belongs to one client *process*; that process's threads share it,
//! which is how seed 002's clients share `sleep_for`. Engines ask [`Throttle::delay`] before every
//! send and report every answer through [`Throttle::on_response`]; no algorithm sleeps, reads a
//! clock or owns its randomness, so each is testable on virtual time in microseconds.

mod aimd;
mod aws_adaptive;
mod backoff;
mod baseline;
mod dual_bucket;
mod gem_backoff;
mod gem_gradual;
mod gem_increase;
mod gem_proportional;
mod gem_remaining;
mod interval_lock;
mod oracle;
mod schneems;
mod sre_adaptive;
mod window_queue;

use serde::{Deserialize, Serialize};

pub use aimd::{Aimd, AimdConfig};
pub use aws_adaptive::{AwsAdaptive, AwsAdaptiveConfig};
pub use backoff::{Backoff, BackoffConfig, Jitter};
pub use baseline::{FixedConfig, NoneConfig};
pub use dual_bucket::{DualBucket, DualBucketConfig, MovingWindow, Workload};
pub use gem_backoff::{GemBackoff, GemBackoffConfig};
pub use gem_gradual::GemGradualConfig;
pub use gem_increase::GemIncrease;
pub use gem_proportional::GemProportionalConfig;
pub use gem_remaining::GemRemainingConfig;
pub use interval_lock::{IntervalLock, IntervalLockConfig};
pub use oracle::{Oracle, OracleConfig};
pub use schneems::{Schneems, SchneemsConfig};
pub use sre_adaptive::{SreAdaptive, SreAdaptiveConfig};
pub use window_queue::{WindowQueue, WindowQueueConfig};

use std::sync::Arc;

use crate::config::{ConfigError, ParamProblem, typed};
use crate::exchange::Response;
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
    /// State shared by every process of the run (seed 001's and seed 004's Redis).
    pub store: SharedStore,
    /// Who uses the same server key over time; only the `oracle` may look.
    pub population: Arc<Population>,
}

impl BuildContext {
    /// A context for one process alone (tests, single-process tools).
    pub fn solo(threads: usize) -> Self {
        BuildContext {
            threads,
            group: "clients".into(),
            process: 0,
            store: crate::store::shared(),
            population: Arc::new(Population::default()),
        }
    }
}

/// Everything a perfect observer knows: the server's rate and, for the key this process uses,
/// how many threads run at any time. Real clients cannot know this; the `oracle` baseline does.
#[derive(Clone, Debug, Default)]
pub struct Population {
    /// The server's sustained rate for the key, in requests per second (0 when unknown).
    pub rate_per_sec: f64,
    /// `(start, stop, threads)` of every group on the key.
    pub windows: Vec<(Nanos, Nanos, u32)>,
}

impl Population {
    /// Threads on the key at `now`.
    pub fn active_threads(&self, now: Nanos) -> u32 {
        self.windows
            .iter()
            .filter(|(start, stop, _)| *start <= now && now < *stop)
            .map(|w| w.2)
            .sum()
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
    /// Abandon this job (e.g. seed 001's 15 s timeout); the thread moves on to its next job.
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
    /// The state worth charting, in seconds (seed 002's `sleep_for`).
    fn sleep_value(&self) -> f64;
    /// How many times this process backed off (seed 002's `rate_limit_count`).
    fn backoffs(&self) -> u64 {
        0
    }
}

/// Which algorithm a client group runs, with its parameters; `algorithm = "..."` in TOML.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "algorithm", rename_all = "kebab-case")]
pub enum ThrottleConfig {
    /// Seed 002's adaptive client (the default).
    Schneems(SchneemsConfig),
    /// No throttling: send again as soon as an answer arrives.
    None(NoneConfig),
    /// A constant sleep before every request (seed 001's naive `sleep 1`).
    Fixed(FixedConfig),
    /// Seed 000's two local buckets.
    DualBucket(DualBucketConfig),
    /// Seed 001's lock shared through the store.
    IntervalLock(IntervalLockConfig),
    /// Seed 003's per-key backoff with the AWS blog's jitters.
    Backoff(BackoffConfig),
    /// Seed 004's fixed-window counters and delayed queue.
    WindowQueue(WindowQueueConfig),
    /// rate_throttle_client's ExponentialBackoff.
    GemBackoff(GemBackoffConfig),
    /// rate_throttle_client's ExponentialIncreaseGradualDecrease.
    GemGradual(GemGradualConfig),
    /// rate_throttle_client's ExponentialIncreaseProportionalDecrease.
    GemProportional(GemProportionalConfig),
    /// rate_throttle_client's ExponentialIncreaseProportionalRemainingDecrease.
    GemRemaining(GemRemainingConfig),
    /// The AWS SDKs' adaptive retry mode.
    AwsAdaptive(AwsAdaptiveConfig),
    /// Google SRE's client-side adaptive throttling.
    SreAdaptive(SreAdaptiveConfig),
    /// Additive increase, multiplicative decrease of a send rate.
    Aimd(AimdConfig),
    /// Knows the server's rate and the population: the bound.
    Oracle(OracleConfig),
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig::Schneems(SchneemsConfig::default())
    }
}

impl ThrottleConfig {
    /// The algorithm names the `algorithm` field accepts.
    pub const NAMES: &'static [&'static str] = &[
        "schneems",
        "none",
        "fixed",
        "dual-bucket",
        "interval-lock",
        "backoff",
        "window-queue",
        "gem-backoff",
        "gem-gradual",
        "gem-proportional",
        "gem-remaining",
        "aws-adaptive",
        "sre-adaptive",
        "aimd",
        "oracle",
    ];

    /// One line for `throttle-sim list`: what the algorithm is and where it comes from.
    pub fn describe(name: &str) -> Option<&'static str> {
        Some(match name {
            "schneems" => {
                "seed 002's adaptive client: double on 429, decrease by remaining and time since the last doubling"
            }
            "none" => "no throttling: send again as soon as an answer arrives",
            "fixed" => "a constant sleep before every request (seed 001's naive `sleep 1`)",
            "dual-bucket" => {
                "seed 000's two local buckets (60/60 s, 3/1 s); pull syncs of 9 or one-at-a-time pushes"
            }
            "interval-lock" => {
                "seed 001's lock shared by a group's processes: SET NX PX 1 s, wait PTTL + offset, 15 s timeout"
            }
            "backoff" => {
                "seed 003's per-key backoff after 429/503 (503 first), full/equal/decorrelated/no jitter"
            }
            "window-queue" => {
                "seed 004's fixed-window counters per group and delay to the window a job's turn falls in"
            }
            "gem-backoff" => {
                "rate_throttle_client's ExponentialBackoff: retry 429s after 0.8 s × 1.2^n, no state"
            }
            "gem-gradual" => {
                "rate_throttle_client: shared sleep, +0.8 s and ×1.2 on 429, −0.8 s per call"
            }
            "gem-proportional" => {
                "rate_throttle_client: shared sleep, +0.8 s and ×1.2 on 429, −sleep/4500 per call"
            }
            "gem-remaining" => {
                "rate_throttle_client: shared sleep, +0.8 s and ×1.2 on 429, −sleep×remaining/4500 per call"
            }
            "aws-adaptive" => {
                "the AWS SDKs' adaptive retry mode: CUBIC rate, measured rate, client token bucket"
            }
            "sre-adaptive" => {
                "Google SRE client-side throttling: reject locally with p = (requests − 2·accepts)/(requests + 1)"
            }
            "aimd" => "additive increase, multiplicative decrease of each process's send rate",
            "oracle" => {
                "the bound: knows the server's rate and the thread count, spaces requests exactly"
            }
            _ => return None,
        })
    }

    /// The algorithm `name` with every parameter at its default.
    pub fn defaults(name: &str) -> Option<Self> {
        Self::from_params(name, toml::Value::Table(toml::Table::new()))?.ok()
    }

    pub fn name(&self) -> &'static str {
        match self {
            ThrottleConfig::Schneems(_) => "schneems",
            ThrottleConfig::None(_) => "none",
            ThrottleConfig::Fixed(_) => "fixed",
            ThrottleConfig::DualBucket(_) => "dual-bucket",
            ThrottleConfig::IntervalLock(_) => "interval-lock",
            ThrottleConfig::Backoff(_) => "backoff",
            ThrottleConfig::WindowQueue(_) => "window-queue",
            ThrottleConfig::GemBackoff(_) => "gem-backoff",
            ThrottleConfig::GemGradual(_) => "gem-gradual",
            ThrottleConfig::GemProportional(_) => "gem-proportional",
            ThrottleConfig::GemRemaining(_) => "gem-remaining",
            ThrottleConfig::AwsAdaptive(_) => "aws-adaptive",
            ThrottleConfig::SreAdaptive(_) => "sre-adaptive",
            ThrottleConfig::Aimd(_) => "aimd",
            ThrottleConfig::Oracle(_) => "oracle",
        }
    }

    /// Type the parameters of the algorithm `name` (the tag already removed), with the path of
    /// any bad field; `None` for an unknown name.
    pub fn from_params(name: &str, params: toml::Value) -> Option<Result<Self, ConfigError>> {
        Some(match name {
            "schneems" => typed(params).map(ThrottleConfig::Schneems),
            "none" => typed(params).map(ThrottleConfig::None),
            "fixed" => typed(params).map(ThrottleConfig::Fixed),
            "dual-bucket" => typed(params).map(ThrottleConfig::DualBucket),
            "interval-lock" => typed(params).map(ThrottleConfig::IntervalLock),
            "backoff" => typed(params).map(ThrottleConfig::Backoff),
            "window-queue" => typed(params).map(ThrottleConfig::WindowQueue),
            "gem-backoff" => typed(params).map(ThrottleConfig::GemBackoff),
            "gem-gradual" => typed(params).map(ThrottleConfig::GemGradual),
            "gem-proportional" => typed(params).map(ThrottleConfig::GemProportional),
            "gem-remaining" => typed(params).map(ThrottleConfig::GemRemaining),
            "aws-adaptive" => typed(params).map(ThrottleConfig::AwsAdaptive),
            "sre-adaptive" => typed(params).map(ThrottleConfig::SreAdaptive),
            "aimd" => typed(params).map(ThrottleConfig::Aimd),
            "oracle" => typed(params).map(ThrottleConfig::Oracle),
            _ => return None,
        })
    }

    /// Build one instance for one process.
    pub fn build(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        match self {
            ThrottleConfig::Schneems(c) => Box::new(Schneems::new(c.clone(), ctx)),
            ThrottleConfig::None(c) => Box::new(c.build()),
            ThrottleConfig::Fixed(c) => Box::new(c.build()),
            ThrottleConfig::DualBucket(c) => Box::new(c.build(ctx)),
            ThrottleConfig::IntervalLock(c) => Box::new(c.build(ctx)),
            ThrottleConfig::Backoff(c) => Box::new(c.build(ctx)),
            ThrottleConfig::WindowQueue(c) => Box::new(c.build(ctx)),
            ThrottleConfig::GemBackoff(c) => Box::new(c.build(ctx)),
            ThrottleConfig::GemGradual(c) => Box::new(c.build(ctx)),
            ThrottleConfig::GemProportional(c) => Box::new(c.build(ctx)),
            ThrottleConfig::GemRemaining(c) => Box::new(c.build(ctx)),
            ThrottleConfig::AwsAdaptive(c) => Box::new(c.build(ctx)),
            ThrottleConfig::SreAdaptive(c) => Box::new(c.build(ctx)),
            ThrottleConfig::Aimd(c) => Box::new(c.build(ctx)),
            ThrottleConfig::Oracle(c) => Box::new(c.build(ctx)),
        }
    }

    /// Parameters out of their valid range.
    pub fn problems(&self) -> Vec<ParamProblem> {
        match self {
            ThrottleConfig::Schneems(c) => c.problems(),
            ThrottleConfig::None(_) => Vec::new(),
            ThrottleConfig::Fixed(c) => c.problems(),
            ThrottleConfig::DualBucket(c) => c.problems(),
            ThrottleConfig::IntervalLock(c) => c.problems(),
            ThrottleConfig::Backoff(c) => c.problems(),
            ThrottleConfig::WindowQueue(c) => c.problems(),
            ThrottleConfig::GemBackoff(c) => c.problems(),
            ThrottleConfig::GemGradual(c) => c.problems(),
            ThrottleConfig::GemProportional(c) => c.problems(),
            ThrottleConfig::GemRemaining(c) => c.problems(),
            ThrottleConfig::AwsAdaptive(c) => c.problems(),
            ThrottleConfig::SreAdaptive(c) => c.problems(),
            ThrottleConfig::Aimd(c) => c.problems(),
            ThrottleConfig::Oracle(_) => Vec::new(),
        }
    }

    /// What the processes of `group` coordinate on in the shared store, for the algorithms
    /// that coordinate at all: processes with the same scope must share one store.
    pub fn store_scope(&self, group: &str) -> Option<String> {
        match self {
            ThrottleConfig::IntervalLock(c) => Some(c.store_scope(group)),
            ThrottleConfig::WindowQueue(c) => Some(c.store_scope(group)),
            _ => None,
        }
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
        }
    }
}
