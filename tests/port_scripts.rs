//! The ports are the law: every event script of `ports/scripts/` (written by
//! `examples/port_scripts.rs` from closed loops of the law against real rules, in every header
//! dialect) is replayed through the Rust library and through each port's `--replay`, and
//! every wait must be the same to the nanosecond. And they read answers as the library does:
//! every answer of `ports/answers.json` (written by `examples/port_answers.rs`: the captured
//! headers of real limiters and hand-made answers for every rule of `Answer::read`) is read
//! by each port's `--answers` and by the library, and every reading must be the same. A port
//! whose interpreter (or, for Go, compiler) is missing is ignored with the reason (build.rs
//! looks for them).

#[path = "../crates/fair-share/examples/replay.rs"]
#[allow(dead_code)]
mod replay;

#[path = "../examples/port_answers.rs"]
#[allow(dead_code)]
mod port_answers;

#[path = "../examples/port_scripts.rs"]
#[allow(dead_code)]
mod script_writer;

#[path = "common/go.rs"]
mod go;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use hyper::HeaderMap;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::Value;
use throttle_sim::engine::live::headers::read_response;

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("ports/scripts");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("ports/scripts exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    assert!(out.len() >= 5, "{out:?}");
    out
}

/// The library reads every answer of the scripts (every dialect the server writes) as the
/// simulator's live client does: one law, one reading of the headers.
#[test]
fn the_library_reads_every_scripted_answer_as_the_live_client_does() {
    let mut answers = 0;
    for path in scripts() {
        let script: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for e in script["events"].as_array().unwrap() {
            if e["do"] != "answer" {
                continue;
            }
            answers += 1;
            let pairs: Vec<(&str, &str)> = e["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h[0].as_str().unwrap(), h[1].as_str().unwrap()))
                .collect();
            let status = e["status"].as_u64().unwrap() as u16;
            let latency = e["latency"].as_u64().unwrap();
            let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(e["unix"].as_u64().unwrap());
            let lib = fair_share::Answer::read(
                status,
                pairs.iter().copied(),
                Duration::from_nanos(latency),
                wall,
            );
            let mut map = HeaderMap::new();
            for (k, v) in &pairs {
                map.append(
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                );
            }
            let sim = read_response(status, &map, latency, 1.0, wall);
            let nanos = |d: Option<Duration>| d.map(|d| d.as_nanos() as u64);
            let at = format!("{}: {e}", path.display());
            assert_eq!(
                format!("{:?}", lib.status),
                format!("{:?}", sim.status),
                "{at}"
            );
            assert_eq!(
                (lib.remaining, lib.limit),
                (sim.remaining, sim.limit),
                "{at}"
            );
            assert_eq!(nanos(lib.retry_after), sim.retry_after, "{at}");
            assert_eq!(nanos(lib.reset), sim.reset, "{at}");
            let policy = lib.policy.map(|p| (p.limit, p.window.as_nanos() as u64));
            assert_eq!(policy, sim.quota.map(|q| (q.limit, q.window)), "{at}");
        }
    }
    assert!(answers > 1000, "{answers}");
}

/// `ports/scripts/` holds exactly what `examples/port_scripts.rs` writes now: the same files,
/// each the same text, its `waits` included.
#[test]
fn the_scripts_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("ports/scripts");
    let now = script_writer::scripts();
    let mut names: Vec<String> = now.iter().map(|(n, _)| format!("{n}.json")).collect();
    names.sort();
    let on_disk: Vec<String> = scripts()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let fix = "run: cargo run --example port_scripts -- ports/scripts";
    assert_eq!(on_disk, names, "the scripts on disk; {fix}");
    for (name, text) in now {
        let path = dir.join(format!("{name}.json"));
        let old = std::fs::read_to_string(&path).expect("a script on disk");
        if old == text {
            continue;
        }
        let (old, new): (Value, Value) = (
            serde_json::from_str(&old).expect("a script on disk is JSON"),
            serde_json::from_str(&text).expect("a script is JSON"),
        );
        let events = |v: &Value| v["events"].as_array().cloned().unwrap_or_default();
        let (oe, ne) = (events(&old), events(&new));
        let first = (0..oe.len().max(ne.len())).find(|&i| oe.get(i) != ne.get(i));
        panic!(
            "{} is out of date ({} events on disk, {} now; first differing event: {first:?}; waits {}); {fix}",
            path.display(),
            oe.len(),
            ne.len(),
            if old["waits"] == new["waits"] {
                "alike"
            } else {
                "differ"
            },
        );
    }
}

