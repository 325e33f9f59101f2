//! Live mode end to end over loopback: the `serve` command, live runs and their outputs, and
//! the faults that must lose nothing. Every wait here has a deadline; the tests in this file
//! run one at a time so their timing does not depend on each other.

#![cfg(unix)]

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::common;
use common::{Running, exe, kill, serve, summary};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// One HTTP/1.1 exchange on a fresh connection: the status line and the raw head.
fn get(addr: &str, target: &str, extra: &str) -> (u16, String) {
    common::http_get(addr, target, extra, Duration::from_secs(5))
}

/// Series rows, and the requests they add up to.
fn series(dir: &Path) -> (Vec<String>, usize, u64) {
    let mut rdr = csv::Reader::from_path(dir.join("series.csv")).unwrap();
    let header = rdr.headers().unwrap().iter().map(String::from).collect();
    let (mut rows, mut requests) = (0, 0);
    for row in rdr.records() {
        requests += row.unwrap()[5].parse::<u64>().unwrap();
        rows += 1;
    }
    (header, rows, requests)
}

fn write_scenario(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("s.toml");
    fs::write(&path, text).unwrap();
    path
}

const SMALL: &str = r#"
name = "small"
[run]
duration = "20s"
seed = 5
time_scale = 10.0
sample_every = "2s"
[server]
kind = "gcra"
limit = 60
period = "1m"
initial = 10
latency = "20ms"
[[clients]]
name = "a"
processes = 2
threads = 2
algorithm = "schneems"
initial_sleep = "1s"
max_limit = 60
[[clients]]
name = "b"
threads = 1
algorithm = "none"
start = "4s"
stop = "12s"
key = "other"
"#;

#[test]
fn serve_sends_every_rate_limit_header_and_keys_by_authorization_or_query() {
    let _one = serial();
    let (mut server, addr) = serve(&["--limit", "2", "--period", "1m"]);
    let (s1, h1) = get(&addr, "/anything", "");
    let (s2, _) = get(&addr, "/", "");
    let (s3, h3) = get(&addr, "/", "");
    assert_eq!((s1, s2, s3), (200, 200, 429));
    assert!(h1.contains("ratelimit-limit: 2\r\n"), "{h1}");
    assert!(h1.contains("ratelimit-remaining: 1\r\n"), "{h1}");
    assert!(
        h1.contains("ratelimit-policy: \"default\";q=2;w=60\r\n"),
        "{h1}"
    );
    // t: the seconds until the key has earned back the one request it used.
    assert!(h1.contains("ratelimit: \"default\";r=1;t=30\r\n"), "{h1}");
    // One token every 30 s: the refusal says when to come back, in whole seconds up.
    assert!(h3.contains("retry-after: 30\r\n"), "{h3}");
    assert!(h3.contains("retry-after-ms: "), "{h3}");
    // Other keys have their own buckets.
    assert_eq!(get(&addr, "/", "Authorization: Bearer b\r\n").0, 200);
    assert_eq!(get(&addr, "/?key=c", "").0, 200);
    let (status, stats) = get(&addr, "/_stats", "");
    assert_eq!(status, 200);
    let body = &stats[stats.find("\r\n\r\n").unwrap() + 4..];
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["keys"]["default"]["requests"], 3);
    assert_eq!(v["keys"]["default"]["limited"], 1);
    // Tokens are shown by fingerprint, never as sent.
    let fp = throttle_sim::fingerprint::fingerprint;
    assert_eq!(v["keys"][fp("Bearer b")]["ok"], 1, "{v}");
    assert_eq!(v["keys"][fp("c")]["ok"], 1, "{v}");
    assert!(!body.contains("bearer b"), "{body}");
    // SIGTERM shuts it down cleanly.
    server.signal(Signal::SIGTERM);
    assert_eq!(server.wait(Duration::from_secs(10)), Some(0));
}

