//! Thin: parse the command line, hand it to its command, map errors to exit codes.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;

use throttle_sim::cli::{Cli, Command};
use throttle_sim::commands;
use throttle_sim::engine::live::worker;
use throttle_sim::error::Error;
use throttle_sim::exit;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Worker) {
        // A terminal's Ctrl-C reaches the workers too; the parent tells them when to stop.
        let _ = ctrlc::set_handler(|| {});
    } else {
        // A second Ctrl-C while the first is being handled ends the process at once, unless
        // a folder is being written that it would leave half-made (`exit::keep_until_written`).
        let _ = ctrlc::set_handler(|| {
            if INTERRUPTED.swap(true, Ordering::SeqCst) {
                if exit::second_interrupt() {
                    std::process::exit(exit::INTERRUPTED);
                }
                eprintln!("interrupted again: finishing the recording's folder first");
            }
        });
    }
    let code = match cli.command {
        Command::Run(args) => or_exit_code(commands::run(&args, &INTERRUPTED)),
        Command::Compare(args) => or_exit_code(commands::compare(&args, &INTERRUPTED)),
        Command::Plot(args) => or_exit_code(commands::plot(&args)),
        Command::List(args) => or_exit_code(commands::list(&args)),
        Command::Check(args) => or_exit_code(commands::check(&args, &INTERRUPTED)),
        Command::Advise(args) => or_exit_code(commands::advise(&args, &INTERRUPTED)),
        Command::Fit(args) => or_exit_code(commands::fit(&args)),
        Command::Serve(args) => or_exit_code(commands::serve(&args, &INTERRUPTED)),
        Command::Client(args) => or_exit_code(commands::client(&args, &INTERRUPTED)),
        Command::Shapes(args) => or_exit_code(commands::shapes(&args)),
        Command::Worker => worker::main(),
    };
    ExitCode::from(code as u8)
}

/// Print an error and turn it into its exit code.
fn or_exit_code(result: Result<i32, Error>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            // Several problems (a scenario's) are one per line, each an error of its own;
            // an indented line goes on the one above.
            for line in e.to_string().lines() {
                if line.starts_with(char::is_whitespace) {
                    eprintln!("{line}");
                } else {
                    eprintln!("error: {line}");
                }
            }
            e.exit_code()
        }
    }
}
