//! The Python port's HTTP adapters (`ports/python/fair_share/requests.py` and `httpx.py`), each
//! run by `drive.py --via`: the adapter, not the driver, picks the law's thread slots and sleeps
//! its waits, so these hold the adapters to the sim as `python.rs` holds the bare law. Each is
//! ignored with the reason where `python3` cannot import its library (build.rs).

use std::process::Command;

use crate::harness::Port;

/// `drive.py --via VIA`.
fn via(via: &str) -> Command {
    let mut c = Command::new("python3");
    c.args(["ports/python/drive.py", "--via", via]);
    c
}

pub const PYTHON_REQUESTS: Port = Port {
    name: "python-requests",
    available: !cfg!(no_python_requests),
    command: || via("requests"),
};

pub const PYTHON_HTTPX: Port = Port {
    name: "python-httpx",
    available: !cfg!(no_python_httpx),
    command: || via("httpx"),
};

pub const PYTHON_HTTPX_ASYNC: Port = Port {
    name: "python-httpx-async",
    available: !cfg!(no_python_httpx),
    command: || via("httpx-async"),
};

mod requests {
    use crate::harness::port_tests;
    port_tests!(
        "python-requests",
        no_python_requests,
        "needs python3 with requests (none could import it when this test was built): apt-get install python3-requests, then touch build.rs; cargo test --test ports python"
    );
}

mod httpx {
    use crate::harness::port_tests;
    port_tests!(
        "python-httpx",
        no_python_httpx,
        "needs python3 with httpx (none could import it when this test was built): apt-get install python3-httpx, then touch build.rs; cargo test --test ports python"
    );
}

mod httpx_async {
    use crate::harness::port_tests;
    port_tests!(
        "python-httpx-async",
        no_python_httpx,
        "needs python3 with httpx (none could import it when this test was built): apt-get install python3-httpx, then touch build.rs; cargo test --test ports python"
    );
}
