//! `throttle-sim check SCENARIO…`: run scenarios and judge only their `[expect]` ranges, so a
//! team can keep its own scenarios as regression tests of its client in CI.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::engine::{self, sim};
use crate::error::{Error, exit};
use crate::progress::Progress;
use crate::record::ExpectVerdict;
use crate::rng::fresh_seed;
use crate::scenario::{Override, read_scenario};
use crate::time::{Nanos, secs};

/// One scenario's verdicts, or why it could not be judged.
#[derive(Debug, Serialize)]
pub struct Checked {
    pub file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `pass`, `missed`, `no-expect`, `error` or `interrupted`.
    pub outcome: &'static str,
    pub verdicts: Vec<ExpectVerdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The exit code this scenario alone would give.
    #[serde(skip)]
    pub code: i32,
}

fn check_one(
    path: &Path,
    overrides: &[Override],
    interrupt: &AtomicBool,
    progress: &Progress,
) -> Checked {
    let mut all = overrides.to_vec();
    all.push(Override::new("run.mode", toml::Value::String("sim".into())).expect("valid path"));
    let scenario = match read_scenario(path, &all, fresh_seed()) {
        Ok(s) => s,
        Err(e) => {
            let e = Error::from(e);
            return Checked {
                file: path.to_path_buf(),
                scenario: None,
                seed: None,
                outcome: "error",
                verdicts: Vec::new(),
                error: Some(e.to_string()),
                code: e.exit_code(),
            };
        }
    };
    let bar = progress.bar(&scenario.name, scenario.run.duration.secs() as u64);
    let mut on_progress = |t: Nanos| bar.set_position(secs(t) as u64);
    let control = engine::Control {
        progress: &mut on_progress,
        interrupt,
    };
    let mut summary = sim::run(&scenario, std::io::sink(), None::<std::io::Sink>, control)
        .expect("writing to a sink cannot fail");
    summary.judge(&scenario.expect);
    let (outcome, code) = if summary.partial {
        ("interrupted", exit::INTERRUPTED)
    } else if scenario.expect.is_empty() {
        ("no-expect", exit::OK)
    } else if summary.missed().next().is_some() {
        ("missed", exit::EXPECT_MISSED)
    } else {
        ("pass", exit::OK)
    };
    progress.task_done(&bar, &format!("{}: {outcome}", path.display()));
    progress.run_done(&format!(
        "checked {} (seed {}): {outcome}",
        path.display(),
        summary.seed
    ));
    Checked {
        file: path.to_path_buf(),
        scenario: Some(scenario.name.clone()),
        seed: Some(summary.seed),
        outcome,
        verdicts: summary.expect,
        error: None,
        code,
    }
}

/// Check every file, `jobs` at a time; results in the order given.
pub fn check_all(
    files: &[PathBuf],
    overrides: &[Override],
    jobs: usize,
    progress: &Progress,
    interrupt: &AtomicBool,
) -> Vec<Checked> {
    crate::parallel::run_all(files.len(), jobs, |i| {
        if interrupt.load(Ordering::Relaxed) {
            return Checked {
                file: files[i].clone(),
                scenario: None,
                seed: None,
                outcome: "interrupted",
                verdicts: Vec::new(),
                error: None,
                code: exit::INTERRUPTED,
            };
        }
        check_one(&files[i], overrides, interrupt, progress)
    })
}

/// The worst exit code: interrupted, then bad input, then a missed range.
pub fn exit_code(results: &[Checked]) -> i32 {
    let codes: Vec<i32> = results.iter().map(|r| r.code).collect();
    for worst in [
        exit::INTERRUPTED,
        exit::BAD_INPUT,
        exit::FAILED,
        exit::EXPECT_MISSED,
    ] {
        if codes.contains(&worst) {
            return worst;
        }
    }
    exit::OK
}

fn paint(text: &str, code: &str, colour: bool) -> String {
    if colour {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The verdicts as text: a line per scenario, a line per range, a count at the end.
pub fn render(results: &[Checked], colour: bool) -> String {
    let mut out = String::new();
    let count = |o: &str| results.iter().filter(|r| r.outcome == o).count();
    for r in results {
        let head = match r.outcome {
            "pass" => paint("PASS", "1;32", colour),
            "missed" => paint("MISSED", "1;31", colour),
            "no-expect" => paint("NO EXPECT", "33", colour),
            "interrupted" => paint("INTERRUPTED", "33", colour),
            _ => paint("ERROR", "1;31", colour),
        };
        match (&r.scenario, r.seed) {
            (Some(name), Some(seed)) => out.push_str(&format!(
                "{head} {} ({name}, seed {seed})\n",
                r.file.display()
            )),
            _ => out.push_str(&format!("{head} {}\n", r.file.display())),
        }
        if let Some(e) = &r.error {
            for line in e.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        if r.outcome == "no-expect" {
            out.push_str("  the scenario has no [expect] ranges to judge\n");
        }
        for v in &r.verdicts {
            let value = v.value.map_or("null".to_string(), |x| format!("{x:.4}"));
            let (word, rel) = if v.pass {
                (paint("pass", "32", colour), "within")
            } else {
                (paint("MISSED", "1;31", colour), "outside")
            };
            out.push_str(&format!(
                "  {word} {} = {value} {rel} [{}, {}]\n",
                v.metric, v.range[0], v.range[1]
            ));
        }
    }
    out.push_str(&format!(
        "{} scenario{}: {} passed, {} missed, {} without [expect], {} bad input{}\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        count("pass"),
        count("missed"),
        count("no-expect"),
        count("error"),
        if count("interrupted") > 0 {
            format!(", {} interrupted", count("interrupted"))
        } else {
            String::new()
        }
    ));
    out
}
