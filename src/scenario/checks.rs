//! The range checks a typed scenario must pass: each section's values against each other and
//! against what the tool can run, every problem named with its field.

use super::builder::Builder;
use super::path::FieldPath;
use super::{
    ClientGroup, CompareConfig, EXPECTABLE_METRICS, Expect, GroupCommon, Mode, Override, RunConfig,
    Variant,
};
use crate::limiter::FaultConfig;
use crate::store::StoreConfig;
use crate::time::HumanDuration;

/// The largest scenario file read (`read.rs`). The bundled ones are a few kilobytes, but the
/// tool writes larger ones: a recording of 10,000 clients with a key each is about 2 MB of
/// groups, and every scenario must fit this bound written out (`load::fits_when_written`).
/// It stands here, with the other bounds, so that the reader and the loader both take it
/// from below rather than from each other.
pub const MAX_SCENARIO_BYTES: u64 = 8 << 20;

/// The most seeds `[run] seeds` may ask for (as `compare --seeds`).
pub const MAX_SEEDS: u32 = 10_000;

/// The finest `[run] sample_every`: a series row per thread per millisecond is already far
/// finer than any rate limit's window, and finer ones only fill the disk.
pub const MIN_SAMPLE_EVERY: HumanDuration = HumanDuration(1_000_000);

/// The fastest a live run or `serve` may go. Virtual time is integer nanoseconds: at this
/// scale its 584 years last 21 days of real time, and one millisecond of timer slack is
/// already 10 s of the clients' time. Far faster, the clock runs out at once (at 1e12 its
/// whole range passes in 18 ms of real time) and the bucket freezes.
pub const MAX_TIME_SCALE: f64 = 10_000.0;

/// The slowest a live run or `serve` may go: a second of the clients' time lasts about 17
/// minutes of real time, a minute 17 hours. Slower, a run of any length outlives whoever
/// started it (at 1e-12 a minute takes 1.9 million years) and a wait turned into real time
/// passes what a clock can hold.
pub const MIN_TIME_SCALE: f64 = 0.001;

/// Why a `time_scale` cannot be run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TimeScaleError {
    #[error("must be a number above 0 (got {0})")]
    NotPositive(f64),
    #[error(
        "must be at most {MAX_TIME_SCALE} (got {0}): faster, timers are too coarse for the \
         clients and the virtual clock runs out"
    )]
    TooFast(f64),
    #[error(
        "must be at least {MIN_TIME_SCALE} (got {0:e}): slower, a second of the clients' time \
         lasts over 16 minutes and a run outlives its user"
    )]
    TooSlow(f64),
}

/// `time_scale` (or `serve --time-scale`): from [`MIN_TIME_SCALE`] to [`MAX_TIME_SCALE`].
pub fn check_time_scale(scale: f64) -> Result<(), TimeScaleError> {
    if !(scale.is_finite() && scale > 0.0) {
        Err(TimeScaleError::NotPositive(scale))
    } else if scale > MAX_TIME_SCALE {
        Err(TimeScaleError::TooFast(scale))
    } else if scale < MIN_TIME_SCALE {
        Err(TimeScaleError::TooSlow(scale))
    } else {
        Ok(())
    }
}

/// The most threads a scenario may have in all.
const MAX_THREADS: u64 = 10_000_000;

/// The longest scenario name, in characters.
const MAX_NAME_CHARS: usize = 100;

/// Why a scenario's `name` cannot name its results folder.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("must not be empty: it names the results folder")]
    Empty,
    #[error("is {0} characters long; at most {MAX_NAME_CHARS} (it names the results folder)")]
    TooLong(usize),
    #[error(
        "`{name}` cannot name a results folder: use letters, digits, `_`, `-` and `.` (not \
         first), e.g. `{}`",
        safe_name(name)
    )]
    BadCharacters { name: String },
}

/// A scenario's `name` becomes a folder under `results/`, so it may not climb out of it
/// (`../../etc/x`) or be empty (`results/-<time>`): letters, digits, `_`, `-` and `.`, not
/// starting with `.` or `-`, at most [`MAX_NAME_CHARS`] characters.
pub fn check_name(name: &str) -> Result<(), NameError> {
    let ok_char = |c: char| folder_char(c) == c;
    let chars = name.chars().count();
    if name.is_empty() {
        Err(NameError::Empty)
    } else if chars > MAX_NAME_CHARS {
        Err(NameError::TooLong(chars))
    } else if name.starts_with(['.', '-']) || !name.chars().all(ok_char) {
        Err(NameError::BadCharacters { name: name.into() })
    } else {
        Ok(())
    }
}

/// `c` when a folder's name may hold it anywhere on any system (letters and digits of any
/// script, `_`, `-`, `.`), else `_`.
pub fn folder_char(c: char) -> char {
    if c.is_alphanumeric() || matches!(c, '_' | '-' | '.') {
        c
    } else {
        '_'
    }
}

