//! `throttle-sim fit DIR`: the server's rule learned from a trace, so a user who knows only
//! "5,000 per hour" (or nothing) gets a scenario of their own API.
//!
//! The trace is a results folder's `requests.csv` (`client --log-requests`, `run`, or a
//! recording of `serve --record DIR --log-requests`): each request's send time, latency,
//! status and what the answer's rate-limit fields said, parsed and (from a live client) as
//! sent. Each
//! candidate rule is replayed on the recorded requests, admitting those the server admitted,
//! and predicts the remaining count every answer should have carried; the rule and period whose
//! predictions miss the observed counts least is the fit:
//!
//! - a bucket of `B` tokens refilled at `R` per second (GCRA, and a token bucket whose burst is
//!   `B`), its level starting from the first answer's count;
//! - a fixed window of `L` per `W`, its windows aligned to the first jump of the count;
//! - a sliding window of `L` in any `W`.
//!
//! `B` or `L` is what the answers say (`limit`, the policy's quota), else the largest count
//! seen plus one. Periods are searched on a grid of round durations and the policy's window,
//! then refined in steps of 1 %. A trace too short or too even to tell the rules apart (the
//! best two within a fifth of each other, fewer than 20 counts, or a count that never moves up)
//! gets "cannot tell" and what to record, never a confident guess; one without counts (the
//! `none` dialect) gets only what its 429s show.
//!
//! `trace.rs` reads the trace, `rules.rs` replays each rule on it, `search.rs` finds each
//! rule's period and ranks them, and `words.rs` says what was found (the text, the dialect and
//! the scenario it writes).

mod expect;
mod rules;
mod search;
#[cfg(test)]
mod tests;
mod trace;
mod words;

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use rules::Rule;
pub use trace::{Event, in_server_order, read_trace};
pub use words::show_secs;

use search::choose;
use words::{dialect, fleet, sent, what_429s_show};

/// What `fit` concluded.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    /// The rule with its parameters, or none when the trace cannot tell.
    pub rule: Option<Rule>,
    /// 0 to 1: how much better the fit predicts the counts than the best other rule.
    pub confidence: f64,
    /// The header dialect of the sim's nearest to what the answers speak.
    pub dialect: &'static str,
    /// What the answers sent: the forms of their rate-limit fields, in words.
    pub sent: String,
    /// Whether refused requests cost a token (`None`: the trace cannot tell).
    pub refused_cost: Option<bool>,
    /// Each finding with its evidence, one sentence each.
    pub evidence: Vec<String>,
    /// Why it cannot tell, and what to record instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_tell: Option<String>,
    /// The fleet the trace shows: (group, processes, threads).
    pub fleet: Vec<(String, u64, u64)>,
    /// The median latency, in seconds.
    pub latency: f64,
    /// How long the trace is, in seconds.
    pub span: f64,
}

/// Why a trace cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    #[error(
        "{}: no requests.csv; record one with `throttle-sim client --log-requests` (or `run --log-requests`, or `serve --record DIR --log-requests`)",
        .0.display()
    )]
    NoTrace(PathBuf),
    #[error(
        "{}: a `serve --record` folder without requests.csv; record again with `serve --record DIR --log-requests`",
        .0.display()
    )]
    RecordingWithoutTrace(PathBuf),
    #[error("{}: {problem}", path.display())]
    Bad {
        path: PathBuf,
        problem: crate::record::CsvProblem,
    },
    #[error("{}: the trace has no answered request", .0.display())]
    Empty(PathBuf),
    #[error("{}: the scenario fit wrote cannot be run ({why}); please report this", path.display())]
    Unrunnable { path: PathBuf, why: String },
}

/// The verdict on refusals of a trace without any.
const NO_429: &str = "whether refused requests cost a token: cannot tell, the trace has no 429 \
     (record faster than the limit allows)";

/// The fewest remaining counts a fit needs.
pub const MIN_COUNTS: usize = 20;

