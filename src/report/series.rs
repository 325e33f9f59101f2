//! `series.csv` read back for the charts in one streaming pass. What is kept grows with the
//! number of processes and threads and with at most [`MAX_POINTS`] time points, never with
//! the number of rows: long runs are averaged into buckets of several ticks, and runs with
//! many processes keep percentile bands instead of one line per process.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::ReportError;
use crate::scenario::Layout;
use crate::scenario::{Scenario, SeriesLevel};
use crate::time::secs;

/// The most time points a chart draws; runs with more ticks average ticks into buckets.
pub const MAX_POINTS: usize = 2000;
/// Up to this many processes the sleep chart draws one line each; past it, bands per group.
pub const MAX_PROCESS_LINES: usize = 16;

/// The sleep values of the processes over time.
#[derive(Clone, Debug, PartialEq)]
pub enum SleepSeries {
    /// One line per process: label, group index, one value per bucket (NaN while absent).
    Lines(Vec<SleepLine>),
    /// Per group, per bucket: the spread over its processes.
    Bands(Vec<SleepBand>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct SleepLine {
    pub label: String,
    pub group: usize,
    pub values: Vec<f64>,
}

/// Percentiles over a group's processes, per bucket (NaN while the group is absent).
#[derive(Clone, Debug, PartialEq)]
pub struct SleepBand {
    pub group: usize,
    pub min: Vec<f64>,
    pub p10: Vec<f64>,
    pub median: Vec<f64>,
    pub p90: Vec<f64>,
    pub max: Vec<f64>,
}

/// Requests and 429s per bucket.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CountSeries {
    pub requests: Vec<u64>,
    pub limited: Vec<u64>,
}

/// The `RateLimit-Remaining` the clients of one server key saw, per bucket.
#[derive(Clone, Debug, PartialEq)]
pub struct RemainingSeries {
    pub key: String,
    /// Median over the threads that sent during a tick, averaged over the bucket's ticks.
    pub median: Vec<f64>,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

/// One thread's totals over the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadTotal {
    pub group: usize,
    pub process: usize,
    pub thread: usize,
    pub requests: u64,
    pub ok: u64,
}

/// What the charts of one run need.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesData {
    pub groups: Vec<String>,
    /// Seconds covered by one bucket (a whole number of sampling ticks).
    pub bucket_s: f64,
    /// The end of each bucket, seconds.
    pub times: Vec<f64>,
    pub sleep: SleepSeries,
    /// Index 0 for all groups, then one per group.
    pub counts: Vec<CountSeries>,
    pub remaining: Vec<RemainingSeries>,
    pub threads: Vec<ThreadTotal>,
}

impl SeriesData {
    /// The rolling 429 ratio of `counts[i]` over `window` buckets: NaN before the first
    /// request and after the last; a window without requests in between (the clients all
    /// waiting, as a recording's do) got no 429 and shows 0, so the line does not stop in
    /// mid-air.
    pub fn rolling_ratio(&self, i: usize, window: usize) -> Vec<f64> {
        zero_between(self.rolling_ratio_sent(i, window))
    }

    /// The rolling 429 ratio of `counts[i]` over `window` buckets (NaN with no requests).
    fn rolling_ratio_sent(&self, i: usize, window: usize) -> Vec<f64> {
        let c = &self.counts[i];
        let window = window.max(1);
        let (mut req, mut lim) = (0u64, 0u64);
        let mut out = Vec::with_capacity(c.requests.len());
        for b in 0..c.requests.len() {
            req += c.requests[b];
            lim += c.limited[b];
            if b >= window {
                req -= c.requests[b - window];
                lim -= c.limited[b - window];
            }
            out.push(if req > 0 {
                lim as f64 / req as f64
            } else {
                f64::NAN
            });
        }
        out
    }

    /// A rolling window of about 1/50 of the run, in whole buckets.
    pub fn default_window(&self) -> usize {
        let total = self.times.last().copied().unwrap_or(0.0);
        ((total / 50.0) / self.bucket_s).round().max(1.0) as usize
    }
}

/// An error reading `series.csv`, with the line at fault when there is one.
fn bad(path: &Path, line: Option<u64>, message: impl std::fmt::Display) -> ReportError {
    ReportError::bad_file(path, line, message)
}

