//! `serve --record DIR`: the run folder a `run` writes, for clients throttle-sim did not write.
//!
//! While `serve` answers, [`journal`] writes one small record per answered request and names
//! each client ([`identity`]: `X-Client-Id`, else the key, else the peer's address). When it
//! stops, [`replay`] reads the records back through the run's `Recorder`, and the folder gets
//! what a run's gets: `scenario.toml`, `series.csv`, `summary.json`, `summary.md`, the charts
//! and `report.html`, plus `clients.csv` naming every client. Metric definitions, and where
//! they differ from the sim's: docs/serve-record.md.

pub use crate::engine::live::server::identity;
pub mod journal;
pub mod replay;

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use journal::Journal;
pub use replay::Plan;

use crate::engine::live::ScaledClock;
use crate::error::Error;
use crate::record::{CsvSink, GapPercentiles, Summary};
use crate::report::write_summary;
use crate::scenario::{ScenarioError, parse_scenario};
use crate::time::{Nanos, secs};

/// The scenario made of the recorded clients does not load back as a scenario (a fault of
/// this program, said rather than written into a folder no report can read).
#[derive(Debug, thiserror::Error)]
#[error("the recorded clients make no valid scenario: {0}")]
pub struct InvalidRecording(ScenarioError);

/// A recording in progress: the journal the server writes to, and where the folder goes.
pub struct Recording {
    dir: PathBuf,
    plan: Plan,
    journal: Arc<Journal>,
}

/// What `finish` wrote.
pub struct Recorded {
    pub summary: Summary,
    pub clients: usize,
    /// Said when `sample_every` had to grow to keep `series.csv` within bounds.
    pub note: Option<String>,
}

impl Recording {
    /// Start recording into `dir`, a folder already claimed (new or empty, writable).
    pub fn start(dir: &Path, plan: Plan, clock: ScaledClock) -> Result<Recording, Error> {
        let journal = Journal::create(dir, clock, plan.log_requests).map_err(Error::io(dir))?;
        Ok(Recording {
            dir: dir.to_path_buf(),
            plan,
            journal: Arc::new(journal),
        })
    }

