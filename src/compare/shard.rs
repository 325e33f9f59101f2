//! Sweeps larger than one machine: `compare --shard K/N` runs the K-th of N deterministic slices
//! of a comparison's runs and keeps their rows; `compare --merge DIR…` puts the slices together
//! into the comparison one unsharded `compare` writes, byte for byte in `compare.csv`.
//!
//! A comparison's runs are numbered in plan order (cell by cell, variant by variant, then
//! seed); slice K of N holds the runs whose number is K − 1 modulo N, so every slice gets
//! cells of every cost. A slice folder holds `shard.json` (what was compared: the scenario's
//! text, the flags as overrides, the seeds, every planned variant) and `runs.csv` (a row per run:
//! its number, then the row it has in `compare.csv`), plus the first-seed run folders under
//! `variants/` of a comparison without axes. The batch engine (GNU parallel, a Kubernetes
//! Indexed Job, a Slurm array) only has to start the N slices and gather their folders.

use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::record::{CsvProblem, Metrics, open_csv};

/// Which slice a process runs: `index` of `count`, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// The largest number of slices: far more than any batch engine starts for one sweep.
pub const MAX_SHARDS: usize = 100_000;

/// The variables batch engines set to a task's index: a Kubernetes Indexed Job's (0-based),
/// and a Slurm job array's (relative to `SLURM_ARRAY_TASK_MIN`, so `--array=0-3` and
/// `--array=1-4` both work).
pub const INDEX_VARIABLES: [&str; 2] = ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"];

/// `--shard` as written: `K/N`, or `auto/N` (K from the batch engine's variable).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardSpec {
    Given(Shard),
    Auto { count: usize },
}

/// Why a `--shard` or a `--merge` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not a slice: write K/N (1 <= K <= N <= {MAX_SHARDS}) or auto/N")]
    BadSpec(String),
    #[error(
        "auto/{0}: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor \
         SLURM_ARRAY_TASK_ID (a Slurm job array) is set; give K/{0}"
    )]
    NoIndex(usize),
    #[error("auto/{count}: {var} = `{value}` does not pick one of {count} slices")]
    BadIndex {
        var: &'static str,
        value: String,
        count: usize,
    },
    #[error(
        "a sharded comparison needs a fixed seed, so every slice runs the same seeds: give \
         --seed N or [run] seed"
    )]
    NoSeed,
    #[error("{}: not a slice of `compare --shard` (no shard.json): {why}", dir.display())]
    NotAShard { dir: PathBuf, why: String },
    #[error("{} was written by throttle-sim {theirs}, {} by {ours}: merge slices of one version", other.display(), first.display())]
    Version {
        first: PathBuf,
        other: PathBuf,
        ours: String,
        theirs: String,
    },
    #[error("{} and {} are slices of different comparisons ({what} differ)", first.display(), other.display())]
    Different {
        first: PathBuf,
        other: PathBuf,
        what: &'static str,
    },
    #[error("slice {index} of {count} is given twice ({} and {})", a.display(), b.display())]
    Twice {
        index: usize,
        count: usize,
        a: PathBuf,
        b: PathBuf,
    },
    #[error("slices missing: {} of {count}; run them with --shard K/{count} and merge again", missing.iter().map(usize::to_string).collect::<Vec<_>>().join(", "))]
    Missing { missing: Vec<usize>, count: usize },
    /// A `shard.json` whose numbers do not agree with each other: checked before anything is
    /// sized by them.
    #[error("{}: {why}", dir.join(MANIFEST).display())]
    BadManifest { dir: PathBuf, why: String },
    #[error("{}: {problem}", path.display())]
    BadRows { path: PathBuf, problem: CsvProblem },
}

impl FromStr for ShardSpec {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, ShardError> {
        let bad = || ShardError::BadSpec(s.to_string());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS {
            return Err(bad());
        }
        if k.trim() == "auto" {
            return Ok(ShardSpec::Auto { count });
        }
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(ShardSpec::Given(Shard { index, count }))
    }
}

impl ShardSpec {
    /// The slice, reading the batch engine's variable for `auto` through `var`.
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let count = match self {
            ShardSpec::Given(s) => return Ok(*s),
            ShardSpec::Auto { count } => *count,
        };
        let (name, value) = INDEX_VARIABLES
            .iter()
            .find_map(|&n| var(n).map(|v| (n, v)))
            .ok_or(ShardError::NoIndex(count))?;
        let bad = || ShardError::BadIndex {
            var: name,
            value: value.clone(),
            count,
        };
        let raw: usize = value.trim().parse().map_err(|_| bad())?;
        let first = if name == "SLURM_ARRAY_TASK_ID" {
            match var("SLURM_ARRAY_TASK_MIN") {
                Some(min) => min.trim().parse::<usize>().map_err(|_| bad())?,
                None => 0,
            }
        } else {
            0
        };
        let index = raw.checked_sub(first).ok_or_else(bad)? + 1;
        if index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether run number `job` (0-based, in plan order) is this slice's.
    pub fn holds(&self, job: usize) -> bool {
        job % self.count == self.index - 1
    }
}

