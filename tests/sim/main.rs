//! The tests that need no real time: the engine and the bundled scenarios in sim mode, the
//! command line, the reports, and bad input. One test binary for all of them, so `cargo test`
//! compiles and links this crate's tests once instead of once per file; each file is a module
//! of its own, and a test's name starts with its file's (`cli::…`, `scenarios::…`).
//!
//! `cargo test --test sim` runs them alone; `cargo test --test sim cli::` one file's.

#[path = "../common/mod.rs"]
mod common;

mod advise;
mod architecture;
mod axes;
mod bad_input;
mod cli;
mod compare_metrics;
mod dialects;
mod engine;
mod failure_window;
mod fair_share_crowds;
mod fair_share_learned_refill;
mod fair_share_misreads;
mod fair_share_newcomer;
mod fair_share_short_sliding;
mod fit;
mod gauntlet_infra;
mod help;
mod hostile;
mod hostile_headers;
mod independent_bound;
mod junit;
mod loader_fuzz;
mod oracle_bound;
mod real_limiters;
mod registry;
mod report_cli;
mod report_layout;
mod retry_rate;
mod scenarios;
mod seed_002_behaviours;
mod seed_behaviours;
mod series_levels;
mod shapes;
mod shards;
mod verdicts_diff;
mod workloads;
