//! Every bundled scenario passes its own `[expect]`: what each seed claims holds in the sim.

use std::path::Path;

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::read_scenario;

#[test]
fn every_bundled_scenario_meets_its_expectations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    let mut failures = Vec::new();
    for file in &files {
        let scenario = read_scenario(file, &[], 0).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !scenario.expect.is_empty(),
            "{}: a bundled scenario states what it expects",
            file.display()
        );
        let summary = summarize(&scenario);
        for v in summary.missed() {
            failures.push(format!(
                "{}: {} = {:?} outside {:?}",
                file.display(),
                v.metric,
                v.value,
                v.range
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
