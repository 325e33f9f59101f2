//! What every limiter configuration is, and what is measured of its runs.
//!
//! A configuration ([`Setup`]) names its rules (what `fit` should find, and the most 2xx they
//! let through), one of its periods (the runs last [`CLIENT_PERIODS`] of them, and everything
//! is measured from [`SETTLE_PERIODS`] on), the quota a client is told where the answers state
//! none, the sim's model of it, the targets fair-share is held to, and what `fit` may say
//! besides the rule.
//!
//! The measures ([`Metrics`]) are taken from a `requests.csv`, the live run's or a sim's, in
//! the same way: of the requests sent after the first two periods, the share of 429s; their
//! 2xx over what the binding rule allows over that time (utilization); and Jain's index over
//! the three processes' 2xx (fairness).

use crate::harness::{Limiter, Sent};

/// The fair-share fleet: processes × threads.
pub const PROCESSES: usize = 3;
pub const THREADS: usize = 4;
/// How long the fair-share run lasts, and from when it is measured, in periods.
pub const CLIENT_PERIODS: f64 = 8.0;
pub const SETTLE_PERIODS: f64 = 2.0;

/// One rule of a limiter, as configured: what `fit` should find, and how fast it lets requests
/// through, so that a run's 2xx can be divided by it.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// nginx's `limit_req`: a bucket of `size` requests (`burst` + 1) that drains
    /// `per_second`. With `nodelay` the excess up to the burst is answered at once; without,
    /// it waits in line and is answered at the rate. Either way a request is admitted (not
    /// refused) when the bucket has room, so counted by when they were sent the 2xx are the
    /// same.
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

    /// What `fit` should say of it: the rule's name in `fit --json`, its limit (a bucket's
    /// size) and its period (a bucket's time to refill from empty) in seconds.
    pub fn as_fitted(self) -> (&'static str, f64, f64) {
        match self {
            Rule::Bucket { size, per_second } => ("bucket", size, size / per_second),
            Rule::FixedWindow { limit, window } => ("fixed-window", limit, window),
            Rule::SlidingLog { limit, window } => ("sliding-window", limit, window),
            Rule::SlidingCounter { limit, window } => ("sliding-window-counter", limit, window),
        }
    }
}

/// What a `fair-share` run must reach, after the first two periods.
#[derive(Clone, Copy, Debug)]
pub struct Targets {
    /// The most 429s, as a share of the requests.
    pub max_429: f64,
    /// The least utilization: 2xx over what the rules allow.
    pub min_utilization: f64,
    /// The least Jain's index over the processes' 2xx; `None` where the project states no
    /// aim (a limiter without a count).
    pub min_fairness: Option<f64>,
}

/// The fixed window the counted limiters here are configured with: 50 per 5 s, a key's window
/// opened by its first request.
pub const FIFTY_PER_FIVE: Rule = Rule::FixedWindow {
    limit: 50.0,
    window: 5.0,
};

impl Targets {
    /// The targets that a share of 429s, a utilization and a fairness miss, in words (none
    /// when they meet them all): a run's own (`Metrics::misses`), or a bound's means.
    pub fn missed_by(&self, ratio_429: f64, utilization: f64, fairness: f64) -> Vec<String> {
        let mut out = Vec::new();
        if ratio_429 > self.max_429 {
            out.push(format!(
                "429s {:.2} % > {:.0} %",
                100.0 * ratio_429,
                100.0 * self.max_429
            ));
        }
        if utilization < self.min_utilization {
            out.push(format!(
                "utilization {utilization:.3} < {}",
                self.min_utilization
            ));
        }
        if let Some(min) = self.min_fairness.filter(|&m| fairness < m) {
            out.push(format!("fairness {fairness:.3} < {min}"));
        }
        out
    }
}

/// The project's targets for a limiter that tells every answer how much is left.
pub const COUNTED: Targets = Targets {
    max_429: 0.01,
    min_utilization: 0.95,
    min_fairness: Some(0.95),
};

