//! A hostile world, `serve`'s part: signals, keys and summaries a hostile but
//! honest user can produce. Each test failed before its fix.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Running, address_in, exe, http_get};
use nix::sys::signal::Signal;

/// Start `serve` on a free port with `args`; the child, its address, and threads collecting
/// the rest of its stdout and its stderr.
fn start(
    args: &[&str],
) -> (
    Running,
    String,
    std::thread::JoinHandle<String>,
    std::thread::JoinHandle<String>,
) {
    let mut child = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let running = Running(child);
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = address_in(&line);
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    (running, addr, out, err)
}

fn get(addr: &str, extra: &str) -> u16 {
    http_get(addr, "/", extra, Duration::from_secs(5)).0
}

/// `Bearer tok157397` and `Bearer tok678860` share the fingerprint `fnv:820a5676`;
/// `/_stats` and `--record` once showed one client with 5 requests, the other's 2 gone.
#[test]
fn hostile_two_tokens_with_one_fingerprint_stay_two_clients() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let (mut serve, addr, out, _err) = start(&["--record", rec.to_str().unwrap()]);
    for _ in 0..5 {
        assert_eq!(get(&addr, "Authorization: Bearer tok157397\r\n"), 200);
    }
    for _ in 0..2 {
        assert_eq!(get(&addr, "Authorization: Bearer tok678860\r\n"), 200);
    }
    let (_, stats) = http_get(&addr, "/_stats", "", Duration::from_secs(5));
    let body = &stats[stats.find('{').unwrap()..];
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["keys"]["fnv:820a5676"]["requests"], 5, "{body}");
    assert_eq!(v["keys"]["fnv:820a5676#2"]["requests"], 2, "{body}");
    assert!(!body.contains("tok157397") && !body.contains("tok678860"));

    serve.signal(Signal::SIGINT);
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
    let printed = out.join().unwrap();
    assert!(
        printed.contains("recorded 7 requests of 2 clients"),
        "{printed}"
    );
    let clients = std::fs::read_to_string(rec.join("clients.csv")).unwrap();
    let mut counts: Vec<(String, String)> = clients
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (cells[2].to_string(), cells[6].to_string())
        })
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("key:fnv:820a5676".to_string(), "5".to_string()),
            ("key:fnv:820a5676#2".to_string(), "2".to_string())
        ],
        "{clients}"
    );
}

/// Two tokens that share a fingerprint have a bucket each on the server (5 2xx each of a
/// limit of 5), and the recording must count both buckets' capacity: it keyed its clients by
/// fingerprint, counted one bucket of 5 for 10 2xx, and clamped the utilization to 1.
#[test]
fn hostile_two_tokens_with_one_fingerprint_are_two_buckets_in_the_recording() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let (mut serve, addr, _out, _err) = start(&[
        "--limit",
        "5",
        "--period",
        "1h",
        "--record",
        rec.to_str().unwrap(),
    ]);
    for token in ["tok157397", "tok678860"] {
        for _ in 0..5 {
            assert_eq!(
                get(&addr, &format!("Authorization: Bearer {token}\r\n")),
                200
            );
        }
        assert_eq!(
            get(&addr, &format!("Authorization: Bearer {token}\r\n")),
            429
        );
    }
    serve.signal(Signal::SIGINT);
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
    let s = common::summary(&rec);
    assert_eq!(s["ok"], 10, "{s}");
    let capacity = s["capacity"].as_f64().unwrap();
    assert!(
        capacity >= 10.0,
        "one bucket's capacity counted for two: {s}"
    );
    let scenario = std::fs::read_to_string(rec.join("scenario.toml")).unwrap();
    assert!(scenario.contains("fnv:820a5676#2"), "{scenario}");
}

