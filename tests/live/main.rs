//! The tests that run in real time over loopback: live runs with real worker processes, `serve`
//! and `serve --record`, TLS, the faults only a real process meets, and shared state on a real
//! Redis. One test binary for all of them (each file a module, a test's name starting with its
//! file's: `live::…`, `redis::…`); the agreement of live with sim timing, which wants the
//! machine to itself, is the binary of its own `tests/live_agreement.rs`.
//!
//! The Redis tests are `#[ignore]`d with the reason (they need `redis-server`); with one at
//! hand, `cargo test --test live -- --ignored redis::` runs them, as `.ci/run` does.

#[path = "../common/mod.rs"]
mod common;

mod client_body;
mod dashboard;
mod fit;
mod hostile;
mod hostile_serve;
mod live;
mod live_algorithms;
mod live_workloads;
mod redis;
mod serve_record;
mod tls;
mod trust;
