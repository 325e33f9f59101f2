//! `serve --record` measured from outside: a real `serve` process on loopback at a time scale,
//! clients that throttle-sim did not write (raw HTTP here, the Python example client in
//! `examples/`), a stop by SIGTERM or `--duration`, and the run folder it leaves, put next to
//! a sim run with `compare --runs`.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{exe, http_get, json, serve_recording, summary};
use nix::sys::signal::Signal;

/// The rows of a CSV file as maps from column to value.
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    r.records()
        .map(|row| {
            let row = row.unwrap();
            header
                .iter()
                .cloned()
                .zip(row.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The sum of a column of series.csv.
fn series_sum(dir: &Path, column: &str) -> u64 {
    csv_rows(&dir.join("series.csv"))
        .iter()
        .map(|r| r[column].parse::<u64>().unwrap())
        .sum()
}

#[test]
fn clients_are_told_apart_by_header_key_and_peer_and_counted_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    // 5 requests per virtual hour with 5 to start, at 60x: no token comes back within the
    // test (one takes 12 s), and --duration stops serving after 5 real seconds.
    let (mut serve, addr, out) = serve_recording(&[
        "--limit",
        "5",
        "--period",
        "1h",
        "--time-scale",
        "60",
        "--duration",
        "5m",
        "--sample-every",
        "10s",
        "--record",
        rec.to_str().unwrap(),
    ]);
    let get = |extra: &str| http_get(&addr, "/", extra, Duration::from_secs(5)).0;
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(get("X-Client-Id: web/proc-1/thread-0\r\n"));
    }
    for _ in 0..2 {
        statuses.push(get("X-Client-Id: lonely\r\n"));
    }
    // Without the header: the key (another bucket), then the peer address.
    statuses.push(get("Authorization: Bearer other-token\r\n"));
    statuses.push(get(""));
    let ok = statuses.iter().filter(|&&s| s == 200).count() as u64;
    let limited = statuses.iter().filter(|&&s| s == 429).count() as u64;
    // Seven on the default key with five to start, one on a key of its own.
    assert_eq!((ok, limited), (6, 2), "{statuses:?}");

    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
    let printed = out.join().unwrap();
    assert!(
        printed.contains("recorded 8 requests of 4 clients"),
        "{printed}"
    );
    // A recording has no seed to show: its clients drew their own randomness.
    assert!(printed.contains("recorded by serve\n"), "{printed}");
    assert!(!printed.contains("seed"), "{printed}");
    let report = std::fs::read_to_string(rec.join("report.html")).unwrap();
    assert!(
        report.contains("recorded mode, 300 s, 4 clients,"),
        "no seed in the report's header"
    );
    assert!(!report.contains("(seed "), "no seed in the charts' titles");

    let s = summary(&rec);
    assert_eq!(s["mode"], "recorded");
    assert_eq!(s["requests"], 8);
    assert_eq!(s["ok"].as_u64(), Some(ok));
    assert_eq!(s["limited"].as_u64(), Some(limited));
    // --duration ends the recording at its time, not when serve noticed.
    assert_eq!(s["duration_s"], 300.0);
    let groups: Vec<&str> = s["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    // The client with a key of its own makes a group of its own (one key per group).
    assert_eq!(groups, ["web", "clients", "clients-key2"]);
    let clients = csv_rows(&rec.join("clients.csv"));
    let who: Vec<(&str, &str, &str)> = clients
        .iter()
        .map(|c| {
            (
                c["group"].as_str(),
                c["client"].as_str(),
                c["identified_by"].as_str(),
            )
        })
        .collect();
    assert_eq!(who.len(), 4, "{who:?}");
    assert_eq!(who[0], ("web", "proc-1/thread-0", "x-client-id"));
    assert!(
        who.contains(&("clients", "lonely", "x-client-id")),
        "{who:?}"
    );
    assert!(
        who.contains(&("clients", "peer:127.0.0.1", "peer")),
        "{who:?}"
    );
    let key = clients
        .iter()
        .find(|c| c["identified_by"] == "key")
        .unwrap();
    // Never the token itself.
    assert!(key["client"].starts_with("key:fnv:"), "{key:?}");
    assert!(
        !std::fs::read_to_string(rec.join("clients.csv"))
            .unwrap()
            .contains("other-token")
    );
    let web = &clients[0];
    assert_eq!(web["requests"], "4");
    // A gap before every request but each client's first: 3 of web's, 1 of lonely's.
    assert_eq!(s["gaps"]["count"], 4);
    assert_eq!(s["gaps"]["groups"][0]["name"], "web");
    assert_eq!(s["gaps"]["groups"][0]["count"], 3);
    // The rows add up to the summary, and the folder is a whole run folder.
    assert_eq!(series_sum(&rec, "requests"), 8);
    assert_eq!(series_sum(&rec, "limited"), limited);
    for f in [
        "scenario.toml",
        "summary.md",
        "report.html",
        "charts/sleep.svg",
    ] {
        assert!(rec.join(f).is_file(), "{f} missing");
    }
    assert!(!rec.join(".serve-record.journal").exists());
    // The key's own bucket counts in the capacity: two keys were used.
    let capacity = s["capacity"].as_f64().unwrap();
    assert!(capacity >= 10.0, "{capacity}");
}

/// The Python example client (standard library only) against `serve --record`, stopped by
/// SIGTERM, then next to a sim run of the same server in `compare --runs`.
#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test live serve_record"
)]
fn the_python_example_client_is_measured_and_compared_with_a_sim_run() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    // 60 per virtual minute at 20x: 20 requests a real second for the client's 3 threads.
    let (mut serve, addr, out) = serve_recording(&[
        "--limit",
        "60",
        "--period",
        "1m",
        "--time-scale",
        "20",
        "--sample-every",
        "5s",
        "--record",
        rec.to_str().unwrap(),
    ]);
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/python_client.py");
    let ran = Command::new("python3")
        .arg(&client)
        .args(["--url", &format!("http://{addr}/"), "--threads", "3"])
        .args(["--seconds", "3", "--group", "py"])
        .output()
        .unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let said: serde_json::Value =
        serde_json::from_slice(ran.stdout.trim_ascii()).unwrap_or_else(|e| panic!("{e}: {ran:?}"));
    assert_eq!(said["transport_errors"], 0, "{said}");
    assert!(said["requests"].as_u64().unwrap() > 20, "{said}");

    serve.signal(Signal::SIGTERM);
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
    let printed = out.join().unwrap();

    let s = summary(&rec);
    for field in ["requests", "ok", "limited", "errors"] {
        assert_eq!(s[field], said[field], "{field}: {printed}");
    }
    assert_eq!(
        series_sum(&rec, "requests"),
        said["requests"].as_u64().unwrap()
    );
    // Each thread waits for its answer before the next request: a gap before each but the first.
    assert_eq!(
        s["gaps"]["count"].as_u64(),
        Some(said["requests"].as_u64().unwrap() - 3)
    );
    assert!(
        printed.contains("observed gaps between a client's requests: p50"),
        "{printed}"
    );
    let processes = s["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 3, "{printed}");
    assert!(processes.iter().all(|p| p["group"] == "py"));
    let ids: Vec<String> = said["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().trim_start_matches("py/").to_string())
        .collect();
    let clients = csv_rows(&rec.join("clients.csv"));
    let recorded: Vec<String> = clients.iter().map(|c| c["client"].clone()).collect();
    assert_eq!(recorded, ids);
    let u = s["utilization"].as_f64().unwrap();
    assert!(u > 0.3 && u <= 1.05, "utilization {u}: {printed}");
    assert!(rec.join("report.html").is_file());
    assert!(printed.contains("recorded by serve"), "{printed}");

    // A sim run on the same server, then both side by side.
    let scenario = common::write(
        tmp.path(),
        "same.toml",
        "name = \"same\"\n[run]\nduration = \"60s\"\nseed = 1\nsample_every = \"5s\"\n\
         [server]\nlimit = 60\nperiod = \"1m\"\n[[clients]]\nname = \"sim\"\nthreads = 3\n\
         algorithm = \"fair-share\"\n",
    );
    let sim = tmp.path().join("sim");
    let st = Command::new(exe())
        .arg("run")
        .arg(&scenario)
        .args(["--quiet", "--out"])
        .arg(&sim)
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(0));
    let cmp = tmp.path().join("cmp");
    let shown = Command::new(exe())
        .args(["compare", "--runs"])
        .arg(&rec)
        .arg(&sim)
        .arg("--out")
        .arg(&cmp)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    assert!(
        text.contains("serve-recorded") && text.contains("same"),
        "{text}"
    );
    let c = json(&cmp.join("compare.json"));
    let names = common::variant_names(&c);
    // Runs of two modes are named with their mode, not numbered.
    assert_eq!(names, ["serve-recorded", "same-sim"]);
    // serve's own scenario is not `same`, and the recording's length is its own: said.
    let err = String::from_utf8_lossy(&shown.stderr);
    assert!(
        err.contains("warning: these runs are of different scenarios"),
        "{err}"
    );
    let recorded_ratio = c["variants"][0]["metrics"]["ratio_429"]["mean"].as_f64();
    assert_eq!(recorded_ratio, s["ratio_429"].as_f64());
    assert!(cmp.join("report.html").is_file());
    assert!(cmp.join("variants/01-serve-recorded/report.html").is_file());
}

