//! A comparison over the cells of a file with `[[axes]]`: every cell is a comparison of its
//! own (the same variants, the same seeds, the cell's own `[expect]`), and the whole is read
//! as a matrix: a row per cell and variant, pass counts per variant and per axis level, and a
//! heat map per metric (rows cells, columns variants).

use serde::{Deserialize, Serialize};

use super::table::{Better, Comparison, VariantRuns, VariantStats, cell as stat_text, column};
use crate::record::CsvSink;
use crate::report::Table;
use crate::report::html::{Page, escape};
use crate::scenario::{Axes, EXPECTABLE_METRICS};

/// One axis as the matrix shows it: its name and its levels' names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AxisLevels {
    pub name: String,
    pub levels: Vec<String>,
}

/// One cell's comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixCell {
    pub cell: String,
    /// Its level on each axis, in the axes' order.
    pub levels: Vec<String>,
    pub comparison: Comparison,
}

/// `compare.json` of a file with axes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    pub scenario: String,
    pub version: String,
    pub seeds: Vec<u64>,
    pub axes: Vec<AxisLevels>,
    pub cells: Vec<MatrixCell>,
}

/// One cell's runs: its name, its levels, and each variant's runs (each with the cell's own
/// `[expect]`).
pub struct CellRuns {
    pub cell: String,
    pub levels: Vec<String>,
    pub variants: Vec<VariantRuns>,
}

/// What a matrix's page opens with, before the pass counts: a heading and its lines (advise's
/// recommendation and why), and the variants in the order the tables and heat maps show them
/// (the first the recommended one).
pub struct Lead {
    pub heading: String,
    pub lines: Vec<String>,
    /// Numbered lines ("1. fair-share: …") shown as a list after `lines`.
    pub list: Vec<String>,
    pub order: Vec<String>,
}

impl MatrixCell {
    /// A variant's numbers in this cell, when it ran here.
    pub fn variant(&self, name: &str) -> Option<&VariantStats> {
        self.comparison.variants.iter().find(|v| v.name == name)
    }
}

impl Matrix {
    /// Each cell compared on `shown` (metric names, in column order).
    pub fn new(
        scenario: &str,
        axes: &Axes,
        seeds: &[u64],
        cells: &[CellRuns],
        shown: &[String],
    ) -> Self {
        let cells = cells
            .iter()
            .map(|c| MatrixCell {
                cell: c.cell.clone(),
                levels: c.levels.clone(),
                comparison: Comparison::with_metrics(
                    &c.cell,
                    seeds,
                    &c.variants,
                    &Default::default(),
                    shown,
                ),
            })
            .collect();
        Matrix {
            scenario: scenario.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            seeds: seeds.to_vec(),
            axes: axes
                .axes
                .iter()
                .map(|a| AxisLevels {
                    name: a.name.clone(),
                    levels: a.levels.iter().map(|l| l.name.clone()).collect(),
                })
                .collect(),
            cells,
        }
    }

    /// The variants, in the order the first cell ran them.
    pub fn variant_names(&self) -> Vec<String> {
        self.cells.first().map_or_else(Vec::new, |c| {
            c.comparison
                .variants
                .iter()
                .map(|v| v.name.clone())
                .collect()
        })
    }

    fn columns(&self) -> Vec<String> {
        self.cells
            .first()
            .map_or_else(Vec::new, |c| c.comparison.columns.clone())
    }

    /// A variant meets a cell when its means are within every range the cell states.
    fn meets(cell: &MatrixCell, variant: &str) -> bool {
        cell.variant(variant).is_some_and(|v| v.missed == 0)
    }

    /// Per variant: the cells it meets, of those it ran in.
    pub fn pass_counts(&self) -> Vec<(String, usize, usize)> {
        self.variant_names()
            .into_iter()
            .map(|v| {
                let ran = self.cells.iter().filter(|c| c.variant(&v).is_some());
                let (mut met, mut all) = (0, 0);
                for c in ran {
                    all += 1;
                    met += usize::from(Self::meets(c, &v));
                }
                (v, met, all)
            })
            .collect()
    }

