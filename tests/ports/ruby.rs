//! The Ruby port (`ports/ruby/`), standard library only.

use std::process::Command;

use crate::harness::{Port, port_tests};

pub const RUBY: Port = Port {
    name: "ruby",
    available: !cfg!(no_ruby),
    command: || {
        let mut c = Command::new("ruby");
        c.arg("ports/ruby/drive.rb");
        c
    },
};

port_tests!(
    "ruby",
    no_ruby,
    "needs ruby on PATH (none was found when this test was built): install it (apt-get install ruby), then cargo test --test ports ruby"
);
