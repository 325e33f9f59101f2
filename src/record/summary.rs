//! `summary.json`'s contents: the metrics (docs/metrics.md; docs/architecture.md), overall,
//! per group and per process.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{Counts, Failure, FinishContext, PeakCounter, Recorder};
use crate::scenario::GroupInfo;
use crate::time::{Nanos, secs};

/// The metrics shared by the whole run and each group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub requests: u64,
    pub ok: u64,
    pub limited: u64,
    pub errors: u64,
    /// Jobs the clients abandoned without sending (e.g. the 15 s timeout of Rebased's Redis
    /// interval lock).
    pub timed_out: u64,
    pub ratio_429: f64,
    /// `limited / requests` over the requests sent in the second half of the run: what is left
    /// once a start-up burst that no blind client can avoid is over.
    #[serde(default)]
    pub ratio_429_late: f64,
    /// The mean over threads of each thread's `limited / requests` (the rate_throttle_client
    /// gem's "retry rate"); threads that sent nothing are left out, and it is `null` when no
    /// thread sent anything. Unlike `ratio_429` it weighs every thread alike, so it differs
    /// when threads send unequal numbers of requests.
    #[serde(default)]
    pub retry_rate_thread_mean: Option<f64>,
    /// The most 2xx the server could have given (for a group: its key's capacity).
    pub capacity: f64,
    pub utilization: f64,
    /// Jain's index over threads of `ok_i / active_time_i`.
    pub fairness: f64,
    /// The mean over consecutive `[run] fairness_window`s of Jain's index over the 2xx counts
    /// of the threads active through the whole window (`record::windowed`); `null` when no
    /// window had a 2xx from such threads.
    #[serde(default)]
    pub fairness_windowed: Option<f64>,
    pub request_count_stdev: f64,
    /// Seconds.
    pub max_sleep: f64,
    /// Seconds; `null` when the sleep values never settled.
    pub convergence_s: Option<f64>,
    /// Seconds; `null` without any 2xx.
    pub wait_p50: Option<f64>,
    pub wait_p99: Option<f64>,
    /// Seconds until the last job of a finite workload got its 2xx; `null` when there is no
    /// finite workload or some job never finished.
    pub time_to_clear: Option<f64>,
    /// The most requests sent to one key within any `[run] peak_window` (for a group: its own
    /// requests); `null` without a `peak_window`.
    #[serde(default)]
    pub peak_requests: Option<u64>,
    /// The most requests one process sent within any `peak_window`; `null` without one.
    #[serde(default)]
    pub peak_process_requests: Option<u64>,
}

/// The range a bounded metric can take: the ratios and `utilization` are shares, from 0 to 1;
/// Jain's indices (`fairness`, `fairness_windowed`) are at most 1. `None` for the others
/// (counts, seconds), which have no upper bound.
pub fn metric_bounds(metric: &str) -> Option<[f64; 2]> {
    match metric {
        "ratio_429"
        | "ratio_429_late"
        | "retry_rate_thread_mean"
        | "utilization"
        | "fairness"
        | "fairness_windowed" => Some([0.0, 1.0]),
        _ => None,
    }
}

/// `value` held within `metric`'s bounds: rounding (Jain's index of equal rates can come out
/// `1.0000000000000007`) or a summary written before the bounds were kept never puts a
/// bounded metric outside its range, where `[expect]` ranges that end at the bound would miss
/// it.
pub fn within_bounds(metric: &str, value: f64) -> f64 {
    match metric_bounds(metric) {
        Some([lo, hi]) if value.is_finite() => value.clamp(lo, hi),
        _ => value,
    }
}

/// The metrics that describe what the server answered: without a single 2xx or 429 (nothing
/// sent, or every request refused, reset, timed out or 5xx) they say nothing, and a 429 ratio
/// of 0 or a fairness of 1 would rank a run that crashed before its first request best.
pub const ANSWER_METRICS: &[&str] = &[
    "ratio_429",
    "ratio_429_late",
    "retry_rate_thread_mean",
    "fairness",
    "fairness_windowed",
];

impl Metrics {
    /// A metric by the name `[expect]` uses, held within its bounds ([`metric_bounds`]);
    /// `None` for the [`ANSWER_METRICS`] of a run that got no 2xx and no 429.
    pub fn get(&self, name: &str) -> Option<f64> {
        if self.ok + self.limited == 0 && ANSWER_METRICS.contains(&name) {
            return None;
        }
        self.get_raw(name).map(|v| within_bounds(name, v))
    }

