//! The `fair-share` crate's tower layer (`crates/fair-share/src/tower.rs`, feature `tower`)
//! around hyper-util's client: `crates/fair-share/examples/tower_client.rs`, held to the sim as
//! the ports are. The root's `cargo test` does not enable the feature, so the run builds the
//! example itself (a no-op when it is fresh).

use std::process::Command;

use crate::harness::{Port, built_example, port_tests};

pub const RUST_TOWER: Port = Port {
    name: "rust-tower",
    available: true,
    command: || {
        Command::new(built_example(
            &["-p", "fair-share", "--features", "tower"],
            "tower_client",
        ))
    },
};

port_tests!("rust-tower", any(), "");
