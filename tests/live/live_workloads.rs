//! Live mode keeps the workloads and stop rules of the sim: a pool shared by a
//! process's threads gives exactly its size in 2xx, and a stop rule ends a thread on the
//! server's `RateLimit-Remaining`, over real HTTP.

#![cfg(unix)]

use std::fs;
use std::process::Command;

use crate::common;
use common::exe;

#[test]
fn a_pool_and_a_stop_rule_end_a_live_run_as_in_the_sim() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.toml");
    // 1000 tokens that never come back. `q`: 3 threads share 10 jobs: exactly 10 requests,
    // all 2xx. `drain` (its own key): stops once told 995 or fewer are left, i.e. after its
    // 5th request (999, 998, 997, 996, 995).
    fs::write(
        &path,
        r#"
name = "live_workloads"
[run]
duration = "20s"
mode = "live"
time_scale = 10.0
seed = 3
[server]
limit = 1000
period = "1s"
refill = false
latency = "20ms"
[[clients]]
name = "q"
threads = 3
pool = 10
algorithm = "fixed"
sleep = "100ms"
[[clients]]
name = "drain"
key = "other"
stop_when_remaining_at_most = 995
algorithm = "fixed"
sleep = "100ms"
"#,
    )
    .unwrap();
    let out = tmp.path().join("out");
    let status = Command::new(exe())
        .arg("run")
        .arg(&path)
        .args(["--quiet", "--no-charts", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let s: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let g = |i: usize, m: &str| s["groups"][i][m].as_u64().unwrap();
    assert_eq!((g(0, "requests"), g(0, "ok")), (10, 10));
    assert_eq!((g(1, "requests"), g(1, "ok")), (5, 5));
    assert!(s["time_to_clear"].as_f64().unwrap() < 20.0, "{s}");
}
