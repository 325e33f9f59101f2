//! Scenario files with `[[axes]]`: `run` takes one cell, `check` judges every cell, `compare`
//! runs every variant in every cell, and a cell is exactly the file with its levels applied.

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

use crate::common;
use common::{json, write};

fn bin() -> Command {
    Command::cargo_bin("throttle-sim").unwrap()
}

/// Two fleets × two servers; the 5x5 fixed window is held to a fairness the 1x1 cells are not.
const MATRIX: &str = r#"name = "m"
[run]
duration = "10m"
seed = 42
seeds = 2
sample_every = "1m"
[server]
limit = 100
period = "1m"
[[clients]]
name = "w"
algorithm = "fair-share"
[expect]
utilization = [0.5, 1.0]

[[axes]]
name = "fleet"
levels = [
  { name = "1x1" },
  { name = "5x5", set = { "clients.*.processes" = 5, "clients.*.threads" = 5 } },
]
[[axes]]
name = "server"
levels = [
  { name = "gcra", set = { server = { kind = "gcra", limit = 100, period = "1m" } } },
  { name = "fw", set = { server = { kind = "fixed-window", limit = 100, window = "1m" } }, expect = { ratio_429 = [0, 0.5] } },
]
[[cells]]
match = { fleet = "5x5", server = "fw" }
expect = { fairness = [0.5, 1.0] }
"#;

/// The cell 5x5/fw written out by hand as a scenario of its own.
const FLAT_5X5_FW: &str = r#"name = "m"
[run]
duration = "10m"
seed = 42
sample_every = "1m"
[server]
kind = "fixed-window"
limit = 100
window = "1m"
[[clients]]
name = "w"
algorithm = "fair-share"
processes = 5
threads = 5
"#;

#[test]
fn run_refuses_a_file_with_axes_unless_a_cell_is_picked() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "m.toml", MATRIX);
    bin()
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(tmp.path().join("r"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("stands for 4 cells"))
        .stderr(predicate::str::contains("--cell 1x1/gcra"));
    assert!(!tmp.path().join("r").exists());
    bin()
        .arg("run")
        .arg(&file)
        .args(["--cell", "5x5/tb", "--quiet"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no cell `5x5/tb`"))
        .stderr(predicate::str::contains("server: gcra, fw"));
}

#[test]
fn a_cell_is_the_file_with_its_levels_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "m.toml", MATRIX);
    let flat = write(tmp.path(), "flat.toml", FLAT_5X5_FW);
    let (a, b) = (tmp.path().join("cell"), tmp.path().join("flat"));
    // The cell misses nothing here: its fairness and ratio ranges are wide.
    bin()
        .arg("run")
        .arg(&file)
        .args(["--cell", "5x5/fw", "--quiet", "--no-charts", "--out"])
        .arg(&a)
        .assert()
        .success();
    bin()
        .arg("run")
        .arg(&flat)
        .args(["--quiet", "--no-charts", "--out"])
        .arg(&b)
        .assert()
        .success();
    assert_eq!(
        fs::read(a.join("series.csv")).unwrap(),
        fs::read(b.join("series.csv")).unwrap()
    );
    let (sa, sb) = (json(&a.join("summary.json")), json(&b.join("summary.json")));
    assert_eq!(sa["metrics"]["requests"], sb["metrics"]["requests"]);
    assert_eq!(sa["metrics"]["fairness"], sb["metrics"]["fairness"]);
    // The written scenario is the cell, levels and rule applied, with no axes left.
    let written = fs::read_to_string(a.join("scenario.toml")).unwrap();
    assert!(written.contains("kind = \"fixed-window\""), "{written}");
    assert!(written.contains("fairness = [0.5, 1.0]"), "{written}");
    assert!(written.contains("ratio_429 = [0.0, 0.5]"), "{written}");
    assert!(!written.contains("axes"), "{written}");
    // A --set on the command line wins over the level.
    let c = tmp.path().join("set");
    bin()
        .arg("run")
        .arg(&file)
        .args([
            "--cell",
            "5x5/fw",
            "--set",
            "server.limit=50",
            "--quiet",
            "--no-charts",
        ])
        .arg("--out")
        .arg(&c)
        .assert()
        .success();
    let written = fs::read_to_string(c.join("scenario.toml")).unwrap();
    assert!(written.contains("limit = 50"), "{written}");
}

