//! Samples → series and summary metrics, streamed: memory grows with the number of threads
//! and processes, never with the number of requests or the length of the run.
//!
//! Engines call [`Recorder`] as things happen (a delay chosen, a request decided, a job done)
//! and at every sampling tick; the recorder writes `series.csv` (and `requests.csv`) as it goes
//! and computes the summary at the end.

mod failure;
mod footprint;
mod levels;
mod peak;
mod series_size;
mod summary;
mod thread_totals;
mod windowed;
mod writer;

use std::io::Write;

use hdrhistogram::Histogram;

pub use failure::Failure;
pub use footprint::{TooBigForMemory, memory_estimate, too_big_for};
pub use peak::{PeakCounter, Peaks};
pub use series_size::{MAX_SERIES_BYTES, SeriesTooLarge, series_bytes_estimate, too_large};
pub use summary::{
    DeadWorker, ExpectVerdict, GapPercentiles, GroupGaps, GroupSummary, MANY_ERRORS, Metrics,
    ProcessSummary, RequestTrouble, RunMode, Summary, metric_bounds, within_bounds,
};
pub use thread_totals::{THREAD_COLUMNS, THREADS_FILE, write_thread_totals};
pub use writer::{CsvProblem, CsvSink, open_csv};

use crate::exchange::{RAW_FIELDS, RawFields, Response, Status};
use crate::scenario::{Layout, RunConfig, SeriesLevel};
use crate::time::{Nanos, secs};

/// `series.csv`'s columns, as the recorder writes them and the charts read them.
pub const SERIES_COLUMNS: [&str; 10] = [
    "t",
    "group",
    "process",
    "thread",
    "sleep",
    "requests",
    "ok",
    "limited",
    "errors",
    "remaining",
];

/// The window of `fairness_windowed` when the scenario names none: ten minutes, long enough
/// that a thread sending every 20 s has 30 answers in it, short enough that a population that
/// changes every half hour is steady in most windows.
pub const DEFAULT_FAIRNESS_WINDOW: Nanos = 600 * crate::time::NANOS_PER_SEC;

/// The coefficient of variation of the per-process sleep values at or below which a run counts
/// as converged (`convergence_s`; docs/metrics.md).
pub const CONVERGED_CV: f64 = 0.25;

/// Requests and what they were answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub requests: u64,
    pub ok: u64,
    pub limited: u64,
    pub errors: u64,
}

impl Counts {
    /// One more request, answered with `status`.
    pub fn add(&mut self, status: Status) {
        self.requests += 1;
        match status {
            Status::Ok => self.ok += 1,
            Status::Limited => self.limited += 1,
            Status::Unavailable | Status::Error => self.errors += 1,
        }
    }

    pub fn merge(&mut self, o: &Counts) {
        self.requests += o.requests;
        self.ok += o.ok;
        self.limited += o.limited;
        self.errors += o.errors;
    }
}

#[derive(Clone, Debug, Default)]
struct ThreadStats {
    total: Counts,
    /// Requests sent in the second half of the run (`ratio_429_late`).
    late: Counts,
    /// Jobs abandoned by the client (e.g. the timeout of Rebased's Redis interval lock); nothing
    /// was sent for them.
    gave_up: u64,
    /// When a thread with a finite workload got its last 2xx.
    finished_at: Option<Nanos>,
    interval: Counts,
    max_sleep: Nanos,
    last_remaining: Option<u64>,
}

/// Tracks `convergence_s` in O(1): the first tick of the final run of converged ticks.
#[derive(Clone, Copy, Debug, Default)]
struct Convergence {
    since: Option<Nanos>,
}

impl Convergence {
    fn observe(&mut self, t: Nanos, converged: bool) {
        match (converged, self.since) {
            (true, None) => self.since = Some(t),
            (false, _) => self.since = None,
            (true, Some(_)) => {}
        }
    }
}

/// Coefficient of variation (population standard deviation over mean) of `values`; 0 for
/// fewer than two values or an all-zero set.
pub fn coefficient_of_variation(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    var.sqrt() / mean.abs()
}

/// One request as `requests.csv` records it.
#[derive(Clone, Copy, Debug)]
pub struct RequestRecord<'a> {
    pub thread: usize,
    pub sent_at: Nanos,
    /// What came back, as the client saw it.
    pub response: Response,
    /// The wait the thread chose before this request.
    pub waited: Nanos,
    /// Which error, when it was one (neither 2xx nor 429).
    pub failure: Option<Failure>,
    /// The answer's rate-limit fields as sent, when the engine saw them (live runs with
    /// `--log-requests`): requests.csv's raw columns.
    pub raw: Option<&'a RawFields>,
}

