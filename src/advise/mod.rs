//! `throttle-sim advise`: which client algorithm to use against one API with one fleet (or
//! several fleets, when the fleet varies), answered by running them all.
//!
//! The API (a rule, its limit and period, its burst, its header dialect and latency; or a
//! scenario's `[server]`) and the fleets become one scenario with a `fleet` axis
//! (`advise.toml`, kept in the results folder so the answer can be run again), long enough for
//! 20 of a thread's fair-share periods in the largest fleet. Every algorithm a client could
//! run there is compared in every fleet over the same seeds (`compare`'s matrix), and
//! ranked by one rule, which advise prints ([`ranking_rule`]): an algorithm whose 429s pass
//! [`REFUSAL_FACTOR`] times the target in any fleet ranks below every one that stays within
//! it; then the fleets where it meets the targets (at most 0.5 % 429s, utilization and
//! fairness at least 0.97); then its worst fleet's utilization × fairness. The first is
//! recommended unless its 429s pass that cap (then nothing is). Algorithms that coordinate
//! through a shared store rank with the rest only when the user's processes can share one
//! (`--shared-state`); otherwise, when nothing meets the targets in every fleet, they run
//! beside as a reference of what sharing state would give, never recommended. The bounds
//! (`oracle`, `independent`), which are told the thread count, never run.

pub mod paced;

pub use paced::{NAME as PACED, Paced, paced};

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use crate::compare::{self, CompareOptions, Lead, Matrix, Stat, VariantStats};
use crate::error::Error;
use crate::progress::Progress;
use crate::run::{claim_given_dir, claim_new_dir};
use crate::scenario::Scenario;
use crate::throttle::ThrottleConfig;
use crate::time::HumanDuration;

/// One fleet: `processes` processes of `threads` threads each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fleet {
    pub processes: u32,
    pub threads: u32,
}

/// The most threads one advised fleet may have: past it a run of every algorithm takes long.
pub const MAX_FLEET_THREADS: u64 = 10_000;

impl FromStr for Fleet {
    type Err = String;

    /// `12x4`: 12 processes of 4 threads.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a fleet: write PROCESSESxTHREADS, e.g. 12x4");
        let (p, t) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
        let processes: u32 = p.trim().parse().map_err(|_| bad())?;
        let threads: u32 = t.trim().parse().map_err(|_| bad())?;
        if processes == 0 || threads == 0 {
            return Err(format!(
                "`{s}`: a fleet needs at least one process of one thread"
            ));
        }
        if u64::from(processes) * u64::from(threads) > MAX_FLEET_THREADS {
            return Err(format!(
                "`{s}`: at most {MAX_FLEET_THREADS} threads in one fleet"
            ));
        }
        Ok(Fleet { processes, threads })
    }
}

impl Fleet {
    /// `12x4`, as `--fleet` takes it.
    pub fn name(&self) -> String {
        format!("{}x{}", self.processes, self.threads)
    }

    fn threads_total(&self) -> u64 {
        u64::from(self.processes) * u64::from(self.threads)
    }
}

/// The API advised for: its `[server]` table, and what the law of docs/fair-share.md needs
/// to be told when the answers do not say it.
#[derive(Clone, Debug)]
pub struct Api {
    pub server: toml::Table,
    /// Requests per `period`: the quota.
    pub quota: f64,
    pub period: HumanDuration,
    /// Whether the answers state the quota (every dialect but Heroku's and none).
    pub states_quota: bool,
}

impl Api {
    /// The sustained rate, per second.
    fn rate(&self) -> f64 {
        self.quota / self.period.secs().max(1e-9)
    }

    /// "gcra, 4500 per 1h, headers full, latency 20ms".
    fn describe(&self) -> String {
        let text = |k: &str| {
            self.server
                .get(k)
                .map(|v| v.to_string().trim_matches('"').to_string())
        };
        format!(
            "{}, {} per {}{}, headers {}, latency {}",
            text("kind").unwrap_or_else(|| "gcra".into()),
            self.quota,
            self.period,
            text("burst").map_or(String::new(), |b| format!(", burst {b}")),
            text("headers").unwrap_or_else(|| "full".into()),
            text("latency").unwrap_or_else(|| "20ms".into()),
        )
    }
}

/// What to advise on and how.
pub struct AdviseOptions<'a> {
    pub api: Api,
    pub fleets: Vec<Fleet>,
    /// Add a fleet whose processes come and go (built from the largest fleet).
    pub churn: bool,
    /// The user's processes can share a store (Redis): coordinating algorithms run too.
    pub shared_state: bool,
    pub seeds: usize,
    pub seed: u64,
    /// How long each run is; default long enough for the largest fleet (see [`duration`]).
    pub duration: Option<HumanDuration>,
    pub jobs: usize,
    pub out: Option<PathBuf>,
    pub progress: &'a Progress,
    pub interrupt: &'a AtomicBool,
}

/// Why `advise` cannot run as asked.
#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    #[error("name at least one fleet, e.g. --fleet 12x4 (several: --fleet 1x1,12x4,50x1)")]
    NoFleet,
    #[error("`{0}` is named twice in --fleet")]
    FleetTwice(String),
    #[error("the API states no rate (a `{0}` server): advise needs a limit per period")]
    NoRate(String),
    #[error("interrupted: no advice written; the runs that finished are in {}", .0.display())]
    Interrupted(PathBuf),
}

/// The algorithms a client of this API could run: every blind one, and those that coordinate
/// through a store when the processes can share one; never the bounds (`oracle`, `independent`:
/// they are told how many threads there are) or `none` (it does not throttle).
pub fn algorithms(shared_state: bool) -> Vec<&'static str> {
    ThrottleConfig::NAMES
        .iter()
        .copied()
        .filter(|&n| n != "none" && !ThrottleConfig::is_bound(n))
        .filter(|&n| shared_state || !coordinates(n))
        .collect()
}

/// The algorithms that coordinate through a store the processes share (`shared-bucket`, …).
pub fn coordinating() -> Vec<&'static str> {
    algorithms(true)
        .into_iter()
        .filter(|&n| coordinates(n))
        .collect()
}

/// Whether `name` coordinates through a shared store.
fn coordinates(name: &str) -> bool {
    ThrottleConfig::defaults(name)
        .and_then(|c| c.store_scope("advise", "default"))
        .is_some()
}

/// Long enough for 20 of a thread's fair-share periods (`20 N / R`) in the largest fleet, at
/// least 30 minutes, 5 hours for an hourly quota and 48 for a daily one, in whole minutes.
pub fn duration(api: &Api, fleets: &[Fleet]) -> HumanDuration {
    let n = fleets.iter().map(Fleet::threads_total).max().unwrap_or(1) as f64;
    let period = api.period.secs();
    let floor = if period >= 86_400.0 {
        48.0 * 3600.0
    } else if period >= 3600.0 {
        5.0 * 3600.0
    } else {
        1800.0
    };
    let secs = (20.0 * n / api.rate()).max(floor);
    HumanDuration::from_secs(((secs / 60.0).ceil() * 60.0).min(1e9) as u64)
}

