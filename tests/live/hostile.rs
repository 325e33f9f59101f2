//! `client` against a hostile server (`tests/common/hostile.rs`): answers no real API sends
//! but any server may, and targets that take no connection. Each case is a regression test
//! of a defect such a server once found: none may panic the client, hold what the server
//! sends, or hang the run.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::hostile::{Answer, Body, HostileServer};
use common::{Running, exe, summary};

/// `client --target url` with `args`, into `out`: the exit code and stderr.
fn client(url: &str, out: &Path, args: &[&str], limit: Duration) -> (Option<i32>, String) {
    let (mut child, reader) = spawn_client(url, out, args);
    let code = child.wait(limit);
    (code, reader.join().unwrap())
}

/// `client --target url --quiet --out out args…` started, and a thread reading its stderr
/// until it ends (so a full pipe never blocks it).
fn spawn_client(
    url: &str,
    out: &Path,
    args: &[&str],
) -> (Running, std::thread::JoinHandle<String>) {
    let mut child = Running(
        Command::new(exe())
            .args(["client", "--target", url, "--quiet", "--out"])
            .arg(out)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stderr = child.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    (child, reader)
}

/// A fixed 50 ms sleep for `duration`: requests without waiting for an algorithm's first
/// sleep.
const FIXED: [&str; 4] = ["--algorithm", "fixed", "--set", "clients.*.sleep=50ms"];

/// A target that dies mid-run kept the run going for its whole duration, 95 % of its
/// requests refused, and it exited 0. Once every request of the last 10 s failed to connect,
/// the run stops there, says so, and exits 4 as a run in which nothing worked.
#[test]
fn a_target_that_dies_mid_run_stops_the_run() {
    let server = HostileServer::always(Answer::status(200));
    let url = server.url();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let started = Instant::now();
    let run = {
        let out = out.clone();
        std::thread::spawn(move || {
            let mut args = FIXED.to_vec();
            args.extend(["--duration", "10m"]);
            client(&url, &out, &args, Duration::from_secs(90))
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    drop(server);
    let (code, err) = run.join().unwrap();
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("the target stopped taking connections"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    let s = summary(&out);
    assert_eq!(s["partial"], true, "{s}");
    assert!(
        s["target_lost"]
            .as_str()
            .unwrap()
            .contains("failed to connect")
    );
    assert!(s["ok"].as_u64().unwrap() >= 1, "{s}");
}

/// A `Content-Length` that is no number was said to be "malformed (not HTTP/1.1)", as if
/// the server spoke something else: the words name the status line or a header.
#[test]
fn a_bad_content_length_is_named_as_a_bad_header() {
    let server = HostileServer::always(Answer::status(200).header("content-length", "abc"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mut args = FIXED.to_vec();
    args.extend(["--duration", "300ms"]);
    let (code, err) = client(&server.url(), &out, &args, Duration::from_secs(30));
    assert_eq!(code, Some(4), "{err}");
    assert!(
        err.contains("malformed (an answer HTTP/1.1 cannot read: its status line or a header such as Content-Length)"),
        "{err}"
    );
    assert!(!err.contains("not HTTP/1.1"), "{err}");
}

/// Ctrl-C on a client whose requests were all in flight said "the run sent no requests":
/// they were sent, and abandoned unanswered.
#[test]
fn ctrl_c_with_requests_in_flight_does_not_say_none_were_sent() {
    use nix::sys::signal::Signal;
    let server = HostileServer::always(Answer::status(200).stalled());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let args = [&FIXED[..], &["--duration", "10m", "--timeout", "1h"]].concat();
    let (mut child, reader) = spawn_client(&server.url(), &out, &args);
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.requests() >= 1, "the request went out");
    child.signal(Signal::SIGINT);
    assert_eq!(child.wait(Duration::from_secs(30)), Some(130));
    let err = reader.join().unwrap();
    assert!(!err.contains("sent no requests"), "{err}");
    assert!(
        err.contains("interrupted before any request was answered"),
        "{err}"
    );
}

/// A server speaking enough of Redis's protocol for a run to start: `PING` is `PONG`, `SET`
/// gets `set_answer`, `PTTL` 500 ms, `SCAN` nothing, anything else `OK`. Serves until the
/// test ends.
fn fake_redis(set_answer: &'static [u8]) -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut out = conn.try_clone().unwrap();
                let mut input = BufReader::new(conn);
                let mut line = String::new();
                // One command: `*N` then N bulk strings (`$len`, the bytes, CRLF).
                while input.read_line(&mut line).is_ok_and(|n| n > 0) {
                    let n: usize = line.trim().trim_start_matches('*').parse().unwrap_or(0);
                    let mut args = Vec::new();
                    for _ in 0..n {
                        line.clear();
                        let _ = input.read_line(&mut line);
                        let len: usize = line.trim().trim_start_matches('$').parse().unwrap_or(0);
                        let mut arg = vec![0; len + 2];
                        let _ = input.read_exact(&mut arg);
                        arg.truncate(len);
                        args.push(String::from_utf8_lossy(&arg).to_uppercase());
                    }
                    line.clear();
                    let answer: &[u8] = match args.first().map(String::as_str) {
                        Some("PING") => b"+PONG\r\n",
                        Some("SET") => set_answer,
                        Some("PTTL") => b":500\r\n",
                        Some("SCAN") => b"*2\r\n$1\r\n0\r\n*0\r\n",
                        _ => b"+OK\r\n",
                    };
                    if out.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A store that answered `SET … NX` with a bulk string or an integer was taken to have
/// granted the lock: interval-lock then sent 41,866 requests in 4 s and exited 0. Only `OK`
/// or nil are answers; anything else is a store error, which stops the run (exit 3).
#[test]
fn a_store_answering_set_nx_with_anything_but_ok_or_nil_fails_the_run() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/shared_redis.toml");
    let run = |answer: &'static [u8]| {
        let store = format!("redis://{}", fake_redis(answer));
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("r");
        let output = Command::new(exe())
            .arg("run")
            .arg(&scenario)
            .args([
                "--store",
                &store,
                "--duration",
                "20s",
                "--quiet",
                "--no-charts",
            ])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&output.stderr).to_string();
        (output.status.code(), err, summary(&out))
    };
    // The fake is store enough: with `+OK` every lock is granted, and the run goes on.
    let (code, err, s) = run(b"+OK\r\n");
    assert!(matches!(code, Some(0 | 1)), "{err}");
    assert!(s["requests"].as_u64().unwrap() >= 10, "{s}");
    for answer in [&b"$2\r\nOK\r\n"[..], &b":1\r\n"[..]] {
        let shown = String::from_utf8_lossy(answer).trim().to_string();
        let (code, err, s) = run(answer);
        assert_eq!(code, Some(3), "{shown}: {err}");
        assert!(
            err.contains("failed: it answered, but not as a Redis server does"),
            "{shown}: {err}"
        );
        assert_eq!(s["requests"], 0, "{shown}: {s}");
    }
}

/// `retry-after-ms: 1e23` once panicked the client in `Duration::from_secs_f64` (the panic
/// printed twice, the run stopped partial with 0 requests). Now it is a wait past the run.
#[test]
fn a_huge_retry_after_ms_is_a_long_wait_not_a_panic() {
    for value in ["1e23", "inf", "1e308", "-5", "NaN"] {
        let server = HostileServer::always(Answer::status(429).header("retry-after-ms", value));
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("c");
        let mut args = FIXED.to_vec();
        args.extend(["--duration", "500ms"]);
        let (code, err) = client(&server.url(), &out, &args, Duration::from_secs(30));
        assert!(!err.contains("panicked"), "{value}: {err}");
        assert_eq!(code, Some(0), "{value}: {err}");
        let s = summary(&out);
        assert_eq!(s["partial"], false, "{value}: {s}");
        assert!(s["requests"].as_u64().unwrap() >= 1, "{value}: {s}");
        assert_eq!(s["limited"], s["requests"], "{value}: {s}");
    }
}

/// A 429 whose `x-ratelimit-reset` is past any clock (2^64 − 1, 1e19) must become a
/// wait capped at what an instant holds, for every algorithm that reads the reset, not
/// "overflow when adding duration to instant".
#[test]
fn a_reset_past_any_clock_is_a_long_wait_not_an_overflow() {
    for (algorithm, reset) in [
        ("schneems", "18446744073709551615"),
        ("schneems", "10000000000000000000"),
        ("fair-share", "18446744073709551615"),
        ("aimd", "10000000000000000000"),
    ] {
        let server = HostileServer::always(
            Answer::status(429)
                .header("x-ratelimit-remaining", "0")
                .header("x-ratelimit-reset", reset),
        );
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("c");
        let args = [
            "--algorithm",
            algorithm,
            "--duration",
            "2s",
            "--set",
            "run.time_scale=10",
        ];
        let (code, err) = client(&server.url(), &out, &args, Duration::from_secs(30));
        assert!(!err.contains("panicked"), "{algorithm} {reset}: {err}");
        assert_eq!(code, Some(0), "{algorithm} {reset}: {err}");
        assert_eq!(summary(&out)["partial"], false);
    }
}

/// The client once held whole bodies (a 200 MB body cost 213 MB, an endless one 1.5 GB in
/// 5 s). Now a body is read frame by frame and dropped, and past 1 MiB the connection is
/// given up: the server gets to write little more than that (and a socket buffer) per answer.
#[test]
fn bodies_are_drained_and_cut_not_held() {
    for body in [Body::Bytes(200 << 20), Body::Endless] {
        let server = HostileServer::always(Answer::status(200).body(body.clone()));
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("c");
        let mut args = FIXED.to_vec();
        args.extend(["--duration", "1s", "--timeout", "5s"]);
        let (code, err) = client(&server.url(), &out, &args, Duration::from_secs(30));
        assert_eq!(code, Some(0), "{body:?}: {err}");
        let requests = server.requests().max(1);
        let per_answer = server.body_bytes() / requests;
        // 1 MiB read, plus what the kernel buffers on both sides of a loopback socket.
        assert!(
            per_answer < 16 << 20,
            "{body:?}: {per_answer} bytes per answer over {requests} requests"
        );
        let s = summary(&out);
        assert!(s["ok"].as_u64().unwrap() >= 2, "{body:?}: {s}");
    }
}

/// An `http://` target nothing listens on once ran the whole `--duration`, then exited 4
/// with a table showing fairness 1.000 and 0 ok. Now it is named before anything runs (as a
/// failed TLS handshake is), and no results folder is left.
#[test]
fn a_target_that_takes_no_connection_is_named_before_the_run() {
    let server = HostileServer::always(Answer::status(200));
    let url = server.url();
    // Nothing listens there any more.
    drop(server);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let started = Instant::now();
    let (code, err) = client(&url, &out, &["--duration", "1m"], Duration::from_secs(30));
    assert_eq!(code, Some(4), "{err}");
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    assert!(
        err.contains(&format!("cannot connect to {authority}")),
        "{err}"
    );
    assert!(err.contains("no request could be sent"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!out.exists(), "a results folder was left");
}

/// Poor case: a request in flight at the end waited out its whole `--timeout` (a 3 s run
/// took 11.6 s). Now it is abandoned shortly after the end and counts as timed out.
#[test]
fn the_end_of_a_run_does_not_wait_out_a_request_in_flight() {
    let server = HostileServer::always(Answer::status(200).stalled());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mut args = FIXED.to_vec();
    args.extend(["--duration", "1s", "--timeout", "1h"]);
    let started = Instant::now();
    let (code, err) = client(&server.url(), &out, &args, Duration::from_secs(60));
    let took = started.elapsed();
    assert_eq!(code, Some(4), "{err}");
    // The one request never answered: it counts as timed out, and the message says so.
    assert!(err.contains("1 timed out"), "{err}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let s = summary(&out);
    assert_eq!(s["requests"], 1, "{s}");
    assert_eq!(s["errors"], 1, "{s}");
}

/// Poor case: the message of a run whose every request failed listed "refused, reset, timed
/// out or 5xx" when they were 301s: it names the kinds met and their counts.
#[test]
fn every_failed_request_is_named_by_its_kind() {
    let server = HostileServer::always(Answer::status(301).header("location", "/elsewhere"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mut args = FIXED.to_vec();
    args.extend(["--duration", "500ms"]);
    let (code, err) = client(&server.url(), &out, &args, Duration::from_secs(30));
    assert_eq!(code, Some(4), "{err}");
    let n = summary(&out)["requests"].as_u64().unwrap();
    assert!(
        err.contains(&format!(
            "every one of the {n} requests failed (no 2xx and no 429): {n} answered 301"
        )),
        "{err}"
    );
    assert!(!err.contains("5xx"), "{err}");
}

/// A password in the URL's userinfo or a key in its query was once written into
/// scenario.toml, summary.md, report.html and stderr. Now every shown URL has `***` there
/// (the requests still carry them: the server sees the key). A fragment (`#access_token=…`,
/// as an OAuth implicit grant hands it back) was still written whole; it is `#***` too.
#[test]
fn secrets_in_the_target_url_are_shown_as_stars() {
    let server = HostileServer::always(Answer::status(200));
    let url = format!(
        "http://user:SECRET1@{}/v1?key=SECRET2&page=2#access_token=SECRET3",
        server.addr
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let mut child = Running(
        Command::new(exe())
            .args(["client", "--target", &url, "--duration", "300ms", "--out"])
            .arg(&out)
            .args(FIXED)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut said = String::new();
    let mut stdout = child.0.stdout.take().unwrap();
    let mut stderr = child.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let _ = std::io::Read::read_to_string(&mut stdout, &mut said);
    assert_eq!(child.wait(Duration::from_secs(30)), Some(0));
    said.push_str(&reader.join().unwrap());
    assert!(server.requests() >= 1);
    assert!(
        said.contains(&format!(
            "http://***@{}/v1?key=***&page=***#***",
            server.addr
        )),
        "{said}"
    );
    for file in ["scenario.toml", "summary.md", "report.html", "summary.json"] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(!text.contains("SECRET"), "{file}: {text}");
    }
    assert!(!said.contains("SECRET"), "{said}");
}
