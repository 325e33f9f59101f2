//! What can go wrong drawing a results folder's report, with where: a file of the folder that
//! is missing or does not read as this tool wrote it (a line of `series.csv` or `compare.csv`),
//! a chart that could not be drawn, or a file that could not be written.

use std::path::PathBuf;

use super::canvas::DrawError;
use crate::exit;
use crate::scenario::ScenarioError;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file the folder should hold is not there; `why` says what it is needed for.
    #[error("{}: missing; {why}", path.display())]
    Missing { path: PathBuf, why: &'static str },
    /// A results file is missing a part or does not parse: the folder was edited, truncated,
    /// or is not a results folder.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    BadFile {
        path: PathBuf,
        /// 1-based, the header being line 1.
        line: Option<u64>,
        message: String,
    },
    /// The folder's `scenario.toml` does not load.
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// The chart library or the PNG encoder failed.
    #[error("drawing {chart}: {source}")]
    Draw { chart: String, source: DrawError },
    /// Reading or writing a file of the folder failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ReportError {
    pub fn bad_file(
        path: impl Into<PathBuf>,
        line: Option<u64>,
        message: impl std::fmt::Display,
    ) -> Self {
        ReportError::BadFile {
            path: path.into(),
            line,
            message: message.to_string(),
        }
    }

    /// For `map_err`: an I/O failure on `path`.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ReportError::Io { path, source }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            ReportError::Missing { .. } | ReportError::BadFile { .. } => exit::BAD_INPUT,
            ReportError::Scenario(_) => exit::BAD_INPUT,
            ReportError::Draw { .. } | ReportError::Io { .. } => exit::FAILED,
        }
    }
}