pub struct Recorder<'a, W: Write, R: Write> {
    layout: &'a Layout,
    sample_every: Nanos,
    next_tick: Nanos,
    /// The last tick written, if any.
    last_tick: Option<Nanos>,
    series: CsvSink<W>,
    requests: Option<CsvSink<R>>,
    threads: Vec<ThreadStats>,
    /// Per group: time from wanting to send to the 2xx.
    waits: Vec<Histogram<u64>>,
    /// Index 0 overall, then one per group.
    convergence: Vec<Convergence>,
    scratch: Vec<f64>,
    /// Sliding request counts, when the run asks for `peak_window`.
    peaks: Option<Peaks>,
    /// Per-window 2xx counts for `fairness_windowed`.
    windowed: windowed::Windowed,
    /// What one `series.csv` row covers.
    level: SeriesLevel,
    level_scratch: levels::Scratch,
    /// Each kind of failure met and how often, in the order first met.
    failures: Vec<(Failure, u64)>,
}

impl<'a, W: Write, R: Write> Recorder<'a, W, R> {
    pub fn new(
        layout: &'a Layout,
        sample_every: Nanos,
        series: W,
        requests: Option<R>,
    ) -> std::io::Result<Self> {
        let mut series = CsvSink::new(series);
        series.header(&SERIES_COLUMNS)?;
        let requests = match requests {
            Some(w) => {
                let mut sink = CsvSink::new(w);
                let mut names = vec![
                    "t",
                    "group",
                    "process",
                    "thread",
                    "status",
                    "remaining",
                    "retry_after",
                    "latency",
                    "waited",
                    "error",
                    // What the answer's rate-limit fields said, parsed (`throttle-sim fit`
                    // learns the server's rule from them): the limit, the policy's quota and
                    // window, and the time to the reset.
                    "limit",
                    "policy_limit",
                    "policy_window",
                    "reset",
                ];
                // Then the same fields as sent, one column each (`exchange::RAW_FIELDS`, each
                // cut to `RAW_MAX_BYTES`): empty in the sim, which sends no headers.
                names.extend(RAW_FIELDS);
                sink.header(&names)?;
                Some(sink)
            }
            None => None,
        };
        let histogram = Histogram::new(3).expect("3 significant figures is a valid precision");
        Ok(Recorder {
            layout,
            sample_every: sample_every.max(1),
            next_tick: sample_every.max(1).min(layout.duration),
            last_tick: None,
            series,
            requests,
            threads: vec![ThreadStats::default(); layout.threads.len()],
            waits: vec![histogram; layout.groups.len()],
            convergence: vec![Convergence::default(); layout.groups.len() + 1],
            scratch: Vec::new(),
            peaks: None,
            windowed: windowed::Windowed::new(layout, DEFAULT_FAIRNESS_WINDOW),
            level: SeriesLevel::Thread,
            level_scratch: levels::Scratch::default(),
            failures: Vec::new(),
        })
    }

    /// A recorder as a run of `run`'s settings wants it: rows every `sample_every` at the
    /// `series` level, `fairness_window`, and `peak_window` when it names one.
    pub fn for_run(
        layout: &'a Layout,
        run: &RunConfig,
        series: W,
        requests: Option<R>,
    ) -> std::io::Result<Self> {
        Ok(
            Recorder::new(layout, run.sample_every.nanos(), series, requests)?
                .with_peak_window(run.peak_window.map(|w| w.nanos()))
                .with_fairness_window(run.fairness_window.nanos())
                .with_series_level(run.series),
        )
    }

    /// Write `series.csv` rows per thread (the default), per process or per group.
    pub fn with_series_level(mut self, level: SeriesLevel) -> Self {
        self.level = level;
        self
    }

    /// Judge `fairness_windowed` over windows of this length (default
    /// [`DEFAULT_FAIRNESS_WINDOW`]; cut to the run's length).
    pub fn with_fairness_window(mut self, window: Nanos) -> Self {
        self.windowed = windowed::Windowed::new(self.layout, window);
        self
    }

    /// Also track `peak_requests` and `peak_process_requests` over windows of this length.
    pub fn with_peak_window(mut self, window: Option<Nanos>) -> Self {
        let l = self.layout;
        self.peaks = window.map(|w| Peaks::new(w, l.processes.len(), l.groups.len(), l.keys.len()));
        self
    }

    /// The rows that end a run, for both engines: after an interrupt at `at`, one last row
    /// per thread at that moment (unless one was just written then), so the rows still add
    /// up to the summary's totals; otherwise every tick left up to the end of the run, which
    /// `interrupt` may still stop (a fine `sample_every` leaves millions): the run then ends
    /// at that tick. Returns when the run was interrupted, if it was.
    pub fn finish_rows(
        &mut self,
        interrupted_at: Option<Nanos>,
        sleeps: &[f64],
        interrupt: &std::sync::atomic::AtomicBool,
    ) -> std::io::Result<Option<Nanos>> {
        if interrupted_at.is_none() {
            while let Some(t) = self.next_tick() {
                if interrupt.load(std::sync::atomic::Ordering::Relaxed) {
                    self.tick(t, sleeps)?;
                    return Ok(Some(t));
                }
                self.tick(t, sleeps)?;
            }
        }
        if let Some(at) = interrupted_at
            && self.last_tick.is_none_or(|t| t < at)
        {
            self.tick(at, sleeps)?;
        }
        Ok(interrupted_at)
    }

