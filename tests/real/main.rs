//! Real, widely deployed rate limiters on loopback, and the project's own commands against
//! them: nginx's `limit_req`, Flask-Limiter, express-rate-limit and @fastify/rate-limit, each
//! started as a child process on a free port for the test that needs it (`harness.rs`).
//!
//! For each limiter, one test captures the rate-limit fields of a 2xx and a 429 of each of its
//! configurations and holds them to `tests/data/real-headers/` (`headers.rs`), and one test
//! per configuration runs `throttle-sim client --algorithm fair-share` against it and
//! `throttle-sim fit` on a trace of it (`measure.rs`, which holds the aims). Each file is a
//! module, its tests' names starting with its name: `cargo test --test real express::`.
//!
//! A limiter that cannot run here has its tests ignored with the reason (build.rs: `no_nginx`,
//! `no_flask_limiter`, `no_express_rate_limit`, `no_fastify_rate_limit`);
//! `scripts/install_real_limiters.sh` installs all four, pinned.

#![cfg(unix)]

mod harness;
mod headers;
mod measure;

mod express;
mod fastify;
mod flask_limiter;
mod nginx;
