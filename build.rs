//! Build-time facts the tests need: whether `python3`, GNU parallel and Chromium run here.
//! Without one, the tests that use it (the Python example client's,
//! `tests/live/serve_record.rs`; the sweep recipe's, `tests/sim/shards.rs`; the live page's in
//! a headless browser, `tests/live/dashboard.rs`) are compiled as ignored, with the reason, so
//! `cargo test` shows them skipped rather than passing without running.

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_python3)");
    println!("cargo::rustc-check-cfg=cfg(no_gnu_parallel)");
    println!("cargo::rustc-check-cfg=cfg(no_chromium)");
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
    // moreutils has a `parallel` of its own, with other flags: only GNU's will do.
    let gnu_parallel = Command::new("parallel")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GNU parallel")
        });
    if !gnu_parallel {
        println!("cargo::rustc-cfg=no_gnu_parallel");
    }
    // Debian's `chromium` (the name `tests/live/dashboard.rs` starts).
    let chromium = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !chromium {
        println!("cargo::rustc-cfg=no_chromium");
    }
}
