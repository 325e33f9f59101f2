//! `throttle-sim check`: run scenarios and print only their `[expect]` verdicts.

use std::sync::atomic::AtomicBool;

use crate::cli::CheckArgs;
use crate::error::Error;
use crate::exit;
use crate::parallel::cores;
use crate::progress::{Progress, colour_stdout};
use crate::run::print;
use crate::scenario::cell_override;

pub fn check(args: &CheckArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    let progress = Progress::new(args.quiet);
    let jobs = args.jobs.map_or_else(cores, |j| j as usize);
    let mut overrides = args.sets.set.clone();
    overrides.extend(args.cell.as_deref().map(cell_override));
    let started = std::time::SystemTime::now();
    let results = crate::check::check_all(
        &args.scenarios,
        &overrides,
        args.seeds.map(|n| n as usize),
        jobs,
        &progress,
        interrupt,
    );
    if let Some(path) = &args.junit {
        let xml = crate::check::junit(&results, started, &crate::check::hostname());
        std::fs::write(path, xml).map_err(Error::io(path))?;
    }
    if args.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&results).expect("serializes")
        ));
    } else {
        print(&crate::check::render(&results, colour_stdout()));
    }
    let code = crate::check::exit_code(&results);
    // A file without [expect] judges nothing: a CI step that checked nothing must not pass.
    let empty: Vec<String> = results
        .iter()
        .filter(|r| r.outcome == "no-expect")
        .map(|r| r.file.display().to_string())
        .collect();
    if code == exit::OK && !empty.is_empty() && !args.allow_empty {
        eprintln!(
            "error: {} has no [expect] ranges, so check judged nothing there; add an [expect] \
             table, or pass --allow-empty to accept that",
            empty.join(", ")
        );
        return Ok(exit::BAD_INPUT);
    }
    Ok(code)
}
