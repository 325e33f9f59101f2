//! The comparison itself: per variant and metric the mean and interval over seeds, the best of
//! each column, the ranking, and the `[expect]` verdicts; rendered as text, Markdown and HTML.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::Stat;
use crate::record::{ExpectVerdict, Metrics};
use crate::report::Table;
use crate::scenario::{EXPECTABLE_METRICS, Expect};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// A column of the comparison table.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub metric: &'static str,
    pub header: &'static str,
    pub better: Better,
    /// Shown as a percentage.
    pub percent: bool,
    pub digits: usize,
    /// What a variant with no value on any seed shows.
    pub never: &'static str,
}

/// Every metric `compare` can show (each `[expect]` metric), which way is better and how it is
/// printed. A scenario picks its columns with `[compare] metrics`
/// ([`crate::scenario::Scenario::compare_metrics`]).
pub const CATALOGUE: [Column; 20] = [
    Column {
        metric: "requests",
        header: "requests",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "ok",
        header: "ok",
        better: Better::Higher,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "limited",
        header: "limited",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "errors",
        header: "errors",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "timed_out",
        header: "timed_out",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "ratio_429",
        header: "ratio_429",
        better: Better::Lower,
        percent: true,
        digits: 2,
        never: "-",
    },
    Column {
        metric: "ratio_429_late",
        header: "ratio_429_late",
        better: Better::Lower,
        percent: true,
        digits: 2,
        never: "-",
    },
    Column {
        metric: "retry_rate_thread_mean",
        header: "retry_rate_thread_mean",
        better: Better::Lower,
        percent: true,
        digits: 2,
        never: "-",
    },
    Column {
        metric: "capacity",
        header: "capacity",
        better: Better::Higher,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "utilization",
        header: "utilization",
        better: Better::Higher,
        percent: false,
        digits: 3,
        never: "-",
    },
    Column {
        metric: "fairness",
        header: "fairness",
        better: Better::Higher,
        percent: false,
        digits: 3,
        never: "-",
    },
    Column {
        metric: "fairness_windowed",
        header: "windowed fairness",
        better: Better::Higher,
        percent: false,
        digits: 3,
        never: "-",
    },
    Column {
        metric: "request_count_stdev",
        header: "request_count_stdev",
        better: Better::Lower,
        percent: false,
        digits: 1,
        never: "-",
    },
    Column {
        metric: "max_sleep",
        header: "max_sleep s",
        better: Better::Lower,
        percent: false,
        digits: 1,
        never: "-",
    },
    Column {
        metric: "convergence_s",
        header: "convergence s",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "never",
    },
    Column {
        metric: "wait_p50",
        header: "wait_p50 s",
        better: Better::Lower,
        percent: false,
        digits: 2,
        never: "-",
    },
    Column {
        metric: "wait_p99",
        header: "wait_p99 s",
        better: Better::Lower,
        percent: false,
        digits: 2,
        never: "-",
    },
    Column {
        metric: "time_to_clear",
        header: "time_to_clear s",
        better: Better::Lower,
        percent: false,
        digits: 2,
        never: "never",
    },
    Column {
        metric: "peak_requests",
        header: "peak_requests",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "-",
    },
    Column {
        metric: "peak_process_requests",
        header: "peak_process_requests",
        better: Better::Lower,
        percent: false,
        digits: 0,
        never: "-",
    },
];

/// The column of an `[expect]` metric.
pub fn column(metric: &str) -> Option<&'static Column> {
    CATALOGUE.iter().find(|c| c.metric == metric)
}

/// Whether `metric` counts in the rank when `shown` are the columns: all do, except windowed
/// fairness beside fairness (it measures what fairness does, and would count it twice).
fn ranked(metric: &str, shown: &[String]) -> bool {
    metric != "fairness_windowed" || !shown.iter().any(|m| m == "fairness")
}

