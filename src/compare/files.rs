//! `compare.csv`: one row per variant and seed with every metric, the record the table, the
//! JSON and the charts are all computed from (so `plot` can compute them again).

use std::path::Path;

use crate::record::{CsvSink, Metrics};
use crate::report::ReportError;
use crate::scenario::EXPECTABLE_METRICS;

use super::table::VariantRuns;

/// Metrics that are counts, written as whole numbers.
const COUNTS: [&str; 7] = [
    "requests",
    "ok",
    "limited",
    "errors",
    "timed_out",
    "peak_requests",
    "peak_process_requests",
];

/// The CSV text for `variants`, each with one run per seed in `seeds`' order.
pub fn compare_csv(seeds: &[u64], variants: &[VariantRuns]) -> String {
    let mut buf = Vec::new();
    {
        let mut w = CsvSink::new(&mut buf);
        let mut header = vec!["variant", "seed"];
        header.extend(EXPECTABLE_METRICS);
        w.header(&header).expect("writing to memory");
        for v in variants {
            for (seed, m) in seeds.iter().zip(&v.runs) {
                write_row(&mut w, &v.name, *seed, m);
            }
        }
        w.flush().expect("writing to memory");
    }
    String::from_utf8(buf).expect("CSV of UTF-8 names is UTF-8")
}

/// A run's columns from `variant` on: its name, its seed and every metric, then the row's end.
pub(super) fn write_row(w: &mut CsvSink<&mut Vec<u8>>, variant: &str, seed: u64, m: &Metrics) {
    w.text(variant).expect("writing to memory");
    w.uint(seed).expect("writing to memory");
    for metric in EXPECTABLE_METRICS {
        match m.get(metric) {
            Some(x) if COUNTS.contains(metric) => w.uint(x as u64),
            Some(x) => w.float(x),
            None => w.text(""),
        }
        .expect("writing to memory");
    }
    w.end_row().expect("writing to memory");
}

fn set(m: &mut Metrics, name: &str, v: Option<f64>) {
    let n = || v.unwrap_or(0.0);
    match name {
        "requests" => m.requests = n() as u64,
        "ok" => m.ok = n() as u64,
        "limited" => m.limited = n() as u64,
        "errors" => m.errors = n() as u64,
        "timed_out" => m.timed_out = n() as u64,
        "ratio_429" => m.ratio_429 = n(),
        "ratio_429_late" => m.ratio_429_late = n(),
        "capacity" => m.capacity = n(),
        "utilization" => m.utilization = n(),
        "fairness" => m.fairness = n(),
        "fairness_windowed" => m.fairness_windowed = v,
        "request_count_stdev" => m.request_count_stdev = n(),
        "max_sleep" => m.max_sleep = n(),
        "convergence_s" => m.convergence_s = v,
        "wait_p50" => m.wait_p50 = v,
        "wait_p99" => m.wait_p99 = v,
        "time_to_clear" => m.time_to_clear = v,
        "retry_rate_thread_mean" => m.retry_rate_thread_mean = v,
        "peak_requests" => m.peak_requests = v.map(|x| x as u64),
        "peak_process_requests" => m.peak_process_requests = v.map(|x| x as u64),
        _ => {}
    }
}

/// A slice's `runs.csv`: each run's number, then its `compare.csv` row (a matrix's with its
/// cell first).
pub(super) fn slice_csv(
    matrix: bool,
    rows: &[(usize, Option<&str>, &str, u64, &Metrics)],
) -> String {
    let mut buf = Vec::new();
    {
        let mut w = CsvSink::new(&mut buf);
        let mut header = vec!["job"];
        if matrix {
            header.push("cell");
        }
        header.extend(["variant", "seed"]);
        header.extend(EXPECTABLE_METRICS);
        w.header(&header).expect("writing to memory");
        for (job, cell, variant, seed, m) in rows {
            w.uint(*job as u64).expect("writing to memory");
            if matrix {
                w.text(cell.unwrap_or("")).expect("writing to memory");
            }
            write_row(&mut w, variant, *seed, m);
        }
        w.flush().expect("writing to memory");
    }
    String::from_utf8(buf).expect("CSV of UTF-8 names is UTF-8")
}

