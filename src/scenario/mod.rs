//! Scenario files: the TOML schema, loading with `--set` overrides, and validation whose
//! errors name the file, the line and the field.

mod axes;
mod builder;
mod checks;
mod error;
mod layout;
mod load;
mod overrides;
pub mod params;
mod path;
mod read;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use axes::{
    Axes, Axis, CELL_FIELD, Cell, CellError, CellRule, Level, Levels, MAX_CELLS, cell_override,
};
pub use checks::{
    MAX_SCENARIO_BYTES, MAX_TIME_SCALE, MIN_SAMPLE_EVERY, MIN_TIME_SCALE, NameError,
    TimeScaleError, check_name, check_time_scale, folder_char,
};
pub use error::{Problem, ScenarioError};
pub use layout::{GroupInfo, Layout, ProcessInfo, ThreadInfo};
pub use load::{GROUP_COMMON, SERVER_COMMON, parse_scenario};
pub use overrides::{Override, OverrideError};
pub use path::FieldPath;
pub use read::read_scenario;

use crate::exchange::DEFAULT_KEY;
use crate::limiter::{FaultConfig, Headers, Latency, Limiter, LimiterConfig};
use crate::rng::SimRng;
use crate::store::StoreConfig;
use crate::throttle::ThrottleConfig;
use crate::time::HumanDuration;

/// A validated scenario, overrides applied and seed fixed.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub run: RunConfig,
    pub server: ServerConfig,
    pub clients: Vec<ClientGroup>,
    pub variants: Vec<Variant>,
    pub expect: Expect,
    /// `[store]`: where a live run's processes keep shared state (default: in memory).
    pub store: StoreConfig,
    /// `[compare]`: what `compare` shows and ranks on.
    pub compare: CompareConfig,
    /// `[[axes]]` and `[[cells]]`: the cells this file stands for (`axes.rs`); empty for most.
    pub axes: Axes,
    /// The cell this scenario is (its levels applied), when the file has axes and one was
    /// picked (`cell = …`, `--cell`).
    pub cell: Option<String>,
}

/// `[compare]`: what a comparison of this scenario's variants shows and ranks on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CompareConfig {
    /// Metrics (names as in `[expect]`), in column order. Default: per workload, see
    /// [`Scenario::compare_metrics`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<String>>,
}

/// What `compare` shows and ranks on for a scenario that runs for its duration against a rate
/// limit: how few 429s, how much of the capacity, how fairly, how soon settled, how long the
/// longest sleep and wait.
pub const COMPARE_RATE_METRICS: &[&str] = &[
    "ratio_429",
    "utilization",
    "fairness",
    "fairness_windowed",
    "convergence_s",
    "max_sleep",
    "wait_p99",
];

/// What `compare` shows and ranks on for a finite workload (`jobs`, `pool`) or the `occ` row:
/// the work it took (requests; for `occ`, the write calls) and how long until it was done.
/// Utilization means nothing there: the clients stop when the work is done, and `occ` states no
/// capacity.
pub const COMPARE_WORK_METRICS: &[&str] = &["requests", "time_to_clear"];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Sim,
    Live,
}

/// `[run] series`: what one `series.csv` row covers at each tick. The summary's metrics do
/// not depend on it (they come from the recorder's own per-thread counters); only the file's
/// size and detail do (results/README.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeriesLevel {
    /// A row per thread: every thread's counts (the default; small runs want the detail).
    #[default]
    Thread,
    /// A row per process: its threads' counts summed, its own sleep value.
    Process,
    /// A row per group: its threads' counts summed, the median of its processes' sleep.
    Group,
}

impl SeriesLevel {
    pub fn is_thread(&self) -> bool {
        *self == SeriesLevel::Thread
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SeriesLevel::Thread => "thread",
            SeriesLevel::Process => "process",
            SeriesLevel::Group => "group",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// How long the clients run. Default 1 h.
    pub duration: HumanDuration,
    /// The seed of every random choice; chosen and recorded when absent.
    pub seed: Option<u64>,
    pub mode: Mode,
    /// Live mode only: how many times faster than real time the run goes.
    pub time_scale: f64,
    /// One `series.csv` row per thread per this interval. Default 10 s.
    pub sample_every: HumanDuration,
    /// What a `series.csv` row covers: "thread" (default), "process" or "group".
    #[serde(skip_serializing_if = "SeriesLevel::is_thread")]
    pub series: SeriesLevel,
    /// The window of `peak_requests` and `peak_process_requests` (e.g. "60s" for "never more
    /// than 60 in any minute"); without it those metrics are null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_window: Option<HumanDuration>,
    /// The window of `fairness_windowed`: Jain's index is taken in each window over the
    /// threads active through it, then averaged. Default 10 min (cut to the run's length).
    pub fairness_window: HumanDuration,
    /// `check` judges `[expect]` on the mean over this many seeds (the run's seed and the ones
    /// after it), and `compare` runs this many; `--seeds` overrides it. Default: `check` 1,
    /// `compare` 5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seeds: Option<u32>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            duration: HumanDuration::from_secs(3600),
            seed: None,
            mode: Mode::Sim,
            time_scale: 1.0,
            sample_every: HumanDuration::from_secs(10),
            series: SeriesLevel::Thread,
            peak_window: None,
            fairness_window: HumanDuration::from_secs(600),
            seeds: None,
        }
    }
}

