//! `throttle-sim check SCENARIO…`: run scenarios and judge only their `[expect]` ranges, so a
//! team can keep its own scenarios as regression tests of its client in CI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::compare::{Comparison, Stat, VariantRuns, seeds_from};
use crate::engine::{self, sim};
use crate::error::Error;
use crate::exit;
use crate::progress::Progress;
use crate::record::{ExpectVerdict, Metrics};
use crate::rng::fresh_seed;
use crate::scenario::{Override, Scenario, cell_override, read_scenario};
use crate::time::{Nanos, secs};

/// One scenario's verdicts, or why it could not be judged.
#[derive(Debug, Serialize)]
pub struct Checked {
    pub file: PathBuf,
    /// The cell of a file with `[[axes]]` (each cell is checked on its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The first seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Every seed the verdicts are judged over (the first and the ones after it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<u64>,
    /// `pass`, `missed`, `no-expect`, `error` or `interrupted`.
    pub outcome: &'static str,
    /// Judged on the means over `seeds` (with one seed, on its run's values).
    pub verdicts: Vec<ExpectVerdict>,
    /// With more than one seed: each judged metric's mean, interval and values per seed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub stats: BTreeMap<String, Stat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The exit code this scenario alone would give.
    #[serde(skip)]
    pub code: i32,
    /// Wall time of its runs, added up over its seeds (which may have run side by side): the
    /// JUnit report's time for this case.
    #[serde(skip)]
    pub seconds: f64,
}

impl Checked {
    fn without_runs(path: &Path, outcome: &'static str, error: Option<Error>) -> Self {
        Checked {
            file: path.to_path_buf(),
            cell: None,
            scenario: None,
            seed: None,
            seeds: Vec::new(),
            outcome,
            verdicts: Vec::new(),
            stats: BTreeMap::new(),
            code: error.as_ref().map_or(exit::INTERRUPTED, Error::exit_code),
            error: error.map(|e| e.to_string()),
            seconds: 0.0,
        }
    }
}

/// The scenario, resolved for sim mode, and the seeds it is judged over: `seeds` (the
/// command line's `--seeds`), else its `[run] seeds`, else 1.
fn resolve(
    path: &Path,
    overrides: &[Override],
    seeds: Option<usize>,
) -> Result<(Scenario, Vec<u64>), Error> {
    let mut all = overrides.to_vec();
    all.push(Override::new("run.mode", toml::Value::String("sim".into())).expect("valid path"));
    let scenario = read_scenario(path, &all, fresh_seed())?;
    let n = seeds.unwrap_or_else(|| scenario.run.seeds.map_or(1, |n| n as usize));
    let seeds = seeds_from(scenario.run.seed(), n);
    Ok((scenario, seeds))
}

/// A scenario ready to check and its seeds, or why it is not.
type Resolved = Result<(Scenario, Vec<u64>), Error>;

/// A file resolved as [`resolve`] does, or, for a file with `[[axes]]` and no cell picked,
/// each of its cells so resolved.
fn resolve_cells(path: &Path, overrides: &[Override], seeds: Option<usize>) -> Vec<Resolved> {
    match resolve(path, overrides, seeds) {
        Ok((s, _)) if !s.axes.is_empty() && s.cell.is_none() => s
            .axes
            .names()
            .into_iter()
            .map(|name| {
                let mut all = overrides.to_vec();
                all.push(cell_override(&name));
                resolve(path, &all, seeds)
            })
            .collect(),
        other => vec![other],
    }
}

