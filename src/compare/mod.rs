//! `throttle-sim compare`: run variants of one scenario over the same seeds, in parallel, and
//! say which is best with how sure we can be.
//!
//! A variant is a name plus overrides applied to the scenario after the command line's own
//! `--set`s: the scenario's `[[variants]]`, the scenario as written (`base`), or every client
//! group switched to one algorithm (`--algorithms`). Every variant runs on the same seeds; the
//! first seed's run is written as a full run folder under `variants/` (its series feeds the
//! charts), the other seeds keep only their summary, so memory and disk stay bounded.

mod files;
mod matrix;
mod report;
mod runs;
mod shard;
mod stats;
mod table;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Instant, SystemTime};

pub use files::{compare_csv, read_compare_csv};
pub use matrix::{AxisLevels, CellRuns, Lead, Matrix, MatrixCell, matrix_csv};
pub use report::{is_comparison, load_comparison, variant_dir, write_compare_report};
pub use runs::{RunsResult, compare_runs};
pub use shard::{INDEX_VARIABLES, MAX_SHARDS, Shard, ShardError, ShardSpec};
pub use stats::{Stat, t_975};
pub use table::{CATALOGUE, Comparison, VariantRuns, VariantStats, column, verdict_text};

use crate::engine::{self, sim};
use crate::error::Error;
use crate::progress::Progress;
use crate::record::{Metrics, Summary};
use crate::report::{VARIANT_NOTE, VariantNote};
use crate::rng::fresh_seed;
use crate::run::{
    RunOptions, check_series_size, claim_given_dir, claim_new_dir, run_scenario_with,
};
use crate::scenario::{Override, Scenario, cell_override, read_scenario};
use crate::throttle::ThrottleConfig;
use crate::time::{Nanos, secs};

/// Seeds per variant when neither `--seeds` nor the scenario's `[run] seeds` says.
pub const DEFAULT_SEEDS: usize = 5;

/// The name that selects the scenario as written.
pub const BASE: &str = "base";

/// What to compare and how.
pub struct CompareOptions<'a> {
    pub scenario: PathBuf,
    /// The command line's `--set`s (and flags as overrides): they change the base every
    /// variant starts from.
    pub overrides: Vec<Override>,
    /// `--variants`: names of `[[variants]]`, or `base`. Empty: all of them and `base`, unless
    /// algorithms are given.
    pub variants: Vec<String>,
    /// `--algorithms`: one variant per algorithm, every group switched to it.
    pub algorithms: Vec<String>,
    /// `--seeds`; without it the scenario's `[run] seeds`, else [`DEFAULT_SEEDS`].
    pub seeds: Option<usize>,
    pub jobs: usize,
    pub out: Option<PathBuf>,
    pub progress: &'a Progress,
    pub interrupt: &'a AtomicBool,
    /// `--allow-large-output`: a variant's `series.csv` may pass `record::MAX_SERIES_BYTES`.
    pub allow_large_output: bool,
    /// `--shard K/N`: run only that slice of the runs, for `compare --merge`.
    pub shard: Option<Shard>,
}

/// One row of the comparison, ready to run.
#[derive(Clone, Debug)]
pub struct PlannedVariant {
    pub name: String,
    pub description: String,
    /// Its own overrides, as written (`clients.*.jitter=0.0`).
    pub set: Vec<String>,
    /// The scenario with the variant applied, at the first seed.
    pub scenario: Scenario,
    /// The cell it runs in, when the file has `[[axes]]` and every cell is compared.
    pub cell: Option<String>,
}

