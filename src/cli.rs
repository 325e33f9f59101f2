//! Command-line definitions (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::compare::ShardSpec;
use crate::exit;
use crate::limiter::Headers;
use crate::scenario::{Mode, Override, OverrideError};
use crate::time::{HumanDuration, parse_duration};

#[derive(Debug, Parser)]
#[command(
    name = "throttle-sim",
    version,
    about = "Simulate many rate-limited API clients sharing one token, and measure how well they throttle themselves",
    after_help = exit::help_all()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one scenario and write its results folder.
    Run(RunArgs),
    /// Run variants of a scenario over the same seeds and rank them.
    Compare(CompareArgs),
    /// Draw the charts and report.html of a results folder again from its CSV files.
    Plot(PlotArgs),
    /// Print every client algorithm and server kind with its parameters and defaults.
    List(ListArgs),
    /// Run scenarios and print only their [expect] verdicts (exit 1 if one is missed).
    Check(CheckArgs),
    /// Which client algorithm to use for one API and fleet: every one run in every fleet, ranked.
    Advise(AdviseArgs),
    /// Learn the server's rule from a trace (a results folder's requests.csv) into fit.toml,
    /// with [expect] ranges; exit 5 when the trace cannot tell it (nothing written).
    Fit(FitArgs),
    /// Serve the mock rate-limited API over HTTP until Ctrl-C (--record: a run folder of it).
    Serve(ServeArgs),
    /// Run the same clients against any HTTP endpoint and record what they did.
    Client(ClientArgs),
    /// Draw API shapes and fleets at random into an [[axes]] scenario, a cell per shape
    /// (docs/shapes.md), for `check` and `compare`.
    Shapes(ShapesArgs),
    /// One client process of a live run (started by `run --mode live`; reads stdin).
    #[command(hide = true)]
    Worker,
}

/// What `compare --help` says after the flags.
const COMPARE_HELP: &str = "Variants: without --variants or --algorithms, the scenario as written \
(`base`) and every [[variants]] entry. --variants picks some (`base` included by name); \
--algorithms adds one variant per algorithm with every client group switched to it, dropping \
the parameters it does not take (groups with keep_algorithm = true, co-tenants that are part of \
the case, keep theirs). --set changes the base every variant starts from. Seeds are \
the scenario's (or --seed) and the ones after it, the same for every variant.";

#[derive(Debug, Args)]
#[command(
    override_usage = "throttle-sim compare [OPTIONS] <SCENARIO>\n       \
throttle-sim compare [OPTIONS] <SCENARIO> --shard <K/N> --out <DIR>\n       \
throttle-sim compare --merge <DIR>... [--out <DIR>]\n       \
throttle-sim compare --runs <DIR>... [--out <DIR>]",
    mut_arg("seed", |a| a.help("The first seed: every variant runs on it and the ones after it (default: the scenario's [run] seed, else a fresh one); at most 2^63 − 1")),
    mut_arg("json", |a| a.help("Print the comparison (compare.json) to stdout instead of the table")),
    after_help = format!("{COMPARE_HELP}\n\n{}", exit::help(&[exit::OK, exit::EXPECT_MISSED, exit::BAD_INPUT, exit::FAILED, exit::INTERRUPTED]))
)]
pub struct CompareArgs {
    /// The scenario file (TOML).
    #[arg(required_unless_present_any = ["runs", "merge"])]
    pub scenario: Option<PathBuf>,
    /// Put existing run folders side by side instead (e.g. one `serve --record` wrote next to
    /// a `run`'s), without running anything.
    #[arg(
        long,
        num_args = 1..,
        value_name = "DIR",
        conflicts_with_all = ["scenario", "algorithms", "variants", "seeds", "duration", "set", "seed"]
    )]
    pub runs: Vec<PathBuf>,
    /// Run only slice K of N of the comparison's runs and keep their rows in --out, for
    /// `compare --merge`; `auto/N` takes K from JOB_COMPLETION_INDEX (a Kubernetes Indexed
    /// Job) or SLURM_ARRAY_TASK_ID (a Slurm job array). Needs a fixed seed.
    #[arg(long, value_name = "K/N", value_parser = parse_shard, conflicts_with = "runs")]
    pub shard: Option<ShardSpec>,
    /// Put the folders of `compare --shard` slices together into the one comparison an
    /// unsharded `compare` writes (every slice of one scenario, version and seed set).
    #[arg(
        long,
        num_args = 1..,
        value_name = "DIR",
        conflicts_with_all = ["scenario", "runs", "shard", "algorithms", "variants", "seeds", "duration", "set", "seed", "cell"]
    )]
    pub merge: Vec<PathBuf>,
    /// Algorithms to run every client group with, e.g. `schneems,fixed`.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub algorithms: Vec<String>,
    /// The scenario's [[variants]] to run, by name (`base`: the scenario as written).
    #[arg(long, value_delimiter = ',', value_name = "X,Y")]
    pub variants: Vec<String>,
    /// Seeds per variant (default: the scenario's `[run] seeds`, else 5).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub seeds: Option<u32>,
    /// Runs at a time (default: the number of cores).
    #[arg(long, short, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// A file with [[axes]]: the one cell to compare (without it, every cell), its level on each axis joined by `/`
    /// (e.g. `5x5/gcra_5ps`; `throttle-sim check FILE` lists them all).
    #[arg(long, value_name = "LEVEL/LEVEL")]
    pub cell: Option<String>,
    #[command(flatten)]
    pub scenario_flags: ScenarioFlags,
    /// How long the clients run, e.g. 90s, 1h30m. Short for `--set run.duration=D`: give one
    /// of the two, not both.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<HumanDuration>,
    #[command(flatten)]
    pub output: OutputFlags,
}

