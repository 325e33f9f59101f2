//! The server rules that model deployed limiters (Flask-Limiter's sliding-window counter and
//! stacked limits on fixed windows opened by a first request, nginx's `limit_req`) in whole
//! runs of their bundled scenarios: what each claims against its variant, the oracle's bound
//! on them, and a seed's byte-identical files through the recorded scenario.

use std::fs;
use std::path::Path;

use assert_cmd::Command;

use crate::common;
use common::bundled;

/// On the fixed window its workers were built for, the Discord queue clears without a 429; on
/// the sliding-window counter its bursts are refused. The oracle, whose slots sit half a slot
/// off the counter's grid, is never refused on it.
#[test]
fn the_counter_refuses_the_bursts_a_fixed_window_takes() {
    let counter = bundled("sliding_window_counter.toml", &[]).metrics;
    let fixed = bundled("sliding_window_counter.toml", &["server.kind=fixed-window"]).metrics;
    assert_eq!((fixed.ok, fixed.limited), (150, 0));
    assert!(fixed.time_to_clear < counter.time_to_clear);
    assert!(counter.limited > 50, "{counter:?}");
    let oracle = bundled(
        "sliding_window_counter.toml",
        &["clients.queue.algorithm=oracle", "expect={}"],
    )
    .metrics;
    assert_eq!((oracle.ok, oracle.limited), (150, 0));
}

/// Without `nodelay` the eager workers queue in the bucket; with it they meet 429s.
#[test]
fn nodelay_turns_nginx_s_queue_into_refusals() {
    let queued = bundled("nginx_limit_req.toml", &[]).metrics;
    let refused = bundled(
        "nginx_limit_req.toml",
        &["server.delay=\"nodelay\"", "expect={}"],
    )
    .metrics;
    assert_eq!(queued.limited, 0);
    assert!(refused.ratio_429 > 0.9, "{refused:?}");
    // Both get the rate; only the queue waits for it.
    assert!(refused.utilization > 0.99 && queued.utilization > 0.99);
    let p50 = |m: &throttle_sim::record::Metrics| m.wait_p50.unwrap_or(f64::NAN);
    assert!(
        p50(&refused) < 1.0 && p50(&queued) > 3.0,
        "{refused:?} {queued:?}"
    );
}

/// The minute alone lets the queue clear; stacked behind 10 per second it does not. The
/// oracle, planning with the stack's smallest rate, uses the whole capacity without a 429.
#[test]
fn a_stacked_second_binds_a_queue_sized_for_the_minute() {
    let minute = "server.limits=[{kind=\"fixed-window\", limit=100, window=\"1m\", \
                  start=\"first-request\"}]";
    let alone = bundled("flask_limiter_stacked.toml", &[minute, "expect={}"]).metrics;
    assert_eq!((alone.ok, alone.limited), (300, 0));
    assert!(alone.time_to_clear.is_some_and(|t| t < 180.0), "{alone:?}");
    let oracle = bundled(
        "flask_limiter_stacked.toml",
        &["clients.workers.algorithm=oracle", "expect={}"],
    )
    .metrics;
    assert_eq!((oracle.ok, oracle.limited), (300, 0));
}

/// A seed gives byte-identical files for every new rule, and the scenario a run records
/// (with a stack's list of rules, a leaky bucket's nginx rate) runs again to the same files.
#[test]
fn the_new_rules_repeat_byte_for_byte_through_their_recorded_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |file: &Path, out: &Path| {
        Command::cargo_bin("throttle-sim")
            .unwrap()
            .arg("run")
            .arg(file)
            .args([
                "--quiet",
                "--no-charts",
                "--log-requests",
                "--set",
                "expect={}",
            ])
            .arg("--out")
            .arg(out)
            .assert()
            .success();
    };
    for name in [
        "sliding_window_counter",
        "nginx_limit_req",
        "flask_limiter_stacked",
    ] {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{name}.toml"));
        let (a, b, c) = (
            tmp.path().join(format!("{name}-a")),
            tmp.path().join(format!("{name}-b")),
            tmp.path().join(format!("{name}-c")),
        );
        run(&file, &a);
        run(&file, &b);
        run(&a.join("scenario.toml"), &c);
        for f in [
            "scenario.toml",
            "series.csv",
            "requests.csv",
            "summary.json",
        ] {
            let x = fs::read(a.join(f)).unwrap();
            assert!(x == fs::read(b.join(f)).unwrap(), "{name}: {f} differs");
            assert!(
                x == fs::read(c.join(f)).unwrap(),
                "{name}: {f} not repeated"
            );
        }
    }
}

/// A fixed window on the clock, the default, records no `start`: the scenario a run of an
/// existing scenario writes is what it was before the option existed.
#[test]
fn a_clock_fixed_window_records_no_start() {
    let tmp = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/discord_groups.toml");
    Command::cargo_bin("throttle-sim")
        .unwrap()
        .arg("run")
        .arg(&file)
        .args([
            "--quiet",
            "--no-charts",
            "--duration",
            "20s",
            "--set",
            "expect={}",
        ])
        .arg("--out")
        .arg(tmp.path().join("r"))
        .assert()
        .success();
    let text = fs::read_to_string(tmp.path().join("r/scenario.toml")).unwrap();
    let recorded: toml::Table = text.parse().unwrap();
    let server = recorded["server"].as_table().unwrap();
    assert_eq!(server["kind"].as_str(), Some("fixed-window"));
    assert!(!server.contains_key("start"), "{text}");
}