impl PlannedVariant {
    /// Its name, after its cell's when it has one.
    pub fn label(&self) -> String {
        match &self.cell {
            Some(c) => format!("{c} · {}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The base scenario, the variants and the seeds.
pub struct Plan {
    pub base: Scenario,
    /// Every variant, cell by cell for a matrix.
    pub variants: Vec<PlannedVariant>,
    pub seeds: Vec<u64>,
    /// The file has `[[axes]]` and no cell was picked: every variant runs in every cell, and
    /// the result is a [`Matrix`].
    pub matrix: bool,
}

fn sim_mode() -> Override {
    Override::new("run.mode", toml::Value::String("sim".into())).expect("a fixed valid path")
}

/// Seeds `first, first + 1, …`, kept within what TOML can record.
pub fn seeds_from(first: u64, n: usize) -> Vec<u64> {
    (0..n as u64)
        .map(|i| first.wrapping_add(i) & i64::MAX as u64)
        .collect()
}

/// Why `compare` cannot run as asked; each names what to change (the flag, when one gave the
/// value, is added by [`plan`]).
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("--seeds must be at least 1")]
    NoSeeds,
    #[error(
        "unknown algorithm `{name}`, expected one of: {}{}",
        ThrottleConfig::NAMES.join(", "),
        crate::suggest::did_you_mean(name, ThrottleConfig::NAMES.iter().copied())
    )]
    UnknownAlgorithm { name: String },
    #[error(
        "{} has no variant `{name}`; its variants: {}{}",
        scenario.display(),
        known.join(", "),
        crate::suggest::did_you_mean(name, known.iter().map(|k| k.split(' ').next().unwrap_or(k)))
    )]
    NoSuchVariant {
        scenario: PathBuf,
        name: String,
        known: Vec<String>,
    },
    #[error(
        "every client group of {} has keep_algorithm = true; nothing to switch",
        .0.display()
    )]
    NothingToSwitch(PathBuf),
    #[error("`{0}` is named twice; each variant and algorithm may appear once")]
    NamedTwice(String),
}

/// A variant chosen by name or algorithm, before its scenario is resolved.
struct Chosen {
    name: String,
    description: String,
    sets: Vec<Override>,
}

/// Check the request and resolve every variant's scenario, before anything runs: a bad name
/// or a variant that does not validate is a usage error (exit 2) naming it.
pub fn plan(opts: &CompareOptions<'_>) -> Result<Plan, Error> {
    if opts.seeds == Some(0) {
        return Err(Error::usage(PlanError::NoSeeds));
    }
    let mut base_overrides = opts.overrides.clone();
    base_overrides.push(sim_mode());
    let base = read_scenario(&opts.scenario, &base_overrides, fresh_seed())?;
    // Slices must all run the same seeds: a seed chosen afresh would differ in each.
    if opts.shard.is_some() {
        let other = read_scenario(&opts.scenario, &base_overrides, base.run.seed() ^ 1)?;
        if other.run.seed() != base.run.seed() {
            return Err(Error::flag("--shard")(ShardError::NoSeed));
        }
    }
    let n = opts
        .seeds
        .unwrap_or_else(|| base.run.seeds.map_or(DEFAULT_SEEDS, |n| n as usize));
    let seeds = seeds_from(base.run.seed(), n);
    if let Some(a) = opts
        .algorithms
        .iter()
        .find(|a| !ThrottleConfig::NAMES.contains(&a.as_str()))
    {
        return Err(Error::flag("--algorithms")(PlanError::UnknownAlgorithm {
            name: a.clone(),
        }));
    }
    let matrix = !base.axes.is_empty() && base.cell.is_none();
    let cells: Vec<Option<String>> = if matrix {
        base.axes.names().into_iter().map(Some).collect()
    } else {
        vec![None]
    };
    let mut variants = Vec::new();
    for cell in cells {
        // A cell's own groups decide what `--algorithms` switches (an axis may change them).
        let cell_base = match &cell {
            None => base.clone(),
            Some(name) => {
                let mut o = base_overrides.clone();
                o.push(cell_override(name));
                read_scenario(&opts.scenario, &o, base.run.seed())
                    .map_err(Error::flag(format!("cell `{name}`")))?
            }
        };
        let mut chosen = named_variants(opts, &cell_base)?;
        chosen.extend(algorithm_variants(opts, &cell_base)?);
        for (i, c) in chosen.iter().enumerate() {
            if chosen[..i].iter().any(|o| o.name == c.name) {
                return Err(Error::usage(PlanError::NamedTwice(c.name.clone())));
            }
        }
        for c in chosen {
            variants.push(resolve(opts, c, seeds[0], cell.as_deref())?);
        }
    }
    Ok(Plan {
        base,
        variants,
        seeds,
        matrix,
    })
}

