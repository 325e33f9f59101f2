//! The `fair-share` crate's tower layer (`crates/fair-share/src/tower.rs`, feature `tower`)
//! around hyper-util's client: `crates/fair-share/examples/tower_client.rs`, held to the sim as
//! the ports are. The root's `cargo test` does not enable the feature, so the run builds the
//! example itself (a no-op when it is fresh).

use std::path::PathBuf;
use std::process::Command;

use crate::harness::{Port, port_tests};

pub const RUST_TOWER: Port = Port {
    name: "rust-tower",
    available: true,
    command: || Command::new(example()),
};

/// The example's binary, next to this test's in the target folder (built, or rebuilt if the
/// sources changed since).
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let mut build = Command::new(env!("CARGO"));
    build.args([
        "build",
        "--quiet",
        "-p",
        "fair-share",
        "--features",
        "tower",
        "--example",
        "tower_client",
    ]);
    if profile_dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(
        status.success(),
        "cargo build -p fair-share --features tower --example tower_client failed"
    );
    profile_dir.join("examples").join("tower_client")
}

port_tests!("rust-tower", any(), "");
