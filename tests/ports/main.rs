//! The ports of fair-share (`ports/`) and the Rust example client held to the law live: each port's driver runs P
//! processes × T threads against `throttle-sim serve --record`, and the recording must land
//! within the tolerances of `tests/live_agreement.rs` of the sim's `fair-share` mean over 10
//! seeds of the same scenario (`harness.rs`). One file per port, two tests each (a per-minute
//! bucket of the API-shape matrix at 60×, and in the second tier heroku_5x5 at 60×); a port
//! whose interpreter is missing has its tests ignored with the reason (build.rs: `no_python3`,
//! `no_ruby`, `no_node`, `no_go`). Every port runs a shape at once, each against its own
//! serve, so the binary takes the time of one run (about 20 s, and 40 s for the second tier).

#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod go;
mod go_transport;
mod harness;
mod javascript;
mod javascript_fetch;
mod python;
mod python_adapters;
mod ruby;
mod ruby_faraday;
mod rust;
mod rust_tower;

/// Every port, and the Rust example client: a new port's file adds its line here.
fn ports() -> Vec<harness::Port> {
    vec![
        python::PYTHON,
        python_adapters::PYTHON_REQUESTS,
        python_adapters::PYTHON_HTTPX,
        python_adapters::PYTHON_HTTPX_ASYNC,
        ruby::RUBY,
        javascript::JAVASCRIPT,
        go::GO,
        go_transport::GO_TRANSPORT,
        ruby_faraday::RUBY_FARADAY,
        javascript_fetch::JAVASCRIPT_FETCH,
        rust::RUST,
        rust_tower::RUST_TOWER,
    ]
}
