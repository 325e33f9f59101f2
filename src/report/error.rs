//! What can go wrong drawing a results folder's report, with where: a file of the folder that
//! does not read as this tool wrote it (a line of `series.csv` or `compare.csv`), or a chart
//! that could not be drawn.

use std::path::PathBuf;

use crate::error::exit;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A results file is missing a part or does not parse: the folder was edited, truncated,
    /// or is not a results folder.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    BadFile {
        path: PathBuf,
        /// 1-based, the header being line 1.
        line: Option<u64>,
        message: String,
    },
    /// The chart library or the PNG encoder failed.
    #[error("drawing {chart}: {message}")]
    Draw { chart: String, message: String },
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

    pub fn exit_code(&self) -> i32 {
        match self {
            ReportError::BadFile { .. } => exit::BAD_INPUT,
            ReportError::Draw { .. } => exit::FAILED,
        }
    }
}
