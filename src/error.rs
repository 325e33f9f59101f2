//! The errors a user can meet, each mapped to an exit code. Each area has its own typed
//! error that names what is wrong and where; this is where they meet, where the flag that
//! gave a value is added, and where each gets its exit code (`exit.rs`).

use std::path::PathBuf;

use crate::engine::EngineError;
use crate::engine::live::tls::HandshakeError;
use crate::exit;
use crate::record::{MAX_SERIES_BYTES, SeriesTooLarge};
use crate::report::ReportError;
use crate::scenario::ScenarioError;
use crate::time::NANOS_PER_SEC;

/// An area's own typed error, boxed, for the areas on the floors above this one (`run`,
/// `compare`, the commands), whose types this enum cannot name.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// A request the tool cannot carry out as given, not tied to one flag's value (exit 2).
    #[error("{0}")]
    Usage(Cause),
    /// A value that cannot be used (exit 2): the flag as typed, with its value where that
    /// helps (`--target http://x`), or the scenario setting it came from (`store.url`), and
    /// what the area that took the value found wrong.
    #[error("{flag}: {problem}")]
    Flag { flag: String, problem: Cause },
    /// The run could not be carried out (exit 3).
    #[error("{0}")]
    Failed(Cause),
    /// Ctrl-C (or SIGTERM) stopped the work before it was done (exit 130): the cause says
    /// what was kept.
    #[error("{0}")]
    Interrupted(Cause),
    /// `client`: the TLS handshake with the target failed before the run; nothing can be sent.
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
    /// A results folder's report could not be drawn.
    #[error("{0}")]
    Report(#[from] ReportError),
    /// The engine could not run (or, live, could not start) the scenario.
    #[error("{0}")]
    Engine(EngineError),
    /// `series.csv` would pass [`MAX_SERIES_BYTES`] and `--allow-large-output` was not given:
    /// name `sample_every`, the estimate and the ways out.
    #[error(
        "run.sample_every = {} would write about {:.1} GB of series.csv ({threads} threads × {} \
         samples), more than the {} GB allowed: sample less often (e.g. --set \
         run.sample_every={}s), write a row per process or group (--set run.series=group), run \
         shorter, or pass --allow-large-output",
        estimate.sample_every,
        estimate.bytes as f64 / 1e9,
        estimate.ticks,
        MAX_SERIES_BYTES / 1_000_000_000,
        estimate.fitting_every.nanos() / NANOS_PER_SEC
    )]
    SeriesTooLarge {
        estimate: SeriesTooLarge,
        threads: u64,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
    /// A request the tool cannot carry out as given: `problem` says why.
    pub fn usage(problem: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Usage(Box::new(problem))
    }

    /// A run that could not be carried out: `problem` says why.
    pub fn failed(problem: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Failed(Box::new(problem))
    }

    /// For `map_err`: an area's error about the value of `flag` (as typed, e.g. `--store`, or
    /// `--target URL`).
    pub fn flag<E>(flag: impl Into<String>) -> impl FnOnce(E) -> Error
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let flag = flag.into();
        move |problem| Error::Flag {
            flag,
            problem: Box::new(problem),
        }
    }

    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }

    /// An engine's error, a write failure named by the file it was writing.
    pub fn engine(written: impl Into<PathBuf>) -> impl FnOnce(EngineError) -> Error {
        let path = written.into();
        move |e| match e {
            EngineError::Write(source) => Error::Io { path, source },
            e => Error::Engine(e),
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Scenario(_) | Error::Usage(_) | Error::Flag { .. } => exit::BAD_INPUT,
            Error::SeriesTooLarge { .. } => exit::BAD_INPUT,
            Error::Handshake(_) => exit::NOTHING_WORKED,
            Error::Io { .. } | Error::Failed(_) => exit::FAILED,
            Error::Interrupted(_) => exit::INTERRUPTED,
            Error::Engine(e) => e.exit_code(),
            Error::Report(e) => e.exit_code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_error_keeps_its_exit_code_and_a_write_failure_names_its_file() {
        let e = Error::engine("r/series.csv")(EngineError::Write(std::io::Error::other("full")));
        assert_eq!(e.to_string(), "r/series.csv: full");
        assert_eq!(e.exit_code(), exit::FAILED);
        let e = Error::engine("r/series.csv")(EngineError::Interrupted);
        assert_eq!(e.exit_code(), exit::INTERRUPTED);
    }
}
