//! One run from a validated scenario to its results folder.

use std::fs::{self, File};
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

use indicatif::{ProgressBar, ProgressStyle};

use crate::engine::live::{self, LiveConfig, LiveWatch, StatusText, Target};
use crate::engine::{self, sim};
use crate::error::Error;
use crate::progress::StatusLine;
use crate::record::{self, Summary, THREADS_FILE, too_big_for, too_large};
use crate::report::write_summary;
use crate::scenario::{Layout, Mode, Scenario};
use crate::time::secs;

pub struct RunOptions<'a> {
    /// The results folder; default `results/<scenario>-<UTC timestamp>`.
    pub out: Option<PathBuf>,
    /// Write `requests.csv`, one row per request.
    pub log_requests: bool,
    /// Show a progress bar (only drawn on a terminal).
    pub progress: bool,
    /// Set by Ctrl-C: end early, keep what was recorded, mark the summary partial.
    pub interrupt: &'a AtomicBool,
    /// `--allow-large-output`: write a `series.csv` past [`record::MAX_SERIES_BYTES`].
    pub allow_large_output: bool,
}

/// Refuse (exit 2) a run whose `series.csv` would pass [`record::MAX_SERIES_BYTES`], unless allowed,
/// before anything is written.
pub fn check_series_size(scenario: &Scenario, allow: bool) -> Result<(), Error> {
    match too_large(scenario) {
        Some(estimate) if !allow => Err(Error::SeriesTooLarge {
            estimate,
            threads: scenario.threads_total(),
        }),
        _ => Ok(()),
    }
}

/// Refuse (exit 2) a run that would need more memory than this machine has free
/// (`record::memory_estimate`), before anything is written or started.
pub fn check_memory(scenario: &Scenario) -> Result<(), Error> {
    match crate::machine::available_memory().and_then(|free| too_big_for(scenario, free)) {
        Some(e) => Err(Error::usage(e)),
        None => Ok(()),
    }
}

pub struct RunResult {
    pub dir: PathBuf,
    pub summary: Summary,
}

/// Run `scenario` and write every output file; the summary's `[expect]` verdicts are judged.
/// Live mode runs against the scenario's server, started in this process.
pub fn run_scenario(scenario: &Scenario, opts: &RunOptions<'_>) -> Result<RunResult, Error> {
    match scenario.run.mode {
        Mode::Sim => with_progress_bar(opts.progress, scenario, |on_progress| {
            run_scenario_with(scenario, opts, on_progress)
        }),
        Mode::Live => {
            let cfg = LiveConfig::new(Target::InProcess).map_err(Error::Engine)?;
            run_live(scenario, opts, &cfg)
        }
    }
}

/// As [`run_scenario`], reporting the virtual time reached to `on_progress` instead of drawing
/// a bar of its own (`opts.progress` is not read), for callers that show several runs at once.
pub fn run_scenario_with(
    scenario: &Scenario,
    opts: &RunOptions<'_>,
    on_progress: &mut dyn FnMut(crate::time::Nanos),
) -> Result<RunResult, Error> {
    match scenario.run.mode {
        Mode::Sim => run_with(scenario, opts, None, on_progress),
        Mode::Live => {
            let cfg = LiveConfig::new(Target::InProcess).map_err(Error::Engine)?;
            run_with(scenario, opts, Some(&cfg), on_progress)
        }
    }
}

/// Run `scenario` live as `cfg` says (e.g. against an external endpoint), with a status line
/// on a terminal: times, rate, 2xx, 429, errors and the last `remaining`, a few times a second.
pub fn run_live(
    scenario: &Scenario,
    opts: &RunOptions<'_>,
    cfg: &LiveConfig,
) -> Result<RunResult, Error> {
    let watch = Arc::new(LiveWatch::new());
    let mut text = StatusText::new(Some(scenario.run.duration.nanos()), false);
    let shown = watch.clone();
    let line = StatusLine::start(!opts.progress, move || text.line(shown.snapshot()));
    let mut cfg = cfg.clone();
    if line.is_some() {
        cfg.watch = Some(watch);
    }
    let result = run_with(scenario, opts, Some(&cfg), &mut |_| {});
    drop(line);
    result
}

/// Draw a bar (on a terminal, when wanted) for the duration of `f`.
fn with_progress_bar<T>(
    wanted: bool,
    scenario: &Scenario,
    f: impl FnOnce(&mut dyn FnMut(crate::time::Nanos)) -> T,
) -> T {
    let bar = progress_bar(wanted, scenario);
    let mut on_progress = |t| bar.set_position(secs(t) as u64);
    let result = f(&mut on_progress);
    bar.finish_and_clear();
    result
}