/// A run's metrics from (column name, text) pairs; an empty text is no value.
pub(super) fn metrics_from<'a>(
    columns: impl Iterator<Item = (&'a String, &'a str)>,
) -> Result<Metrics, String> {
    let mut m = Metrics::default();
    for (name, text) in columns {
        // NaN and infinities parse, but no metric is written so: one would show empty in
        // compare.csv and count as 0 in compare.json and `[expect]`.
        let v = if text.is_empty() {
            None
        } else {
            Some(
                text.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("column `{name}`: `{text}` is not a finite number"))?,
            )
        };
        set(&mut m, name, v);
    }
    Ok(m)
}

/// Read `compare.csv` back: the seeds, and each variant's runs in the order first seen.
pub fn read_compare_csv(path: &Path) -> Result<(Vec<u64>, Vec<VariantRuns>), ReportError> {
    let at = |line: Option<u64>, m: &dyn std::fmt::Display| ReportError::bad_file(path, line, m);
    let mut rdr = csv::Reader::from_path(path).map_err(|e| at(None, &e))?;
    let header: Vec<String> = rdr
        .headers()
        .map_err(|e| at(Some(1), &e))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.len() < 2 || header[0] != "variant" || header[1] != "seed" {
        return Err(at(Some(1), &"the header must start with variant,seed"));
    }
    let mut seeds: Vec<u64> = Vec::new();
    let mut variants: Vec<VariantRuns> = Vec::new();
    for row in rdr.records() {
        let row = row.map_err(|e| at(e.position().map(|p| p.line()), &e))?;
        let line = row.position().map(|p| p.line());
        let seed: u64 = row
            .get(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| at(line, &"seed is not a whole number"))?;
        let m = metrics_from(header.iter().zip(row.iter()).skip(2)).map_err(|e| at(line, &e))?;
        let name = &row[0];
        match variants.iter_mut().find(|v| v.name == name) {
            Some(v) => v.runs.push(m),
            None => variants.push(VariantRuns {
                name: name.to_string(),
                runs: vec![m],
                expect: None,
            }),
        }
        if variants.len() == 1 {
            seeds.push(seed);
        }
    }
    if let Some(v) = variants.iter().find(|v| v.runs.len() != seeds.len()) {
        return Err(at(
            None,
            &format!(
                "variant `{}` has {} rows; every variant needs one per seed ({})",
                v.name,
                v.runs.len(),
                seeds.len()
            ),
        ));
    }
    Ok((seeds, variants))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_metric_exactly() {
        let m = Metrics {
            requests: 12,
            ok: 10,
            limited: 2,
            ratio_429: 1.0 / 6.0,
            retry_rate_thread_mean: Some(0.283_333_333_333_333_3),
            capacity: 12.5,
            utilization: 0.987_654_321,
            fairness: 0.75,
            convergence_s: None,
            wait_p99: Some(3.25),
            ..Metrics::default()
        };
        let runs = vec![VariantRuns {
            name: "a, \"quoted\"".into(),
            runs: vec![m.clone(), Metrics::default()],
            expect: None,
        }];
        let text = compare_csv(&[5, 6], &runs);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("compare.csv");
        std::fs::write(&path, &text).unwrap();
        let (seeds, back) = read_compare_csv(&path).unwrap();
        assert_eq!(seeds, vec![5, 6]);
        assert_eq!(back[0].name, runs[0].name);
        assert_eq!(back[0].runs[0], m);
        assert!(text.starts_with("variant,seed,requests,ok,"));
    }

    /// Every metric `[expect]` can judge must come back from compare.csv, or `compare` judges
    /// a null.
    #[test]
    fn every_expectable_metric_survives_compare_csv() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("compare.csv");
        for (i, metric) in EXPECTABLE_METRICS.iter().enumerate() {
            // A value no default has, whole so the counts stay exact; a share within its
            // bounds, which reading holds it in.
            let value = match crate::record::metric_bounds(metric) {
                Some(_) => 0.01 * (i + 1) as f64,
                None => 7.0 + i as f64,
            };
            // Utilization is null without a capacity, the ratios and fairness without an
            // answer.
            let mut m = Metrics {
                capacity: 1.0,
                ok: 1,
                ..Metrics::default()
            };
            set(&mut m, metric, Some(value));
            assert_eq!(
                m.get(metric),
                Some(value),
                "{metric}: `set` does not know it"
            );
            let runs = vec![VariantRuns {
                name: "v".into(),
                runs: vec![m.clone()],
                expect: None,
            }];
            std::fs::write(&path, compare_csv(&[1], &runs)).unwrap();
            let (_, back) = read_compare_csv(&path).unwrap();
            assert_eq!(back[0].runs[0].get(metric), Some(value), "{metric}");
            assert_eq!(back[0].runs[0], m, "{metric}");
        }
    }
}