/// Per process and bucket: the running mean of its sleep value.
#[derive(Clone, Copy, Default)]
struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    fn add(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
    }
    fn take(&mut self) -> Option<f64> {
        let m = (self.n > 0).then(|| self.sum / f64::from(self.n));
        *self = Mean::default();
        m
    }
}

/// Read `path` (the `series.csv` of a run of `scenario`), and beside it `threads.csv` when
/// the rows are per process or per group.
pub fn read_series(path: &Path, scenario: &Scenario) -> Result<SeriesData, ReportError> {
    let file = File::open(path).map_err(|e| bad(path, None, e))?;
    let mut data = read_series_from(file, path, scenario)?;
    if scenario.run.series != SeriesLevel::Thread {
        let threads_path = path.with_file_name(crate::record::THREADS_FILE);
        super::files::regular(&threads_path, "the charts of each thread are drawn from it")?;
        let file = File::open(&threads_path).map_err(|e| bad(&threads_path, None, e))?;
        read_thread_totals(file, &threads_path, &mut data.threads)?;
    }
    Ok(data)
}

/// Fill `threads` (in the layout's order) from `threads.csv`: one row per thread, in order.
pub fn read_thread_totals<R: Read>(
    input: R,
    path: &Path,
    threads: &mut [ThreadTotal],
) -> Result<(), ReportError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(input);
    let expected = crate::record::THREAD_COLUMNS;
    check_header(&mut rdr, path, &expected)?;
    let mut rows = 0;
    for (i, record) in rdr.records().enumerate() {
        let record = record.map_err(|e| bad(path, e.position().map(|p| p.line()), e))?;
        let line = Some(i as u64 + 2);
        let Some(t) = threads.get_mut(i) else {
            return Err(bad(path, line, "more rows than the scenario has threads"));
        };
        let int = |c: usize| -> Result<u64, ReportError> {
            record
                .get(c)
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| bad(path, line, format!("{} is not a whole number", expected[c])))
        };
        if int(1)? != t.process as u64 || int(2)? != t.thread as u64 {
            return Err(bad(
                path,
                line,
                format!("expected process {} thread {} here", t.process, t.thread),
            ));
        }
        t.requests = int(3)?;
        t.ok = int(4)?;
        rows += 1;
    }
    if rows != threads.len() {
        return Err(bad(
            path,
            None,
            format!("{rows} rows for the scenario's {} threads", threads.len()),
        ));
    }
    Ok(())
}

/// Quantile `q` of sorted values, by linear interpolation between neighbours.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Read a `series.csv` of a run of `scenario` from `input` (`path` names it in errors).
pub fn read_series_from<R: Read>(
    input: R,
    path: &Path,
    scenario: &Scenario,
) -> Result<SeriesData, ReportError> {
    let layout = Layout::new(scenario);
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(input);
    check_header(&mut rdr, path, &crate::record::SERIES_COLUMNS)?;
    let mut acc = Accumulator::new(scenario, &layout);
    let mut record = csv::StringRecord::new();
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(bad(path, e.position().map(|p| p.line()), e)),
        }
        let line = record.position().map(|p| p.line());
        let row = acc.parse(&record, |m| bad(path, line, m))?;
        acc.add(&row).map_err(|m| bad(path, line, m))?;
    }
    Ok(acc.finish())
}

/// Refuse a CSV file whose header is not `expected`, naming line 1.
fn check_header<R: Read>(
    rdr: &mut csv::Reader<R>,
    path: &Path,
    expected: &[&str],
) -> Result<(), ReportError> {
    let header = rdr.headers().map_err(|e| bad(path, Some(1), e))?;
    if header.iter().ne(expected.iter().copied()) {
        return Err(bad(
            path,
            Some(1),
            format!("the header must be {}", expected.join(",")),
        ));
    }
    Ok(())
}

/// How the run's sampling ticks fall into the charts' buckets: every tick when there are
/// few, else [`MAX_POINTS`] buckets of several ticks each.
struct Grid {
    /// `sample_every`, seconds.
    every: f64,
    ticks: usize,
    per_bucket: usize,
    buckets: usize,
    /// The run's duration, seconds.
    duration: f64,
}

impl Grid {
    fn new(scenario: &Scenario, layout: &Layout) -> Self {
        let every = scenario.run.sample_every.secs();
        let duration = secs(layout.duration);
        let ticks = (duration / every).ceil().max(1.0) as usize;
        let per_bucket = ticks.div_ceil(MAX_POINTS).max(1);
        Grid {
            every,
            ticks,
            per_bucket,
            buckets: ticks.div_ceil(per_bucket),
            duration,
        }
    }

