//! `[run] series = "thread" | "process" | "group"`: coarser rows add up to the same
//! totals, the summary does not depend on the level, and the charts are drawn at every level.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

/// heroku_5x5 (5 processes × 5 threads) for 30 min at `level`, charts drawn, into `dir`.
fn run_at(dir: &Path, level: &str) {
    Command::cargo_bin("throttle-sim")
        .unwrap()
        .arg("run")
        .arg(scenario("heroku_5x5.toml"))
        .args(["--duration", "30m", "--seed", "5", "--quiet", "--out"])
        .arg(dir)
        .args(["--set", &format!("run.series={level}")])
        .assert()
        .code(predicate::in_iter([0, 1]));
}

/// The rows of a CSV file, header left out, each split into its fields.
fn rows(path: &Path) -> Vec<Vec<String>> {
    let text = fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// Column sums of requests, ok, limited, errors (series.csv columns 5..9).
fn totals(rows: &[Vec<String>]) -> [u64; 4] {
    let mut t = [0; 4];
    for r in rows {
        for (i, v) in t.iter_mut().enumerate() {
            *v += r[5 + i].parse::<u64>().unwrap();
        }
    }
    t
}

#[test]
fn every_level_adds_up_to_the_same_summary_and_draws_the_same_per_thread_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: BTreeMap<&str, PathBuf> = ["thread", "process", "group"]
        .into_iter()
        .map(|l| (l, tmp.path().join(l)))
        .collect();
    for (level, dir) in &dirs {
        run_at(dir, level);
    }
    let summary = fs::read(dirs["thread"].join("summary.json")).unwrap();
    let thread_rows = rows(&dirs["thread"].join("series.csv"));
    let ticks = 30 * 6;
    assert_eq!(thread_rows.len(), 25 * ticks);
    let json: serde_json::Value = serde_json::from_slice(&summary).unwrap();
    let want: [u64; 4] = ["requests", "ok", "limited", "errors"].map(|k| json[k].as_u64().unwrap());
    assert!(want[0] > 1000, "{want:?}");
    assert_eq!(totals(&thread_rows), want);
    assert!(!dirs["thread"].join("threads.csv").exists());

    // Per thread from the thread rows, as threads.csv must give them.
    let mut per_thread: BTreeMap<(String, String), [u64; 4]> = BTreeMap::new();
    for r in &thread_rows {
        let t = per_thread.entry((r[2].clone(), r[3].clone())).or_default();
        for (i, v) in t.iter_mut().enumerate() {
            *v += r[5 + i].parse::<u64>().unwrap();
        }
    }

    for (level, per_tick) in [("process", 5), ("group", 1)] {
        let dir = &dirs[level];
        assert_eq!(
            fs::read(dir.join("summary.json")).unwrap(),
            summary,
            "{level}: the summary does not depend on the series level"
        );
        let r = rows(&dir.join("series.csv"));
        assert_eq!(r.len(), per_tick * ticks, "{level}");
        assert_eq!(totals(&r), want, "{level}");
        assert!(r.iter().all(|row| row[3].is_empty()), "{level}: no thread");
        assert_eq!(r.iter().all(|row| row[2].is_empty()), level == "group");
        let threads = rows(&dir.join("threads.csv"));
        assert_eq!(threads.len(), 25);
        for t in &threads {
            let got: Vec<u64> = t[3..7].iter().map(|v| v.parse().unwrap()).collect();
            assert_eq!(
                got,
                per_thread[&(t[1].clone(), t[2].clone())],
                "{level} {t:?}"
            );
        }
        assert_eq!(
            fs::read(dir.join("charts/ok_per_thread.svg")).unwrap(),
            fs::read(dirs["thread"].join("charts/ok_per_thread.svg")).unwrap(),
            "{level}: the per-thread chart comes from threads.csv, exactly"
        );
        assert_eq!(
            fs::read(dir.join("charts/ratio_429.svg")).unwrap(),
            fs::read(dirs["thread"].join("charts/ratio_429.svg")).unwrap(),
            "{level}: the 429 chart sums the same counts"
        );
    }
    // A process row's sleep is the value its threads' rows carried.
    let process_rows = rows(&dirs["process"].join("series.csv"));
    let first_threads: Vec<&Vec<String>> = thread_rows.iter().filter(|r| r[3] == "0").collect();
    assert_eq!(first_threads.len(), process_rows.len());
    for (t, p) in first_threads.iter().zip(&process_rows) {
        assert_eq!((&t[0], &t[2], &t[4]), (&p[0], &p[2], &p[4]));
    }
    let sleep = fs::read_to_string(dirs["group"].join("charts/sleep.svg")).unwrap();
    assert!(sleep.contains("workers (median of 5 processes)"));
}

#[test]
fn plot_names_a_missing_threads_csv_and_rows_of_the_wrong_level() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    run_at(&dir, "process");
    let plot = || {
        Command::cargo_bin("throttle-sim")
            .unwrap()
            .arg("plot")
            .arg(&dir)
            .assert()
    };
    plot().success();

    let series = dir.join("series.csv");
    let text = fs::read_to_string(&series).unwrap();
    // The first row given a thread, as a thread-level file would have it.
    let (header, rest) = text.split_once('\n').unwrap();
    let mut fields: Vec<&str> = rest.lines().next().unwrap().split(',').collect();
    fields[3] = "0";
    let bad = format!("{header}\n{}\n", fields.join(","));
    fs::write(&series, bad).unwrap();
    plot().code(2).stderr(predicate::str::contains(
        "series.csv:2: thread must be empty: scenario.toml says series = \"process\"",
    ));

    fs::write(&series, &text).unwrap();
    fs::remove_file(dir.join("threads.csv")).unwrap();
    plot()
        .code(2)
        .stderr(predicate::str::contains("threads.csv"));
}
