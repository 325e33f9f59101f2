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
    /// The rolling 429 ratio of `counts[i]` over `window` buckets (NaN with no requests).
    pub fn rolling_ratio(&self, i: usize, window: usize) -> Vec<f64> {
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
    let header = rdr.headers().map_err(|e| bad(path, Some(1), e))?.clone();
    let expected = crate::record::THREAD_COLUMNS;
    if header.iter().collect::<Vec<_>>() != expected {
        return Err(bad(
            path,
            Some(1),
            format!("the header must be {}", expected.join(",")),
        ));
    }
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

pub fn read_series_from<R: Read>(
    input: R,
    path: &Path,
    scenario: &Scenario,
) -> Result<SeriesData, ReportError> {
    let layout = Layout::new(scenario);
    let every = scenario.run.sample_every.secs();
    let duration = secs(layout.duration);
    let ticks = (duration / every).ceil().max(1.0) as usize;
    let per_bucket = ticks.div_ceil(MAX_POINTS).max(1);
    let buckets = ticks.div_ceil(per_bucket);
    let bucket_s = per_bucket as f64 * every;
    let times: Vec<f64> = (0..buckets)
        .map(|b| ((b + 1) as f64 * bucket_s).min(duration))
        .collect();

    let group_index: HashMap<&str, usize> = layout
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name.as_str(), i))
        .collect();
    let level = scenario.run.series;
    // Rows per group carry one sleep value per group (the median of its processes): a line each.
    let per_group = level == SeriesLevel::Group;
    let as_lines = per_group || layout.processes.len() <= MAX_PROCESS_LINES;
    let nan = || vec![f64::NAN; buckets];

    let mut lines: Vec<SleepLine> = Vec::new();
    let mut bands: Vec<SleepBand> = Vec::new();
    if per_group {
        for (gi, g) in layout.groups.iter().enumerate() {
            let label = if g.processes.len() == 1 {
                g.name.clone()
            } else {
                format!("{} (median of {} processes)", g.name, g.processes.len())
            };
            lines.push(SleepLine {
                label,
                group: gi,
                values: nan(),
            });
        }
    } else if as_lines {
        for p in &layout.processes {
            let g = &layout.groups[p.group];
            let label = if g.processes.len() == 1 {
                g.name.clone()
            } else {
                format!("{} #{}", g.name, p.index)
            };
            lines.push(SleepLine {
                label,
                group: p.group,
                values: nan(),
            });
        }
    } else {
        for gi in 0..layout.groups.len() {
            bands.push(SleepBand {
                group: gi,
                min: nan(),
                p10: nan(),
                median: nan(),
                p90: nan(),
                max: nan(),
            });
        }
    }
    let mut counts = vec![
        CountSeries {
            requests: vec![0; buckets],
            limited: vec![0; buckets],
        };
        layout.groups.len() + 1
    ];
    let mut remaining: Vec<RemainingSeries> = layout
        .keys
        .iter()
        .map(|k| RemainingSeries {
            key: k.clone(),
            median: nan(),
            min: nan(),
            max: nan(),
        })
        .collect();
    let mut threads: Vec<ThreadTotal> = layout
        .threads
        .iter()
        .map(|t| ThreadTotal {
            group: t.group as usize,
            process: layout.processes[t.process as usize].index,
            thread: t.local as usize,
            requests: 0,
            ok: 0,
        })
        .collect();

    // Per-bucket state, flushed when the bucket changes.
    let mut sleep_mean = vec![Mean::default(); layout.processes.len().max(layout.groups.len())];
    let mut remaining_tick: Vec<Vec<f64>> = vec![Vec::new(); layout.keys.len()];
    let mut remaining_bucket: Vec<(Mean, f64, f64)> =
        vec![(Mean::default(), f64::INFINITY, f64::NEG_INFINITY); layout.keys.len()];
    let mut scratch: Vec<f64> = Vec::new();
    let mut current_tick: Option<usize> = None;
    let mut current_bucket: Option<usize> = None;

    let flush_tick = |remaining_tick: &mut Vec<Vec<f64>>,
                      remaining_bucket: &mut Vec<(Mean, f64, f64)>| {
        for (k, vals) in remaining_tick.iter_mut().enumerate() {
            if vals.is_empty() {
                continue;
            }
            vals.sort_by(f64::total_cmp);
            let acc = &mut remaining_bucket[k];
            acc.0.add(quantile(vals, 0.5));
            acc.1 = acc.1.min(vals[0]);
            acc.2 = acc.2.max(vals[vals.len() - 1]);
            vals.clear();
        }
    };
    let flush_bucket = |b: usize,
                        sleep_mean: &mut Vec<Mean>,
                        remaining_bucket: &mut Vec<(Mean, f64, f64)>,
                        lines: &mut Vec<SleepLine>,
                        bands: &mut Vec<SleepBand>,
                        remaining: &mut Vec<RemainingSeries>,
                        scratch: &mut Vec<f64>| {
        if as_lines {
            for (p, m) in sleep_mean.iter_mut().enumerate().take(lines.len()) {
                if let Some(v) = m.take() {
                    lines[p].values[b] = v;
                }
            }
        } else {
            for (gi, g) in layout.groups.iter().enumerate() {
                scratch.clear();
                scratch.extend(g.processes.clone().filter_map(|p| sleep_mean[p].take()));
                if scratch.is_empty() {
                    continue;
                }
                scratch.sort_by(f64::total_cmp);
                let band = &mut bands[gi];
                band.min[b] = scratch[0];
                band.p10[b] = quantile(scratch, 0.1);
                band.median[b] = quantile(scratch, 0.5);
                band.p90[b] = quantile(scratch, 0.9);
                band.max[b] = scratch[scratch.len() - 1];
            }
        }
        for (k, acc) in remaining_bucket.iter_mut().enumerate() {
            if let Some(m) = acc.0.take() {
                remaining[k].median[b] = m;
                remaining[k].min[b] = acc.1;
                remaining[k].max[b] = acc.2;
            }
            acc.1 = f64::INFINITY;
            acc.2 = f64::NEG_INFINITY;
        }
    };

    // Thread index by (group, process, thread), from the layout's dense numbering.
    let mut process_base: Vec<usize> = Vec::with_capacity(layout.groups.len());
    for g in &layout.groups {
        process_base.push(g.processes.start);
    }

    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(input);
    let header = rdr.headers().map_err(|e| bad(path, Some(1), e))?.clone();
    let expected = crate::record::SERIES_COLUMNS;
    if header.iter().collect::<Vec<_>>() != expected {
        return Err(bad(
            path,
            Some(1),
            format!("the header must be {}", expected.join(",")),
        ));
    }
    let mut record = csv::StringRecord::new();
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(bad(path, e.position().map(|p| p.line()), e)),
        }
        let line = record.position().map(|p| p.line());
        // NaN or inf would draw blank charts without a word (issue 11): refused by name.
        let num = |i: usize| -> Result<f64, ReportError> {
            match record[i].parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                Ok(v) => Err(bad(
                    path,
                    line,
                    format!("{} is {v}, not a finite number", expected[i]),
                )),
                Err(_) => Err(bad(path, line, format!("{} is not a number", expected[i]))),
            }
        };
        let int = |i: usize| -> Result<u64, ReportError> {
            record[i].parse::<u64>().map_err(|_| {
                bad(
                    path,
                    line,
                    format!("{} is not a whole number of 0 or more", expected[i]),
                )
            })
        };
        let t = num(0)?;
        let gi = *group_index.get(&record[1]).ok_or_else(|| {
            bad(
                path,
                line,
                format!("group `{}` is not in scenario.toml", &record[1]),
            )
        })?;
        let g = &layout.groups[gi];
        // The fields a coarser row leaves empty, and those it must not.
        let empty_or = |i: usize, want_empty: bool| -> Result<Option<usize>, ReportError> {
            match (record[i].is_empty(), want_empty) {
                (true, true) => Ok(None),
                (false, false) => Ok(Some(int(i)? as usize)),
                (false, true) => Err(bad(
                    path,
                    line,
                    format!(
                        "{} must be empty: scenario.toml says series = \"{}\"",
                        expected[i],
                        level.as_str()
                    ),
                )),
                (true, false) => Err(bad(
                    path,
                    line,
                    format!("{} is not a whole number of 0 or more", expected[i]),
                )),
            }
        };
        let process = empty_or(2, per_group)?.unwrap_or(0);
        let thread = empty_or(3, level != SeriesLevel::Thread)?.unwrap_or(0);
        if process >= g.processes.len() {
            return Err(bad(
                path,
                line,
                format!("group {} has no process {process}", g.name),
            ));
        }
        let p = process_base[gi] + process;
        let th_range = layout.processes[p].threads.clone();
        if thread >= th_range.len() {
            return Err(bad(
                path,
                line,
                format!("process {process} has no thread {thread}"),
            ));
        }
        let th = th_range.start + thread;
        let sleep = num(4)?;
        let (requests, ok, limited) = (int(5)?, int(6)?, int(7)?);
        let seen = if record[9].is_empty() {
            None
        } else {
            Some(int(9)? as f64)
        };

        let tick = ((t / every - 1e-6).ceil().max(1.0) as usize - 1).min(ticks - 1);
        if current_tick != Some(tick) {
            if current_tick.is_some_and(|c| c > tick) {
                return Err(bad(path, line, "rows must be in time order"));
            }
            flush_tick(&mut remaining_tick, &mut remaining_bucket);
            current_tick = Some(tick);
            let bucket = tick / per_bucket;
            if let Some(prev) = current_bucket
                && prev != bucket
            {
                flush_bucket(
                    prev,
                    &mut sleep_mean,
                    &mut remaining_bucket,
                    &mut lines,
                    &mut bands,
                    &mut remaining,
                    &mut scratch,
                );
            }
            current_bucket = Some(bucket);
        }
        let bucket = tick / per_bucket;
        if per_group {
            sleep_mean[gi].add(sleep);
        } else if thread == 0 {
            sleep_mean[p].add(sleep);
        }
        for c in [0, gi + 1] {
            counts[c].requests[bucket] += requests;
            counts[c].limited[bucket] += limited;
        }
        if requests > 0
            && let Some(r) = seen
        {
            remaining_tick[g.key].push(r);
        }
        // Coarser rows sum several threads: their totals come from threads.csv.
        if level == SeriesLevel::Thread {
            threads[th].requests += requests;
            threads[th].ok += ok;
        }
    }
    flush_tick(&mut remaining_tick, &mut remaining_bucket);
    if let Some(b) = current_bucket {
        flush_bucket(
            b,
            &mut sleep_mean,
            &mut remaining_bucket,
            &mut lines,
            &mut bands,
            &mut remaining,
            &mut scratch,
        );
    }
    Ok(SeriesData {
        groups: layout.groups.iter().map(|g| g.name.clone()).collect(),
        bucket_s,
        times,
        sleep: if as_lines {
            SleepSeries::Lines(lines)
        } else {
            SleepSeries::Bands(bands)
        },
        counts,
        remaining,
        threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario;

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
