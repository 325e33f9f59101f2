//! The two runs every limiter configuration gets, and what they are held to.
//!
//! - `fair-share`, 3 processes × 4 threads for four of the limiter's periods: at most
//!   [`COUNTED`]'s share of 429s, at least its utilization (2xx over the most the configured
//!   rules allow from the first request to the end), and at least its fairness (Jain's index
//!   over the processes' 2xx sent after the first two periods, once the clients have had time
//!   to settle). A limiter that sends no count (nginx) is held to [`UNCOUNTED`], and the
//!   client is told its quota.
//! - `fixed`, 2 threads about 22 % faster than the limit for three periods, then `fit`: it must
//!   name the rule, its limit and its period within 10 %, or, where the limiter says nothing
//!   the trace could show it by, say it cannot tell.
//!
//! The two run at once, each against its own instance of the limiter, so that a configuration
//! takes the real time of the longer one.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::harness::{self, Limiter};

/// One rule of a limiter, as configured: what `fit` should find, and the most 2xx it lets
/// through, so that a run's 2xx can be divided by it.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// nginx's `limit_req`: a bucket of `size` requests (`burst` + 1) that drains
    /// `per_second`. With `nodelay` the excess up to the burst is answered at once; without,
    /// it waits in line and is answered at the rate. Either way a request is admitted (not
    /// refused) when the bucket has room, so counted by when they were sent, the 2xx are the
    /// same: the line's last few are answered a fraction of a second after the run's end,
    /// within the second the client waits for them.
    Bucket { size: f64, per_second: f64 },
    /// `limit` per `window` seconds, a key's window opening at its first request after the
    /// last one closed (the limits package's fixed window in memory, express-rate-limit's and
    /// @fastify/rate-limit's stores).
    FixedWindow { limit: f64, window: f64 },
    /// At most `limit` in any `window` seconds, from a log of every request (the limits
    /// package's moving window).
    SlidingLog { limit: f64, window: f64 },
    /// The limits package's sliding-window counter: windows aligned to the epoch, a request
    /// admitted while the current window's count plus the previous one's, weighted by the
    /// share of the current window still to come, stays within `limit`.
    SlidingCounter { limit: f64, window: f64 },
}

impl Rule {
    /// Requests per second in the long run.
    fn rate(self) -> f64 {
        match self {
            Rule::Bucket { per_second, .. } => per_second,
            Rule::FixedWindow { limit, window }
            | Rule::SlidingLog { limit, window }
            | Rule::SlidingCounter { limit, window } => limit / window,
        }
    }

    /// The most 2xx a client sending from `first` to `end` (seconds since the epoch) gets.
    fn capacity(self, first: f64, end: f64) -> f64 {
        let span = (end - first).max(0.0);
        match self {
            Rule::Bucket { size, per_second } => size + per_second * span,
            // Every window opened before the end gives its limit.
            Rule::FixedWindow { limit, window } | Rule::SlidingLog { limit, window } => {
                limit * (span / window).ceil()
            }
            // The window the run starts in gives the whole limit (nothing before weighs on
            // it); from the next boundary on, the weighted count lets `limit` through per
            // window, spread evenly across it.
            Rule::SlidingCounter { limit, window } => {
                let boundary = (first / window).ceil() * window;
                limit * (1.0 + (end - boundary).max(0.0) / window)
            }
        }
    }

    /// What `fit` should say of it: the rule's name in `fit --json`, its limit (a bucket's
    /// size) and its period (a bucket's time to refill from empty) in seconds.
    fn as_fitted(self) -> (&'static str, f64, f64) {
        match self {
            Rule::Bucket { size, per_second } => ("bucket", size, size / per_second),
            Rule::FixedWindow { limit, window } => ("fixed-window", limit, window),
            Rule::SlidingLog { limit, window } | Rule::SlidingCounter { limit, window } => {
                ("sliding-window", limit, window)
            }
        }
    }
}