    fn bucket_s(&self) -> f64 {
        self.per_bucket as f64 * self.every
    }

    /// The end of each bucket, seconds.
    fn times(&self) -> Vec<f64> {
        (0..self.buckets)
            .map(|b| ((b + 1) as f64 * self.bucket_s()).min(self.duration))
            .collect()
    }

    /// The tick a row written at `t` seconds belongs to.
    fn tick_of(&self, t: f64) -> usize {
        ((t / self.every - 1e-6).ceil().max(1.0) as usize - 1).min(self.ticks - 1)
    }

    fn nan(&self) -> Vec<f64> {
        vec![f64::NAN; self.buckets]
    }
}

/// One row of `series.csv`, checked against the scenario.
struct Row {
    t: f64,
    group: usize,
    /// Global process index (the group's first when the row is per group).
    process: usize,
    /// Global thread index (the process's first when the row is coarser).
    thread: usize,
    /// The row's own thread number within its process (0 when coarser).
    local_thread: usize,
    sleep: f64,
    requests: u64,
    ok: u64,
    limited: u64,
    /// The `RateLimit-Remaining` seen, when one was.
    seen: Option<f64>,
}

/// Over one bucket: the running mean of each tick's median `RateLimit-Remaining`, and the
/// lowest and highest seen.
#[derive(Clone, Copy)]
struct Spread {
    median: Mean,
    min: f64,
    max: f64,
}

impl Default for Spread {
    fn default() -> Self {
        Spread {
            median: Mean::default(),
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

/// `series.csv` read row by row into what the charts keep: per tick, then per bucket.
struct Accumulator<'a> {
    layout: &'a Layout,
    grid: Grid,
    level: SeriesLevel,
    /// Rows per group carry one sleep value per group (the median of its processes).
    per_group: bool,
    /// One sleep line per process (or group), else bands per group.
    as_lines: bool,
    group_index: HashMap<&'a str, usize>,
    lines: Vec<SleepLine>,
    bands: Vec<SleepBand>,
    counts: Vec<CountSeries>,
    remaining: Vec<RemainingSeries>,
    threads: Vec<ThreadTotal>,
    /// Per process (or group), over the current bucket.
    sleep_mean: Vec<Mean>,
    /// Per key: the values seen in the current tick, then their spread over the bucket.
    remaining_tick: Vec<Vec<f64>>,
    remaining_bucket: Vec<Spread>,
    scratch: Vec<f64>,
    current_tick: Option<usize>,
    current_bucket: Option<usize>,
}

impl<'a> Accumulator<'a> {
    fn new(scenario: &Scenario, layout: &'a Layout) -> Self {
        let grid = Grid::new(scenario, layout);
        let level = scenario.run.series;
        let per_group = level == SeriesLevel::Group;
        let as_lines = per_group || layout.processes.len() <= MAX_PROCESS_LINES;
        let (lines, bands) = empty_sleep(layout, &grid, per_group, as_lines);
        let counts = CountSeries {
            requests: vec![0; grid.buckets],
            limited: vec![0; grid.buckets],
        };
        Accumulator {
            layout,
            level,
            per_group,
            as_lines,
            group_index: layout
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| (g.name.as_str(), i))
                .collect(),
            lines,
            bands,
            counts: vec![counts; layout.groups.len() + 1],
            remaining: layout
                .keys
                .iter()
                .map(|k| RemainingSeries {
                    key: k.clone(),
                    median: grid.nan(),
                    min: grid.nan(),
                    max: grid.nan(),
                })
                .collect(),
            threads: layout
                .threads
                .iter()
                .map(|t| ThreadTotal {
                    group: t.group as usize,
                    process: layout.processes[t.process as usize].index,
                    thread: t.local as usize,
                    requests: 0,
                    ok: 0,
                })
                .collect(),
            sleep_mean: vec![Mean::default(); layout.processes.len().max(layout.groups.len())],
            remaining_tick: vec![Vec::new(); layout.keys.len()],
            remaining_bucket: vec![Spread::default(); layout.keys.len()],
            scratch: Vec::new(),
            current_tick: None,
            current_bucket: None,
            grid,
        }
    }

    /// Check one record against the header's meaning and the scenario; `bad` makes the error
    /// (naming the line) from what is wrong.
    fn parse(
        &self,
        record: &csv::StringRecord,
        bad: impl Fn(String) -> ReportError,
    ) -> Result<Row, ReportError> {
        let columns = crate::record::SERIES_COLUMNS;
        // NaN or inf would draw blank charts without a word: refused by name.
        let num = |i: usize| -> Result<f64, ReportError> {
            match record[i].parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                Ok(v) => Err(bad(format!("{} is {v}, not a finite number", columns[i]))),
                Err(_) => Err(bad(format!("{} is not a number", columns[i]))),
            }
        };
        let int = |i: usize| -> Result<u64, ReportError> {
            record[i]
                .parse::<u64>()
                .map_err(|_| bad(format!("{} is not a whole number of 0 or more", columns[i])))
        };
        // The fields a coarser row leaves empty, and those it must not.
        let empty_or = |i: usize, want_empty: bool| -> Result<Option<usize>, ReportError> {
            match (record[i].is_empty(), want_empty) {
                (true, true) => Ok(None),
                (false, false) => Ok(Some(int(i)? as usize)),
                (false, true) => Err(bad(format!(
                    "{} must be empty: scenario.toml says series = \"{}\"",
                    columns[i],
                    self.level.as_str()
                ))),
                (true, false) => Err(bad(format!(
                    "{} is not a whole number of 0 or more",
                    columns[i]
                ))),
            }
        };
        let t = num(0)?;
        let group = *self
            .group_index
            .get(&record[1])
            .ok_or_else(|| bad(format!("group `{}` is not in scenario.toml", &record[1])))?;
        let g = &self.layout.groups[group];
        let process = empty_or(2, self.per_group)?.unwrap_or(0);
        let local_thread = empty_or(3, self.level != SeriesLevel::Thread)?.unwrap_or(0);
        if process >= g.processes.len() {
            return Err(bad(format!("group {} has no process {process}", g.name)));
        }
        let p = g.processes.start + process;
        let th_range = self.layout.processes[p].threads.clone();
        if local_thread >= th_range.len() {
            return Err(bad(format!(
                "process {process} has no thread {local_thread}"
            )));
        }
        Ok(Row {
            t,
            group,
            process: p,
            thread: th_range.start + local_thread,
            local_thread,
            sleep: num(4)?,
            requests: int(5)?,
            ok: int(6)?,
            limited: int(7)?,
            seen: if record[9].is_empty() {
                None
            } else {
                Some(int(9)? as f64)
            },
        })
    }

