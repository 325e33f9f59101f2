//! `throttle-sim advise`: an API and fleets in, every algorithm run in every fleet, a ranking
//! and a recommendation out, with the scenario that was run kept to run again.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> Command {
    Command::cargo_bin("throttle-sim").unwrap()
}

#[test]
fn a_per_second_api_gets_fair_share_with_each_fleets_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let assert = bin()
        .args([
            "advise", "--limit", "5", "--period", "1s", "--fleet", "1x1,2x4",
        ])
        .args(["--seeds", "3", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "advise: gcra, 5 per 1s, headers full",
        ))
        .stdout(predicate::str::contains("Recommended: fair-share"))
        .stdout(predicate::str::contains("  1x1: 429s "))
        .stdout(predicate::str::contains("  2x4: 429s "))
        .stdout(predicate::str::contains("algorithm = \"fair-share\""))
        // The first algorithm's sensitive parameters, each at half and twice its default.
        .stdout(predicate::str::contains("Tuning fair-share"))
        .stdout(predicate::str::contains("reserve = "))
        .stdout(predicate::str::contains("window_periods = 2.0: "));
    let text = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    // Every blind algorithm is ranked; the oracle, none and the coordinating ones are not.
    for name in ["schneems", "aimd", "gem-proportional"] {
        assert!(text.contains(&format!(". {name}: ")), "{name}:\n{text}");
    }
    for name in ["oracle", "shared-bucket", "aatb"] {
        assert!(!text.contains(&format!(". {name}: ")), "{name}:\n{text}");
    }
    for f in [
        "advise.toml",
        "advice.md",
        "compare/compare.csv",
        "compare/report.html",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // The scenario kept is the one that ran: compared again, it gives the same rows.
    let again = tmp.path().join("again");
    bin()
        .arg("compare")
        .arg(out.join("advise.toml"))
        .args(compared_in(&out))
        .args(["--seeds", "3", "--quiet", "--out"])
        .arg(&again)
        .assert()
        .code(predicate::in_iter([0, 1]));
    assert_eq!(
        fs::read(out.join("compare/compare.csv")).unwrap(),
        fs::read(again.join("compare.csv")).unwrap()
    );
}

/// `compare`'s arguments for what a finished advise ran, in its order: the paced candidate
/// (a `[[variants]]` entry of `advise.toml`, run first), then the algorithms.
fn compared_in(out: &Path) -> Vec<String> {
    let csv = fs::read_to_string(out.join("compare/compare.csv")).unwrap();
    let mut names: Vec<String> = Vec::new();
    for line in csv.lines().skip(1) {
        let name = line.split(',').nth(1).unwrap().to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    assert_eq!(names[0], "fixed-paced", "{names:?}");
    vec![
        "--variants".into(),
        names[0].clone(),
        "--algorithms".into(),
        names[1..].join(","),
    ]
}

#[test]
fn the_api_can_come_from_a_scenario_and_shared_state_adds_the_coordinating_algorithms() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/heroku_5x5.toml");
    let out = tmp.path().join("h");
    let json = bin()
        .arg("advise")
        .arg("--scenario")
        .arg(&scenario)
        .args(["--fleet", "5x5", "--seeds", "2", "--duration", "30m"])
        .args([
            "--shared-state",
            "redis",
            "--headers",
            "heroku",
            "--quiet",
            "--json",
        ])
        .arg("--out")
        .arg(&out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let names: Vec<&str> = v["standings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["algorithm"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"shared-bucket") && names.contains(&"fair-share"),
        "{names:?}"
    );
    assert!(!names.contains(&"oracle"));
    // Heroku's dialect states no quota: fair-share is told the server's.
    let written = fs::read_to_string(out.join("advise.toml")).unwrap();
    assert!(written.contains("limit = 4500"), "{written}");
    assert!(written.contains("quota = 4500.0"), "{written}");
    assert!(written.contains("headers = \"heroku\""), "{written}");
}

#[test]
fn bad_advice_requests_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec!["--limit", "5", "--fleet", "0x3"],
            "at least one process of one thread",
        ),
        (
            vec!["--limit", "5", "--fleet", "2x2,2x2"],
            "`2x2` is named twice",
        ),
        (vec!["--limit", "0", "--fleet", "1x1"], "limit"),
        (vec!["--fleet", "1x1"], "--limit"),
    ] {
        bin()
            .arg("advise")
            .args(&args)
            .args(["--seeds", "2", "--quiet", "--out"])
            .arg(tmp.path().join("x"))
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
        assert!(!tmp.path().join("x").exists(), "{args:?}");
    }
}