/// `--set`, shared by every command that builds a scenario; each may word its help its own
/// way (`mut_arg("set", …)`).
#[derive(Debug, Args)]
pub struct SetFlags {
    /// Override any scenario value: `--set server.limit=600 --set clients.*.jitter=0`.
    #[arg(long = "set", value_name = "PATH=VALUE", value_parser = parse_override)]
    pub set: Vec<Override>,
}

/// `--set` and `--seed`, shared by the commands that run a scenario of their own.
#[derive(Debug, Args)]
pub struct ScenarioFlags {
    #[command(flatten)]
    pub sets: SetFlags,
    /// The seed of every random choice (default: the scenario's, else a fresh one). At most
    /// 2^63 − 1, the largest integer a TOML file can record. Short for `--set run.seed=N`:
    /// give one of the two, not both.
    #[arg(long, value_parser = parse_seed)]
    pub seed: Option<u64>,
}

/// A value given both by a named flag and by the `--set` that flag is short for.
#[derive(Debug, thiserror::Error)]
#[error(
    "{flag} and --set {set} both set {path}; give one of them (the flag is short for that --set)"
)]
pub struct GivenTwice {
    flag: String,
    set: String,
    path: String,
}

impl ScenarioFlags {
    /// Refuse `--seed`, and the command's `--duration` when given, beside a `--set` of
    /// `run.seed` or `run.duration`: which one won was never said (the flag did, silently).
    pub fn refuse_given_twice(&self, duration: Option<HumanDuration>) -> Result<(), GivenTwice> {
        let flags = [
            ("run.seed", self.seed.map(|s| format!("--seed {s}"))),
            ("run.duration", duration.map(|d| format!("--duration {d}"))),
        ];
        for (path, flag) in flags {
            let Some(flag) = flag else { continue };
            if let Some(o) = self.sets.set.iter().find(|o| o.path.join(".") == path) {
                return Err(GivenTwice {
                    flag,
                    set: o.raw.clone(),
                    path: path.to_string(),
                });
            }
        }
        Ok(())
    }

    /// `--set`s, then `--seed` and `--duration` as overrides.
    pub fn overrides(&self, duration: Option<HumanDuration>) -> Vec<Override> {
        run_overrides(&self.sets.set, self.seed, duration)
    }
}

