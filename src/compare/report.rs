//! A comparison folder's charts and `report.html`, from `compare.csv`, `scenario.toml` and the
//! first-seed run folder of each variant — the same code for `compare` and `plot`.

use std::fs;
use std::path::{Path, PathBuf};

use super::files::read_compare_csv;
use super::table::Comparison;
use crate::error::Error;
use crate::record::RunMode;
use crate::report::charts::{
    FairnessChart, Heading, RatioChart, RatioLine, TradeoffChart, VariantPoint, window_text,
};
use crate::report::html::{Page, escape, list};
use crate::report::{RunFolder, WrittenChart, read_text, write_chart, write_run_report};
use crate::scenario::{Override, read_scenario};

/// The folder of variant `index` (0-based) named `name`: `variants/01-no-jitter`.
pub fn variant_dir(dir: &Path, index: usize, name: &str) -> PathBuf {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
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
             right is better: fewer 429s while using more of the server's capacity."
        ),
        "fairness" => format!(
            "Jain's fairness index over threads of their 2xx rate: 1 when every thread got \
             the same rate, 1/n when one got everything. Bars are means over {seeds} seeds, \
             whiskers the 95 % t-interval, dots the single seeds."
        ),
        "ratio_429" => "The 429 ratio over time of each variant's first seed, over a rolling \
                        window: when each variant overshoots, and whether it calms down."
            .to_string(),
        _ => String::new(),
    }
}

/// (Re)write the charts and `report.html` of the comparison in `dir`, and those of each
/// variant's run folder, `jobs` variants at a time.
pub fn write_compare_report(dir: &Path, jobs: usize) -> Result<Comparison, Error> {
    let scenario = read_scenario(&dir.join("scenario.toml"), &[], 0)?;
    let cmp = load_comparison(dir)?;
    let n_seeds = cmp.seeds.len();

    // Each variant's own report (drawn `jobs` at a time), and what the comparison's charts
    // need from it.
    let drawn = crate::parallel::run_all(cmp.variants.len(), jobs, |i| {
        let vdir = variant_dir(dir, i, &cmp.variants[i].name);
        let charts = write_run_report(&vdir)?;
        let run = RunFolder::load(&vdir)?;
        let sleep = charts.into_iter().find(|c| c.stem == "sleep");
        Ok::<_, Error>((vdir, run, sleep))
    });
    let mut ratio_lines = Vec::new();
    let mut window = None;
    let mut variant_sections = Vec::new();
    for (v, d) in cmp.variants.iter().zip(drawn) {
        let (vdir, run, sleep) = d?;
        let w = *window.get_or_insert_with(|| run.series.default_window());
        ratio_lines.push(RatioLine {
            label: v.name.clone(),
            overall: false,
            times: run.series.times.clone(),
            ratio: run.series.rolling_ratio(0, w),
        });
        variant_sections.push((vdir, run, sleep));
    }
    let bucket_s = variant_sections
        .first()
        .map_or(1.0, |(_, r, _)| r.series.bucket_s);

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
    let stat = |v: &super::table::VariantStats, m: &str| v.metrics[m].clone();
    let points = cmp
        .variants
        .iter()
        .map(|v| {
            let (u, r) = (stat(v, "utilization"), stat(v, "ratio_429"));
            VariantPoint {
                name: v.name.clone(),
                x: u.mean.unwrap_or(0.0),
                x_half: u.half_width,
                y: r.mean.unwrap_or(0.0),
                y_half: r.half_width,
                seeds: u
                    .values
                    .iter()
                    .zip(&r.values)
                    .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
                    .collect(),
            }
        })
        .collect();
    let bars = cmp
        .variants
        .iter()
        .map(|v| {
            let f = stat(v, "fairness");
            (
                v.name.clone(),
                f.mean.unwrap_or(0.0),
                f.half_width,
                f.values.iter().flatten().copied().collect(),
            )
        })
        .collect();
    let charts: Vec<WrittenChart> = vec![
        write_chart(
            dir,
            &TradeoffChart {
                heading: &many,
                points,
            },
        )?,
        write_chart(
            dir,
            &FairnessChart {
                heading: &many,
                bars,
            },
        )?,
        write_chart(
            dir,
            &RatioChart {
                heading: &first,
                lines: ratio_lines,
                window: window_text(window.unwrap_or(1) as f64 * bucket_s),
                axis: crate::report::charts::TimeAxis::for_duration(scenario.run.duration.secs()),
            },
        )?,
    ];

    let mut page = Page::new(&format!("{}: comparison", cmp.scenario));
    // By name, as the page lists them.
    let mut modes: Vec<&str> = variant_sections
        .iter()
        .map(|(_, r, _)| r.summary.mode.as_str())
        .collect();
    modes.sort_unstable();
    modes.dedup();
    if modes.iter().all(|&m| m == RunMode::Sim.as_str()) {
        page.meta(&format!(
            "{} variants, each over the same {n_seeds} seed{} ({}); sim mode; throttle-sim {}",
            cmp.variants.len(),
            if n_seeds == 1 { "" } else { "s" },
            cmp.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            cmp.version
        ));
    } else {
        // `compare --runs`: existing run folders, one run each, of other modes too.
        page.meta(&format!(
            "{} runs side by side, one run each ({} mode); throttle-sim {}",
            cmp.variants.len(),
            modes.join(", "),
            cmp.version
        ));
    }
    if !scenario.description.is_empty() {
        page.paragraph(&scenario.description);
    }
    page.heading("Ranking");
    page.raw(&list(
        &cmp.ranking_lines()
            .iter()
            .map(|l| escape(l))
            .collect::<Vec<_>>(),
    ));
    page.heading("Comparison");
    page.raw(&cmp.html());
    page.paragraph(&cmp.method);
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
    if cmp.variants.iter().any(|v| !v.expect.is_empty()) {
        page.heading("Expectations (on the means over seeds)");
        if missed.is_empty() {
            page.paragraph("Every variant is within every [expect] range.");
        } else {
            page.raw(&list(&missed));
        }
    }
    page.heading("Charts");
    for c in &charts {
        page.figure(&c.svg, &caption(&c.stem, n_seeds));
    }
    page.heading("Variants");
    for (vdir, run, sleep) in &variant_sections {
        let name = run.variant.as_ref().map_or("?", |v| v.name.as_str());
        let rel = vdir
            .strip_prefix(dir)
            .unwrap_or(vdir)
            .join("report.html")
            .to_string_lossy()
            .replace('\\', "/");
        let mut text = format!("<h3>{}</h3>\n<p>", escape(name));
        if let Some(v) = &run.variant {
            if !v.description.is_empty() {
                text.push_str(&format!("{}. ", escape(&v.description)));
            }
            if v.set.is_empty() {
                text.push_str("The scenario as written. ");
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
        page.raw(&text);
        if let Some(s) = sleep {
            page.figure(&s.svg, crate::report::caption("sleep"));
        }
    }
    let html = page.finish(
        "Made by throttle-sim from compare.csv, scenario.toml and the variants/ folders; \
         `throttle-sim plot <this folder>` draws it again.",
    );
    let path = dir.join("report.html");
    fs::write(&path, html).map_err(Error::io(&path))?;
    Ok(cmp)
}
