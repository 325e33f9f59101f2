//! The scenario loader under arbitrary input: the bundled scenarios mutated at
//! random (bytes cut, tokens and lines inserted, lines swapped) and arbitrary `--set` values
//! never panic; the library answers with a scenario that writes back and reads again, or with
//! problems (exit 2) that say something; and the binary, given the same kind of files, exits
//! 0, 1 or 2, with a message whenever it refuses.
//!
//! Case counts: `LIBRARY_CASES` through the library, `CLI_CASES` through the binary (each a
//! process, so fewer).

use crate::common;

use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use throttle_sim::error::Error;
use throttle_sim::scenario::{Override, parse_scenario};

const LIBRARY_CASES: u32 = 3000;
const CLI_CASES: u32 = 200;

const SCENARIOS: &[&str] = &[
    "fast_slow.toml",
    "heroku_5x5.toml",
    "single_client.toml",
    "scale_out.toml",
    "occ_contention.toml",
    "outage.toml",
    "dual_bucket.toml",
    "interval_lock.toml",
    "backoff_503.toml",
    "discord_groups.toml",
    "shared_redis.toml",
];

fn bundled(i: usize) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(SCENARIOS[i % SCENARIOS.len()]);
    std::fs::read_to_string(path).unwrap()
}

/// Tokens that break TOML or the schema in the ways people and editors do.
const TOKENS: &[&str] = &[
    "=",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'''",
    "#",
    ",",
    "\n",
    "[[clients]]\n",
    "[run]\n",
    "[server]\n",
    "[expect]\n",
    "nan",
    "-inf",
    "-1",
    "0",
    "1e400",
    "99999999999999999999",
    "\"../x\"",
    "\"*\"",
    "\"\"",
    "duration = \"0s\"\n",
    "duration = \"1000000000000000000s\"\n",
    "threads = 0\n",
    "threads = 10000001\n",
    "sample_every = \"1ns\"\n",
    "algorithm = \"magic\"\n",
    "kind = \"occ\"\n",
    "name = \"\"\n",
    "stop = \"999h\"\n",
    "time_scale = 1e12\n",
    "ratio_429 = [nan, 0.5]\n",
    "mode = \"live\"\n",
    "é",
    "\u{0}",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Cut `len` bytes at the fraction `at` of the text.
    Cut { at: f64, len: usize },
    /// Insert a token (or arbitrary text) there.
    Insert { at: f64, text: String },
    /// Swap two lines.
    Swap { a: f64, b: f64 },
    /// Repeat a line.
    Repeat { at: f64 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), 1usize..40).prop_map(|(at, len)| Mutation::Cut { at, len }),
        (
            at.clone(),
            prop_oneof![
                proptest::sample::select(TOKENS).prop_map(str::to_string),
                "\\PC{0,12}",
            ]
        )
            .prop_map(|(at, text)| Mutation::Insert { at, text }),
        (at.clone(), at.clone()).prop_map(|(a, b)| Mutation::Swap { a, b }),
        at.prop_map(|at| Mutation::Repeat { at }),
    ]
}

/// The char boundary nearest the fraction `at` of `s`.
fn boundary(s: &str, at: f64) -> usize {
    let mut i = ((s.len() as f64) * at) as usize;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i.min(s.len())
}

fn apply(mut text: String, m: &Mutation) -> String {
    match m {
        Mutation::Cut { at, len } => {
            let start = boundary(&text, *at);
            let mut end = (start + len).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            text.replace_range(start..end, "");
        }
        Mutation::Insert { at, text: t } => {
            let i = boundary(&text, *at);
            text.insert_str(i, t);
        }
        Mutation::Swap { a, b } => {
            let mut lines: Vec<&str> = text.lines().collect();
            if !lines.is_empty() {
                let n = lines.len();
                let (i, j) = ((a * n as f64) as usize % n, (b * n as f64) as usize % n);
                lines.swap(i, j);
            }
            text = lines.join("\n");
        }
        Mutation::Repeat { at } => {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            if !lines.is_empty() {
                let i = (at * lines.len() as f64) as usize % lines.len();
                lines.insert(i, lines[i].clone());
            }
            text = lines.join("\n");
        }
    }
    text
}

fn mutated() -> impl Strategy<Value = String> {
    (0..SCENARIOS.len(), prop::collection::vec(mutation(), 1..5))
        .prop_map(|(i, ms)| ms.iter().fold(bundled(i), apply))
}

const PATHS: &[&str] = &[
    "run.duration",
    "run.seed",
    "run.sample_every",
    "run.time_scale",
    "run.mode",
    "server.limit",
    "server.kind",
    "clients.*.threads",
    "clients.*.algorithm",
    "clients.0.jitter",
    "clients.nosuch.threads",
    "expect.ratio_429",
    "name",
    "store.url",
    "variants",
    "a..b",
    "",
];

const VALUES: &[&str] = &[
    "600",
    "-1",
    "0",
    "2h",
    "1ns",
    "nan",
    "1e12",
    "[0,",
    "[0, 0.1]",
    "{a=1}",
    "\"x\"",
    "live",
    "magic",
    "../x",
    "99999999999999999999",
    "",
];

/// A `--set` argument as a user might type it.
fn set_arg() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (
            proptest::sample::select(PATHS),
            prop_oneof![
                proptest::sample::select(VALUES).prop_map(str::to_string),
                "\\PC{0,10}",
            ]
        )
            .prop_map(|(p, v)| format!("{p}={v}")),
        1 => "\\PC{0,24}",
    ]
}

#[test]
fn the_loader_answers_every_mutated_scenario_and_set() {
    let mut runner = TestRunner::new(Config {
        cases: LIBRARY_CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (mutated(), prop::collection::vec(set_arg(), 0..3));
    // Loaded, refused scenario, refused --set (the runner's closure is Fn: cells).
    let outcomes: [std::cell::Cell<u32>; 3] = Default::default();
    runner
        .run(&strategy, |(text, sets)| {
            let mut overrides = Vec::new();
            for s in &sets {
                match s.parse::<Override>() {
                    Ok(o) => overrides.push(o),
                    Err(message) => {
                        // clap shows this as `invalid value` and exits 2.
                        prop_assert!(!message.to_string().is_empty());
                        outcomes[2].set(outcomes[2].get() + 1);
                        return Ok(());
                    }
                }
            }
            match parse_scenario(&text, "f.toml", "f", &overrides, 7) {
                Ok(s) => {
                    outcomes[0].set(outcomes[0].get() + 1);
                    // What a run records reads back as the same scenario, but for the
                    // secrets of the store's URL (a mutation can make a fragment or a
                    // password of it), which it writes as `***`.
                    let again = parse_scenario(&s.to_toml(), "r.toml", "r", &[], 7);
                    let mut recorded = s.clone();
                    if let Some(url) = &mut recorded.store.url {
                        *url = throttle_sim::redact::without_secrets(url);
                    }
                    prop_assert_eq!(
                        again.as_ref().ok(),
                        Some(&recorded),
                        "{:?}",
                        again.as_ref().err()
                    );
                }
                Err(e) => {
                    outcomes[1].set(outcomes[1].get() + 1);
                    prop_assert!(!e.problems.is_empty());
                    let message = e.to_string();
                    prop_assert!(message.starts_with("f.toml"), "{}", message);
                    prop_assert!(message.len() > "f.toml: ".len(), "{}", message);
                    prop_assert_eq!(Error::from(e).exit_code(), 2);
                }
            }
            Ok(())
        })
        .unwrap();
    // The mutations reach both sides: some scenarios still load, most are refused.
    let counts = outcomes.map(|c| c.get());
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");
    eprintln!("{LIBRARY_CASES} cases: loaded, refused, --set refused = {counts:?}");
}

#[test]
fn the_binary_exits_0_1_or_2_with_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    let mut runner = TestRunner::new(Config {
        cases: CLI_CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (mutated(), prop::collection::vec(set_arg(), 0..2));
    runner
        .run(&strategy, |(text, sets)| {
            std::fs::write(&file, &text).unwrap();
            let mut cmd = Command::new(common::exe());
            cmd.arg("check").arg(&file);
            for s in &sets {
                cmd.arg("--set").arg(s);
            }
            // Short, small runs: the mutations are about the loader, not the engine.
            for bound in [
                "run.duration=10m",
                "run.sample_every=10s",
                "clients.*.processes=1",
                "clients.*.threads=2",
            ] {
                cmd.args(["--set", bound]);
            }
            let out = cmd.output().unwrap();
            let code = out.status.code();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let stdout = String::from_utf8_lossy(&out.stdout);
            prop_assert!(
                matches!(code, Some(0..=2)),
                "exit {:?}\n{}\n{}\n{}",
                code,
                text,
                stdout,
                stderr
            );
            prop_assert!(!stderr.contains("panicked"), "{}", stderr);
            if code == Some(2) {
                let said = format!("{stdout}{stderr}").to_lowercase();
                prop_assert!(said.contains("error"), "{}\n{}", stdout, stderr);
            } else {
                prop_assert!(!stdout.trim().is_empty());
            }
            Ok(())
        })
        .unwrap();
}