/// Where the results go and what the terminal is told, shared by the commands that write a
/// results folder.
#[derive(Debug, Args)]
pub struct OutputFlags {
    /// The results folder (must be new or empty); default a new one under results/, named
    /// after the scenario (or `client`) and the UTC time.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress and no summary table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the summary (summary.json) to stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write series.csv even when it would pass 2 GB (a fine sample_every over a long run).
    #[arg(long)]
    pub allow_large_output: bool,
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK, exit::BAD_INPUT, exit::FAILED, exit::INTERRUPTED]))]
#[command(mut_arg("set", |a| a.help("Override scenario values, as for `run`: `--set server.limit=600`")))]
pub struct ServeArgs {
    /// The address to listen on, `host:port` (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:9292", value_parser = parse_listen_addr)]
    pub addr: std::net::SocketAddr,
    /// The server's rule (default gcra, or the scenario's).
    #[arg(long, value_enum, conflicts_with = "scenario")]
    pub rule: Option<RuleArg>,
    /// Requests per period (a token bucket's refill per period; GCRA's bucket size too):
    /// default 4500, or the scenario's.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_whole)]
    pub limit: Option<u64>,
    /// The period (a window rule's window), e.g. 1s, 1m, 1h (default 1h, or the scenario's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub period: Option<HumanDuration>,
    /// A token bucket's size (default: the limit).
    #[arg(long, value_parser = parse_whole, conflicts_with = "scenario")]
    pub burst: Option<u64>,
    /// Tokens at the start (default: full).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_whole)]
    pub initial: Option<u64>,
    /// Run the limit this many times faster than real time (default 1, or the scenario's).
    #[arg(long)]
    pub time_scale: Option<f64>,
    /// Take the `[server]` table (any kind, latency) and `time_scale` from a scenario file.
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub sets: SetFlags,
    /// Wait this long before each answer (virtual time; default 0s, or the scenario's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub latency: Option<HumanDuration>,
    /// The dialect of the answers' rate-limit fields: full (every field: RateLimit-*,
    /// Retry-After, retry-after-ms; the default, or the scenario's), ietf, heroku, github or
    /// none (docs/headers.md).
    #[arg(long, value_name = "DIALECT", value_parser = parse_headers)]
    pub headers: Option<Headers>,
    /// Close connections that take longer than this to send a request's headers.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration_arg)]
    pub header_timeout: HumanDuration,
    /// Serving threads, each with its own listener (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, RSA or EC).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Keep the GCRA state in Redis, e.g. redis://127.0.0.1:6379: every instance given the
    /// same url, namespace and rule shares one limit.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Instances with the same namespace (and rule) share buckets; others never do.
    #[arg(
        long,
        default_value = "default",
        value_name = "NAME",
        requires = "store"
    )]
    pub store_namespace: String,
    /// Record every client's requests and, on stop, write the run folder a `run` writes
    /// (series.csv, summary.json, charts, report.html) into DIR (new or empty).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// With --record: one series.csv row per client per this interval of virtual time
    /// (default: the scenario's run.sample_every, else 10s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg, requires = "record")]
    pub sample_every: Option<HumanDuration>,
    /// With --record: also write requests.csv, one row per answered request with what its
    /// rate-limit fields told (what `throttle-sim fit DIR` reads).
    #[arg(long, requires = "record")]
    pub log_requests: bool,
    /// Stop after this much virtual time (real time × the time scale), as Ctrl-C would.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<HumanDuration>,
    /// No status line on the terminal (the live page at /_dashboard is still served).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK, exit::EXPECT_MISSED, exit::BAD_INPUT, exit::FAILED, exit::NOTHING_WORKED, exit::INTERRUPTED]))]