    /// Count one row; rows must come in time order.
    fn add(&mut self, row: &Row) -> Result<(), &'static str> {
        let tick = self.grid.tick_of(row.t);
        if self.current_tick != Some(tick) {
            if self.current_tick.is_some_and(|c| c > tick) {
                return Err("rows must be in time order");
            }
            self.flush_tick();
            self.current_tick = Some(tick);
            let bucket = tick / self.grid.per_bucket;
            if let Some(prev) = self.current_bucket
                && prev != bucket
            {
                self.flush_bucket(prev);
            }
            self.current_bucket = Some(bucket);
        }
        let bucket = tick / self.grid.per_bucket;
        if self.per_group {
            self.sleep_mean[row.group].add(row.sleep);
        } else if row.local_thread == 0 {
            self.sleep_mean[row.process].add(row.sleep);
        }
        for c in [0, row.group + 1] {
            self.counts[c].requests[bucket] += row.requests;
            self.counts[c].limited[bucket] += row.limited;
        }
        if row.requests > 0
            && let Some(r) = row.seen
        {
            self.remaining_tick[self.layout.groups[row.group].key].push(r);
        }
        // Coarser rows sum several threads: their totals come from threads.csv.
        if self.level == SeriesLevel::Thread {
            self.threads[row.thread].requests += row.requests;
            self.threads[row.thread].ok += row.ok;
        }
        Ok(())
    }

    /// A tick is over: each key's median `RateLimit-Remaining` joins its bucket's spread.
    fn flush_tick(&mut self) {
        for (vals, acc) in self
            .remaining_tick
            .iter_mut()
            .zip(&mut self.remaining_bucket)
        {
            if vals.is_empty() {
                continue;
            }
            vals.sort_by(f64::total_cmp);
            acc.median.add(quantile(vals, 0.5));
            acc.min = acc.min.min(vals[0]);
            acc.max = acc.max.max(vals[vals.len() - 1]);
            vals.clear();
        }
    }

    /// Bucket `b` is over: its sleep values and remaining spread become points.
    fn flush_bucket(&mut self, b: usize) {
        if self.as_lines {
            for (line, m) in self.lines.iter_mut().zip(&mut self.sleep_mean) {
                if let Some(v) = m.take() {
                    line.values[b] = v;
                }
            }
        } else {
            for (g, band) in self.layout.groups.iter().zip(&mut self.bands) {
                let scratch = &mut self.scratch;
                scratch.clear();
                scratch.extend(
                    g.processes
                        .clone()
                        .filter_map(|p| self.sleep_mean[p].take()),
                );
                if scratch.is_empty() {
                    continue;
                }
                scratch.sort_by(f64::total_cmp);
                band.min[b] = scratch[0];
                band.p10[b] = quantile(scratch, 0.1);
                band.median[b] = quantile(scratch, 0.5);
                band.p90[b] = quantile(scratch, 0.9);
                band.max[b] = scratch[scratch.len() - 1];
            }
        }
        for (acc, series) in self.remaining_bucket.iter_mut().zip(&mut self.remaining) {
            if let Some(m) = acc.median.take() {
                series.median[b] = m;
                series.min[b] = acc.min;
                series.max[b] = acc.max;
            }
            acc.min = f64::INFINITY;
            acc.max = f64::NEG_INFINITY;
        }
    }

    fn finish(mut self) -> SeriesData {
        self.flush_tick();
        if let Some(b) = self.current_bucket {
            self.flush_bucket(b);
        }
        SeriesData {
            groups: self.layout.groups.iter().map(|g| g.name.clone()).collect(),
            bucket_s: self.grid.bucket_s(),
            times: self.grid.times(),
            sleep: if self.as_lines {
                SleepSeries::Lines(self.lines)
            } else {
                SleepSeries::Bands(self.bands)
            },
            counts: self.counts,
            remaining: self.remaining,
            threads: self.threads,
        }
    }
}