#[test]
fn serve_takes_its_rule_from_a_scenario_with_flags_winning() {
    let _one = serial();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/fast_slow.toml");
    let (_server, addr) = serve(&[
        "--scenario",
        file.to_str().unwrap(),
        "--latency",
        "0s",
        "--initial",
        "2",
    ]);
    // fast_slow's 4500 per hour, with the bucket's start overridden to 2 tokens.
    let (status, head) = get(&addr, "/", "");
    assert_eq!(status, 200);
    assert!(head.contains("ratelimit-limit: 4500\r\n"), "{head}");
    assert!(head.contains("ratelimit-remaining: 1\r\n"), "{head}");
    assert!(
        head.contains("ratelimit-policy: \"default\";q=4500;w=3600\r\n"),
        "{head}"
    );
    let out = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0", "--scenario"])
        .arg(&file)
        .args(["--set", "server.limit=-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("server.limit"), "{err}");
}

/// A leaky bucket without `nodelay` holds an admitted answer for its delay, in real time
/// scaled as every other wait of the server, and holds no lock meanwhile: the server answers
/// other requests while one is held.
#[test]
fn serve_holds_a_delayed_answer_for_its_scaled_delay_without_blocking_others() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let file = write_scenario(
        tmp.path(),
        "name = \"nginx\"\n[run]\nduration = \"1m\"\ntime_scale = 4.0\n\
         [server]\nkind = \"leaky-bucket\"\nrate = \"1r/s\"\nburst = 3\nheaders = \"none\"\n\
         [[clients]]\nname = \"c\"\nalgorithm = \"none\"\n",
    );
    let (_server, addr) = serve(&["--scenario", file.to_str().unwrap(), "--latency", "0s"]);
    let timed = |target: &str| {
        let start = Instant::now();
        let (status, head) = get(&addr, target, "");
        (status, head, start.elapsed())
    };
    // A fresh key stores 0: answered at once, and nginx sends no rate-limit header.
    let (status, head, took) = timed("/");
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(200), "{took:?}");
    assert!(!head.to_ascii_lowercase().contains("ratelimit"), "{head}");
    // The next is a whole request beyond the rate: held about 1 s of virtual time, 250 ms real.
    let held = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let (status, _) = get(&addr, "/", "");
            (status, start.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    // Meanwhile another key is answered at once.
    let (status, _, took) = timed("/?key=other");
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(150), "{took:?}");
    let (status, took) = held.join().unwrap();
    assert_eq!(status, 200);
    assert!(
        (Duration::from_millis(200)..Duration::from_millis(1500)).contains(&took),
        "{took:?}"
    );
}

#[test]
fn serve_survives_malformed_http_and_silent_connections() {
    let _one = serial();
    let (_server, addr) = serve(&[
        "--limit",
        "1000",
        "--period",
        "1s",
        "--header-timeout",
        "1s",
    ]);
    // Connections that say nothing at all.
    let silent: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // Garbage instead of HTTP gets a 400 or a closed connection, never a crash.
    let mut bad = TcpStream::connect(&addr).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    bad.write_all(b"HELLO THERE\r\n\x00\x01\x02\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = bad.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 400"),
        "{answer}"
    );
    // A half-sent request, then silence.
    let mut half = TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    // Meanwhile others are answered promptly.
    let started = Instant::now();
    for _ in 0..20 {
        assert_eq!(get(&addr, "/", "").0, 200);
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The silent ones are closed once the header timeout passes.
    for mut s in silent.into_iter().take(5).chain([half]) {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 512];
        let closed = match s.read(&mut buf) {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        assert!(
            closed,
            "a silent connection was kept open past the header timeout"
        );
    }
    assert_eq!(get(&addr, "/", "").0, 200);
}

#[test]
fn serve_holds_5000_connections_and_keeps_answering() {
    let _one = serial();
    throttle_sim::engine::live::raise_fd_limit();
    let (_server, addr) = serve(&["--limit", "1000000000", "--period", "1s"]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let mut open = Vec::with_capacity(5000);
        // In batches, so the listen backlog is not what is being tested.
        for _ in 0..10 {
            let mut batch = tokio::task::JoinSet::new();
            for _ in 0..500 {
                let (addr, request) = (addr.clone(), request.clone());
                batch.spawn(async move {
                    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
                    s.write_all(request.as_bytes()).await.unwrap();
                    let mut buf = [0u8; 512];
                    let n = s.read(&mut buf).await.unwrap();
                    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
                    s
                });
            }
            let done = tokio::time::timeout(Duration::from_secs(30), async {
                let mut v = Vec::new();
                while let Some(s) = batch.join_next().await {
                    v.push(s.unwrap());
                }
                v
            })
            .await
            .expect("a batch of 500 connections is answered within 30 s");
            open.extend(done);
        }
        assert_eq!(open.len(), 5000);
        // All 5,000 are still open (keep-alive); a newcomer is answered at once.
        let started = Instant::now();
        let addr2 = addr.clone();
        let (status, _) = tokio::task::spawn_blocking(move || get(&addr2, "/", ""))
            .await
            .unwrap();
        assert_eq!(status, 200);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        let addr3 = addr.clone();
        let (_, stats) = tokio::task::spawn_blocking(move || get(&addr3, "/_stats", ""))
            .await
            .unwrap();
        let body = &stats[stats.find("\r\n\r\n").unwrap() + 4..];
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(v["connections"].as_u64().unwrap() >= 5001, "{v}");
        drop(open);
    });
}

