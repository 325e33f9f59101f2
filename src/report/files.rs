//! A results folder's files as the report reads them: each there and a regular file, and no
//! larger than a run writes. Below both the run's report (`run_report.rs`) and the series it
//! draws (`series.rs`), which each read files of the folder.

use std::path::Path;

use super::ReportError;
use crate::infile::{InFileError, check_regular, read_capped};

/// The largest JSON or TOML file of a results folder read: a `summary.json` holds a line per
/// process, about 200 MB for a million.
const MAX_RESULTS_TEXT: u64 = 1 << 30;

/// Read a JSON or TOML file of a results folder, naming it in any error.
pub fn read_text(path: &Path) -> Result<String, ReportError> {
    regular(path, "is this a throttle-sim results folder?")?;
    let bytes = read_capped(path, MAX_RESULTS_TEXT)
        .map_err(|e| ReportError::bad_file(path, None, format!("cannot read it: {e}")))?;
    String::from_utf8(bytes)
        .map_err(|_| ReportError::bad_file(path, None, "not UTF-8 text, as the tool writes it"))
}

/// A file of a results folder is there and a regular file (a FIFO would block its reading for
/// ever): missing, `why` says what it is needed for; anything else, what it is.
pub fn regular(path: &Path, why: &'static str) -> Result<(), ReportError> {
    match check_regular(path) {
        Ok(()) => Ok(()),
        Err(InFileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(ReportError::Missing {
                path: path.to_path_buf(),
                why,
            })
        }
        Err(e) => Err(ReportError::bad_file(
            path,
            None,
            format!("cannot read it: {e}"),
        )),
    }
}
