//! A run folder's charts and `report.html`, made from the files the run left (`scenario.toml`,
//! `summary.json`, `series.csv`), so `throttle-sim plot` can make them again without re-running.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ReportError;
use super::canvas::{Chart, render};
use super::charts::{Heading, OkPerThreadChart, RatioChart, RemainingChart, SleepChart, TimeAxis};
use super::files::{read_text, regular};
use super::html::{Page, escape, list, table};
use super::series::{SeriesData, read_series};
use super::{metrics_table, processes_table};
use crate::record::{RunMode, Summary};
use crate::scenario::{Scenario, read_scenario};

/// `variant.toml`: written into the run folders a comparison makes, naming the variant, so
/// their charts and report say which one they show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantNote {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The overrides the variant applies to the scenario, as `path=value`.
    #[serde(default)]
    pub set: Vec<String>,
}

pub const VARIANT_NOTE: &str = "variant.toml";

/// Up to this many processes `report.html` has a table of them; past it the table would bury
/// the charts (`summary.md` always has it).
const MAX_PROCESSES_IN_REPORT: usize = 50;

/// Everything a run folder holds that the report needs.
pub struct RunFolder {
    pub dir: PathBuf,
    pub scenario: Scenario,
    pub summary: Summary,
    pub variant: Option<VariantNote>,
    pub series: SeriesData,
}

impl RunFolder {
    pub fn load(dir: &Path) -> Result<Self, ReportError> {
        let scenario_path = dir.join("scenario.toml");
        read_text(&scenario_path)?;
        let scenario = read_scenario(&scenario_path, &[], 0)?;
        let summary_path = dir.join("summary.json");
        let summary: Summary = serde_json::from_str(&read_text(&summary_path)?)
            .map_err(|e| ReportError::bad_file(&summary_path, None, e))?;
        let note_path = dir.join(VARIANT_NOTE);
        let variant = if note_path.is_file() {
            let text = read_text(&note_path)?;
            Some(toml::from_str(&text).map_err(|e| ReportError::bad_file(&note_path, None, e))?)
        } else {
            None
        };
        let series_path = dir.join("series.csv");
        regular(&series_path, "the charts are drawn from it")?;
        let series = read_series(&series_path, &scenario)?;
        Ok(RunFolder {
            dir: dir.to_path_buf(),
            scenario,
            summary,
            variant,
            series,
        })
    }

    pub fn heading(&self) -> Heading {
        Heading {
            scenario: self.scenario.name.clone(),
            variant: self.variant.as_ref().map(|v| v.name.clone()),
            // A recording has no seed of its own: its clients' randomness is theirs. A live
            // run's drawn seed (up to 19 digits) is in the report's meta line, not the title.
            detail: match self.summary.mode {
                RunMode::Recorded => "recorded".to_string(),
                RunMode::Live => "live".to_string(),
                RunMode::Sim => format!("seed {}", self.summary.seed),
            },
        }
    }

    pub fn axis(&self) -> TimeAxis {
        TimeAxis::for_duration(self.scenario.run.duration.secs())
    }
}

/// A chart written as `charts/<stem>.svg` and `.png`; the SVG text is kept for the report.
pub struct WrittenChart {
    pub stem: String,
    pub svg: String,
}

/// Render `chart` into `dir/charts/`.
pub fn write_chart(dir: &Path, chart: &impl Chart) -> Result<WrittenChart, ReportError> {
    let charts = dir.join("charts");
    fs::create_dir_all(&charts).map_err(ReportError::io(&charts))?;
    let r = render(chart).map_err(|source| ReportError::Draw {
        chart: chart.stem().to_string(),
        source,
    })?;
    let svg_path = charts.join(format!("{}.svg", chart.stem()));
    fs::write(&svg_path, &r.svg).map_err(ReportError::io(&svg_path))?;
    let png_path = charts.join(format!("{}.png", chart.stem()));
    fs::write(&png_path, &r.png).map_err(ReportError::io(&png_path))?;
    Ok(WrittenChart {
        stem: chart.stem().to_string(),
        svg: r.svg,
    })
}

/// How to read each chart of a run, shown under it in the report.
pub fn caption(stem: &str) -> &'static str {
    match stem {
        "sleep" => {
            "Each line is one process's sleep value: how long its threads wait before each \
             request. Lines that come together and stay together mean the processes found an \
             equal share; a line that stays far above the others is a client that never came \
             down. Steps up are backoffs after 429s. With many processes the chart shows the \
             median and the spread per group instead of one line each."
        }
        "ratio_429" => {
            "The share of requests the server refused with 429, over a rolling window. Flat \
             and low is good; spikes show when the clients overshot the limit (typically at \
             the start, when the bucket runs dry, or when clients join). A window in which \
             nobody sent (every client waiting) had no 429 and shows 0. The dashed red line (when \
             [expect] bounds the 429s) is the most it allows, the dotted grey one the ratio \
             over the whole run."
        }
        "remaining" => {
            "The server's RateLimit-Remaining as the clients saw it: the line is the median \
             over the threads that sent in each sampling tick, the band the lowest to highest. \
             A bucket pinned near 0 means the clients use all the capacity; a high value means \
             capacity is left unused."
        }
        "ok_per_thread" => {
            "Successful requests per thread over the whole run. Bars of equal height mean \
             every thread got the same share; the black line is that equal share. With many \
             threads this is a histogram: a narrow peak is fair, a wide spread is not."
        }
        _ => "",
    }
}

