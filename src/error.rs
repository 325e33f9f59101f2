//! The errors a user can meet, each mapped to an exit code.

use std::path::PathBuf;

use crate::engine::EngineError;
use crate::report::ReportError;
use crate::scenario::ScenarioError;

/// Exit codes: 0 done, 1 an `[expect]` range missed, 2 bad input, 3 the run itself failed,
/// 4 the run ended but every request failed or none was sent, 130 interrupted (Ctrl-C; the
/// shells' 128 + SIGINT).
pub mod exit {
    pub const OK: i32 = 0;
    pub const EXPECT_MISSED: i32 = 1;
    pub const BAD_INPUT: i32 = 2;
    pub const FAILED: i32 = 3;
    pub const INTERRUPTED: i32 = 130;
    /// The tool did its part, but nothing reached a server that answered: every request
    /// failed (refused, reset, timed out, 5xx) or none was sent, or (`client`) the TLS
    /// handshake with the target failed before the run. Never a silent 0.
    pub const NOTHING_WORKED: i32 = 4;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// A request the tool cannot carry out as given (a flag, a mode, an output folder).
    #[error("{0}")]
    Usage(String),
    /// The run could not be carried out (a worker would not start, a socket failed).
    #[error("{0}")]
    Failed(String),
    /// Nothing can be sent to the target: a failed TLS handshake, found before the run.
    #[error("{0}")]
    Unreachable(String),
    /// A results folder's report could not be drawn.
    #[error("{0}")]
    Report(#[from] ReportError),
    /// The engine could not run (or, live, could not start) the scenario.
    #[error("{0}")]
    Engine(EngineError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Error {
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
            Error::Scenario(_) | Error::Usage(_) => exit::BAD_INPUT,
            Error::Io { .. } | Error::Failed(_) => exit::FAILED,
            Error::Unreachable(_) => exit::NOTHING_WORKED,
            Error::Engine(e) => e.exit_code(),
            Error::Report(e) => e.exit_code(),
        }
    }
}
