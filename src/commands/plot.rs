//! `throttle-sim plot`: draw a results folder's charts and report again from its files.

use crate::cli::PlotArgs;
use crate::compare;
use crate::error::Error;
use crate::exit;
use crate::parallel::cores;
use crate::report;

/// `plot DIR` with a `DIR` that is no folder.
#[derive(Debug, thiserror::Error)]
#[error("not a folder; give a results folder of `run` or `compare`")]
struct NotAFolder;

pub fn plot(args: &PlotArgs) -> Result<i32, Error> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(Error::flag(dir.display().to_string())(NotAFolder));
    }
    let what = if compare::is_comparison(dir) {
        compare::write_compare_report(dir, cores())?;
        "comparison"
    } else {
        report::write_run_report(dir)?;
        "run"
    };
    if !args.quiet {
        eprintln!(
            "drew the {what}'s charts and report: {}",
            dir.join("report.html").display()
        );
    }
    Ok(exit::OK)
}