/// The scenario `advise` runs: the API's server, one fleet level per fleet, the targets, and
/// `pace`'s `[[variants]]` entry where there is one.
pub fn scenario_text(opts: &AdviseOptions<'_>, pace: Option<&Paced>) -> String {
    let api = &opts.api;
    let run_for = opts.duration.unwrap_or_else(|| duration(api, &opts.fleets));
    let mut server = api.server.clone();
    server.entry("latency").or_insert_with(|| "20ms".into());
    let mut root = toml::Table::new();
    root.insert("name".into(), "advise".into());
    root.insert(
        "description".into(),
        format!(
            "Written by throttle-sim advise: every client algorithm against {} in each fleet.",
            api.describe()
        )
        .into(),
    );
    let mut run = toml::Table::new();
    run.insert("duration".into(), run_for.to_string().into());
    run.insert("seed".into(), (opts.seed as i64).into());
    run.insert("seeds".into(), (opts.seeds as i64).into());
    run.insert("sample_every".into(), "1m".into());
    run.insert("series".into(), "group".into());
    root.insert("run".into(), toml::Value::Table(run));
    root.insert("server".into(), toml::Value::Table(server));
    let group = |name: &str, processes: u32, threads: u32| {
        let mut g = toml::Table::new();
        g.insert("name".into(), name.into());
        g.insert("processes".into(), i64::from(processes).into());
        g.insert("threads".into(), i64::from(threads).into());
        g.insert("algorithm".into(), "fair-share".into());
        if !api.states_quota {
            g.insert("quota".into(), api.quota.into());
            g.insert("period".into(), api.period.to_string().into());
        }
        g
    };
    root.insert(
        "clients".into(),
        toml::Value::Array(vec![toml::Value::Table(group("w", 1, 1))]),
    );
    let mut expect = toml::Table::new();
    for (metric, lo, hi) in TARGETS {
        expect.insert(
            metric.into(),
            toml::Value::Array(vec![lo.into(), hi.into()]),
        );
    }
    root.insert("expect".into(), toml::Value::Table(expect));
    let mut levels: Vec<toml::Value> = opts
        .fleets
        .iter()
        .map(|f| {
            let clients =
                toml::Value::Array(vec![toml::Value::Table(group("w", f.processes, f.threads))]);
            level(&f.name(), clients, None)
        })
        .collect();
    if opts.churn {
        levels.push(churn_level(opts, run_for, &group));
    }
    let mut axis = toml::Table::new();
    axis.insert("name".into(), "fleet".into());
    axis.insert("levels".into(), toml::Value::Array(levels));
    root.insert(
        "axes".into(),
        toml::Value::Array(vec![toml::Value::Table(axis)]),
    );
    if let Some(p) = pace {
        root.insert("variants".into(), toml::Value::Array(vec![p.variant()]));
    }
    toml::to_string(&root).expect("an advise scenario serializes")
}

/// The targets a fleet is met on: those the API-shape matrix holds fair-share to.
const TARGETS: [(&str, f64, f64); 3] = [
    ("ratio_429", 0.0, 0.005),
    ("utilization", 0.97, 1.0),
    ("fairness", 0.97, 1.0),
];

fn level(name: &str, clients: toml::Value, expect: Option<toml::Table>) -> toml::Value {
    let mut set = toml::Table::new();
    set.insert("clients".into(), clients);
    let mut l = toml::Table::new();
    l.insert("name".into(), name.into());
    l.insert("set".into(), toml::Value::Table(set));
    if let Some(e) = expect {
        l.insert("expect".into(), toml::Value::Table(e));
    }
    toml::Value::Table(l)
}

/// The largest fleet, half of its processes there throughout and the others each joining at
/// its own time in the first half of the run and leaving a third of the run later; judged on
/// windowed fairness, as the population changes.
fn churn_level(
    opts: &AdviseOptions<'_>,
    run_for: HumanDuration,
    group: &dyn Fn(&str, u32, u32) -> toml::Table,
) -> toml::Value {
    let big = opts
        .fleets
        .iter()
        .max_by_key(|f| f.threads_total())
        .copied()
        .expect("advise has at least one fleet");
    let stay = big.processes.div_ceil(2);
    let mut groups = vec![toml::Value::Table(group("stay", stay, big.threads))];
    let comers = big.processes - stay;
    let total = run_for.secs();
    for i in 0..comers {
        let start = (total / 2.0 * f64::from(i + 1) / f64::from(comers + 1)).floor();
        let stop = (start + total / 3.0).floor();
        let mut g = group(&format!("c{}", i + 1), 1, big.threads);
        g.insert("start".into(), format!("{start}s").into());
        g.insert("stop".into(), format!("{stop}s").into());
        groups.push(toml::Value::Table(g));
    }
    let mut expect = toml::Table::new();
    expect.insert(
        "fairness".into(),
        toml::Value::Array(vec![0.0.into(), 1.0.into()]),
    );
    expect.insert(
        "fairness_windowed".into(),
        toml::Value::Array(vec![0.97.into(), 1.0.into()]),
    );
    level(
        &format!("{}-churn", big.name()),
        toml::Value::Array(groups),
        Some(expect),
    )
}

/// The 429 target of a fleet (the upper end of [`TARGETS`]' `ratio_429`).
pub const TARGET_429: f64 = TARGETS[0].2;

/// How many times the 429 target an algorithm may draw in a fleet before it ranks below every
/// algorithm that stays within that in all fleets, whatever else it meets: 4, so 2 % against
/// the 0.5 % target. A client that keeps to its share misses the target by a little on a hard
/// shape (the API-shape matrix already allows window rules 1 %), and such a client stays under
/// 2 %; one that ignores refusals (a fixed sleep, a retry loop without a rate) draws tens of
/// percent, and its utilization and fairness are then bought with the API's refusals.
pub const REFUSAL_FACTOR: f64 = 4.0;

/// The 429 ratio past which an algorithm fails the user: [`REFUSAL_FACTOR`] × [`TARGET_429`].
pub fn refusal_cap() -> f64 {
    REFUSAL_FACTOR * TARGET_429
}

/// The least utilization × fairness, in its worst fleet, of an algorithm advise recommends.
/// Below it the algorithm leaves more than half of the quota unused or unshared: it fails the
/// user as a flood does, by the other side (a 2-a-second Heroku bucket under 7 one-thread
/// processes: the first within the 429 cap used 0.277 of it, and was recommended as the
/// closest). Such an algorithm ranks below every one above it, and above those past the cap.
pub const LEAST_SCORE: f64 = 0.5;

/// The ranking as one line, the way advise prints it.
pub fn ranking_rule() -> String {
    format!(
        "an algorithm whose 429s pass {} ({REFUSAL_FACTOR} × the {} target) in any fleet ranks \
         below every one that stays within it, and one whose worst fleet's utilization × \
         fairness is under {LEAST_SCORE} below every other within it; then fleets met (the means over the seeds within \
         every target: 429s at most {}, utilization and fairness at least {}), and among those \
         that meet them in every fleet one that is not told the fleet ({PACED} is) first; then the \
         worst fleet's utilization × fairness",
        percent(refusal_cap()),
        percent(TARGET_429),
        percent(TARGET_429),
        TARGETS[1].1
    )
}

/// "2 %", "0.5 %".
pub(crate) fn percent(x: f64) -> String {
    format!("{} %", x * 100.0)
}

