//! Thin: parse the command line, call the library, map errors to exit codes.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

use throttle_sim::cli::{Cli, ClientArgs, Command, RunArgs};
use throttle_sim::engine::live::{standalone, worker};
use throttle_sim::error::{Error, exit};
use throttle_sim::run::{RunOptions, RunResult, print, run_live, run_scenario};
use throttle_sim::scenario::{Mode, Scenario};
use throttle_sim::{commands, report, scenario};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Worker) {
        // A terminal's Ctrl-C reaches the workers too; the parent tells them when to stop.
        let _ = ctrlc::set_handler(|| {});
    } else {
        // A second Ctrl-C while the first is being handled ends the process at once.
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                std::process::exit(130);
            }
        });
    }
    let code = match cli.command {
        Command::Run(args) => run(args),
        Command::Compare(args) => or_exit_code(commands::compare(&args, &INTERRUPTED)),
        Command::Plot(args) => or_exit_code(commands::plot(&args)),
        Command::List(args) => or_exit_code(commands::list(&args)),
        Command::Check(args) => or_exit_code(commands::check(&args, &INTERRUPTED)),
        Command::Serve(args) => {
            or_exit_code(standalone::serve_command(&args, &INTERRUPTED).map(|()| exit::OK))
        }
        Command::Client(args) => or_exit_code(client(&args)),
        Command::Worker => worker::main(),
    };
    ExitCode::from(code as u8)
}

fn run(args: RunArgs) -> i32 {
    or_exit_code(try_run(&args))
}

/// Print an error and turn it into its exit code.
fn or_exit_code(result: Result<i32, Error>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn client(args: &ClientArgs) -> Result<i32, Error> {
    let scenario = standalone::client_scenario(args, throttle_sim::rng::fresh_seed())?;
    let cfg = standalone::client_config(args)?;
    if !args.quiet && !args.json {
        eprintln!(
            "running {} × {} {} clients against {} for {}",
            args.processes, args.threads, args.algorithm, args.target, scenario.run.duration
        );
    }
    let started = std::time::Instant::now();
    let result = run_live(
        &scenario,
        &RunOptions {
            out: args.out.clone(),
            log_requests: args.log_requests,
            progress: !args.quiet,
            interrupt: &INTERRUPTED,
        },
        &cfg,
    )?;
    let wall = started.elapsed();
    report::write_run_report(&result.dir)?;
    Ok(report_run(&scenario, &result, wall, args.quiet, args.json))
}

fn try_run(args: &RunArgs) -> Result<i32, Error> {
    let scenario = scenario::read_scenario(
        &args.scenario,
        &args.overrides(),
        throttle_sim::rng::fresh_seed(),
    )?;
    if !args.quiet && !args.json {
        eprintln!(
            "running {} (seed {}, {} threads)",
            scenario.name,
            scenario.run.seed(),
            scenario.threads_total()
        );
    }
    let started = std::time::Instant::now();
    let result = run_scenario(
        &scenario,
        &RunOptions {
            out: args.out.clone(),
            log_requests: args.log_requests,
            progress: !args.quiet,
            interrupt: &INTERRUPTED,
        },
    )?;
    // The run's own time, without drawing the charts.
    let wall = started.elapsed();
    if !args.no_charts {
        report::write_run_report(&result.dir)?;
    }
    Ok(report_run(&scenario, &result, wall, args.quiet, args.json))
}

/// Print what a run did and choose the exit code.
fn report_run(
    scenario: &Scenario,
    result: &RunResult,
    wall: std::time::Duration,
    quiet: bool,
    json: bool,
) -> i32 {
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
    let missed: Vec<_> = s.missed().collect();
    for v in &missed {
        eprintln!(
            "expect missed: {} = {} is outside [{}, {}]",
            v.metric,
            v.value.map_or("null".to_string(), |x| x.to_string()),
            v.range[0],
            v.range[1]
        );
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
    } else if s.partial {
        130
    } else if !s.dead_workers.is_empty() {
        exit::FAILED
    } else if missed.is_empty() {
        exit::OK
    } else {
        exit::EXPECT_MISSED
    }
}
