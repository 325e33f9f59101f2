//! The Python port (`ports/python/`), standard library only.

use std::process::Command;

use crate::harness::{Port, port_tests};

pub const PYTHON: Port = Port {
    name: "python",
    available: !cfg!(no_python3),
    command: || {
        let mut c = Command::new("python3");
        c.arg("ports/python/drive.py");
        c
    },
};

port_tests!(
    "python",
    no_python3,
    "needs python3 on PATH (none was found when this test was built): install it, then cargo test --test ports python"
);