/// One algorithm's standing over the fleets.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Standing {
    pub algorithm: String,
    /// It coordinates through a store the processes share (Redis).
    pub shared_store: bool,
    /// Its 429s pass [`refusal_cap`] in some fleet: it ranks below every one whose do not.
    pub refuses: bool,
    /// Its worst fleet's utilization × fairness is under [`LEAST_SCORE`]: it ranks below every
    /// one within the cap that reaches it.
    pub starves: bool,
    /// Fleets where its means meet every target, of those run.
    pub fleets_met: usize,
    pub fleets: usize,
    /// Its worst fleet: the lowest utilization × fairness.
    pub worst_fleet: String,
    pub worst_score: f64,
    pub worst_ratio_429: f64,
    /// Its most 429s in one fleet, and that fleet.
    pub max_ratio_429: f64,
    pub max_ratio_429_fleet: String,
}

impl Standing {
    /// "2/2 fleets met; worst 1x4 (0.979 utilization × fairness, 0.00 % 429s)", with the 429s
    /// that sink it and whether it needs a shared store.
    fn line(&self) -> String {
        let mut out = format!(
            "{}: {}/{} fleets met; worst {} ({:.3} utilization × fairness, {:.2} % 429s)",
            self.algorithm,
            self.fleets_met,
            self.fleets,
            self.worst_fleet,
            self.worst_score,
            self.worst_ratio_429 * 100.0
        );
        if self.starves && !self.refuses {
            let _ = write!(out, "; utilization × fairness under {LEAST_SCORE}");
        }
        if self.refuses && self.max_ratio_429_fleet == self.worst_fleet {
            let _ = write!(out, "; 429s past {}", percent(refusal_cap()));
        } else if self.refuses {
            let _ = write!(
                out,
                "; 429s past {}: {:.2} % in {}",
                percent(refusal_cap()),
                self.max_ratio_429 * 100.0,
                self.max_ratio_429_fleet
            );
        }
        if self.shared_store {
            out.push_str(" [needs a shared store]");
        }
        out
    }
}

/// The coordinating algorithms run beside when no algorithm meets the targets in every fleet
/// and the processes share no store: what sharing state would give, never recommended.
pub struct Reference {
    pub standings: Vec<Standing>,
    pub matrix: Matrix,
    pub dir: PathBuf,
}

/// What `advise` found.
pub struct Advice {
    pub dir: PathBuf,
    pub api: String,
    pub standings: Vec<Standing>,
    pub matrix: Matrix,
    /// The coordinating algorithms, run beside when nothing meets the targets in every fleet
    /// and the processes share no store.
    pub reference: Option<Reference>,
    /// The recommended algorithm's parameters tried at half and twice their defaults.
    pub tuning: Vec<Tuned>,
    /// The scenario that was run (`advise.toml` in `dir`).
    pub scenario: PathBuf,
    /// `fixed` paced for the largest fleet, when it ran beside the algorithms (`paced.rs`).
    pub paced: Option<Paced>,
}

impl Advice {
    /// The algorithm advise recommends, if any (see [`recommended`]).
    pub fn recommended(&self) -> Option<&Standing> {
        recommended(&self.standings)
    }
}

/// Run every algorithm in every fleet and rank them.
pub fn advise(opts: &AdviseOptions<'_>) -> Result<Advice, Error> {
    if opts.fleets.is_empty() {
        return Err(Error::flag("--fleet")(AdviseError::NoFleet));
    }
    for (i, f) in opts.fleets.iter().enumerate() {
        if opts.fleets[..i].contains(f) {
            return Err(Error::flag("--fleet")(AdviseError::FleetTwice(f.name())));
        }
    }
    if !(opts.api.rate() > 0.0 && opts.api.rate().is_finite()) {
        let kind = opts
            .api
            .server
            .get("kind")
            .map_or("gcra".into(), |k| k.to_string());
        return Err(Error::usage(AdviseError::NoRate(kind)));
    }
    let dir = match &opts.out {
        Some(d) => claim_given_dir(d)?,
        None => claim_new_dir(Path::new("results"), "advise", SystemTime::now())?,
    };
    // Beside the blind algorithms, `fixed` paced for the largest fleet (`paced.rs`).
    let pace = paced(&opts.api, &opts.fleets);
    let scenario = dir.join("advise.toml");
    fs::write(&scenario, scenario_text(opts, pace.as_ref())).map_err(Error::io(&scenario))?;
    let algorithms = algorithms(opts.shared_state)
        .into_iter()
        .map(str::to_string)
        .collect();
    let variants = pace.iter().map(|_| PACED.to_string()).collect();
    let (plan, result) = matrix_of(
        opts,
        scenario.clone(),
        variants,
        algorithms,
        dir.join("compare"),
    )?;
    let matrix = result
        .matrix
        .ok_or_else(|| Error::usage(AdviseError::NoFleet))?;
    let ranked = standings(&matrix);
    // Nothing meets every fleet without a store: what sharing one would give, beside.
    let reference = if !opts.shared_state && ranked.first().is_none_or(|b| b.fleets_met < b.fleets)
    {
        let names = coordinating().into_iter().map(str::to_string).collect();
        let out = dir.join("shared-state");
        let (_, result) = matrix_of(opts, scenario.clone(), Vec::new(), names, out.clone())?;
        result.matrix.map(|m| Reference {
            standings: standings(&m),
            matrix: m,
            dir: out,
        })
    } else {
        None
    };
    // The paced candidate's one setting is its sleep, set from the fleet: nothing to tune.
    let tuning = match recommended(&ranked).filter(|b| b.algorithm != PACED) {
        Some(best) => tune(opts, &dir, &scenario, &best.algorithm)?,
        None => Vec::new(),
    };
    let advice = Advice {
        dir,
        api: opts.api.describe(),
        standings: ranked,
        matrix,
        reference,
        tuning,
        scenario,
        paced: pace,
    };
    let mut text = advice_text(&opts.api, &plan.base, &advice, true);
    text.push_str(&tuning_text(&advice.tuning, "- "));
    let md = advice.dir.join("advice.md");
    fs::write(&md, text).map_err(Error::io(&md))?;
    let html = advice.dir.join("compare/report.html");
    fs::write(&html, advice.matrix.html_page_led(Some(&lead(&advice))))
        .map_err(Error::io(&html))?;
    if let Some(r) = &advice.reference {
        let html = r.dir.join("report.html");
        let order = r.standings.iter().map(|s| s.algorithm.clone()).collect();
        let lead = Lead {
            heading: "A reference: what a shared store would give".into(),
            lines: vec![
                "These algorithms coordinate through a store every process shares (Redis): \
                 advise recommends them only with --shared-state redis."
                    .into(),
            ],
            list: numbered(&r.standings),
            order,
        };
        fs::write(&html, r.matrix.html_page_led(Some(&lead))).map_err(Error::io(&html))?;
    }
    Ok(advice)
}