#[command(mut_arg("set", |a| a.help("Override a value of the clients' scenario: `--set clients.*.initial_sleep=4s` (clients.*, run.*, store.* and expect.*; the target's limits are its own)")))]
#[command(mut_arg("seed", |a| a.help("The seed of the clients' random choices (jitter; default: a fresh one, recorded in scenario.toml); at most 2^63 − 1")))]
pub struct ClientArgs {
    /// The endpoint, an http:// or https:// URL; every request goes to it (a GET unless
    /// --method says otherwise).
    #[arg(long, value_name = "URL")]
    pub target: String,
    /// The throttling algorithm (`throttle-sim list` shows every one and its parameters; set
    /// them with --set clients.*.NAME=VALUE).
    #[arg(long, default_value = "schneems")]
    pub algorithm: String,
    /// Client processes to start, each a real OS process with its own throttle.
    #[arg(long, default_value_t = 1)]
    pub processes: u32,
    /// Threads per process: each sends its requests one at a time, sharing its process's
    /// throttle.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// How long the clients run.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_duration_arg)]
    pub duration: HumanDuration,
    /// A header sent with every request, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// The HTTP method of every request (GET, POST, PUT, PATCH, DELETE, …).
    #[arg(long, short = 'X', default_value = "GET")]
    pub method: String,
    /// The body every request carries, as text (set its type with --header 'Content-Type: …').
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// The body every request carries, the bytes of FILE (at most 16 MiB).
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    #[command(flatten)]
    pub scenario_flags: ScenarioFlags,
    /// One series.csv row per thread per this interval (default: the duration / 200, between
    /// 100ms and 10s, at most the duration).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub sample_every: Option<HumanDuration>,
    /// A request that takes longer than this counts as an error.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration_arg)]
    pub timeout: HumanDuration,
    /// Trust the CA certificates in this PEM file too (an https:// test server's CA, or its
    /// self-signed certificate), beside the usual public roots.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputFlags,
    /// Also write requests.csv, one row per request.
    #[arg(long)]
    pub log_requests: bool,
    /// Keep the clients' shared state in Redis, e.g. redis://127.0.0.1:6379 (needed by
    /// interval-lock and window-queue over several processes).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The API's limit as you know it: this many requests per --period. Utilization is
    /// measured against it (else against the policy the answers state), and an algorithm that
    /// takes a quota (fair-share) is told it unless --set says otherwise.
    #[arg(long, value_name = "N", requires = "period", value_parser = clap::value_parser!(u64).range(1..=i64::MAX as u64))]
    pub quota: Option<u64>,
    /// The period of --quota, e.g. 1s, 1m, 1h.
    #[arg(long, value_name = "DURATION", requires = "quota", value_parser = parse_positive_duration_arg)]
    pub period: Option<HumanDuration>,
}

