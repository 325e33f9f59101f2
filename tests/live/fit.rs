//! `throttle-sim fit` on traces of a real server: `serve` on loopback, `client --log-requests`
//! sending faster than its limit, and the rule learned back from what the answers said.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{Running, exe, serve};

/// `client` against `addr` for `seconds`, 2 threads each sending every `sleep` (± half).
fn record(addr: &str, out: &Path, seconds: &str, sleep: &str) {
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
            .args(["--set", &format!("clients.*.sleep={sleep}")])
            .args(["--set", "clients.*.jitter=0.5"])
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
        // Only the rule is held here: the fitted scenario's own runs (its [expect]) are
        // tests/sim/fit.rs's.
        .args(["--json", "--no-expect"])
        .output()
        .unwrap();
    // 5: the trace cannot tell the rule (the JSON says why).
    assert!(matches!(out.status.code(), Some(0 | 5)), "{out:?}");
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["fit"].clone()
}

// The bucket and the fixed window are two tests, so that their 20 s of recording each run at once.
#[test]
fn fit_learns_the_rule_of_a_served_bucket() {
    let tmp = tempfile::tempdir().unwrap();
    // A bucket of 20 refilled over 10 s of real time (2 per second), in the full dialect.
    let (_server, addr) = serve(&["--limit", "20", "--period", "10s"]);
    record(&addr, &tmp.path().join("bucket"), "20s", "150ms");
    let f = fitted(&tmp.path().join("bucket"));
    assert_eq!(f["rule"]["rule"], "bucket", "{f}");
    assert_eq!(f["rule"]["size"], 20.0, "{f}");
    let period = f["rule"]["period"].as_f64().unwrap();
    assert!((period - 10.0).abs() <= 0.5, "{f}");
    assert!(tmp.path().join("bucket/fit.toml").is_file());
}

#[test]
fn fit_learns_the_rule_of_a_served_fixed_window() {
    let tmp = tempfile::tempdir().unwrap();
    // A fixed window of 10 per 2 s in GitHub's dialect, from a scenario's [server].
    let scenario = tmp.path().join("fw.toml");
    std::fs::write(
        &scenario,
        "[server]\nkind = \"fixed-window\"\nlimit = 10\nwindow = \"2s\"\nheaders = \"github\"\n\
         latency = \"0s\"\n[[clients]]\nname = \"x\"\n",
    )
    .unwrap();
    let (_server, addr) = serve(&["--scenario", scenario.to_str().unwrap()]);
    record(&addr, &tmp.path().join("window"), "20s", "150ms");
    let f = fitted(&tmp.path().join("window"));
    assert_eq!(f["rule"]["rule"], "fixed-window", "{f}");
    assert_eq!(f["rule"]["limit"], 10.0, "{f}");
    assert_eq!(f["dialect"], "github", "{f}");
    let window = f["rule"]["window"].as_f64().unwrap();
    assert!((window - 2.0).abs() <= 0.1, "{f}");
}