#[test]
fn a_live_run_writes_exactly_the_files_of_a_sim_run() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let file = write_scenario(tmp.path(), SMALL);
    let (sim, live) = (tmp.path().join("sim"), tmp.path().join("live"));
    for (dir, mode) in [(&sim, "sim"), (&live, "live")] {
        let mut run = Running(
            Command::new(exe())
                .arg("run")
                .arg(&file)
                .args(["--quiet", "--log-requests", "--mode", mode, "--out"])
                .arg(dir)
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        assert_eq!(run.wait(Duration::from_secs(60)), Some(0), "{mode} run");
    }
    let names = |d: &Path| {
        let mut v: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&sim), names(&live));
    let (s, l) = (summary(&sim), summary(&live));
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&s), keys(&l));
    assert_eq!(keys(&s["groups"][0]), keys(&l["groups"][0]));
    assert_eq!(l["mode"], "live");
    assert_eq!(l["partial"], false);
    assert_eq!(l["duration_s"], 20.0);
    assert!(l["ok"].as_u64().unwrap() > 10, "{l}");
    // The group on its own key only ran from 4 s to 12 s, unthrottled: it was refused.
    assert!(l["groups"][1]["limited"].as_u64().unwrap() > 0, "{l}");
    let (sh, srows, _) = series(&sim);
    let (lh, lrows, lreq) = series(&live);
    assert_eq!(sh, lh);
    assert_eq!(srows, lrows, "one row per thread per tick in both modes");
    assert_eq!(lreq, l["requests"].as_u64().unwrap());
    let logged = fs::read_to_string(live.join("requests.csv")).unwrap();
    assert_eq!(
        logged.lines().next(),
        fs::read_to_string(sim.join("requests.csv"))
            .unwrap()
            .lines()
            .next()
    );
    assert_eq!(logged.lines().count() as u64 - 1, lreq);
}

/// Pids whose parent is `pid` (Linux /proc).
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the command name in parentheses: state, ppid, ...
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        if after.split_whitespace().nth(1) == Some(&pid.to_string()) {
            out.push(child);
        }
    }
    out
}