/// The concurrency rule holds a slot while a request is in flight. Two clients that hang up
/// while their answers wait out the latency kept their slots for ever: every later request
/// was refused by an idle server. A slot is given back when its connection goes away.
#[test]
fn hostile_a_client_that_hangs_up_gives_back_its_slot() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let scenario = common::write(
        tmp.path(),
        "c.toml",
        "name = \"c\"\n[server]\nkind = \"concurrency\"\nmax_in_flight = 2\nlatency = \"3s\"\n\
         [[clients]]\nname = \"a\"\n",
    );
    let (mut serve, addr, _out, _err) = start(&["--scenario", scenario.to_str().unwrap()]);
    for _ in 0..2 {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // Dropped: the client hangs up before its answer.
    }
    std::thread::sleep(Duration::from_millis(300));
    let (status, text) = http_get(&addr, "/", "", Duration::from_secs(10));
    assert_eq!(
        status, 200,
        "the slots of clients gone are still held: {text}"
    );
    serve.signal(Signal::SIGINT);
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
}

/// `serve --latency 1h --record`, then Ctrl-C: the request still waiting out its latency was
/// recorded as a 2xx, though its answer was never sent.
#[test]
fn hostile_an_answer_never_sent_is_not_recorded_as_a_2xx() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let (mut serve, addr, _out, _err) =
        start(&["--latency", "1h", "--record", rec.to_str().unwrap()]);
    let mut pending = std::net::TcpStream::connect(&addr).unwrap();
    write!(pending, "GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    serve.signal(Signal::SIGINT);
    assert!(matches!(serve.wait(Duration::from_secs(60)), Some(0 | 130)));
    let s = common::summary(&rec);
    assert_eq!(s["requests"], 1, "{s}");
    assert_eq!(s["ok"], 0, "no answer went out: {s}");
    assert_eq!(s["errors"], 1, "{s}");
}

/// Two SIGINTs 30 ms apart (as `timeout` relays them) once ended `serve --record` with
/// exit 130 while it wrote the folder, leaving only the journal (8 of 15 tries), or a folder
/// without report.html. The folder must always be whole.
#[test]
fn hostile_a_second_signal_never_loses_the_recording() {
    for attempt in 0..5 {
        let tmp = tempfile::tempdir().unwrap();
        let rec = tmp.path().join("rec");
        let (mut serve, addr, _out, err) = start(&["--record", rec.to_str().unwrap()]);
        for i in 0..40 {
            get(&addr, &format!("X-Client-Id: g/c{}\r\n", i % 8));
        }
        serve.signal(Signal::SIGINT);
        std::thread::sleep(Duration::from_millis(30));
        serve.signal(Signal::SIGINT);
        let code = serve.wait(Duration::from_secs(60));
        let said = err.join().unwrap();
        for f in [
            "scenario.toml",
            "series.csv",
            "summary.json",
            "summary.md",
            "clients.csv",
            "report.html",
        ] {
            let path = rec.join(f);
            assert!(
                path.is_file() && std::fs::metadata(&path).unwrap().len() > 0,
                "attempt {attempt}: {f} missing or empty (exit {code:?}): {said}"
            );
        }
        assert!(!rec.join(".serve-record.journal").exists());
        let s = common::summary(&rec);
        assert_eq!(s["requests"], 40, "attempt {attempt}");
        assert!(matches!(code, Some(0) | Some(130)), "{code:?}");
    }
}

/// The Ctrl-C summary printed a line per key: 100,001 lines for 200,000 keys. It names the
/// busiest 20 and counts the rest on one line.
#[test]
fn hostile_the_ctrl_c_summary_of_many_keys_is_capped() {
    let (mut serve, addr, _out, err) = start(&[]);
    for i in 0..30 {
        get(&addr, &format!("Authorization: Bearer key-{i}\r\n"));
    }
    for _ in 0..3 {
        get(&addr, "Authorization: Bearer busy\r\n");
    }
    serve.signal(Signal::SIGINT);
    assert_eq!(serve.wait(Duration::from_secs(30)), Some(0));
    let said = err.join().unwrap();
    let keys: Vec<&str> = said.lines().filter(|l| l.starts_with("key ")).collect();
    assert_eq!(keys.len(), 20, "{said}");
    assert!(keys[0].ends_with(": 3 requests, 3 ok, 0 limited"), "{said}");
    assert!(
        said.contains("and 11 more keys: 11 requests, 11 ok, 0 limited"),
        "{said}"
    );
    assert!(!said.contains("busy"), "a token is never shown: {said}");
}
