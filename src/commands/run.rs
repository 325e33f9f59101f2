//! `throttle-sim run`: one scenario to its results folder, and what the terminal is told.

use std::sync::atomic::AtomicBool;

use crate::cli::{OutputFlags, RunArgs};
use crate::error::Error;
use crate::exit;
use crate::report;
use crate::rng::fresh_seed;
use crate::run::{RunOptions, RunResult, print, run_scenario};
use crate::scenario::{self, Mode, Scenario};

/// Read the scenario with the flags applied, run it, write its report, say what it did.
pub fn run(args: &RunArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    args.scenario_flags
        .refuse_given_twice(args.duration)
        .map_err(Error::usage)?;
    let scenario = scenario::read_scenario(&args.scenario, &args.overrides(), fresh_seed())?;
    scenario.needs_cell().map_err(Error::usage)?;
    if !args.output.quiet && !args.output.json {
        let threads = scenario.threads_total();
        eprintln!(
            "running {} (seed {}, {threads} thread{})",
            scenario.title(),
            scenario.run.seed(),
            if threads == 1 { "" } else { "s" }
        );
    }
    let started = std::time::Instant::now();
    let result = run_scenario(
        &scenario,
        &run_options(&args.output, args.log_requests, interrupt),
    )?;
    // The run's own time, without drawing the charts.
    let wall = started.elapsed();
    if !args.no_charts {
        report::write_run_report(&result.dir)?;
    }
    Ok(report_run(&scenario, &result, wall, &args.output))
}

/// What `run` and `client` tell the engine from the same flags.
pub(super) fn run_options<'a>(
    output: &OutputFlags,
    log_requests: bool,
    interrupt: &'a AtomicBool,
) -> RunOptions<'a> {
    RunOptions {
        out: output.out.clone(),
        log_requests,
        progress: !output.quiet,
        interrupt,
        allow_large_output: output.allow_large_output,
    }
}

/// Print what a run did and choose the exit code.
pub(super) fn report_run(
    scenario: &Scenario,
    result: &RunResult,
    wall: std::time::Duration,
    output: &OutputFlags,
) -> i32 {
    let (quiet, json) = (output.quiet, output.json);
    let s = &result.summary;
    let wall = wall.as_secs_f64();
    if !quiet && scenario.run.mode == Mode::Live {
        eprintln!(
            "sent {} requests in {wall:.1} s of wall time",
            s.metrics.requests
        );
    } else if !quiet {
        eprintln!(
            "simulated {} requests in {wall:.3} s of wall time ({:.2} M requests/s)",
            s.metrics.requests,
            s.metrics.requests as f64 / wall.max(1e-9) / 1e6
        );
    }
    if json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(s).expect("serializes")
        ));
    } else if !quiet {
        print(&report::terminal_summary(s));
        print(&format!("results: {}\n", result.dir.display()));
    }
    let trouble = s.request_trouble();
    if let Some(t) = &trouble {
        let level = if t.is_fatal() { "error" } else { "warning" };
        eprintln!("{level}: {t}");
    }
    let missed: Vec<_> = s.missed().collect();
    for v in &missed {
        // As the table and `check` print it, not the float's every digit.
        eprintln!("expect missed: {}", crate::compare::verdict_text(v));
    }
    // The table names lost workers; without it, stderr does.
    for d in s.dead_workers.iter().filter(|_| quiet || json) {
        eprintln!(
            "worker {}/{} (pid {}) died at {:.1} s: {}",
            d.group, d.process, d.pid, d.at_s, d.reason
        );
    }
    if let Some(f) = &s.failure {
        eprintln!(
            "error: {f}; the run stopped at {:.1} s (partial summary in {})",
            s.duration_s,
            result.dir.display()
        );
        exit::FAILED
    } else if let Some(lost) = &s.target_lost {
        // Nothing more could reach a server: as a run in which every request failed.
        eprintln!(
            "error: {lost}; the run stopped there, at {:.1} s (partial summary in {})",
            s.duration_s,
            result.dir.display()
        );
        exit::NOTHING_WORKED
    } else if s.partial {
        exit::INTERRUPTED
    } else if !s.dead_workers.is_empty() {
        exit::FAILED
    } else if trouble.as_ref().is_some_and(|t| t.is_fatal()) {
        exit::NOTHING_WORKED
    } else if missed.is_empty() {
        exit::OK
    } else {
        exit::EXPECT_MISSED
    }
}