/// A character that shows nothing, or changes how the text around it shows: controls
/// (newline, escape), zero-width characters, the soft hyphen, the byte-order mark, and the
/// bidirectional marks, embeddings, overrides and isolates (a name with U+202E reads
/// backwards in every table).
pub fn unseen_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00AD}'
                | '\u{061C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// `name` with every character [`check_name`] refuses replaced by `_` (and a leading `.` or
/// `-` dropped), for names taken from a file's name.
pub fn safe_name(name: &str) -> String {
    let s: String = name.chars().take(MAX_NAME_CHARS).map(folder_char).collect();
    let s = s.trim_start_matches(['.', '-']);
    if s.is_empty() {
        "scenario".into()
    } else {
        s.into()
    }
}

impl Builder {
    pub(super) fn check_run(&mut self, run: &RunConfig, at: &FieldPath) {
        if run.seed.is_some_and(|s| i64::try_from(s).is_err()) {
            self.problem(at.key("seed"), format!("must be at most {}", i64::MAX));
        }
        if run.duration < MIN_SAMPLE_EVERY {
            self.problem(
                at.key("duration"),
                format!("must be at least {MIN_SAMPLE_EVERY} (got {})", run.duration),
            );
        }
        if run.sample_every < MIN_SAMPLE_EVERY {
            self.problem(
                at.key("sample_every"),
                format!(
                    "must be at least {MIN_SAMPLE_EVERY} (got {}): each sample writes a row per \
                     thread, and rate limits are not measured in microseconds",
                    run.sample_every
                ),
            );
        } else if run.sample_every > run.duration && run.duration >= MIN_SAMPLE_EVERY {
            self.problem(
                at.key("sample_every"),
                format!("must be at most the run's duration ({})", run.duration),
            );
        }
        match run.peak_window {
            Some(w) if w.nanos() == 0 => {
                self.problem(at.key("peak_window"), "must be longer than 0s")
            }
            Some(w) if w > run.duration && run.duration.nanos() > 0 => self.problem(
                at.key("peak_window"),
                format!(
                    "{w} is longer than the run ({}); a peak over the whole run is `requests`",
                    run.duration
                ),
            ),
            _ => {}
        }
        if run.fairness_window.nanos() == 0 {
            self.problem(at.key("fairness_window"), "must be longer than 0s");
        }
        if run.seeds.is_some_and(|n| !(1..=MAX_SEEDS).contains(&n)) {
            self.problem(
                at.key("seeds"),
                format!(
                    "must be from 1 to {MAX_SEEDS} (got {})",
                    run.seeds.unwrap_or(0)
                ),
            );
        }
        if let Err(message) = check_time_scale(run.time_scale) {
            self.problem(at.key("time_scale"), message);
        }
    }

    pub(super) fn check_faults(&mut self, faults: &FaultConfig, run: &RunConfig, at: &FieldPath) {
        for p in faults.problems(run.duration) {
            let field = at.key(p.field);
            let path = match p.index {
                Some(i) => field.index(i),
                None => field,
            };
            self.problem(path, p.message);
        }
    }

    pub(super) fn check_clients(
        &mut self,
        groups: &[ClientGroup],
        run: &RunConfig,
        at: &FieldPath,
    ) {
        let mut total: u64 = 0;
        // Names seen so far: a set, as a file of many groups must not take quadratic time.
        let mut seen = std::collections::HashSet::new();
        for (i, g) in groups.iter().enumerate() {
            let here = at.index(i);
            self.check_group_name(&g.common.name, &mut seen, &here);
            self.check_group(&g.common, run, &here);
            total += u64::from(g.common.processes) * u64::from(g.common.threads);
        }
        if total > MAX_THREADS {
            self.problem(
                at.clone(),
                format!("{total} threads in all; at most {MAX_THREADS} are supported"),
            );
        }
    }

