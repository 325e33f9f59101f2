//! The defects that need a real process (a signal, a port, a served request): nothing a
//! user types fills the disk, hangs the tool or passes a failure off as success. The bad
//! inputs that only need an exit code and a message are rows of tests/sim/bad_input.rs.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use common::{Running, exe, summary};

/// One thread that sends once an hour, sampled every millisecond: between two of its events
/// the engine writes 3.6 million ticks, so an interrupt checked only every so many events
/// would wait for the end of the run.
const HOURLY: &str = r#"
name = "hourly"
[run]
duration = "100h"
sample_every = "1ms"
seed = 1
[server]
limit = 100
[[clients]]
name = "a"
algorithm = "fixed"
sleep = "1h"
"#;

#[test]
fn ctrl_c_is_honoured_between_events_while_ticks_are_written() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("hourly.toml");
    std::fs::write(&file, HOURLY).unwrap();
    let out = tmp.path().join("r");
    let child = Command::new(exe())
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-charts", "--allow-large-output", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut run = Running(child);
    let series = out.join("series.csv");
    let started = Instant::now();
    while std::fs::metadata(&series).map_or(0, |m| m.len()) < 100_000 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no rows written"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    run.signal(Signal::SIGINT);
    let signalled = Instant::now();
    // Within ~100 ms on an idle machine; a loaded CI machine gets more.
    assert_eq!(run.wait(Duration::from_secs(3)), Some(130));
    let took = signalled.elapsed();
    let s = summary(&out);
    assert_eq!(s["partial"], true, "{took:?}");
    assert!(s["duration_s"].as_f64().unwrap() < 100.0 * 3600.0);
}

/// `serve` on `addr`; its stdout and stderr are piped.
fn spawn_serve(addr: &str, extra: &[&str]) -> Running {
    Running(
        Command::new(exe())
            .args(["serve", "--addr", addr])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// The exit code and stderr of a process that should end by itself within `limit`.
fn finish(mut run: Running, limit: Duration) -> (Option<i32>, String) {
    let code = run.wait(limit);
    let mut err = String::new();
    std::io::Read::read_to_string(run.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    (code, err)
}

#[test]
fn a_second_serve_on_a_busy_port_is_refused() {
    // Another serve: with SO_REUSEPORT the second one used to co-bind and double the limit.
    let (_first, addr) = common::serve(&["--limit", "3"]);
    let (code, err) = finish(spawn_serve(&addr, &[]), Duration::from_secs(10));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("--addr {addr}")), "{err}");
    assert!(err.contains("already in use"), "{err}");
    // Any other program's listener too.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = other.local_addr().unwrap().to_string();
    let (code, err) = finish(spawn_serve(&addr, &[]), Duration::from_secs(10));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("already in use"), "{err}");
}