    fn get_raw(&self, name: &str) -> Option<f64> {
        Some(match name {
            "requests" => self.requests as f64,
            "ok" => self.ok as f64,
            "limited" => self.limited as f64,
            "errors" => self.errors as f64,
            "timed_out" => self.timed_out as f64,
            "ratio_429" => self.ratio_429,
            "ratio_429_late" => self.ratio_429_late,
            "retry_rate_thread_mean" => return self.retry_rate_thread_mean,
            "capacity" => self.capacity,
            // Without a capacity (`concurrency`, `occ`) there is nothing to use up.
            "utilization" if self.capacity <= 0.0 => return None,
            "utilization" => self.utilization,
            "fairness" => self.fairness,
            "fairness_windowed" => return self.fairness_windowed,
            "request_count_stdev" => self.request_count_stdev,
            "max_sleep" => self.max_sleep,
            "convergence_s" => return self.convergence_s,
            "wait_p50" => return self.wait_p50,
            "wait_p99" => return self.wait_p99,
            "time_to_clear" => return self.time_to_clear,
            "peak_requests" => return self.peak_requests.map(|v| v as f64),
            "peak_process_requests" => return self.peak_process_requests.map(|v| v as f64),
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    pub name: String,
    pub key: String,
    #[serde(flatten)]
    pub metrics: Metrics,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcessSummary {
    pub group: String,
    pub process: usize,
    pub requests: u64,
    pub ok: u64,
    pub limited: u64,
    pub errors: u64,
    /// The sleep value at the end, seconds.
    pub final_sleep: f64,
    /// How often the process backed off (the Heroku GCRA demo client's `rate_limit_count`).
    pub backoffs: u64,
}

/// Live mode: a worker process that ended before the run did. Its samples up to then are kept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadWorker {
    pub group: String,
    /// 0-based within its group.
    pub process: usize,
    pub pid: u32,
    /// Seconds of run time at which its stream ended.
    pub at_s: f64,
    /// What is known of why: an exit code, a signal, or a timeout.
    pub reason: String,
}

/// The share of errors among a run's requests from which it warns: an outage of a tenth of
/// the run (the bundled `outage` scenario) stays below it.
pub const MANY_ERRORS: f64 = 0.25;

/// A run whose requests mostly or all failed: printed loudly, so it never looks like success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestTrouble {
    /// Nothing was sent (e.g. every client waited past the end).
    NoneSent,
    /// Interrupted (Ctrl-C) before any answer came back: requests in flight were abandoned,
    /// so "none sent" would be untrue.
    InterruptedBeforeAnswers,
    /// Every request was an error: not one 2xx or 429 came back. `kinds`: the kinds met,
    /// most frequent first, each with its count.
    AllFailed {
        requests: u64,
        kinds: Vec<(Failure, u64)>,
    },
    /// At least [`MANY_ERRORS`] of the requests were errors; `kinds` as for `AllFailed`.
    ManyErrors {
        errors: u64,
        requests: u64,
        kinds: Vec<(Failure, u64)>,
    },
}

impl RequestTrouble {
    /// Fatal troubles make the run exit with `exit::NOTHING_WORKED`; many errors only warn.
    pub fn is_fatal(&self) -> bool {
        !matches!(
            self,
            RequestTrouble::ManyErrors { .. } | RequestTrouble::InterruptedBeforeAnswers
        )
    }
}

/// "every one of the 19 requests failed", or for one, "the one request failed".
fn all_failed(requests: u64) -> String {
    if requests == 1 {
        "the one request failed".to_string()
    } else {
        format!("every one of the {requests} requests failed")
    }
}

impl std::fmt::Display for RequestTrouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestTrouble::NoneSent => f.write_str(
                "the run sent no requests, so it shows nothing; its [expect] ranges all count \
                 as missed",
            ),
            RequestTrouble::InterruptedBeforeAnswers => f.write_str(
                "interrupted before any request was answered (any in flight were abandoned), \
                 so the run shows nothing",
            ),
            RequestTrouble::AllFailed { requests, kinds } if !kinds.is_empty() => {
                write!(f, "{} (no 2xx and no 429): ", all_failed(*requests))?;
                write_kinds(f, kinds)?;
                f.write_str("; requests.csv with --log-requests has each one")
            }
            RequestTrouble::AllFailed { requests, .. } => write!(
                f,
                "{} (no 2xx and no 429: refused, reset, timed out or another status; \
                 requests.csv with --log-requests says which)",
                all_failed(*requests)
            ),
            RequestTrouble::ManyErrors {
                errors,
                requests,
                kinds,
            } => {
                write!(
                    f,
                    "{errors} of the {requests} requests ({:.0}%) were errors (",
                    *errors as f64 * 100.0 / *requests as f64
                )?;
                if kinds.is_empty() {
                    f.write_str("5xx, refused, reset or timed out")?;
                } else {
                    write_kinds(f, kinds)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// `3 refused, 12 answered 301`.
fn write_kinds(f: &mut std::fmt::Formatter<'_>, kinds: &[(Failure, u64)]) -> std::fmt::Result {
    for (i, (kind, n)) in kinds.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        write!(f, "{sep}{n} {}", kind.in_words())?;
    }
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpectVerdict {
    pub metric: String,
    pub range: [f64; 2],
    pub value: Option<f64>,
    pub pass: bool,
}

/// How a run's requests were made, `summary.json`'s `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunMode {
    /// The sim engine, on a virtual clock.
    Sim,
    /// The live engine, real processes and HTTP.
    Live,
    /// Clients throttle-sim did not write, recorded by `serve --record`.
    Recorded,
}

impl RunMode {
    /// As `summary.json` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunMode::Sim => "sim",
            RunMode::Live => "live",
            RunMode::Recorded => "recorded",
        }
    }
}

impl std::fmt::Display for RunMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub scenario: String,
    pub version: String,
    pub mode: RunMode,
    pub seed: u64,
    /// Seconds of the run covered (less than planned when partial).
    pub duration_s: f64,
    pub partial: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_reason: Option<String>,
    #[serde(flatten)]
    pub metrics: Metrics,
    pub groups: Vec<GroupSummary>,
    pub processes: Vec<ProcessSummary>,
    #[serde(default)]
    pub expect: Vec<ExpectVerdict>,
    /// Live mode: worker processes that died; absent when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead_workers: Vec<DeadWorker>,
    /// Live mode: why the run stopped early when something it needs failed (the shared store);
    /// the summary is then partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Live mode: why the run stopped early when the target stopped taking connections (every
    /// request of the last 10 s of real time failed to connect); the summary is then partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_lost: Option<String>,
    /// Live mode: what the time scale asked of the machine's timing that it cannot give (the
    /// warning printed before the run); absent when nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_warning: Option<String>,
    /// `serve --record`: percentiles of the observed gaps between a client's requests, overall
    /// and per group (docs/serve-record.md); absent from other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<GapPercentiles>,
    /// Per thread, in the layout's order: its totals over the run. Kept only when
    /// `series.csv` rows cover more than a thread, for `threads.csv`; not in summary.json.
    #[serde(skip)]
    pub thread_totals: Vec<Counts>,
    /// Each kind of failure the run met (`refused`, `http_301`, …) and how often, most
    /// frequent first: what the message of a run whose every request failed names. Not in
    /// summary.json (requests.csv has each request's).
    #[serde(skip)]
    pub failure_kinds: Vec<(Failure, u64)>,
}

