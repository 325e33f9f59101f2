//! Build-time facts the tests need: whether `python3`, `ruby`, `node`, GNU parallel and
//! Chromium run here. Without one, the tests that use it (the Python example client's,
//! `tests/live/serve_record.rs`; the ports of fair-share, `tests/ports/`; the sweep recipe's,
//! `tests/sim/shards.rs`; the live page's in a headless browser, `tests/live/dashboard.rs`)
//! are compiled as ignored, with the reason, so `cargo test` shows them skipped rather than
//! passing without running.

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_python3)");
    println!("cargo::rustc-check-cfg=cfg(no_ruby)");
    println!("cargo::rustc-check-cfg=cfg(no_node)");
    println!("cargo::rustc-check-cfg=cfg(no_gnu_parallel)");
    println!("cargo::rustc-check-cfg=cfg(no_chromium)");
    // Looked up again when PATH changes (a python3 installed into a new place).
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=build.rs");
    // The interpreters of the ports (`ports/`): Debian's `ruby` and `nodejs` (whose command
    // is `node`).
    for (program, cfg) in [
        ("python3", "no_python3"),
        ("ruby", "no_ruby"),
        ("node", "no_node"),
    ] {
        let works = Command::new(program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !works {
            println!("cargo::rustc-cfg={cfg}");
        }
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