impl RunConfig {
    /// The seed; [`read_scenario`] always fixes one.
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(0)
    }
}

/// `[server]`: the limit rule plus what every rule shares.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerConfig {
    pub limiter: LimiterConfig,
    pub latency: Latency,
    /// Outages and random errors in front of the rule.
    pub faults: FaultConfig,
    /// Which rate-limit fields the answers carry (`full` or `none`).
    pub headers: Headers,
}

impl ServerConfig {
    /// The rule with its faults; `rng` is the run's server stream (`rng::stream`), the only
    /// randomness a server has.
    pub fn build_limiter(&self, rng: SimRng) -> Box<dyn Limiter> {
        self.faults.wrap(self.limiter.build(), rng)
    }
}

/// The `[server]` fields that belong to every kind of limiter.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerCommon {
    pub latency: Latency,
    /// `[start, end)` windows answered with 503 (see `limiter::FaultConfig`).
    pub outages: Vec<[HumanDuration; 2]>,
    /// Probability of a random 500. Default 0.
    pub error_rate: f64,
    /// `full` (default): `RateLimit-*` and `Retry-After` on every answer; `none`: neither.
    pub headers: Headers,
}

/// One `[[clients]]` group: `processes` processes of `threads` threads, one algorithm.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientGroup {
    pub common: GroupCommon,
    pub throttle: ThrottleConfig,
}

/// The `[[clients]]` fields every algorithm shares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupCommon {
    pub name: String,
    #[serde(default = "one")]
    pub processes: u32,
    #[serde(default = "one")]
    pub threads: u32,
    /// When the group joins. Default 0 s.
    #[serde(default)]
    pub start: HumanDuration,
    /// When the group leaves. Default: the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<HumanDuration>,
    /// A finite workload: each thread is done after this many 2xx (default: it never is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs: Option<u64>,
    /// A finite workload shared by the group: its threads take jobs from one count of this
    /// many, and the group is done when the pool is empty (`engine::client_loop::Pool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<u64>,
    /// Each thread stops after an answer whose `RateLimit-Remaining` is at most this (the
    /// rate_throttle_client gem's "time to clear" benchmark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_when_remaining_at_most: Option<u64>,
    /// The API token the group uses; groups without one share the default key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `compare --algorithms` leaves this group's algorithm as written: a co-tenant on the same
    /// key that is part of the case, not under study. Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_algorithm: bool,
}

fn one() -> u32 {
    1
}

impl GroupCommon {
    /// The group's server key, [`DEFAULT_KEY`] when it names none.
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or(DEFAULT_KEY)
    }
}

/// A named set of overrides that `compare` runs against the same seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}

/// `[expect]`: metric name → inclusive range; a run fails (exit 1) when one is missed.
pub type Expect = BTreeMap<String, [f64; 2]>;

/// The metrics `[expect]` may name.
pub const EXPECTABLE_METRICS: &[&str] = &[
    "requests",
    "ok",
    "limited",
    "errors",
    "timed_out",
    "ratio_429",
    "ratio_429_late",
    "retry_rate_thread_mean",
    "capacity",
    "utilization",
    "fairness",
    "fairness_windowed",
    "request_count_stdev",
    "max_sleep",
    "convergence_s",
    "wait_p50",
    "wait_p99",
    "time_to_clear",
    "peak_requests",
    "peak_process_requests",
];

impl Scenario {
    /// The metrics `compare` shows and ranks on: `[compare] metrics`, else
    /// [`COMPARE_WORK_METRICS`] when every group has a finite workload or the server is
    /// `occ`, else [`COMPARE_RATE_METRICS`].
    pub fn compare_metrics(&self) -> Vec<String> {
        if let Some(m) = &self.compare.metrics {
            return m.clone();
        }
        let finite = !self.clients.is_empty()
            && self
                .clients
                .iter()
                .all(|c| c.common.jobs.is_some() || c.common.pool.is_some());
        let occ = matches!(self.server.limiter, LimiterConfig::Occ(_));
        let names = if finite || occ {
            COMPARE_WORK_METRICS
        } else {
            COMPARE_RATE_METRICS
        };
        names.iter().map(|m| m.to_string()).collect()
    }

    /// The name to show: the scenario's, and its cell's after a space when it is one.
    pub fn title(&self) -> String {
        match &self.cell {
            Some(c) => format!("{} [{c}]", self.name),
            None => self.name.clone(),
        }
    }