/// The rule that binds in the long run: the slowest of several at once.
fn binding(rules: &[Rule]) -> Rule {
    *rules
        .iter()
        .min_by(|a, b| a.rate().total_cmp(&b.rate()))
        .expect("a limiter has at least one rule")
}

/// What a `fair-share` run must reach.
#[derive(Clone, Copy, Debug)]
pub struct Targets {
    /// The most 429s, as a share of all requests.
    pub max_429: f64,
    /// The least utilization: 2xx over what the rules allow over the run.
    pub min_utilization: f64,
    /// The least Jain's index over the processes' 2xx after the first two periods; `None`
    /// where the project states no aim (a limiter without a count).
    pub min_fairness: Option<f64>,
}

/// The project's aims for a limiter that tells every answer how much is left.
pub const COUNTED: Targets = Targets {
    max_429: 0.01,
    min_utilization: 0.95,
    min_fairness: Some(0.95),
};

/// The project's aims for a limiter that sends no rate-limit field at all (nginx), whose
/// quota the client is told: only the 429s tell it that it went too fast.
pub const UNCOUNTED: Targets = Targets {
    max_429: 0.02,
    min_utilization: 0.90,
    min_fairness: None,
};

/// One configuration of a real limiter, as its two runs see it.
pub struct Setup {
    /// Names it in messages: `flask-limiter-moving-window`.
    pub name: &'static str,
    /// Every rule it applies at once.
    pub rules: Vec<Rule>,
    /// One of its periods, in seconds: the runs last a few, and fairness is read after two.
    pub period: f64,
    /// For a limiter that states no quota: what the client is told, `(quota, period)`, as
    /// `--set clients.*.quota=… --set clients.*.period=…`.
    pub told: Option<(u32, &'static str)>,
    pub targets: Targets,
    /// Whether `fit` may say it cannot tell: only where the answers carry no rate-limit field.
    pub fit_may_not_tell: bool,
}

/// The fair-share fleet: processes × threads.
const PROCESSES: usize = 3;
const THREADS: usize = 4;
/// How long the fair-share run lasts, and from when its fairness is read, in periods.
const CLIENT_PERIODS: f64 = 4.0;
const SETTLE_PERIODS: f64 = 2.0;
/// The trace for `fit`: this many threads, together this much faster than the limit, for
/// this many periods, each thread's sleep stretched by a random 0 to `FIT_JITTER` of itself.
const FIT_THREADS: usize = 2;
const FIT_AHEAD: f64 = 1.22;
const FIT_PERIODS: f64 = 3.0;
const FIT_JITTER: f64 = 0.2;
/// How far `fit`'s limit and period may be from the configured ones, as a share of them.
const FIT_TOLERANCE: f64 = 0.10;

/// Run `fair-share` and the trace for `fit` against two limiters from `start`, at once, print
/// what each measured, and fail naming every aim missed.
pub fn fair_share_and_fit(setup: &Setup, start: impl Fn() -> Limiter) {
    let began = std::time::Instant::now();
    let (for_client, for_fit) = (start(), start());
    let tmp = tempfile::Builder::new()
        .prefix("throttle-sim-real-runs-")
        .tempdir()
        .expect("a temporary folder for the runs");
    let (client_dir, fit_dir) = (tmp.path().join("fair-share"), tmp.path().join("fixed"));
    let (client_url, fit_url) = (for_client.url(), for_fit.url());
    let (measured, fitted) = std::thread::scope(|s| {
        let measured = s.spawn(|| run_fair_share(setup, &client_url, &client_dir));
        let fitted = s.spawn(|| record_and_fit(setup, &fit_url, &fit_dir));
        (joined(measured), joined(fitted))
    });
    let mut misses = measured.misses(&setup.targets);
    let (said, fit_miss) = judge_fit(setup, &fitted);
    misses.extend(fit_miss);
    println!("{}: {}", setup.name, measured.line());
    println!("{}: fit: {said}", setup.name);
    println!(
        "{}: both runs in {:.1} s of real time",
        setup.name,
        began.elapsed().as_secs_f64()
    );
    if !misses.is_empty() {
        let kept = tmp.keep();
        let stderr: String = [&for_client, &for_fit]
            .iter()
            .map(|l| l.stderr())
            .filter(|e| !e.trim().is_empty())
            .map(|e| format!("\n  the limiter's stderr: {e}"))
            .collect();
        panic!(
            "{}: {}\n  {}\n  fit: {said}\n  against {}; the runs are kept in {}{stderr}",
            setup.name,
            misses.join("; "),
            measured.line(),
            for_client.versions(),
            kept.display(),
        );
    }
}

/// A scoped thread's result, its panic passed on as the test's.
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn run_fair_share(setup: &Setup, url: &str, out: &Path) -> Measured {
    let seconds = CLIENT_PERIODS * setup.period;
    let mut args: Vec<String> = [
        "--algorithm",
        "fair-share",
        "--processes",
        &PROCESSES.to_string(),
        "--threads",
        &THREADS.to_string(),
    ]
    .map(String::from)
    .to_vec();
    if let Some((quota, period)) = setup.told {
        args.extend([
            "--set".into(),
            format!("clients.*.quota={quota}"),
            "--set".into(),
            format!("clients.*.period={period}"),
        ]);
    }
    // The client's own clock starts a few milliseconds later: its times are read from here,
    // which matters only to where the epoch-aligned windows of a sliding counter fall.
    let started = now();
    harness::client(url, seconds, &args, out);
    Measured::of(out, setup, started)
}

/// What a `fair-share` run measured.
pub struct Measured {
    requests: f64,
    ok: f64,
    limited: f64,
    errors: f64,
    timed_out: f64,
    seconds: f64,
    capacity: f64,
    /// Each process's 2xx sent after the first two periods.
    late_ok: Vec<f64>,
    settled_from: f64,
}

impl Measured {
    fn of(dir: &Path, setup: &Setup, started: f64) -> Measured {
        let summary = harness::summary(dir);
        let count = |field: &str| summary[field].as_f64().unwrap_or(0.0);
        let sent = harness::requests(dir);
        let seconds = count("duration_s");
        let first = sent.iter().map(|s| s.t).fold(f64::INFINITY, f64::min);
        let first = if first.is_finite() { first } else { 0.0 };
        // Under several rules at once, the least of what each allows alone: all of them
        // together allow no more (Flask-Limiter's two limits; the longer one binds here).
        let capacity = setup
            .rules
            .iter()
            .map(|r| r.capacity(started + first, started + seconds))
            .fold(f64::INFINITY, f64::min);
        let settled_from = SETTLE_PERIODS * setup.period;
        let mut late_ok = vec![0.0; PROCESSES];
        for s in sent
            .iter()
            .filter(|s| s.t >= settled_from && s.status == "ok")
        {
            if let Some(n) = late_ok.get_mut(s.process) {
                *n += 1.0;
            }
        }
        Measured {
            requests: count("requests"),
            ok: count("ok"),
            limited: count("limited"),
            errors: count("errors"),
            timed_out: count("timed_out"),
            seconds,
            capacity,
            late_ok,
            settled_from,
        }
    }