/// Each script's `waits` are the library's replay of its events: a port that gives them gives
/// the library's.
#[test]
fn every_scripts_waits_are_the_librarys_replay() {
    for path in scripts() {
        let script: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let stated: Vec<u64> = script["waits"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no waits", path.display()))
            .iter()
            .map(|w| w.as_u64().expect("whole nanoseconds"))
            .collect();
        let waits = script["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["do"] == "wait")
            .count();
        assert_eq!(
            stated.len(),
            waits,
            "{}: one wait per wait event",
            path.display()
        );
        let replayed = replay::replay(path.to_str().unwrap()).expect("the library replays it");
        assert!(
            stated == replayed,
            "{}: the stated waits are not the replay's",
            path.display()
        );
    }
}

/// How a port might draw otherwise than the law: one number more before draw `at` (the
/// list read one further on from there), or draws `at` and `at + 1` taken the other way round.
#[derive(Clone, Copy, Debug)]
enum Misdraw {
    OneMore,
    Swapped,
}

/// A script's listed draws gone round as `fair_share::Cycle` goes, misdrawn as `how` says (none:
/// as the crate draws), counting the draws taken.
struct Misdrawn {
    units: Vec<f64>,
    how: Option<(Misdraw, usize)>,
    drawn: Arc<AtomicUsize>,
}

impl Misdrawn {
    fn unit(&mut self) -> f64 {
        let k = self.drawn.fetch_add(1, Ordering::Relaxed);
        let i = match self.how {
            Some((Misdraw::OneMore, at)) if k >= at => k + 1,
            Some((Misdraw::Swapped, at)) if k == at => k + 1,
            Some((Misdraw::Swapped, at)) if k == at + 1 => at,
            _ => k,
        };
        self.units[i % self.units.len()]
    }
}

impl fair_share::Draw for Misdrawn {
    fn below(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }
    fn within(&mut self, lo: f64, hi: f64) -> f64 {
        lo + self.unit() * (hi - lo)
    }
}

/// A script that lists its draws (more than one) holds their order: its waits are not what one number more
/// (first, or halfway), two draws swapped, or the same number every time would give. Two such
/// scripts at least, one with refusals that name a wait (so the stretch of each is drawn).
#[test]
fn scripts_that_list_their_draws_hold_their_order() {
    let (mut listed, mut stretched) = (0, 0);
    for path in scripts() {
        let script: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // A list of one value is a constant draw off the middle: it holds the draws' range,
        // and there is no order to hold.
        let Some(units) = script["random"].as_array().filter(|u| u.len() > 1) else {
            continue;
        };
        listed += 1;
        let units: Vec<f64> = units.iter().map(|u| u.as_f64().unwrap()).collect();
        let name = path.display();
        let run = |how: Option<(Misdraw, usize)>| {
            let drawn = Arc::new(AtomicUsize::new(0));
            let draw = Misdrawn {
                units: units.clone(),
                how,
                drawn: Arc::clone(&drawn),
            };
            let waits = replay::replay_with(&script, draw).expect("the library replays it");
            (waits, drawn.load(Ordering::Relaxed))
        };
        let stated = replay::replay(path.to_str().unwrap()).expect("the library replays it");
        let (waits, draws) = run(None);
        assert_eq!(waits, stated, "{name}: drawn as the crate draws");
        assert!(draws > 2 * units.len(), "{name}: only {draws} draws");
        for how in [
            (Misdraw::OneMore, 0),
            (Misdraw::OneMore, draws / 2),
            (Misdraw::Swapped, draws / 2),
        ] {
            assert_ne!(
                run(Some(how)).0,
                stated,
                "{name}: {how:?} gives the same waits"
            );
        }
        let constant = fair_share::Cycle::new(vec![0.5]).unwrap();
        let same = replay::replay_with(&script, constant).expect("the library replays it");
        assert_ne!(same, stated, "{name}: a constant draw gives the same waits");
        let names_a_wait = |e: &Value| {
            e["status"] == 429
                && e["headers"].as_array().unwrap().iter().any(|h| {
                    h[0].as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case("retry-after"))
                })
        };
        if script["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(names_a_wait)
        {
            stretched += 1;
        }
    }
    assert!(listed >= 2, "{listed} scripts list their draws");
    assert!(
        stretched >= 1,
        "no script with listed draws is refused with a wait"
    );
}

/// Every script through `program args… --replay SCRIPT` against the library's own waits.
fn port_gives_the_librarys_waits(program: &str, args: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for path in scripts() {
        let want = replay::replay(path.to_str().unwrap()).expect("the library replays it");
        let out = Command::new(program)
            .current_dir(root)
            .args(args)
            .arg("--replay")
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(
            out.status.success(),
            "{program} {args:?} --replay {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
        let got: Vec<u64> = got["waits"]
            .as_array()
            .expect("a list of waits")
            .iter()
            .map(|w| w.as_u64().expect("whole nanoseconds"))
            .collect();
        assert_eq!(got.len(), want.len(), "{}: number of waits", path.display());
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{program} {args:?} on {}: wait {i} is {} ns where the library says {} ns (and {} of {} differ)",
                path.display(),
                got[i],
                want[i],
                (0..want.len()).filter(|&i| got[i] != want[i]).count(),
                want.len()
            );
        }
    }
}

const ANSWERS: &str = "ports/answers.json";

fn answers() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(ANSWERS);
    let text = std::fs::read_to_string(&path).expect("ports/answers.json exists");
    let fixture: Value = serde_json::from_str(&text).expect("ports/answers.json is JSON");
    let answers = fixture["answers"]
        .as_array()
        .expect("a list of answers")
        .clone();
    assert!(answers.len() > 100, "{}", answers.len());
    answers
}

