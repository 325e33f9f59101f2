//! `throttle-sim check`: run scenarios and print only their `[expect]` verdicts.

use std::sync::atomic::AtomicBool;

use crate::cli::CheckArgs;
use crate::error::Error;
use crate::parallel::cores;
use crate::progress::{Progress, colour_stdout};
use crate::run::print;
use crate::scenario::cell_override;

pub fn check(args: &CheckArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    let progress = Progress::new(args.quiet);
    let jobs = args.jobs.map_or_else(cores, |j| j as usize);
    let mut overrides = args.sets.set.clone();
    overrides.extend(args.cell.as_deref().map(cell_override));
    let results = crate::check::check_all(
        &args.scenarios,
        &overrides,
        args.seeds.map(|n| n as usize),
        jobs,
        &progress,
        interrupt,
    );
    if args.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&results).expect("serializes")
        ));
    } else {
        print(&crate::check::render(&results, colour_stdout()));
    }
    Ok(crate::check::exit_code(&results))
}