/// The sleep chart's series, all NaN: a line per group (rows per group), a line per process
/// (few processes), else a band per group.
fn empty_sleep(
    layout: &Layout,
    grid: &Grid,
    per_group: bool,
    as_lines: bool,
) -> (Vec<SleepLine>, Vec<SleepBand>) {
    if per_group {
        let lines = layout.groups.iter().enumerate().map(|(gi, g)| SleepLine {
            label: if g.processes.len() == 1 {
                g.name.clone()
            } else {
                format!("{} (median of {} processes)", g.name, g.processes.len())
            },
            group: gi,
            values: grid.nan(),
        });
        (lines.collect(), Vec::new())
    } else if as_lines {
        let lines = layout.processes.iter().map(|p| {
            let g = &layout.groups[p.group];
            SleepLine {
                label: if g.processes.len() == 1 {
                    g.name.clone()
                } else {
                    format!("{} #{}", g.name, p.index)
                },
                group: p.group,
                values: grid.nan(),
            }
        });
        (lines.collect(), Vec::new())
    } else {
        let bands = (0..layout.groups.len()).map(|gi| SleepBand {
            group: gi,
            min: grid.nan(),
            p10: grid.nan(),
            median: grid.nan(),
            p90: grid.nan(),
            max: grid.nan(),
        });
        (Vec::new(), bands.collect())
    }
}

