//! `--help`: every command lists its exit codes, from the one table README.md shows too, and
//! the same thing has the same value name in every command that takes it.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

const COMMANDS: [&str; 9] = [
    "run", "compare", "plot", "list", "check", "advise", "fit", "serve", "client",
];

fn help(args: &[&str]) -> String {
    let out = Command::cargo_bin("throttle-sim")
        .unwrap()
        .args(args)
        .arg("--help")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// The `Exit codes:` list at the end of a help text: (code, meaning) per line.
fn exit_codes(text: &str) -> Vec<(String, String)> {
    let (_, list) = text
        .split_once("Exit codes:\n")
        .unwrap_or_else(|| panic!("no exit codes in:\n{text}"));
    list.lines()
        .take_while(|l| l.starts_with("  "))
        .map(|l| {
            let (code, meaning) = l.trim().split_once(' ').unwrap();
            (code.to_string(), meaning.trim().to_string())
        })
        .collect()
}

#[test]
fn help_lists_exit_codes_from_the_table_readme_shows() {
    let all = exit_codes(&help(&[]));
    // README.md's table, row for row.
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let table: Vec<(String, String)> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| exit code | meaning |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect();
    assert_eq!(
        table, all,
        "README.md's exit-code table differs from --help's"
    );
    for command in COMMANDS {
        let own = exit_codes(&help(&[command]));
        assert!(own.iter().any(|(c, _)| c == "0"), "{command}: {own:?}");
        for row in &own {
            assert!(all.contains(row), "{command}: {row:?} is not in {all:?}");
        }
    }
    let fit = exit_codes(&help(&["fit"]));
    assert!(fit.iter().any(|(c, _)| c == "5"), "{fit:?}");
    assert!(exit_codes(&help(&["check"])).iter().any(|(c, _)| c == "1"));
}

#[test]
fn the_same_thing_has_the_same_value_name_everywhere() {
    for (flag, name, commands) in [
        ("--headers", "<DIALECT>", &["serve", "advise"][..]),
        ("--period", "<DURATION>", &["serve", "advise", "client"][..]),
        ("--latency", "<DURATION>", &["serve", "advise"][..]),
        (
            "--duration",
            "<DURATION>",
            &["run", "compare", "serve", "client", "advise"][..],
        ),
        (
            "--out",
            "<DIR>",
            &["run", "compare", "client", "advise"][..],
        ),
        ("--scenario", "<FILE>", &["serve", "advise"][..]),
        ("--store", "<URL>", &["run", "serve", "client"][..]),
    ] {
        for command in commands {
            let text = help(&[command]);
            assert!(
                text.contains(&format!("{flag} {name}")),
                "{command} --help has no `{flag} {name}`:\n{text}"
            );
        }
    }
    let fit = help(&["fit"]);
    for flag in ["--out <FILE>", "-q, --quiet", "--json"] {
        assert!(fit.contains(flag), "fit --help has no `{flag}`:\n{fit}");
    }
}

/// `serve` takes the rule flags `advise` takes, with the same value names, and states the rule
/// it serves.
#[test]
fn serve_takes_the_rule_flags_advise_takes() {
    let flags = |command: &str| -> Vec<String> {
        help(&[command])
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                ["--rule ", "--limit ", "--period ", "--burst ", "--initial "]
                    .iter()
                    .any(|f| l.starts_with(f))
                    .then(|| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            })
            .collect()
    };
    assert_eq!(flags("serve"), flags("advise"));
    assert_eq!(flags("serve").len(), 5, "{:?}", flags("serve"));
    for (rule, says) in [
        ("sliding-window", "(sliding-window: 50 in any 10s)"),
        ("fixed-window", "(fixed-window: 50 per 10s window)"),
        (
            "token-bucket",
            "(token-bucket: 50 per 10s into a bucket of 80)",
        ),
    ] {
        let out = Command::cargo_bin("throttle-sim")
            .unwrap()
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--duration",
                "200ms",
                "--rule",
                rule,
            ])
            .args(["--limit", "50", "--period", "10s", "--burst", "80"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains(says), "{rule}: {out}");
    }
}