fn run_with(
    scenario: &Scenario,
    opts: &RunOptions<'_>,
    live: Option<&LiveConfig>,
    on_progress: &mut dyn FnMut(crate::time::Nanos),
) -> Result<RunResult, Error> {
    check_series_size(scenario, opts.allow_large_output)?;
    check_memory(scenario)?;
    // An unreachable store would leave a folder with an empty series.csv and no summary:
    // try it before anything is written.
    if live.is_some()
        && let Some(url) = &scenario.store.url
    {
        // What the user named cannot be reached: bad input (2), not a run that failed (3).
        crate::store::RedisLink::connect(url).map_err(Error::flag("store.url"))?;
    }
    let dir = match &opts.out {
        Some(dir) => claim_given_dir(dir)?,
        None => claim_new_dir(
            Path::new("results"),
            &scenario.folder_name(),
            SystemTime::now(),
        )?,
    };
    fs::write(dir.join("scenario.toml"), scenario.to_toml()).map_err(Error::io(&dir))?;

    let series_path = dir.join("series.csv");
    let series = File::create(&series_path).map_err(Error::io(&series_path))?;
    let requests_path = dir.join("requests.csv");
    let requests = if opts.log_requests {
        Some(BufWriter::new(
            File::create(&requests_path).map_err(Error::io(&requests_path))?,
        ))
    } else {
        None
    };

    let control = engine::Control {
        progress: on_progress,
        interrupt: opts.interrupt,
    };
    let mut summary = match live {
        None => {
            sim::run(scenario, series, requests, control).map_err(Error::engine(&series_path))?
        }
        Some(cfg) => live::run(scenario, series, requests, cfg, control)
            .map_err(Error::engine(&series_path))?,
    };

    summary.judge(&scenario.expect);
    write_summary(&dir, &summary, scenario)?;
    if !summary.thread_totals.is_empty() {
        write_thread_totals(&dir, &summary, scenario)?;
    }
    Ok(RunResult { dir, summary })
}

fn progress_bar(wanted: bool, scenario: &Scenario) -> ProgressBar {
    if !wanted || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(scenario.run.duration.secs() as u64);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} s simulated ({eta})")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    bar.set_message(scenario.title());
    bar
}

/// `threads.csv`: every thread's totals, for a run whose `series.csv` rows cover more.
fn write_thread_totals(dir: &Path, summary: &Summary, scenario: &Scenario) -> Result<(), Error> {
    let path = dir.join(THREADS_FILE);
    let file = File::create(&path).map_err(Error::io(&path))?;
    record::write_thread_totals(file, summary, &Layout::new(scenario)).map_err(Error::io(&path))
}

/// `--out DIR`: may exist only if empty, so no earlier run is ever overwritten.
pub fn claim_given_dir(dir: &Path) -> Result<PathBuf, Error> {
    claim_dir_for("--out", dir)
}

/// Why a folder the user named cannot take a run's results.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("is a file, not a folder; give a new or empty folder")]
    IsAFile,
    #[error("cannot read it: {0}")]
    Unreadable(std::io::Error),
    #[error("the folder is not empty; results never overwrite an earlier run")]
    NotEmpty,
    #[error("cannot create the folder: {0}")]
    Uncreatable(std::io::Error),
    #[error("cannot write in it: {0}")]
    Unwritable(std::io::Error),
    #[error(
        "another run is claiming this folder at this moment; give each run a folder of its own"
    )]
    Busy,
    #[error("is a symbolic link to {0}, which does not exist; create that folder, or give another")]
    DanglingLink(String),
    #[error("is a symbolic link that leads back to itself; give a folder")]
    LoopingLink,
}

/// The name of the empty file that claims a results folder for one run while it is checked:
/// made with `create_new`, so of two runs given the same folder at once only one gets it.
const CLAIM_FILE: &str = ".throttle-sim-write-test";

/// A results folder the user named with `flag` (`--out`, `serve --record`): new or empty, and
/// writable; any problem is bad input naming the flag.
pub fn claim_dir_for(flag: &str, dir: &Path) -> Result<PathBuf, Error> {
    // What the user gave is wrong (a file, under a file, not writable): exit 2 naming the
    // flag, not a failed run.
    check_folder(dir).map_err(Error::flag(format!("{flag} {}", dir.display())))?;
    Ok(dir.to_path_buf())
}

