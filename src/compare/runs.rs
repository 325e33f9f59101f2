//! `compare --runs DIR…`: run folders that exist already (a `run`'s, a `client`'s, a `serve
//! --record`'s, a comparison's `variants/*`), side by side in the comparison's table, charts
//! and report, without running anything. Each folder is one variant of one run; its files are
//! linked (or copied) under `variants/`, so the comparison folder stands on its own and
//! `plot` draws it again.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::files::compare_csv;
use super::report::{is_comparison, variant_dir};
use super::table::{Comparison, VariantRuns};
use super::write_comparison;
use crate::error::Error;
use crate::recording::journal::JOURNAL_FILE;
use crate::report::{ReportError, RunFolder, VARIANT_NOTE, VariantNote};
use crate::run::{claim_given_dir, claim_new_dir};
use crate::scenario::{Expect, Scenario};
use crate::time::HumanDuration;

/// The files of a run folder the comparison needs: `threads.csv` beside a `series.csv` whose
/// rows cover more than a thread (`series = "group"`), without which the variant's report
/// cannot be drawn; and `clients.csv` of a recording.
const RUN_FILES: [&str; 5] = [
    "scenario.toml",
    "summary.json",
    "series.csv",
    crate::record::THREADS_FILE,
    "clients.csv",
];

/// What `compare --runs` wrote.
pub struct RunsResult {
    pub dir: PathBuf,
    pub comparison: Comparison,
    /// Each variant's name, the folder it came from, and what to know of it (partial, no
    /// answers), if anything.
    pub sources: Vec<(String, PathBuf, Option<String>)>,
    /// Why the runs may not be alike (other scenarios, other lengths), for stderr.
    pub warnings: Vec<String>,
}

/// Why `compare --runs` cannot use a folder.
#[derive(Debug, thiserror::Error)]
enum RunsError {
    #[error("give at least one run folder")]
    NoneGiven,
    #[error("no such folder")]
    Missing,
    #[error("is a file, not a run folder")]
    IsAFile,
    #[error("is a comparison (it has compare.csv), not a run; give its variants/* folders")]
    IsAComparison,
    #[error("not a run folder: {0}")]
    NotARun(ReportError),
    #[error(
        "the run folder is incomplete: {0}; the run that wrote it did not finish writing it \
         (a full disk, a crash, a kill), so there is nothing to compare"
    )]
    Incomplete(String),
    #[error("is given twice (as {first} and {second}); each run is one variant of the table")]
    Twice { first: String, second: String },
}

/// Refuse a folder given twice, however it is written (`r`, `./r/`, a link to it): it counted
/// as two variants, each with the same numbers.
fn refuse_twice(dirs: &[PathBuf]) -> Result<(), Error> {
    let mut seen: Vec<(PathBuf, &Path)> = Vec::new();
    for d in dirs {
        // A folder that does not resolve is named by `load`, with its own reason.
        let Ok(real) = fs::canonicalize(d) else {
            continue;
        };
        if let Some((_, first)) = seen.iter().find(|(r, _)| *r == real) {
            return Err(Error::flag(format!("--runs {}", d.display()))(
                RunsError::Twice {
                    first: first.display().to_string(),
                    second: d.display().to_string(),
                },
            ));
        }
        seen.push((real, d));
    }
    Ok(())
}

/// Check that `dir` is a run folder and load it; every problem names `--runs` and the folder.
fn load(dir: &Path) -> Result<RunFolder, Error> {
    check_run_folder(dir).map_err(Error::flag(format!("--runs {}", dir.display())))
}

fn check_run_folder(dir: &Path) -> Result<RunFolder, RunsError> {
    if !dir.exists() {
        return Err(RunsError::Missing);
    }
    if !dir.is_dir() {
        return Err(RunsError::IsAFile);
    }
    if is_comparison(dir) {
        return Err(RunsError::IsAComparison);
    }
    if let Some(what) = incomplete(dir) {
        return Err(RunsError::Incomplete(what));
    }
    RunFolder::load(dir).map_err(RunsError::NotARun)
}

/// What shows that a run folder was left half-written, if anything does: `serve --record`'s
/// journal still there, or a file a finished run always writes that is empty or missing
/// while others are there.
fn incomplete(dir: &Path) -> Option<String> {
    if dir.join(JOURNAL_FILE).exists() {
        return Some(format!(
            "serve --record's journal ({JOURNAL_FILE}) is still there, so the recording was \
             never written out"
        ));
    }
    let size = |f: &str| fs::metadata(dir.join(f)).ok().map(|m| m.len());
    let (scenario, summary) = (size("scenario.toml"), size("summary.json"));
    if scenario.is_none() && summary.is_none() {
        // Nothing of a run at all: NotARun says what is missing.
        return None;
    }
    for (file, len) in [("scenario.toml", scenario), ("summary.json", summary)] {
        match len {
            Some(0) => return Some(format!("{file} is empty")),
            None => return Some(format!("{file} is missing")),
            Some(_) => {}
        }
    }
    None
}

