//! Thin: parse the command line, call the library, map errors to exit codes.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

use throttle_sim::cli::{Cli, Command, RunArgs};
use throttle_sim::error::{Error, exit};
use throttle_sim::run::{RunOptions, print, run_scenario};
use throttle_sim::{commands, report, scenario};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A second Ctrl-C while the first is being handled ends the process at once.
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let code = match cli.command {
        Command::Run(args) => run(args),
        Command::Compare(args) => report_errors(commands::compare(&args, &INTERRUPTED)),
        Command::Plot(args) => report_errors(commands::plot(&args)),
        Command::List(args) => report_errors(commands::list(&args)),
        Command::Check(args) => report_errors(commands::check(&args, &INTERRUPTED)),
    };
    ExitCode::from(code as u8)
}

/// Print an error and turn it into its exit code.
fn report_errors(result: Result<i32, Error>) -> i32 {
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        e.exit_code()
    })
}

fn run(args: RunArgs) -> i32 {
    match try_run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn try_run(args: &RunArgs) -> Result<i32, Error> {
    let scenario =
        scenario::read_scenario(&args.scenario, &args.overrides(), scenario::fresh_seed())?;
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
    let s = &result.summary;
    let wall = started.elapsed().as_secs_f64();
    if !args.no_charts {
        report::write_run_report(&result.dir)?;
    }
    if !args.quiet {
        eprintln!(
            "simulated {} requests in {wall:.3} s of wall time ({:.2} M requests/s)",
            s.metrics.requests,
            s.metrics.requests as f64 / wall.max(1e-9) / 1e6
        );
    }
    if args.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(s).expect("serializes")
        ));
    } else if !args.quiet {
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
    Ok(if s.partial {
        130
    } else if missed.is_empty() {
        exit::OK
    } else {
        exit::EXPECT_MISSED
    })
}
