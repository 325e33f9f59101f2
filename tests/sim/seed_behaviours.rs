//! What Toggl's dual buckets, Rebased's Redis interval lock, Keen's full-jitter retry and the
//! Discord job queue's fixed window (docs/sources.md; the tests `seed_000_…`, `seed_001_…`,
//! `seed_003_…` and `seed_004_…`, in that order) claim for their algorithms, checked beyond the
//! bundled scenarios' `[expect]`: the contrasts (one device versus several, a shared lock versus
//! one per caller) that show each claim is the algorithm's doing.

use throttle_sim::engine::sim::summarize;
use throttle_sim::scenario::{Override, Scenario, parse_scenario};

use crate::common::bundled;

fn inline(text: &str, seed: u64) -> Scenario {
    let seed: Override = format!("run.seed={seed}").parse().unwrap();
    parse_scenario(text, "inline.toml", "inline", &[seed], 1).unwrap()
}

/// One device alone against Toggl's 60 per minute.
const ONE_DEVICE: &str = r#"
[run]
duration = "30m"
peak_window = "60s"
[server]
limit = 60
period = "1m"
latency = "100ms"
[[clients]]
name = "device"
threads = 3
algorithm = "dual-bucket"
"#;

#[test]
fn seed_000_one_device_alone_never_meets_a_429_and_never_sends_60_in_a_minute() {
    for seed in 1..=4 {
        let pull = summarize(&inline(&format!("{ONE_DEVICE}workload = \"pull\""), seed));
        assert_eq!(pull.metrics.limited, 0, "seed {seed}");
        // Syncs of 9: six fit in a minute's 60 slots, the seventh waits for nine to free.
        assert_eq!(pull.metrics.peak_process_requests, Some(54), "seed {seed}");
        assert!(
            (0.85..0.9).contains(&pull.metrics.utilization),
            "{}",
            pull.metrics.utilization
        );
        let push_device = ONE_DEVICE.replace("threads = 3", "threads = 1");
        let push = summarize(&inline(&format!("{push_device}workload = \"push\""), seed));
        assert_eq!(push.metrics.limited, 0, "seed {seed}");
        assert_eq!(push.metrics.peak_process_requests, Some(60), "seed {seed}");
    }
}

#[test]
fn seed_000_the_seconds_bucket_never_lets_more_than_3_out_in_a_second() {
    let s = summarize(&inline(&ONE_DEVICE.replace("\"60s\"", "\"1s\""), 1));
    assert_eq!(s.metrics.peak_process_requests, Some(3));
}

#[test]
fn seed_000_devices_sharing_a_token_meet_429s_that_one_device_would_not() {
    let together = bundled("dual_bucket.toml", &[]);
    assert!(together.metrics.limited > 0);
    // Each device on its own token: the same traffic, no 429.
    let apart = bundled(
        "dual_bucket.toml",
        &["clients.phone.processes=1", "clients.tablet.key=\"tablet\""],
    );
    assert_eq!(apart.groups[1].metrics.limited, 0);
    assert_eq!(apart.groups[0].metrics.limited, 0);
}

#[test]
fn seed_001_a_lock_per_caller_brings_back_the_429s_the_shared_lock_prevents() {
    let shared = bundled("interval_lock.toml", &[]);
    assert_eq!(shared.metrics.limited, 0);
    assert_eq!(shared.metrics.peak_requests, Some(1));
    let per_caller = bundled(
        "interval_lock.toml",
        &[
            "clients.web.lock=\"web\"",
            "clients.jobs.lock=\"jobs\"",
            "clients.rake.lock=\"rake\"",
            "clients.cron.lock=\"cron\"",
        ],
    );
    assert!(
        per_caller.metrics.ratio_429 > 0.3,
        "{}",
        per_caller.metrics.ratio_429
    );
    assert!(per_caller.metrics.peak_requests >= Some(2));
}

#[test]
fn seed_001_crowded_callers_time_out_after_15_s_and_the_rest_still_keep_a_second_apart() {
    // 40 callers for one call a second: most cannot get a slot within 15 s.
    let s = bundled("interval_lock.toml", &["clients.web.threads=40"]);
    assert!(s.metrics.timed_out > 1000, "{}", s.metrics.timed_out);
    assert_eq!(s.metrics.peak_requests, Some(1));
    assert_eq!(s.metrics.limited, 0);
    // A call that went out waited at most the timeout, the lock's last second and an offset.
    assert!(
        s.metrics.wait_p99.unwrap() <= 16.05,
        "{:?}",
        s.metrics.wait_p99
    );
}

/// Two worker processes running jobs for one Discord server, 10 calls per 10 s.
const GUILD: &str = r#"
[run]
duration = "30m"
peak_window = "10s"
[server]
kind = "fixed-window"
limit = 10
window = "10s"
latency = "200ms"
[[clients]]
name = "guild"
processes = 2
threads = 8
algorithm = "window-queue"
"#;

#[test]
fn seed_004_workers_of_a_group_count_together_and_never_run_a_job_that_would_be_limited() {
    for seed in 1..=3 {
        let s = summarize(&inline(GUILD, seed));
        assert_eq!(s.metrics.limited, 0, "seed {seed}");
        // All 10 calls of each window, in time: the capacity of 180 windows, less the one
        // refilling at the very end.
        assert!(s.metrics.ok >= 1790, "seed {seed}: {}", s.metrics.ok);
        assert!(
            s.metrics.peak_requests <= Some(10),
            "{:?}",
            s.metrics.peak_requests
        );
    }
    // Counted per process instead of per group, the two processes send twice the reservoir.
    let apart = format!(
        "{}\n[[clients]]\nname = \"other-worker\"\nthreads = 8\nalgorithm = \"window-queue\"\n",
        GUILD.replace("processes = 2\n", "processes = 1\n")
    );
    let apart = summarize(&inline(&apart, 1));
    assert!(apart.metrics.ratio_429 > 0.3, "{}", apart.metrics.ratio_429);
}

#[test]
fn seed_003_counting_503s_like_429s_spares_the_server_during_an_outage() {
    for seed in 1..=4 {
        let set = format!("run.seed={seed}");
        let counted = bundled("backoff_503.toml", &[&set]);
        let ignored = bundled("backoff_503.toml", &[&set, "clients.sdk.count_503=false"]);
        assert!(
            counted.metrics.errors * 10 < ignored.metrics.errors,
            "seed {seed}: {} vs {}",
            counted.metrics.errors,
            ignored.metrics.errors
        );
        // The outage ends and a success clears the count: the clients are back to using the
        // minute budgets.
        assert!(counted.metrics.utilization > 0.9, "seed {seed}");
    }
}
