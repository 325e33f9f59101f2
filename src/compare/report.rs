//! A comparison folder's charts and `report.html`, from `compare.csv`, `scenario.toml` and the
//! first-seed run folder of each variant — the same code for `compare` and `plot`.

use std::fs;
use std::path::{Path, PathBuf};

use super::files::read_compare_csv;
use super::table::Comparison;
use crate::error::Error;
use crate::record::RunMode;
use crate::report::charts::{
    FairnessChart, Heading, Interval, RatioChart, RatioLine, TimeAxis, TradeoffChart, VariantPoint,
    window_text,
};
use crate::report::html::{Page, escape, list, plain_list};
use crate::report::{RunFolder, WrittenChart, read_text, write_chart, write_run_report};
use crate::scenario::{Override, Scenario, folder_char, read_scenario};

/// The folder of variant `index` (0-based) named `name`: `variants/01-no-jitter`.
pub fn variant_dir(dir: &Path, index: usize, name: &str) -> PathBuf {
    let safe: String = name.chars().map(folder_char).collect();
    dir.join("variants")
        .join(format!("{:02}-{}", index + 1, safe.trim_start_matches('.')))
}

/// Whether `dir` holds a comparison rather than a single run.
pub fn is_comparison(dir: &Path) -> bool {
    dir.join("compare.csv").is_file()
}

/// The comparison recomputed from `dir/compare.csv`.
pub fn load_comparison(dir: &Path) -> Result<Comparison, Error> {
    let scenario_path = dir.join("scenario.toml");
    read_text(&scenario_path)?;
    let scenario = read_scenario(&scenario_path, &[], 0)?;
    let (seeds, mut runs) = read_compare_csv(&dir.join("compare.csv"))?;
    // A [[variants]] entry may set its own `expect.*` ranges: judge it on those again.
    for run in &mut runs {
        if let Some(v) = scenario.variants.iter().find(|v| v.name == run.name) {
            let sets = v
                .set
                .iter()
                .map(|(path, value)| Override::new(path, value.clone()))
                .collect::<Result<Vec<_>, _>>();
            if let Ok(sets) = sets {
                run.expect = Some(read_scenario(&scenario_path, &sets, 0)?.expect);
            }
        }
    }
    Ok(Comparison::with_metrics(
        &scenario.name,
        &seeds,
        &runs,
        &scenario.expect,
        &scenario.compare_metrics(),
    ))
}

fn caption(stem: &str, seeds: usize) -> String {
    match stem {
        "tradeoff" => format!(
            "Each large dot is a variant's mean over {seeds} seeds, its bars the 95 % \
             t-interval of that mean, the small circles the single seeds. Down and to the \
             right is better: fewer 429s while using more of the server's capacity. A \
             triangle at an edge is a variant far off the scale, with its numbers beside it."
        ),
        "fairness" => format!(
            "Jain's fairness index over threads of their 2xx rate: 1 when every thread got \
             the same rate, 1/n when one got everything. Bars are means over {seeds} seeds, \
             whiskers the 95 % t-interval, dots the single seeds."
        ),
        "ratio_429" => "The 429 ratio over time of each variant's first seed, over a rolling \
                        window: when each variant overshoots, and whether it calms down. The \
                        dashed red line (when [expect] bounds the 429s) is the most it allows."
            .to_string(),
        _ => String::new(),
    }
}

/// (Re)write the charts and `report.html` of the comparison in `dir`, and those of each
/// variant's run folder, `jobs` variants at a time.
pub fn write_compare_report(dir: &Path, jobs: usize) -> Result<Comparison, Error> {
    let scenario = read_scenario(&dir.join("scenario.toml"), &[], 0)?;
    let cmp = load_comparison(dir)?;
    let sections = draw_variants(dir, &cmp, jobs)?;
    let charts = write_charts(dir, &cmp, &scenario, &sections)?;
    let html = compare_html(dir, &cmp, &scenario, &charts, &sections);
    let path = dir.join("report.html");
    fs::write(&path, html).map_err(Error::io(&path))?;
    Ok(cmp)
}