/// What a reader of the comparison must know of a run: partial, or without any answer.
fn caveat(run: &RunFolder) -> Option<String> {
    let s = &run.summary;
    let m = &s.metrics;
    let mut parts = Vec::new();
    if s.partial {
        parts.push(match &s.partial_reason {
            Some(r) => format!("partial: {r}"),
            None => "partial".to_string(),
        });
    }
    if m.requests == 0 {
        parts.push("no requests were sent".to_string());
    } else if m.ok + m.limited == 0 {
        parts.push(format!(
            "no answers: none of its {} requests got a 2xx or a 429",
            m.requests
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The variant names: each run's own variant name, else its scenario's name, with its mode
/// (`-sim`, `-live`, `-recorded`) when the runs' modes differ, made unique.
fn names(runs: &[RunFolder]) -> Vec<String> {
    let shown: Vec<(String, &'static str)> = runs
        .iter()
        .map(|r| {
            let name = r
                .variant
                .as_ref()
                .map_or_else(|| r.scenario.name.clone(), |v| v.name.clone());
            (name, r.summary.mode.as_str())
        })
        .collect();
    unique_names(&shown)
}

/// [`names`] from each run's name and mode.
fn unique_names(runs: &[(String, &str)]) -> Vec<String> {
    let mixed = runs.iter().any(|(_, m)| *m != runs[0].1);
    let mut out: Vec<String> = Vec::new();
    for (name, mode) in runs {
        let suffix = format!("-{mode}");
        let base = if mixed && !name.ends_with(&suffix) {
            format!("{name}{suffix}")
        } else {
            name.clone()
        };
        let mut name = base.clone();
        let mut n = 2;
        while out.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        out.push(name);
    }
    out
}

/// What makes runs side by side hard to read as one comparison: runs of different
/// scenarios (a recording counts as its scenario's) or of different lengths. Said, not
/// refused: putting unlike runs together can be the point.
fn mismatches(runs: &[RunFolder], names: &[String]) -> Vec<String> {
    let facts: Vec<(String, f64)> = runs
        .iter()
        .map(|r| (r.summary.scenario.clone(), r.summary.duration_s))
        .collect();
    mismatch_lines(&facts, names)
}

/// [`mismatches`] from each run's scenario name and length in seconds.
fn mismatch_lines(runs: &[(String, f64)], names: &[String]) -> Vec<String> {
    let scenario = |s: &str| s.strip_suffix("-recorded").unwrap_or(s).to_string();
    let listed = |f: &dyn Fn(&(String, f64)) -> String| {
        runs.iter()
            .zip(names)
            .map(|(r, n)| format!("{n}: {}", f(r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = Vec::new();
    let first = scenario(&runs[0].0);
    if runs.iter().any(|r| scenario(&r.0) != first) {
        out.push(format!(
            "these runs are of different scenarios ({}); their numbers are not of one problem",
            listed(&|r| r.0.clone())
        ));
    }
    let (lo, hi) = runs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
        (lo.min(r.1), hi.max(r.1))
    });
    if hi > lo * 1.01 {
        out.push(format!(
            "these runs are of different lengths ({}); convergence, waits and peaks depend on it",
            listed(&|r| format!("{} s", r.1))
        ));
    }
    out
}

/// Link `from` to `to`, or copy it where links cannot be made (another file system).
fn link_or_copy(from: &Path, to: &Path) -> Result<(), Error> {
    if fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to).map(|_| ()).map_err(Error::io(to))
}

/// Put `dirs` side by side in `out` (default a new folder under `results/`).
pub fn compare_runs(
    dirs: &[PathBuf],
    out: Option<&Path>,
    jobs: usize,
) -> Result<RunsResult, Error> {
    if dirs.is_empty() {
        return Err(Error::flag("--runs")(RunsError::NoneGiven));
    }
    refuse_twice(dirs)?;
    let runs = dirs
        .iter()
        .map(|d| load(d))
        .collect::<Result<Vec<_>, _>>()?;
    let names = names(&runs);
    let warnings = mismatches(&runs, &names);
    let dir = match out {
        Some(d) => claim_given_dir(d)?,
        None => claim_new_dir(Path::new("results"), "runs-compare", SystemTime::now())?,
    };
    let scenario = side_by_side(&runs, dirs, &names);
    let path = dir.join("scenario.toml");
    fs::write(&path, scenario.to_toml()).map_err(Error::io(&path))?;
    let mut csv = String::new();
    for (i, (run, name)) in runs.iter().zip(&names).enumerate() {
        place_run(&dir, i, name, run, &dirs[i])?;
        // One row per run, with its own seed (compare.csv's rows need not share seeds).
        let rows = compare_csv(
            &[run.summary.seed],
            &[VariantRuns {
                name: name.clone(),
                runs: vec![run.summary.metrics.clone()],
                expect: None,
            }],
        );
        let mut lines = rows.splitn(2, '\n');
        let header = lines.next().unwrap_or_default();
        if i == 0 {
            csv.push_str(header);
            csv.push('\n');
        }
        csv.push_str(lines.next().unwrap_or_default());
    }
    let comparison = write_comparison(&dir, csv, jobs)?;
    Ok(RunsResult {
        dir,
        comparison,
        sources: names
            .into_iter()
            .zip(dirs.iter().cloned())
            .zip(runs.iter().map(caveat))
            .map(|((n, d), c)| (n, d, c))
            .collect(),
        warnings,
    })
}

/// The comparison's scenario: the first run's server, long enough for the longest run, with
/// no variants and no [expect] (runs of different scenarios are shown, not judged).
fn side_by_side(runs: &[RunFolder], dirs: &[PathBuf], names: &[String]) -> Scenario {
    let mut scenario = runs[0].scenario.clone();
    scenario.name = "runs".into();
    scenario.description = format!(
        "{} run folders side by side: {}.",
        runs.len(),
        dirs.iter()
            .zip(names)
            .map(|(d, n)| format!("{n} ({})", d.display()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    scenario.variants.clear();
    scenario.expect = Expect::new();
    let longest = runs
        .iter()
        .map(|r| r.scenario.run.duration.nanos())
        .max()
        .unwrap_or(0);
    scenario.run.duration = HumanDuration(longest.max(scenario.run.duration.nanos()));
    scenario
}

/// Run `i`, from the folder `source`, as the comparison's variant `name`: its files and a
/// note saying where it came from.
fn place_run(
    dir: &Path,
    i: usize,
    name: &str,
    run: &RunFolder,
    source: &Path,
) -> Result<(), Error> {
    let vdir = variant_dir(dir, i, name);
    fs::create_dir_all(&vdir).map_err(Error::io(&vdir))?;
    for file in RUN_FILES {
        let from = run.dir.join(file);
        if from.is_file() {
            link_or_copy(&from, &vdir.join(file))?;
        }
    }
    let mut description = format!("the {} run folder {}", run.summary.mode, source.display());
    if let Some(c) = caveat(run) {
        description.push_str(&format!(" ({c})"));
    }
    let note = VariantNote {
        name: name.to_string(),
        description,
        set: Vec::new(),
    };
    let note_path = vdir.join(VARIANT_NOTE);
    fs::write(
        &note_path,
        toml::to_string(&note).expect("a note serializes"),
    )
    .map_err(Error::io(&note_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_other_modes_are_named_with_their_mode() {
        let n = |runs: &[(&str, &'static str)]| {
            let runs: Vec<(String, &str)> = runs.iter().map(|(a, b)| (a.to_string(), *b)).collect();
            unique_names(&runs)
        };
        // Runs of one scenario in two modes are told apart by their mode, not a number: a
        // live and a sim run were once `x` and `x-2`.
        assert_eq!(n(&[("x", "live"), ("x", "sim")]), ["x-live", "x-sim"]);
        assert_eq!(n(&[("x", "sim"), ("x", "sim")]), ["x", "x-2"]);
        assert_eq!(
            n(&[("x-recorded", "recorded"), ("x", "sim"), ("x", "sim")]),
            ["x-recorded", "x-sim", "x-sim-2"]
        );
    }

    #[test]
    fn unlike_runs_are_said_to_be_unlike() {
        let names = vec!["a".to_string(), "b".to_string()];
        let w = mismatch_lines(
            &[
                ("fast_slow".into(), 18000.0),
                ("heroku_5x5-recorded".into(), 600.0),
            ],
            &names,
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("different scenarios") && w[0].contains("b: heroku_5x5-recorded"));
        assert!(w[1].contains("different lengths") && w[1].contains("a: 18000 s"));
        // A recording of the scenario, as long: alike.
        let w = mismatch_lines(
            &[
                ("heroku_5x5".into(), 600.0),
                ("heroku_5x5-recorded".into(), 600.2),
            ],
            &names,
        );
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn folders_that_are_not_runs_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let e = load(&missing).err().unwrap().to_string();
        assert!(e.contains("--runs") && e.contains("no such folder"), "{e}");
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        let e = load(&empty).err().unwrap().to_string();
        assert!(
            e.contains("not a run folder") && e.contains("scenario.toml"),
            "{e}"
        );
        fs::write(empty.join("compare.csv"), "variant,seed\n").unwrap();
        let e = load(&empty).err().unwrap().to_string();
        assert!(e.contains("is a comparison"), "{e}");
    }

    #[test]
    fn a_half_written_recording_is_called_incomplete() {
        // serve --record on a full disk: a 0-byte scenario.toml, the journal left behind.
        let tmp = tempfile::tempdir().unwrap();
        let rec = tmp.path().join("rec");
        fs::create_dir(&rec).unwrap();
        fs::write(rec.join("scenario.toml"), "").unwrap();
        let e = load(&rec).err().unwrap().to_string();
        assert!(e.contains("incomplete: scenario.toml is empty"), "{e}");
        assert!(!e.contains("clients: missing"), "{e}");
        fs::write(rec.join(JOURNAL_FILE), [0u8; 30]).unwrap();
        let e = load(&rec).err().unwrap().to_string();
        assert!(e.contains("incomplete") && e.contains("journal"), "{e}");
    }
}
