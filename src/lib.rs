//! throttle-sim: how should many processes and threads that share one API token throttle
//! themselves behind a server's rate limit? A mock rate-limited server, adaptive clients, a
//! deterministic simulator, and the numbers that say which algorithm works.

pub mod advise;
pub mod check;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod engine;
pub mod error;
pub mod exchange;
pub mod exit;
pub mod fingerprint;
pub mod fit;
pub mod infile;
pub mod limiter;
pub mod list;
pub mod machine;
pub mod parallel;
pub mod prefetch;
pub mod progress;
pub mod record;
pub mod recording;
pub mod redact;
pub mod report;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod shapes;
pub mod store;
pub mod suggest;
pub mod throttle;
pub mod time;