/// The arguments of `compare` that runs the first three of the standings again: the paced
/// candidate is a `[[variants]]` entry of `advise.toml`, the others are algorithms.
pub fn rerun_args(advice: &Advice) -> String {
    let top: Vec<&str> = advice
        .standings
        .iter()
        .take(3)
        .map(|s| s.algorithm.as_str())
        .collect();
    let algorithms: Vec<&str> = top.iter().copied().filter(|&a| a != PACED).collect();
    let mut args = Vec::new();
    if algorithms.len() < top.len() {
        args.push(format!("--variants {PACED}"));
    }
    if !algorithms.is_empty() {
        args.push(format!("--algorithms {}", algorithms.join(",")));
    }
    args.join(" ")
}

/// The standings as numbered lines: "1. fair-share: 2/2 fleets met; …".
fn numbered(standings: &[Standing]) -> Vec<String> {
    standings
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {}", i + 1, s.line()))
        .collect()
}

/// What advise's report opens with: the recommendation and why, the ranking rule, and the
/// algorithms in ranking order.
fn lead(advice: &Advice) -> Lead {
    let mut lines = verdict(advice);
    lines.push(format!("Ranking: {}:", ranking_rule()));
    Lead {
        heading: recommendation_line(advice),
        lines,
        list: numbered(&advice.standings),
        order: advice
            .standings
            .iter()
            .map(|s| s.algorithm.clone())
            .collect(),
    }
}

/// `scenario`'s variants or algorithms compared in every fleet over advise's seeds, into `out`.
fn matrix_of(
    opts: &AdviseOptions<'_>,
    scenario: PathBuf,
    variants: Vec<String>,
    algorithms: Vec<String>,
    out: PathBuf,
) -> Result<(compare::Plan, compare::CompareResult), Error> {
    let copts = CompareOptions {
        scenario,
        overrides: Vec::new(),
        variants,
        algorithms,
        seeds: Some(opts.seeds),
        jobs: opts.jobs,
        out: Some(out),
        progress: opts.progress,
        interrupt: opts.interrupt,
        allow_large_output: false,
        shard: None,
    };
    let plan = compare::plan(&copts)?;
    let result = compare::run_compare(&copts, &plan)?;
    // A comparison cut short has no matrix: say so, not that no fleet was named.
    if result.interrupted {
        return Err(Error::Interrupted(Box::new(AdviseError::Interrupted(
            result.dir,
        ))));
    }
    Ok((plan, result))
}

/// One setting of a tunable parameter against the defaults, fleet by fleet.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Tuned {
    pub algorithm: String,
    /// `reserve = 0.0025`.
    pub setting: String,
    pub fleets_met: usize,
    pub default_fleets_met: usize,
    /// Better than the defaults beyond the 95 % intervals: more fleets met, or in some fleet
    /// a higher utilization or fairness whose interval clears the defaults', and in no fleet
    /// worse so.
    pub beats_defaults: bool,
}

/// A parameter's default as a number to scale: a number, or a duration in seconds.
fn scaled(value: &toml::Value, factor: f64) -> Option<toml::Value> {
    match value {
        toml::Value::Float(x) => Some((x * factor).into()),
        toml::Value::Integer(i) => Some(((*i as f64 * factor).round().max(1.0) as i64).into()),
        toml::Value::String(text) => {
            let d = crate::time::parse_duration(text).ok()?;
            let ms = (d.secs() * factor * 1000.0).round().max(1.0) as u64;
            Some(format!("{ms}ms").into())
        }
        _ => None,
    }
}

/// The first algorithm's tunable parameters ([`crate::throttle::TUNABLE`]) at half and twice
/// their defaults, each compared with the defaults in every fleet over the same seeds.
fn tune(
    opts: &AdviseOptions<'_>,
    dir: &Path,
    scenario: &Path,
    algorithm: &str,
) -> Result<Vec<Tuned>, Error> {
    let params = ThrottleConfig::tunable(algorithm);
    let defaults = ThrottleConfig::defaults(algorithm)
        .and_then(|c| toml::Value::try_from(&c).ok())
        .and_then(|v| v.as_table().cloned())
        .unwrap_or_default();
    let switch = |extra: Option<(&str, toml::Value)>| {
        let mut set = toml::Table::new();
        set.insert("clients.*.algorithm".into(), algorithm.into());
        if let Some((p, v)) = extra {
            set.insert(format!("clients.*.{p}"), v);
        }
        set
    };
    let mut variants = vec![("defaults".to_string(), switch(None))];
    // A setting the algorithm refuses (aimd's decrease of 0.5 doubled is 1) is not tried.
    let valid = |p: &str, x: &toml::Value| {
        let mut t = defaults.clone();
        t.remove("algorithm");
        t.insert(p.to_string(), x.clone());
        ThrottleConfig::from_params(algorithm, toml::Value::Table(t))
            .and_then(Result::ok)
            .is_some_and(|c| c.problems().is_empty())
    };
    for p in params {
        let Some(v) = defaults.get(*p) else { continue };
        for factor in [0.5, 2.0] {
            if let Some(x) = scaled(v, factor).filter(|x| valid(p, x)) {
                variants.push((format!("{p} = {x}"), switch(Some((p, x)))));
            }
        }
    }
    if variants.len() == 1 {
        return Ok(Vec::new());
    }
    let text = fs::read_to_string(scenario).map_err(Error::io(scenario))?;
    let mut root: toml::Table = text.parse().expect("advise wrote this scenario");
    let list = variants
        .iter()
        .map(|(name, set)| {
            let mut v = toml::Table::new();
            v.insert("name".into(), name.clone().into());
            v.insert("set".into(), toml::Value::Table(set.clone()));
            toml::Value::Table(v)
        })
        .collect();
    root.insert("variants".into(), toml::Value::Array(list));
    let path = dir.join("tune.toml");
    fs::write(
        &path,
        toml::to_string(&root).expect("a scenario serializes"),
    )
    .map_err(Error::io(&path))?;
    let names = variants.iter().map(|(n, _)| n.clone()).collect();
    let (_, result) = matrix_of(opts, path, names, Vec::new(), dir.join("tune"))?;
    let Some(m) = result.matrix else {
        return Ok(Vec::new());
    };
    let met = |name: &str| {
        m.cells
            .iter()
            .filter(|c| c.variant(name).is_some_and(|v| v.missed == 0))
            .count()
    };
    // A setting whose 429s pass the cap in some fleet fails the user, whatever it gains.
    let within_cap = |name: &str| {
        m.cells.iter().all(|c| {
            c.variant(name)
                .is_none_or(|v| mean(v, "ratio_429") <= refusal_cap())
        })
    };
    let base_met = met("defaults");
    Ok(variants[1..]
        .iter()
        .map(|(name, _)| Tuned {
            algorithm: algorithm.to_string(),
            setting: name.clone(),
            fleets_met: met(name),
            default_fleets_met: base_met,
            beats_defaults: within_cap(name)
                && (met(name) > base_met || clearly_better(&m, name, "defaults")),
        })
        .collect())
}

