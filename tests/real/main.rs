//! Real, widely deployed rate limiters on loopback, and the project's own commands against
//! them: nginx's `limit_req`, HAProxy's stick-table request rate, Flask-Limiter,
//! express-rate-limit and @fastify/rate-limit, each started as a child process on a free port
//! (`harness.rs`).
//!
//! For each limiter, one test captures the rate-limit fields of a 2xx and a 429 of each of its
//! configurations and holds them to `crates/fair-share/testdata/real-headers/`, the captures the
//! law's crate reads too (`headers.rs`). Each configuration of a limiter (`measure.rs`'s
//! `Setup`) gets two live runs, made once and shared (`runs.rs`): `fair-share`, 3 processes × 4
//! threads for eight of its periods, and `fixed` a little faster than its limit for `fit`. On
//! them, three tests (`checks.rs`):
//!
//! - `<config>_fit`: `fit` names the rule, its limit and its period within 10 %, or says it
//!   cannot tell where that is the right answer (nginx and HAProxy state nothing, Flask-Limiter's two
//!   limits are stated by turns);
//! - `<config>_sim_agrees`: the sim of the same fleet against the limiter's model lands, over
//!   20 seeds, where the live run does: ratio_429, utilization and fairness within `spread` of
//!   the sim's mean (`tests/common/agreement.rs`);
//! - `<config>_fair_share_targets`: fair-share meets the project's targets after the first
//!   two periods (`measure.rs`'s `COUNTED`, or `UNCOUNTED` for nginx and HAProxy, told the quota), or,
//!   where the `independent` bound on the limiter's model misses them too, comes within the
//!   bound's numbers; and where the limiter states a count, no process keeps more than twice
//!   another's 2xx for more than two periods in a row. Where it misses them today, the test
//!   is ignored with the numbers it measured as the reason.
//!
//! Each file is a module, its tests' names starting with its name: `cargo test --test real
//! express::`. The configurations whose tests are selected run at once, about 45 s of real
//! time, whatever the number of test threads.
//!
//! A limiter that cannot run here has its tests ignored with the reason (build.rs: `no_nginx`,
//! `no_haproxy`, `no_flask_limiter`, `no_express_rate_limit`, `no_fastify_rate_limit`);
//! `.ci/run` installs nginx and HAProxy from Debian, `scripts/install_real_limiters.sh` the
//! other three, pinned.

#![cfg(unix)]

/// The three tests of one configuration (`checks.rs`), named `<name>_fit`, `<name>_sim_agrees`
/// and `<name>_fair_share_targets`, each ignored with `$needs` where the limiter is missing
/// (the cfg `$missing`), and the targets' test also with `$misses` where fair-share misses
/// them today.
macro_rules! configuration_tests {
    ($missing:ident, $needs:literal, $config:expr,
     $fit:ident, $agrees:ident, $targets:ident $(, misses = $misses:literal)?) => {
        #[test]
        #[cfg_attr($missing, ignore = $needs)]
        fn $fit() {
            crate::checks::fit($config);
        }

        #[test]
        #[cfg_attr($missing, ignore = $needs)]
        fn $agrees() {
            crate::checks::sim_agrees($config);
        }

        #[test]
        #[cfg_attr($missing, ignore = $needs)]
        $(#[cfg_attr(not($missing), ignore = $misses)])?
        fn $targets() {
            crate::checks::fair_share_targets($config);
        }
    };
}

#[path = "../common/agreement.rs"]
#[allow(dead_code)] // one_at_a_time and sim_stats are the other binaries'
mod agreement;

mod checks;
mod harness;
mod headers;
mod measure;
mod runs;

mod express;
mod fastify;
mod flask_limiter;
mod haproxy;
mod nginx;

/// Every configuration of every limiter.
fn setups() -> Vec<measure::Setup> {
    [
        express::setups(),
        fastify::setups(),
        flask_limiter::setups(),
        haproxy::setups(),
        nginx::setups(),
    ]
    .into_iter()
    .flatten()
    .collect()
}
