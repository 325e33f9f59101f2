//! `throttle-sim fit` on traces of a real server: `serve` on loopback, `client --log-requests`
//! sending faster than its limit, and the rule learned back from what the answers said.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Running, exe, serve};

/// `client` against `addr` for `seconds`, 2 threads each sending every 150 ms (± half).
fn record(addr: &str, out: &Path, seconds: &str) {
    let mut client = Running(
        Command::new(exe())
            .args(["client", "--target"])
            .arg(format!("http://{addr}/"))
            .args([
                "--algorithm",
                "fixed",
                "--threads",
                "2",
                "--duration",
                seconds,
            ])
            .args([
                "--set",
                "clients.*.sleep=150ms",
                "--set",
                "clients.*.jitter=0.5",
            ])
            .args(["--log-requests", "--quiet", "--out"])
            .arg(out)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(client.wait(Duration::from_secs(60)), Some(0));
}

fn fitted(dir: &Path) -> serde_json::Value {
    let out = Command::new(exe())
        .arg("fit")
        .arg(dir)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["fit"].clone()
}

#[test]
fn fit_learns_the_rule_of_a_served_bucket_and_a_served_fixed_window() {
    let tmp = tempfile::tempdir().unwrap();
    // A bucket of 20 refilled over 10 s of real time (2 per second), in the full dialect.
    let (_server, addr) = serve(&["--limit", "20", "--period", "10s"]);
    record(&addr, &tmp.path().join("bucket"), "20s");
    let f = fitted(&tmp.path().join("bucket"));
    assert_eq!(f["rule"]["rule"], "bucket", "{f}");
    assert_eq!(f["rule"]["size"], 20.0, "{f}");
    let period = f["rule"]["period"].as_f64().unwrap();
    assert!((period - 10.0).abs() <= 0.5, "{f}");
    assert!(tmp.path().join("bucket/fit.toml").is_file());

    // A fixed window of 10 per 2 s in GitHub's dialect, from a scenario's [server].
    let scenario = tmp.path().join("fw.toml");
    std::fs::write(
        &scenario,
        "[server]\nkind = \"fixed-window\"\nlimit = 10\nwindow = \"2s\"\nheaders = \"github\"\n\
         latency = \"0s\"\n[[clients]]\nname = \"x\"\n",
    )
    .unwrap();
    let (_server, addr) = serve(&["--scenario", scenario.to_str().unwrap()]);
    record(&addr, &tmp.path().join("window"), "20s");
    let f = fitted(&tmp.path().join("window"));
    assert_eq!(f["rule"]["rule"], "fixed-window", "{f}");
    assert_eq!(f["rule"]["limit"], 10.0, "{f}");
    assert_eq!(f["dialect"], "github", "{f}");
    let window = f["rule"]["window"].as_f64().unwrap();
    assert!((window - 2.0).abs() <= 0.1, "{f}");
}
