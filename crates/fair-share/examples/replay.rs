//! Replays an event script (`ports/scripts/*.json`; the format is in `ports/README.md`) through
//! the law and prints the wait it returned for each `wait` event, in integer nanoseconds, as
//! one JSON line `{"waits":[…]}`. Every port has the same mode; the test
//! `tests/ports/` holds them to this one.
//!
//!     cargo run -p fair-share --example replay -- ports/scripts/bucket.json

use std::time::{Duration, SystemTime};

use fair_share::{Answer, Cycle, Draw, FairShare, Params};
use serde_json::Value;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: replay SCRIPT.json");
        std::process::exit(2);
    };
    match replay(&path) {
        Ok(waits) => println!("{}", serde_json::json!({ "waits": waits })),
        Err(e) => {
            eprintln!("replay: {path}: {e}");
            std::process::exit(2);
        }
    }
}

pub fn replay(path: &str) -> Result<Vec<u64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let script: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    replay_with(&script, draws(&script["random"])?)
}

/// The waits of `script` with the law drawing from `draw` instead of the script's `random`
/// (the tests draw otherwise to show the waits hang on the draws).
pub fn replay_with(script: &Value, draw: impl Draw + Send + 'static) -> Result<Vec<u64>, String> {
    let threads = uint(script, "threads")? as usize;
    let mut params = Params::default();
    if let Some(map) = script["params"].as_object() {
        for (name, v) in map {
            let v = v.as_f64().ok_or(format!("params.{name} is not a number"))?;
            params.set(name, v)?;
        }
    }
    let law = FairShare::with_draw(threads, params, draw);
    let events = script["events"].as_array().ok_or("events is not a list")?;
    let mut waits = Vec::new();
    for e in events {
        let at = Duration::from_nanos(uint(e, "at")?);
        let thread = uint(e, "thread")? as usize;
        match e["do"].as_str() {
            Some("wait") => {
                waits.push(u64::try_from(law.wait(thread, at).as_nanos()).unwrap_or(u64::MAX))
            }
            Some("answer") => {
                let headers: Vec<(&str, &str)> = e["headers"]
                    .as_array()
                    .ok_or("headers is not a list")?
                    .iter()
                    .filter_map(|h| Some((h[0].as_str()?, h[1].as_str()?)))
                    .collect();
                let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(uint(e, "unix")?);
                let latency = Duration::from_nanos(uint(e, "latency")?);
                let status = uint(e, "status")? as u16;
                law.observe(thread, at, &Answer::read(status, headers, latency, wall));
            }
            other => return Err(format!("unknown event {other:?}")),
        }
    }
    Ok(waits)
}

/// A script's `random`: one number every draw returns (a list of one), or a list the draws go
/// round in order.
pub fn draws(random: &Value) -> Result<Cycle, String> {
    if let Some(u) = random.as_f64() {
        return Ok(Cycle::new(vec![u]).expect("one number"));
    }
    let units = random
        .as_array()
        .ok_or(format!("random is neither a number nor a list: {random}"))?
        .iter()
        .map(|u| u.as_f64().ok_or(format!("random holds {u}, not a number")))
        .collect::<Result<Vec<f64>, String>>()?;
    Cycle::new(units).ok_or("random is an empty list".to_string())
}

fn uint(v: &Value, key: &str) -> Result<u64, String> {
    v[key]
        .as_u64()
        .ok_or(format!("{key} is not a whole number: {}", v[key]))
}