/// `shard.json`: what a slice is a slice of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: String,
    pub shard: usize,
    pub shards: usize,
    /// The scenario file's text, as read: the merge plans the comparison again from it.
    pub scenario_file: String,
    /// Its name on the command line (for the merged folder's messages).
    pub scenario_path: PathBuf,
    /// The command line's overrides, each as `path=value` with the value in TOML.
    pub overrides: Vec<String>,
    pub variants: Vec<String>,
    pub algorithms: Vec<String>,
    pub seeds: Vec<u64>,
    /// Every planned variant's label (`cell · variant`), in plan order.
    pub plan: Vec<String>,
    /// How many runs the whole comparison has.
    pub runs: usize,
}

pub const MANIFEST: &str = "shard.json";
pub const ROWS: &str = "runs.csv";

/// The largest `shard.json` read: it holds the scenario's text (at most
/// `scenario::MAX_SCENARIO_BYTES`) and a label per planned variant.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

impl Manifest {
    /// Whether its numbers agree with each other and with its own plan: a merge sizes what it
    /// holds by them.
    fn check(&self) -> Result<(), String> {
        if !(1..=MAX_SHARDS).contains(&self.shards) {
            return Err(format!(
                "{} slices: a comparison is cut into 1 to {MAX_SHARDS}",
                self.shards
            ));
        }
        if !(1..=self.shards).contains(&self.shard) {
            return Err(format!(
                "slice {} of {}: no such slice",
                self.shard, self.shards
            ));
        }
        let planned = self.plan.len().checked_mul(self.seeds.len());
        if planned != Some(self.runs) {
            return Err(format!(
                "{} planned variant{} × {} seed{} make {}, not {}",
                self.plan.len(),
                if self.plan.len() == 1 { "" } else { "s" },
                self.seeds.len(),
                if self.seeds.len() == 1 { "" } else { "s" },
                match planned {
                    Some(1) => "1 run".to_string(),
                    Some(n) => format!("{n} runs"),
                    None => "too many runs".to_string(),
                },
                self.runs
            ));
        }
        Ok(())
    }
}

/// Read every slice's manifest, check they are the N slices of one comparison, and give the
/// manifest and each slice's folder in slice order.
pub fn read_slices(dirs: &[PathBuf]) -> Result<(Manifest, Vec<PathBuf>), ShardError> {
    let mut read = Vec::new();
    for d in dirs {
        let path = d.join(MANIFEST);
        let text = crate::infile::read_capped(&path, MAX_MANIFEST_BYTES).map_err(|e| {
            ShardError::NotAShard {
                dir: d.clone(),
                why: e.to_string(),
            }
        })?;
        let m: Manifest = serde_json::from_slice(&text).map_err(|e| ShardError::NotAShard {
            dir: d.clone(),
            why: e.to_string(),
        })?;
        m.check().map_err(|why| ShardError::BadManifest {
            dir: d.clone(),
            why,
        })?;
        read.push((m, d.clone()));
    }
    let (first, first_dir) = read.first().cloned().ok_or(ShardError::Missing {
        missing: Vec::new(),
        count: 0,
    })?;
    let ours = env!("CARGO_PKG_VERSION").to_string();
    let mut slots: Vec<Option<PathBuf>> = vec![None; first.shards];
    for (m, d) in &read {
        if m.version != ours {
            return Err(ShardError::Version {
                first: first_dir.clone(),
                other: d.clone(),
                ours,
                theirs: m.version.clone(),
            });
        }
        let differ = |what| ShardError::Different {
            first: first_dir.clone(),
            other: d.clone(),
            what,
        };
        if m.scenario_file != first.scenario_file {
            return Err(differ("the scenario files"));
        }
        if m.overrides != first.overrides
            || m.variants != first.variants
            || m.algorithms != first.algorithms
        {
            return Err(differ("the flags"));
        }
        if m.seeds != first.seeds {
            return Err(differ("the seeds"));
        }
        if m.shards != first.shards {
            return Err(differ("the numbers of slices"));
        }
        if m.plan != first.plan || m.runs != first.runs {
            return Err(differ("the planned variants"));
        }
        let slot = slots
            .get_mut(m.shard.wrapping_sub(1))
            .ok_or_else(|| differ("the numbers of slices"))?;
        if let Some(a) = slot {
            return Err(ShardError::Twice {
                index: m.shard,
                count: m.shards,
                a: a.clone(),
                b: d.clone(),
            });
        }
        *slot = Some(d.clone());
    }
    let missing: Vec<usize> = (1..=first.shards)
        .filter(|i| slots[i - 1].is_none())
        .collect();
    if !missing.is_empty() {
        return Err(ShardError::Missing {
            missing,
            count: first.shards,
        });
    }
    Ok((first, slots.into_iter().flatten().collect()))
}