/// The answer's inputs as the fixture gives them: the status, the header lines, the wall clock.
fn inputs(case: &Value) -> (u16, Vec<(String, String)>, u64) {
    let status = case["status"].as_u64().expect("a status") as u16;
    let headers = case["headers"]
        .as_array()
        .expect("header lines")
        .iter()
        .map(|h| {
            let text = |i: usize| h[i].as_str().expect("a name and a value").to_string();
            (text(0), text(1))
        })
        .collect();
    let wall = case["wall"]
        .as_u64()
        .expect("the wall clock in nanoseconds");
    (status, headers, wall)
}

/// `ports/answers.json` is what `examples/port_answers.rs` writes now: every captured answer,
/// every hand-made one, each with the library's reading of today.
#[test]
fn the_answers_fixture_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(ANSWERS);
    let on_disk = std::fs::read_to_string(&path).expect("ports/answers.json exists");
    let now = port_answers::fixture();
    if on_disk == now {
        return;
    }
    let names = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with('{') && l.contains("\"name\""))
            .map(str::to_string)
            .collect()
    };
    let (old, new) = (names(&on_disk), names(&now));
    let first = (0..old.len().max(new.len())).find(|&i| old.get(i) != new.get(i));
    let line = |lines: &[String], i: Option<usize>| {
        i.and_then(|i| lines.get(i).cloned())
            .unwrap_or_else(|| "(none)".to_string())
    };
    panic!(
        "{ANSWERS} is out of date ({} answers on disk, {} now); the first that differs:\n  on disk: {}\n  now:     {}\nrun: cargo run --example port_answers -- {ANSWERS}",
        old.len(),
        new.len(),
        line(&old, first),
        line(&new, first)
    );
}

/// `program args… --answers ports/answers.json` reads every answer as the library does: the
/// class, the remaining count, the limit, the wait, the policy and the reset, exactly.
fn port_reads_every_answer_as_the_library(program: &str, args: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases = answers();
    let out = Command::new(program)
        .current_dir(root)
        .args(args)
        .arg("--answers")
        .arg(ANSWERS)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} --answers {ANSWERS}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    let got = got["readings"].as_array().expect("a list of readings");
    assert_eq!(got.len(), cases.len(), "{program}: one reading per answer");
    let mut wrong = Vec::new();
    for (case, port) in cases.iter().zip(got) {
        let (status, headers, wall) = inputs(case);
        let lib = port_answers::reading(status, &headers, wall);
        let lib = serde_json::to_value(&lib).expect("a reading serializes");
        if *port != lib {
            wrong.push(format!(
                "{}\n    {program}: {port}\n    library: {lib}",
                case["name"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{program} {args:?} reads {} of {} answers otherwise than the library:\n  {}",
        wrong.len(),
        cases.len(),
        wrong.join("\n  ")
    );
}

#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test port_scripts python"
)]
fn the_python_port_gives_the_librarys_waits() {
    port_gives_the_librarys_waits("python3", &["ports/python/drive.py"]);
}

#[test]
#[cfg_attr(
    no_python3,
    ignore = "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test port_scripts python"
)]
fn the_python_port_reads_every_answer_as_the_library() {
    port_reads_every_answer_as_the_library("python3", &["ports/python/drive.py"]);
}

#[test]
#[cfg_attr(
    no_ruby,
    ignore = "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test port_scripts ruby"
)]
fn the_ruby_port_gives_the_librarys_waits() {
    port_gives_the_librarys_waits("ruby", &["ports/ruby/drive.rb"]);
}

#[test]
#[cfg_attr(
    no_ruby,
    ignore = "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test port_scripts ruby"
)]
fn the_ruby_port_reads_every_answer_as_the_library() {
    port_reads_every_answer_as_the_library("ruby", &["ports/ruby/drive.rb"]);
}

#[test]
#[cfg_attr(
    no_node,
    ignore = "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test port_scripts javascript"
)]
fn the_javascript_port_gives_the_librarys_waits() {
    port_gives_the_librarys_waits("node", &["ports/javascript/drive.mjs"]);
}

#[test]
#[cfg_attr(
    no_node,
    ignore = "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test port_scripts javascript"
)]
fn the_javascript_port_reads_every_answer_as_the_library() {
    port_reads_every_answer_as_the_library("node", &["ports/javascript/drive.mjs"]);
}

#[test]
#[cfg_attr(
    no_go,
    ignore = "needs go on PATH (none was found when this test was built): install it (apt-get install golang-go), then cargo test --test port_scripts go_port"
)]
fn the_go_port_gives_the_librarys_waits() {
    let driver = go::go_driver();
    port_gives_the_librarys_waits(driver.to_str().expect("a UTF-8 path"), &[]);
}

#[test]
#[cfg_attr(
    no_go,
    ignore = "needs go on PATH (none was found when this test was built): install it (apt-get install golang-go), then cargo test --test port_scripts go_port"
)]
fn the_go_port_reads_every_answer_as_the_library() {
    let driver = go::go_driver();
    port_reads_every_answer_as_the_library(driver.to_str().expect("a UTF-8 path"), &[]);
}