impl VariantStats {
    /// A variant's statistics over its seeds, and its own `[expect]` (else `expect`) judged
    /// on their means; unranked.
    fn of(v: &VariantRuns, expect: &Expect) -> Self {
        let metrics: BTreeMap<String, Stat> = EXPECTABLE_METRICS
            .iter()
            .map(|m| {
                let values: Vec<Option<f64>> = v.runs.iter().map(|r| r.get(m)).collect();
                (
                    m.to_string(),
                    Stat::of_bounded(&values, crate::record::metric_bounds(m)),
                )
            })
            .collect();
        let expect: Vec<ExpectVerdict> = v
            .expect
            .as_ref()
            .unwrap_or(expect)
            .iter()
            .map(|(metric, &[lo, hi])| {
                let value = metrics.get(metric).and_then(|s| s.mean);
                ExpectVerdict {
                    metric: metric.clone(),
                    range: [lo, hi],
                    value,
                    pass: value.is_some_and(|v| lo <= v && v <= hi),
                }
            })
            .collect();
        VariantStats {
            name: v.name.clone(),
            rank: 0,
            score: 0.0,
            missed: expect.iter().filter(|e| !e.pass).count(),
            best: Vec::new(),
            metrics,
            expect,
        }
    }
}

/// Each variant's score, its mean rank over the ranked columns of `shown` (1 = best; ties
/// share the better rank), and the columns it is best in.
fn score(out: &mut [VariantStats], shown: &[String]) {
    let n = out.len();
    let mut rank_sum = vec![0usize; n];
    for col in shown.iter().filter_map(|m| column(m)) {
        for i in 0..n {
            let mine = &out[i].metrics[col.metric];
            let better_than_me = (0..n)
                .filter(|&j| {
                    cmp_stat(&out[j].metrics[col.metric], mine, col.better) == Ordering::Less
                })
                .count();
            if ranked(col.metric, shown) {
                rank_sum[i] += 1 + better_than_me;
            }
            if better_than_me == 0 && mine.n > 0 {
                out[i].best.push(col.metric.to_string());
            }
        }
    }
    let counted = shown.iter().filter(|m| ranked(m, shown)).count();
    for (v, r) in out.iter_mut().zip(&rank_sum) {
        v.score = *r as f64 / counted.max(1) as f64;
    }
}

/// How the interval, the nulls and the rank are worked out, said wherever the table appears.
fn method(shown: &[String]) -> String {
    let (ranked_cols, unranked): (Vec<&String>, Vec<&String>) =
        shown.iter().partition(|m| ranked(m, shown));
    let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
    let mut out = format!(
        "Each cell is the mean over the seeds ± the half-width of its 95 % t-interval (mean ± \
         t(0.975, n−1)·s/√n, s the sample standard deviation over seeds). A metric that is \
         null on some seed (convergence_s when the sleep values never settled, wait_p99 with \
         no 2xx, time_to_clear when some job never finished, utilization when the server \
         states no capacity) is averaged over the seeds that have it and marked (k/n); in a \
         column, more seeds with a value beats a better mean over fewer. The best of each \
         column is marked (* in text, bold in the report; ties all marked). Rank: variants \
         that meet every [expect] range of the scenario (judged on their means) come first, \
         then by the mean of their ranks over {}.",
        list(&ranked_cols)
    );
    if !unranked.is_empty() {
        out.push_str(&format!(
            " {} is shown, not ranked: it measures what fairness does, per fairness_window \
             over the threads running through it.",
            list(&unranked)
        ));
    }
    out.push_str(
        " The columns are the scenario's [compare] metrics, by default per workload \
         (docs/commands.md, \"Comparing variants\").",
    );
    out
}

