//! The oracle is the bound on the gauntlet's server rules: no 429s and the whole
//! capacity on window rules, and a full bucket's burst shared equally among many threads.

use throttle_sim::record::Summary;

use crate::common::bundled;

fn oracle_on(scenario: &str, sets: &[&str]) -> Summary {
    bundled(scenario, &[&["clients.*.algorithm=oracle"], sets].concat())
}

#[test]
fn on_window_rules_it_draws_no_429_and_uses_every_window() {
    for kind in ["fixed-window", "sliding-window"] {
        for scenario in ["heroku_5x5.toml", "scale_out.toml"] {
            let s = oracle_on(scenario, &[&format!("server.kind={kind}")]);
            let m = &s.metrics;
            assert_eq!(m.limited, 0, "{kind} {scenario}: {m:?}");
            assert!(m.utilization > 0.9999, "{kind} {scenario}: {m:?}");
            assert!(
                m.fairness_windowed.unwrap() > 0.999,
                "{kind} {scenario}: {m:?}"
            );
        }
    }
}

#[test]
fn a_full_bucket_is_shared_equally_among_a_thousand_threads() {
    let s = oracle_on(
        "heroku_5x5.toml",
        &["server.initial=4500", "clients.workers.processes=200"],
    );
    let m = &s.metrics;
    assert_eq!(m.limited, 0, "{m:?}");
    assert!(m.utilization > 0.9999, "{m:?}");
    // Every thread gets 27 of the 27,000 2xx (4,500 at once, 22,500 over 5 h).
    assert!(m.fairness > 0.9999, "{m:?}");
    let oks: Vec<u64> = s.processes.iter().map(|p| p.ok).collect();
    // (The last slot falls on the end of the run itself, when nothing is sent any more.)
    assert!(
        oks.iter().all(|&ok| ok == 135 || ok == 134),
        "per process (5 threads): {oks:?}"
    );
}

#[test]
fn from_an_empty_bucket_and_under_churn_it_stays_clean() {
    for sets in [&["server.initial=0"][..], &["server.kind=token-bucket"][..]] {
        let s = oracle_on("scale_out.toml", sets);
        let m = &s.metrics;
        assert_eq!(m.limited, 0, "{sets:?}: {m:?}");
        assert!(m.utilization > 0.999, "{sets:?}: {m:?}");
        assert!(m.fairness_windowed.unwrap() > 0.999, "{sets:?}: {m:?}");
    }
}

#[test]
fn through_an_outage_and_random_errors_it_still_takes_every_token() {
    let s = oracle_on(
        "heroku_5x5.toml",
        &[
            "server.outages=[[\"2h\", \"2h10m\"]]",
            "server.error_rate=0.01",
        ],
    );
    let m = &s.metrics;
    assert_eq!(m.limited, 0, "{m:?}");
    assert!(m.errors > 0, "{m:?}");
    assert!(m.utilization > 0.999, "{m:?}");
}