/// In some fleet a higher utilization or fairness whose interval clears the other's, and in
/// no fleet a lower one that does, nor more 429s beyond the intervals.
fn clearly_better(m: &Matrix, a: &str, b: &str) -> bool {
    let mut better = false;
    for c in &m.cells {
        let (Some(x), Some(y)) = (c.variant(a), c.variant(b)) else {
            continue;
        };
        let range = |v: &VariantStats, k: &str| {
            v.metrics.get(k).and_then(|s| {
                let mean = s.mean?;
                let h = s.half_width.unwrap_or(0.0);
                Some((mean - h, mean + h))
            })
        };
        for (k, higher_is_better) in [
            ("utilization", true),
            ("fairness", true),
            ("ratio_429", false),
        ] {
            let (Some((xl, xh)), Some((yl, yh))) = (range(x, k), range(y, k)) else {
                continue;
            };
            let (up, down) = if higher_is_better {
                (xl > yh, xh < yl)
            } else {
                (xh < yl, xl > yh)
            };
            if down {
                return false;
            }
            better |= up;
        }
    }
    better
}

/// The search's findings as lines.
pub fn tuning_text(tuning: &[Tuned], bullet: &str) -> String {
    let Some(first) = tuning.first() else {
        return String::new();
    };
    let mut out = format!(
        "\nTuning {} (each setting over the same seeds in every fleet; the defaults meet {} \
         fleets):\n",
        first.algorithm, first.default_fleets_met
    );
    for t in tuning {
        let _ = writeln!(
            out,
            "{bullet}{}: {} fleets met{}",
            t.setting,
            t.fleets_met,
            if t.beats_defaults {
                "; better than the defaults beyond the intervals"
            } else {
                ""
            }
        );
    }
    let winners: Vec<&str> = tuning
        .iter()
        .filter(|t| t.beats_defaults)
        .map(|t| t.setting.as_str())
        .collect();
    if winners.is_empty() {
        out.push_str(
            "Tuning does not pay here: no setting beats the defaults beyond the intervals.\n",
        );
    } else {
        let _ = writeln!(out, "Tuning pays here: {}.", winners.join("; "));
    }
    out
}

fn mean(v: &VariantStats, metric: &str) -> f64 {
    v.metrics.get(metric).and_then(|s| s.mean).unwrap_or(0.0)
}

/// Every algorithm's standing, best first by [`ranking_rule`]: those whose 429s stay within
/// [`refusal_cap`] in every fleet, then by fleets met (among those that meet every fleet, the
/// paced candidate last), then by the worst fleet's utilization × fairness (and last by the
/// most 429s in a fleet).
pub fn standings(m: &Matrix) -> Vec<Standing> {
    let mut out: Vec<Standing> = m
        .variant_names()
        .into_iter()
        .map(|a| {
            let mut s = Standing {
                shared_store: coordinates(&a),
                algorithm: a.clone(),
                refuses: false,
                starves: false,
                fleets_met: 0,
                fleets: 0,
                worst_fleet: String::new(),
                worst_score: f64::INFINITY,
                worst_ratio_429: 0.0,
                max_ratio_429: 0.0,
                max_ratio_429_fleet: String::new(),
            };
            for c in &m.cells {
                let Some(v) = c.variant(&a) else {
                    continue;
                };
                s.fleets += 1;
                s.fleets_met += usize::from(v.missed == 0);
                let fair = if c.cell.ends_with("-churn") {
                    mean(v, "fairness_windowed")
                } else {
                    mean(v, "fairness")
                };
                let score = mean(v, "utilization") * fair;
                let ratio = mean(v, "ratio_429");
                if score < s.worst_score {
                    s.worst_score = score;
                    s.worst_fleet = c.cell.clone();
                    s.worst_ratio_429 = ratio;
                }
                if s.max_ratio_429_fleet.is_empty() || ratio > s.max_ratio_429 {
                    s.max_ratio_429 = ratio;
                    s.max_ratio_429_fleet = c.cell.clone();
                }
            }
            s.refuses = s.max_ratio_429 > refusal_cap();
            s.starves = s.worst_score < LEAST_SCORE;
            s
        })
        .collect();
    // A fleet's size, told, holds only while the fleet stays that size: where an algorithm
    // that finds its share meets every target too, it is the better answer.
    let told_and_all_met = |s: &Standing| s.algorithm == PACED && s.fleets_met == s.fleets;
    out.sort_by(|a, b| {
        a.refuses
            .cmp(&b.refuses)
            .then(a.starves.cmp(&b.starves))
            .then(b.fleets_met.cmp(&a.fleets_met))
            .then(told_and_all_met(a).cmp(&told_and_all_met(b)))
            .then(b.worst_score.total_cmp(&a.worst_score))
            .then(a.max_ratio_429.total_cmp(&b.max_ratio_429))
    });
    out
}

/// The algorithm to recommend: the first of the standings, unless its 429s pass
/// [`refusal_cap`] or its worst fleet's utilization × fairness is under [`LEAST_SCORE`] (then
/// every algorithm fails one way or the other, and none is recommended).
pub fn recommended(standings: &[Standing]) -> Option<&Standing> {
    standings.first().filter(|s| !s.refuses && !s.starves)
}

/// "0.12 % ± 0.03" (a percentage), "0.997 ± 0.001" (a fraction), "28 s ± 4" (seconds).
fn shown(s: Option<&Stat>, kind: Shown) -> String {
    let Some(s) = s else { return "-".into() };
    let Some(m) = s.mean else {
        return "never".into();
    };
    let (k, d, unit) = match kind {
        Shown::Percent => (100.0, 2, " %"),
        Shown::Fraction => (1.0, 3, ""),
        Shown::Seconds => (1.0, 0, " s"),
    };
    match s.half_width {
        Some(h) => format!("{:.d$}{unit} ± {:.d$}", m * k, h * k),
        None => format!("{:.d$}{unit}", m * k),
    }
}

#[derive(Clone, Copy)]
enum Shown {
    Percent,
    Fraction,
    Seconds,
}

/// An algorithm's numbers in every fleet, a line each.
fn each_fleet(m: &Matrix, algorithm: &str, bullet: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{algorithm} in each fleet, means ± 95 % t-interval over {} seeds:",
        m.seeds.len()
    );
    for c in &m.cells {
        let Some(v) = c.variant(algorithm) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{bullet}{}: 429s {}, utilization {}, fairness {}, converged after {}{}",
            c.cell,
            shown(v.metrics.get("ratio_429"), Shown::Percent),
            shown(v.metrics.get("utilization"), Shown::Fraction),
            shown(v.metrics.get("fairness"), Shown::Fraction),
            shown(v.metrics.get("convergence_s"), Shown::Seconds),
            if v.missed == 0 {
                ""
            } else {
                " (misses a target)"
            }
        );
    }
    out
}

/// When none is recommended, the closest: the first in the ranking if its 429s stay within
/// [`refusal_cap`] (it was passed over for using under [`LEAST_SCORE`] of the quota), else the
/// one whose most 429s in a fleet are fewest (the first in the ranking among equals).
fn closest(standings: &[Standing]) -> Option<&Standing> {
    standings.first().filter(|s| !s.refuses).or_else(|| {
        standings.iter().reduce(|a, b| {
            if b.max_ratio_429 < a.max_ratio_429 {
                b
            } else {
                a
            }
        })
    })
}