/// A live run of SMALL, in real time, for `duration` (group b only for a second).
#[cfg(target_os = "linux")]
fn start_live(dir: &Path, duration: &str) -> Running {
    let file = write_scenario(dir, SMALL);
    Running(
        Command::new(exe())
            .arg("run")
            .arg(&file)
            .args([
                "--quiet",
                "--mode",
                "live",
                "--duration",
                duration,
                "--set",
                "run.time_scale=1.0",
                "--set",
                "clients.b.start=1s",
                "--set",
                "clients.b.stop=2s",
                "--out",
            ])
            .arg(dir.join("r"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[cfg(target_os = "linux")]
fn wait_for_workers(parent: u32, n: usize) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let kids = children(parent);
        if kids.len() >= n {
            return kids;
        }
        assert!(Instant::now() < deadline, "workers did not appear");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A SIGSTOPped worker once made a 6 s run wait 50 s for it and was then reported as
/// "killed by signal 9", as if something else had killed it.
#[cfg(target_os = "linux")]
#[test]
fn a_stopped_worker_is_named_as_stopped_and_not_waited_for() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut run = start_live(tmp.path(), "6s");
    let workers = wait_for_workers(run.pid(), 3);
    std::thread::sleep(Duration::from_millis(2500));
    let victim = *workers.iter().min().unwrap();
    kill(victim, Signal::SIGSTOP);
    assert_eq!(run.wait(Duration::from_secs(30)), Some(3));
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let s = summary(&tmp.path().join("r"));
    let dead = s["dead_workers"].as_array().expect("dead_workers listed");
    assert_eq!(dead.len(), 1, "{s}");
    assert_eq!(dead[0]["pid"], victim);
    let reason = dead[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("stopped answering") && reason.ends_with("and was killed"),
        "{reason}"
    );
    // The victim is gone, not left stopped.
    assert!(!Path::new(&format!("/proc/{victim}")).exists());
}

#[cfg(target_os = "linux")]
#[test]
fn a_dead_worker_is_named_in_the_summary_and_its_samples_are_kept() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_live(tmp.path(), "6s");
    let workers = wait_for_workers(run.pid(), 3);
    std::thread::sleep(Duration::from_millis(2500));
    // Kill the first worker started: group a, process 0.
    let victim = *workers.iter().min().unwrap();
    kill(victim, Signal::SIGKILL);
    // The run finishes, and says it lost a worker (exit 3).
    assert_eq!(run.wait(Duration::from_secs(40)), Some(3));
    let out = tmp.path().join("r");
    let s = summary(&out);
    assert_eq!(s["partial"], false);
    assert_eq!(s["duration_s"], 6.0);
    let dead = s["dead_workers"].as_array().expect("dead_workers listed");
    assert_eq!(dead.len(), 1, "{s}");
    assert_eq!(dead[0]["group"], "a");
    assert_eq!(dead[0]["process"], 0);
    assert_eq!(dead[0]["pid"], victim);
    assert_eq!(dead[0]["reason"], "killed by signal 9");
    let at = dead[0]["at_s"].as_f64().unwrap();
    assert!((1.5..5.0).contains(&at), "died at {at}");
    // What it did before it died is kept, and the others ran to the end.
    assert!(s["processes"][0]["requests"].as_u64().unwrap() > 0, "{s}");
    assert!(
        s["processes"][1]["requests"].as_u64().unwrap()
            > s["processes"][0]["requests"].as_u64().unwrap()
    );
    let (_, _, requests) = series(&out);
    assert_eq!(requests, s["requests"].as_u64().unwrap());
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_in_a_live_run_leaves_flushed_csv_and_a_partial_summary() {
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_live(tmp.path(), "1h");
    wait_for_workers(run.pid(), 3);
    std::thread::sleep(Duration::from_millis(2500));
    run.signal(Signal::SIGINT);
    assert_eq!(run.wait(Duration::from_secs(30)), Some(130));
    let out = tmp.path().join("r");
    let s = summary(&out);
    assert_eq!(s["partial"], true);
    assert_eq!(s["partial_reason"], "interrupted");
    let covered = s["duration_s"].as_f64().unwrap();
    assert!((1.0..20.0).contains(&covered), "covered {covered} s");
    assert!(
        s.get("dead_workers").is_none(),
        "workers stopped cleanly: {s}"
    );
    let (_, rows, requests) = series(&out);
    assert!(rows > 0);
    assert_eq!(requests, s["requests"].as_u64().unwrap());
    // Every worker exited with the parent.
    assert!(children(run.pid()).is_empty());
}

#[test]
fn the_client_runs_against_any_endpoint_with_its_headers() {
    let _one = serial();
    let (_server, addr) = serve(&["--limit", "5", "--period", "1m"]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mut client = Running(
        Command::new(exe())
            .args(["client", "--target"])
            .arg(format!("http://{addr}/api"))
            .args([
                "--algorithm",
                "none",
                "--threads",
                "2",
                "--duration",
                "1s",
                "--header",
                "Authorization: token-a",
                "--quiet",
                "--out",
            ])
            .arg(&out)
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(client.wait(Duration::from_secs(30)), Some(0));
    let s = summary(&out);
    assert_eq!(s["mode"], "live");
    // Five tokens, then 429s; the server counted them under the header's key.
    assert_eq!(s["ok"], 5, "{s}");
    assert!(s["limited"].as_u64().unwrap() > 5);
    let (_, stats) = get(&addr, "/_stats", "");
    let fp = throttle_sim::fingerprint::fingerprint("token-a");
    assert!(stats.contains(&format!("\"{fp}\"")), "{stats}");
    assert!(!stats.contains("token-a"), "{stats}");
    let (_, _, requests) = series(&out);
    assert_eq!(requests, s["requests"].as_u64().unwrap());
}

#[test]
fn bad_client_flags_are_named() {
    let out = Command::new(exe())
        .args([
            "client",
            "--target",
            "ftp://api.example.test/",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected an http:// or https://"));
    let out = Command::new(exe())
        .args([
            "client",
            "--target",
            "http://127.0.0.1:1/",
            "--algorithm",
            "magic",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--algorithm magic: unknown algorithm, expected one of: schneems"),
        "{err}"
    );
}