/// Four API shapes where nothing a process can run alone meets every target: advise used to
/// recommend the algorithm that ranked first on targets counted one by one, which on three of
/// them was one that ignores refusals (`fixed`, `gem-backoff`: 35 to 85 % of requests refused).
const HARD_SHAPES: [&[&str]; 4] = [
    &[
        "--rule",
        "sliding-window",
        "--limit",
        "50",
        "--period",
        "1m",
        "--headers",
        "full",
        "--latency",
        "120ms",
        "--fleet",
        "3x2",
    ],
    &[
        "--rule",
        "sliding-window",
        "--limit",
        "700",
        "--period",
        "1m",
        "--headers",
        "ietf",
        "--latency",
        "120ms",
        "--fleet",
        "10x2",
    ],
    &[
        "--rule",
        "gcra",
        "--limit",
        "2",
        "--period",
        "1s",
        "--initial",
        "0",
        "--headers",
        "heroku",
        "--latency",
        "30ms",
        "--fleet",
        "7x1",
    ],
    &[
        "--rule",
        "fixed-window",
        "--limit",
        "50",
        "--period",
        "1s",
        "--headers",
        "full",
        "--latency",
        "40ms",
        "--fleet",
        "4x8",
    ],
];

/// The most 429s advise may accept from what it recommends, in any fleet.
const MOST_429S: f64 = 0.05;

/// advise on one of [`HARD_SHAPES`] with its defaults, as JSON, and its results folder.
fn advise_json(shape: &[&str], extra: &[&str], out: &Path) -> serde_json::Value {
    let json = bin()
        .arg("advise")
        .args(shape)
        .args(extra)
        .args(["--quiet", "--json", "--out"])
        .arg(out)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&json).unwrap()
}

/// An algorithm's mean 429 ratio over the seeds in each fleet of a finished comparison.
fn mean_429s(compare_csv: &Path, algorithm: &str) -> Vec<(String, f64)> {
    let csv = fs::read_to_string(compare_csv).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "ratio_429").unwrap();
    let mut sums: Vec<(String, f64, f64)> = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] != algorithm {
            continue;
        }
        let x: f64 = f[at].parse().unwrap();
        match sums.iter_mut().find(|s| s.0 == f[0]) {
            Some(s) => {
                s.1 += x;
                s.2 += 1.0;
            }
            None => sums.push((f[0].to_string(), x, 1.0)),
        }
    }
    assert!(!sums.is_empty(), "{algorithm} did not run");
    sums.into_iter().map(|(c, s, n)| (c, s / n)).collect()
}

/// What advise recommends draws at most [`MOST_429S`] in every fleet, or it recommends
/// nothing; and where that misses a target somewhere, the coordinating algorithms ran beside.
fn never_recommends_a_failure(shape: &[&str]) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let v = advise_json(shape, &[], &out);
    if let Some(r) = v["recommended"].as_str() {
        for (fleet, ratio) in mean_429s(&out.join("compare/compare.csv"), r) {
            assert!(
                ratio <= MOST_429S,
                "{shape:?}: recommends {r}, with {:.2} % 429s in {fleet}",
                ratio * 100.0
            );
        }
    }
    let all_met = v["standings"][0]["fleets_met"] == v["standings"][0]["fleets"];
    if v["recommended"].is_string() && all_met {
        assert!(v["shared_state_reference"].is_null(), "{v:#}");
        return v;
    }
    let reference: Vec<&str> = v["shared_state_reference"]
        .as_array()
        .unwrap_or_else(|| panic!("{shape:?}: no shared-state reference:\n{v:#}"))
        .iter()
        .map(|s| s["algorithm"].as_str().unwrap())
        .collect();
    assert!(reference.contains(&"shared-bucket"), "{reference:?}");
    assert!(out.join("shared-state/report.html").is_file());
    v
}