impl CompareArgs {
    /// `--set`s, then `--seed` and `--duration` as overrides.
    pub fn overrides(&self) -> Vec<Override> {
        let mut all = self.scenario_flags.overrides(self.duration);
        all.extend(cell_override(self.cell.as_deref()));
        all
    }
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK, exit::BAD_INPUT, exit::FAILED]))]
pub struct PlotArgs {
    /// A results folder of `run` or `compare`.
    pub dir: PathBuf,
    /// Print nothing.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK]))]
pub struct ListArgs {
    /// Print the listing as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK, exit::EXPECT_MISSED, exit::BAD_INPUT, exit::FAILED, exit::INTERRUPTED]))]
#[command(mut_arg("set", |a| a.help("Override any value in every scenario: `--set server.limit=600`")))]
pub struct CheckArgs {
    /// Scenario files (TOML), each with an [expect] table.
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// A file with [[axes]]: the one cell to check (without it, every cell), its level on each axis joined by `/`
    /// (e.g. `5x5/gcra_5ps`; `throttle-sim check FILE` lists them all).
    #[arg(long, value_name = "LEVEL/LEVEL")]
    pub cell: Option<String>,
    #[command(flatten)]
    pub sets: SetFlags,
    /// Judge [expect] on the mean over this many seeds (the scenario's seed and the ones after
    /// it, as compare uses them); default: the scenario's `[run] seeds`, else 1.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub seeds: Option<u32>,
    /// Runs at a time (default: the number of cores).
    #[arg(long, short, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// No progress.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the verdicts as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the verdicts as JUnit XML to FILE, for CI systems to show as tests: one
    /// test case per scenario (per cell of a file with [[axes]]), a missed range a failure
    /// naming the metrics that missed with their values and ranges. Apache Ant's shape, valid
    /// against its JUnit schema.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Accept scenarios without an [expect] table (run, reported, judging nothing); without
    /// it such a file makes check exit 2, so a CI step never passes having checked nothing.
    #[arg(long)]
    pub allow_empty: bool,
}

/// What `shapes --help` says after the flags.
const SHAPES_HELP: &str = "Each shape is an API (gcra, token-bucket, fixed-window, sliding-window, \
sliding-window-counter, leaky-bucket or stacked; its limit, period, burst, start, header dialect \
and latency) and a fleet (processes, threads, churn), long enough to settle and judged on the \
API-shape matrix's targets over 3 seeds; docs/shapes.md gives every draw's range and law. The \
same count and seed write the same file byte for byte, and shape N of a seed is the same \
whatever the count. Run them: `throttle-sim check FILE`, `throttle-sim compare FILE \
--algorithms …`, or scripts/shapes.py for the pass bar.";

#[derive(Debug, Args)]
#[command(after_help = format!("{SHAPES_HELP}\n\n{}", exit::help(&[exit::OK, exit::BAD_INPUT, exit::FAILED])))]
pub struct ShapesArgs {
    /// How many shapes (cells) to draw.
    #[arg(long, default_value_t = 300, allow_hyphen_values = true, value_parser = clap::value_parser!(u32).range(1..=crate::shapes::MAX_COUNT as i64))]
    pub count: u32,
    /// The seed of the draws (default: a fresh one, named in the file's first line); at most
    /// 2^63 − 1. The shapes are then judged on this seed and the two after it.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// The scenario file to write (replaced if it exists); default: stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK, exit::BAD_INPUT, exit::CANNOT_TELL]))]
pub struct FitArgs {
    /// A results folder with requests.csv (`client --log-requests`, `run --log-requests`).
    pub dir: PathBuf,
    /// Where to write the fitted scenario (default: DIR/fit.toml).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the scenario without [expect] ranges, without running it: quicker where only
    /// the rule is wanted (`check` then has nothing to judge in it).
    #[arg(long)]
    pub no_expect: bool,
    /// Print nothing but errors (the exit code says whether the rule was told).
    #[arg(long, short, conflicts_with = "json")]
    pub quiet: bool,
    /// Print the fit as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The server rules `advise --rule` takes: those that state a rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RuleArg {
    Gcra,
    TokenBucket,
    FixedWindow,
    SlidingWindow,
}

impl RuleArg {
    pub fn kind(self) -> &'static str {
        match self {
            RuleArg::Gcra => "gcra",
            RuleArg::TokenBucket => "token-bucket",
            RuleArg::FixedWindow => "fixed-window",
            RuleArg::SlidingWindow => "sliding-window",
        }
    }
}

/// What `advise --help` says after the flags.
/// `advise --help`'s text after the options: the ranking is `advise::ranking_rule()`, the
/// sentence advise prints over its own table, so the two cannot drift apart.
fn advise_help() -> String {
    format!(
        "The API comes from --scenario FILE (its [server] table) or from the flags (--rule, \
         --limit, --period, --burst, --initial, --headers, --latency). Every algorithm a client \
         could run (the coordinating ones only with --shared-state redis) runs in every fleet \
         over --seeds seeds. Ranking: {}. The first is recommended unless its 429s pass {} or \
         its worst fleet's utilization × fairness is under {} (then nothing is). The results \
         folder holds advise.toml (the scenario that was run: run or compare it again), \
         advice.md, compare/ (the matrix comparison with its report) and, when the coordinating \
         algorithms ran beside, shared-state/.\n\n{}",
        crate::advise::ranking_rule(),
        crate::advise::percent(crate::advise::refusal_cap()),
        crate::advise::LEAST_SCORE,
        exit::help(&[exit::OK, exit::BAD_INPUT, exit::FAILED, exit::INTERRUPTED])
    )
}

#[derive(Debug, Args)]
#[command(after_help = advise_help())]
pub struct AdviseArgs {
    /// Take the API's [server] table from this scenario file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["rule", "limit", "period", "burst", "initial"])]
    pub scenario: Option<PathBuf>,
    /// The server's rule.
    #[arg(long, value_enum)]
    pub rule: Option<RuleArg>,
    /// Requests per period (a token bucket's refill per period); required without --scenario.
    #[arg(long, required_unless_present = "scenario", value_parser = parse_whole)]
    pub limit: Option<u64>,
    /// The period (a window rule's window), e.g. 1s, 1m, 1h, 24h (default 1h).
    #[arg(long, value_name = "DURATION", alias = "window", value_parser = parse_duration_arg)]
    pub period: Option<HumanDuration>,
    /// A token bucket's size (default: the limit).
    #[arg(long, value_parser = parse_whole)]
    pub burst: Option<u64>,
    /// Tokens at the start (default: full).
    #[arg(long, value_parser = parse_whole)]
    pub initial: Option<u64>,
    /// The dialect of the answers' rate-limit fields: full, ietf, heroku, github, fastify or
    /// none (docs/headers.md; default: the scenario's, else full).
    #[arg(long, value_name = "DIALECT", value_parser = parse_headers)]
    pub headers: Option<Headers>,
    /// How long an answer takes (default: the scenario's, else 20ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub latency: Option<HumanDuration>,
    /// The fleets: PROCESSESxTHREADS, several for a fleet that varies (--fleet 1x1,12x4,50x1).
    #[arg(long, value_delimiter = ',', value_name = "PxT", required = true)]
    pub fleet: Vec<crate::advise::Fleet>,
    /// Add a fleet whose processes come and go (half of the largest fleet's stay throughout).
    #[arg(long)]
    pub churn: bool,
    /// The processes can share a store (`redis`): the algorithms that coordinate through one
    /// rank with the rest and may be recommended. Without it they run only when nothing meets
    /// the targets in every fleet, beside the ranking, as a reference never recommended.
    #[arg(long, value_name = "STORE", value_parser = ["redis"])]
    pub shared_state: Option<String>,
    /// Seeds per algorithm and fleet.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=1000))]
    pub seeds: u32,
    /// The first seed.
    #[arg(long, default_value_t = 42, value_parser = parse_seed)]
    pub seed: u64,
    /// How long each run is (default: 20 of a thread's fair-share periods in the largest
    /// fleet, at least 30 minutes, 5 hours for hourly quotas, 48 for daily ones).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<HumanDuration>,
    /// Runs at a time (default: the number of cores).
    #[arg(long, short, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// The results folder (must be new or empty); default results/advise-<UTC time>.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress; only the advice.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the advice as JSON: `recommended` (null when nothing is), `why`, the `ranking`
    /// rule, the `standings`, and `shared_state_reference` (the coordinating algorithms', when
    /// they ran beside).
    #[arg(long)]
    pub json: bool,
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    match s.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!("`{s}` is not a header; write `Name: value`")),
    }
}

