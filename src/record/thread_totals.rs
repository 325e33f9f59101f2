//! `threads.csv`: every thread's totals over the run, written beside a `series.csv` whose rows
//! are per process or per group, so the per-thread charts (and anyone's notebook) still have
//! them.

use std::io::Write;

use super::{CsvSink, Summary};
use crate::scenario::Layout;

/// The file's name in a results folder.
pub const THREADS_FILE: &str = "threads.csv";

/// Its columns.
pub const THREAD_COLUMNS: [&str; 7] = [
    "group", "process", "thread", "requests", "ok", "limited", "errors",
];

/// Write `summary.thread_totals` (one per thread of `layout`, in its order) to `out`.
pub fn write_thread_totals(
    out: impl Write,
    summary: &Summary,
    layout: &Layout,
) -> std::io::Result<()> {
    let mut out = CsvSink::new(out);
    out.header(&THREAD_COLUMNS)?;
    for (info, c) in layout.threads.iter().zip(&summary.thread_totals) {
        out.text(&layout.groups[info.group as usize].name)?;
        out.uint(layout.processes[info.process as usize].index as u64)?;
        out.uint(u64::from(info.local))?;
        for v in [c.requests, c.ok, c.limited, c.errors] {
            out.uint(v)?;
        }
        out.end_row()?;
    }
    out.flush()
}
