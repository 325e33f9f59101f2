//! The JavaScript port through its fetch wrapper (`ports/javascript/fetch.mjs`): the wrapper
//! picks each request's thread of the law and waits, the driver's loops only send.

use std::process::Command;

use crate::harness::{Port, port_tests};

pub const JAVASCRIPT_FETCH: Port = Port {
    name: "javascript-fetch",
    available: !cfg!(no_node_fetch),
    command: || {
        let mut c = Command::new("node");
        c.args(["ports/javascript/drive.mjs", "--via", "fetch"]);
        c
    },
};

port_tests!(
    "javascript-fetch",
    no_node_fetch,
    "needs node with a global fetch (Node 18 or later; none was found when this test was built): apt-get install nodejs, then cargo test --test ports javascript_fetch"
);