#[derive(Debug, Args)]
#[command(after_help = exit::help(&[exit::OK, exit::EXPECT_MISSED, exit::BAD_INPUT, exit::FAILED, exit::NOTHING_WORKED, exit::INTERRUPTED]))]
#[command(mut_arg("seed", |a| a.help("The seed of every random choice (default: the scenario's [run] seed, else a fresh one); at most 2^63 − 1")))]
pub struct RunArgs {
    /// The scenario file (TOML).
    pub scenario: PathBuf,
    /// A file with [[axes]]: the one cell to run (required for such a file), its level on each axis joined by `/`
    /// (e.g. `5x5/gcra_5ps`; `throttle-sim check FILE` lists them all).
    #[arg(long, value_name = "LEVEL/LEVEL")]
    pub cell: Option<String>,
    #[command(flatten)]
    pub scenario_flags: ScenarioFlags,
    /// How long the clients run, e.g. 90s, 1h30m. Short for `--set run.duration=D`: give one
    /// of the two, not both.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub duration: Option<HumanDuration>,
    /// sim (virtual time, the default) or live.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    #[command(flatten)]
    pub output: OutputFlags,
    /// Also write requests.csv, one row per request (large for long runs).
    #[arg(long)]
    pub log_requests: bool,
    /// Skip charts/ and report.html (`throttle-sim plot DIR` can draw them later).
    #[arg(long)]
    pub no_charts: bool,
    /// Keep the clients' shared state in Redis (live runs), e.g. redis://127.0.0.1:6379;
    /// the same as `[store] url` in the scenario.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ModeArg {
    Sim,
    Live,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Sim => Mode::Sim,
            ModeArg::Live => Mode::Live,
        }
    }
}