/// "Recommended: fair-share", or "Recommended: none" when [`recommended`] finds none;
/// one that misses a target somewhere says so on the same line, so the headline alone never
/// reads as a pass.
pub fn recommendation_line(advice: &Advice) -> String {
    match advice.recommended() {
        Some(r) => {
            let mut line = format!("Recommended: {}", r.algorithm);
            if r.shared_store {
                line.push_str(" (needs a shared store)");
            }
            if r.fleets_met < r.fleets {
                line.push_str(&format!(
                    " (the closest: it meets the targets in {} of {} fleets)",
                    r.fleets_met, r.fleets
                ));
            }
            line
        }
        None => "Recommended: none".into(),
    }
}

/// Why: whether the recommended algorithm meets every target in every fleet, or that nothing
/// does and which comes closest; and, when they ran beside, what a shared store would give.
pub fn verdict(advice: &Advice) -> Vec<String> {
    let mut out = Vec::new();
    let alone = if advice.standings.iter().any(|s| s.shared_store) {
        ""
    } else {
        " that runs without a shared store"
    };
    let cap = percent(refusal_cap());
    let shared = " It coordinates through the store your processes share (--shared-state).";
    match (advice.recommended(), closest(&advice.standings)) {
        (Some(r), _) if r.fleets_met == r.fleets => {
            out.push(format!(
                "It meets every target in all {} fleets and ranks first.",
                r.fleets
            ));
        }
        (Some(r), _) => out.push(format!(
            "No algorithm{alone} meets every target in every fleet. {} comes closest: it \
             meets them in {} of {} fleets, its 429s stay within {cap} in every fleet (at most \
             {:.2} %, in {}), and its worst fleet, {}, has utilization × fairness {:.3}.",
            r.algorithm,
            r.fleets_met,
            r.fleets,
            r.max_ratio_429 * 100.0,
            r.max_ratio_429_fleet,
            r.worst_fleet,
            r.worst_score
        )),
        (None, Some(c)) if c.refuses => out.push(format!(
            "No algorithm{alone} keeps its 429s within {cap} in every fleet, so none is \
             recommended. The closest, {}, draws the fewest: {:.2} % 429s in {}; it meets \
             the targets in {} of {} fleets.",
            c.algorithm,
            c.max_ratio_429 * 100.0,
            c.max_ratio_429_fleet,
            c.fleets_met,
            c.fleets
        )),
        (None, Some(c)) => out.push(format!(
            "No algorithm{alone} keeps its 429s within {cap} in every fleet and uses at \
             least {LEAST_SCORE} of the quota, fairly shared, in each (utilization × \
             fairness), so none is recommended. The first in the ranking, {}, stays \
             within {cap} (at most {:.2} %, in {}) but its worst fleet, {}, has \
             utilization × fairness {:.3}.",
            c.algorithm,
            c.max_ratio_429 * 100.0,
            c.max_ratio_429_fleet,
            c.worst_fleet,
            c.worst_score
        )),
        (None, None) => {}
    }
    if let (Some(line), Some(true)) = (
        out.first_mut(),
        advice.recommended().map(|r| r.shared_store),
    ) {
        line.push_str(shared);
    }
    if let (Some(line), Some(p)) = (
        out.first_mut(),
        advice
            .paced
            .filter(|_| advice.recommended().is_some_and(|r| r.algorithm == PACED)),
    ) {
        let _ = write!(line, " It is {}. {}", p.describe(), p.holds_only());
    }
    if let Some(r) = &advice.reference {
        let lead = "For reference, with a store all processes share (Redis)";
        let only = "advise recommends these only with --shared-state redis";
        match (recommended(&r.standings), closest(&r.standings)) {
            (Some(b), _) if b.fleets_met == b.fleets => out.push(format!(
                "{lead}, {} meets every target in all {} fleets; {only}.",
                b.algorithm, b.fleets
            )),
            (Some(b), _) => out.push(format!(
                "{lead}, {} comes closest: it meets the targets in {} of {} fleets, at most \
                 {:.2} % 429s; {only}.",
                b.algorithm,
                b.fleets_met,
                b.fleets,
                b.max_ratio_429 * 100.0
            )),
            (None, Some(c)) if c.refuses => out.push(format!(
                "{lead}, no algorithm keeps its 429s within {cap} either (the fewest: {}, {:.2} \
                 % in {}); {only}.",
                c.algorithm,
                c.max_ratio_429 * 100.0,
                c.max_ratio_429_fleet
            )),
            (None, Some(c)) => out.push(format!(
                "{lead}, none both keeps its 429s within {cap} and uses at least {LEAST_SCORE} of \
                 the quota, fairly shared, in every fleet (the first, {}, has utilization × \
                 fairness {:.3} in {}); {only}.",
                c.algorithm, c.worst_score, c.worst_fleet
            )),
            (None, None) => {}
        }
    }
    out
}

