//! The Python port's HTTP adapters (`ports/python/fair_share/requests.py` and `httpx.py`), each
//! run by `drive.py --via`: the adapter, not the driver, picks the law's thread slots and sleeps
//! its waits, so these hold the adapters to the sim as `python.rs` holds the bare law. Each is
//! ignored with the reason where the interpreter cannot import its library (build.rs): the
//! virtual environment `scripts/install_port_packages.sh` makes, `ports/python/.venv`, with the
//! pinned versions, else the `python3` on PATH.

use std::process::Command;

use crate::harness::Port;

/// `drive.py --via VIA`, by the interpreter build.rs found the adapters' libraries in.
fn via(via: &str) -> Command {
    let venv =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ports/python/.venv/bin/python");
    let mut c = Command::new(if venv.exists() {
        venv.into_os_string()
    } else {
        "python3".into()
    });
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
        "needs requests for python3 (none could import it when this test was built): run scripts/install_port_packages.sh, then cargo test --test ports python"
    );
}

mod httpx {
    use crate::harness::port_tests;
    port_tests!(
        "python-httpx",
        no_python_httpx,
        "needs httpx for python3 (none could import it when this test was built): run scripts/install_port_packages.sh, then cargo test --test ports python"
    );
}

mod httpx_async {
    use crate::harness::port_tests;
    port_tests!(
        "python-httpx-async",
        no_python_httpx,
        "needs httpx for python3 (none could import it when this test was built): run scripts/install_port_packages.sh, then cargo test --test ports python"
    );
}