/// A whole number of 0 or more; `-1` is named as a bad value, not taken for a flag.
/// A whole number a scenario can hold: TOML's integers stop at 2^63 − 1, and a larger one was
/// silently taken as that (`--limit 18446744073709551615` ran with 9223372036854775807).
fn parse_whole(s: &str) -> Result<u64, String> {
    let v: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number of 0 or more"))?;
    if i64::try_from(v).is_err() {
        return Err(format!(
            "`{s}` is past the largest whole number a scenario holds ({})",
            i64::MAX
        ));
    }
    Ok(v)
}

/// `host:port`, the host a name (`localhost`) or an address; an IPv4 address is preferred
/// when the name has both.
fn parse_listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    if !s.contains(':') {
        return Err(format!(
            "`{s}` has no port; write host:port, e.g. 127.0.0.1:9292 or localhost:9292"
        ));
    }
    let all: Vec<_> = s
        .to_socket_addrs()
        .map_err(|e| format!("`{s}`: cannot resolve the host ({e})"))?
        .collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| format!("`{s}`: the host has no address"))
}

fn parse_headers(s: &str) -> Result<Headers, String> {
    toml::Value::String(s.to_string()).try_into().map_err(|_| {
        format!(
            "`{s}`: expected one of: {}{}",
            Headers::NAMES.join(", "),
            crate::suggest::did_you_mean(s, Headers::NAMES.iter().copied())
        )
    })
}

fn parse_override(s: &str) -> Result<Override, String> {
    s.parse().map_err(|e: OverrideError| e.to_string())
}

fn parse_duration_arg(s: &str) -> Result<HumanDuration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

fn parse_positive_duration_arg(s: &str) -> Result<HumanDuration, String> {
    let d = parse_duration_arg(s)?;
    if d.nanos() == 0 {
        return Err("must be longer than zero".to_string());
    }
    Ok(d)
}

impl RunArgs {
    /// The command-line flags as overrides, after the `--set`s so the named flags win.
    pub fn overrides(&self) -> Vec<Override> {
        let mut all = self.scenario_flags.overrides(self.duration);
        all.extend(cell_override(self.cell.as_deref()));
        let mut push = |path: &str, value: toml::Value| {
            all.push(Override::new(path, value).expect("fixed paths are valid"));
        };
        if let Some(m) = self.mode {
            let name = match m {
                ModeArg::Sim => "sim",
                ModeArg::Live => "live",
            };
            push("run.mode", toml::Value::String(name.into()));
        }
        if let Some(url) = &self.store {
            push("store.url", toml::Value::String(url.clone()));
        }
        all
    }
}

fn parse_shard(s: &str) -> Result<ShardSpec, String> {
    s.parse()
        .map_err(|e: crate::compare::ShardError| e.to_string())
}

/// A seed: at most 2^63 − 1, the largest integer a TOML file can record.
fn parse_seed(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) if i64::try_from(v).is_ok() => Ok(v),
        _ => Err(format!(
            "`{s}` is not a seed: a whole number from 0 to {}",
            i64::MAX
        )),
    }
}

/// `--set`s, then `--seed` and `--duration` as the overrides they are, so the named flags win.
/// `--cell`, when given, as the override it stands for.
fn cell_override(cell: Option<&str>) -> Option<Override> {
    cell.map(crate::scenario::cell_override)
}

fn run_overrides(
    set: &[Override],
    seed: Option<u64>,
    duration: Option<HumanDuration>,
) -> Vec<Override> {
    let mut all = set.to_vec();
    if let Some(seed) = seed {
        let v = i64::try_from(seed).expect("parse_seed keeps seeds within i64");
        all.push(Override::from_flag(
            "--seed",
            &seed.to_string(),
            "run.seed",
            toml::Value::Integer(v),
        ));
    }
    if let Some(d) = duration {
        let v = toml::Value::String(d.to_string());
        all.push(Override::from_flag(
            "--duration",
            &d.to_string(),
            "run.duration",
            v,
        ));
    }
    all
}