    /// Group `i`'s name: not empty, visible as written, usable in a `--set` path, and its own.
    fn check_group_name<'a>(
        &mut self,
        name: &'a str,
        seen: &mut std::collections::HashSet<&'a str>,
        here: &FieldPath,
    ) {
        if name.trim().is_empty() {
            self.problem(here.key("name"), "must not be empty");
        }
        if let Some(c) = name.chars().find(|&c| unseen_char(c)) {
            self.problem(
                here.key("name"),
                format!(
                    "`{}` holds U+{:04X}, a control, invisible or direction-changing character: \
                     it would garble the tables (and hide what the name says); write the name \
                     without it",
                    name.escape_debug(),
                    c as u32
                ),
            );
        }
        if name == "*" || name.contains('.') || name.parse::<usize>().is_ok() {
            self.problem(
                here.key("name"),
                format!(
                    "`{name}` cannot name a group: --set clients.NAME.field reads `*` as every \
                     group, a number as a position and `.` as a separator"
                ),
            );
        }
        if !seen.insert(name) {
            self.problem(here.key("name"), format!("`{name}` names two groups"));
        }
    }

    /// A group's sizes, workload and times.
    fn check_group(&mut self, c: &GroupCommon, run: &RunConfig, here: &FieldPath) {
        if c.processes == 0 {
            self.problem(here.key("processes"), "must be at least 1 (got 0)");
        }
        if c.jobs == Some(0) {
            self.problem(here.key("jobs"), "must be at least 1 (got 0)");
        }
        if c.pool == Some(0) {
            self.problem(here.key("pool"), "must be at least 1 (got 0)");
        }
        if c.pool.is_some() && c.jobs.is_some() {
            self.problem(
                here.key("pool"),
                "a group has either `jobs` (per thread) or `pool` (shared), not both",
            );
        }
        if c.pool.is_some() && run.mode == Mode::Live && c.processes > 1 {
            self.problem(
                here.key("pool"),
                format!(
                    "a live run shares a pool only between the threads of one process (got processes = {})",
                    c.processes
                ),
            );
        }
        if c.threads == 0 {
            self.problem(here.key("threads"), "must be at least 1 (got 0)");
        }
        if c.start >= run.duration {
            self.problem(
                here.key("start"),
                format!(
                    "{} is not before the end of the run ({})",
                    c.start, run.duration
                ),
            );
        }
        if let Some(stop) = c.stop
            && stop <= c.start
        {
            self.problem(
                here.key("stop"),
                format!("must be after start ({}) (got {stop})", c.start),
            );
        } else if let Some(stop) = c.stop
            && stop > run.duration
        {
            self.problem(
                here.key("stop"),
                format!(
                    "{stop} is after the end of the run ({}); leave stop out to run to the end",
                    run.duration
                ),
            );
        }
    }

    pub(super) fn check_variants(&mut self, variants: &[Variant], at: &FieldPath) {
        for (i, v) in variants.iter().enumerate() {
            if variants[..i].iter().any(|o| o.name == v.name) {
                self.problem(
                    at.index(i).key("name"),
                    format!("`{}` names two variants", v.name),
                );
            }
            for (path, value) in &v.set {
                if let Err(e) = Override::new(path, value.clone()) {
                    self.problem(at.index(i).key("set"), e);
                }
            }
        }
    }

    /// The url, and: a live run whose processes coordinate through the store needs one they
    /// all reach (in memory, each process would have its own).
    pub(super) fn check_store(
        &mut self,
        store: &StoreConfig,
        run: &RunConfig,
        groups: &[ClientGroup],
        top: &FieldPath,
    ) {
        for (field, message) in store.problems() {
            self.problem(top.key("store").key(field), message);
        }
        if run.mode != Mode::Live || store.url.is_some() {
            return;
        }
        let mut scopes: Vec<(String, u64, usize)> = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            if let Some(scope) = g.throttle.store_scope(&g.common.name, g.common.key()) {
                match scopes.iter_mut().find(|(s, _, _)| *s == scope) {
                    Some(entry) => entry.1 += u64::from(g.common.processes),
                    None => scopes.push((scope, u64::from(g.common.processes), i)),
                }
            }
        }
        for (_, processes, first) in scopes.into_iter().filter(|(_, p, _)| *p > 1) {
            let g = &groups[first];
            self.problem(
                top.key("clients").index(first).key("algorithm"),
                format!(
                    "{} coordinates its {processes} processes through a shared store, and the \
                     processes of a live run share none without Redis: add `[store] url = \
                     \"redis://127.0.0.1:6379\"` to the scenario or pass --store \
                     redis://127.0.0.1:6379 (or use one process, or sim mode)",
                    g.throttle.name()
                ),
            );
        }
    }

    pub(super) fn check_compare(&mut self, compare: &CompareConfig, at: &FieldPath) {
        let Some(metrics) = &compare.metrics else {
            return;
        };
        if metrics.is_empty() {
            self.problem(at.clone(), "name at least one metric");
        }
        for (i, m) in metrics.iter().enumerate() {
            if !EXPECTABLE_METRICS.contains(&m.as_str()) {
                self.problem(
                    at.clone(),
                    format!(
                        "unknown metric `{m}`, expected one of: {}{}",
                        EXPECTABLE_METRICS.join(", "),
                        crate::suggest::did_you_mean(m, EXPECTABLE_METRICS.iter().copied())
                    ),
                );
            } else if metrics[..i].contains(m) {
                self.problem(at.clone(), format!("`{m}` is named twice"));
            }
        }
    }

    pub(super) fn check_expect(&mut self, expect: &Expect, at: &FieldPath) {
        for (metric, [lo, hi]) in expect {
            if !EXPECTABLE_METRICS.contains(&metric.as_str()) {
                self.problem(
                    at.key(metric),
                    format!(
                        "unknown metric, expected one of: {}{}",
                        EXPECTABLE_METRICS.join(", "),
                        crate::suggest::did_you_mean(metric, EXPECTABLE_METRICS.iter().copied())
                    ),
                );
            } else if lo.is_nan() || hi.is_nan() {
                self.problem(
                    at.key(metric),
                    format!("range [{lo}, {hi}] holds a value that is not a number"),
                );
            } else if lo > hi {
                self.problem(
                    at.key(metric),
                    format!("range [{lo}, {hi}] is upside down; write [low, high]"),
                );
            }
        }
    }
}