/// One variant's runs, one per seed in seed order.
#[derive(Clone, Debug)]
pub struct VariantRuns {
    pub name: String,
    pub runs: Vec<Metrics>,
    /// The ranges this variant is judged on when they are not the scenario's: a variant may
    /// set its own (`set = { "expect.utilization" = [0.8, 1.0] }`).
    pub expect: Option<Expect>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantStats {
    pub name: String,
    /// 1 = best; variants with the same score share a rank.
    pub rank: usize,
    /// The mean of the variant's ranks over the columns (lower is better).
    pub score: f64,
    /// How many `[expect]` ranges its means miss; fewer ranks first.
    pub missed: usize,
    /// The columns this variant is best in.
    pub best: Vec<String>,
    /// Every metric over the seeds (all of `[expect]`'s metrics, the columns among them).
    pub metrics: BTreeMap<String, Stat>,
    /// `[expect]` judged on the means over seeds.
    pub expect: Vec<ExpectVerdict>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub scenario: String,
    pub version: String,
    pub seeds: Vec<u64>,
    pub method: String,
    pub columns: Vec<String>,
    /// In the order they were run (the scenario as written first, when it is compared).
    pub variants: Vec<VariantStats>,
    /// Variant names, best first.
    pub ranking: Vec<String>,
}

/// Orders two stats of one column: more seeds with a value first, then the better mean.
fn cmp_stat(a: &Stat, b: &Stat, better: Better) -> Ordering {
    b.n.cmp(&a.n).then_with(|| match (a.mean, b.mean) {
        (Some(x), Some(y)) => match better {
            Better::Lower => x.total_cmp(&y),
            Better::Higher => y.total_cmp(&x),
        },
        _ => Ordering::Equal,
    })
}

impl Comparison {
    /// On the columns a scenario that runs against a rate limit shows by default.
    pub fn new(scenario: &str, seeds: &[u64], variants: &[VariantRuns], expect: &Expect) -> Self {
        let shown: Vec<String> = crate::scenario::COMPARE_RATE_METRICS
            .iter()
            .map(|m| m.to_string())
            .collect();
        Self::with_metrics(scenario, seeds, variants, expect, &shown)
    }

    /// Shown and ranked on `shown` (metric names of the [`CATALOGUE`], in column order;
    /// unknown names are left out).
    pub fn with_metrics(
        scenario: &str,
        seeds: &[u64],
        variants: &[VariantRuns],
        expect: &Expect,
        shown: &[String],
    ) -> Self {
        let shown: Vec<String> = shown
            .iter()
            .filter(|m| column(m).is_some())
            .cloned()
            .collect();
        let mut out: Vec<VariantStats> = variants
            .iter()
            .map(|v| VariantStats::of(v, expect))
            .collect();
        score(&mut out, &shown);
        let before = |a: &VariantStats, b: &VariantStats| {
            a.missed.cmp(&b.missed).then(a.score.total_cmp(&b.score))
        };
        let mut order: Vec<usize> = (0..out.len()).collect();
        order.sort_by(|&a, &b| before(&out[a], &out[b]).then(a.cmp(&b)));
        for &i in &order {
            out[i].rank = 1 + out
                .iter()
                .filter(|o| before(o, &out[i]) == Ordering::Less)
                .count();
        }
        Comparison {
            scenario: scenario.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            seeds: seeds.to_vec(),
            method: method(&shown),
            columns: shown,
            ranking: order.iter().map(|&i| out[i].name.clone()).collect(),
            variants: out,
        }
    }

    /// The table: a row per variant (in the ranking's order, the winner first), the rank,
    /// and a cell per column.
    pub fn table(&self) -> (Table, Vec<Vec<bool>>) {
        let columns: Vec<&Column> = self.columns.iter().filter_map(|m| column(m)).collect();
        let mut header = vec!["variant", "rank"];
        header.extend(columns.iter().map(|c| c.header));
        let mut t = Table::new(&header);
        let mut best = Vec::new();
        for v in self.ranked() {
            let mut row = vec![v.name.clone(), v.rank.to_string()];
            let mut marks = vec![false, false];
            for col in &columns {
                row.push(cell(&v.metrics[col.metric], col));
                marks.push(v.best.iter().any(|b| b == col.metric));
            }
            t.row(row);
            best.push(marks);
        }
        (t, best)
    }

    /// Aligned text; best cells get a `*`, in bold green on a colour terminal.
    pub fn plain(&self, colour: bool) -> String {
        let (t, best) = self.table();
        let mut marked = Table::new(&t.header().iter().map(String::as_str).collect::<Vec<_>>());
        for (row, marks) in t.rows().iter().zip(&best) {
            marked.row(
                row.iter()
                    .zip(marks)
                    .map(|(c, &b)| {
                        if b {
                            format!("{c} *")
                        } else {
                            format!("{c}  ")
                        }
                    })
                    .collect(),
            );
        }
        let text = marked.plain();
        if !colour {
            return text;
        }
        // Colour the marked cells after alignment, so the widths stay right.
        text.lines()
            .map(|line| {
                let mut out = String::new();
                for (i, part) in line.split("  ").enumerate() {
                    if i > 0 {
                        out.push_str("  ");
                    }
                    if part.ends_with(" *") {
                        out.push_str(&format!("\x1b[1;32m{part}\x1b[0m"));
                    } else {
                        out.push_str(part);
                    }
                }
                out + "\n"
            })
            .collect()
    }