/// Learn the rule from the events.
pub fn fit(events: &[Event]) -> Fit {
    let counts: Vec<f64> = events.iter().filter_map(|e| e.remaining).collect();
    let span = events.last().map_or(0.0, |e| e.at) - events.first().map_or(0.0, |e| e.at);
    let mut lat: Vec<f64> = events.iter().map(|e| e.latency).collect();
    lat.sort_by(f64::total_cmp);
    let mut out = Fit {
        rule: None,
        confidence: 0.0,
        dialect: dialect(events),
        sent: sent(events),
        refused_cost: None,
        evidence: Vec::new(),
        cannot_tell: None,
        fleet: fleet(events),
        latency: lat.get(lat.len() / 2).copied().unwrap_or(0.0),
        span,
    };
    let ok = events.iter().filter(|e| e.admitted).count();
    let limited = events.iter().filter(|e| e.limited).count();
    out.evidence.push(format!(
        "{} answers over {span:.1} s: {ok} 2xx and {limited} 429",
        events.len()
    ));
    if limited == 0 {
        out.evidence.push(NO_429.into());
    }
    if counts.is_empty() {
        out.evidence.extend(what_429s_show(events));
        out.cannot_tell = Some(
            "the answers carry no remaining count (no rate-limit headers): only the 429s \
             show the rule, and they cannot tell a bucket from a window"
                .into(),
        );
        return out;
    }
    let limits = stated_limits(events);
    if limits.len() > 1 {
        let each: Vec<String> = limits
            .iter()
            .map(|(l, n)| format!("{l} on {n} answers"))
            .collect();
        out.cannot_tell = Some(format!(
            "the answers state {} limits ({}): the server applies several at once and each \
             answer speaks of one of them, where fit replays one rule; record against each \
             limit alone (a route or key that has only it) to fit it",
            limits.len(),
            each.join(", ")
        ));
        return out;
    }
    let stated = events
        .iter()
        .find_map(|e| e.limit.or(e.policy.map(|p| p.0)));
    let seen_max = counts.iter().copied().fold(0.0, f64::max) + 1.0;
    let size = stated.unwrap_or(seen_max);
    match stated {
        Some(l) => out
            .evidence
            .push(format!("the answers state a limit of {l}")),
        None => out.evidence.push(format!(
            "no limit is stated; the largest remaining count seen was {}, so at least {size} \
             (a bucket never seen full may be larger: then its rate is what the counts show, \
             and its size a lower bound)",
            seen_max - 1.0
        )),
    }
    let policy_window = events.iter().find_map(|e| e.policy.map(|p| p.1));
    if let Some(w) = policy_window {
        out.evidence
            .push(format!("the policy states a window of {w} s"));
    }
    let rises = counts.windows(2).filter(|w| w[1] > w[0]).count();
    if counts.len() < MIN_COUNTS || rises == 0 && limited == 0 {
        out.cannot_tell = Some(format!(
            "{} counts, rising {rises} times, {limited} 429s: too few to tell the rules apart; \
             record longer (at least two of the API's periods) and with enough requests to \
             spend the limit",
            counts.len()
        ));
        return out;
    }
    choose(events, size, policy_window, span, &mut out);
    out
}

/// The limits the answers state and on how many answers each: several where a server applies
/// a short and a long limit at once and each answer speaks of the one it names (Flask-Limiter
/// names the one that refused, else the first). A limit stated on fewer than a twentieth of
/// the answers that state one is left out, as a stray.
fn stated_limits(events: &[Event]) -> Vec<(f64, usize)> {
    let mut limits: Vec<(f64, usize)> = Vec::new();
    for l in events
        .iter()
        .filter_map(|e| e.limit.or(e.policy.map(|p| p.0)))
    {
        match limits.iter_mut().find(|(x, _)| *x == l) {
            Some((_, n)) => *n += 1,
            None => limits.push((l, 1)),
        }
    }
    let total: usize = limits.iter().map(|(_, n)| n).sum();
    limits.retain(|(_, n)| *n * 20 >= total);
    limits
}

/// Read, fit, and write the scenario to `out` (default `dir/fit.toml`) when the rule is told,
/// with `[expect]` ranges around what it gives when `expect` says so.
pub fn fit_dir(
    dir: &Path,
    out: Option<&Path>,
    expect: bool,
) -> Result<(Fit, Option<PathBuf>), FitError> {
    let events = read_trace(dir)?;
    let found = fit(&events);
    let name = dir
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .map(crate::scenario::folder_char)
                .collect::<String>()
        })
        .unwrap_or_else(|| "fitted".into());
    let written = match found.scenario(&format!("fit-{}", name.trim_start_matches('.'))) {
        Some(text) => {
            let path = out.map_or_else(|| dir.join("fit.toml"), Path::to_path_buf);
            let write = |text: &str| {
                fs::write(&path, text).map_err(|e| FitError::Bad {
                    path: path.clone(),
                    problem: crate::record::CsvProblem {
                        line: None,
                        why: format!("cannot write it: {e}"),
                    },
                })
            };
            // The scenario is run as written, and the [expect] ranges drawn around what it
            // gave are added to it, so `check` on it passes until the clients do worse.
            write(&text)?;
            if !expect {
                return Ok((found, Some(path)));
            }
            let seen = expect::run_scenario(&path).map_err(|e| FitError::Unrunnable {
                path: path.clone(),
                why: e.to_string(),
            })?;
            write(&format!("{text}{}", expect::table(&seen)))?;
            Some(path)
        }
        None => None,
    };
    Ok((found, written))
}