/// A variant's first-seed run folder, with its report drawn.
struct VariantSection {
    dir: PathBuf,
    run: RunFolder,
    /// Its sleep chart, shown again in the comparison.
    sleep: Option<WrittenChart>,
}

/// Each variant's own report, drawn `jobs` at a time.
fn draw_variants(dir: &Path, cmp: &Comparison, jobs: usize) -> Result<Vec<VariantSection>, Error> {
    crate::parallel::run_all(cmp.variants.len(), jobs, |i| {
        let vdir = variant_dir(dir, i, &cmp.variants[i].name);
        let charts = write_run_report(&vdir)?;
        Ok(VariantSection {
            run: RunFolder::load(&vdir)?,
            sleep: charts.into_iter().find(|c| c.stem == "sleep"),
            dir: vdir,
        })
    })
    .into_iter()
    .collect()
}

/// The comparison's own charts: the trade-off, the fairness bars, and the 429 ratio of every
/// variant's first seed over one rolling window.
fn write_charts(
    dir: &Path,
    cmp: &Comparison,
    scenario: &Scenario,
    sections: &[VariantSection],
) -> Result<Vec<WrittenChart>, Error> {
    let n_seeds = cmp.seeds.len();
    let many = Heading {
        scenario: cmp.scenario.clone(),
        variant: None,
        detail: format!("{n_seeds} seed{}", if n_seeds == 1 { "" } else { "s" }),
    };
    let first = Heading {
        scenario: cmp.scenario.clone(),
        variant: None,
        detail: format!("seed {}", cmp.seeds.first().copied().unwrap_or(0)),
    };
    let window = sections.first().map(|s| s.run.series.default_window());
    let bucket_s = sections.first().map_or(1.0, |s| s.run.series.bucket_s);
    let lines = cmp
        .variants
        .iter()
        .zip(sections)
        .map(|(v, s)| RatioLine {
            label: v.name.clone(),
            overall: false,
            times: s.run.series.times.clone(),
            ratio: s.run.series.rolling_ratio(0, window.unwrap_or(1)),
        })
        .collect();
    Ok(vec![
        write_chart(
            dir,
            &TradeoffChart {
                heading: &many,
                points: tradeoff_points(cmp),
            },
        )?,
        write_chart(
            dir,
            &FairnessChart {
                heading: &many,
                bars: fairness_bars(cmp),
            },
        )?,
        write_chart(
            dir,
            &RatioChart {
                heading: &first,
                lines,
                window: window_text(window.unwrap_or(1) as f64 * bucket_s),
                axis: TimeAxis::for_duration(scenario.run.duration.secs()),
                // Each variant has its own mean (the table has them): only the bound is drawn.
                threshold: scenario.expect.get("ratio_429").map(|r| r[1]),
                mean: None,
            },
        )?,
    ])
}

/// Each variant's mean utilization against its mean 429 ratio, with their intervals and
/// the single seeds.
fn tradeoff_points(cmp: &Comparison) -> Vec<VariantPoint> {
    cmp.variants
        .iter()
        .map(|v| {
            let (u, r) = (&v.metrics["utilization"], &v.metrics["ratio_429"]);
            VariantPoint {
                name: v.name.clone(),
                x: u.mean.unwrap_or(0.0),
                x_interval: u.interval(),
                y: r.mean.unwrap_or(0.0),
                y_interval: r.interval(),
                seeds: u
                    .values
                    .iter()
                    .zip(&r.values)
                    .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
                    .collect(),
            }
        })
        .collect()
}

/// Each variant's mean fairness, its interval and the single seeds.
fn fairness_bars(cmp: &Comparison) -> Vec<(String, f64, Option<Interval>, Vec<f64>)> {
    cmp.variants
        .iter()
        .map(|v| {
            let f = &v.metrics["fairness"];
            (
                v.name.clone(),
                f.mean.unwrap_or(0.0),
                f.interval(),
                f.values.iter().flatten().copied().collect(),
            )
        })
        .collect()
}