    /// The observer to hand the server.
    pub fn journal(&self) -> Arc<Journal> {
        self.journal.clone()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Give up before anything was served: remove the scratch file, and the folder if that
    /// leaves it empty (`claim_dir_for` made it, or it was empty before).
    pub fn abandon(self) {
        let done = self.journal.finish();
        let _ = fs::remove_file(&done.path);
        let _ = fs::remove_dir(&self.dir);
    }

    /// Once the server has stopped: write the run folder, which ends at `end` (virtual time
    /// since it started); answers due after `stopped_at`, when it stopped answering, were never
    /// sent. `capacity` is the server's rule's capacity for one key over `[0, span]`.
    pub fn finish(
        self,
        end: Nanos,
        stopped_at: Nanos,
        capacity: &dyn Fn(Nanos) -> f64,
    ) -> Result<Recorded, Error> {
        let done = self.journal.finish();
        let (scenario, thread_of, note) = replay::scenario_of(&self.plan, &done.clients, end);
        let text = scenario.to_toml();
        // The report reads scenario.toml back: it must load as any scenario does.
        parse_scenario(&text, "scenario.toml", &scenario.name, &[], 0)
            .map_err(|e| Error::failed(InvalidRecording(e)))?;
        let dir = &self.dir;
        let path = dir.join("scenario.toml");
        fs::write(&path, text).map_err(Error::io(&path))?;
        let series_path = dir.join("series.csv");
        let series = File::create(&series_path).map_err(Error::io(&series_path))?;
        let entries =
            journal::Entries::open(&done.path, done.detail).map_err(Error::io(&done.path))?;
        let requests_path = dir.join("requests.csv");
        let requests = match done.detail {
            true => Some(BufWriter::new(
                File::create(&requests_path).map_err(Error::io(&requests_path))?,
            )),
            false => None,
        };
        let gaps = replay::Gaps {
            unrecorded: done.unrecorded,
            failure: done.failure,
            stopped_at,
        };
        let summary = replay::replay(
            &scenario,
            &thread_of,
            entries,
            (series, requests),
            capacity,
            gaps,
        )
        .map_err(Error::io(&series_path))?;
        write_summary(dir, &summary, &scenario)?;
        if let Some(g) = &summary.gaps {
            // summary.md as a run writes it, and what only a recording has.
            let md = dir.join("summary.md");
            let mut text = fs::read_to_string(&md).map_err(Error::io(&md))?;
            text.push_str("\n## Observed gaps\n\n");
            text.push_str(&gaps_markdown(g));
            fs::write(&md, text).map_err(Error::io(&md))?;
        }
        write_clients(dir, &done.clients, &summary, &scenario, &thread_of)?;
        let _ = fs::remove_file(&done.path);
        Ok(Recorded {
            summary,
            clients: done.clients.len(),
            note,
        })
    }
}

/// `clients.csv`: which group and process each client became, how it was told apart, its
/// first request and its counts.
fn write_clients(
    dir: &Path,
    clients: &[journal::Client],
    summary: &Summary,
    scenario: &crate::scenario::Scenario,
    thread_of: &[usize],
) -> Result<(), Error> {
    let path = dir.join("clients.csv");
    let layout = crate::scenario::Layout::new(scenario);
    let file = File::create(&path).map_err(Error::io(&path))?;
    let mut w = CsvSink::new(BufWriter::new(file));
    let mut order: Vec<usize> = (0..clients.len()).collect();
    order.sort_by_key(|&i| thread_of[i]);
    let write = |w: &mut CsvSink<_>| -> std::io::Result<()> {
        w.header(&[
            "group",
            "process",
            "client",
            "identified_by",
            "key",
            "first_s",
            "requests",
            "ok",
            "limited",
            "errors",
        ])?;
        for i in order {
            let c = &clients[i];
            let p = layout.threads[thread_of[i]].process as usize;
            let s = &summary.processes[p];
            w.text(&c.id.group)?;
            w.uint(s.process as u64)?;
            w.text(&c.id.name)?;
            w.text(c.id.by.as_str())?;
            w.text(&c.key)?;
            w.float(secs(c.first_at))?;
            w.uint(s.requests)?;
            w.uint(s.ok)?;
            w.uint(s.limited)?;
            w.uint(s.errors)?;
            w.end_row()?;
        }
        w.flush()
    };
    write(&mut w).map_err(Error::io(&path))
}

fn opt_secs(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"))
}

/// One line: the observed gaps' percentiles (what `serve` prints when it stops).
pub fn gaps_line(g: &GapPercentiles) -> String {
    format!(
        "observed gaps between a client's requests: p50 {} s, p90 {} s, p99 {} s, max {} s \
         ({} gaps)",
        opt_secs(g.p50),
        opt_secs(g.p90),
        opt_secs(g.p99),
        opt_secs(g.max),
        g.count
    )
}

/// The observed gaps as a Markdown table, overall and per group.
pub fn gaps_markdown(g: &GapPercentiles) -> String {
    let mut out = String::from(
        "From the answer to a client's request to its next request's arrival, seconds \
         (docs/serve-record.md).\n\n| group | gaps | p50 | p90 | p99 | max |\n\
         | --- | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let row = |name: &str, g: &GapPercentiles| {
        format!(
            "| {name} | {} | {} | {} | {} | {} |\n",
            g.count,
            opt_secs(g.p50),
            opt_secs(g.p90),
            opt_secs(g.p99),
            opt_secs(g.max)
        )
    };
    out.push_str(&row("all", g));
    if g.groups.len() > 1 {
        for group in &g.groups {
            out.push_str(&row(&group.name, &group.gaps));
        }
    }
    out
}