#[test]
fn check_judges_every_cell_on_its_own_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    // The 5x5 fixed window cell alone is held to a fairness no client reaches.
    let text = MATRIX.replace("fairness = [0.5, 1.0]", "fairness = [1.5, 2.0]");
    let file = write(tmp.path(), "m.toml", &text);
    let out = bin()
        .arg("check")
        .arg(&file)
        .args(["--quiet", "--json"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cells: Vec<(String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cell"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("1x1/gcra", "pass"),
        ("1x1/fw", "pass"),
        ("5x5/gcra", "pass"),
        ("5x5/fw", "missed"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(cells, expected);
    // Only the cell with the rule is judged on fairness; the fw cells on ratio_429 too.
    let metrics = |i: usize| -> Vec<String> {
        v[i]["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["metric"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(metrics(0), ["utilization"]);
    assert_eq!(metrics(1), ["ratio_429", "utilization"]);
    assert_eq!(metrics(3), ["fairness", "ratio_429", "utilization"]);
    // --cell checks one.
    bin()
        .arg("check")
        .arg(&file)
        .args(["--quiet", "--cell", "1x1/fw"])
        .assert()
        .success()
        .stdout(predicate::str::contains("[1x1/fw]"))
        .stdout(predicate::str::contains("1 scenario (1 of them cells"));
}

#[test]
fn compare_runs_every_variant_in_every_cell_as_one_cell_alone_does() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "m.toml", MATRIX);
    let all = tmp.path().join("all");
    let one = tmp.path().join("one");
    let algorithms = [
        "--algorithms",
        "fair-share,oracle",
        "--jobs",
        "2",
        "--quiet",
    ];
    bin()
        .arg("compare")
        .arg(&file)
        .args(algorithms)
        .arg("--out")
        .arg(&all)
        .assert()
        .code(predicate::in_iter([0, 1]));
    for f in [
        "compare.csv",
        "compare.json",
        "compare.md",
        "report.html",
        "scenario.toml",
    ] {
        assert!(all.join(f).is_file(), "{f} missing");
    }
    let csv = fs::read_to_string(all.join("compare.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("cell,variant,seed,"), "{}", lines[0]);
    // 4 cells × 2 variants × 2 seeds.
    assert_eq!(lines.len(), 1 + 16);
    bin()
        .arg("compare")
        .arg(&file)
        .args(algorithms)
        .args(["--cell", "5x5/fw", "--out"])
        .arg(&one)
        .assert()
        .code(predicate::in_iter([0, 1]));
    let single = fs::read_to_string(one.join("compare.csv")).unwrap();
    let in_matrix: Vec<String> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("5x5/fw,"))
        .map(str::to_string)
        .collect();
    let alone: Vec<String> = single.lines().skip(1).map(str::to_string).collect();
    assert_eq!(in_matrix, alone);
    let m = json(&all.join("compare.json"));
    assert_eq!(m["cells"].as_array().unwrap().len(), 4);
    assert_eq!(m["axes"][1]["levels"], serde_json::json!(["gcra", "fw"]));
    let report = fs::read_to_string(all.join("report.html")).unwrap();
    assert!(report.contains("<table class=\"heat\">"), "no heat map");
    let md = fs::read_to_string(all.join("compare.md")).unwrap();
    assert!(md.contains("| 5x5/fw"), "{md}");
}

#[test]
fn bad_axes_name_the_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let text = MATRIX.replace("{ name = \"fw\",", "{ name = \"gcra\",");
    let file = write(tmp.path(), "m.toml", &text);
    bin()
        .arg("check")
        .arg(&file)
        .arg("--quiet")
        .assert()
        .code(2)
        .stdout(predicate::str::contains(
            "`gcra` names two levels of axis `server`",
        ));
}

#[test]
fn the_bundled_matrix_has_more_than_200_cells_that_all_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/gauntlet");
    let mut total = 0;
    for name in ["api_shapes.toml", "api_dialects.toml"] {
        let path = dir.join(name);
        let base = throttle_sim::scenario::read_scenario(&path, &[], 1).unwrap();
        assert!(base.cell.is_none() && !base.axes.is_empty(), "{name}");
        for cell in base.axes.names() {
            let o = throttle_sim::scenario::cell_override(&cell);
            let s = throttle_sim::scenario::read_scenario(&path, &[o], 1)
                .unwrap_or_else(|e| panic!("{name} [{cell}]: {e}"));
            assert_eq!(s.cell.as_deref(), Some(cell.as_str()));
            // Long enough for 20 of a thread's fair-share periods, and at least 30 minutes.
            assert!(s.run.duration.secs() >= 1800.0, "{name} [{cell}]");
            assert_eq!(s.run.seeds, Some(10), "{name} [{cell}]");
            total += 1;
        }
    }
    assert!(total >= 200, "{total} cells");
}
