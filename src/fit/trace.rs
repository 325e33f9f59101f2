//! The trace: `requests.csv`'s answered requests, in the order the server decided them.

use fair_share::Forms;

use super::FitError;
use crate::exchange::RAW_FIELDS;
use crate::record::{CsvProblem, open_csv};
use std::path::Path;

/// One answered request of the trace, in the server's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// When the server decided: the send time plus half the latency, in seconds.
    pub at: f64,
    pub admitted: bool,
    pub limited: bool,
    pub remaining: Option<f64>,
    pub limit: Option<f64>,
    pub policy: Option<(f64, f64)>,
    pub reset: Option<f64>,
    /// The wait a 429 asked for, in seconds.
    pub retry_after: Option<f64>,
    pub latency: f64,
    pub group: String,
    pub process: u64,
    pub thread: u64,
    /// The forms its raw columns (`exchange::RAW_FIELDS`) are written in: none in a trace
    /// without them (a sim's, a recording's, an older client's).
    pub forms: Forms,
}

/// The longest a trace's times may reach, in seconds: a century, well within what a
/// scenario's duration holds (584 years).
const MAX_TRACE_SECS: f64 = 100.0 * 365.0 * 86_400.0;

/// The answered requests of `dir/requests.csv`, in the server's order.
pub fn read_trace(dir: &Path) -> Result<Vec<Event>, FitError> {
    let path = dir.join("requests.csv");
    if !path.exists() {
        if dir.join("clients.csv").is_file() {
            return Err(FitError::RecordingWithoutTrace(dir.to_path_buf()));
        }
        return Err(FitError::NoTrace(dir.to_path_buf()));
    }
    let wrong = |problem: CsvProblem| FitError::Bad {
        path: path.clone(),
        problem,
    };
    let bad = |line: u64, why: String| wrong(CsvProblem::at(line, why));
    let (mut rdr, header) = open_csv(&path).map_err(wrong)?;
    let col = |name: &str| header.iter().position(|h| h == name);
    let need = |name: &str| col(name).ok_or_else(|| bad(1, format!("no `{name}` column")));
    let (t, status, latency) = (need("t")?, need("status")?, need("latency")?);
    let (group, process, thread) = (need("group")?, need("process")?, need("thread")?);
    let opt = |row: &csv::StringRecord, c: Option<usize>| -> Option<f64> {
        c.and_then(|c| row.get(c))
            .filter(|s| !s.is_empty())
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|x| x.is_finite())
    };
    let (remaining, limit, plimit, pwindow, reset) = (
        col("remaining"),
        col("limit"),
        col("policy_limit"),
        col("policy_window"),
        col("reset"),
    );
    let retry_after = col("retry_after");
    let raw: Vec<Option<usize>> = RAW_FIELDS.iter().map(|f| col(f)).collect();
    let mut events = Vec::new();
    for row in rdr.records() {
        let row = row.map_err(|e| wrong(CsvProblem::of(&e)))?;
        let line = row.position().map_or(0, |p| p.line());
        let number = |c: usize, what: &str| {
            row.get(c)
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(line, format!("{what} is not a number")))
        };
        let s = row.get(status).unwrap_or("");
        let (admitted, limited) = (s == "ok", s == "limited");
        if !admitted && !limited {
            continue; // errors and timeouts say nothing of the rule
        }
        // A time past any trace would make a fit.toml whose duration cannot be read back.
        let seconds = |c: usize, what: &str| {
            let v = number(c, what)?;
            if v.abs() > MAX_TRACE_SECS {
                let text = row.get(c).unwrap_or_default();
                return Err(bad(
                    line,
                    format!("{what} = {text} s is past any trace (at most a century)"),
                ));
            }
            Ok(v)
        };
        let lat = seconds(latency, "latency")?;
        events.push(Event {
            at: seconds(t, "t")? + lat / 2.0,
            admitted,
            limited,
            remaining: opt(&row, remaining),
            limit: opt(&row, limit),
            policy: opt(&row, plimit).zip(opt(&row, pwindow)),
            reset: opt(&row, reset),
            retry_after: opt(&row, retry_after),
            latency: lat,
            group: row.get(group).unwrap_or("").to_string(),
            process: number(process, "process")? as u64,
            thread: number(thread, "thread")? as u64,
            forms: Forms::of(
                RAW_FIELDS
                    .iter()
                    .zip(&raw)
                    .filter_map(|(name, c)| Some((*name, c.and_then(|c| row.get(c))?)))
                    .filter(|(_, v)| !v.is_empty()),
            ),
        });
    }
    if events.is_empty() {
        return Err(FitError::Empty(dir.to_path_buf()));
    }
    in_server_order(&mut events);
    Ok(events)
}

/// Sort the events in the order the server decided them, as far as a client's trace shows it:
/// by the middle of each request's flight, except that requests in flight together (each sent
/// before the one before it was answered) may have reached the server in any order. Within
/// such a group the server's own count says the order: it only falls from one decision to
/// the next (a refill or a reset between two requests a millisecond apart is rare), so the
/// group is put in falling order of its counts, 2xx before 429 at equal counts, on the
/// group's times in rising order.
pub fn in_server_order(events: &mut [Event]) {
    events.sort_by(|a, b| a.at.total_cmp(&b.at));
    let mut start = 0;
    let mut answered_by = f64::NEG_INFINITY;
    for i in 0..=events.len() {
        let joins = events
            .get(i)
            .is_some_and(|e| e.at - e.latency / 2.0 < answered_by);
        if !joins {
            if i - start > 1 {
                let group = &mut events[start..i];
                let times: Vec<f64> = group.iter().map(|e| e.at).collect();
                // And of equal counts, the 2xx first: once a request is refused, the next
                // is too until the count rises.
                group.sort_by(|a, b| {
                    let count = |e: &Event| e.remaining.unwrap_or(f64::NEG_INFINITY);
                    count(b)
                        .total_cmp(&count(a))
                        .then(b.admitted.cmp(&a.admitted))
                });
                for (e, t) in group.iter_mut().zip(times) {
                    e.at = t;
                }
            }
            start = i;
            answered_by = f64::NEG_INFINITY;
        }
        if let Some(e) = events.get(i) {
            answered_by = answered_by.max(e.at + e.latency / 2.0);
        }
    }
}