/// Percentiles of a set of gaps, in seconds (`serve --record`'s observed gaps).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GapPercentiles {
    /// How many gaps were measured (a client's requests after its first).
    pub count: u64,
    /// `null` without any gap.
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    /// Per group, the same without `groups`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupGaps>,
}

/// One group's [`GapPercentiles`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupGaps {
    pub name: String,
    #[serde(flatten)]
    pub gaps: GapPercentiles,
}

impl GapPercentiles {
    /// The percentiles of the gaps in `h` (nanoseconds).
    pub fn of(h: &Histogram<u64>) -> GapPercentiles {
        let at = |q: f64| (!h.is_empty()).then(|| secs(h.value_at_quantile(q)));
        GapPercentiles {
            count: h.len(),
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: (!h.is_empty()).then(|| secs(h.max())),
            groups: Vec::new(),
        }
    }
}

impl Summary {
    /// Judge the `[expect]` ranges; the verdicts are stored in the summary.
    pub fn judge(&mut self, expect: &crate::scenario::Expect) {
        self.expect = expect
            .iter()
            .map(|(metric, &[lo, hi])| {
                let value = self.metrics.get(metric);
                ExpectVerdict {
                    metric: metric.clone(),
                    range: [lo, hi],
                    value,
                    // A run that sent nothing shows nothing about its clients: it never
                    // passes, whatever the ranges allow.
                    pass: self.metrics.requests > 0 && value.is_some_and(|v| lo <= v && v <= hi),
                }
            })
            .collect();
    }

