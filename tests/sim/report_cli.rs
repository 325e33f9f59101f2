//! compare, plot, list, check and the charts and report, end to end through the binary.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;

use crate::common;
use common::json;

fn bin() -> Command {
    let mut c = Command::cargo_bin("throttle-sim").unwrap();
    c.env_remove("NO_COLOR");
    c
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

/// A short comparison of fast_slow's variants into `out`; returns stdout.
fn compare(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let seeds: &[&str] = if extra.contains(&"--seeds") {
        &[]
    } else {
        &["--seeds", "3"]
    };
    let a = bin()
        .arg("compare")
        .arg(scenario("fast_slow.toml"))
        .args(["--duration", "20m", "--out"])
        .arg(out)
        .args(seeds)
        .args(extra)
        .assert();
    let o = a.get_output();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stdout.clone()).unwrap(),
        String::from_utf8(o.stderr.clone()).unwrap(),
    )
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

fn without_results_line(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with("results: "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn compare_gives_the_same_bytes_for_the_same_seeds_whatever_the_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let (code_a, out_a, err_a) = compare(&a, &["--jobs", "1"]);
    let (code_b, out_b, _) = compare(&b, &["--jobs", "2"]);
    assert_eq!(code_a, code_b);
    assert!(code_a == 0 || code_a == 1, "{err_a}");
    assert_eq!(without_results_line(&out_a), without_results_line(&out_b));
    let (ta, tb) = (tree(&a), tree(&b));
    assert_eq!(
        ta.iter().map(|f| &f.0).collect::<Vec<_>>(),
        tb.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, x), (_, y)) in ta.iter().zip(&tb) {
        assert!(x == y, "{} differs between --jobs 1 and 2", name.display());
    }
    // Piped, each finished run is one plain line on stderr: 3 variants × 3 seeds.
    let run_lines = err_a.lines().filter(|l| l.contains(", seed ")).count();
    assert_eq!(run_lines, 9, "{err_a}");

    // The table: a row per variant, every column, the best marked, seeds named.
    assert!(out_a.contains("over seeds 42, 43, 44"), "{out_a}");
    for h in [
        "ratio_429",
        "utilization",
        "fairness",
        "convergence s",
        "max_sleep s",
        "wait_p99 s",
    ] {
        assert!(out_a.contains(h), "{h} missing:\n{out_a}");
    }
    for v in ["base", "no-time-factor", "no-jitter"] {
        assert!(out_a.lines().any(|l| l.starts_with(v)), "{v}:\n{out_a}");
    }
    assert!(out_a.contains(" *"), "{out_a}");
    assert!(out_a.contains(" ± "), "{out_a}");
    assert!(!out_a.contains('\x1b'), "no colour when piped");

    let c = json(&a.join("compare.json"));
    assert_eq!(c["seeds"], serde_json::json!([42, 43, 44]));
    assert_eq!(c["variants"].as_array().unwrap().len(), 3);
    assert_eq!(c["ranking"].as_array().unwrap().len(), 3);
    let ratio = &c["variants"][0]["metrics"]["ratio_429"];
    assert_eq!(ratio["values"].as_array().unwrap().len(), 3);
    assert!(ratio["half_width"].as_f64().unwrap() >= 0.0);
    let csv = fs::read_to_string(a.join("compare.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 9);
    assert!(
        fs::read_to_string(a.join("compare.md"))
            .unwrap()
            .contains("95 %")
    );
    for v in ["01-base", "02-no-time-factor", "03-no-jitter"] {
        let d = a.join("variants").join(v);
        for f in [
            "series.csv",
            "summary.json",
            "variant.toml",
            "report.html",
            "charts/sleep.png",
        ] {
            assert!(d.join(f).is_file(), "{v}/{f} missing");
        }
    }
    // The base variant is described once: `base` was "the scenario as written. The scenario
    // as written."
    let html = fs::read_to_string(a.join("report.html")).unwrap();
    assert_eq!(
        html.to_lowercase()
            .matches("the scenario as written")
            .count(),
        1
    );
}

#[test]
fn other_seeds_give_another_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, a, _) = compare(&tmp.path().join("a"), &["--variants", "base"]);
    let (_, b, _) = compare(
        &tmp.path().join("b"),
        &["--variants", "base", "--seed", "7"],
    );
    assert_ne!(without_results_line(&a), without_results_line(&b));
    assert!(b.contains("over seeds 7, 8, 9"), "{b}");
}

