//! A scenario file read from disk: bounded in size, UTF-8, then loaded as any scenario text.

use std::path::Path;

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

/// The largest scenario file read: the bundled ones are a few kilobytes; without a bound a
/// device such as `/dev/zero` would be read until memory runs out.
pub const MAX_SCENARIO_BYTES: u64 = 1 << 20;

/// The file's text, refusing anything but a regular file (a FIFO would block the open until
/// a writer comes, and a device may never end) and one past [`MAX_SCENARIO_BYTES`].
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    // Asked before opening: `open` of a FIFO blocks until a writer comes, so long that a
    // Ctrl-C or SIGTERM is caught and then waits behind it.
    let kind = std::fs::metadata(path)?.file_type();
    if kind.is_dir() {
        return Err(std::io::Error::other("it is a folder, not a scenario file"));
    }
    if !kind.is_file() {
        return Err(std::io::Error::other(format!(
            "it is {}, not a regular file; a scenario is a TOML file on disk",
            special_kind(&kind)
        )));
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(std::io::Error::other(format!(
            "it is larger than {} KiB; a scenario is a short TOML file",
            MAX_SCENARIO_BYTES / 1024
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::other("it is not UTF-8 text; a scenario is a TOML file"))
}

/// What a file that is neither a regular file nor a folder is, in words.
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}