    /// Markdown, best cells in bold.
    pub fn markdown(&self) -> String {
        let (t, best) = self.table();
        let mut marked = Table::new(&t.header().iter().map(String::as_str).collect::<Vec<_>>());
        for (row, marks) in t.rows().iter().zip(&best) {
            marked.row(
                row.iter()
                    .zip(marks)
                    .map(|(c, &b)| if b { format!("**{c}**") } else { c.clone() })
                    .collect(),
            );
        }
        marked.markdown()
    }

    pub fn html(&self) -> String {
        let (t, best) = self.table();
        crate::report::html::table(&t, |r, c| best[r][c])
    }

    /// The variants in the ranking's order, the winner first (those the ranking leaves out,
    /// if any, after it in the order they ran).
    pub fn ranked(&self) -> Vec<&VariantStats> {
        let mut out: Vec<&VariantStats> = self
            .ranking
            .iter()
            .filter_map(|name| self.variants.iter().find(|v| &v.name == name))
            .collect();
        for v in &self.variants {
            if !self.ranking.contains(&v.name) {
                out.push(v);
            }
        }
        out
    }

    /// The ranking as lines: "1. name (mean rank 1.5; best in ratio_429, fairness)".
    pub fn ranking_lines(&self) -> Vec<String> {
        self.ranking
            .iter()
            .map(|name| {
                let v = self
                    .variants
                    .iter()
                    .find(|v| &v.name == name)
                    .expect("the ranking names variants");
                let mut line = format!("{}. {} (mean rank {:.2}", v.rank, v.name, v.score);
                if v.missed > 0 {
                    line.push_str(&format!(
                        "; misses {} [expect] range{}",
                        v.missed,
                        if v.missed == 1 { "" } else { "s" }
                    ));
                }
                if !v.best.is_empty() {
                    line.push_str(&format!("; best in {}", v.best.join(", ")));
                }
                line.push(')');
                line
            })
            .collect()
    }

    pub fn missed(&self) -> impl Iterator<Item = (&str, &ExpectVerdict)> {
        self.variants
            .iter()
            .flat_map(|v| v.expect.iter().map(move |e| (v.name.as_str(), e)))
            .filter(|(_, e)| !e.pass)
    }