    /// What the requests' outcomes say went wrong, if anything: none sent, every one failed
    /// (no 2xx and no 429: refused, reset, timed out, 5xx), or many errors.
    pub fn request_trouble(&self) -> Option<RequestTrouble> {
        let m = &self.metrics;
        let interrupted = self.partial && self.failure.is_none() && self.target_lost.is_none();
        if m.requests == 0 && interrupted {
            Some(RequestTrouble::InterruptedBeforeAnswers)
        } else if m.requests == 0 {
            Some(RequestTrouble::NoneSent)
        } else if m.errors == m.requests {
            Some(RequestTrouble::AllFailed {
                requests: m.requests,
                kinds: self.failure_kinds.clone(),
            })
        } else if m.errors as f64 >= MANY_ERRORS * m.requests as f64 {
            Some(RequestTrouble::ManyErrors {
                errors: m.errors,
                requests: m.requests,
                kinds: self.failure_kinds.clone(),
            })
        } else {
            None
        }
    }

    pub fn missed(&self) -> impl Iterator<Item = &ExpectVerdict> {
        self.expect.iter().filter(|v| !v.pass)
    }
}

struct Acc {
    counts: Counts,
    late: Counts,
    timed_out: u64,
    rates: Vec<f64>,
    request_counts: Vec<f64>,
    /// Per thread: `(limited, requests)`.
    retries: Vec<(u64, u64)>,
    max_sleep: Nanos,
    /// The latest finish so far, and whether every thread with a workload finished.
    cleared_at: Option<Nanos>,
    has_workload: bool,
    all_cleared: bool,
}

impl Acc {
    fn new() -> Self {
        Acc {
            counts: Counts::default(),
            late: Counts::default(),
            timed_out: 0,
            rates: Vec::new(),
            request_counts: Vec::new(),
            retries: Vec::new(),
            max_sleep: 0,
            cleared_at: None,
            has_workload: false,
            all_cleared: true,
        }
    }

    fn metrics(
        &self,
        capacity: f64,
        convergence: Option<Nanos>,
        waits: Option<&Histogram<u64>>,
    ) -> Metrics {
        let c = self.counts;
        let ratio = |a: u64, b: f64| if b > 0.0 { a as f64 / b } else { 0.0 };
        let quantile = |q: f64| {
            waits
                .filter(|h| !h.is_empty())
                .map(|h| secs(h.value_at_quantile(q)))
        };
        Metrics {
            requests: c.requests,
            ok: c.ok,
            limited: c.limited,
            errors: c.errors,
            timed_out: self.timed_out,
            ratio_429: ratio(c.limited, c.requests as f64),
            ratio_429_late: ratio(self.late.limited, self.late.requests as f64),
            retry_rate_thread_mean: thread_mean_ratio(&self.retries),
            capacity,
            utilization: within_bounds("utilization", ratio(c.ok, capacity)),
            fairness: jain_index(&self.rates),
            fairness_windowed: None,
            request_count_stdev: sample_stdev(&self.request_counts),
            max_sleep: secs(self.max_sleep),
            convergence_s: convergence.map(secs),
            wait_p50: quantile(0.5),
            wait_p99: quantile(0.99),
            time_to_clear: (self.has_workload && self.all_cleared)
                .then_some(self.cleared_at)
                .flatten()
                .map(secs),
            peak_requests: None,
            peak_process_requests: None,
        }
    }
}

/// The mean over threads of `limited / requests`, from `(limited, requests)` per thread;
/// threads without requests are left out (their ratio is undefined), `None` when none is left.
pub fn thread_mean_ratio(threads: &[(u64, u64)]) -> Option<f64> {
    let ratios: Vec<f64> = threads
        .iter()
        .filter(|&&(_, requests)| requests > 0)
        .map(|&(limited, requests)| limited as f64 / requests as f64)
        .collect();
    (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64)
}

/// Jain's fairness index: 1 when all are equal, 1/n when one gets everything. Never above 1,
/// which the rounding of equal rates could otherwise give (`1.0000000000000007`).
pub fn jain_index(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || sq == 0.0 {
        return 1.0;
    }
    (sum * sum / (x.len() as f64 * sq)).min(1.0)
}

