//! `throttle-sim fit`: the server's rule learned back from traces of every server kind, in
//! every header dialect, at limits from 5 per second to 5,000 per hour; a trace too short to
//! tell says so.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> Command {
    Command::cargo_bin("throttle-sim").unwrap()
}

/// A sim trace of `server` for `duration`: 2 × 2 threads each sending every `sleep` (± half),
/// faster than the rule allows, so the limit is spent and comes back: a trace where the rules
/// differ, as the README's "From your API to an answer" says to record.
fn trace(dir: &Path, server: &str, headers: &str, duration: &str, sleep: &str) {
    let text = format!(
        "name = \"t\"\n[run]\nduration = \"{duration}\"\nseed = 5\nsample_every = \"5s\"\n\
         [server]\n{server}\nheaders = \"{headers}\"\n\
         [[clients]]\nname = \"w\"\nprocesses = 2\nthreads = 2\nalgorithm = \"fixed\"\n\
         sleep = \"{sleep}\"\njitter = 0.5\n"
    );
    let file = dir.join("s.toml");
    fs::write(&file, text).unwrap();
    bin()
        .arg("run")
        .arg(&file)
        .args(["--log-requests", "--quiet", "--no-charts", "--out"])
        .arg(dir.join("r"))
        .assert()
        .code(predicate::in_iter([0, 1]));
}

fn fit_json(dir: &Path) -> serde_json::Value {
    let out = bin()
        .arg("fit")
        .arg(dir.join("r"))
        // The rule only: the [expect] ranges are held by the tests below.
        .args(["--json", "--no-expect"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// (server, dialect, duration, each thread's sleep, the rule fitted, its limit, its period in s)
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    f64,
    f64,
);

const CASES: [Case; 8] = [
    (
        "kind = \"gcra\"\nlimit = 5\nperiod = \"1s\"",
        "full",
        "5m",
        "500ms",
        "bucket",
        5.0,
        1.0,
    ),
    (
        "kind = \"gcra\"\nlimit = 100\nperiod = \"1m\"\ninitial = 0",
        "ietf",
        "30m",
        "1500ms",
        "bucket",
        100.0,
        60.0,
    ),
    (
        "kind = \"gcra\"\nlimit = 5000\nperiod = \"1h\"",
        "github",
        "3h",
        "2s",
        "bucket",
        5000.0,
        3600.0,
    ),
    (
        "kind = \"token-bucket\"\nrate = 1\nperiod = \"1s\"\nburst = 20",
        "ietf",
        "20m",
        "2s",
        "bucket",
        20.0,
        20.0,
    ),
    (
        "kind = \"fixed-window\"\nlimit = 100\nwindow = \"1m\"",
        "github",
        "30m",
        "1500ms",
        "fixed-window",
        100.0,
        60.0,
    ),
    (
        "kind = \"fixed-window\"\nlimit = 10\nwindow = \"1s\"",
        "heroku",
        "5m",
        "250ms",
        "fixed-window",
        10.0,
        1.0,
    ),
    (
        "kind = \"sliding-window\"\nlimit = 30\nwindow = \"1m\"",
        "heroku",
        "1h",
        "5s",
        "sliding-window",
        30.0,
        60.0,
    ),
    (
        "kind = \"sliding-window\"\nlimit = 20\nwindow = \"1s\"",
        "full",
        "5m",
        "150ms",
        "sliding-window",
        20.0,
        1.0,
    ),
];

#[test]
fn every_rule_and_dialect_is_fitted_within_five_percent() {
    let mut wrong = Vec::new();
    for (server, dialect, duration, sleep, rule, limit, period) in CASES {
        let tmp = tempfile::tempdir().unwrap();
        trace(tmp.path(), server, dialect, duration, sleep);
        let v = fit_json(tmp.path());
        let r = &v["fit"]["rule"];
        let got_limit = r["size"].as_f64().or(r["limit"].as_f64()).unwrap_or(0.0);
        let got_period = r["period"].as_f64().or(r["window"].as_f64()).unwrap_or(0.0);
        let ok = r["rule"] == rule
            && (got_limit - limit).abs() <= 0.05 * limit
            && (got_period - period).abs() <= 0.05 * period;
        if !ok {
            wrong.push(format!("{server:?} {dialect}: {}", v["fit"]));
            continue;
        }
        // The fitted scenario runs.
        let fitted = tmp.path().join("r/fit.toml");
        assert!(fitted.is_file());
        bin()
            .arg("run")
            .arg(&fitted)
            .args(["--duration", "10m", "--quiet", "--no-charts", "--out"])
            .arg(tmp.path().join("again"))
            .assert()
            .code(predicate::in_iter([0, 1]));
    }
    assert!(wrong.is_empty(), "misfits:\n{}", wrong.join("\n"));
}

#[test]
fn a_trace_too_short_or_without_counts_says_what_it_cannot_tell() {
    let tmp = tempfile::tempdir().unwrap();
    // Ten seconds of an hourly quota at one request a second per thread: the count only falls.
    let hourly = "kind = \"gcra\"\nlimit = 4500\nperiod = \"1h\"";
    trace(tmp.path(), hourly, "full", "10s", "1s");
    // "Cannot tell" exited 0, as a fit does: it has a code of its own.
    bin()
        .arg("fit")
        .arg(tmp.path().join("r"))
        .assert()
        .code(5)
        .stdout(predicate::str::contains("cannot tell the rule"))
        .stdout(predicate::str::contains("record longer"))
        .stdout(predicate::str::contains("no fit.toml written"));
    assert!(!tmp.path().join("r/fit.toml").exists());
    let tmp = tempfile::tempdir().unwrap();
    let window = "kind = \"fixed-window\"\nlimit = 5\nwindow = \"1s\"";
    trace(tmp.path(), window, "none", "2m", "200ms");
    bin()
        .arg("fit")
        .arg(tmp.path().join("r"))
        .assert()
        .code(5)
        .stdout(predicate::str::contains(
            "the answers sent no rate-limit fields",
        ))
        .stdout(predicate::str::contains("its `none` dialect"))
        .stdout(predicate::str::contains("only the 429s"))
        .stdout(predicate::str::contains("the most 2xx in any 1m:"));
    // No trace at all is bad input.
    bin()
        .arg("fit")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no requests.csv"));
    // A recording made without --log-requests says how to make one with it.
    fs::write(tmp.path().join("clients.csv"), "group,process,client\n").unwrap();
    bin()
        .arg("fit")
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "record again with `serve --record DIR --log-requests`",
        ));
}