#[test]
fn compare_switches_algorithms_dropping_what_they_do_not_take() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let (code, stdout, stderr) = compare(
        &out,
        &[
            "--algorithms",
            "schneems,fixed",
            "--set",
            "expect={}",
            "--json",
            "--quiet",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let c: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names = common::variant_names(&c);
    assert_eq!(names, ["schneems", "fixed"]);
    let fixed = fs::read_to_string(out.join("variants/02-fixed/scenario.toml")).unwrap();
    assert!(fixed.contains("algorithm = \"fixed\""), "{fixed}");
    assert!(!fixed.contains("initial_sleep"), "{fixed}");
    let schneems = fs::read_to_string(out.join("variants/01-schneems/scenario.toml")).unwrap();
    assert!(schneems.contains("initial_sleep = \"20s\""), "{schneems}");
    assert!(stderr.is_empty(), "--quiet: {stderr}");
}

#[test]
fn compare_refuses_unknown_variants_and_algorithms() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, _, err) = compare(&tmp.path().join("a"), &["--algorithms", "schneems,magic"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown algorithm `magic`, expected one of: schneems"),
        "{err}"
    );
    let (code, _, err) = compare(&tmp.path().join("b"), &["--variants", "no-jitter,nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("has no variant `nope`"), "{err}");
    assert!(
        err.contains("no-time-factor"),
        "lists the valid ones: {err}"
    );
    let (code, _, err) = compare(&tmp.path().join("c"), &["--seeds", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--seeds"), "{err}");
    // A variant whose overrides do not fit is named.
    let file = tmp.path().join("s.toml");
    let text = fs::read_to_string(scenario("fast_slow.toml")).unwrap();
    fs::write(
        &file,
        text.replace("\"clients.*.jitter\" = 0.0", "\"clients.*.jiter\" = 0.0"),
    )
    .unwrap();
    bin()
        .arg("compare")
        .arg(&file)
        .args(["--duration", "10m", "--out"])
        .arg(tmp.path().join("d"))
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("variant `no-jitter`").and(predicate::str::contains("jiter")),
        );
    for d in ["a", "b", "c", "d"] {
        assert!(!tmp.path().join(d).join("compare.csv").exists());
    }
}

/// A run into `dir` with its charts and report.
fn run_into(dir: &Path, file: &str, extra: &[&str]) {
    bin()
        .arg("run")
        .arg(scenario(file))
        .args(["--quiet", "--out"])
        .arg(dir)
        .args(extra)
        .assert()
        .code(predicate::in_iter([0, 1]));
}

#[test]
fn a_run_draws_labelled_charts_in_svg_and_png() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_into(&out, "fast_slow.toml", &["--duration", "30m"]);
    let charts = out.join("charts");
    let want: [(&str, &[&str]); 4] = [
        (
            "sleep",
            &[
                "time since start (min)",
                "sleep before each request (s)",
                ">\nfast\n<",
                ">\nslow\n<",
            ],
        ),
        (
            "ratio_429",
            &["429 responses / requests", "all clients", "rolling"],
        ),
        ("remaining", &["remaining requests (count)", "median seen"]),
        (
            "ok_per_thread",
            &["2xx responses over the run (count)", "an equal share"],
        ),
    ];
    for (stem, texts) in want {
        let svg = fs::read_to_string(charts.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{stem}");
        assert!(
            svg.contains("fast_slow: "),
            "{stem}: the title names the scenario"
        );
        assert!(svg.contains("seed 42"), "{stem}: and the seed");
        for t in texts {
            assert!(svg.contains(t), "{stem}.svg lacks {t:?}");
        }
        let png = fs::read(charts.join(format!("{stem}.png"))).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(png));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (1000, 560), "{stem}");
        // The title's text was drawn with the embedded font: dark pixels in the top band.
        let row = info.line_size;
        let dark = (0..40)
            .flat_map(|y| (0..info.width as usize).map(move |x| y * row + x * 3))
            .filter(|&i| buf[i] < 100 && buf[i + 1] < 100 && buf[i + 2] < 100)
            .count();
        assert!(dark > 200, "{stem}.png: no title text ({dark} dark pixels)");
    }
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 4);
    for bad in ["<script", "<link", "src=\"http", "href=\"http", "@import"] {
        assert!(
            !html.contains(bad),
            "report.html is not self-contained: {bad}"
        );
    }
    assert!(html.contains("Summary") && html.contains("ratio_429"));
}

