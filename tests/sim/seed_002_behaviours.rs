//! The behaviours the Heroku GCRA demo client (docs/sources.md) wanted to test but could not
//! ("without the ability to simulate running through an entire day in a few seconds, I don't know
//! how we could do that"), each asserted as a number on the bundled scenarios, over fixed seeds so
//! the result is exact.

use std::path::Path;

use throttle_sim::engine::sim::summarize;
use throttle_sim::record::Summary;
use throttle_sim::scenario::{Override, Scenario, read_scenario};

const SEEDS: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

fn scenario(file: &str, sets: &[String]) -> Scenario {
    let overrides: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(file);
    read_scenario(&path, &overrides, 0).unwrap()
}

fn run(file: &str, seed: u64, extra: &[&str]) -> Summary {
    let mut sets = vec![format!("run.seed={seed}")];
    sets.extend(extra.iter().map(|s| s.to_string()));
    summarize(&scenario(file, &sets))
}

fn process<'a>(s: &'a Summary, group: &str) -> &'a throttle_sim::record::ProcessSummary {
    s.processes.iter().find(|p| p.group == group).unwrap()
}

#[test]
fn one_client_consumes_the_available_requests() {
    for seed in SEEDS {
        let s = run("single_client.toml", seed, &[]);
        assert!(
            s.metrics.utilization >= 0.9,
            "seed {seed}: utilization {}",
            s.metrics.utilization
        );
        // It got there by coming down from its 1.6 s start: 4500/h is one request per 0.8 s.
        assert!(process(&s, "solo").final_sleep < 1.0, "seed {seed}");
    }
}

#[test]
fn in_fast_slow_the_slow_process_comes_down() {
    let mut below_start = 0;
    let (mut with_tf, mut without_tf) = (Vec::new(), Vec::new());
    for seed in SEEDS {
        let s = run("fast_slow.toml", seed, &[]);
        let slow = process(&s, "slow").final_sleep;
        if slow < 20.0 {
            below_start += 1;
        }
        with_tf.push(slow);
        let s = run("fast_slow.toml", seed, &["clients.*.time_factor=false"]);
        without_tf.push(process(&s, "slow").final_sleep);
    }
    assert!(
        below_start >= 6,
        "slow below its 20 s start in only {below_start} of 8 seeds: {with_tf:?}"
    );
    // And it is the time factor that brings it down: without it the slow one stays high.
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[3] + v[4]) / 2.0
    };
    let (a, b) = (median(&mut with_tf), median(&mut without_tf));
    assert!(
        a * 5.0 < b,
        "median final slow sleep {a:.1} s with the time factor, {b:.1} s without"
    );
}

#[test]
fn the_time_factor_makes_flappy_clients_less_flappy() {
    for file in ["fast_slow.toml", "heroku_5x5.toml"] {
        for seed in SEEDS {
            let doublings = |s: &Summary| s.processes.iter().map(|p| p.backoffs).sum::<u64>();
            let with = doublings(&run(file, seed, &[]));
            let without = doublings(&run(file, seed, &["clients.*.time_factor=false"]));
            assert!(
                with < without,
                "{file} seed {seed}: {with} doublings with the time factor, {without} without"
            );
        }
    }
}

#[test]
fn when_both_hit_the_limit_the_fast_one_doubles_more_often() {
    let (mut fast_total, mut slow_total, mut fast_more) = (0, 0, 0);
    for seed in SEEDS {
        let s = run("fast_slow.toml", seed, &[]);
        let (fast, slow) = (process(&s, "fast").backoffs, process(&s, "slow").backoffs);
        fast_total += fast;
        slow_total += slow;
        if fast > slow {
            fast_more += 1;
        }
    }
    assert!(
        fast_more >= 7,
        "fast doubled more in only {fast_more} of 8 seeds"
    );
    assert!(
        fast_total as f64 > 1.3 * slow_total as f64,
        "fast {fast_total}, slow {slow_total}"
    );
}

/// The demo reports 429s at 2-3 % of requests for 5 × 5 threads. The simulator, with the
/// demo's parameters, gives 3.3-4.1 % over these seeds; without the time factor it gives
/// 4.5-5.5 %. The band admits the demo's own number and ours, and refuses the untuned client.
#[test]
fn heroku_5x5_keeps_429s_in_the_seeds_band() {
    let ratios: Vec<f64> = SEEDS
        .iter()
        .map(|&seed| run("heroku_5x5.toml", seed, &[]).metrics.ratio_429)
        .collect();
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    assert!(
        (0.02..=0.045).contains(&mean),
        "mean 429 ratio {mean:.4}: {ratios:?}"
    );
    for r in &ratios {
        assert!(
            (0.015..=0.05).contains(r),
            "429 ratio {r:.4} out of band: {ratios:?}"
        );
    }
}

#[test]
fn joining_and_leaving_groups_only_count_while_present() {
    let s = run("scale_out.toml", 1, &[]);
    let g = |name: &str| s.groups.iter().find(|g| g.name == name).unwrap();
    assert!(g("burst").metrics.requests > 0 && g("added").metrics.requests > 0);
    // The burst group ran 2 h of 5, the added one 4 h: rate-limited, the shares follow.
    assert!(g("burst").metrics.ok < g("added").metrics.ok);
    let total: u64 = s.groups.iter().map(|g| g.metrics.ok).sum();
    assert_eq!(total, s.metrics.ok);
    assert!(s.metrics.utilization > 0.9);
}