/// The variants `--variants` names (every `[[variants]]` and `base` when it names none and
/// no `--algorithms` are given).
fn named_variants(opts: &CompareOptions<'_>, base: &Scenario) -> Result<Vec<Chosen>, Error> {
    let names: Vec<String> = if !opts.variants.is_empty() {
        opts.variants.clone()
    } else if opts.algorithms.is_empty() {
        std::iter::once(BASE.to_string())
            .chain(base.variants.iter().map(|v| v.name.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let mut chosen = Vec::new();
    for name in names {
        if name == BASE {
            chosen.push(Chosen {
                name,
                description: "the scenario as written".into(),
                sets: Vec::new(),
            });
            continue;
        }
        let Some(v) = base.variants.iter().find(|v| v.name == name) else {
            let mut known = vec![format!("{BASE} (the scenario as written)")];
            known.extend(base.variants.iter().map(|v| v.name.clone()));
            return Err(Error::flag("--variants")(PlanError::NoSuchVariant {
                scenario: opts.scenario.clone(),
                name,
                known,
            }));
        };
        let sets = v
            .set
            .iter()
            .map(|(p, value)| Override::new(p, value.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::flag(format!("variant `{name}`")))?;
        chosen.push(Chosen {
            name: v.name.clone(),
            description: v.description.clone(),
            sets,
        });
    }
    Ok(chosen)
}

/// One variant per `--algorithms` entry: every client group switched to it, but those marked
/// `keep_algorithm` (a co-tenant that is part of the case).
fn algorithm_variants(opts: &CompareOptions<'_>, base: &Scenario) -> Result<Vec<Chosen>, Error> {
    let studied: Vec<usize> = (0..base.clients.len())
        .filter(|&i| !base.clients[i].common.keep_algorithm)
        .collect();
    if !opts.algorithms.is_empty() && studied.is_empty() {
        let e = PlanError::NothingToSwitch(opts.scenario.clone());
        return Err(Error::flag("--algorithms")(e));
    }
    let which = if studied.len() == base.clients.len() {
        "every client group runs".to_string()
    } else {
        let names: Vec<&str> = studied
            .iter()
            .map(|&i| base.clients[i].common.name.as_str())
            .collect();
        format!("groups {} run", names.join(", "))
    };
    Ok(opts
        .algorithms
        .iter()
        .map(|a| {
            let value = toml::Value::String(a.clone());
            let sets = if studied.len() == base.clients.len() {
                vec![Override::new("clients.*.algorithm", value).expect("a fixed valid path")]
            } else {
                studied
                    .iter()
                    .map(|i| {
                        Override::new(&format!("clients.{i}.algorithm"), value.clone())
                            .expect("a valid path")
                    })
                    .collect()
            };
            Chosen {
                name: a.clone(),
                description: format!("{which} `{a}` (parameters it does not take dropped)"),
                sets,
            }
        })
        .collect())
}

/// The variant's scenario at the first seed, checked like any scenario and for its
/// `series.csv`'s size.
fn resolve(
    opts: &CompareOptions<'_>,
    c: Chosen,
    first_seed: u64,
    cell: Option<&str>,
) -> Result<PlannedVariant, Error> {
    let seed = Override::new("run.seed", toml::Value::Integer(first_seed as i64))
        .expect("a fixed valid path");
    let mut all = opts.overrides.clone();
    all.extend(c.sets.iter().cloned());
    all.push(sim_mode());
    all.push(seed);
    all.extend(cell.map(cell_override));
    let in_variant = match cell {
        Some(cell) => format!("cell `{cell}`, variant `{}`", c.name),
        None => format!("variant `{}`", c.name),
    };
    let scenario =
        read_scenario(&opts.scenario, &all, first_seed).map_err(Error::flag(&in_variant))?;
    check_series_size(&scenario, opts.allow_large_output).map_err(Error::flag(in_variant))?;
    Ok(PlannedVariant {
        name: c.name,
        description: c.description,
        set: c.sets.iter().map(|o| o.raw.clone()).collect(),
        scenario,
        cell: cell.map(str::to_string),
    })
}

/// What a finished comparison left.
pub struct CompareResult {
    pub dir: PathBuf,
    /// The comparison; for a matrix, empty (the matrix is in `matrix`).
    pub comparison: Comparison,
    pub matrix: Option<Matrix>,
    /// Ctrl-C stopped it: the folder has what finished, but no comparison.
    pub interrupted: bool,
}

/// One job's outcome: the run's metrics, or why there are none.
enum JobResult {
    Done(Box<Summary>),
    Skipped,
    Failed(Error),
}

/// Run the plan and write `compare.csv`, `compare.json`, `compare.md`, the charts and the report;
/// with a `--shard`, only that slice's runs and their rows, for `compare --merge`.
pub fn run_compare(opts: &CompareOptions<'_>, plan: &Plan) -> Result<CompareResult, Error> {
    let dir = match &opts.out {
        Some(d) => claim_given_dir(d)?,
        None => {
            let name = match opts.shard {
                Some(s) => format!("{}-shard-{}-of-{}", plan.base.name, s.index, s.count),
                None => format!("{}-compare", plan.base.name),
            };
            claim_new_dir(Path::new("results"), &name, SystemTime::now())?
        }
    };
    if opts.shard.is_none() {
        write_scenario(&dir, plan)?;
    }
    let n_seeds = plan.seeds.len();
    let total = plan.variants.len() * n_seeds;
    let mine: Vec<usize> = (0..total)
        .filter(|&j| opts.shard.is_none_or(|s| s.holds(j)))
        .collect();
    let jobs = Jobs::new(opts, plan, &dir, &mine);
    let results = crate::parallel::run_all(mine.len(), opts.jobs, |i| {
        jobs.run(mine[i] / n_seeds, mine[i] % n_seeds)
    });
    let mut done: Vec<(usize, Metrics)> = Vec::with_capacity(mine.len());
    let mut interrupted = false;
    for (&job, r) in mine.iter().zip(results) {
        match r {
            JobResult::Done(s) => done.push((job, s.metrics)),
            JobResult::Skipped => interrupted = true,
            JobResult::Failed(e) => return Err(e),
        }
    }
    let empty = || Comparison::new(&plan.base.name, &[], &[], &Default::default());
    if interrupted {
        return Ok(CompareResult {
            comparison: empty(),
            matrix: None,
            dir,
            interrupted: true,
        });
    }
    if let Some(shard) = opts.shard {
        write_slice(&dir, opts, plan, shard, &done)?;
        return Ok(CompareResult {
            comparison: empty(),
            matrix: None,
            dir,
            interrupted: false,
        });
    }
    let mut runs = planned_runs(plan);
    for (job, m) in done {
        runs[job / n_seeds].runs.push(m);
    }
    let (comparison, matrix) = write_results(&dir, plan, runs, opts.jobs)?;
    Ok(CompareResult {
        dir,
        comparison,
        matrix,
        interrupted: false,
    })
}

/// One empty [`VariantRuns`] per planned variant, judged on its own scenario's ranges.
fn planned_runs(plan: &Plan) -> Vec<VariantRuns> {
    plan.variants
        .iter()
        .map(|v| VariantRuns {
            name: v.name.clone(),
            runs: Vec::new(),
            expect: Some(v.scenario.expect.clone()),
        })
        .collect()
}

/// Every run done, in plan order: the matrix's or the comparison's files.
fn write_results(
    dir: &Path,
    plan: &Plan,
    runs: Vec<VariantRuns>,
    jobs: usize,
) -> Result<(Comparison, Option<Matrix>), Error> {
    if plan.matrix {
        let matrix = write_matrix(dir, plan, runs)?;
        let empty = Comparison::new(&plan.base.name, &[], &[], &Default::default());
        return Ok((empty, Some(matrix)));
    }
    let comparison = write_comparison(dir, compare_csv(&plan.seeds, &runs), jobs)?;
    Ok((comparison, None))
}

/// The comparison's `scenario.toml`: the base at the first seed, written before any run so
/// that an interrupted comparison's folder still says what it compared.
fn write_scenario(dir: &Path, plan: &Plan) -> Result<(), Error> {
    let mut base = plan.base.clone();
    base.run.seed = Some(plan.seeds[0]);
    let path = dir.join("scenario.toml");
    fs::write(&path, base.to_toml()).map_err(Error::io(&path))
}

/// A slice's `shard.json` and `runs.csv`.
fn write_slice(
    dir: &Path,
    opts: &CompareOptions<'_>,
    plan: &Plan,
    shard: Shard,
    done: &[(usize, Metrics)],
) -> Result<(), Error> {
    let text = fs::read_to_string(&opts.scenario).map_err(Error::io(&opts.scenario))?;
    let manifest = shard::Manifest {
        version: env!("CARGO_PKG_VERSION").to_string(),
        shard: shard.index,
        shards: shard.count,
        scenario_file: text,
        scenario_path: opts.scenario.clone(),
        overrides: opts
            .overrides
            .iter()
            .map(|o| format!("{}={}", o.path.join("."), o.value))
            .collect(),
        variants: opts.variants.clone(),
        algorithms: opts.algorithms.clone(),
        seeds: plan.seeds.clone(),
        plan: plan.variants.iter().map(PlannedVariant::label).collect(),
        runs: plan.variants.len() * plan.seeds.len(),
    };
    let path = dir.join(shard::MANIFEST);
    let mut json = serde_json::to_string_pretty(&manifest).expect("a manifest serializes");
    json.push('\n');
    fs::write(&path, json).map_err(Error::io(&path))?;
    let n_seeds = plan.seeds.len();
    let rows: Vec<(usize, Option<&str>, &str, u64, &Metrics)> = done
        .iter()
        .map(|(job, m)| {
            let v = &plan.variants[job / n_seeds];
            (
                *job,
                v.cell.as_deref(),
                v.name.as_str(),
                plan.seeds[job % n_seeds],
                m,
            )
        })
        .collect();
    let path = dir.join(shard::ROWS);
    fs::write(&path, files::slice_csv(plan.matrix, &rows)).map_err(Error::io(&path))
}

/// `compare --merge DIR…`: the slices put together into the comparison one unsharded
/// `compare` of the same scenario, flags and seeds writes.
pub fn merge_slices(
    dirs: &[PathBuf],
    out: Option<&Path>,
    jobs: usize,
    progress: &Progress,
    interrupt: &AtomicBool,
) -> Result<CompareResult, Error> {
    let (manifest, slices) = shard::read_slices(dirs).map_err(Error::flag("--merge"))?;
    let metrics = shard::read_runs(&manifest, &slices).map_err(Error::flag("--merge"))?;
    let dir = match out {
        Some(d) => claim_given_dir(d)?,
        None => claim_new_dir(Path::new("results"), "merged-compare", SystemTime::now())?,
    };
    // Plan again from the scenario's own text, under its own file name (a file without `name`
    // is named after it), in a folder removed when the plan is made.
    let source_dir = dir.join(".merge-source");
    let file_name = manifest
        .scenario_path
        .file_name()
        .map_or_else(|| "scenario.toml".into(), |n| n.to_os_string());
    let source = source_dir.join(file_name);
    fs::create_dir_all(&source_dir).map_err(Error::io(&source_dir))?;
    fs::write(&source, &manifest.scenario_file).map_err(Error::io(&source))?;
    let overrides = manifest
        .overrides
        .iter()
        .map(|o| o.parse::<Override>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::flag("--merge"));
    let opts = CompareOptions {
        scenario: source.clone(),
        overrides: overrides?,
        variants: manifest.variants.clone(),
        algorithms: manifest.algorithms.clone(),
        seeds: Some(manifest.seeds.len()),
        jobs,
        out: None,
        progress,
        interrupt,
        allow_large_output: true,
        shard: None,
    };
    let planned = plan(&opts);
    let _ = fs::remove_dir_all(&source_dir);
    let plan = planned?;
    let labels: Vec<String> = plan.variants.iter().map(PlannedVariant::label).collect();
    if plan.seeds != manifest.seeds || labels != manifest.plan {
        return Err(Error::flag("--merge")(ShardError::Different {
            first: slices[0].clone(),
            other: PathBuf::from(&manifest.scenario_path),
            what: "this version's plan and the slices' planned variants",
        }));
    }
    let n_seeds = plan.seeds.len();
    let mut runs = planned_runs(&plan);
    for (job, m) in metrics.into_iter().enumerate() {
        runs[job / n_seeds].runs.push(m);
    }
    if !plan.matrix {
        // Each variant's first-seed run folder, from the slice that ran it.
        for (vi, v) in plan.variants.iter().enumerate() {
            let from = variant_dir(&slices[(vi * n_seeds) % manifest.shards], vi, &v.name);
            let to = variant_dir(&dir, vi, &v.name);
            shard::copy_run_folder(&from, &to).map_err(Error::io(&from))?;
        }
    }
    write_scenario(&dir, &plan)?;
    let (comparison, matrix) = write_results(&dir, &plan, runs, jobs)?;
    Ok(CompareResult {
        dir,
        comparison,
        matrix,
        interrupted: false,
    })
}

/// A matrix's runs, gathered cell by cell, into `compare.csv`, `compare.json`, `compare.md` and
/// `report.html`.
fn write_matrix(dir: &Path, plan: &Plan, runs: Vec<VariantRuns>) -> Result<Matrix, Error> {
    let mut cells: Vec<CellRuns> = Vec::new();
    for (v, r) in plan.variants.iter().zip(runs) {
        let cell = v
            .cell
            .clone()
            .expect("a matrix's variants each have a cell");
        match cells.last_mut() {
            Some(c) if c.cell == cell => c.variants.push(r),
            _ => cells.push(CellRuns {
                levels: cell.split('/').map(str::to_string).collect(),
                cell,
                variants: vec![r],
            }),
        }
    }
    let shown = plan.base.compare_metrics();
    let matrix = Matrix::new(
        &plan.base.name,
        &plan.base.axes,
        &plan.seeds,
        &cells,
        &shown,
    );
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        fs::write(&path, text).map_err(Error::io(&path))
    };
    write("compare.csv", matrix_csv(&plan.seeds, &cells))?;
    let mut json = serde_json::to_string_pretty(&matrix).expect("a matrix serializes");
    json.push('\n');
    write("compare.json", json)?;
    write("compare.md", matrix.markdown_page())?;
    write("report.html", matrix.html_page())?;
    Ok(matrix)
}

/// The comparison's runs, one per variant and seed, run on worker threads.
struct Jobs<'a> {
    opts: &'a CompareOptions<'a>,
    plan: &'a Plan,
    dir: &'a Path,
    /// One bar per variant, added when its first run starts and cleared when its last ends.
    bars: Vec<Mutex<Option<indicatif::ProgressBar>>>,
    /// Per variant: the runs not yet ended.
    left: Vec<AtomicUsize>,
}

impl<'a> Jobs<'a> {
    /// For the runs numbered `mine` (all of them, or a slice's).
    fn new(opts: &'a CompareOptions<'a>, plan: &'a Plan, dir: &'a Path, mine: &[usize]) -> Self {
        let n_seeds = plan.seeds.len();
        let left: Vec<AtomicUsize> = plan.variants.iter().map(|_| AtomicUsize::new(0)).collect();
        for &job in mine {
            left[job / n_seeds].fetch_add(1, Ordering::Relaxed);
        }
        Jobs {
            opts,
            plan,
            dir,
            bars: plan.variants.iter().map(|_| Mutex::new(None)).collect(),
            left,
        }
    }

    /// Variant `vi` at seed number `si`: the first seed as a full run folder, the others in
    /// memory only.
    fn run(&self, vi: usize, si: usize) -> JobResult {
        let (opts, v) = (self.opts, &self.plan.variants[vi]);
        if opts.interrupt.load(Ordering::Relaxed) {
            return JobResult::Skipped;
        }
        let bar = self.bar(vi);
        let mut scenario = v.scenario.clone();
        scenario.run.seed = Some(self.plan.seeds[si]);
        let started = Instant::now();
        let mut last: u64 = 0;
        let mut on_progress = |t: Nanos| {
            let now = secs(t) as u64;
            bar.inc(now.saturating_sub(last));
            last = now;
        };
        let outcome = if si == 0 && !self.plan.matrix {
            run_first_seed(self.dir, vi, v, &scenario, opts.interrupt, &mut on_progress)
        } else {
            let control = engine::Control {
                progress: &mut on_progress,
                interrupt: opts.interrupt,
            };
            sim::run(&scenario, std::io::sink(), None::<std::io::Sink>, control)
                .map_err(Error::engine("(memory)"))
        };
        let result = match outcome {
            Ok(s) if s.partial => JobResult::Skipped,
            Ok(s) => {
                if !self.plan.matrix {
                    opts.progress
                        .run_done(&run_line(&self.plan.base.name, v, &s, started));
                }
                JobResult::Done(Box::new(s))
            }
            Err(e) => JobResult::Failed(e),
        };
        if self.left[vi].fetch_sub(1, Ordering::SeqCst) == 1 {
            let n = self.plan.seeds.len();
            let plural = if n == 1 { "" } else { "s" };
            let done = format!("{}: {n} seed{plural} done", v.label());
            self.opts.progress.task_done(&bar, &done);
        }
        result
    }

    /// Variant `vi`'s bar, made when its first run starts.
    fn bar(&self, vi: usize) -> indicatif::ProgressBar {
        let v = &self.plan.variants[vi];
        let seeds = self.plan.seeds.len() as u64;
        let mut slot = self.bars[vi].lock().expect("bar lock");
        slot.get_or_insert_with(|| {
            let duration_s = v.scenario.run.duration.secs() as u64;
            self.opts
                .progress
                .bar(&v.label(), duration_s.saturating_mul(seeds))
        })
        .clone()
    }
}

/// Write `compare.csv` into `dir`, then the table, report, `compare.json` and `compare.md`,
/// all read back from that CSV as `plot` does it (a comparison of seeds and `compare --runs`).
pub(crate) fn write_comparison(dir: &Path, csv: String, jobs: usize) -> Result<Comparison, Error> {
    let csv_path = dir.join("compare.csv");
    fs::write(&csv_path, csv).map_err(Error::io(&csv_path))?;
    let comparison = write_compare_report(dir, jobs)?;
    let json_path = dir.join("compare.json");
    let mut json = serde_json::to_string_pretty(&comparison).expect("a comparison serializes");
    json.push('\n');
    fs::write(&json_path, json).map_err(Error::io(&json_path))?;
    let md_path = dir.join("compare.md");
    fs::write(&md_path, comparison.markdown_page()).map_err(Error::io(&md_path))?;
    Ok(comparison)
}

/// The first seed of a variant: a complete run folder with its series and a note naming the
/// variant (its charts are drawn with the comparison's).
fn run_first_seed(
    dir: &Path,
    index: usize,
    v: &PlannedVariant,
    scenario: &Scenario,
    interrupt: &AtomicBool,
    on_progress: &mut dyn FnMut(Nanos),
) -> Result<Summary, Error> {
    let vdir = variant_dir(dir, index, &v.name);
    let result = run_scenario_with(
        scenario,
        &RunOptions {
            out: Some(vdir.clone()),
            log_requests: false,
            progress: false,
            interrupt,
            // The plan checked every variant's size already.
            allow_large_output: true,
        },
        on_progress,
    )?;
    let note = VariantNote {
        name: v.name.clone(),
        description: v.description.clone(),
        set: v.set.clone(),
    };
    let path = vdir.join(VARIANT_NOTE);
    fs::write(&path, toml::to_string(&note).expect("a note serializes"))
        .map_err(Error::io(&path))?;
    Ok(result.summary)
}

/// The line a finished run prints when stderr is piped.
fn run_line(scenario: &str, v: &PlannedVariant, s: &Summary, started: Instant) -> String {
    let m: &Metrics = &s.metrics;
    format!(
        "{scenario} / {}, seed {}: {} requests, ratio_429 {:.2}%, utilization {:.3}, fairness {:.3} ({:.2} s)",
        v.name,
        s.seed,
        m.requests,
        m.ratio_429 * 100.0,
        m.utilization,
        m.fairness,
        started.elapsed().as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_follow_the_first_and_stay_in_toml_range() {
        assert_eq!(seeds_from(42, 3), vec![42, 43, 44]);
        let top = i64::MAX as u64;
        assert_eq!(seeds_from(top, 2), vec![top, 0]);
    }

    #[test]
    fn variant_folders_are_numbered_and_safe() {
        let d = variant_dir(Path::new("r"), 0, "a/b c");
        assert_eq!(d, Path::new("r/variants/01-a_b_c"));
        assert_eq!(
            variant_dir(Path::new("r"), 11, "..x"),
            Path::new("r/variants/12-x")
        );
    }
}