/// (Re)write a run folder's charts and `report.html`; returns the charts written.
pub fn write_run_report(dir: &Path) -> Result<Vec<WrittenChart>, ReportError> {
    let run = RunFolder::load(dir)?;
    let heading = run.heading();
    let axis = run.axis();
    let d = &run.series;
    let charts = vec![
        write_chart(
            dir,
            &SleepChart {
                heading: &heading,
                data: d,
                axis,
            },
        )?,
        write_chart(
            dir,
            &RatioChart::of_run(
                &heading,
                d,
                axis,
                run.scenario.expect.get("ratio_429").map(|r| r[1]),
                Some(run.summary.metrics.ratio_429),
            ),
        )?,
        write_chart(
            dir,
            &RemainingChart {
                heading: &heading,
                data: d,
                axis,
            },
        )?,
        write_chart(
            dir,
            &OkPerThreadChart {
                heading: &heading,
                data: d,
            },
        )?,
    ];
    let html = run_html(&run, &charts);
    let path = dir.join("report.html");
    fs::write(&path, html).map_err(ReportError::io(&path))?;
    Ok(charts)
}

fn verdicts_html(s: &Summary) -> Option<String> {
    if s.expect.is_empty() {
        return None;
    }
    let items: Vec<String> = s
        .expect
        .iter()
        .map(|v| {
            let value = v.value.map_or("null".to_string(), |x| format!("{x:.4}"));
            let (class, word) = if v.pass {
                ("pass", "pass")
            } else {
                ("missed", "MISSED")
            };
            format!(
                "<span class=\"{class}\">{word}</span> {} = {} (expected {} to {})",
                escape(&v.metric),
                value,
                v.range[0],
                v.range[1]
            )
        })
        .collect();
    Some(list(&items))
}

/// `t` without those of `columns` that are 0 in every row: a run without errors needs no
/// column saying so, and the key columns then fit at 1,280 px (summary.md keeps them all).
fn without_zero_columns(t: &super::Table, columns: &[&str]) -> super::Table {
    let keep: Vec<usize> = (0..t.header().len())
        .filter(|&c| {
            !columns.contains(&t.header()[c].as_str()) || t.rows().iter().any(|r| r[c] != "0")
        })
        .collect();
    let header: Vec<&str> = keep.iter().map(|&c| t.header()[c].as_str()).collect();
    let mut out = super::Table::new(&header);
    for r in t.rows() {
        out.row(keep.iter().map(|&c| r[c].clone()).collect());
    }
    out
}

/// The line under a run report's title: the mode, the seed (a recording has none: its clients'
/// randomness is their own), the length and who ran.
fn run_meta(s: &Summary, threads: u64) -> String {
    let n = |count: u64, one: &str, many: &str| {
        format!("{count} {}", if count == 1 { one } else { many })
    };
    let processes = s.processes.len() as u64;
    let who = if s.mode == RunMode::Recorded {
        // One process of one thread per recorded client.
        n(processes, "client", "clients")
    } else {
        format!(
            "{} in {}",
            n(threads, "thread", "threads"),
            n(processes, "process", "processes")
        )
    };
    let seed = match s.mode {
        RunMode::Recorded => String::new(),
        _ => format!(", seed {}", s.seed),
    };
    format!(
        "{} mode{seed}, {} s{}, {who}, throttle-sim {}",
        s.mode,
        s.duration_s,
        if s.partial { " (PARTIAL run)" } else { "" },
        s.version
    )
}

fn run_html(run: &RunFolder, charts: &[WrittenChart]) -> String {
    let s = &run.summary;
    let sc = &run.scenario;
    let title = match &run.variant {
        Some(v) => format!("{} / {}", sc.name, v.name),
        None => sc.name.clone(),
    };
    let mut page = Page::new(&title);
    page.meta(&run_meta(s, sc.threads_total()));
    if !sc.description.is_empty() {
        page.paragraph(&sc.description);
    }
    if let Some(v) = &run.variant {
        let mut text = format!("Variant `{}`", v.name);
        if !v.description.is_empty() {
            text.push_str(&format!(": {}", v.description));
        }
        if !v.set.is_empty() {
            text.push_str(&format!(" (sets {})", v.set.join(", ")));
        }
        page.paragraph(&text);
    }
    page.heading("Summary");
    page.raw(&table(
        &without_zero_columns(&metrics_table(s), &["errors", "timed_out"]),
        |_, _| false,
    ));
    page.paragraph(
        "ratio_429: 429s / requests. utilization: 2xx / the most the server could give. \
         fairness: Jain's index over threads of their 2xx rate (1 = equal). windowed: the \
         same index per fairness_window over the threads running through it, averaged, so \
         joins and leaves do not count as unfairness. converged: when \
         the processes' sleep values came within 25 % of each other (coefficient of \
         variation) and stayed there; - if never. wait: from wanting to send to the 2xx.",
    );
    if let Some(v) = verdicts_html(s) {
        page.heading("Expectations");
        page.raw(&v);
    }
    page.heading("Charts");
    for c in charts {
        page.figure(&c.svg, caption(&c.stem));
    }
    if s.processes.len() <= MAX_PROCESSES_IN_REPORT {
        page.heading("Processes");
        page.raw(&table(&processes_table(s), |_, _| false));
    }
    page.finish(
        "Made by throttle-sim from scenario.toml, summary.json and series.csv in this folder; \
         `throttle-sim plot <this folder>` draws it again.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_of_zeros_only_are_left_out() {
        let mut t = super::super::Table::new(&["group", "errors", "timed_out", "ratio_429"]);
        t.row(vec!["all".into(), "0".into(), "2".into(), "0".into()]);
        t.row(vec!["a".into(), "0".into(), "0".into(), "0".into()]);
        let kept = without_zero_columns(&t, &["errors", "timed_out", "group"]);
        // errors is 0 throughout; timed_out is not; ratio_429 is not one to leave out.
        assert_eq!(kept.header(), ["group", "timed_out", "ratio_429"]);
        assert_eq!(kept.rows()[0], ["all", "2", "0"]);
    }
}