/// Check every file over its seeds, `jobs` runs at a time; results in the order given.
/// `seeds` (`--seeds`) overrides each file's `[run] seeds`. The means, intervals and
/// verdicts are compare's own ([`Comparison`]), with the scenario as its single variant.
pub fn check_all(
    files: &[PathBuf],
    overrides: &[Override],
    seeds: Option<usize>,
    jobs: usize,
    progress: &Progress,
    interrupt: &AtomicBool,
) -> Vec<Checked> {
    let (files, resolved): (Vec<&PathBuf>, Vec<Resolved>) = files
        .iter()
        .flat_map(|f| {
            resolve_cells(f, overrides, seeds)
                .into_iter()
                .map(move |r| (f, r))
        })
        .unzip();
    // Every (file, seed) run is one job, so ten seeds of one file use every core.
    let runs: Vec<(usize, usize)> = resolved
        .iter()
        .enumerate()
        .filter_map(|(fi, r)| r.as_ref().ok().map(|(_, seeds)| (fi, seeds.len())))
        .flat_map(|(fi, n)| (0..n).map(move |si| (fi, si)))
        .collect();
    let bars: Vec<Option<indicatif::ProgressBar>> = resolved
        .iter()
        .map(|r| {
            r.as_ref().ok().map(|(s, seeds)| {
                progress.bar(
                    &s.title(),
                    (s.run.duration.secs() as u64).saturating_mul(seeds.len() as u64),
                )
            })
        })
        .collect();
    let summaries = crate::parallel::run_all(runs.len(), jobs, |j| {
        let (fi, si) = runs[j];
        let Ok((base, seeds)) = &resolved[fi] else {
            unreachable!("only resolved files have runs")
        };
        if interrupt.load(Ordering::Relaxed) {
            return None;
        }
        let began = std::time::Instant::now();
        let mut scenario = base.clone();
        scenario.run.seed = Some(seeds[si]);
        let bar = bars[fi].as_ref().expect("resolved files have a bar");
        let mut last = 0;
        let mut on_progress = |t: Nanos| {
            let now = secs(t) as u64;
            bar.inc(now.saturating_sub(last));
            last = now;
        };
        let control = engine::Control {
            progress: &mut on_progress,
            interrupt,
        };
        let summary = sim::run(&scenario, std::io::sink(), None::<std::io::Sink>, control)
            .expect("writing to a sink cannot fail");
        let seconds = began.elapsed().as_secs_f64();
        (!summary.partial).then_some((summary.metrics, seconds))
    });
    let mut by_file: Vec<Vec<Option<Metrics>>> = resolved.iter().map(|_| Vec::new()).collect();
    let mut seconds_by_file = vec![0.0; resolved.len()];
    for ((fi, _), s) in runs.iter().zip(summaries) {
        if let Some((_, seconds)) = &s {
            seconds_by_file[*fi] += seconds;
        }
        by_file[*fi].push(s.map(|(metrics, _)| metrics));
    }
    resolved
        .into_iter()
        .zip(by_file)
        .zip(files.iter().copied())
        .zip(&bars)
        .zip(seconds_by_file)
        .map(|((((r, runs), path), bar), seconds)| match r {
            Err(e) => Checked::without_runs(path, "error", Some(e)),
            Ok((scenario, seeds)) => {
                let mut checked = judge(path, &scenario, seeds, runs);
                checked.seconds = seconds;
                if let Some(bar) = bar {
                    progress.task_done(bar, &format!("{}: {}", path.display(), checked.outcome));
                }
                // The verdict is on the mean over every seed: say so, not only the first.
                let seeds = match checked.seeds.len() {
                    1 => format!("seed {}", checked.seed.unwrap_or_default()),
                    n => format!(
                        "mean over {n} seeds from {}",
                        checked.seed.unwrap_or_default()
                    ),
                };
                progress.run_done(&format!(
                    "checked {}{} ({seeds}): {}",
                    path.display(),
                    cell_suffix(&checked.cell),
                    checked.outcome
                ));
                checked
            }
        })
        .collect()
}

/// The verdicts of one scenario from its runs, one per seed (`None`: interrupted).
fn judge(path: &Path, scenario: &Scenario, seeds: Vec<u64>, runs: Vec<Option<Metrics>>) -> Checked {
    let Some(runs) = runs.into_iter().collect::<Option<Vec<Metrics>>>() else {
        return Checked::without_runs(path, "interrupted", None);
    };
    let variant = VariantRuns {
        name: scenario.name.clone(),
        runs,
        expect: None,
    };
    let mut c = Comparison::new(&scenario.name, &seeds, &[variant], &scenario.expect);
    let v = c.variants.remove(0);
    let stats = if seeds.len() > 1 {
        v.metrics
            .into_iter()
            .filter(|(m, _)| scenario.expect.contains_key(m))
            .collect()
    } else {
        BTreeMap::new()
    };
    let (outcome, code) = if scenario.expect.is_empty() {
        ("no-expect", exit::OK)
    } else if v.missed > 0 {
        ("missed", exit::EXPECT_MISSED)
    } else {
        ("pass", exit::OK)
    };
    Checked {
        file: path.to_path_buf(),
        cell: scenario.cell.clone(),
        scenario: Some(scenario.name.clone()),
        seed: seeds.first().copied(),
        seeds,
        outcome,
        verdicts: v.expect,
        stats,
        error: None,
        code,
        seconds: 0.0,
    }
}