#[test]
fn thousands_of_threads_give_bands_and_a_histogram() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    run_into(
        &out,
        "heroku_5x5.toml",
        &[
            "--duration",
            "10m",
            "--set",
            "clients.*.processes=400",
            "--set",
            "expect={}",
        ],
    );
    let sleep = fs::read_to_string(out.join("charts/sleep.svg")).unwrap();
    assert!(sleep.contains("workers median") && sleep.contains("workers 10-90 %"));
    assert!(sleep.len() < 400_000, "sleep.svg is {} bytes", sleep.len());
    let bars = fs::read_to_string(out.join("charts/ok_per_thread.svg")).unwrap();
    assert!(bars.contains("threads by successful requests (2000 threads)"));
}

#[test]
fn plot_draws_a_run_and_a_comparison_again_from_the_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_into(&run, "fast_slow.toml", &["--duration", "20m"]);
    let cmp = tmp.path().join("cmp");
    compare(&cmp, &["--variants", "base,no-jitter", "--seeds", "2"]);
    for dir in [&run, &cmp] {
        let before = tree(dir);
        let mut removed = 0;
        for (rel, _) in &before {
            let s = rel.to_string_lossy();
            if s.contains("charts") || s.ends_with("report.html") {
                fs::remove_file(dir.join(rel)).unwrap();
                removed += 1;
            }
        }
        assert!(removed >= 5, "{removed}");
        bin()
            .arg("plot")
            .arg(dir)
            .assert()
            .success()
            .stderr(predicate::str::contains("report.html"));
        let after = tree(dir);
        assert_eq!(before.len(), after.len(), "{}", dir.display());
        for ((name, x), (_, y)) in before.iter().zip(&after) {
            assert!(x == y, "{} differs after plot", name.display());
        }
    }
}

/// A run whose `series.csv` rows are per group keeps its threads' totals in `threads.csv`:
/// `compare --runs` takes it along (it failed with "variants/01-…/threads.csv: No such file or
/// directory" when it linked only the other files).
#[test]
fn compare_runs_takes_a_run_with_group_series_and_its_threads_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_into(
        &run,
        "gauntlet/api_shapes.toml",
        &["--set", "cell=2x4/gcra_100pm", "--set", "run.duration=10m"],
    );
    assert!(run.join("threads.csv").is_file());
    // A copy: one folder given twice is refused.
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(&run).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
        }
    }
    let cmp = tmp.path().join("cmp");
    bin()
        .args(["compare", "--runs"])
        .arg(&run)
        .arg(&copy)
        .arg("--out")
        .arg(&cmp)
        .assert()
        .success();
    for v in ["01-api_shapes", "02-api_shapes-2"] {
        let dir = cmp.join("variants").join(v);
        assert!(dir.join("threads.csv").is_file(), "{}", dir.display());
        assert!(dir.join("report.html").is_file(), "{}", dir.display());
    }
}

