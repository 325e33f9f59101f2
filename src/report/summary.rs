//! The summary as a person reads it: the screen printed at the end of a run, and the
//! `summary.json` and `summary.md` every results folder holds.

use std::fs;
use std::path::Path;

use super::{ReportError, Table};
use crate::record::{Metrics, RunMode, Summary};
use crate::scenario::Scenario;

/// Up to this many processes the terminal summary lists each; past it, the table would push
/// the metrics off the screen (`summary.md` always lists them).
const MAX_PROCESSES_ON_SCREEN: usize = 12;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

fn metrics_row(name: &str, m: &Metrics) -> Vec<String> {
    // Fairness among threads that all got nothing is 1 by the formula and means nothing;
    // nor does a convergence time when the server never answered: shown as `-`.
    let none_ok = m.ok == 0;
    let unanswered = m.ok + m.limited == 0;
    vec![
        name.to_string(),
        m.requests.to_string(),
        m.ok.to_string(),
        m.limited.to_string(),
        m.errors.to_string(),
        m.timed_out.to_string(),
        format!("{:.2}%", m.ratio_429 * 100.0),
        opt(m.get("utilization"), 3),
        opt((!none_ok).then_some(m.fairness), 3),
        opt(m.fairness_windowed.filter(|_| !none_ok), 3),
        format!("{:.1}", m.max_sleep),
        opt(m.convergence_s.filter(|_| !unanswered), 0),
        opt(m.wait_p50, 2),
        opt(m.wait_p99, 2),
    ]
}

/// The overall row and one row per group.
pub fn metrics_table(s: &Summary) -> Table {
    let mut t = Table::new(&[
        "group",
        "requests",
        "ok",
        "429",
        // Requests that got neither (5xx, refused, reset, timed out) and jobs given up:
        // without these, requests = ok + 429 would hide an outage's errors.
        "errors",
        "timed_out",
        "ratio_429",
        "utilization",
        "fairness",
        "windowed",
        "max_sleep s",
        "converged s",
        "wait p50 s",
        "wait p99 s",
    ]);
    t.row(metrics_row("all", &s.metrics));
    if s.groups.len() > 1 {
        for g in &s.groups {
            t.row(metrics_row(&g.name, &g.metrics));
        }
    }
    t
}

pub fn processes_table(s: &Summary) -> Table {
    let mut t = Table::new(&[
        "group",
        "process",
        "requests",
        "ok",
        "429",
        "errors",
        "final sleep s",
        "backoffs",
    ]);
    for p in &s.processes {
        t.row(vec![
            p.group.clone(),
            p.process.to_string(),
            p.requests.to_string(),
            p.ok.to_string(),
            p.limited.to_string(),
            p.errors.to_string(),
            format!("{:.3}", p.final_sleep),
            p.backoffs.to_string(),
        ]);
    }
    t
}

fn verdict_lines(s: &Summary) -> Vec<String> {
    s.expect
        .iter()
        .map(|v| {
            format!(
                "{} {} = {} (expected {} to {})",
                if v.pass { "pass" } else { "MISSED" },
                v.metric,
                opt(v.value, 4),
                v.range[0],
                v.range[1]
            )
        })
        .collect()
}

/// The one-screen summary printed at the end of a run.
pub fn terminal_summary(s: &Summary) -> String {
    let mut out = format!(
        "{}: {} s {}{}{}\n\n",
        s.scenario,
        s.duration_s,
        match s.mode {
            RunMode::Sim => "simulated",
            RunMode::Live => "run live",
            RunMode::Recorded => "recorded by serve",
        },
        if s.partial { " (PARTIAL)" } else { "" },
        // A recording's clients drew their own randomness: it has no seed.
        match s.mode {
            RunMode::Recorded => String::new(),
            _ => format!(", seed {}", s.seed),
        }
    );
    out.push_str(&metrics_table(s).plain());
    if s.processes.len() <= MAX_PROCESSES_ON_SCREEN {
        out.push('\n');
        out.push_str(&processes_table(s).plain());
    }
    for line in verdict_lines(s) {
        out.push_str(&format!("\n{line}"));
    }
    for line in dead_worker_lines(s) {
        out.push_str(&format!("\n{line}"));
    }
    out.push('\n');
    out
}

fn dead_worker_lines(s: &Summary) -> Vec<String> {
    s.dead_workers
        .iter()
        .map(|d| {
            format!(
                "DEAD worker {}/{} (pid {}) at {:.1} s: {}",
                d.group, d.process, d.pid, d.at_s, d.reason
            )
        })
        .collect()
}

/// `summary.md`.
pub fn summary_markdown(s: &Summary, scenario: &Scenario) -> String {
    let mut out = format!("# {}\n\n", s.scenario);
    if !scenario.description.is_empty() {
        // The description's own lines stay lines; its `<`, `>` and `&` make no HTML.
        let text = scenario
            .description
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        out.push_str(&format!("{text}\n\n"));
    }
    out.push_str(&format!(
        "Mode {}, seed {}, {} s{}, throttle-sim {}.\n\n",
        s.mode,
        s.seed,
        s.duration_s,
        if s.partial { " (partial run)" } else { "" },
        s.version
    ));
    out.push_str(&metrics_table(s).markdown());
    out.push_str("\n## Processes\n\n");
    out.push_str(&processes_table(s).markdown());
    let dead = dead_worker_lines(s);
    if !dead.is_empty() {
        out.push_str("\n## Workers lost\n\n");
        for d in dead {
            out.push_str(&format!("- {}\n", super::table::markdown_cell(&d)));
        }
    }
    let verdicts = verdict_lines(s);
    if !verdicts.is_empty() {
        out.push_str("\n## Expectations\n\n");
        for v in verdicts {
            out.push_str(&format!("- {v}\n"));
        }
    }
    out
}

/// Write `summary.json` and `summary.md` into the results folder `dir`.
pub fn write_summary(
    dir: &Path,
    summary: &Summary,
    scenario: &Scenario,
) -> Result<(), ReportError> {
    let json_path = dir.join("summary.json");
    let mut json = serde_json::to_string_pretty(summary).expect("a summary serializes");
    json.push('\n');
    fs::write(&json_path, json).map_err(ReportError::io(&json_path))?;
    let md_path = dir.join("summary.md");
    fs::write(&md_path, summary_markdown(summary, scenario)).map_err(ReportError::io(&md_path))
}