/// Where the `independent` bound on a counted limiter's model misses [`COUNTED`] too,
/// fair-share is held within the bound's numbers instead: its 429s at most the bound's plus
/// this share of the requests,
pub const WITHIN_429: f64 = 0.005;
/// and its utilization × fairness at least the bound's less this.
pub const WITHIN_PRODUCT: f64 = 0.05;

/// How many periods in a row a process may keep more than twice another's 2xx: a law that
/// lets one process starve the others (Flask-Limiter's moving window of 10 per second once
/// gave one process 80 to 97 % of the 2xx for minutes) is wrong whatever its totals.
pub const MOST_LOPSIDED_PERIODS: usize = 2;

/// The project's targets for a limiter that sends no rate-limit field at all (nginx), whose
/// quota the client is told: only the 429s tell it that it went too fast.
pub const UNCOUNTED: Targets = Targets {
    max_429: 0.02,
    min_utilization: 0.90,
    min_fairness: None,
};

/// One configuration of a real limiter.
pub struct Setup {
    /// Names it in messages: `flask-limiter-moving-window`.
    pub name: &'static str,
    /// The start of its three tests' names (`express::draft_6_`), which the command line's
    /// filters are matched against to start the runs of every configuration asked for at once.
    pub tests: &'static str,
    /// Whether the limiter runs here (build.rs's cfgs): the runs of one that does not are
    /// never started ahead.
    pub available: bool,
    /// Every rule it applies at once.
    pub rules: Vec<Rule>,
    /// One of its periods, in seconds: the unit of the runs' length and of when measuring
    /// starts.
    pub period: f64,
    /// For a limiter that states no quota: what the client is told, `--quota N --period P`.
    pub told: Option<(u32, &'static str)>,
    pub targets: Targets,
    /// When `fit` may say it cannot tell: `None` never, else where its reason contains these
    /// words ("" for any reason).
    pub cannot_tell: Option<&'static str>,
    /// The sim's model of it: the `[server]` table's lines (`kind`, its parameters, the
    /// header dialect whose fields carry what the limiter's do, and the median latency its
    /// live runs measured on loopback: 0.3 ms for nginx, 0.7 to 1.0 ms for the Node.js
    /// servers, 1.3 ms for Flask-Limiter under waitress).
    pub model: &'static str,
    /// Whether its windows are aligned to the epoch (the sliding-window counter): the live
    /// run then starts on that grid, as the sim's clock starts at a window's start.
    pub on_grid: bool,
    /// Starts an instance of it on a free port.
    pub start: Box<dyn Fn() -> Limiter + Send + Sync>,
}

impl Setup {
    /// A limiter that states a count, configured with windows of 5 s: held to [`COUNTED`],
    /// its runs measured in 5-s periods; `model` is its sim model's `[server]` lines.
    pub fn counted(
        name: &'static str,
        tests: &'static str,
        available: bool,
        rules: Vec<Rule>,
        model: &'static str,
        start: Box<dyn Fn() -> Limiter + Send + Sync>,
    ) -> Setup {
        Setup {
            name,
            tests,
            available,
            rules,
            period: 5.0,
            told: None,
            targets: COUNTED,
            cannot_tell: None,
            model,
            on_grid: false,
            start,
        }
    }

    /// The rule that binds in the long run: the slowest of several at once.
    pub fn binding(&self) -> Rule {
        *self
            .rules
            .iter()
            .min_by(|a, b| a.rate().total_cmp(&b.rate()))
            .expect("a limiter has at least one rule")
    }

    /// How long the fair-share run lasts, in seconds.
    pub fn seconds(&self) -> f64 {
        CLIENT_PERIODS * self.period
    }

    /// From when it is measured, in seconds from its start.
    pub fn settled_from(&self) -> f64 {
        SETTLE_PERIODS * self.period
    }

