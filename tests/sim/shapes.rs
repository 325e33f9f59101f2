//! `throttle-sim shapes`: drawn API shapes and fleets written as one `[[axes]]` scenario that
//! `check` runs cell by cell, the same bytes for the same seed. The full count (300 shapes, every
//! algorithm) is `scripts/shapes.py`'s; this runs one small fixed seed.

use std::fs;

use assert_cmd::Command;
use predicates::prelude::*;

fn bin() -> Command {
    Command::cargo_bin("throttle-sim").unwrap()
}

fn draw(dir: &std::path::Path, name: &str, seed: &str) -> Vec<u8> {
    let path = dir.join(name);
    bin()
        .args(["shapes", "--count", "5", "--seed", seed, "--out"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("5 shapes of seed"));
    fs::read(path).unwrap()
}

#[test]
fn shapes_of_one_seed_are_the_same_bytes_and_every_cell_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = draw(tmp.path(), "a.toml", "1");
    assert_eq!(a, draw(tmp.path(), "b.toml", "1"));
    assert_ne!(a, draw(tmp.path(), "c.toml", "2"));
    let text = String::from_utf8(a).unwrap();
    assert!(
        text.starts_with("# Written by `throttle-sim shapes --count 5 --seed 1`"),
        "{text}"
    );
    // Without --out the file goes to stdout, the same bytes.
    let out = bin()
        .args(["shapes", "--count", "5", "--seed", "1"])
        .assert()
        .success();
    assert_eq!(out.get_output().stdout, text.as_bytes());

    // Every cell loads and runs (one seed here; the file's three in scripts/shapes.py), and is
    // judged on its own targets: met or missed, never bad input.
    let out = bin()
        .arg("check")
        .arg(tmp.path().join("a.toml"))
        .args(["--seeds", "1", "--json", "--quiet"])
        .assert()
        .code(predicate::in_iter([0, 1]));
    let verdicts: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let cells = verdicts.as_array().unwrap();
    assert_eq!(cells.len(), 5, "{verdicts}");
    for c in cells {
        let outcome = c["outcome"].as_str().unwrap();
        assert!(outcome == "pass" || outcome == "missed", "{c}");
        assert!(c["cell"].as_str().unwrap().starts_with("00"), "{c}");
    }
}

#[test]
fn shapes_names_a_bad_count_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("x.toml");
    bin()
        .args(["shapes", "--count", "0", "--seed", "1", "--out"])
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--count"));
    assert!(!path.exists());
    bin()
        .args(["shapes", "--seed", "-3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--seed"));
    bin()
        .args(["shapes", "--count", "1", "--seed", "1", "--out"])
        .arg(tmp.path().join("no/such/dir/x.toml"))
        .assert()
        .code(3)
        .stderr(predicate::str::contains("no/such/dir/x.toml"));
}

/// `python3 scripts/shapes.py --bin <this build>` with the arguments `args` adds, run to its end.
fn pass_bar_script(
    args: impl FnOnce(&mut std::process::Command) -> &mut std::process::Command,
) -> std::process::Output {
    let mut command = std::process::Command::new("python3");
    command
        .arg("scripts/shapes.py")
        .arg("--bin")
        .arg(assert_cmd::cargo::cargo_bin("throttle-sim"));
    args(&mut command).output().unwrap()
}

/// `scripts/shapes.py` on two shapes and one other algorithm: every item of the pass bar, the
/// fixed list's included, ends in a verdict, and the closing summary names each.
#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test sim shapes"
)]
fn the_pass_bar_script_judges_every_item() {
    let tmp = tempfile::tempdir().unwrap();
    // The script on shapes 0 and 1 of seed 1 with `aimd` beside, its runs kept in `tmp`.
    let script = |more: &[&str]| {
        pass_bar_script(|c| {
            c.args(["--count", "2", "--seed", "1", "--algorithms", "aimd"])
                .args(more)
                .arg("--work")
                .arg(tmp.path())
        })
    };
    let out = script(&["--jobs", "2"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let summary = text
        .split("\nPass bar:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no summary in\n{text}"));
    let items: Vec<&str> = summary.lines().map(str::trim).collect();
    let starts = [
        "1. ",
        "2a. ",
        "2b. ",
        "3. ",
        "4. small buckets",
        "5. started from nothing",
    ];
    assert_eq!(items.len(), starts.len(), "{summary}");
    for (item, start) in items.iter().zip(starts) {
        assert!(item.starts_with(start), "{item}");
        assert!(
            item.ends_with(" MET") || item.ends_with(" MISSED"),
            "{item}"
        );
    }
    assert!(text.contains("Fixed list (fair-share"), "{text}");
    // The first item broken down by rule, header dialect and fleet size: each breakdown's
    // groups (`name met/bound-met/shapes`) add up to the draw's two shapes.
    for heading in ["Per rule", "Per header dialect", "Per fleet size"] {
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with(heading))
            .nth(1)
            .unwrap_or_else(|| panic!("no {heading} line in\n{text}"));
        let shapes: u32 = line
            .split_whitespace()
            .filter(|w| w.matches('/').count() == 2)
            .map(|w| {
                w.trim_end_matches(',')
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .parse::<u32>()
                    .unwrap()
            })
            .sum();
        assert_eq!(shapes, 2, "{line}");
    }
    // The runs are kept: a second call with the same folder runs nothing and says the same.
    let again = script(&["--so-far"]);
    assert!(again.status.success(), "{again:?}");
    let again = String::from_utf8(again.stdout).unwrap();
    assert!(again.contains("(those finished so far)"), "{again}");
    let bars = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("1. "))
            .collect::<Vec<_>>()
            .concat()
    };
    assert_eq!(bars(&text), bars(&again));
}

