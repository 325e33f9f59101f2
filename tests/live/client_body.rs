//! `client --method`, `--body` and `--body-file`: what reaches the server is the request the
//! flags describe (its method, its headers, its body byte for byte), and a bad method or an
//! unreadable body file is refused before any process starts, naming the flag.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::exe;

/// The first request a [`capturing_server`] read: its head and its body.
type First = Arc<Mutex<Option<(String, Vec<u8>)>>>;

/// A loopback server that keeps the first request it reads (head and body, by its
/// `content-length`) and answers every request 200 with a `RateLimit-Remaining`.
fn capturing_server() -> (String, First) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let first = Arc::new(Mutex::new(None));
    let keep = first.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        head.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let length = head
                        .lines()
                        .find_map(|l| {
                            let (n, v) = l.split_once(':')?;
                            n.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    keep.lock().unwrap().get_or_insert((head, body));
                    let answer = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\
                                  ratelimit-remaining: 5\r\n\r\n";
                    if conn.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, first)
}

fn client(addr: &str, extra: &[&str]) -> std::process::Output {
    let out = tempfile::tempdir().unwrap();
    Command::new(exe())
        .args(["client", "--target", &format!("http://{addr}/v1/items")])
        .args(["--algorithm", "fixed", "--set", "clients.*.sleep=200ms"])
        .args(["--duration", "1s", "--quiet", "--out"])
        .arg(out.path().join("run"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn client_body_and_method_reach_the_server_as_given() {
    let (addr, first) = capturing_server();
    let json = r#"{"name":"widget","tags":["a","b"]}"#;
    let out = client(
        &addr,
        &[
            "--method",
            "post",
            "--body",
            json,
            "-H",
            "Content-Type: application/json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (head, body) = first.lock().unwrap().clone().expect("a request came");
    // The reachability check connects without sending: the first request is the run's.
    assert!(head.starts_with("POST /v1/items HTTP/1.1\r\n"), "{head}");
    let lower = head.to_lowercase();
    assert!(
        lower.contains("content-type: application/json\r\n"),
        "{head}"
    );
    assert!(
        lower.contains(&format!("content-length: {}\r\n", json.len())),
        "{head}"
    );
    assert_eq!(body, json.as_bytes());

    // A file's bytes, any bytes, with another method.
    let (addr, first) = capturing_server();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body.bin");
    let bytes: Vec<u8> = (0..=255u8).chain([0, 13, 10, 0]).collect();
    std::fs::write(&file, &bytes).unwrap();
    let out = client(&addr, &["-X", "PUT", "--body-file", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (head, body) = first.lock().unwrap().clone().expect("a request came");
    assert!(head.starts_with("PUT /v1/items HTTP/1.1\r\n"), "{head}");
    assert_eq!(body, bytes);
}

#[test]
fn client_refuses_a_bad_method_or_body_file_before_it_starts() {
    let (addr, first) = capturing_server();
    let out = client(&addr, &["--method", "GE T"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--method GE T") && err.contains("not an HTTP method"),
        "{err}"
    );
    let out = client(&addr, &["--body-file", "/nonexistent/body.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--body-file /nonexistent/body.json"), "{err}");
    let out = client(&addr, &["--body", "x", "--body-file", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(first.lock().unwrap().is_none(), "nothing was sent");
}
