//! Build-time facts the tests need: whether `python3` runs here. Without it the test that
//! measures the Python example client (`tests/live/serve_record.rs`) is compiled as ignored, with
//! the reason, so `cargo test` shows it skipped rather than passing without running.

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_python3)");
    // Looked up again when PATH changes (a python3 installed into a new place).
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=build.rs");
    let works = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        println!("cargo::rustc-cfg=no_python3");
    }
}