/// throttle-sim's own `client` against `serve --record`: each of its threads names itself
/// (`GROUP/pP/tT`), so the recording has one client per thread and the counts add up to the
/// client's own.
/// throttle-sim's own client with no throttle (each thread sends as soon as its answer comes)
/// against `addr` for a second: two processes of `threads` threads, its run folder `out`.
fn flood(addr: &str, threads: u32, out: &Path) {
    let ran = Command::new(exe())
        .args(["client", "--target"])
        .arg(format!("http://{addr}/"))
        .args(["--algorithm", "none", "--processes", "2", "--threads"])
        .arg(threads.to_string())
        .args(["--duration", "1s", "--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ran.success(), "{ran:?}");
}

#[test]
fn throttle_sims_own_client_threads_are_told_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let out = tmp.path().join("client");
    let (mut serve, addr, _out) = serve_recording(&[
        "--limit",
        "20",
        "--period",
        "1h",
        "--time-scale",
        "60",
        "--duration",
        "5m",
        "--record",
        rec.to_str().unwrap(),
    ]);
    flood(&addr, 2, &out);
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));

    let sent = summary(&out)["requests"].as_u64().unwrap();
    let clients = csv_rows(&rec.join("clients.csv"));
    let mut names: Vec<&str> = clients.iter().map(|c| c["client"].as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(clients.len(), 4, "{clients:?}");
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(
        clients.iter().all(|c| c["identified_by"] == "x-client-id"),
        "{clients:?}"
    );
    let recorded: u64 = clients
        .iter()
        .map(|c| c["requests"].parse::<u64>().unwrap())
        .sum();
    assert_eq!(recorded, sent);
    assert_eq!(summary(&rec)["requests"].as_u64(), Some(sent));
}