/// Sample standard deviation (n − 1); 0 for fewer than two values.
pub fn sample_stdev(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

pub(super) fn build<W: std::io::Write, R: std::io::Write>(
    rec: &Recorder<'_, W, R>,
    end: Nanos,
    ctx: FinishContext<'_>,
) -> Summary {
    let layout = rec.layout;
    let (windowed, windowed_groups) = rec.windowed.result();
    let mut overall = Acc::new();
    let mut all_waits = Histogram::<u64>::new(3).expect("valid precision");
    let mut groups = Vec::new();
    for (gi, g) in layout.groups.iter().enumerate() {
        let mut acc = Acc::new();
        add_group(rec, g, end, [&mut acc, &mut overall]);
        all_waits
            .add(&rec.waits[gi])
            .expect("histograms of one precision merge");
        let mut metrics = acc.metrics(
            ctx.capacity_per_key,
            rec.convergence[gi + 1].since,
            Some(&rec.waits[gi]),
        );
        metrics.fairness_windowed = windowed_groups[gi];
        if let Some(p) = &rec.peaks {
            metrics.peak_requests = Some(p.groups[gi].peak());
            metrics.peak_process_requests =
                g.processes.clone().map(|i| p.processes[i].peak()).max();
        }
        groups.push(GroupSummary {
            name: g.name.clone(),
            key: layout.keys[g.key].clone(),
            metrics,
        });
    }
    let capacity = ctx.capacity_per_key * layout.keys.len() as f64;
    let mut metrics = overall.metrics(capacity, rec.convergence[0].since, Some(&all_waits));
    metrics.fairness_windowed = windowed;
    if let Some(p) = &rec.peaks {
        metrics.peak_requests = p.keys.iter().map(PeakCounter::peak).max();
        metrics.peak_process_requests = p.processes.iter().map(PeakCounter::peak).max();
    }
    Summary {
        scenario: ctx.scenario.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        mode: ctx.mode,
        seed: ctx.seed,
        duration_s: secs(end),
        partial: ctx.partial,
        partial_reason: ctx.partial_reason,
        metrics,
        groups,
        processes: process_summaries(rec, ctx.processes),
        expect: Vec::new(),
        dead_workers: Vec::new(),
        failure: None,
        target_lost: None,
        timing_warning: None,
        gaps: None,
        thread_totals: if rec.level.is_thread() {
            Vec::new()
        } else {
            rec.threads.iter().map(|t| t.total).collect()
        },
        failure_kinds: {
            let mut kinds = rec.failures.clone();
            kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
            kinds
        },
    }
}

/// Count group `g`'s threads, over a run that reached `end`, into both accumulators (the
/// group's own and the overall one).
fn add_group<W: std::io::Write, R: std::io::Write>(
    rec: &Recorder<'_, W, R>,
    g: &GroupInfo,
    end: Nanos,
    mut accs: [&mut Acc; 2],
) {
    // A shared pool is cleared when it gave all its 2xx: threads that never took a job
    // have no finish of their own.
    if let Some(pool) = g.pool {
        let ok: u64 = g.threads.clone().map(|t| rec.threads[t].total.ok).sum();
        for a in &mut accs {
            a.has_workload = true;
            a.all_cleared &= ok >= pool;
        }
    }
    for th in g.threads.clone() {
        let s = &rec.threads[th];
        // A thread with a finite workload is active until its last job is done.
        let active = secs(
            s.finished_at
                .map_or(g.active_time(end), |f| f.saturating_sub(g.start)),
        );
        for a in &mut accs {
            if g.finite() {
                a.has_workload = true;
                match s.finished_at {
                    Some(f) => a.cleared_at = Some(a.cleared_at.map_or(f, |c| c.max(f))),
                    None if g.pool.is_none() => a.all_cleared = false,
                    None => {}
                }
            }
            a.counts.merge(&s.total);
            a.late.merge(&s.late);
            a.timed_out += s.gave_up;
            a.max_sleep = a.max_sleep.max(s.max_sleep);
            a.request_counts.push(s.total.requests as f64);
            a.retries.push((s.total.limited, s.total.requests));
            if active > 0.0 {
                a.rates.push(s.total.ok as f64 / active);
            }
        }
    }
}

/// Every process's totals, with its final sleep value and backoffs as the engine saw them.
fn process_summaries<W: std::io::Write, R: std::io::Write>(
    rec: &Recorder<'_, W, R>,
    sleeps_and_backoffs: &[(f64, u64)],
) -> Vec<ProcessSummary> {
    let layout = rec.layout;
    layout
        .processes
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            let mut c = Counts::default();
            for th in p.threads.clone() {
                c.merge(&rec.threads[th].total);
            }
            let (final_sleep, backoffs) = sleeps_and_backoffs.get(pi).copied().unwrap_or_default();
            ProcessSummary {
                group: layout.groups[p.group].name.clone(),
                process: p.index,
                requests: c.requests,
                ok: c.ok,
                limited: c.limited,
                errors: c.errors,
                final_sleep,
                backoffs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_mode_reads_and_writes_as_the_words_summary_json_always_had() {
        for (mode, word) in [
            (RunMode::Sim, "sim"),
            (RunMode::Live, "live"),
            (RunMode::Recorded, "recorded"),
        ] {
            assert_eq!(serde_json::to_string(&mode).unwrap(), format!("\"{word}\""));
            assert_eq!(
                serde_json::from_str::<RunMode>(&format!("\"{word}\"")).unwrap(),
                mode
            );
            assert_eq!(mode.to_string(), word);
        }
        assert!(serde_json::from_str::<RunMode>("\"replay\"").is_err());
    }

    #[test]
    fn jain_index_of_equal_rates_is_never_above_one() {
        // Equal rates whose sums round: the plain formula gives 1.0000000000000007 for these
        // 25 (the oracle on `gauntlet/fixed_window` missed `fairness = [0.95, 1.0]` so,
        // as an index above its bound of 1) and 1.0000000000000004 for these 3.
        assert_eq!(jain_index(&[0.3666666666666667; 25]), 1.0);
        assert_eq!(jain_index(&[0.03333333333333333; 3]), 1.0);
        assert_eq!(jain_index(&[0.30000000000000004; 5]), 1.0);
    }

    #[test]
    fn bounded_metrics_read_within_their_bounds() {
        let m = Metrics {
            requests: 1,
            ok: 1,
            fairness: 1.0000000000000007,
            fairness_windowed: Some(1.0000000000000002),
            capacity: 10.0,
            utilization: 1.2,
            ratio_429: -0.0,
            max_sleep: 7200.0,
            ..Metrics::default()
        };
        assert_eq!(m.get("fairness"), Some(1.0));
        assert_eq!(m.get("fairness_windowed"), Some(1.0));
        assert_eq!(m.get("utilization"), Some(1.0));
        assert_eq!(m.get("ratio_429"), Some(0.0));
        assert_eq!(
            m.get("max_sleep"),
            Some(7200.0),
            "seconds have no upper bound"
        );
        assert_eq!(metric_bounds("requests"), None);
    }

    #[test]
    fn a_run_without_answers_has_no_ratio_and_no_fairness() {
        // A run that crashed before its first request: summary.json keeps 0 and 1.
        let m = Metrics {
            fairness: 1.0,
            capacity: 10.0,
            ..Metrics::default()
        };
        assert_eq!(m.get("ratio_429"), None);
        assert_eq!(m.get("fairness"), None);
        assert_eq!(
            m.get("utilization"),
            Some(0.0),
            "nothing of the capacity was used"
        );
        let answered = Metrics {
            requests: 3,
            limited: 3,
            ratio_429: 1.0,
            ..m
        };
        assert_eq!(answered.get("ratio_429"), Some(1.0));
        assert_eq!(answered.get("fairness"), Some(1.0));
    }

    #[test]
    fn jain_index_on_fixed_numbers() {
        assert_eq!(jain_index(&[2.0, 2.0, 2.0, 2.0]), 1.0);
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!((jain_index(&[1.0, 3.0]) - 16.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn thread_mean_ratio_weighs_threads_alike() {
        // 1 of 10, 3 of 4 and 0 of 6; a thread without requests is left out. The mean is
        // (0.1 + 0.75 + 0) / 3 = 0.283…, where the pooled ratio would be 4 / 20 = 0.2.
        let m = thread_mean_ratio(&[(1, 10), (3, 4), (0, 0), (0, 6)]).unwrap();
        assert!((m - 0.85 / 3.0).abs() < 1e-12, "{m}");
        assert_eq!(thread_mean_ratio(&[(0, 0)]), None);
        assert_eq!(thread_mean_ratio(&[]), None);
    }

    #[test]
    fn sample_stdev_on_fixed_numbers() {
        assert!(
            (sample_stdev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) - 2.138089935).abs() < 1e-9
        );
        assert_eq!(sample_stdev(&[3.0]), 0.0);
    }
}