    /// The next sampling tick due, if the run has one left.
    #[inline]
    pub fn next_tick(&self) -> Option<Nanos> {
        (self.next_tick <= self.layout.duration && self.next_tick != Nanos::MAX)
            .then_some(self.next_tick)
    }

    /// Start loading `thread`'s counters into the cache: its next request comes soon.
    #[inline]
    pub fn prefetch_thread(&self, thread: usize) {
        crate::prefetch::prefetch(&self.threads[thread]);
    }

    /// A thread chose to wait `delay` (the throttle's delay, or its gate's extra wait). A
    /// wait that the end of the run cuts short still counts toward `max_sleep`.
    #[inline]
    pub fn record_delay(&mut self, thread: usize, delay: Nanos) {
        let s = &mut self.threads[thread];
        s.max_sleep = s.max_sleep.max(delay);
    }

    #[inline]
    pub fn record_request(&mut self, r: &RequestRecord<'_>) -> std::io::Result<()> {
        let s = &mut self.threads[r.thread];
        // `max_sleep` is at least the whole wait before a send: a gate that asks for more
        // (fair-share, dual-bucket, the window queue) adds waits to the throttle's delay, and
        // each alone may be far shorter than their sum (requests.csv's `waited`).
        s.max_sleep = s.max_sleep.max(r.waited);
        s.total.add(r.response.status);
        if r.sent_at >= self.layout.duration / 2 {
            s.late.add(r.response.status);
        }
        s.interval.add(r.response.status);
        if r.response.remaining.is_some() {
            s.last_remaining = r.response.remaining;
        }
        if let Some(f) = r.failure {
            match self.failures.iter_mut().find(|(k, _)| *k == f) {
                Some((_, n)) => *n += 1,
                None => self.failures.push((f, 1)),
            }
        }
        if r.response.status == Status::Ok {
            self.windowed
                .record_ok(r.thread, r.sent_at, self.layout, &self.threads);
        }
        if self.peaks.is_some() || self.requests.is_some() {
            self.record_request_detail(r)?;
        }
        Ok(())
    }

    /// The optional parts of a request's record, kept out of the hot path of plain runs.
    #[inline(never)]
    fn record_request_detail(&mut self, r: &RequestRecord<'_>) -> std::io::Result<()> {
        if let Some(p) = &mut self.peaks {
            let info = self.layout.threads[r.thread];
            let group = info.group as usize;
            p.processes[info.process as usize].record(r.sent_at);
            p.groups[group].record(r.sent_at);
            p.keys[self.layout.groups[group].key].record(r.sent_at);
        }
        if let Some(log) = &mut self.requests {
            let info = self.layout.threads[r.thread];
            let group = &self.layout.groups[info.group as usize];
            let process = self.layout.processes[info.process as usize].index;
            log.float(secs(r.sent_at))?;
            log.text(&group.name)?;
            log.uint(process as u64)?;
            log.uint(u64::from(info.local))?;
            log.text(r.response.status.as_str())?;
            log.opt_uint(r.response.remaining)?;
            log.opt_float(r.response.retry_after.map(secs))?;
            log.float(secs(r.response.latency))?;
            log.float(secs(r.waited))?;
            match r.failure {
                Some(f) => log.text(&f.to_string())?,
                None => log.text("")?,
            }
            log.opt_uint(r.response.limit)?;
            log.opt_uint(r.response.quota.map(|q| q.limit))?;
            log.opt_float(r.response.quota.map(|q| secs(q.window)))?;
            log.opt_float(r.response.reset.map(secs))?;
            match r.raw {
                Some(raw) => {
                    for v in &raw.0 {
                        log.text(v.as_deref().unwrap_or(""))?;
                    }
                }
                None => {
                    for _ in RAW_FIELDS {
                        log.text("")?;
                    }
                }
            }
            log.end_row()?;
        }
        Ok(())
    }

    /// A thread abandoned its job without sending.
    #[inline]
    pub fn record_give_up(&mut self, thread: usize) {
        self.threads[thread].gave_up += 1;
    }

    /// A thread with a finite workload got its last 2xx.
    #[inline]
    pub fn record_finished(&mut self, thread: usize, now: Nanos) {
        self.threads[thread].finished_at = Some(now);
    }

