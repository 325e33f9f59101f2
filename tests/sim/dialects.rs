//! `[server] headers`: each dialect (docs/headers.md) as the real `serve` writes it and the
//! live client's parser reads it, and as the sim hands it to an algorithm.

use std::path::Path;
use std::time::{Duration, SystemTime};

use assert_cmd::Command;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use throttle_sim::engine::live::headers::read_response;
use throttle_sim::exchange::{Response, Status};

use crate::common;
use common::write;

const SECOND: u64 = 1_000_000_000;

/// The header fields of one raw (lower-cased) HTTP answer.
fn header_map(head: &str) -> HeaderMap {
    let mut map = HeaderMap::new();
    for line in head.split("\r\n").skip(1).take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').unwrap();
        map.append(
            HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
            HeaderValue::from_str(value.trim()).unwrap(),
        );
    }
    map
}

/// Three GETs against `serve --limit 2 --period 1m --headers DIALECT` (200, 200, 429): the
/// rate-limit field names of each answer and what the live client reads off it.
fn served(dialect: &str) -> Vec<(Vec<String>, Response)> {
    let (_serve, addr) = common::serve(&["--limit", "2", "--period", "1m", "--headers", dialect]);
    (0..3)
        .map(|_| {
            let (status, head) = common::http_get(&addr, "/", "", Duration::from_secs(5));
            let map = header_map(&head);
            let mut names: Vec<String> = map
                .keys()
                .map(|k| k.to_string())
                .filter(|k| k.contains("ratelimit") || k.contains("retry-after"))
                .collect();
            names.sort();
            (
                names,
                read_response(status, &map, 0, 1.0, SystemTime::now()),
            )
        })
        .collect()
}

fn counts(r: &Response) -> (Status, Option<u64>, Option<u64>) {
    (r.status, r.remaining, r.limit)
}

/// The wait a 429 told, in seconds: one token of 2 per minute comes every 30 s.
fn waited_s(r: &Response) -> f64 {
    r.retry_after.expect("a wait") as f64 / SECOND as f64
}

#[cfg(unix)]
#[test]
fn serve_writes_the_ietf_fields_and_the_client_reads_them() {
    let got = served("ietf");
    assert_eq!(got[0].0, ["ratelimit", "ratelimit-policy"]);
    assert_eq!(counts(&got[0].1), (Status::Ok, Some(1), Some(2)));
    assert_eq!(got[0].1.retry_after, None);
    assert_eq!(got[2].0, ["ratelimit", "ratelimit-policy", "retry-after"]);
    assert_eq!(counts(&got[2].1), (Status::Limited, Some(0), Some(2)));
    // Whole seconds: 30 s less the moments between the requests, rounded up.
    assert_eq!(waited_s(&got[2].1), 30.0);
}

#[cfg(unix)]
#[test]
fn serve_writes_herokus_remaining_only() {
    let got = served("heroku");
    for (names, _) in &got {
        assert_eq!(names, &["ratelimit-remaining"]);
    }
    assert_eq!(counts(&got[0].1), (Status::Ok, Some(1), None));
    assert_eq!(counts(&got[2].1), (Status::Limited, Some(0), None));
    assert_eq!(got[2].1.retry_after, None);
}

#[cfg(unix)]
#[test]
fn serve_writes_githubs_fields_and_a_primary_limit_waits_for_the_reset() {
    let got = served("github");
    let github = [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-ratelimit-used",
    ];
    for (names, _) in &got {
        // No retry-after: a refusal with nothing remaining is GitHub's primary limit.
        assert_eq!(names, &github);
    }
    assert_eq!(counts(&got[0].1), (Status::Ok, Some(1), Some(2)));
    assert_eq!(counts(&got[2].1), (Status::Limited, Some(0), Some(2)));
    // Until the epoch second of the reset: 30 s away, give or take the second's rounding.
    let w = waited_s(&got[2].1);
    assert!((29.0..=31.0).contains(&w), "{w}");
}

#[cfg(unix)]
#[test]
fn serve_writes_flask_limiters_fields_with_retry_after_on_every_answer() {
    let got = served("flask-limiter");
    for (names, _) in &got {
        assert_eq!(
            names,
            &[
                "retry-after",
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset"
            ]
        );
    }
    // A 2xx's `retry-after` is not a wait.
    assert_eq!(counts(&got[0].1), (Status::Ok, Some(1), Some(2)));
    assert_eq!(got[0].1.retry_after, None);
    assert_eq!(counts(&got[2].1), (Status::Limited, Some(0), Some(2)));
    // The whole seconds to the epoch second after the reset's instant, rounded down: 30 s
    // away, give or take the second's rounding.
    let w = waited_s(&got[2].1);
    assert!((29.0..=31.0).contains(&w) && w.fract() == 0.0, "{w}");
}

#[cfg(unix)]
#[test]
fn serve_writes_every_field_in_full_and_none_in_none() {
    let got = served("full");
    assert_eq!(
        got[2].0,
        [
            "ratelimit",
            "ratelimit-limit",
            "ratelimit-policy",
            "ratelimit-remaining",
            "retry-after",
            "retry-after-ms"
        ]
    );
    assert_eq!(counts(&got[2].1), (Status::Limited, Some(0), Some(2)));
    // retry-after-ms: the exact wait, not whole seconds.
    let w = waited_s(&got[2].1);
    assert!(w > 29.0 && w < 30.0, "{w}");

    let got = served("none");
    for (names, r) in &got {
        assert!(names.is_empty(), "{names:?}");
        assert_eq!((r.remaining, r.limit, r.retry_after), (None, None, None));
    }
    assert_eq!(got[2].1.status, Status::Limited);
}