    /// The scenario the sim runs: the live run's fleet, length and told quota against the
    /// model, each process running `algorithm` with its defaults.
    pub fn scenario(&self, algorithm: &str) -> String {
        let told = self.told.map_or(String::new(), |(quota, period)| {
            format!("quota = {quota}\nperiod = \"{period}\"\n")
        });
        format!(
            "name = \"real-{name}\"\n\
             [run]\n\
             duration = \"{seconds}s\"\n\
             sample_every = \"{period}s\"\n\
             [server]\n\
             {model}\n\
             [[clients]]\n\
             name = \"client\"\n\
             processes = {PROCESSES}\n\
             threads = {THREADS}\n\
             algorithm = \"{algorithm}\"\n\
             {told}",
            name = self.name,
            seconds = self.seconds(),
            period = self.period,
            model = self.model.trim(),
        )
    }
}

/// What one fair-share run measured, after the first two periods.
#[derive(Clone, Debug)]
pub struct Metrics {
    pub requests: f64,
    pub ok: f64,
    pub limited: f64,
    /// Requests answered neither 2xx nor 429.
    pub errors: f64,
    /// What the binding rule allows over the time measured.
    pub allowed: f64,
    /// Each process's 2xx.
    pub ok_by_process: Vec<f64>,
    /// The median latency of all the run's requests, in seconds.
    pub latency_p50: f64,
}

impl Metrics {
    /// Of the requests sent from [`Setup::settled_from`] to the run's end. What the binding
    /// rule allows there is its long-run rate over that time: the burst a bucket or a first
    /// window gives is spent by then, and windows that the clients open late (a first-request
    /// window opens with the first request after the last closed) lose what they lose, as a
    /// client that waits too long loses it.
    pub fn of(rows: &[Sent], setup: &Setup) -> Metrics {
        let from = setup.settled_from();
        let late: Vec<&Sent> = rows.iter().filter(|s| s.t >= from).collect();
        let count = |status: &str| late.iter().filter(|s| s.status == status).count() as f64;
        let mut ok_by_process = vec![0.0; PROCESSES];
        for s in late.iter().filter(|s| s.status == "ok") {
            if let Some(n) = ok_by_process.get_mut(s.process) {
                *n += 1.0;
            }
        }
        let mut latencies: Vec<f64> = rows.iter().map(|s| s.latency).collect();
        latencies.sort_by(f64::total_cmp);
        let (ok, limited) = (count("ok"), count("limited"));
        Metrics {
            requests: late.len() as f64,
            ok,
            limited,
            errors: late.len() as f64 - ok - limited,
            allowed: setup.binding().rate() * (setup.seconds() - from),
            ok_by_process,
            latency_p50: latencies.get(latencies.len() / 2).copied().unwrap_or(0.0),
        }
    }

    pub fn ratio_429(&self) -> f64 {
        if self.requests > 0.0 {
            self.limited / self.requests
        } else {
            0.0
        }
    }

    pub fn utilization(&self) -> f64 {
        self.ok / self.allowed
    }

    /// Jain's index of the processes' 2xx: 1 when equal, 1/n when one got them all.
    pub fn fairness(&self) -> f64 {
        let sum: f64 = self.ok_by_process.iter().sum();
        let squares: f64 = self.ok_by_process.iter().map(|x| x * x).sum();
        if squares > 0.0 {
            sum * sum / (self.ok_by_process.len() as f64 * squares)
        } else {
            0.0
        }
    }

    /// ratio_429, utilization and fairness, in that order.
    pub fn three(&self) -> [f64; 3] {
        [self.ratio_429(), self.utilization(), self.fairness()]
    }

    /// Utilization × fairness: the share of the limit the fleet used, discounted by how
    /// unequally.
    pub fn product(&self) -> f64 {
        self.utilization() * self.fairness()
    }