/// Every run's metrics from the slices' `runs.csv`, indexed by run number; a run missing from
/// every slice, or in two, is an error naming it.
pub fn read_runs(manifest: &Manifest, dirs: &[PathBuf]) -> Result<Vec<Metrics>, ShardError> {
    let mut runs: Vec<Option<Metrics>> = vec![None; manifest.runs];
    for d in dirs {
        let path = d.join(ROWS);
        let wrong = |problem: CsvProblem| ShardError::BadRows {
            path: path.clone(),
            problem,
        };
        let bad = |line: u64, why: String| wrong(CsvProblem::at(line, why));
        let (mut rdr, header) = open_csv(&path).map_err(wrong)?;
        // job, [cell,] variant, seed, the metrics.
        let first_metric = header
            .iter()
            .position(|h| h == "seed")
            .map(|i| i + 1)
            .ok_or_else(|| bad(1, "no seed column".into()))?;
        for row in rdr.records() {
            let row = row.map_err(|e| wrong(CsvProblem::of(&e)))?;
            let line = row.position().map_or(0, |p| p.line());
            let job: usize = row
                .get(0)
                .and_then(|j| j.parse().ok())
                .filter(|&j| j < manifest.runs)
                .ok_or_else(|| bad(line, "the run number is not one of the plan's".into()))?;
            let values = header.iter().zip(row.iter()).skip(first_metric);
            let m = super::files::metrics_from(values).map_err(|why| bad(line, why))?;
            if runs[job].replace(m).is_some() {
                return Err(bad(line, format!("run {job} is in two slices")));
            }
        }
    }
    runs.into_iter()
        .enumerate()
        .map(|(job, m)| {
            m.ok_or_else(|| ShardError::BadRows {
                path: PathBuf::from(ROWS),
                problem: CsvProblem {
                    line: None,
                    why: format!("run {job} is in no slice"),
                },
            })
        })
        .collect()
}

/// Copy a slice's first-seed run folder (its files, not its charts, which the merge draws).
pub fn copy_run_folder(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_refuse_what_picks_no_slice() {
        let given = |k, n| ShardSpec::Given(Shard { index: k, count: n });
        assert_eq!("2/3".parse::<ShardSpec>().unwrap(), given(2, 3));
        assert_eq!(
            "auto/4".parse::<ShardSpec>().unwrap(),
            ShardSpec::Auto { count: 4 }
        );
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "-1/3", "1/100001"] {
            assert!(bad.parse::<ShardSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn auto_reads_the_batch_engines_index() {
        let spec = ShardSpec::Auto { count: 3 };
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        // Kubernetes counts from 0.
        let s = spec.resolve(env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap();
        assert_eq!(s, Shard { index: 1, count: 3 });
        // Slurm from its array's first index.
        const SLURM: [(&str, &str); 2] =
            [("SLURM_ARRAY_TASK_ID", "4"), ("SLURM_ARRAY_TASK_MIN", "2")];
        assert_eq!(spec.resolve(env(&SLURM)).unwrap().index, 3);
        assert_eq!(
            spec.resolve(env(&[("SLURM_ARRAY_TASK_ID", "2")]))
                .unwrap()
                .index,
            3
        );
        assert!(matches!(
            spec.resolve(env(&[("JOB_COMPLETION_INDEX", "3")])),
            Err(ShardError::BadIndex { .. })
        ));
        assert!(matches!(
            spec.resolve(env(&[])),
            Err(ShardError::NoIndex(3))
        ));
    }

    #[test]
    fn slices_hold_every_run_once() {
        let n = 4;
        for job in 0..50 {
            let holders = (1..=n)
                .filter(|&k| Shard { index: k, count: n }.holds(job))
                .count();
            assert_eq!(holders, 1, "run {job}");
        }
    }
}