/// What the README's "from your API to an answer" steps promise: `fit` writes a scenario that
/// `check` passes as written, its `[expect]` ranges drawn around what that scenario gave, and
/// the latency the trace measured, below a millisecond too (rounding to milliseconds wrote
/// `0ms` for a server on loopback).
#[test]
fn check_passes_on_the_scenario_fit_wrote_with_the_latency_measured() {
    for (latency, written) in [
        ("40ms", "latency = \"40ms\""),
        ("350us", "latency = \"350us\""),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let server =
            format!("kind = \"gcra\"\nlimit = 100\nperiod = \"1m\"\nlatency = \"{latency}\"");
        trace(tmp.path(), &server, "full", "30m", "1500ms");
        bin()
            .arg("fit")
            .arg(tmp.path().join("r"))
            .assert()
            .success()
            .stdout(predicate::str::contains("wrote"));
        let fitted = tmp.path().join("r/fit.toml");
        let text = fs::read_to_string(&fitted).unwrap();
        assert!(text.contains(written), "{text}");
        for range in [
            "[expect]",
            "ratio_429 = [0.0, ",
            "utilization = [",
            "fairness = [",
        ] {
            assert!(text.contains(range), "no `{range}` in:\n{text}");
        }
        bin()
            .args(["check", "--quiet"])
            .arg(&fitted)
            .assert()
            .code(0)
            .stdout(predicate::str::contains("PASS"))
            .stdout(predicate::str::contains("1 passed"));
    }
}

/// `fit --out FILE` writes the scenario there, `--quiet` prints nothing, and `--no-expect`
/// writes it without running it.
#[test]
fn fit_writes_where_out_says_and_quiet_prints_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let server = "kind = \"gcra\"\nlimit = 5\nperiod = \"1s\"";
    trace(tmp.path(), server, "full", "5m", "500ms");
    let out = tmp.path().join("mine.toml");
    bin()
        .arg("fit")
        .arg(tmp.path().join("r"))
        .arg("--quiet")
        .arg("--out")
        .arg(&out)
        .assert()
        .code(0)
        .stdout(predicate::str::is_empty());
    assert!(fs::read_to_string(&out).unwrap().contains("[expect]"));
    assert!(!tmp.path().join("r/fit.toml").exists());
    // --no-expect: the scenario alone, not run.
    let bare = tmp.path().join("bare.toml");
    bin()
        .arg("fit")
        .arg(tmp.path().join("r"))
        .args(["--quiet", "--no-expect", "--out"])
        .arg(&bare)
        .assert()
        .code(0);
    let text = fs::read_to_string(&bare).unwrap();
    assert!(
        text.contains("[server]") && !text.contains("[expect]"),
        "{text}"
    );
}

/// A live trace of Flask-Limiter's fixed window of 50 per 5 s (two threads of `fixed`, 19.7 s,
/// kept as it was recorded): its windows start at the first request admitted after the last
/// one ended, and the refusal that ended each window was answered with the new window's full
/// count. Replayed with that refusal as a window's start, the 5 s windows ended before the real
/// ones and missed at every reset, and fit said a fixed window on the clock of 50 per 10.2 s
/// with confidence 0.66.
#[test]
fn a_first_request_window_is_fitted_from_a_live_trace_whose_refusals_straddle_its_resets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("r");
    fs::create_dir(&dir).unwrap();
    fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/fit/flask_limiter_fixed_window/requests.csv"),
        dir.join("requests.csv"),
    )
    .unwrap();
    let f = &fit_json(tmp.path())["fit"];
    let rule = &f["rule"];
    assert_eq!(rule["rule"], "fixed-window", "{f:#}");
    assert_eq!(rule["start"], "first-request", "{f:#}");
    assert_eq!(rule["limit"], 50.0, "{f:#}");
    let window = rule["window"].as_f64().unwrap();
    assert!(
        (window - 5.0).abs() <= 0.5,
        "window {window} s, not 5 s: {f:#}"
    );
}
