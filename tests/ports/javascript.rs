//! The JavaScript port (`ports/javascript/`), Node's standard library only.

use std::process::Command;

use crate::harness::{Port, port_tests};

pub const JAVASCRIPT: Port = Port {
    name: "javascript",
    available: !cfg!(no_node),
    command: || {
        let mut c = Command::new("node");
        c.arg("ports/javascript/drive.mjs");
        c
    },
};

port_tests!(
    "javascript",
    no_node,
    "needs node on PATH (none was found when this test was built): install it (apt-get install nodejs), then cargo test --test ports javascript"
);
