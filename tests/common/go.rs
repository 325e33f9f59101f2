//! The Go port's driver (`ports/go/drive`), built once per test binary with `go build` into the
//! target folder: Go has no interpreter to run a source file from without building it, and a
//! `go run` per call would build it again each time.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The driver's binary, built on first use (a no-op for Go when nothing changed since).
pub fn go_driver() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ports/go");
            let bin = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-fair-share-drive");
            let out = Command::new("go")
                .current_dir(&root)
                .args(["build", "-o"])
                .arg(&bin)
                .arg("./drive")
                .output()
                .expect("go runs (build.rs found it)");
            assert!(
                out.status.success(),
                "go build ./drive in ports/go failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            bin
        })
        .clone()
}