#[test]
fn a_short_sliding_window_gets_no_recommendation_rather_than_fixed() {
    let v = never_recommends_a_failure(HARD_SHAPES[0]);
    assert!(v["recommended"].is_null(), "{v:#}");
}

/// No blind algorithm meets the targets on a minute's sliding window shared by 10 processes;
/// `fixed` paced at the quota ÷ the fleet's 20 threads does, and is recommended with the one
/// condition it holds under.
#[test]
fn a_sliding_window_with_ietf_headers_gets_fixed_paced_for_the_fleet_it_was_told() {
    let v = never_recommends_a_failure(HARD_SHAPES[1]);
    assert_eq!(v["recommended"], "fixed-paced", "{v:#}");
    let why = v["why"][0].as_str().unwrap();
    assert!(
        why.starts_with("It meets every target in all 1 fleets"),
        "{why}"
    );
    assert!(why.contains("holds only while at most 20 threads"), "{why}");
    assert_eq!(v["paced"]["fleet"], "10x2", "{v:#}");
    assert_eq!(v["paced"]["jitter"], 0.5, "{v:#}");
    let unmet = v["standings"].as_array().unwrap()[1..]
        .iter()
        .all(|s| s["fleets_met"] == 0);
    assert!(unmet, "{v:#}");
}

#[test]
fn a_two_a_second_heroku_bucket_gets_nothing_that_ignores_refusals_or_starves() {
    // Every algorithm that runs alone there either passes 2 % 429s or, within it, uses under
    // half of the quota (failure-window: 0.277): none is recommended.
    let v = never_recommends_a_failure(HARD_SHAPES[2]);
    assert!(v["recommended"].is_null(), "{v:#}");
}