#[test]
fn serve_shows_tokens_by_fingerprint_only() {
    let (server, addr) = {
        // As common::serve, but keeping stderr for the Ctrl-C summary.
        let mut run = spawn_serve("127.0.0.1:0", &["--limit", "3"]);
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(run.0.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let addr = line.split("http://").nth(1).unwrap().split('/').next();
        let addr = addr.unwrap().to_string();
        (run, addr)
    };
    let secret = "Bearer s3cr3t-Token";
    let (status, _) = common::http_get(
        &addr,
        "/",
        &format!("Authorization: {secret}\r\n"),
        Duration::from_secs(5),
    );
    assert_eq!(status, 200);
    let (_, stats) = common::http_get(&addr, "/_stats", "", Duration::from_secs(5));
    let fp = throttle_sim::fingerprint::fingerprint(secret);
    assert!(stats.contains(&format!("\"{fp}\"")), "{stats}");
    assert!(!stats.contains("s3cr3t"), "{stats}");
    server.signal(Signal::SIGINT);
    let (code, err) = finish(server, Duration::from_secs(10));
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(&format!("key {fp}: 1 requests")), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
}

const OVERLOAD: &str = r#"
name = "overload"
[run]
mode = "live"
duration = "30m"
time_scale = 2000.0
seed = 1
[server]
limit = 3600
period = "1h"
[[clients]]
name = "flood"
algorithm = "none"
processes = 2
threads = 300
"#;

/// 600 unthrottled threads at 2000×: the in-process server falls behind and admits the
/// last requests sent before the end a few hundred virtual seconds after it, with tokens that
/// refilled meanwhile. Counted against the planned 30 minutes alone, utilization came out
/// near 1.1 (1.096 at 100,000 threads).
#[test]
fn utilization_never_exceeds_one_under_overload() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    let scenario = tmp.path().join("overload.toml");
    std::fs::write(&scenario, OVERLOAD).unwrap();
    let mut run = Running(
        Command::new(exe())
            .arg("run")
            .arg(&scenario)
            .args(["--quiet", "--no-charts", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(run.wait(Duration::from_secs(60)), Some(0));
    let s = summary(&out);
    let (ok, capacity) = (s["ok"].as_f64().unwrap(), s["capacity"].as_f64().unwrap());
    let utilization = s["utilization"].as_f64().unwrap();
    assert!(utilization <= 1.0 + 1e-9, "{s}");
    assert!(ok <= capacity + 1e-9, "{s}");
    // The bucket was used: the check above is not met by an idle run.
    assert!(utilization > 0.5, "{s}");
}

/// `client` for half a second against `target` with requests.csv: the exit code and the
/// `error` column of every row.
fn client_errors(target: &str, extra: &[&str]) -> (Option<i32>, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mut run = Running(
        Command::new(exe())
            .args(["client", "--target", target, "--algorithm", "fixed"])
            .args(["--set", "clients.*.sleep=50ms", "--duration", "500ms"])
            .args(["--log-requests", "--quiet", "--out"])
            .arg(&out)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let code = run.wait(Duration::from_secs(30));
    let mut rdr = csv::Reader::from_path(out.join("requests.csv")).unwrap();
    assert_eq!(rdr.headers().unwrap().get(9), Some("error"));
    let errors = rdr.records().map(|r| r.unwrap()[9].to_string()).collect();
    (code, errors)
}

/// A loopback listener answering each connection with `answer` (or nothing, held open).
fn fake_server(answer: Option<&'static str>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut conn in listener.incoming().flatten() {
            match answer {
                Some(a) => {
                    let mut buf = [0u8; 1024];
                    let _ = std::io::Read::read(&mut conn, &mut buf);
                    let _ = std::io::Write::write_all(&mut conn, a.as_bytes());
                }
                None => held.push(conn),
            }
        }
    });
    format!("http://{addr}/")
}

#[test]
fn requests_csv_says_which_error() {
    // (A target nothing listens on is refused before the run: see
    // hostile::a_target_that_takes_no_connection_is_named_before_the_run.)
    // An answer that is an error status.
    let bad_gateway = fake_server(Some(
        "HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
    ));
    let (code, errors) = client_errors(&bad_gateway, &[]);
    assert_eq!(code, Some(4), "every request failed");
    assert!(
        !errors.is_empty() && errors.iter().all(|e| e == "http_502"),
        "{errors:?}"
    );
    // No answer in time.
    let silent = fake_server(None);
    let (_, errors) = client_errors(&silent, &["--timeout", "100ms"]);
    assert!(
        !errors.is_empty() && errors.iter().all(|e| e == "timed_out"),
        "{errors:?}"
    );
    // Not HTTP.
    let garbage = fake_server(Some("SSH-2.0-OpenSSH\r\n"));
    let (_, errors) = client_errors(&garbage, &[]);
    assert!(
        !errors.is_empty() && errors.iter().all(|e| e == "malformed"),
        "{errors:?}"
    );
}

/// Without Redis the Redis tests used to return early and report "ok":
/// every test of tests/live/redis.rs that asks for a Redis is `#[ignore]`d with the reason, so
/// `cargo test`'s own summary counts it as ignored, and .ci/run runs them on purpose.
#[test]
fn tests_that_need_redis_show_as_ignored() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/live/redis.rs")).unwrap();
    let mut needing = 0;
    for test in text.split("#[test]").skip(1) {
        // The test's attributes and body, up to the next test.
        let name = test.split("fn ").nth(1).and_then(|r| r.split('(').next());
        let asks = test.contains("= redis() else") || test.contains("= own_redis() else");
        if asks {
            needing += 1;
            assert!(
                test.trim_start()
                    .starts_with("#[ignore = \"needs redis-server"),
                "{name:?} needs Redis but is not #[ignore]d with the reason"
            );
        }
    }
    assert!(needing >= 9, "{needing}");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    assert!(ci.contains("cargo test --locked\n"), "README's command");
    assert!(
        ci.contains("--test live -- --ignored redis::"),
        "CI runs them"
    );
}
