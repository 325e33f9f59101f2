//! What `fair-share` does alone on a sliding window too short for its stated resets to tell
//! from a bucket (20 a second: both round up to one second), the own-count test. docs/fair-share-notes.md
//! ("The own-count test") rests on this.

use crate::common::bundled;
use throttle_sim::record::Metrics;

/// One process of `threads` threads of `fair-share` alone on a sliding window of 20 a second
/// (the matrix's sw_20ps) for 10 minutes, seed 42.
fn alone_on_twenty_a_second(threads: &str) -> Metrics {
    let threads = format!("clients.workers.threads={threads}");
    bundled(
        "heroku_5x5.toml",
        &[
            "server={kind=\"sliding-window\",limit=20,window=\"1s\",latency=\"20ms\"}",
            "clients.workers.processes=1",
            threads.as_str(),
            "clients.*.algorithm=fair-share",
            "run.duration=10m",
            "expect={}",
        ],
    )
    .metrics
}

/// Read as a bucket, the level a lone thread leaves on a sliding window (20 less what it sent
/// over the last second) says a crowd takes the rest, and the pull held the thread at half the
/// window: before the own-count test the utilization was 0.476 (the matrix's 1x1/sw_20ps, 10 seeds). The own-count test reads
/// `r + own = B` on every success and switches to sliding mode: 0.963 here (0.476).
#[test]
fn a_lone_thread_on_a_one_second_sliding_window_uses_it() {
    let m = alone_on_twenty_a_second("1");
    assert!(m.utilization > 0.95, "{m:?}");
    assert!(m.ratio_429 < 0.005, "{m:?}");
}

/// 200 threads in one process: the first second's burst leaves the window a second later, a
/// jump that the law could read as a fixed window's turnover and keep (the matrix's
/// 1x200/sw_20ps reached 0.727 on seed 48 that way). Here the utilization was 0.866 before the own-count test
/// and is 0.933 with it, with no 429s in the second half for either.
#[test]
fn a_lone_pool_on_a_one_second_sliding_window_uses_it_without_late_refusals() {
    let m = alone_on_twenty_a_second("200");
    assert!(m.utilization > 0.92, "{m:?}");
    assert!(m.ratio_429_late < 0.005, "{m:?}");
}
