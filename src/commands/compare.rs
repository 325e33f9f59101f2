//! `throttle-sim compare`: run variants over the same seeds, print the table and ranking.

use std::sync::atomic::AtomicBool;

use crate::cli::{CompareArgs, OutputFlags};
use crate::compare::{self, CompareOptions};
use crate::error::Error;
use crate::exit;
use crate::parallel::cores;
use crate::progress::{Progress, colour_stdout};
use crate::run::print;

pub fn compare(args: &CompareArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    let jobs = args.jobs.map_or_else(cores, |j| j as usize);
    let progress = Progress::new(args.output.quiet);
    if !args.merge.is_empty() {
        let result = compare::merge_slices(
            &args.merge,
            args.output.out.as_deref(),
            jobs,
            &progress,
            interrupt,
        )?;
        return Ok(report_comparison(&result, args));
    }
    let Some(scenario) = &args.scenario else {
        return compare_runs(args, jobs);
    };
    args.scenario_flags
        .refuse_given_twice(args.duration)
        .map_err(Error::usage)?;
    let shard = args
        .shard
        .as_ref()
        .map(|s| s.resolve(|k| std::env::var(k).ok()))
        .transpose()
        .map_err(Error::flag("--shard"))?;
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
        shard,
    };
    let plan = compare::plan(&opts)?;
    if !args.output.quiet {
        let cells = if plan.matrix {
            format!(" in {} cells", plan.base.axes.count())
        } else {
            String::new()
        };
        let per_cell = plan.variants.len() / plan.base.axes.count().max(1);
        let shown = if plan.matrix {
            per_cell
        } else {
            plan.variants.len()
        };
        eprintln!(
            "comparing {} variant{}{cells} of {} over seeds {} ({} runs, {} at a time)",
            shown,
            if shown == 1 { "" } else { "s" },
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
    if let Some(s) = shard {
        if !args.output.quiet {
            eprintln!(
                "slice {} of {}: its runs are in {}; put the {} slices together with \
                 `throttle-sim compare --merge DIR…`",
                s.index,
                s.count,
                result.dir.display(),
                s.count
            );
        }
        return Ok(exit::OK);
    }
    Ok(report_comparison(&result, args))
}

/// What a finished comparison prints, and its exit code: 1 when a variant misses a range.
fn report_comparison(result: &compare::CompareResult, args: &CompareArgs) -> i32 {
    if let Some(m) = &result.matrix {
        return report_matrix(m, &result.dir, &args.output);
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
        if let Some(h) = c.headline() {
            out.push_str(&format!("\nin short: {h}\n"));
        }
        out.push_str(&format!("\nresults: {}\n", result.dir.display()));
        print(&out);
    }
    let missed: Vec<_> = c.missed().collect();
    for (name, e) in &missed {
        eprintln!("expect missed: {name}: {}", compare::verdict_text(e));
    }
    if missed.is_empty() {
        exit::OK
    } else {
        exit::EXPECT_MISSED
    }
}

/// `compare --runs DIR…`: existing run folders side by side, nothing run.
fn compare_runs(args: &CompareArgs, jobs: usize) -> Result<i32, Error> {
    let result = compare::compare_runs(&args.runs, args.output.out.as_deref(), jobs)?;
    for w in &result.warnings {
        eprintln!("warning: {w}");
    }
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

/// What a comparison over a file's cells prints: a row per cell and variant, then how many
/// cells each variant meets, overall and per axis level.
fn report_matrix(m: &compare::Matrix, dir: &std::path::Path, output: &OutputFlags) -> i32 {
    if output.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(m).expect("a matrix serializes")
        ));
    } else if !output.quiet {
        let mut out = format!(
            "{}: {} cells × {} variants over seeds {}\n\n",
            m.scenario,
            m.cells.len(),
            m.variant_names().len(),
            m.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        out.push_str(&m.table().plain());
        out.push_str("\nmean ± 95 % t-interval over seeds; rank within the cell\n\n");
        for i in 0..m.axes.len() {
            out.push_str(&m.level_table(i).plain());
            out.push('\n');
        }
        for line in m.summary_lines() {
            out.push_str(&format!("{line}\n"));
        }
        out.push_str(&format!("\nresults: {}\n", dir.display()));
        print(&out);
    }
    let missed = m
        .cells
        .iter()
        .any(|c| c.comparison.missed().next().is_some());
    if missed {
        exit::EXPECT_MISSED
    } else {
        exit::OK
    }
}