/// `scripts/shapes.py --against OLD`: a second run of the same shapes takes the other
/// algorithms' runs from OLD, and with the same binary says that fair-share moved nowhere; a
/// folder that holds no run is named as such.
#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test sim shapes"
)]
fn the_pass_bar_script_lists_the_shapes_where_the_law_moved_against_an_earlier_run() {
    let (old, new) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = |work: &std::path::Path, more: &[&std::ffi::OsStr]| {
        pass_bar_script(|c| {
            c.args([
                "--count",
                "2",
                "--seed",
                "3",
                "--algorithms",
                "aimd",
                "--no-fixed",
            ])
            .arg("--work")
            .arg(work)
            .args(more)
        })
    };
    let first = script(old.path(), &[]);
    assert!(first.status.success(), "{first:?}");
    let second = script(new.path(), &["--against".as_ref(), old.path().as_os_str()]);
    assert!(second.status.success(), "{second:?}");
    let text = String::from_utf8(second.stdout).unwrap();
    assert!(
        text.contains("fair-share moved in 0 of 2 shapes") && text.contains("none moved."),
        "{text}"
    );
    // The other algorithms' runs are the old ones, byte for byte; the law's were run again.
    let runs = |dir: &std::path::Path, algorithm: &str| {
        let mut found = Vec::new();
        for shape in std::fs::read_dir(dir.join("runs")).unwrap() {
            let shape = shape.unwrap().path();
            let run = std::fs::read(shape.join(format!("{algorithm}.json"))).unwrap();
            found.push((shape.file_name().unwrap().to_owned(), run));
        }
        found.sort();
        found
    };
    assert_eq!(runs(old.path(), "aimd"), runs(new.path(), "aimd"));
    assert_eq!(runs(new.path(), "fair-share").len(), 2);
    // A folder without a run's shapes is refused, by name.
    let empty = tempfile::tempdir().unwrap();
    let bad = script(
        new.path(),
        &["--against".as_ref(), empty.path().as_os_str()],
    );
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let err = String::from_utf8(bad.stderr).unwrap();
    assert!(err.contains("no shapes.toml there"), "{err}");
}

/// `scripts/shapes.py --only PATTERN` runs and judges only the shapes the pattern matches, says
/// so in its report and its pass bar, and names a pattern that is no regular expression.
#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test sim shapes"
)]
fn the_pass_bar_script_judges_only_the_shapes_its_pattern_matches() {
    let tmp = tempfile::tempdir().unwrap();
    // The five shapes of seed 3: the pattern names the second of them.
    let file: toml::Value =
        toml::from_str(&String::from_utf8(draw(tmp.path(), "shapes.toml", "3")).unwrap()).unwrap();
    let names: Vec<&str> = file["axes"][0]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|level| level["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    // A shape's name holds `+` between its groups of processes: escaped, it is taken literally.
    let only = format!("^{}$", names[1].replace('+', r"\+"));
    let work = tmp.path().join("work");
    let out = pass_bar_script(|c| {
        c.args([
            "--count",
            "5",
            "--seed",
            "3",
            "--algorithms",
            "aimd",
            "--only",
            &only,
        ])
        .arg("--work")
        .arg(&work)
    });
    assert!(out.status.success(), "{out:?}");
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(
        report.contains(&format!("1 shapes (those --only '{only}' matches)"))
            && report.contains(&format!(
                "Pass bar (only the shapes --only '{only}' matches)"
            )),
        "{report}"
    );
    // Only that shape was run, and the fixed list was left out.
    let runs: Vec<_> = fs::read_dir(work.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(runs, [names[1]]);
    assert!(
        !work.join("fixed").exists() && !report.contains("small buckets"),
        "{report}"
    );
    let bad = pass_bar_script(|c| c.args(["--count", "5", "--seed", "3", "--only", "("]));
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    let err = String::from_utf8(bad.stderr).unwrap();
    assert!(
        err.contains("--only '(': not a regular expression"),
        "{err}"
    );
}
