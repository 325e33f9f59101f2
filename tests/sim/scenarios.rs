//! Every bundled scenario passes its own `[expect]`: what each source system claims
//! (docs/sources.md) holds in the sim.
//! One test per file, named after it, so a failure names its scenario; a last test checks
//! that no file in scenarios/ goes untested.

use std::path::Path;

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::read_scenario;

fn meets_its_expectations(file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(file);
    let scenario = read_scenario(&path, &[], 0).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !scenario.expect.is_empty(),
        "{file}: a bundled scenario states what it expects"
    );
    let summary = summarize(&scenario);
    let missed: Vec<_> = summary
        .missed()
        .map(|v| format!("{} = {:?} outside {:?}", v.metric, v.value, v.range))
        .collect();
    assert!(missed.is_empty(), "{file}: {missed:#?}");
}

macro_rules! bundled {
    ($($name:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                meets_its_expectations(concat!(stringify!($name), ".toml"));
            }
        )+

        const TESTED: &[&str] = &[$(concat!(stringify!($name), ".toml")),+];
    };
}

bundled! {
    backoff_503,
    dialects,
    discord_groups,
    dual_bucket,
    failure_window,
    fast_slow,
    flask_limiter_stacked,
    heroku_5x5,
    heroku_5x5_demo_server,
    interval_lock,
    nginx_limit_req,
    occ_contention,
    outage,
    scale_out,
    shared_redis,
    single_client,
    sliding_window_counter,
}

#[test]
fn every_bundled_scenario_has_its_test() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".toml"))
        .collect();
    files.sort();
    assert_eq!(
        files, TESTED,
        "add a line to `bundled!` for each scenario file"
    );
}