    /// `compare.md`.
    pub fn markdown_page(&self) -> String {
        let mut out = format!(
            "# {}: comparison over {} seed{} ({})\n\n",
            self.scenario,
            self.seeds.len(),
            if self.seeds.len() == 1 { "" } else { "s" },
            self.seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        );
        out.push_str(&self.markdown());
        out.push_str(&format!("\n{}\n\n## Ranking\n\n", self.method));
        for line in self.ranking_lines() {
            out.push_str(&format!("{line}\n"));
        }
        let missed: Vec<_> = self.missed().collect();
        if self.variants.iter().any(|v| !v.expect.is_empty()) {
            out.push_str("\n## Expectations (on the means over seeds)\n\n");
            if missed.is_empty() {
                out.push_str("Every variant is within every `[expect]` range.\n");
            }
            for (name, e) in missed {
                out.push_str(&format!("- {name}: {}\n", verdict_text(e)));
            }
        }
        out
    }
}

/// "ratio_429 = 0.0712 is outside [0, 0.05]".
pub fn verdict_text(e: &ExpectVerdict) -> String {
    format!(
        "{} = {} is outside [{}, {}]",
        e.metric,
        e.value.map_or("null".to_string(), |v| format!("{v:.4}")),
        e.range[0],
        e.range[1]
    )
}

impl Comparison {
    /// The comparison in one sentence, as a person asks it ("which is best, and by how
    /// much?"): the first-ranked variant's means on the first three columns, then how they
    /// stand against the second's, e.g. `fair-share: no 429s, utilization 0.997, fairness
    /// 1.000; against schneems: 429s 0.00% vs 1.94%, utilization 0.997 vs 0.999, fairness
    /// 1.000 vs 0.882`. `None` with fewer than two variants.
    pub fn headline(&self) -> Option<String> {
        let find = |name: &String| self.variants.iter().find(|v| &v.name == name);
        let best = find(self.ranking.first()?)?;
        let second = find(self.ranking.get(1)?)?;
        let cols: Vec<&Column> = self
            .columns
            .iter()
            .filter_map(|m| column(m))
            .take(3)
            .collect();
        let mean = |v: &VariantStats, c: &Column| v.metrics.get(c.metric).and_then(|s| s.mean);
        let text = |x: f64, c: &Column| {
            let d = c.digits;
            if c.percent {
                format!("{:.d$}%", x * 100.0)
            } else {
                format!("{x:.d$}")
            }
        };
        let name = |c: &Column| {
            if c.metric == "ratio_429" {
                "429s"
            } else {
                c.header
            }
        };
        let own: Vec<String> = cols
            .iter()
            .filter_map(|c| {
                let a = mean(best, c)?;
                Some(if c.metric == "ratio_429" && a == 0.0 {
                    "no 429s".to_string()
                } else {
                    format!("{} {}", name(c), text(a, c))
                })
            })
            .collect();
        let against: Vec<String> = cols
            .iter()
            .filter_map(|c| {
                let (a, b) = (mean(best, c)?, mean(second, c)?);
                let lower_by = b / a;
                Some(if c.better == Better::Lower && a > 0.0 && lower_by >= 1.5 {
                    format!("{lower_by:.1}× fewer {}", name(c))
                } else {
                    format!("{} {} vs {}", name(c), text(a, c), text(b, c))
                })
            })
            .collect();
        if own.is_empty() {
            return None;
        }
        let mut out = format!("{}: {}", best.name, own.join(", "));
        if !against.is_empty() {
            out.push_str(&format!(
                "; against {}: {}",
                second.name,
                against.join(", ")
            ));
        }
        Some(out)
    }
}

/// "1.98% ± 0.35", "0.999 ± 0.001", "17760 ± 210 (4/5)", "never".
pub fn cell(s: &Stat, col: &Column) -> String {
    let scale = if col.percent { 100.0 } else { 1.0 };
    let d = col.digits;
    let Some(mean) = s.mean else {
        return col.never.to_string();
    };
    let mut out = format!("{:.d$}", mean * scale);
    if col.percent {
        out.push('%');
    }
    if let (Some(h), Some((low, high))) = (s.half_width, s.interval()) {
        // Held within the metric's range, the interval may no longer be symmetric: then
        // both sides are shown ("0.995 +0.005 -0.064").
        let text = |v: f64| format!("{:.d$}", v * scale);
        if low == mean - h && high == mean + h {
            out.push_str(&format!(" ± {}", text(h)));
        } else {
            out.push_str(&format!(" +{} -{}", text(high - mean), text(mean - low)));
        }
    }
    if s.n < s.seeds {
        out.push_str(&format!(" ({}/{})", s.n, s.seeds));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(ratio: f64, util: f64, conv: Option<f64>) -> Metrics {
        Metrics {
            requests: 100,
            ok: 90,
            limited: 10,
            ratio_429: ratio,
            capacity: 100.0,
            utilization: util,
            fairness: 0.9,
            convergence_s: conv,
            max_sleep: 10.0,
            wait_p99: Some(5.0),
            ..Metrics::default()
        }
    }

    fn comparison() -> Comparison {
        let a = VariantRuns {
            name: "a".into(),
            runs: vec![metrics(0.02, 0.99, Some(100.0)), metrics(0.04, 0.97, None)],
            expect: None,
        };
        let b = VariantRuns {
            name: "b".into(),
            runs: vec![
                metrics(0.01, 0.95, Some(500.0)),
                metrics(0.01, 0.95, Some(700.0)),
            ],
            expect: None,
        };
        let mut expect = Expect::new();
        expect.insert("ratio_429".into(), [0.0, 0.025]);
        Comparison::new("s", &[1, 2], &[a, b], &expect)
    }

    #[test]
    fn best_of_each_column_ranks_and_the_null_rule() {
        let c = comparison();
        let (a, b) = (&c.variants[0], &c.variants[1]);
        // b has the lower 429 ratio; a the higher utilization.
        assert!(b.best.contains(&"ratio_429".to_string()));
        assert!(a.best.contains(&"utilization".to_string()));
        // a converged on 1 of 2 seeds at 100 s, b on 2 of 2 later: b is best (more seeds).
        assert!(b.best.contains(&"convergence_s".to_string()), "{b:?}");
        assert_eq!(a.metrics["convergence_s"].n, 1);
        // Equal columns mark both.
        assert!(
            a.best.contains(&"fairness".to_string()) && b.best.contains(&"fairness".to_string())
        );
        // b: ranks 1,2,1,1,1,1 → 7/6; a: 2,1,1,2,1,1 → 8/6.
        assert_eq!(c.ranking, vec!["b", "a"]);
        assert_eq!((b.rank, a.rank), (1, 2));
        assert!((b.score - 7.0 / 6.0).abs() < 1e-12);
        // [expect] on the mean: a's mean ratio 0.03 misses [0, 0.025].
        let missed: Vec<_> = c.missed().map(|(n, _)| n).collect();
        assert_eq!(missed, vec!["a"]);
        assert_eq!((a.missed, b.missed), (1, 0));
    }

    #[test]
    fn the_headline_says_who_ranks_first_and_by_how_much() {
        let c = comparison();
        // b (1% 429s, utilization 0.95) first; a (3%, 0.98) second.
        assert_eq!(
            c.headline().unwrap(),
            "b: 429s 1.00%, utilization 0.950, fairness 0.900; against a: 3.0× fewer 429s, \
             utilization 0.950 vs 0.980, fairness 0.900 vs 0.900"
        );
        let none = VariantRuns {
            name: "none".into(),
            runs: vec![metrics(0.0, 0.9, None)],
            expect: None,
        };
        let some = VariantRuns {
            name: "some".into(),
            runs: vec![metrics(0.5, 0.9, None)],
            expect: None,
        };
        let c = Comparison::new("s", &[1], &[none, some], &Expect::new());
        let h = c.headline().unwrap();
        assert!(h.starts_with("none: no 429s, "), "{h}");
        assert!(h.contains("against some: 429s 0.00% vs 50.00%"), "{h}");
        let alone = VariantRuns {
            name: "alone".into(),
            runs: vec![metrics(0.0, 0.9, None)],
            expect: None,
        };
        assert_eq!(
            Comparison::new("s", &[1], &[alone], &Expect::new()).headline(),
            None
        );
    }

    #[test]
    fn every_expect_metric_has_a_column() {
        for m in crate::scenario::EXPECTABLE_METRICS {
            assert!(column(m).is_some(), "{m}");
        }
        assert_eq!(CATALOGUE.len(), crate::scenario::EXPECTABLE_METRICS.len());
    }

    #[test]
    fn the_named_metrics_are_the_columns_and_the_rank() {
        // Work metrics: a, many calls but done soon; b, few calls and late; c, fewest calls
        // and nearly as soon as a.
        let work = |requests: u64, clear: f64| Metrics {
            requests,
            time_to_clear: Some(clear),
            ..Metrics::default()
        };
        let v = |name: &str, m: Metrics| VariantRuns {
            name: name.into(),
            runs: vec![m.clone(), m],
            expect: None,
        };
        let shown = ["requests".to_string(), "time_to_clear".to_string()];
        let c = Comparison::with_metrics(
            "s",
            &[1, 2],
            &[
                v("a", work(700, 1.1)),
                v("b", work(340, 4.0)),
                v("c", work(330, 2.0)),
            ],
            &Expect::new(),
            &shown,
        );
        assert_eq!(c.columns, shown);
        assert_eq!(c.ranking, vec!["c", "a", "b"]);
        let (t, _) = c.table();
        assert_eq!(
            t.header(),
            ["variant", "rank", "requests", "time_to_clear s"]
        );
        assert!(
            c.method.contains("over requests, time_to_clear."),
            "{}",
            c.method
        );
        // A metric null on every seed (utilization without a capacity) shows `-`, never 0.
        let no_capacity = Metrics {
            utilization: 0.0,
            capacity: 0.0,
            ..Metrics::default()
        };
        let c = Comparison::with_metrics(
            "s",
            &[1],
            &[v("a", no_capacity)],
            &Expect::new(),
            &["utilization".to_string()],
        );
        assert_eq!(c.variants[0].metrics["utilization"].mean, None);
        assert_eq!(c.table().0.rows()[0][2], "-");
        // Windowed fairness counts in the rank only without fairness beside it.
        assert!(!ranked(
            "fairness_windowed",
            &["fairness".into(), "fairness_windowed".into()]
        ));
        assert!(ranked("fairness_windowed", &["fairness_windowed".into()]));
    }

    #[test]
    fn a_variant_with_its_own_ranges_is_judged_on_them() {
        let mut own = Expect::new();
        own.insert("ratio_429".into(), [0.025, 0.05]);
        let runs = |expect| VariantRuns {
            name: "a".into(),
            runs: vec![metrics(0.02, 0.99, None), metrics(0.04, 0.97, None)],
            expect,
        };
        let mut base = Expect::new();
        base.insert("ratio_429".into(), [0.0, 0.025]);
        // Mean 0.03: outside the scenario's range, inside the variant's own.
        let c = Comparison::new("s", &[1, 2], &[runs(None), runs(Some(own))], &base);
        assert_eq!((c.variants[0].missed, c.variants[1].missed), (1, 0));
        assert_eq!(c.variants[1].expect[0].range, [0.025, 0.05]);
    }

    #[test]
    fn a_variant_that_misses_an_expectation_ranks_after_those_that_meet_them() {
        // `fast` wins five columns but sends 90 % 429s; the scenario allows at most 5 %.
        let mut fast = metrics(0.9, 1.0, Some(10.0));
        fast.max_sleep = 1.0;
        fast.wait_p99 = Some(1.0);
        fast.fairness = 0.95;
        let careful = metrics(0.01, 0.95, Some(500.0));
        let runs = [
            VariantRuns {
                name: "fast".into(),
                runs: vec![fast],
                expect: None,
            },
            VariantRuns {
                name: "careful".into(),
                runs: vec![careful],
                expect: None,
            },
        ];
        let mut expect = Expect::new();
        expect.insert("ratio_429".into(), [0.0, 0.05]);
        let c = Comparison::new("s", &[1], &runs, &expect);
        assert_eq!(c.ranking, vec!["careful", "fast"]);
        assert!(
            c.variants[0].score < c.variants[1].score,
            "fast has the better mean rank"
        );
        assert!(c.ranking_lines()[1].contains("misses 1 [expect] range"));
        let c = Comparison::new("s", &[1], &runs, &Expect::new());
        assert_eq!(
            c.ranking,
            vec!["fast", "careful"],
            "without [expect], the columns decide"
        );
    }

    #[test]
    fn cells_say_mean_interval_and_missing_seeds() {
        let c = comparison();
        let (t, best) = c.table();
        // The rows in the ranking's order, the winner first.
        let names: Vec<&str> = t.rows().iter().map(|r| r[0].as_str()).collect();
        assert_eq!(names, c.ranking);
        let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
        let a = &t.rows()[at("a")];
        // 2 % and 4 %: the interval 3.00 % ± 12.71 is cut at 0, where a ratio ends.
        assert_eq!(a[2], "3.00% +12.71 -3.00");
        assert_eq!(a[6], "100 (1/2)");
        assert!(best[at("b")][2], "b's ratio_429 is marked");
        let plain = c.plain(false);
        assert!(plain.contains("1.00% ± 0.00 *"), "{plain}");
        let md = c.markdown();
        assert!(md.contains("**1.00% ± 0.00**"), "{md}");
        let coloured = c.plain(true);
        assert!(coloured.contains("\x1b[1;32m"), "{coloured}");
        let never = Stat::of(&[None, None]);
        assert_eq!(cell(&never, column("convergence_s").unwrap()), "never");
    }
}
