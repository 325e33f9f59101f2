//! `compare` shows and ranks on what matters for the scenario: the write calls and the time to
//! clear on the AWS post's contended row, where "no backoff" is done soonest but does twice
//! the work, and the scenario's own `[compare] metrics` on Keen's per-query failure window.

use crate::common;

use std::process::Command;

use common::{exe, json};

/// `compare SCENARIO` over `seeds` seeds: compare.json.
fn compare(scenario: &str, seeds: &str) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let path = format!("{}/scenarios/{scenario}", env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(exe())
        .args(["compare", &path, "--quiet", "--seeds", seeds, "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    json(&out.join("compare.json"))
}

fn ranking(c: &serde_json::Value) -> Vec<String> {
    c["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn variant<'a>(c: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    c["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap()
}

#[test]
fn occ_is_ranked_on_calls_and_time_to_clear_and_no_backoff_is_not_first() {
    let c = compare("occ_contention.toml", "10");
    assert_eq!(
        c["columns"],
        serde_json::json!(["requests", "time_to_clear"])
    );
    let rank = ranking(&c);
    // No backoff finishes first but with twice the calls of full jitter, which does the
    // least work: full jitter ranks first, exponential without jitter last.
    assert_eq!(rank[0], "full-jitter", "{rank:?}");
    assert_eq!(rank.last().unwrap(), "exponential", "{rank:?}");
    assert_ne!(rank[0], "base");
    let base = variant(&c, "base");
    assert!(
        base["best"]
            .as_array()
            .unwrap()
            .contains(&"time_to_clear".into())
    );
    // Utilization does not apply to the row: null, not 0.
    assert!(base["metrics"]["utilization"]["mean"].is_null(), "{base}");
}

#[test]
fn failure_window_is_ranked_on_its_own_metrics_with_backoff_first() {
    let c = compare("failure_window.toml", "3");
    assert_eq!(
        c["columns"],
        serde_json::json!(["ratio_429", "utilization", "timed_out"])
    );
    let rank = ranking(&c);
    assert_eq!(rank[0], "backoff", "{rank:?}");
    let best = variant(&c, "backoff")["best"].as_array().unwrap().len();
    assert_eq!(best, 3);
}
