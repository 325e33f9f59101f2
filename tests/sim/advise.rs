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
        .args([
            "--algorithms",
            &algorithms_of(&out),
            "--seeds",
            "3",
            "--quiet",
            "--out",
        ])
        .arg(&again)
        .assert()
        .code(predicate::in_iter([0, 1]));
    assert_eq!(
        fs::read(out.join("compare/compare.csv")).unwrap(),
        fs::read(again.join("compare.csv")).unwrap()
    );
}

/// The algorithms of a finished advise, in the order it ran them.
fn algorithms_of(out: &Path) -> String {
    let csv = fs::read_to_string(out.join("compare/compare.csv")).unwrap();
    let mut names: Vec<String> = Vec::new();
    for line in csv.lines().skip(1) {
        let name = line.split(',').nth(1).unwrap().to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(",")
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
