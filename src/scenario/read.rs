//! A scenario file read from disk: bounded in size, UTF-8, then loaded as any scenario text.

use std::path::Path;

use super::checks::MAX_SCENARIO_BYTES;
use super::{Override, Scenario, ScenarioError, parse_scenario};

/// Read and validate a scenario file. `seed_if_absent` fixes the seed when neither the file nor
/// an override gives one.
pub fn read_scenario(
    path: &Path,
    overrides: &[Override],
    seed_if_absent: u64,
) -> Result<Scenario, ScenarioError> {
    let origin = path.display().to_string();
    let text = read_bounded(path)
        .map_err(|e| ScenarioError::whole_file(&origin, format!("cannot read the file: {e}")))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    parse_scenario(&text, &origin, &stem, overrides, seed_if_absent)
}

/// The file's text, refusing anything but a regular file (a FIFO would block the open until
/// a writer comes, and a device may never end) and one past [`MAX_SCENARIO_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use crate::infile::{InFileError, read_capped};
    let bytes = read_capped(path, MAX_SCENARIO_BYTES).map_err(|e| match e {
        InFileError::Io(e) => e,
        InFileError::Folder => std::io::Error::other("it is a folder, not a scenario file"),
        InFileError::NotRegular(_) => {
            std::io::Error::other(format!("{e}; a scenario is a TOML file on disk"))
        }
        InFileError::TooLarge { .. } => {
            std::io::Error::other(format!("{e}; a scenario is a short TOML file"))
        }
    })?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::other("it is not UTF-8 text; a scenario is a TOML file"))
}
