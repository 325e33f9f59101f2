//! A file the user names, read whole: a scenario, a request body, a CA file, a server's
//! certificate or key, a trace, a slice of a sweep. Only a regular file is opened (a FIFO
//! blocks `open` until a writer comes, so long that Ctrl-C and SIGTERM wait behind it; a
//! device such as `/dev/zero` never ends), and no more than a bound the caller sets is read,
//! so memory stays bounded whatever the path points at.

use std::fs::FileType;
use std::io::Read;
use std::path::Path;

/// Why a named file cannot be read. Says what the file is; the caller names it and its flag.
#[derive(Debug, thiserror::Error)]
pub enum InFileError {
    #[error("it is a folder, not a file")]
    Folder,
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than {}", bytes_in_words(*max))]
    TooLarge { max: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Refuse anything but a regular file, asking before it is opened (following links, as
/// `open` would).
pub fn check_regular(path: &Path) -> Result<(), InFileError> {
    let kind = std::fs::metadata(path)?.file_type();
    if kind.is_dir() {
        return Err(InFileError::Folder);
    }
    if !kind.is_file() {
        return Err(InFileError::NotRegular(special_kind(&kind)));
    }
    Ok(())
}

/// The bytes of the regular file at `path`, at most `max` of them.
pub fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, InFileError> {
    check_regular(path)?;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(InFileError::TooLarge { max });
    }
    Ok(bytes)
}

/// What a file that is neither a regular file nor a folder is, in words.
pub fn special_kind(kind: &FileType) -> &'static str {
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

/// A bound in bytes as a person reads it: `1 MiB`, `64 KiB`, `200 bytes`.
fn bytes_in_words(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_is_read_and_only_up_to_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_capped(&file, 5).unwrap(), b"hello");
        let e = read_capped(&file, 4).unwrap_err();
        assert_eq!(e.to_string(), "it is larger than 4 bytes");
        assert!(matches!(
            read_capped(dir.path(), 5),
            Err(InFileError::Folder)
        ));
        let e = read_capped(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(
            e.to_string(),
            "it is a character device, not a regular file"
        );
        assert!(matches!(
            read_capped(&dir.path().join("missing"), 5),
            Err(InFileError::Io(_))
        ));
    }

    #[test]
    fn bounds_read_in_the_largest_whole_unit() {
        assert_eq!(bytes_in_words(1 << 20), "1 MiB");
        assert_eq!(bytes_in_words(64 << 10), "64 KiB");
        assert_eq!(bytes_in_words(16 << 20), "16 MiB");
        assert_eq!(bytes_in_words(1000), "1000 bytes");
    }
}
