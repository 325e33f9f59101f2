//! The sim is only worth trusting if the same algorithms behave the same against a real server
//! over real sockets. One scenario, 2 processes × 3 threads of seed 002's client for ten
//! minutes of its time, runs live at 30× (20 s of wall time) and must land within a stated
//! tolerance of the sim's average over many seeds: a live run is one more draw of the timing
//! noise the seeds stand for.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::{Override, parse_scenario};

const SCENARIO: &str = r#"
name = "agreement"
[run]
duration = "10m"
seed = 7
time_scale = 30.0
sample_every = "10s"
[server]
kind = "gcra"
limit = 600
period = "10m"
initial = 100
latency = "20ms"
[[clients]]
name = "workers"
processes = 2
threads = 3
algorithm = "schneems"
initial_sleep = "2s"
max_limit = 600
"#;

/// Absolute tolerances. Across 20 sim seeds ratio_429 averages 0.063 (0.054–0.074) and
/// utilization 0.992 (0.959–0.999). Eight live runs measured ratio_429 0.058–0.084 (mean
/// 0.070, standard deviation about 0.010: real timing adds its own noise) and utilization
/// 0.953–0.999. The tolerances sit about three standard deviations out, so a run fails for a
/// real disagreement (a lost answer, a clock off by the scale), not for bad luck.
const RATIO_429_TOLERANCE: f64 = 0.04;
const UTILIZATION_TOLERANCE: f64 = 0.06;

#[test]
fn live_ratio_429_and_utilization_agree_with_the_sim() {
    let (ratio, util) = sim_means(SCENARIO, &[], 20);

    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("agreement.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let (live, wall) = run_live(&file, &[], &tmp.path().join("live"));
    let live_ratio = live["ratio_429"].as_f64().unwrap();
    let live_util = live["utilization"].as_f64().unwrap();
    eprintln!(
        "agreement: ratio_429 sim {ratio:.4} live {live_ratio:.4} (gap {:+.4}); utilization sim {util:.4} live {live_util:.4} (gap {:+.4}); live wall {:.1} s",
        live_ratio - ratio,
        live_util - util,
        wall.as_secs_f64()
    );
    assert!(
        (live_ratio - ratio).abs() <= RATIO_429_TOLERANCE,
        "ratio_429: live {live_ratio} vs sim {ratio}"
    );
    assert!(
        (live_util - util).abs() <= UTILIZATION_TOLERANCE,
        "utilization: live {live_util} vs sim {util}"
    );
    // The sanity of the comparison itself: the scenario does meet its limit.
    assert!(ratio > 0.01 && util > 0.9, "sim {ratio} {util}");
}

/// Run `file` live with `sets`, waiting at most 90 s of wall time; its summary.json and the
/// wall time it took.
fn run_live(file: &Path, sets: &[&str], out: &Path) -> (serde_json::Value, Duration) {
    let started = Instant::now();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("throttle-sim"));
    cmd.arg("run")
        .arg(file)
        .args(["--mode", "live", "--quiet", "--out"])
        .arg(out);
    for set in sets {
        cmd.args(["--set", set]);
    }
    let mut child = cmd.stdout(Stdio::null()).spawn().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("the live run did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (summary, started.elapsed())
}

/// The sim's mean ratio_429 and utilization over seeds `0..seeds` of `text` with `sets`.
fn sim_means(text: &str, sets: &[&str], seeds: u64) -> (f64, f64) {
    let overrides: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let (mut ratio, mut util) = (0.0, 0.0);
    for seed in 0..seeds {
        let mut s = parse_scenario(text, "scenario.toml", "scenario", &overrides, 0).unwrap();
        s.run.seed = Some(seed);
        let sum = summarize(&s);
        ratio += sum.metrics.ratio_429 / seeds as f64;
        util += sum.metrics.utilization / seeds as f64;
    }
    (ratio, util)
}

/// fair-share, the algorithm this project recommends, must behave live as it does in the sim:
/// seed 002's heroku_5x5 (5 processes × 5 threads on 4500/h) switched to fair-share, 40 minutes
/// of its time at 60× (40 s of wall time), within 0.5 percentage points of 429s and 0.03 of
/// utilization of the sim's mean over 10 seeds (issue 10's tolerance). fair-share steers by
/// rate, not by the exact instant of each answer, so the millisecond rounding of real timers at
/// 60× (1 ms real = 60 ms virtual) moves it little; the sim draws no 429 on any seed.
#[test]
fn fair_share_live_at_60x_agrees_with_the_sim() {
    let sets = [
        "clients.*.algorithm=fair-share",
        "run.duration=40m",
        "run.time_scale=60",
    ];
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/heroku_5x5.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (ratio, util) = sim_means(&text, &sets, 10);
    let tmp = tempfile::tempdir().unwrap();
    let (live, wall) = run_live(&path, &sets, &tmp.path().join("live"));
    let live_ratio = live["ratio_429"].as_f64().unwrap();
    let live_util = live["utilization"].as_f64().unwrap();
    eprintln!(
        "fair-share agreement: ratio_429 sim {ratio:.4} live {live_ratio:.4}; utilization sim {util:.4} live {live_util:.4}; live wall {:.1} s",
        wall.as_secs_f64()
    );
    assert!(
        (live_ratio - ratio).abs() <= 0.005,
        "ratio_429: live {live_ratio} vs sim {ratio}"
    );
    assert!(
        (live_util - util).abs() <= 0.03,
        "utilization: live {live_util} vs sim {util}"
    );
    // The comparison means something: the sim itself is near the targets of the gauntlet.
    assert!(ratio <= 0.001 && util >= 0.97, "sim {ratio} {util}");
}