    /// The start of a results folder's name: the scenario's name, and its cell's (`/` made
    /// safe) when it is one.
    pub fn folder_name(&self) -> String {
        match &self.cell {
            Some(c) => format!(
                "{}-{}",
                self.name,
                c.chars().map(folder_char).collect::<String>()
            ),
            None => self.name.clone(),
        }
    }

    /// A file with `[[axes]]` stands for many scenarios: one run needs a cell picked.
    pub fn needs_cell(&self) -> Result<(), CellError> {
        if self.axes.is_empty() || self.cell.is_some() {
            return Ok(());
        }
        Err(CellError::NeedsCell {
            count: self.axes.count(),
            example: self.axes.names().into_iter().next().unwrap_or_default(),
        })
    }

    pub fn threads_total(&self) -> u64 {
        self.clients
            .iter()
            .map(|c| u64::from(c.common.processes) * u64::from(c.common.threads))
            .sum()
    }

    /// The resolved scenario as TOML: every default written out, seed included, so the run
    /// repeats exactly from this file alone, but for a secret in the store's URL (a Redis
    /// password), written as `***`: a results folder is no place for a credential.
    pub fn to_toml(&self) -> String {
        let mut shown = self.clone();
        if let Some(url) = &mut shown.store.url {
            *url = crate::redact::without_secrets(url);
        }
        shown.to_toml_with_secrets()
    }

    /// As [`Scenario::to_toml`], the store's URL as given: only for what a live run's worker
    /// processes read on their stdin, never for a file.
    pub fn to_toml_with_secrets(&self) -> String {
        let mut root = toml::Table::new();
        root.insert("name".into(), self.name.clone().into());
        if !self.description.is_empty() {
            root.insert("description".into(), self.description.clone().into());
        }
        root.insert("run".into(), to_value(&self.run));
        let mut server = table_of(&self.server.limiter);
        server.extend(table_of(&ServerCommon {
            latency: self.server.latency.clone(),
            outages: self.server.faults.outages.clone(),
            error_rate: self.server.faults.error_rate,
            headers: self.server.headers,
        }));
        root.insert("server".into(), toml::Value::Table(server));
        let clients = self
            .clients
            .iter()
            .map(|c| {
                let mut t = table_of(&c.common);
                t.extend(table_of(&c.throttle));
                toml::Value::Table(t)
            })
            .collect();
        root.insert("clients".into(), toml::Value::Array(clients));
        if !self.variants.is_empty() {
            root.insert("variants".into(), to_value(&self.variants));
        }
        if !self.expect.is_empty() {
            root.insert("expect".into(), to_value(&self.expect));
        }
        if !self.store.is_empty() {
            root.insert("store".into(), to_value(&self.store));
        }
        if self.compare.metrics.is_some() {
            root.insert("compare".into(), to_value(&self.compare));
        }
        // A cell is written with its levels applied, as a scenario of its own; the file as
        // written (no cell picked) keeps its axes.
        if self.cell.is_none() && !self.axes.is_empty() {
            root.insert("axes".into(), to_value(&self.axes.axes));
            if !self.axes.rules.is_empty() {
                root.insert("cells".into(), to_value(&self.axes.rules));
            }
        }
        toml::to_string(&root).expect("a scenario always serializes")
    }
}

fn to_value<T: Serialize>(v: &T) -> toml::Value {
    toml::Value::try_from(v).expect("scenario parts serialize to TOML")
}

fn table_of<T: Serialize>(v: &T) -> toml::Table {
    match to_value(v) {
        toml::Value::Table(t) => t,
        other => panic!("expected a table, got {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics_of(text: &str) -> Vec<String> {
        parse_scenario(text, "t.toml", "t", &[], 1)
            .unwrap()
            .compare_metrics()
    }

    #[test]
    fn compare_metrics_default_per_workload_unless_named() {
        let open = "[server]\nlimit = 100\n[[clients]]\nname = \"a\"\n";
        assert_eq!(metrics_of(open), COMPARE_RATE_METRICS);
        let jobs = format!("{open}jobs = 10\n");
        assert_eq!(metrics_of(&jobs), COMPARE_WORK_METRICS);
        // One open group among finite ones keeps the rate metrics.
        let mixed = format!("{jobs}[[clients]]\nname = \"b\"\n");
        assert_eq!(metrics_of(&mixed), COMPARE_RATE_METRICS);
        let occ = "[server]\nkind = \"occ\"\n[[clients]]\nname = \"a\"\n";
        assert_eq!(metrics_of(occ), COMPARE_WORK_METRICS);
        let named = format!("{open}[compare]\nmetrics = [\"timed_out\", \"ratio_429\"]\n");
        assert_eq!(metrics_of(&named), ["timed_out", "ratio_429"]);
        // Written back out, the list survives.
        let s = parse_scenario(&named, "t.toml", "t", &[], 1).unwrap();
        assert!(s.to_toml().contains("[compare]"), "{}", s.to_toml());
        let again = parse_scenario(&s.to_toml(), "t.toml", "t", &[], 1).unwrap();
        assert_eq!(again.compare, s.compare);
    }
}