    /// The pass counts, most cells met first (ties in `order`, then in the order they ran).
    pub fn pass_counts_best_first(&self, order: &[String]) -> Vec<(String, usize, usize)> {
        let mut counts = self.pass_counts();
        let at = |v: &str| order.iter().position(|o| o == v).unwrap_or(usize::MAX);
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(at(&a.0).cmp(&at(&b.0))));
        counts
    }

    /// The variants in the order a page shows them: `order`'s first (those that ran), then
    /// the rest by cells met, best first.
    fn shown_order(&self, order: &[String]) -> Vec<String> {
        let ran = self.variant_names();
        let mut out: Vec<String> = order.iter().filter(|v| ran.contains(v)).cloned().collect();
        for (v, _, _) in self.pass_counts_best_first(order) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// Rows: each level of axis `axis`; columns: each variant's "met/cells" there.
    pub fn level_table(&self, axis: usize) -> Table {
        self.level_table_of(axis, &self.variant_names())
    }

    /// [`Matrix::level_table`] with the variants in the order given.
    fn level_table_of(&self, axis: usize, variants: &[String]) -> Table {
        let mut header = vec![self.axes[axis].name.as_str()];
        header.extend(variants.iter().map(String::as_str));
        let mut t = Table::new(&header);
        for level in &self.axes[axis].levels {
            let here: Vec<&MatrixCell> = self
                .cells
                .iter()
                .filter(|c| c.levels.get(axis) == Some(level))
                .collect();
            let mut row = vec![level.clone()];
            for v in variants {
                let met = here.iter().filter(|c| Self::meets(c, v)).count();
                row.push(format!("{met}/{}", here.len()));
            }
            t.row(row);
        }
        t
    }

    /// A row per cell and variant (within a cell the winner first): the rank within the cell,
    /// each column, and the ranges missed.
    pub fn table(&self) -> Table {
        let columns: Vec<String> = self.columns();
        let mut header = vec!["cell", "variant", "rank"];
        header.extend(columns.iter().filter_map(|m| column(m)).map(|c| c.header));
        header.push("expect");
        let mut t = Table::new(&header);
        for c in &self.cells {
            for v in c.comparison.ranked() {
                let mut row = vec![c.cell.clone(), v.name.clone(), v.rank.to_string()];
                for col in columns.iter().filter_map(|m| column(m)) {
                    row.push(stat_text(&v.metrics[col.metric], col));
                }
                row.push(expect_text(v));
                t.row(row);
            }
        }
        t
    }

    /// The pass counts as lines, most cells met first: "fair-share: meets 150 of 216 cells".
    pub fn summary_lines(&self) -> Vec<String> {
        self.pass_counts_best_first(&[])
            .into_iter()
            .map(|(v, met, all)| format!("{v}: meets every [expect] range in {met} of {all} cells"))
            .collect()
    }

    /// The cells a variant misses, each with what it missed.
    pub fn misses(&self, variant: &str) -> Vec<String> {
        self.cells
            .iter()
            .filter_map(|c| {
                let v = c.variant(variant)?;
                (v.missed > 0).then(|| format!("{}: {}", c.cell, expect_text(v)))
            })
            .collect()
    }

    /// `compare.md`.
    pub fn markdown_page(&self) -> String {
        let mut out = format!(
            "# {}: {} cells × {} variants over {} seed{}\n\n",
            self.scenario,
            self.cells.len(),
            self.variant_names().len(),
            self.seeds.len(),
            if self.seeds.len() == 1 { "" } else { "s" }
        );
        out.push_str(
            "## Cells met (every `[expect]` range of the cell, on the means over seeds)\n\n",
        );
        for line in self.summary_lines() {
            out.push_str(&format!("- {line}\n"));
        }
        for (i, _) in self.axes.iter().enumerate() {
            out.push('\n');
            out.push_str(&self.level_table(i).markdown());
        }
        out.push_str("\n## Every cell\n\n");
        out.push_str(&self.table().markdown());
        out.push_str(
            "\nmean ± 95 % t-interval over seeds; rank within the cell; `expect` names the ranges \
             missed.\n",
        );
        out
    }

    /// `report.html`: the pass counts, then a heat map per metric.
    pub fn html_page(&self) -> String {
        self.html_page_led(None)
    }

    /// `report.html` opening with `lead` (advise's recommendation), its variants in `lead`'s
    /// order; without one, in the order of cells met, best first.
    pub fn html_page_led(&self, lead: Option<&Lead>) -> String {
        let order = self.shown_order(lead.map_or(&[][..], |l| &l.order[..]));
        let mut page = Page::new(&format!(
            "{}: comparison over {} cells",
            self.scenario,
            self.cells.len()
        ));
        page.meta(&format!(
            "{} variants over {} seeds ({}); axes: {}",
            self.variant_names().len(),
            self.seeds.len(),
            self.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            self.axes
                .iter()
                .map(|a| format!("{} ({} levels)", a.name, a.levels.len()))
                .collect::<Vec<_>>()
                .join(" × ")
        ));
        page.raw(HEAT_STYLE);
        if let Some(lead) = lead {
            page.heading(&lead.heading);
            for line in &lead.lines {
                page.paragraph(line);
            }
            if !lead.list.is_empty() {
                let items: Vec<String> = lead.list.iter().map(|l| escape(l)).collect();
                page.raw(&crate::report::html::plain_list(&items));
            }
        }
        page.heading("Cells met");
        page.paragraph(
            "A variant meets a cell when its means over the seeds are within every [expect] \
             range the cell states (the file's, its levels' and its [[cells]] rules').",
        );
        let mut counts = Table::new(&["variant", "cells met", "of"]);
        for (v, met, all) in self.pass_counts_best_first(&order) {
            counts.row(vec![v, met.to_string(), all.to_string()]);
        }
        page.raw(&scroll(&crate::report::html::table(&counts, |_, _| false)));
        for i in 0..self.axes.len() {
            page.raw(&scroll(&crate::report::html::table(
                &self.level_table_of(i, &order),
                |_, _| false,
            )));
        }
        for metric in self.columns() {
            let Some(col) = column(&metric) else { continue };
            page.heading(&format!("{} by cell", col.header));
            page.paragraph(
                "Green: within the cell's [expect] range for this metric; red: outside it. \
                 Where the cell states no range, the best mean of the row is green and the \
                 worst pale red.",
            );
            page.raw(&scroll(&self.heat_map(&metric, &order)));
        }
        page.finish(&format!("throttle-sim {}", env!("CARGO_PKG_VERSION")))
    }

    /// One metric as a table of coloured cells: rows cells, columns variants.
    fn heat_map(&self, metric: &str, variants: &[String]) -> String {
        let col = column(metric).expect("shown metrics are in the catalogue");
        let mut out = String::from("<table class=\"heat\">\n<thead><tr><th>cell</th>");
        for v in variants {
            out.push_str(&format!("<th>{}</th>", escape(v)));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for c in &self.cells {
            out.push_str(&format!("<tr><td>{}</td>", escape(&c.cell)));
            let means: Vec<Option<f64>> = variants
                .iter()
                .map(|v| c.variant(v).and_then(|s| s.metrics[metric].mean))
                .collect();
            let best = pick(&means, col.better, true);
            let worst = pick(&means, col.better, false);
            for (v, mean) in variants.iter().zip(&means) {
                let Some(s) = c.variant(v) else {
                    out.push_str("<td></td>");
                    continue;
                };
                let verdict = s.expect.iter().find(|e| e.metric == metric);
                let class = match (verdict, *mean) {
                    (Some(e), _) if e.pass => "p",
                    (Some(_), _) => "m",
                    (None, Some(x)) if Some(x) == best && best != worst => "b",
                    (None, Some(x)) if Some(x) == worst && best != worst => "w",
                    _ => "n",
                };
                let mut shown = s.metrics[metric].clone();
                shown.half_width = None;
                out.push_str(&format!(
                    "<td class=\"{class}\">{}</td>",
                    escape(&stat_text(&shown, col))
                ));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

/// The best (or worst) of a row's means, by the column's direction.
fn pick(means: &[Option<f64>], better: Better, best: bool) -> Option<f64> {
    let xs = means.iter().flatten().copied();
    let lower_wins = (better == Better::Lower) == best;
    if lower_wins {
        xs.min_by(f64::total_cmp)
    } else {
        xs.max_by(f64::total_cmp)
    }
}

const HEAT_STYLE: &str = "<style>\
div.scroll{overflow-x:auto;max-width:100%}\
table.heat td{font-size:.88em;padding:2px 8px}\
table.heat td.p{background:#cdeccd}table.heat td.m{background:#f4c2c2}\
table.heat td.b{background:#e3f4e3}table.heat td.w{background:#fbe6e6}\
</style>\n";

/// Tables wider than the page scroll inside their own box.
fn scroll(html: &str) -> String {
    format!("<div class=\"scroll\">\n{html}</div>\n")
}

/// "pass", or the metrics whose ranges the means miss ("missed ratio_429, utilization").
fn expect_text(v: &VariantStats) -> String {
    if v.expect.is_empty() {
        return "-".into();
    }
    let missed: Vec<&str> = v
        .expect
        .iter()
        .filter(|e| !e.pass)
        .map(|e| e.metric.as_str())
        .collect();
    if missed.is_empty() {
        "pass".into()
    } else {
        format!("missed {}", missed.join(", "))
    }
}

/// `compare.csv` of a matrix: the columns of a plain comparison's, after a `cell` column.
pub fn matrix_csv(seeds: &[u64], cells: &[CellRuns]) -> String {
    let mut buf = Vec::new();
    {
        let mut w = CsvSink::new(&mut buf);
        let mut header = vec!["cell", "variant", "seed"];
        header.extend(EXPECTABLE_METRICS);
        w.header(&header).expect("writing to memory");
        for c in cells {
            for v in &c.variants {
                for (seed, m) in seeds.iter().zip(&v.runs) {
                    w.text(&c.cell).expect("writing to memory");
                    super::files::write_row(&mut w, &v.name, *seed, m);
                }
            }
        }
        w.flush().expect("writing to memory");
    }
    String::from_utf8(buf).expect("CSV of UTF-8 names is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Metrics;
    use crate::scenario::{Axis, Level};

    fn runs(name: &str, ratio: f64, util: f64, expect_util: Option<[f64; 2]>) -> VariantRuns {
        // A run that got answers (one without a 2xx or a 429 has no ratios).
        let m = Metrics {
            requests: 100,
            ok: 90,
            limited: 10,
            ratio_429: ratio,
            utilization: util,
            fairness: 1.0,
            capacity: 100.0,
            ..Metrics::default()
        };
        VariantRuns {
            name: name.into(),
            runs: vec![m.clone(), m],
            expect: expect_util.map(|r| [("utilization".to_string(), r)].into_iter().collect()),
        }
    }

    fn axes() -> Axes {
        let level = |n: &str| Level {
            name: n.into(),
            description: String::new(),
            set: Default::default(),
            expect: Default::default(),
        };
        Axes {
            axes: vec![Axis {
                name: "server".into(),
                description: String::new(),
                levels: vec![level("a"), level("b")],
            }],
            rules: Vec::new(),
        }
    }

    fn matrix() -> Matrix {
        let range = Some([0.9, 1.0]);
        let cells = [
            CellRuns {
                cell: "a".into(),
                levels: vec!["a".into()],
                variants: vec![runs("x", 0.0, 0.95, range), runs("y", 0.1, 0.5, range)],
            },
            CellRuns {
                cell: "b".into(),
                levels: vec!["b".into()],
                variants: vec![runs("x", 0.0, 0.80, range), runs("y", 0.0, 0.99, range)],
            },
        ];
        let shown = vec!["ratio_429".to_string(), "utilization".to_string()];
        Matrix::new("m", &axes(), &[1, 2], &cells, &shown)
    }

    #[test]
    fn pass_counts_and_level_tables_count_cells_met() {
        let m = matrix();
        assert_eq!(
            m.pass_counts(),
            [("x".to_string(), 1, 2), ("y".to_string(), 1, 2)]
        );
        let t = m.level_table(0);
        assert_eq!(t.rows()[0], ["a", "1/1", "0/1"]);
        assert_eq!(t.rows()[1], ["b", "0/1", "1/1"]);
        assert_eq!(m.misses("x"), ["b: missed utilization"]);
    }

    #[test]
    fn the_table_has_a_row_per_cell_and_variant_ranked_within_its_cell() {
        let m = matrix();
        let t = m.table();
        assert_eq!(t.rows().len(), 4);
        let row = |i: usize| t.rows()[i].clone();
        assert_eq!(row(0)[..3], ["a", "x", "1"]);
        assert_eq!(row(1)[..3], ["a", "y", "2"]);
        assert_eq!(row(1).last().unwrap(), "missed utilization");
        // Within a cell the winner first, whatever order the variants ran in.
        assert_eq!(row(2)[..3], ["b", "y", "1"]);
        assert_eq!(row(3)[..3], ["b", "x", "2"]);
    }

    #[test]
    fn the_heat_map_colours_by_verdict() {
        let m = matrix();
        let html = m.heat_map("utilization", &m.variant_names());
        // Cell a: x passes (green), y misses (red).
        let row_a = html
            .lines()
            .find(|l| l.starts_with("<tr><td>a</td>"))
            .unwrap();
        assert!(
            row_a.contains("<td class=\"p\">0.950</td><td class=\"m\">0.500</td>"),
            "{row_a}"
        );
        // No range for ratio_429: the best of the row is marked, the worst too.
        let html = m.heat_map("ratio_429", &m.variant_names());
        let row_a = html
            .lines()
            .find(|l| l.starts_with("<tr><td>a</td>"))
            .unwrap();
        assert!(
            row_a.contains("class=\"b\">0.00%") && row_a.contains("class=\"w\">10.00%"),
            "{row_a}"
        );
        let page = m.html_page();
        assert!(
            page.contains("Utilization by cell") || page.contains("by cell"),
            "{page}"
        );
    }

    #[test]
    fn the_csv_has_a_cell_column_and_a_row_per_run() {
        let cells = [CellRuns {
            cell: "a/b".into(),
            levels: vec!["a".into(), "b".into()],
            variants: vec![runs("x", 0.0, 0.95, None)],
        }];
        let csv = matrix_csv(&[7, 8], &cells);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(
            lines[0].starts_with("cell,variant,seed,requests"),
            "{}",
            lines[0]
        );
        assert_eq!(lines.len(), 3);
        assert!(lines[1].starts_with("a/b,x,7,"), "{}", lines[1]);
        assert!(lines[2].starts_with("a/b,x,8,"), "{}", lines[2]);
    }
}