#[test]
fn plot_names_what_is_missing_or_broken() {
    let tmp = tempfile::tempdir().unwrap();
    bin()
        .arg("plot")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("scenario.toml: missing"));
    bin()
        .args(["plot", "no/such/folder"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a folder"));
    let run = tmp.path().join("run");
    run_into(
        &run,
        "single_client.toml",
        &["--duration", "5m", "--no-charts"],
    );
    assert!(!run.join("report.html").exists(), "--no-charts");
    let series = fs::read_to_string(run.join("series.csv")).unwrap();
    fs::write(
        run.join("series.csv"),
        series.replacen(",solo,", ",ghost,", 1),
    )
    .unwrap();
    bin()
        .arg("plot")
        .arg(&run)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("series.csv:2: group `ghost`"));
}

#[test]
fn list_shows_every_registered_algorithm_and_server_kind() {
    let a = bin().arg("list").assert().success();
    let text = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    for name in throttle_sim::throttle::ThrottleConfig::NAMES {
        assert!(text.contains(&format!("\n{name} ")), "{name}:\n{text}");
        assert!(text.contains(throttle_sim::throttle::ThrottleConfig::describe(name).unwrap()));
    }
    for name in throttle_sim::limiter::LimiterConfig::NAMES {
        assert!(text.contains(&format!("\n{name} ")), "{name}:\n{text}");
    }
    assert!(text.contains("initial_sleep"));
    let a = bin().args(["list", "--json"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&a.get_output().stdout).unwrap();
    assert_eq!(
        v["algorithms"].as_array().unwrap().len(),
        throttle_sim::throttle::ThrottleConfig::NAMES.len()
    );
    assert_eq!(
        v["servers"].as_array().unwrap().len(),
        throttle_sim::limiter::LimiterConfig::NAMES.len()
    );
}

fn check(files: &[PathBuf], extra: &[&str]) -> (i32, String) {
    let a = bin()
        .arg("check")
        .args(files)
        .args(["--set", "run.duration=20m"])
        .args(extra)
        .assert();
    let o = a.get_output();
    (
        o.status.code().unwrap(),
        String::from_utf8(o.stdout.clone()).unwrap(),
    )
}

#[test]
fn check_prints_verdicts_and_exits_by_the_worst() {
    let fs_ = scenario("fast_slow.toml");
    let (code, out) = check(std::slice::from_ref(&fs_), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("PASS "), "{out}");
    assert!(out.contains("pass ratio_429 = "), "{out}");
    assert!(out.contains("1 scenario: 1 passed, 0 missed"), "{out}");

    let (code, out) = check(
        &[fs_.clone(), scenario("single_client.toml")],
        &["--set", "expect.ratio_429=[0.5, 0.9]"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("MISSED ratio_429 = "), "{out}");
    assert!(out.contains("2 scenarios: 0 passed, 2 missed"), "{out}");

    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    fs::write(&bad, "[run]\nduration = \"forever\"\n").unwrap();
    let (code, out) = check(&[fs_.clone(), bad], &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("ERROR ") && out.contains("bad.toml"), "{out}");
    assert!(out.contains("PASS "), "the good one is still judged: {out}");

    let (code, out) = check(&[fs_], &["--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["outcome"], "pass");
    assert_eq!(v[0]["verdicts"][0]["pass"], true);
}

/// Piped, `check` once said "(seed 42): pass" while judging the mean of several seeds.
#[test]
fn check_says_the_mean_over_seeds_on_stderr_too() {
    let a = bin()
        .arg("check")
        .arg(scenario("fast_slow.toml"))
        .args(["--set", "run.duration=20m", "--seeds", "3"])
        .assert();
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(err.contains("(mean over 3 seeds from 42): pass"), "{err}");
    assert!(!err.contains("(seed 42)"), "{err}");
}