    fn ratio_429(&self) -> f64 {
        if self.requests > 0.0 {
            self.limited / self.requests
        } else {
            0.0
        }
    }

    fn utilization(&self) -> f64 {
        self.ok / self.capacity
    }

    /// Jain's index of the processes' late 2xx: 1 when equal, 1/n when one got them all.
    fn fairness(&self) -> f64 {
        let sum: f64 = self.late_ok.iter().sum();
        let squares: f64 = self.late_ok.iter().map(|x| x * x).sum();
        if squares > 0.0 {
            sum * sum / (self.late_ok.len() as f64 * squares)
        } else {
            0.0
        }
    }

    fn misses(&self, t: &Targets) -> Vec<String> {
        let mut out = Vec::new();
        if self.ratio_429() > t.max_429 {
            out.push(format!(
                "429s {:.2} % > {:.0} %",
                100.0 * self.ratio_429(),
                100.0 * t.max_429
            ));
        }
        if self.utilization() < t.min_utilization {
            out.push(format!(
                "utilization {:.3} < {}",
                self.utilization(),
                t.min_utilization
            ));
        }
        if let Some(min) = t.min_fairness.filter(|&m| self.fairness() < m) {
            out.push(format!("fairness {:.3} < {min}", self.fairness()));
        }
        out
    }