/// ` [cell]` after a file's name, for a cell.
fn cell_suffix(cell: &Option<String>) -> String {
    cell.as_ref().map_or(String::new(), |c| format!(" [{c}]"))
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
            (Some(name), Some(seed)) if r.seeds.len() > 1 => out.push_str(&format!(
                "{head} {}{} ({name}, mean over {} seeds from {seed})\n",
                r.file.display(),
                cell_suffix(&r.cell),
                r.seeds.len()
            )),
            (Some(name), Some(seed)) => out.push_str(&format!(
                "{head} {}{} ({name}, seed {seed})\n",
                r.file.display(),
                cell_suffix(&r.cell)
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
        // A cell that passed is one line: a matrix of hundreds stays readable.
        let verdicts: &[ExpectVerdict] = if r.cell.is_some() && r.outcome == "pass" {
            &[]
        } else {
            &r.verdicts
        };
        for v in verdicts {
            let word = if v.pass {
                paint("pass", "32", colour)
            } else {
                paint("MISSED", "1;31", colour)
            };
            out.push_str(&format!("  {word} {}\n", verdict_line(r, v)));
        }
    }
    let cells = results.iter().filter(|r| r.cell.is_some()).count();
    out.push_str(&format!(
        "{} scenario{}{}: {} passed, {} missed, {} without [expect], {} bad input{}\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        if cells > 0 {
            format!(" ({cells} of them cells of files with [[axes]])")
        } else {
            String::new()
        },
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

/// `s` as XML 1.0 text or attribute value: the five special characters as entities, tabs,
/// newlines and returns as character references inside attributes (so a message keeps its
/// lines), and the control characters XML 1.0 cannot hold at all as U+FFFD.
fn xml_escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' if attribute => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// One verdict as the text and the JUnit output print it: `metric = value[ ± h] within|outside
/// [lo, hi]`.
fn verdict_line(r: &Checked, v: &ExpectVerdict) -> String {
    let mut value = v.value.map_or("null".to_string(), |x| format!("{x:.4}"));
    if let Some(st) = r.stats.get(&v.metric) {
        if let Some(h) = st.half_width {
            value.push_str(&format!(" ± {h:.4}"));
        }
        if st.n < st.seeds {
            value.push_str(&format!(" ({}/{} seeds with a value)", st.n, st.seeds));
        }
    }
    let rel = if v.pass { "within" } else { "outside" };
    format!(
        "{} = {value} {rel} [{}, {}]",
        v.metric, v.range[0], v.range[1]
    )
}

/// The name of this machine for the JUnit report: `HOSTNAME` when the environment has it, else
/// `/etc/hostname`, else `localhost` (what the Ant schema asks for when it cannot be known).
pub fn hostname() -> String {
    let from_file = || std::fs::read_to_string("/etc/hostname").ok();
    [std::env::var("HOSTNAME").ok(), from_file()]
        .into_iter()
        .flatten()
        .map(|h| h.trim().to_string())
        .find(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// `t` in UTC to the second and without a zone, the only form the Ant schema's `timestamp`
/// takes: `2025-01-31T12:00:00`.
fn timestamp(t: std::time::SystemTime) -> String {
    let utc = humantime::format_rfc3339_seconds(t).to_string();
    utc.trim_end_matches('Z').to_string()
}

/// The verdicts as JUnit XML in the Apache Ant shape, valid against the strictest common JUnit
/// schema (`tests/data/junit/JUnit.xsd`) and read by CI systems (GitLab, Jenkins, GitHub's test
/// reporters, CircleCI, Azure): a bare `<testsuites>` root, one `<testsuite>` per file, one
/// `<testcase>` per scenario or, for a file with `[[axes]]`, per cell; a missed range is a
/// `<failure>` whose message names every metric that missed with its value and range, a
/// scenario that could not run an `<error>`, one without `[expect]` (or interrupted)
/// `<skipped>`. `started` is when the check began; a case's time is its runs' wall time.
pub fn junit(results: &[Checked], started: std::time::SystemTime, hostname: &str) -> String {
    let count = |rs: &[&Checked], o: &str| rs.iter().filter(|r| r.outcome == o).count();
    let mut files: Vec<&Path> = Vec::new();
    for r in results {
        if !files.contains(&r.file.as_path()) {
            files.push(&r.file);
        }
    }
    let skipped = |rs: &[&Checked]| count(rs, "no-expect") + count(rs, "interrupted");
    let started = timestamp(started);
    let hostname = xml_escape(hostname, true);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for (id, file) in files.into_iter().enumerate() {
        let cases: Vec<&Checked> = results.iter().filter(|r| r.file == file).collect();
        let name = xml_escape(&file.display().to_string(), true);
        // Ant's package is what holds the suite: here the file's folder.
        let folder = match file.parent().map(|p| p.display().to_string()) {
            Some(p) if !p.is_empty() => p,
            _ => ".".to_string(),
        };
        let seconds: f64 = cases.iter().map(|r| r.seconds).sum();
        out.push_str(&format!(
            "  <testsuite name=\"{name}\" package=\"{}\" id=\"{id}\" timestamp=\"{started}\" hostname=\"{hostname}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{seconds:.3}\">\n",
            xml_escape(&folder, true),
            cases.len(),
            count(&cases, "missed"),
            count(&cases, "error"),
            skipped(&cases),
        ));
        out.push_str(&format!(
            "    <properties>\n      <property name=\"throttle-sim.version\" value=\"{}\"/>\n    </properties>\n",
            env!("CARGO_PKG_VERSION")
        ));
        for r in cases {
            let case = match (&r.cell, &r.scenario) {
                (Some(cell), _) => cell.clone(),
                (None, Some(s)) => s.clone(),
                (None, None) => file.display().to_string(),
            };
            let seeds = match (r.seeds.len(), r.seed) {
                (0, _) | (_, None) => String::new(),
                (1, Some(s)) => format!("seed {s}"),
                (n, Some(s)) => format!("mean over {n} seeds from {s}"),
            };
            let lines: Vec<String> = r.verdicts.iter().map(|v| verdict_line(r, v)).collect();
            out.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{name}\" time=\"{:.3}\"",
                xml_escape(&case, true),
                r.seconds
            ));
            let body = |tag: &str, message: &str, kind: &str, text: &str| {
                format!(
                    ">\n      <{tag} message=\"{}\" type=\"{kind}\">{}</{tag}>\n    </testcase>\n",
                    xml_escape(message, true),
                    xml_escape(text, false)
                )
            };
            match r.outcome {
                "pass" => out.push_str("/>\n"),
                "missed" => {
                    let missed: Vec<String> = r
                        .verdicts
                        .iter()
                        .filter(|v| !v.pass)
                        .map(|v| verdict_line(r, v))
                        .collect();
                    out.push_str(&body(
                        "failure",
                        &format!("{} ({seeds})", missed.join("; ")),
                        "expect-missed",
                        &lines.join("\n"),
                    ));
                }
                "no-expect" => out.push_str(
                    ">\n      <skipped message=\"the scenario has no [expect] ranges to judge\"/>\n    </testcase>\n",
                ),
                "interrupted" => out.push_str(
                    ">\n      <skipped message=\"interrupted before its runs ended\"/>\n    </testcase>\n",
                ),
                _ => {
                    let e = r.error.as_deref().unwrap_or("could not be checked");
                    out.push_str(&body("error", e, "bad-input", e));
                }
            }
        }
        // The schema wants both, empty or not: the verdicts are in the cases already.
        out.push_str("    <system-out/>\n    <system-err/>\n  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