/// Make `dir` if it is missing; refuse it if it is a file, holds anything, or cannot be
/// written (found now rather than mid-run).
fn check_folder(dir: &Path) -> Result<(), FolderError> {
    // A symbolic link that leads nowhere, or in a circle, is named as such ("File exists"
    // was all create_dir_all said).
    if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink())
        && let Err(e) = fs::metadata(dir)
    {
        const ELOOP: i32 = 40;
        if e.raw_os_error() == Some(ELOOP) {
            return Err(FolderError::LoopingLink);
        }
        let target = fs::read_link(dir).map_or_else(|_| "?".into(), |t| t.display().to_string());
        return Err(FolderError::DanglingLink(target));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(FolderError::IsAFile);
    }
    if dir.exists() {
        only_entries(dir, &[])?;
    } else {
        fs::create_dir_all(dir).map_err(FolderError::Uncreatable)?;
    }
    let probe = dir.join(CLAIM_FILE);
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(FolderError::Busy),
        Err(e) => return Err(FolderError::Unwritable(e)),
    }
    // Another run may have begun writing between the look above and the claim.
    let other = only_entries(dir, &[CLAIM_FILE]);
    match fs::remove_file(&probe) {
        Ok(()) => other,
        // Only a run racing for the folder removes the claim of another.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(FolderError::Busy),
        Err(e) => Err(FolderError::Unwritable(e)),
    }
}

/// `dir` holds nothing but `allowed`.
fn only_entries(dir: &Path, allowed: &[&str]) -> Result<(), FolderError> {
    let entries = fs::read_dir(dir).map_err(FolderError::Unreadable)?;
    for e in entries {
        let e = e.map_err(FolderError::Unreadable)?;
        if !allowed.iter().any(|a| e.file_name() == *a) {
            return Err(FolderError::NotEmpty);
        }
    }
    Ok(())
}

/// `results/<name>-<UTC timestamp>`, with `-2`, `-3`, … when that exists already.
pub fn claim_new_dir(base: &Path, name: &str, now: SystemTime) -> Result<PathBuf, Error> {
    fs::create_dir_all(base).map_err(Error::io(base))?;
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    for n in 1.. {
        let leaf = if n == 1 {
            format!("{name}-{stamp}")
        } else {
            format!("{name}-{stamp}-{n}")
        };
        let dir = base.join(leaf);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&dir)(e)),
        }
    }
    unreachable!("some suffix is always free")
}

/// Print to stdout, ignoring a closed pipe (`| head`).
pub fn print(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn links_that_lead_nowhere_or_in_a_circle_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        let e = check_folder(&dangling).unwrap_err().to_string();
        assert!(
            e.contains("symbolic link to") && e.contains("nowhere"),
            "{e}"
        );
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let e = check_folder(&a).unwrap_err().to_string();
        assert!(e.contains("leads back to itself"), "{e}");
        // A link to a real empty folder is fine.
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        check_folder(&link).unwrap();
    }

    #[test]
    fn a_folder_claimed_by_another_run_is_refused_as_busy() {
        let tmp = tempfile::tempdir().unwrap();
        // Another run's claim, made a moment ago.
        fs::write(tmp.path().join(CLAIM_FILE), b"").unwrap();
        let e = check_folder(tmp.path()).unwrap_err();
        assert!(
            matches!(e, FolderError::NotEmpty | FolderError::Busy),
            "{e}"
        );
        let e = e.to_string();
        assert!(!e.contains("No such file"), "{e}");
    }

    #[test]
    fn two_runs_given_one_folder_at_once_the_loser_is_told_why() {
        for _ in 0..50 {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("out");
            let results: Vec<Result<(), String>> = std::thread::scope(|s| {
                let a = s.spawn(|| check_folder(&dir).map_err(|e| e.to_string()));
                let b = s.spawn(|| check_folder(&dir).map_err(|e| e.to_string()));
                vec![a.join().unwrap(), b.join().unwrap()]
            });
            for r in &results {
                if let Err(e) = r {
                    assert!(
                        e.contains("another run is claiming") || e.contains("not empty"),
                        "{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn new_dirs_never_collide() {
        let tmp = tempfile::tempdir().unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let a = claim_new_dir(tmp.path(), "x", t).unwrap();
        let b = claim_new_dir(tmp.path(), "x", t).unwrap();
        assert_ne!(a, b);
        assert!(
            a.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("x-2026")
        );
        assert!(b.to_str().unwrap().ends_with("Z-2"), "{}", b.display());
    }

    #[test]
    fn a_given_dir_must_be_empty() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(claim_given_dir(tmp.path()).is_ok());
        fs::write(tmp.path().join("summary.json"), "{}").unwrap();
        let e = claim_given_dir(tmp.path()).unwrap_err();
        assert!(
            matches!(&e, Error::Flag { flag, problem } if flag.starts_with("--out ")
                && matches!(problem.downcast_ref(), Some(FolderError::NotEmpty))),
            "{e:?}"
        );
        assert!(e.to_string().contains(": the folder is not empty"), "{e}");
    }
}