/// The comparison's `report.html`.
fn compare_html(
    dir: &Path,
    cmp: &Comparison,
    scenario: &Scenario,
    charts: &[WrittenChart],
    sections: &[VariantSection],
) -> String {
    let mut page = Page::new(&format!("{}: comparison", cmp.scenario));
    page.meta(&page_meta(cmp, sections));
    if !scenario.description.is_empty() {
        page.paragraph(&scenario.description);
    }
    page.heading("Ranking");
    if let Some(h) = cmp.headline() {
        page.paragraph(&format!("In short: {h}."));
    }
    page.raw(&plain_list(
        &cmp.ranking_lines()
            .iter()
            .map(|l| escape(l))
            .collect::<Vec<_>>(),
    ));
    page.heading("Comparison");
    page.raw(&cmp.html());
    page.paragraph(&cmp.method);
    if cmp.variants.iter().any(|v| !v.expect.is_empty()) {
        let missed: Vec<String> = cmp
            .missed()
            .map(|(name, e)| {
                format!(
                    "<span class=\"missed\">MISSED</span> {}: {}",
                    escape(name),
                    escape(&super::table::verdict_text(e))
                )
            })
            .collect();
        page.heading("Expectations (on the means over seeds)");
        if missed.is_empty() {
            page.paragraph("Every variant is within every [expect] range.");
        } else {
            page.raw(&list(&missed));
        }
    }
    page.heading("Charts");
    for c in charts {
        page.figure(&c.svg, &caption(&c.stem, cmp.seeds.len()));
    }
    page.heading("Variants");
    // How to read a sleep chart is said once, under the first.
    let mut sleep_caption = crate::report::caption("sleep");
    for section in sections {
        page.raw(&variant_html(dir, section));
        if let Some(s) = &section.sleep {
            page.figure(&s.svg, sleep_caption);
            sleep_caption = "";
        }
    }
    page.finish(
        "Made by throttle-sim from compare.csv, scenario.toml and the variants/ folders; \
         `throttle-sim plot <this folder>` draws it again.",
    )
}

/// The line under the title: the variants and seeds of a comparison, or the runs and their
/// modes of `compare --runs`.
fn page_meta(cmp: &Comparison, sections: &[VariantSection]) -> String {
    let n_seeds = cmp.seeds.len();
    // By name, as the line lists them.
    let mut modes: Vec<&str> = sections
        .iter()
        .map(|s| s.run.summary.mode.as_str())
        .collect();
    modes.sort_unstable();
    modes.dedup();
    if modes.iter().all(|&m| m == RunMode::Sim.as_str()) {
        format!(
            "{} variants, each over the same {n_seeds} seed{} ({}); sim mode; throttle-sim {}",
            cmp.variants.len(),
            if n_seeds == 1 { "" } else { "s" },
            cmp.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            cmp.version
        )
    } else {
        // `compare --runs`: existing run folders, one run each, of other modes too.
        format!(
            "{} runs side by side, one run each ({} mode); throttle-sim {}",
            cmp.variants.len(),
            modes.join(", "),
            cmp.version
        )
    }
}

/// A variant's heading and paragraph: what it sets, and a link to its own report.
fn variant_html(dir: &Path, section: &VariantSection) -> String {
    let run = &section.run;
    let name = run.variant.as_ref().map_or("?", |v| v.name.as_str());
    let rel = section
        .dir
        .strip_prefix(dir)
        .unwrap_or(&section.dir)
        .join("report.html")
        .to_string_lossy()
        .replace('\\', "/");
    let mut text = format!("<h3>{}</h3>\n<p>", escape(name));
    if let Some(v) = &run.variant {
        if !v.description.is_empty() {
            text.push_str(&format!("{}. ", escape(&v.description)));
        }
        if v.set.is_empty() {
            // `base` says so in its description already.
            if v.description.is_empty() {
                text.push_str("The scenario as written. ");
            }
        } else {
            text.push_str(&format!(
                "Sets <code>{}</code>. ",
                escape(&v.set.join(", "))
            ));
        }
    }
    text.push_str(&format!(
        "<a href=\"{}\">Its full report</a> (seed {}).</p>\n",
        escape(&rel),
        run.summary.seed
    ));
    text
}
