//! Every client algorithm runs in live mode too: real worker processes, real HTTP, the same
//! throttle code as the sim. One live run with one group per algorithm, each on its own key.

#![cfg(unix)]

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use throttle_sim::throttle::ThrottleConfig;

#[test]
fn every_algorithm_gets_answers_in_a_live_run() {
    let mut text = String::from(
        r#"
name = "all_algorithms_live"
[run]
duration = "60s"
seed = 3
mode = "live"
time_scale = 20.0
sample_every = "10s"
[server]
kind = "gcra"
limit = 600
period = "1m"
latency = "5ms"
"#,
    );
    for name in ThrottleConfig::NAMES {
        text.push_str(&format!(
            "\n[[clients]]\nname = \"{name}\"\nthreads = 2\nalgorithm = \"{name}\"\nkey = \"{name}\"\n"
        ));
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("all.toml");
    fs::write(&file, text).unwrap();
    let out = tmp.path().join("r");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin!("throttle-sim"))
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-charts", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the live run did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    let s: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["mode"], "live");
    for g in s["groups"].as_array().unwrap() {
        let ok = g["ok"].as_u64().unwrap();
        assert!(ok > 0, "{} got no 2xx in a live run: {g}", g["name"]);
    }
    assert_eq!(
        s["groups"].as_array().unwrap().len(),
        ThrottleConfig::NAMES.len()
    );
}