/// The advice as text: the recommendation and why, the ranking and its rule, the coordinating
/// algorithms beside when they ran, every fleet's numbers for the recommended algorithm (or
/// the closest), what to paste, and where the rest is.
pub fn advice_text(api: &Api, base: &Scenario, advice: &Advice, markdown: bool) -> String {
    let m = &advice.matrix;
    let standings = &advice.standings;
    let mut out = String::new();
    let bullet = if markdown { "- " } else { "  " };
    let _ = writeln!(
        out,
        "{}advise: {}; fleets {}; {} algorithms × {} fleets × {} seeds, {} each\n",
        if markdown { "# " } else { "" },
        api.describe(),
        m.cells
            .iter()
            .map(|c| c.cell.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        standings.len(),
        m.cells.len(),
        m.seeds.len(),
        base.run.duration
    );
    let _ = writeln!(
        out,
        "{}{}\n",
        if markdown { "## " } else { "" },
        recommendation_line(advice)
    );
    for line in verdict(advice) {
        let _ = writeln!(out, "{line}\n");
    }
    let _ = writeln!(out, "Ranking: {}:\n", ranking_rule());
    // Numbered lines: an ordered list in Markdown as they are, not bullets before numbers.
    let indent = if markdown { "" } else { "  " };
    let list = |out: &mut String, standings: &[Standing]| {
        for line in numbered(standings) {
            let _ = writeln!(out, "{indent}{line}");
        }
    };
    list(&mut out, standings);
    if let Some(r) = &advice.reference {
        let _ = writeln!(
            out,
            "\nFor reference, the algorithms that coordinate through a shared store, ranked \
             the same way (they need one; {}):\n",
            r.dir.display()
        );
        list(&mut out, &r.standings);
    }
    let Some(best) = advice.recommended() else {
        if let Some(closest) = closest(standings) {
            out.push_str(&each_fleet(m, &closest.algorithm, bullet));
        }
        return out;
    };
    out.push_str(&each_fleet(m, &best.algorithm, bullet));
    let fence = if markdown { "```\n" } else { "" };
    let _ = writeln!(out, "\nThe [[clients]] lines to paste into a scenario:\n");
    let _ = write!(out, "{fence}");
    if let Some(p) = advice.paced.filter(|_| best.algorithm == PACED) {
        for line in p.lines() {
            let _ = writeln!(out, "{line}");
        }
    } else {
        let _ = writeln!(out, "    algorithm = \"{}\"", best.algorithm);
    }
    if best.algorithm == "fair-share" && !api.states_quota {
        let _ = writeln!(out, "    quota = {}", api.quota);
        let _ = writeln!(out, "    period = \"{}\"", api.period);
    }
    let _ = write!(out, "{fence}");
    if best.algorithm == "fair-share" {
        let _ = writeln!(
            out,
            "\nFor a port of docs/fair-share.md: the quota Q = {} per {} (R = {:.4} per second){}.",
            api.quota,
            api.period,
            api.rate(),
            if api.states_quota {
                "; the answers state it, so a port reads it from them and needs nothing set"
            } else {
                "; the answers do not state it, so a port must be given Q and the period"
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(states: bool) -> Api {
        let mut server = toml::Table::new();
        server.insert("kind".into(), "gcra".into());
        server.insert("limit".into(), 5.into());
        server.insert("period".into(), "1s".into());
        Api {
            server,
            quota: 5.0,
            period: HumanDuration::from_secs(1),
            states_quota: states,
        }
    }

    #[test]
    fn every_tunable_parameter_is_a_number_or_a_duration_of_its_algorithm() {
        for (name, params) in crate::throttle::TUNABLE {
            assert!(ThrottleConfig::NAMES.contains(name), "{name}");
            let defaults = toml::Value::try_from(ThrottleConfig::defaults(name).unwrap()).unwrap();
            for p in *params {
                let v = defaults
                    .get(p)
                    .unwrap_or_else(|| panic!("{name} has no {p}"));
                assert!(
                    scaled(v, 2.0).is_some(),
                    "{name}.{p} = {v} cannot be scaled"
                );
            }
        }
        assert_eq!(scaled(&"1.6s".into(), 0.5), Some("800ms".into()));
        assert_eq!(scaled(&0.01.into(), 2.0), Some(0.02.into()));
        assert_eq!(
            scaled(&toml::Value::Integer(1), 0.5),
            Some(toml::Value::Integer(1))
        );
        assert_eq!(scaled(&true.into(), 2.0), None);
    }

    /// A matrix of one fleet, `3x2`, each variant's means as given (429s, utilization,
    /// fairness), judged on [`TARGETS`].
    fn matrix(variants: &[(&str, f64, f64, f64)]) -> Matrix {
        let stat = |x: f64| serde_json::json!({"mean": x, "half_width": 0.0, "n": 2, "seeds": 2, "values": [x, x]});
        let variants: Vec<serde_json::Value> = variants
            .iter()
            .map(|&(name, ratio, util, fair)| {
                let expect: Vec<serde_json::Value> = TARGETS
                    .iter()
                    .zip([ratio, util, fair])
                    .map(|(&(metric, lo, hi), x)| {
                        serde_json::json!({"metric": metric, "range": [lo, hi], "value": x, "pass": (lo..=hi).contains(&x)})
                    })
                    .collect();
                let missed = expect.iter().filter(|e| e["pass"] == false).count();
                serde_json::json!({
                    "name": name, "rank": 1, "score": 1.0, "missed": missed, "best": [],
                    "metrics": {"ratio_429": stat(ratio), "utilization": stat(util), "fairness": stat(fair)},
                    "expect": expect,
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "scenario": "advise", "version": "0", "seeds": [1, 2],
            "axes": [{"name": "fleet", "levels": ["3x2"]}],
            "cells": [{"cell": "3x2", "levels": ["3x2"], "comparison": {
                "scenario": "advise", "version": "0", "seeds": [1, 2], "method": "",
                "columns": [], "variants": variants, "ranking": [],
            }}],
        }))
        .unwrap()
    }

    fn order(s: &[Standing]) -> Vec<&str> {
        s.iter().map(|s| s.algorithm.as_str()).collect()
    }

    /// Counting the targets met one by one put an algorithm that ignores refusals (all of
    /// utilization and fairness, 84 % 429s) first, and one with more utilization × fairness
    /// below one with less because the latter met one more target.
    #[test]
    fn an_algorithm_past_the_429_cap_ranks_below_every_one_within_it() {
        let m = matrix(&[
            ("fixed", 0.84, 1.0, 0.997),
            ("slow", 0.0, 0.30, 1.0),
            ("sre-adaptive", 0.5, 0.95, 0.96),
            ("atb", 0.2, 1.0, 0.63),
            ("close", 0.015, 0.96, 0.99),
        ]);
        let s = standings(&m);
        assert_eq!(order(&s), ["close", "slow", "fixed", "sre-adaptive", "atb"]);
        assert!(s[2].refuses && !s[1].refuses && !s[0].refuses);
        assert_eq!(recommended(&s).unwrap().algorithm, "close");
        assert_eq!(s[0].max_ratio_429_fleet, "3x2");
        // Past the cap, nothing is recommended, however well it uses the quota.
        let m = matrix(&[("fixed", 0.84, 1.0, 0.997), ("atb", 0.2, 1.0, 0.63)]);
        let s = standings(&m);
        assert_eq!(order(&s), ["fixed", "atb"]);
        assert!(recommended(&s).is_none());
        // A fleet met outranks a better utilization × fairness.
        let m = matrix(&[("near", 0.004, 0.96, 1.0), ("met", 0.0, 0.97, 0.98)]);
        assert_eq!(order(&standings(&m)), ["met", "near"]);
        assert!(ranking_rule().starts_with(
            "an algorithm whose 429s pass 2 % (4 × the 0.5 % target) in any fleet ranks below"
        ));
    }

    /// An algorithm that leaves most of the quota unused ranks below every one within the cap
    /// that uses it, above those past the cap, and is never recommended.
    #[test]
    fn an_algorithm_that_starves_is_never_recommended() {
        let m = matrix(&[("thin", 0.0, 0.3, 1.0), ("flood", 0.5, 1.0, 1.0)]);
        let s = standings(&m);
        assert_eq!(order(&s), ["thin", "flood"]);
        assert!(s[0].starves && !s[0].refuses && recommended(&s).is_none());
        assert!(
            s[0].line().contains("utilization × fairness under 0.5"),
            "{}",
            s[0].line()
        );
        let m = matrix(&[("thin", 0.0, 0.3, 1.0), ("half", 0.01, 0.6, 0.9)]);
        let s = standings(&m);
        assert_eq!(order(&s), ["half", "thin"]);
        assert_eq!(recommended(&s).unwrap().algorithm, "half");
    }

    /// Where nothing is recommended because the first within the 429 cap uses under half of
    /// the quota, the verdict and the shared-store reference say so, naming that algorithm,
    /// instead of saying every one passes the cap.
    #[test]
    fn a_verdict_over_starving_algorithms_names_the_first_within_the_cap() {
        let blind = matrix(&[("thin", 0.0, 0.3, 1.0), ("flood", 0.5, 1.0, 1.0)]);
        let shared = matrix(&[("interval-lock", 0.0, 0.4, 1.0), ("flood", 0.5, 1.0, 1.0)]);
        let advice = Advice {
            dir: PathBuf::new(),
            api: String::new(),
            standings: standings(&blind),
            matrix: blind,
            reference: Some(Reference {
                standings: standings(&shared),
                matrix: shared,
                dir: PathBuf::new(),
            }),
            tuning: Vec::new(),
            scenario: PathBuf::new(),
            paced: None,
        };
        let v = verdict(&advice);
        assert!(
            v[0].contains("The first in the ranking, thin, stays within 2 %"),
            "{v:?}"
        );
        assert!(
            v[1].contains("none both keeps its 429s within 2 % and uses at least 0.5")
                && v[1].contains("(the first, interval-lock, has utilization × fairness 0.400"),
            "{v:?}"
        );
    }

    /// With a store the processes share, a coordinating algorithm ranks with the rest and is
    /// recommended where it ranks first, flagged as needing the store.
    #[test]
    fn a_coordinating_algorithm_that_ranks_first_is_recommended() {
        let m = matrix(&[
            ("shared-bucket", 0.0, 0.99, 0.99),
            ("fair-share", 0.01, 0.9, 0.9),
        ]);
        let s = standings(&m);
        assert_eq!(order(&s), ["shared-bucket", "fair-share"]);
        assert!(s[0].shared_store);
        assert_eq!(recommended(&s).unwrap().algorithm, "shared-bucket");
        assert!(s[0].line().ends_with("[needs a shared store]"));
    }

    /// The paced candidate is told the fleet: where it and a blind algorithm both meet every
    /// target, the blind one ranks first, whatever the scores; where only it meets them, or
    /// both miss, the usual rule holds.
    #[test]
    fn the_paced_candidate_ranks_below_a_blind_algorithm_that_meets_every_target() {
        let m = matrix(&[(PACED, 0.0, 0.99, 1.0), ("fair-share", 0.001, 0.975, 0.98)]);
        assert_eq!(order(&standings(&m)), ["fair-share", PACED]);
        let m = matrix(&[(PACED, 0.0, 0.99, 1.0), ("fair-share", 0.001, 0.95, 0.98)]);
        assert_eq!(order(&standings(&m)), [PACED, "fair-share"]);
        let m = matrix(&[(PACED, 0.0, 0.96, 1.0), ("fair-share", 0.01, 0.95, 0.98)]);
        assert_eq!(order(&standings(&m)), [PACED, "fair-share"]);
        assert!(ranking_rule().contains("not told the fleet"));
    }

    #[test]
    fn the_coordinating_algorithms_are_those_advise_leaves_out_without_a_shared_store() {
        let shared = coordinating();
        assert!(shared.contains(&"shared-bucket"), "{shared:?}");
        let blind = algorithms(false);
        for a in &shared {
            assert!(!blind.contains(a), "{a}");
        }
        assert_eq!(blind.len() + shared.len(), algorithms(true).len());
    }

    #[test]
    fn fleets_parse_and_refuse_nonsense() {
        assert_eq!(
            "12x4".parse::<Fleet>().unwrap(),
            Fleet {
                processes: 12,
                threads: 4
            }
        );
        for bad in ["12", "0x4", "4x0", "ax4", "10000x2", "-1x2"] {
            assert!(bad.parse::<Fleet>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_duration_holds_twenty_periods_of_the_largest_fleet() {
        let fleets = [
            Fleet {
                processes: 200,
                threads: 1,
            },
            Fleet {
                processes: 1,
                threads: 1,
            },
        ];
        // 200 threads at 5/s: a thread's period is 40 s, twenty of them 800 s; 30 min is more.
        assert_eq!(duration(&api(true), &fleets).secs(), 1800.0);
        let big = [Fleet {
            processes: 100,
            threads: 10,
        }];
        // 1000 threads: 200 s each, 4000 s.
        assert_eq!(duration(&api(true), &big).secs(), 4020.0);
        let mut hourly = api(true);
        hourly.quota = 4500.0;
        hourly.period = HumanDuration::from_secs(3600);
        assert_eq!(duration(&hourly, &fleets).secs(), 5.0 * 3600.0);
    }

    #[test]
    fn the_oracle_never_and_coordinated_algorithms_only_with_shared_state() {
        let blind = algorithms(false);
        assert!(blind.contains(&"fair-share") && blind.contains(&"schneems"));
        assert!(!blind.contains(&"oracle") && !blind.contains(&"none"));
        assert!(!blind.contains(&"shared-bucket") && !blind.contains(&"aatb"));
        let shared = algorithms(true);
        assert!(shared.contains(&"shared-bucket") && shared.contains(&"aatb"));
        assert!(!shared.contains(&"oracle") && !shared.contains(&"independent"));
        assert!(!blind.contains(&"independent"));
    }

    /// Ctrl-C during advise said "name at least one fleet" and exited 2.
    #[test]
    fn an_interrupted_advise_says_so_and_exits_130() {
        let progress = Progress::new(true);
        let stop = AtomicBool::new(true);
        let dir = tempfile::tempdir().unwrap();
        let opts = AdviseOptions {
            api: api(true),
            fleets: vec![Fleet {
                processes: 1,
                threads: 2,
            }],
            churn: false,
            shared_state: false,
            seeds: 2,
            seed: 7,
            duration: Some(HumanDuration::from_secs(60)),
            jobs: 1,
            out: Some(dir.path().join("a")),
            progress: &progress,
            interrupt: &stop,
        };
        let e = advise(&opts)
            .err()
            .expect("an interrupted advise gives no advice");
        assert_eq!(e.exit_code(), crate::exit::INTERRUPTED, "{e}");
        assert!(
            e.to_string().starts_with("interrupted: no advice written"),
            "{e}"
        );
    }

    #[test]
    fn the_scenario_has_a_fleet_level_per_fleet_and_tells_the_quota_only_when_unstated() {
        let progress = Progress::new(true);
        let stop = AtomicBool::new(false);
        let opts = |states| AdviseOptions {
            api: api(states),
            fleets: vec![
                Fleet {
                    processes: 2,
                    threads: 3,
                },
                Fleet {
                    processes: 4,
                    threads: 1,
                },
            ],
            churn: true,
            shared_state: false,
            seeds: 3,
            seed: 7,
            duration: None,
            jobs: 1,
            out: None,
            progress: &progress,
            interrupt: &stop,
        };
        let pace = |o: &AdviseOptions<'_>| paced(&o.api, &o.fleets);
        let told = opts(true);
        let text = scenario_text(&told, pace(&told).as_ref());
        let s = crate::scenario::parse_scenario(&text, "advise.toml", "advise", &[], 1).unwrap();
        assert_eq!(s.axes.names(), ["2x3", "4x1", "2x3-churn"]);
        assert!(!text.contains("quota ="), "{text}");
        // Beside the algorithms, `fixed` paced for the largest fleet's 6 threads.
        assert_eq!(s.variants.len(), 1);
        assert_eq!(s.variants[0].name, PACED);
        let untold = opts(false);
        let text = scenario_text(&untold, pace(&untold).as_ref());
        assert!(text.contains("quota = 5.0"), "{text}");
        let churn = crate::scenario::parse_scenario(
            &text,
            "advise.toml",
            "advise",
            &[crate::scenario::cell_override("2x3-churn")],
            1,
        )
        .unwrap();
        // The largest fleet (2x3): one process stays, the other comes and goes.
        assert_eq!(churn.clients.len(), 2);
        assert_eq!(churn.clients[0].common.processes, 1);
        assert!(churn.clients[1].common.stop.is_some());
        assert_eq!(churn.expect["fairness_windowed"], [0.97, 1.0]);
    }
}