    /// The targets it misses against the `independent` bound's numbers ([`WITHIN_429`],
    /// [`WITHIN_PRODUCT`]), in words.
    pub fn misses_within(&self, bound: &Bound) -> Vec<String> {
        let mut out = Vec::new();
        if self.ratio_429() > bound.ratio_429 + WITHIN_429 {
            out.push(format!(
                "429s {:.2} % > the bound's {:.2} % + {:.1} points",
                100.0 * self.ratio_429(),
                100.0 * bound.ratio_429,
                100.0 * WITHIN_429
            ));
        }
        if self.product() < bound.product - WITHIN_PRODUCT {
            out.push(format!(
                "utilization × fairness {:.3} < the bound's {:.3} - {WITHIN_PRODUCT}",
                self.product(),
                bound.product
            ));
        }
        out
    }

    /// The targets it misses, in words (none when it meets them all).
    pub fn misses(&self, t: &Targets) -> Vec<String> {
        t.missed_by(self.ratio_429(), self.utilization(), self.fairness())
    }

    pub fn line(&self) -> String {
        format!(
            "{} requests, {} 2xx, {} 429 ({:.2} %), {} errors; utilization {:.3} ({} of {:.0} \
             allowed); fairness {:.3} ({:?}); latency p50 {:.1} ms",
            self.requests,
            self.ok,
            self.limited,
            100.0 * self.ratio_429(),
            self.errors,
            self.utilization(),
            self.ok,
            self.allowed,
            self.fairness(),
            self.ok_by_process,
            1000.0 * self.latency_p50,
        )
    }
}

/// What the `independent` bound reaches on a limiter's model, the same fleet for the same
/// time, as the mean over seeds: each process told its fair share of the binding rate and
/// sending at it on its own random phase, never reading an answer. Where that misses the
/// targets, no law whose processes send independently of each other meets them for sure
/// (short windows shared by several processes), and fair-share is held within its numbers.
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    pub ratio_429: f64,
    pub utilization: f64,
    pub fairness: f64,
    /// The mean over seeds of each seed's utilization × fairness.
    pub product: f64,
    pub seeds: usize,
}

impl Bound {
    /// The means over the seeds' measures.
    pub fn of(seeds: &[Metrics]) -> Bound {
        let n = seeds.len().max(1) as f64;
        let mean = |f: fn(&Metrics) -> f64| seeds.iter().map(f).sum::<f64>() / n;
        Bound {
            ratio_429: mean(Metrics::ratio_429),
            utilization: mean(Metrics::utilization),
            fairness: mean(Metrics::fairness),
            product: mean(Metrics::product),
            seeds: seeds.len(),
        }
    }

    /// Whether the bound itself meets `t`, on its means.
    pub fn meets(&self, t: &Targets) -> bool {
        t.missed_by(self.ratio_429, self.utilization, self.fairness)
            .is_empty()
    }

    pub fn line(&self) -> String {
        format!(
            "429s {:.2} %, utilization {:.3}, fairness {:.3}, utilization × fairness {:.3} \
             (means over {} seeds)",
            100.0 * self.ratio_429,
            self.utilization,
            self.fairness,
            self.product,
            self.seeds
        )
    }
}

/// The longest run of whole periods, from the run's start, in which one process's 2xx
/// (counted by when they were sent) were more than twice another's, and where it began, in
/// seconds; `(0, 0.0)` when there is none. Periods in which no process got a 2xx are even.
pub fn lopsided_periods(rows: &[Sent], setup: &Setup) -> (usize, f64) {
    let periods = (setup.seconds() / setup.period).floor() as usize;
    let mut ok = vec![[0u32; PROCESSES]; periods];
    for s in rows.iter().filter(|s| s.status == "ok") {
        let k = (s.t / setup.period).floor();
        if k >= 0.0
            && let Some(by_process) = ok.get_mut(k as usize)
            && let Some(n) = by_process.get_mut(s.process)
        {
            *n += 1;
        }
    }
    let (mut longest, mut began, mut run) = ((0, 0.0), 0, 0);
    for (k, by_process) in ok.iter().enumerate() {
        let most = by_process.iter().copied().max().unwrap_or(0);
        let least = by_process.iter().copied().min().unwrap_or(0);
        if most > 2 * least {
            if run == 0 {
                began = k;
            }
            run += 1;
            if run > longest.0 {
                longest = (run, began as f64 * setup.period);
            }
        } else {
            run = 0;
        }
    }
    longest
}