    /// A thread got its 2xx `wait` after it first wanted to send.
    #[inline]
    pub fn record_success(&mut self, thread: usize, wait: Nanos) {
        let g = self.layout.threads[thread].group as usize;
        // An auto-resizing histogram only fails on a value past u64 range, which a Nanos is not.
        let _ = self.waits[g].record(wait.max(1));
    }

    /// Write the rows of the tick at `t` given every process's sleep value, and advance.
    pub fn tick(&mut self, t: Nanos, sleeps: &[f64]) -> std::io::Result<()> {
        let layout = self.layout;
        self.windowed.close_through(t, layout, &self.threads);
        let window_start = t.saturating_sub(self.sample_every);
        for (gi, g) in layout.groups.iter().enumerate() {
            // Rows for every thread running at some point of (t − every, t], so the rows
            // always add up to the totals.
            if g.start > t || (g.stop <= window_start && window_start > 0) {
                continue;
            }
            if !self.level.is_thread() {
                levels::write_rows(
                    self.level,
                    &mut self.series,
                    layout,
                    g,
                    t,
                    sleeps,
                    &mut self.threads,
                    &mut self.level_scratch,
                )?;
            }
            // At the coarser levels the rows above are the group's.
            let thread_rows = if self.level.is_thread() {
                g.processes.clone()
            } else {
                0..0
            };
            // The time is the same on every row of the tick and the sleep on every row of a
            // process: each is formatted once, not once per thread.
            let mut t_buf = ryu::Buffer::new();
            let t_text = writer::float_text(&mut t_buf, secs(t));
            for p in thread_rows {
                let proc_info = &layout.processes[p];
                let mut sleep_buf = ryu::Buffer::new();
                let sleep_text = writer::float_text(&mut sleep_buf, sleeps[p]);
                for th in proc_info.threads.clone() {
                    let s = &mut self.threads[th];
                    let row = &mut self.series;
                    row.text(t_text)?;
                    row.text(&g.name)?;
                    row.uint(proc_info.index as u64)?;
                    row.uint(u64::from(layout.threads[th].local))?;
                    row.text(sleep_text)?;
                    row.uint(s.interval.requests)?;
                    row.uint(s.interval.ok)?;
                    row.uint(s.interval.limited)?;
                    row.uint(s.interval.errors)?;
                    row.opt_uint(s.last_remaining)?;
                    row.end_row()?;
                    s.interval = Counts::default();
                }
            }
            self.scratch.clear();
            if g.active_at(t) {
                self.scratch.extend(g.processes.clone().map(|p| sleeps[p]));
            }
            let cv = coefficient_of_variation(&self.scratch);
            self.convergence[gi + 1].observe(t, cv <= CONVERGED_CV);
        }
        self.scratch.clear();
        for g in layout.groups.iter().filter(|g| g.active_at(t)) {
            self.scratch.extend(g.processes.clone().map(|p| sleeps[p]));
        }
        let cv = coefficient_of_variation(&self.scratch);
        self.convergence[0].observe(t, cv <= CONVERGED_CV);
        self.last_tick = Some(t);
        self.next_tick = if t >= layout.duration {
            Nanos::MAX
        } else {
            (t + self.sample_every).min(layout.duration)
        };
        Ok(())
    }

    /// Flush the files and compute the summary of a run that reached `end`.
    pub fn finish(mut self, end: Nanos, ctx: FinishContext<'_>) -> std::io::Result<Summary> {
        self.windowed.close_through(end, self.layout, &self.threads);
        self.series.flush()?;
        if let Some(r) = &mut self.requests {
            r.flush()?;
        }
        Ok(summary::build(&self, end, ctx))
    }
}

/// What only the engine knows at the end of a run.
pub struct FinishContext<'a> {
    pub scenario: &'a str,
    pub seed: u64,
    pub mode: RunMode,
    pub partial: bool,
    /// Why the run is partial, when it is.
    pub partial_reason: Option<String>,
    /// Per process: the final sleep value and the number of backoffs.
    pub processes: &'a [(f64, u64)],
    /// The most 2xx one key could give over the run.
    pub capacity_per_key: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cv_of_equal_values_is_zero_and_of_spread_values_is_positive() {
        assert_eq!(coefficient_of_variation(&[5.0, 5.0, 5.0]), 0.0);
        assert_eq!(coefficient_of_variation(&[5.0]), 0.0);
        let cv = coefficient_of_variation(&[4.0, 20.0]);
        assert!((cv - 8.0 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn convergence_is_the_start_of_the_last_converged_stretch() {
        let mut c = Convergence::default();
        c.observe(10, true);
        c.observe(20, false);
        c.observe(30, true);
        c.observe(40, true);
        assert_eq!(c.since, Some(30));
        c.observe(50, false);
        assert_eq!(c.since, None);
    }
}