/// Where the answers carry no count, on eleven processes of 12 threads on a GCRA of 43 a
/// second, `fixed` at the fleet's share of the quota meets every target (fair-share 0.22.0,
/// blind, draws 9 % 429s there): the advice prints the lines to paste, the sleep in them, and
/// the rerun that names it as a variant of `advise.toml`.
#[test]
fn a_header_less_fleet_gets_fixed_paced_with_the_lines_to_paste() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let assert = bin()
        .args([
            "advise", "--rule", "gcra", "--limit", "43", "--period", "1s",
        ])
        .args(["--headers", "none", "--latency", "29ms", "--fleet", "11x12"])
        .args(["--seeds", "3", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    assert!(text.contains("\nRecommended: fixed-paced\n"), "{text}");
    assert!(
        text.contains("paced for 11x12 (132 threads in all)"),
        "{text}"
    );
    // 132 threads at 0.98 of 43 a second: 3.132 s between one thread's sends, less 29 ms of
    // answer, over 1.25 for the jitter's mean.
    assert!(
        text.contains("    algorithm = \"fixed\"\n    sleep = \"2.483s\"\n    jitter = 0.5\n"),
        "{text}"
    );
    assert!(
        text.contains("--variants fixed-paced --algorithms "),
        "{text}"
    );
    for (fleet, ratio) in mean_429s(&out.join("compare/compare.csv"), "fixed-paced") {
        assert!(ratio <= 0.005, "{fleet}: {ratio}");
    }
}

/// Where fair-share meets every target, it ranks above the paced candidate, whatever their
/// scores: it finds its share, where the other is told it.
#[test]
#[ignore = "32 threads at 50 a second over 30 minutes, every algorithm and the tuning: about 40 s in a debug build"]
fn a_one_second_fixed_window_gets_fair_share_which_meets_every_target() {
    let v = never_recommends_a_failure(HARD_SHAPES[3]);
    assert_eq!(v["recommended"], "fair-share", "{v:#}");
    let why = v["why"][0].as_str().unwrap();
    assert!(why.starts_with("It meets every target"), "{why}");
}

/// The printed advice opens with the recommendation and why, then prints the ranking's rule,
/// and lists the coordinating algorithms as needing a shared store; the report opens the
/// same way and puts the recommended algorithm first in its heat maps.
#[test]
fn the_advice_opens_with_the_recommendation_and_prints_its_ranking_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let assert = bin()
        .arg("advise")
        .args(HARD_SHAPES[2])
        .args(["--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("advise: gcra, 2 per 1s"), "{text}");
    // The first within the 429 cap leaves most of the quota unused: nothing is recommended.
    assert_eq!(lines[1], "Recommended: none", "{text}");
    assert!(
        lines[2].starts_with(
            "No algorithm that runs without a shared store keeps its 429s within 2 % in every \
             fleet and uses at least 0.5 of the quota, fairly shared, in each (utilization × \
             fairness), so none is recommended. The first in the ranking, failure-window, stays \
             within 2 %"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "Ranking: an algorithm whose 429s pass 2 % (4 × the 0.5 % target) in any fleet \
             ranks below every one that stays within it, and one whose worst fleet's \
             utilization × fairness is under 0.5 below every other within it; then fleets met"
        ),
        "{text}"
    );
    assert!(
        text.contains(". failure-window: 0/1 fleets met; worst 7x1 (0.277 utilization × fairness, 1.41 % 429s); utilization × fairness under 0.5\n"),
        "{text}"
    );
    assert!(text.contains(". fixed: 0/1 fleets met"), "{text}");
    assert!(
        text.contains(". fixed: 0/1 fleets met; worst 7x1 (0.277 utilization × fairness, 71.43 % 429s); 429s past 2 %\n"),
        "{text}"
    );
    assert!(text.contains("shared-bucket: "), "{text}");
    assert!(text.contains("[needs a shared store]"), "{text}");
    let md = fs::read_to_string(out.join("advice.md")).unwrap();
    assert!(md.contains("\n## Recommended: none\n"), "{md}");
    let html = fs::read_to_string(out.join("compare/report.html")).unwrap();
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s}:\n{html}"));
    assert!(at("<h2>Recommended: none</h2>") < at("<h2>Cells met</h2>"));
    assert!(html.contains("<thead><tr><th>cell</th><th>failure-window</th>"));
}

/// With a store the processes share, the coordinating algorithms rank with the rest and may
/// be recommended, named as needing it.
#[test]
fn with_shared_state_a_coordinating_algorithm_may_be_recommended() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let v = advise_json(HARD_SHAPES[2], &["--shared-state", "redis"], &out);
    // interval-lock ranks first there, above every algorithm that runs alone, but uses 0.479
    // of the quota in its worst fleet: under 0.5, it is named and not recommended.
    let first = &v["standings"][0];
    assert_eq!(first["shared_store"], true, "{v:#}");
    assert!(v["shared_state_reference"].is_null(), "{v:#}");
    match v["recommended"].as_str() {
        Some(r) => {
            assert_eq!(r, first["algorithm"], "{v:#}");
            assert!(
                v["why"][0].as_str().unwrap().ends_with(
                    "It coordinates through the store your processes share (--shared-state)."
                ),
                "{v:#}"
            );
        }
        None => assert_eq!(first["starves"], true, "{v:#}"),
    }
}

#[test]
fn help_states_the_ranking_and_what_shared_state_does() {
    let out = bin().args(["advise", "--help"]).assert().success();
    // Whatever the terminal's width, one space between words.
    let help = String::from_utf8_lossy(&out.get_output().stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for says in [
        "Ranking: an algorithm whose 429s pass 2 % (4 × the 0.5 % target) in any fleet",
        "--shared-state <STORE>",
        "as a reference never recommended",
    ] {
        assert!(help.contains(says), "{says}:\n{help}");
    }
}