/// One served rule: the server's `[server]` lines, its dialect, the time scale, how long the
/// client runs (real seconds), its threads and each thread's sleep (real), and what the fit
/// must say: the rule (`None`: "cannot tell"), its limit and its period in virtual seconds.
struct Served {
    server: &'static str,
    headers: &'static str,
    scale: f64,
    seconds: u32,
    threads: u32,
    sleep: &'static str,
    expect: Option<(&'static str, f64, f64)>,
}

const fn case(
    server: &'static str,
    headers: &'static str,
    scale: f64,
    (seconds, threads, sleep): (u32, u32, &'static str),
    expect: Option<(&'static str, f64, f64)>,
) -> Served {
    Served {
        server,
        headers,
        scale,
        seconds,
        threads,
        sleep,
        expect,
    }
}

/// Every server kind in every dialect, at limits from 5 per second to 5,000 per hour, each at a
/// time scale that makes its period a second or two of real time, and a client a few times
/// faster than the limit for two or more periods. A token bucket of `rate` per `period` with
/// `burst` is a bucket of `burst` refilled over `burst / rate` periods. In the `none` dialect
/// only the 429s speak: the fit cannot tell the rule, and says so.
const SERVED: [Served; 20] = [
    // gcra
    case(
        "kind = \"gcra\"\nlimit = 5\nperiod = \"1s\"",
        "full",
        1.0,
        (4, 2, "100ms"),
        Some(("bucket", 5.0, 1.0)),
    ),
    case(
        "kind = \"gcra\"\nlimit = 100\nperiod = \"1m\"",
        "ietf",
        30.0,
        (4, 4, "40ms"),
        Some(("bucket", 100.0, 60.0)),
    ),
    case(
        "kind = \"gcra\"\nlimit = 10\nperiod = \"1s\"",
        "heroku",
        1.0,
        (4, 2, "100ms"),
        Some(("bucket", 10.0, 1.0)),
    ),
    case(
        "kind = \"gcra\"\nlimit = 5000\nperiod = \"1h\"\ninitial = 0",
        "github",
        36.0,
        (4, 4, "40ms"),
        Some(("bucket", 5000.0, 3600.0)),
    ),
    case(
        "kind = \"gcra\"\nlimit = 20\nperiod = \"10s\"",
        "none",
        5.0,
        (4, 2, "50ms"),
        None,
    ),
    // token-bucket
    case(
        "kind = \"token-bucket\"\nrate = 5\nperiod = \"1s\"\nburst = 10",
        "full",
        1.0,
        (4, 2, "50ms"),
        Some(("bucket", 10.0, 2.0)),
    ),
    case(
        "kind = \"token-bucket\"\nrate = 100\nperiod = \"1m\"\nburst = 100",
        "ietf",
        30.0,
        (4, 4, "40ms"),
        Some(("bucket", 100.0, 60.0)),
    ),
    case(
        "kind = \"token-bucket\"\nrate = 1\nperiod = \"1s\"\nburst = 20",
        "heroku",
        10.0,
        (4, 2, "50ms"),
        Some(("bucket", 20.0, 20.0)),
    ),
    case(
        "kind = \"token-bucket\"\nrate = 600\nperiod = \"1h\"\nburst = 60",
        "github",
        360.0,
        (4, 4, "40ms"),
        Some(("bucket", 60.0, 360.0)),
    ),
    case(
        "kind = \"token-bucket\"\nrate = 10\nperiod = \"1s\"\nburst = 10",
        "none",
        1.0,
        (4, 2, "50ms"),
        None,
    ),
    // fixed-window
    case(
        "kind = \"fixed-window\"\nlimit = 10\nwindow = \"1s\"",
        "full",
        1.0,
        (4, 2, "50ms"),
        Some(("fixed-window", 10.0, 1.0)),
    ),
    case(
        "kind = \"fixed-window\"\nlimit = 100\nwindow = \"1m\"",
        "ietf",
        30.0,
        (5, 4, "40ms"),
        Some(("fixed-window", 100.0, 60.0)),
    ),
    case(
        "kind = \"fixed-window\"\nlimit = 20\nwindow = \"10s\"",
        "heroku",
        5.0,
        (5, 2, "50ms"),
        Some(("fixed-window", 20.0, 10.0)),
    ),
    case(
        "kind = \"fixed-window\"\nlimit = 5000\nwindow = \"1h\"",
        "github",
        3600.0,
        (4, 4, "40ms"),
        Some(("fixed-window", 5000.0, 3600.0)),
    ),
    case(
        "kind = \"fixed-window\"\nlimit = 5\nwindow = \"1s\"",
        "none",
        1.0,
        (4, 2, "50ms"),
        None,
    ),
    // sliding-window
    case(
        "kind = \"sliding-window\"\nlimit = 20\nwindow = \"1s\"",
        "full",
        1.0,
        (4, 2, "50ms"),
        Some(("sliding-window", 20.0, 1.0)),
    ),
    case(
        "kind = \"sliding-window\"\nlimit = 5000\nwindow = \"1h\"",
        "ietf",
        3600.0,
        (4, 4, "40ms"),
        Some(("sliding-window", 5000.0, 3600.0)),
    ),
    case(
        "kind = \"sliding-window\"\nlimit = 30\nwindow = \"1m\"",
        "heroku",
        30.0,
        (5, 2, "50ms"),
        Some(("sliding-window", 30.0, 60.0)),
    ),
    case(
        "kind = \"sliding-window\"\nlimit = 100\nwindow = \"1m\"",
        "github",
        30.0,
        (5, 4, "40ms"),
        Some(("sliding-window", 100.0, 60.0)),
    ),
    case(
        "kind = \"sliding-window\"\nlimit = 10\nwindow = \"1s\"",
        "none",
        1.0,
        (4, 2, "50ms"),
        None,
    ),
];

/// `client` against a `serve --record --log-requests` of `c`, then `fit` of both folders: the
/// client's trace and the server's recording. One line per folder saying what was fitted, and
/// the problems found.
fn serve_and_fit(c: &Served, dir: &Path) -> (Vec<String>, Vec<String>) {
    std::fs::create_dir_all(dir).unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "[run]\ntime_scale = {}\n[server]\n{}\nheaders = \"{}\"\nlatency = \"0s\"\n\
             [[clients]]\nname = \"x\"\n",
            c.scale, c.server, c.headers
        ),
    )
    .unwrap();
    // The recording ends a second after the client, by itself.
    let virtual_end = format!("{}s", (f64::from(c.seconds) + 1.0) * c.scale);
    let (mut server, addr) = serve(&[
        "--scenario",
        scenario.to_str().unwrap(),
        "--record",
        dir.join("rec").to_str().unwrap(),
        "--log-requests",
        "--duration",
        &virtual_end,
        "--quiet",
    ]);
    let mut client = Running(
        Command::new(exe())
            .args(["client", "--target"])
            .arg(format!("http://{addr}/"))
            .args(["--algorithm", "fixed", "--threads", &c.threads.to_string()])
            .args(["--duration", &format!("{}s", c.seconds)])
            .args(["--set", &format!("clients.*.sleep={}", c.sleep)])
            .args(["--set", "clients.*.jitter=0.5"])
            .args(["-H", &format!("Authorization: Bearer {SECRET}")])
            .args(["--log-requests", "--quiet", "--out"])
            .arg(dir.join("trace"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert_eq!(client.wait(Duration::from_secs(60)), Some(0));
    assert_eq!(server.wait(Duration::from_secs(60)), Some(0));
    let (mut lines, mut wrong) = (Vec::new(), Vec::new());
    raw_fields_as_sent(c, dir, &mut wrong);
    // The client's trace is in real time, the recording in the server's virtual time.
    for (folder, scale) in [("trace", c.scale), ("rec", 1.0)] {
        let f = fitted(&dir.join(folder));
        let r = &f["rule"];
        let limit = r["size"].as_f64().or(r["limit"].as_f64());
        let period = r["period"].as_f64().or(r["window"].as_f64());
        let said = match (limit, period) {
            (Some(l), Some(p)) => format!(
                "{} of {l} per {:.1} s (virtual), confidence {:.2}",
                r["rule"].as_str().unwrap_or("?"),
                p * scale,
                f["confidence"].as_f64().unwrap_or(0.0)
            ),
            _ => format!("cannot tell: {}", f["cannot_tell"].as_str().unwrap_or("?")),
        };
        let name = format!(
            "{} {} from {folder}",
            c.server.replace('\n', " "),
            c.headers
        );
        lines.push(format!("{name}: {said}"));
        let ok = match c.expect {
            Some((rule, l, p)) => {
                let (gl, gp) = (limit.unwrap_or(0.0), period.unwrap_or(0.0) * scale);
                r["rule"] == rule && (gl - l).abs() <= 0.05 * l && (gp - p).abs() <= 0.05 * p
            }
            // Only the 429s speak: no rule, said with why, and what the 429s show.
            None => {
                r.is_null()
                    && f["dialect"] == "none"
                    && f["cannot_tell"]
                        .as_str()
                        .is_some_and(|w| w.contains("only the 429s"))
                    && f["evidence"].as_array().is_some_and(|e| {
                        e.iter()
                            .any(|x| x.as_str().is_some_and(|x| x.contains("the most 2xx")))
                    })
            }
        };
        // None of these servers charges a refusal: said where the trace has 429s and the rule
        // can show it (a fixed window cannot).
        let refusals = f["evidence"][0]
            .as_str()
            .and_then(|e| e.split(" and ").nth(1))
            .and_then(|e| e.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        let cost_ok = match c.expect {
            Some(("bucket" | "sliding-window", _, _)) if refusals > 0 => f["refused_cost"] == false,
            _ => f["refused_cost"].is_null(),
        };
        if !cost_ok {
            wrong.push(format!(
                "{name}: refused_cost {} over {refusals} 429s",
                f["refused_cost"]
            ));
        }
        // The dialect, told from the raw fields in the client's trace (a recording has only
        // the parsed ones, which cannot tell full from ietf).
        let dialect_ok = f["dialect"] == c.headers
            || folder == "rec" && c.headers == "full" && f["dialect"] == "ietf";
        if !ok || !dialect_ok {
            wrong.push(format!("{name}: {said}; dialect {}\n{f}", f["dialect"]));
        }
    }
    (lines, wrong)
}

/// The token the clients send, which no requests.csv may hold.
const SECRET: &str = "fit-test-secret-token";

/// The client's requests.csv holds the dialect's own rate-limit fields as sent, in their raw
/// columns, and neither it nor the recording's holds the token.
fn raw_fields_as_sent(c: &Served, dir: &Path, wrong: &mut Vec<String>) {
    let trace = std::fs::read_to_string(dir.join("trace/requests.csv")).unwrap();
    let rec = std::fs::read_to_string(dir.join("rec/requests.csv")).unwrap();
    if trace.contains(SECRET) || rec.contains(SECRET) {
        wrong.push(format!("{}: the token was written", c.headers));
    }
    let mut rdr = csv::Reader::from_reader(trace.as_bytes());
    let header = rdr.headers().unwrap().clone();
    let own = match c.headers {
        "full" => &[
            "ratelimit",
            "ratelimit-policy",
            "ratelimit-limit",
            "ratelimit-remaining",
        ][..],
        "ietf" => &["ratelimit", "ratelimit-policy"],
        "heroku" => &["ratelimit-remaining"],
        "github" => &[
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "x-ratelimit-used",
        ],
        _ => &[],
    };
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    for name in throttle_sim::exchange::RAW_FIELDS {
        let col = header.iter().position(|h| h == name);
        let Some(col) = col else {
            wrong.push(format!("{}: no `{name}` column", c.headers));
            continue;
        };
        let sent = rows.iter().filter(|r| !r[col].is_empty()).count();
        // Every answer carries its dialect's fields, and no other dialect's (Retry-After
        // only on some 429s).
        let expected = own.contains(&name);
        if expected && sent != rows.len() || !expected && !name.starts_with("retry") && sent > 0 {
            wrong.push(format!(
                "{}: `{name}` sent on {sent} of {} answers",
                c.headers,
                rows.len()
            ));
        }
    }
}

/// The Heroku GCRA demo server charges a refused request a token (`refused_cost = 1`): the fit
/// says so, with the evidence, and its scenario keeps it.
#[test]
fn fit_tells_a_server_that_charges_refused_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("demo.toml");
    std::fs::write(
        &scenario,
        "[server]\nkind = \"gcra\"\nlimit = 5\nperiod = \"1s\"\nrefused_cost = 1\n\
         latency = \"0s\"\n[[clients]]\nname = \"x\"\n",
    )
    .unwrap();
    let (_server, addr) = serve(&["--scenario", scenario.to_str().unwrap()]);
    // Two threads at 4 a second each against 5 a second: about half refused, and each refusal
    // charged, so the replay tells the counted from the free by 0.3 or more. At 150 ms apart
    // the bucket stayed empty, only 8 of 52 were let in over 5 s, and under a loaded machine's
    // timing the period was once fitted at 1.3 s.
    record(&addr, &tmp.path().join("demo"), "6s", "250ms");
    let f = fitted(&tmp.path().join("demo"));
    assert_eq!(f["rule"]["rule"], "bucket", "{f}");
    assert_eq!(f["refused_cost"], true, "{f}");
    let period = f["rule"]["period"].as_f64().unwrap();
    assert!((period - 1.0).abs() <= 0.05, "{f}");
    let said = f["evidence"].to_string();
    assert!(said.contains("refused requests are counted"), "{f}");
    let scenario = std::fs::read_to_string(tmp.path().join("demo/fit.toml")).unwrap();
    assert!(scenario.contains("refused_cost = 1"), "{scenario}");
}

/// The second tier: every rule the server serves, in every dialect, live (about 20 s of real
/// time). `.ci/run` runs it; `cargo test` leaves it out with the command that runs it, and
/// keeps the served bucket and fixed window above.
mod tier2 {
    use super::*;

    /// `fit` recovers every served rule within 5 % on limit and period, from the
    /// client's trace and from the server's own recording, or says it cannot tell where only the
    /// 429s speak. Seven servers at a time, each a few seconds of real time (three at a time took
    /// 43 s, seven 20 s, the fits alike).
    #[test]
    #[ignore = "tier 2, a long real-time check (about 20 s: every served rule in every dialect): cargo test -- --ignored tier2::"]
    fn fit_recovers_every_server_kind_in_every_dialect_from_served_traces() {
        const AT_ONCE: usize = 7;
        let tmp = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let results: Vec<(Vec<String>, Vec<String>)> = SERVED
            .chunks(AT_ONCE)
            .enumerate()
            .flat_map(|(k, chunk)| {
                std::thread::scope(|s| {
                    let handles: Vec<_> = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let dir = tmp.path().join(format!("{}", k * AT_ONCE + i));
                            s.spawn(move || serve_and_fit(c, &dir))
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (lines, _) in &results {
            for l in lines {
                println!("{l}");
            }
        }
        println!("{:.1} s", started.elapsed().as_secs_f64());
        let wrong: Vec<String> = results.into_iter().flat_map(|(_, w)| w).collect();
        if !wrong.is_empty() {
            // The traces stay for a look: `throttle-sim fit DIR/N/trace`.
            println!("traces kept in {}", tmp.keep().display());
        }
        assert!(wrong.is_empty(), "misfits:\n{}", wrong.join("\n"));
    }
}
