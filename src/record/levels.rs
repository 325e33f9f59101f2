//! `series.csv` rows at the coarser `[run] series` levels: one row per process or per group
//! per tick instead of one per thread, so a run of 10,000 threads over a day writes megabytes,
//! not gigabytes (results/README.md).
//!
//! The columns stay those of [`super::SERIES_COLUMNS`], so every reader of the file keeps
//! working: the counts are the sums over the row's threads, `process` and `thread` are empty
//! where the row covers more than one, `sleep` is the process's own value (per group: the
//! median over its processes), and `remaining` is the lower median of the last
//! `RateLimit-Remaining` seen by the row's threads that sent during the tick (empty when none
//! did). Nothing the summary reports is read from these rows.

use std::io::Write;

use super::{Counts, CsvSink, ThreadStats};
use crate::scenario::{GroupInfo, Layout, SeriesLevel};
use crate::time::{Nanos, secs};

/// Reused buffers, so a tick allocates nothing.
#[derive(Default)]
pub(super) struct Scratch {
    remaining: Vec<u64>,
    sleeps: Vec<f64>,
}

/// Write group `g`'s rows of the tick at `t` at `level` (process or group) and reset its
/// threads' interval counts.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_rows<W: Write>(
    level: SeriesLevel,
    out: &mut CsvSink<W>,
    layout: &Layout,
    g: &GroupInfo,
    t: Nanos,
    sleeps: &[f64],
    threads: &mut [ThreadStats],
    scratch: &mut Scratch,
) -> std::io::Result<()> {
    match level {
        SeriesLevel::Thread => unreachable!("thread rows are written by Recorder::tick"),
        SeriesLevel::Process => {
            for p in g.processes.clone() {
                let info = &layout.processes[p];
                let sum = take_counts(&mut threads[info.threads.clone()], scratch);
                write_row(out, t, g, Some(info.index), sleeps[p], &sum, scratch)?;
            }
        }
        SeriesLevel::Group => {
            let sum = take_counts(&mut threads[g.threads.clone()], scratch);
            scratch.sleeps.clear();
            scratch
                .sleeps
                .extend(g.processes.clone().map(|p| sleeps[p]));
            let sleep = median(&mut scratch.sleeps);
            write_row(out, t, g, None, sleep, &sum, scratch)?;
        }
    }
    Ok(())
}

/// Sum and reset the interval counts of `threads`, keeping in `scratch` the last remaining
/// of those that sent.
fn take_counts(threads: &mut [ThreadStats], scratch: &mut Scratch) -> Counts {
    let mut sum = Counts::default();
    scratch.remaining.clear();
    for s in threads {
        if s.interval.requests > 0
            && let Some(r) = s.last_remaining
        {
            scratch.remaining.push(r);
        }
        sum.merge(&s.interval);
        s.interval = Counts::default();
    }
    sum
}

fn write_row<W: Write>(
    out: &mut CsvSink<W>,
    t: Nanos,
    g: &GroupInfo,
    process: Option<usize>,
    sleep: f64,
    sum: &Counts,
    scratch: &mut Scratch,
) -> std::io::Result<()> {
    out.float(secs(t))?;
    out.text(&g.name)?;
    out.opt_uint(process.map(|p| p as u64))?;
    out.text("")?;
    out.float(sleep)?;
    out.uint(sum.requests)?;
    out.uint(sum.ok)?;
    out.uint(sum.limited)?;
    out.uint(sum.errors)?;
    out.opt_uint(lower_median(&mut scratch.remaining))?;
    out.end_row()
}

/// The median (the mean of the middle two of an even count); NaN of nothing.
fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The lower median (an integer, as the thread rows' values are), or `None` of nothing.
fn lower_median(values: &mut [u64]) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mid = (values.len() - 1) / 2;
    Some(*values.select_nth_unstable(mid).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_median_takes_the_lower_middle_of_an_even_count() {
        assert_eq!(lower_median(&mut []), None);
        assert_eq!(lower_median(&mut [7]), Some(7));
        assert_eq!(lower_median(&mut [9, 1, 5, 3]), Some(3));
        assert_eq!(lower_median(&mut [9, 1, 5]), Some(5));
    }

    #[test]
    fn median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert!(median(&mut []).is_nan());
        assert_eq!(median(&mut [4.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 8.0]), 3.0);
    }
}