/// 2 threads of `fixed` every 0.5 s against 60 per minute starting with 2: a 429 about every
/// other request, with waits under a second.
const SMALL: &str = r#"
name = "dialects"
[run]
duration = "20s"
seed = 3
sample_every = "5s"
[server]
kind = "gcra"
limit = 60
period = "1m"
initial = 2
latency = "20ms"
[[clients]]
name = "a"
threads = 2
algorithm = "fixed"
sleep = "500ms"
"#;

/// Each request the sim's clients got, as requests.csv records it: (t, status, remaining,
/// retry_after).
type Row = (f64, String, Option<u64>, Option<f64>);

fn requests(out: &Path) -> Vec<Row> {
    let mut rdr = csv::Reader::from_path(out.join("requests.csv")).unwrap();
    rdr.deserialize::<std::collections::HashMap<String, String>>()
        .map(|r| {
            let r = r.unwrap();
            let num = |k: &str| Some(r[k].as_str()).filter(|v| !v.is_empty());
            (
                r["t"].parse().unwrap(),
                r["status"].clone(),
                num("remaining").map(|v| v.parse().unwrap()),
                num("retry_after").map(|v| v.parse().unwrap()),
            )
        })
        .collect()
}

fn sim_rows(dir: &Path, dialect: &str) -> Vec<Row> {
    let file = write(dir, "small.toml", SMALL);
    let out = dir.join(dialect);
    Command::cargo_bin("throttle-sim")
        .unwrap()
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-charts", "--log-requests"])
        .args(["--set", &format!("server.headers={dialect}"), "--out"])
        .arg(&out)
        .assert()
        .success();
    requests(&out)
}

#[test]
fn in_sim_each_dialect_tells_the_algorithm_only_what_it_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let full = sim_rows(tmp.path(), "full");
    let limited: Vec<&Row> = full.iter().filter(|r| r.1 == "limited").collect();
    assert!(limited.len() > 5, "{full:?}");
    assert!(limited.iter().all(|r| r.3.is_some_and(|w| w < 1.0)));
    assert!(full.iter().all(|r| r.2.is_some()));
    // The rule decides alike in every dialect (`fixed` reads nothing): the same statuses at
    // the same times; only what the client is told differs.
    let same_requests = |rows: &[Row]| {
        assert_eq!(rows.len(), full.len());
        for (a, b) in rows.iter().zip(&full) {
            assert_eq!((a.0, &a.1), (b.0, &b.1));
        }
    };

    let ietf = sim_rows(tmp.path(), "ietf");
    same_requests(&ietf);
    for r in &ietf {
        assert!(r.2.is_some());
        match r.1.as_str() {
            // Retry-After in whole seconds, at least one.
            "limited" => assert_eq!(r.3, Some(1.0), "{r:?}"),
            _ => assert_eq!(r.3, None),
        }
    }

    let heroku = sim_rows(tmp.path(), "heroku");
    same_requests(&heroku);
    assert!(heroku.iter().all(|r| r.2.is_some() && r.3.is_none()));

    let github = sim_rows(tmp.path(), "github");
    same_requests(&github);
    for r in &github {
        assert!(r.2.is_some());
        if r.1 == "limited" {
            // Primary limit: wait until the next whole (epoch) second after the refill.
            let w = r.3.expect("a reset");
            let at = r.0 + w;
            assert!(
                (at - at.round()).abs() < 1e-6 && w > 0.0 && w <= 2.0,
                "{r:?}"
            );
        }
    }

    let none = sim_rows(tmp.path(), "none");
    same_requests(&none);
    assert!(none.iter().all(|r| r.2.is_none() && r.3.is_none()));
}

/// `run --mode live` at 20×: the workers' parser hands the algorithm what the dialect
/// writes, as requests.csv records it.
fn live_rows(dir: &Path, dialect: &str) -> Vec<Row> {
    let file = write(dir, "small.toml", SMALL);
    let out = dir.join(format!("live-{dialect}"));
    Command::cargo_bin("throttle-sim")
        .unwrap()
        .arg("run")
        .arg(&file)
        .args(["--mode", "live", "--quiet", "--no-charts", "--log-requests"])
        .args(["--set", "run.time_scale=20"])
        .args(["--set", &format!("server.headers={dialect}"), "--out"])
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    requests(&out)
}

#[cfg(unix)]
#[test]
fn in_a_live_run_the_workers_read_each_dialect() {
    let tmp = tempfile::tempdir().unwrap();
    for dialect in [
        "ietf",
        "heroku",
        "github",
        "fastify",
        "flask-limiter",
        "none",
    ] {
        let rows = live_rows(tmp.path(), dialect);
        let limited: Vec<&Row> = rows.iter().filter(|r| r.1 == "limited").collect();
        assert!(!limited.is_empty(), "{dialect}: {rows:?}");
        let counted = rows.iter().all(|r| r.2.is_some());
        let waits = limited.iter().all(|r| r.3.is_some());
        let no_wait = rows.iter().all(|r| r.3.is_none());
        match dialect {
            // Whole seconds of real time are 20 s of the run's time.
            "ietf" => assert!(
                counted && limited.iter().all(|r| r.3.is_some_and(|w| w >= 20.0)),
                "{rows:?}"
            ),
            "heroku" => assert!(counted && no_wait, "{rows:?}"),
            "github" | "fastify" | "flask-limiter" => assert!(counted && waits, "{rows:?}"),
            _ => assert!(rows.iter().all(|r| r.2.is_none()) && no_wait, "{rows:?}"),
        }
    }
}