    fn line(&self) -> String {
        format!(
            "fair-share {PROCESSES}x{THREADS} for {:.0} s: {} requests, {} 2xx, {} 429 ({:.2} %), \
             {} errors, {} dropped; utilization {:.3} ({} of {:.0} allowed); fairness {:.3} \
             over the processes' 2xx from {:.0} s on ({:?})",
            self.seconds,
            self.requests,
            self.ok,
            self.limited,
            100.0 * self.ratio_429(),
            self.errors,
            self.timed_out,
            self.utilization(),
            self.ok,
            self.capacity,
            self.fairness(),
            self.settled_from,
            self.late_ok,
        )
    }
}

/// `fixed` a little faster than the binding rule for three periods, then `fit` of its trace.
fn record_and_fit(setup: &Setup, url: &str, out: &Path) -> serde_json::Value {
    let rate = binding(&setup.rules).rate();
    // Each thread waits its sleep, stretched by 0 to FIT_JITTER of it: on average by half that.
    let gap = FIT_THREADS as f64 / (FIT_AHEAD * rate);
    let sleep = gap / (1.0 + FIT_JITTER / 2.0);
    let args = [
        "--algorithm".to_string(),
        "fixed".into(),
        "--threads".into(),
        FIT_THREADS.to_string(),
        "--set".into(),
        format!("clients.*.sleep={:.0}ms", sleep * 1000.0),
        "--set".into(),
        format!("clients.*.jitter={FIT_JITTER}"),
    ];
    harness::client(url, FIT_PERIODS * setup.period, &args, out);
    harness::fit(out)
}

/// What `fit` said, in words, and what is wrong with it, if anything.
fn judge_fit(setup: &Setup, f: &serde_json::Value) -> (String, Option<String>) {
    let (rule, limit, period) = binding(&setup.rules).as_fitted();
    let r = &f["rule"];
    let dialect = f["dialect"].as_str().unwrap_or("?");
    if r.is_null() {
        let why = f["cannot_tell"].as_str().unwrap_or("(no reason given)");
        let said = format!("cannot tell ({dialect} dialect): {why}");
        let miss = (!setup.fit_may_not_tell).then(|| {
            format!("fit cannot tell, where the answers show a {rule} of {limit} per {period} s")
        });
        return (said, miss);
    }
    let got_rule = r["rule"].as_str().unwrap_or("?");
    let got_limit = r["size"].as_f64().or(r["limit"].as_f64()).unwrap_or(0.0);
    let got_period = r["period"].as_f64().or(r["window"].as_f64()).unwrap_or(0.0);
    let said = format!(
        "{got_rule} of {got_limit} per {got_period:.2} s (confidence {:.2}, {dialect} dialect)",
        f["confidence"].as_f64().unwrap_or(0.0)
    );
    let close = |got: f64, want: f64| (got - want).abs() <= FIT_TOLERANCE * want;
    let right = got_rule == rule && close(got_limit, limit) && close(got_period, period);
    let miss = (!right).then(|| format!("fit said {said}, not a {rule} of {limit} per {period} s"));
    (said, miss)
}
