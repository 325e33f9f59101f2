//! The Ruby port through its Faraday middleware (`ports/ruby/lib/fair_share/faraday.rb`): the
//! middleware picks each request's thread of the law and waits, the driver's threads only send.

use std::process::Command;

use crate::harness::{Port, port_tests};

pub const RUBY_FARADAY: Port = Port {
    name: "ruby-faraday",
    available: !cfg!(no_ruby_faraday),
    command: || {
        let mut c = Command::new("ruby");
        c.args(["ports/ruby/drive.rb", "--via", "faraday"]);
        c
    },
};

port_tests!(
    "ruby-faraday",
    no_ruby_faraday,
    "needs ruby with the faraday gem (`ruby -e 'require \"faraday\"'` failed when this test was built): apt-get install ruby-faraday, then cargo test --test ports ruby_faraday"
);
