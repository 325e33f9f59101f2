//! `throttle-sim compare`: run variants over the same seeds, print the table and ranking.

use std::sync::atomic::AtomicBool;

use crate::cli::CompareArgs;
use crate::compare::{self, CompareOptions};
use crate::error::Error;
use crate::exit;
use crate::parallel::cores;
use crate::progress::{Progress, colour_stdout};
use crate::run::print;

pub fn compare(args: &CompareArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    let jobs = args.jobs.map_or_else(cores, |j| j as usize);
    let Some(scenario) = &args.scenario else {
        return compare_runs(args, jobs);
    };
    args.scenario_flags
        .refuse_given_twice(args.duration)
        .map_err(Error::usage)?;
    let progress = Progress::new(args.output.quiet);
    let opts = CompareOptions {
        scenario: scenario.clone(),
        overrides: args.overrides(),
        variants: args.variants.clone(),
        algorithms: args.algorithms.clone(),
        seeds: args.seeds.map(|n| n as usize),
        jobs,
        out: args.output.out.clone(),
        progress: &progress,
        interrupt,
        allow_large_output: args.output.allow_large_output,
    };
    let plan = compare::plan(&opts)?;
    if !args.output.quiet {
        eprintln!(
            "comparing {} variant{} of {} over seeds {} ({} runs, {} at a time)",
            plan.variants.len(),
            if plan.variants.len() == 1 { "" } else { "s" },
            plan.base.name,
            plan.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            plan.variants.len() * plan.seeds.len(),
            opts.jobs
        );
    }
    let result = compare::run_compare(&opts, &plan)?;
    if result.interrupted {
        eprintln!(
            "interrupted: no comparison written; finished runs are in {}",
            result.dir.display()
        );
        return Ok(exit::INTERRUPTED);
    }
    let c = &result.comparison;
    if args.output.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(c).expect("a comparison serializes")
        ));
    } else if !args.output.quiet {
        let mut out = format!(
            "{}: {} variant{} over seeds {}\n\n",
            c.scenario,
            c.variants.len(),
            if c.variants.len() == 1 { "" } else { "s" },
            c.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        out.push_str(&c.plain(colour_stdout()));
        out.push_str("\nmean ± 95 % t-interval over seeds; * best of its column\n\nranking:\n");
        for line in c.ranking_lines() {
            out.push_str(&format!("  {line}\n"));
        }
        out.push_str(&format!("\nresults: {}\n", result.dir.display()));
        print(&out);
    }
    let missed: Vec<_> = c.missed().collect();
    for (name, e) in &missed {
        eprintln!("expect missed: {name}: {}", compare::verdict_text(e));
    }
    Ok(if missed.is_empty() {
        exit::OK
    } else {
        exit::EXPECT_MISSED
    })
}

/// `compare --runs DIR…`: existing run folders side by side, nothing run.
fn compare_runs(args: &CompareArgs, jobs: usize) -> Result<i32, Error> {
    let result = compare::compare_runs(&args.runs, args.output.out.as_deref(), jobs)?;
    let c = &result.comparison;
    // Said even with --json and --quiet: a partial run, or one without answers, is no peer of
    // the others (its ratios and fairness are left empty and it ranks last).
    for (name, dir, caveat) in &result.sources {
        if let Some(c) = caveat {
            eprintln!("warning: {name} ({}): {c}", dir.display());
        }
    }
    if args.output.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(c).expect("a comparison serializes")
        ));
    } else if !args.output.quiet {
        let mut out = format!("{} runs side by side, one run each\n\n", c.variants.len());
        out.push_str(&c.plain(colour_stdout()));
        out.push_str("\none run per row (no interval); * best of its column\n\n");
        for (name, dir, caveat) in &result.sources {
            out.push_str(&format!("  {name}: {}", dir.display()));
            if let Some(c) = caveat {
                out.push_str(&format!(" ({c})"));
            }
            out.push('\n');
        }
        out.push_str(&format!("\nresults: {}\n", result.dir.display()));
        print(&out);
    }
    Ok(exit::OK)
}