/// A recording is in the order the rule decided: many threads at once against a window that
/// never resets within the test, and every recorded answer's count is one below the one
/// before it. (The recording once heard an answer after the lock the rule decides in was let
/// go, and two threads could be heard the other way round; `fit` then read a sliding window
/// whose 429s were free as one that might charge them.)
#[test]
fn the_recording_is_in_the_order_the_rule_decided() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let scenario = tmp.path().join("s.toml");
    std::fs::write(
        &scenario,
        "[server]\nkind = \"fixed-window\"\nlimit = 1000000\nwindow = \"1h\"\n\
         latency = \"0s\"\n[[clients]]\nname = \"x\"\n",
    )
    .unwrap();
    let (mut serve, addr, _out) = serve_recording(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--duration",
        "3s",
        "--log-requests",
        "--record",
        rec.to_str().unwrap(),
    ]);
    flood(&addr, 4, &tmp.path().join("client"));
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
    let rows = csv_rows(&rec.join("requests.csv"));
    assert!(rows.len() > 100, "only {} requests recorded", rows.len());
    let counts: Vec<u64> = rows
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "ok", "{r:?}");
            r["remaining"].parse().unwrap()
        })
        .collect();
    let out_of_order: Vec<(usize, u64, u64)> = counts
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[1] + 1 != w[0])
        .map(|(i, w)| (i + 1, w[0], w[1]))
        .collect();
    assert!(
        out_of_order.is_empty(),
        "{} of {} answers recorded out of the rule's order (row, count before, count): {:?}",
        out_of_order.len(),
        counts.len(),
        &out_of_order[..out_of_order.len().min(10)]
    );
}