/// NaN between the first and the last finite value made 0; the ends left NaN.
fn zero_between(mut v: Vec<f64>) -> Vec<f64> {
    let first = v.iter().position(|x| x.is_finite());
    let last = v.iter().rposition(|x| x.is_finite());
    if let (Some(a), Some(b)) = (first, last) {
        for x in &mut v[a..=b] {
            if x.is_nan() {
                *x = 0.0;
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario;

    #[test]
    fn a_ratio_line_goes_on_through_windows_without_requests() {
        let n = f64::NAN;
        let v = zero_between(vec![n, 0.5, n, n, 0.25, n]);
        assert!(
            v[0].is_nan() && v[5].is_nan(),
            "not before the first or after the last"
        );
        assert_eq!(&v[1..5], &[0.5, 0.0, 0.0, 0.25]);
        assert!(zero_between(vec![n, n]).iter().all(|x| x.is_nan()));
    }

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "[run]\nduration = \"40s\"\nsample_every = \"10s\"\n[server]\nlimit = 100\n\
             [[clients]]\nname = \"a\"\nthreads = 2\n{extra}"
        );
        parse_scenario(&text, "t.toml", "t", &[], 1).unwrap()
    }

    const CSV: &str = "t,group,process,thread,sleep,requests,ok,limited,errors,remaining\n\
        10,a,0,0,2,4,3,1,0,50\n10,a,0,1,2,2,2,0,0,40\n\
        20,a,0,0,3,0,0,0,0,50\n20,a,0,1,3,5,5,0,0,30\n\
        30,a,0,0,1,1,0,1,0,0\n30,a,0,1,1,1,1,0,0,10\n";

    #[test]
    fn sums_counts_and_keeps_sleep_and_remaining_per_tick() {
        let s = scenario("");
        let d = read_series_from(CSV.as_bytes(), Path::new("series.csv"), &s).unwrap();
        assert_eq!(d.times, vec![10.0, 20.0, 30.0, 40.0]);
        assert_eq!(d.counts[0].requests, vec![6, 5, 2, 0]);
        assert_eq!(d.counts[1].limited, vec![1, 0, 1, 0]);
        match &d.sleep {
            SleepSeries::Lines(l) => {
                assert_eq!(&l[0].values[..3], &[2.0, 3.0, 1.0]);
                assert!(l[0].values[3].is_nan());
            }
            other => panic!("{other:?}"),
        }
        // Only threads that sent during the tick count: at 20 s that is thread 1 alone.
        assert_eq!(&d.remaining[0].median[..3], &[45.0, 30.0, 5.0]);
        assert_eq!(&d.remaining[0].min[..3], &[40.0, 30.0, 0.0]);
        assert_eq!((d.threads[0].ok, d.threads[1].ok), (3, 8));
        let r = d.rolling_ratio(0, 2);
        assert!((r[0] - 1.0 / 6.0).abs() < 1e-12);
        assert!((r[1] - 1.0 / 11.0).abs() < 1e-12);
        assert!((r[2] - 1.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn many_processes_give_bands() {
        let s = scenario("processes = 20\n");
        let mut csv = String::from(CSV.lines().next().unwrap());
        csv.push('\n');
        for p in 0..20 {
            csv.push_str(&format!("10,a,{p},0,{},1,1,0,0,5\n", p + 1));
        }
        let d = read_series_from(csv.as_bytes(), Path::new("series.csv"), &s).unwrap();
        match &d.sleep {
            SleepSeries::Bands(b) => {
                assert_eq!(b[0].min[0], 1.0);
                assert_eq!(b[0].max[0], 20.0);
                assert_eq!(b[0].median[0], 10.5);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn long_runs_are_bucketed() {
        let text = "[run]\nduration = \"100h\"\nsample_every = \"10s\"\n[server]\nlimit = 100\n\
                    [[clients]]\nname = \"a\"\n";
        let s = parse_scenario(text, "t.toml", "t", &[], 1).unwrap();
        let mut csv = String::from(CSV.lines().next().unwrap());
        csv.push('\n');
        for i in 1..=36_000u64 {
            csv.push_str(&format!("{},a,0,0,1,1,0,{},0,5\n", i * 10, i % 2));
        }
        let d = read_series_from(csv.as_bytes(), Path::new("series.csv"), &s).unwrap();
        assert!(d.times.len() <= MAX_POINTS, "{}", d.times.len());
        assert_eq!(d.counts[0].requests.iter().sum::<u64>(), 36_000);
        assert_eq!(d.counts[0].limited.iter().sum::<u64>(), 18_000);
    }

    #[test]
    fn bad_rows_name_the_line() {
        let s = scenario("");
        let csv = CSV.replace("20,a,0,1,3,5", "20,b,0,1,3,5");
        let e = read_series_from(csv.as_bytes(), Path::new("series.csv"), &s).unwrap_err();
        assert!(e.to_string().starts_with("series.csv:5: group `b`"), "{e}");
        let csv = CSV.replace("30,a,0,0,1,1", "30,a,0,0,x,1");
        let e = read_series_from(csv.as_bytes(), Path::new("series.csv"), &s).unwrap_err();
        assert!(e.to_string().contains(":6: sleep is not a number"), "{e}");
    }
}
