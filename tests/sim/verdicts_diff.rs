//! `scripts/verdicts_diff.py`: two `check --json` runs of one scenario compared, the second with
//! a client that sends every second, which floods the window.

use std::path::{Path, PathBuf};

/// `check` on the gauntlet's fixed window (one seed, one hour) with the `--set`s given, its
/// JSON written to `dir/name`.
fn check_json(dir: &Path, name: &str, set: &[&str]) -> PathBuf {
    let mut command = assert_cmd::Command::cargo_bin("throttle-sim").unwrap();
    command.args([
        "check",
        "scenarios/gauntlet/fixed_window.toml",
        "--json",
        "-q",
        "--seeds",
        "1",
        "--set",
        "run.duration=1h",
    ]);
    for s in set {
        command.args(["--set", s]);
    }
    let out = command.output().unwrap();
    // 0: every range met; 1: one missed. Either way the verdicts are on stdout.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let path = dir.join(name);
    std::fs::write(&path, out.stdout).unwrap();
    path
}

fn diff(before: &Path, after: &Path) -> std::process::Output {
    std::process::Command::new("python3")
        .arg("scripts/verdicts_diff.py")
        .arg(before)
        .arg(after)
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test sim verdicts_diff"
)]
fn verdicts_diff_lists_what_moved_and_names_a_file_it_cannot_read() {
    let tmp = tempfile::tempdir().unwrap();
    let law = check_json(tmp.path(), "law.json", &[]);
    let flood = check_json(tmp.path(), "flood.json", &["clients.*.algorithm=fixed"]);

    let out = diff(&law, &flood);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let moved: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("scenarios/gauntlet/fixed_window.toml [fixed_window]: "))
        .collect();
    assert_eq!(moved.len(), 1, "{text}");
    // The flood misses the 429 range the law meets, and the line shows the 429 share's move.
    assert!(text.starts_with("passed: 1 → 0 of 1\n"), "{text}");
    assert!(moved[0].contains(": pass → missed; "), "{text}");
    assert!(moved[0].contains("ratio_429 0.0000 → "), "{text}");

    let same = diff(&law, &law);
    let text = String::from_utf8(same.stdout).unwrap();
    assert!(text.contains("passed: 1 → 1 of 1"), "{text}");
    assert!(text.contains("nothing moved"), "{text}");

    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a list\"}").unwrap();
    let out = diff(&law, &bad);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.json"),
        "{out:?}"
    );
}