/// A configuration of 50 per 5 s for the measures' own tests, never started.
#[cfg(test)]
fn fifty_per_five() -> Setup {
    Setup::counted(
        "test",
        "measure::",
        false,
        vec![FIFTY_PER_FIVE],
        "",
        Box::new(|| unreachable!("the measures' tests start no limiter")),
    )
}

/// 2xx for each process in each period, as rows sent in the middle of the period.
#[cfg(test)]
fn rows_by_period(periods: &[[u32; PROCESSES]], setup: &Setup) -> Vec<Sent> {
    let mut rows = Vec::new();
    for (k, by_process) in periods.iter().enumerate() {
        for (process, &n) in by_process.iter().enumerate() {
            for _ in 0..n {
                rows.push(Sent {
                    t: (k as f64 + 0.5) * setup.period,
                    process,
                    status: "ok".to_string(),
                    latency: 0.001,
                });
            }
        }
    }
    rows
}

#[test]
fn lopsided_periods_counts_the_longest_run_of_one_process_over_twice_another() {
    let setup = fifty_per_five();
    let even = [16, 17, 17];
    let starved = [30, 14, 6];
    let rows = |periods: &[[u32; PROCESSES]]| rows_by_period(periods, &setup);
    assert_eq!(lopsided_periods(&rows(&[even; 8]), &setup), (0, 0.0));
    // Exactly twice is not more than twice.
    assert_eq!(lopsided_periods(&rows(&[[20, 10, 20]; 8]), &setup).0, 0);
    let mixed = [
        even, starved, starved, even, starved, starved, starved, even,
    ];
    assert_eq!(lopsided_periods(&rows(&mixed), &setup), (3, 20.0));
    // A process with no 2xx at all beside others with some is starved.
    assert_eq!(lopsided_periods(&rows(&[[25, 25, 0]; 8]), &setup).0, 8);
    // Periods in which nobody got a 2xx are even.
    assert_eq!(lopsided_periods(&rows(&[[0, 0, 0]; 8]), &setup).0, 0);
}

#[test]
fn a_run_is_held_within_the_bound_on_both_429s_and_utilization_times_fairness() {
    let setup = fifty_per_five();
    let metrics = |ok: [f64; PROCESSES], limited: f64| {
        let sum: f64 = ok.iter().sum();
        Metrics {
            requests: sum + limited,
            ok: sum,
            limited,
            errors: 0.0,
            allowed: 300.0,
            ok_by_process: ok.to_vec(),
            latency_p50: 0.001,
        }
    };
    let bound = Bound::of(&[metrics([98.0, 98.0, 98.0], 6.0), metrics([99.0; 3], 4.0)]);
    assert!((bound.ratio_429 - 0.0167).abs() < 1e-3, "{bound:?}");
    assert!(!bound.meets(&setup.targets), "1.7 % 429s miss 1 %");
    // 1.9 % 429s and 0.98 × 1: within 0.5 points and 0.05.
    assert!(metrics([98.0; 3], 5.7).misses_within(&bound).is_empty());
    // 2.7 % 429s: over the bound's by more than half a point.
    assert_eq!(metrics([98.0; 3], 8.2).misses_within(&bound).len(), 1);
    // A starved process: utilization × fairness 0.73.
    let starved = metrics([160.0, 100.0, 34.0], 0.0);
    let misses = starved.misses_within(&bound);
    assert_eq!(misses.len(), 1, "{misses:?}");
    assert!(misses[0].contains("utilization × fairness"), "{misses:?}");
}
