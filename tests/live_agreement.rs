//! The sim is only worth trusting if the same algorithms behave the same against a real server
//! over real sockets. One scenario, 2 processes × 3 threads of the Heroku GCRA demo client for ten
//! minutes of its time, runs live at 30× (20 s of wall time) and must land within a stated
//! tolerance of the sim's average over many seeds: a live run is one more draw of the timing
//! noise the seeds stand for.

#![cfg(unix)]

#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::agreement::{beside_other_light_runs, one_at_a_time, sim_stats, spread};

/// Runs one live case, and once more if it disagrees: a live run is one draw of the machine's
/// timing, and on a shared 2-core machine a stall of a second or two (another process, the
/// disk) can cost a run at 60× a fifth of its requests, once in some dozens of suite runs. A
/// real disagreement (a lost answer, a clock off by the scale) disagrees every time, so it
/// still fails; both lines are printed. Returns the second disagreement, if there is one.
fn retried(mut case: impl FnMut() -> Option<String>) -> Option<String> {
    let first = case()?;
    eprintln!("disagreed once, running it again: {first}");
    case().map(|second| format!("{second} (and before it: {first})"))
}

const SCENARIO: &str = r#"
name = "agreement"
[run]
duration = "10m"
seed = 7
time_scale = 30.0
sample_every = "10s"
[server]
kind = "gcra"
limit = 600
period = "10m"
initial = 100
latency = "20ms"
[[clients]]
name = "workers"
processes = 2
threads = 3
algorithm = "schneems"
initial_sleep = "2s"
max_limit = 600
"#;

/// Absolute tolerances. Across 20 sim seeds ratio_429 averages 0.063 (0.054–0.074) and
/// utilization 0.992 (0.959–0.999). Eight live runs measured ratio_429 0.058–0.084 (mean
/// 0.070, standard deviation about 0.010: real timing adds its own noise) and utilization
/// 0.953–0.999. The tolerances sit about three standard deviations out, so a run fails for a
/// real disagreement (a lost answer, a clock off by the scale), not for bad luck.
const RATIO_429_TOLERANCE: f64 = 0.04;
const UTILIZATION_TOLERANCE: f64 = 0.06;

#[test]
fn live_ratio_429_and_utilization_agree_with_the_sim() {
    let _turn = one_at_a_time();
    let (ratio, util) = sim_means(SCENARIO, &[], 20);

    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("agreement.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let (live, wall) = run_live(&file, &[], &tmp.path().join("live"));
    let live_ratio = live["ratio_429"].as_f64().unwrap();
    let live_util = live["utilization"].as_f64().unwrap();
    eprintln!(
        "agreement: ratio_429 sim {ratio:.4} live {live_ratio:.4} (gap {:+.4}); utilization sim {util:.4} live {live_util:.4} (gap {:+.4}); live wall {:.1} s",
        live_ratio - ratio,
        live_util - util,
        wall.as_secs_f64()
    );
    assert!(
        (live_ratio - ratio).abs() <= RATIO_429_TOLERANCE,
        "ratio_429: live {live_ratio} vs sim {ratio}"
    );
    assert!(
        (live_util - util).abs() <= UTILIZATION_TOLERANCE,
        "utilization: live {live_util} vs sim {util}"
    );
    // The sanity of the comparison itself: the scenario does meet its limit.
    assert!(ratio > 0.01 && util > 0.9, "sim {ratio} {util}");
}

/// Run `file` live with `sets`, waiting at most 90 s of wall time; its summary.json and the
/// wall time it took.
fn run_live(file: &Path, sets: &[&str], out: &Path) -> (serde_json::Value, Duration) {
    let started = Instant::now();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("throttle-sim"));
    cmd.arg("run")
        .arg(file)
        .args(["--mode", "live", "--quiet", "--out"])
        .arg(out);
    for set in sets {
        cmd.args(["--set", set]);
    }
    // What the run says on stderr (the time-scale warning it is expected to give at 300×)
    // is kept in a file beside its folder, shown only if it fails, not on cargo test's screen.
    let said = out.with_extension("stderr");
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("the live run did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.success(),
        "{status}: {}",
        std::fs::read_to_string(&said).unwrap_or_default()
    );
    let summary =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (summary, started.elapsed())
}

/// The sim's mean ratio_429 and utilization over seeds `0..seeds` of `text` with `sets`.
fn sim_means(text: &str, sets: &[&str], seeds: u64) -> (f64, f64) {
    let s = sim_stats(text, sets, seeds);
    (s[0].0, s[1].0)
}

/// The second tier: the longer live runs, each minutes of real time, that hold fair-share and
/// every time scale to the sim. `.ci/run` runs them; `cargo test` leaves them out, with the
/// command that runs them.
mod tier2 {
    use super::*;

    /// fair-share, the algorithm this project recommends, must behave live as it does in the sim:
    /// heroku_5x5 (5 processes × 5 threads on 4500/h) switched to fair-share, 40 minutes
    /// of its time at 60× (40 s of wall time), within 0.5 percentage points of 429s and 0.03 of
    /// utilization of the sim's mean over 10 seeds (the gauntlet's tolerance). fair-share steers by
    /// rate, not by the exact instant of each answer, so the millisecond rounding of real timers at
    /// 60× (1 ms real = 60 ms virtual) moves it little; the sim draws no 429 on any seed. It runs
    /// beside the API shapes' fair-share runs below (about 75 requests a second here).
    #[test]
    #[ignore = "tier 2, a long real-time check (about 45 s): cargo test -- --ignored tier2::"]
    fn fair_share_live_at_60x_agrees_with_the_sim() {
        let _turn = beside_other_light_runs();
        let sets = [
            "clients.*.algorithm=fair-share",
            "run.duration=40m",
            "run.time_scale=60",
        ];
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/heroku_5x5.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let (ratio, util) = sim_means(&text, &sets, 10);
        let tmp = tempfile::tempdir().unwrap();
        let (live, wall) = run_live(&path, &sets, &tmp.path().join("live"));
        let live_ratio = live["ratio_429"].as_f64().unwrap();
        let live_util = live["utilization"].as_f64().unwrap();
        eprintln!(
            "fair-share agreement: ratio_429 sim {ratio:.4} live {live_ratio:.4}; utilization sim {util:.4} live {live_util:.4}; live wall {:.1} s",
            wall.as_secs_f64()
        );
        assert!(
            (live_ratio - ratio).abs() <= 0.005,
            "ratio_429: live {live_ratio} vs sim {ratio}"
        );
        assert!(
            (live_util - util).abs() <= 0.03,
            "utilization: live {live_util} vs sim {util}"
        );
        // The comparison means something: the sim itself is near the targets of the gauntlet.
        assert!(ratio <= 0.001 && util >= 0.97, "sim {ratio} {util}");
    }

    /// Live agrees with the sim at any time scale: `single_client` and
    /// `heroku_5x5`, each at time_scale 1, 10, 60 and 300 for a few seconds to 12 s of wall time
    /// (durations below), against the sim's mean over 20 seeds of the same run. Tolerances: the
    /// required 0.03 of utilization and 0.5 points of 429s, and the request count within 5 %,
    /// widened where the spread says so: before the precise timer, single_client at 60× sent 12 %
    /// fewer requests than the sim and used 0.89 of the capacity.
    ///
    /// The spread: a live run is one more draw of the noise the seeds stand for, plus real timing's
    /// own (which order 25 simultaneous requests reach the server in). On heroku_5x5 at 10× for 2
    /// minutes 10 live runs gave 25.2–28.9 % of 429s (standard deviation 1.3 points) where 20 sim
    /// seeds give 26.0 % with a deviation of 0.73. So a live run is held to three times the
    /// combined deviation, live's taken as [`common::agreement::LIVE_NOISE`] times the sim's. Three of the sim's
    /// deviations alone, over 8 cases × 3 metrics, failed a CI run on luck (28.4 % against
    /// 26.0 ± 2.2).
    ///
    /// At 300× the scenarios' 20 ms of latency is 67 µs of real time, shorter than a loopback HTTP
    /// exchange takes on a busy 2-core machine (116 µs at the median in a release build, 170-230
    /// µs in the debug build the tests run): the run must say so (`timing_warning`), and is then
    /// held to the utilization only. Its 429 ratio and request count are printed: heroku_5x5
    /// agrees anyway (its waits are long), single_client, hovering at the limit, does not
    /// (docs/live-timing.md has the numbers). A case that disagrees is run live once more
    /// ([`retried`]): single_client at 60× once sent 4,270 requests where the sim sends 5,263, and
    /// agreed on the next run.
    #[test]
    #[ignore = "tier 2, a long real-time check (about 80 s): cargo test -- --ignored tier2::"]
    fn live_agrees_with_the_sim_at_every_time_scale() {
        let _turn = one_at_a_time();
        // (scenario, time_scale, duration, one more setting): at most 12 s of wall time each,
        // ~75 s in all. At 300× single_client starts with an empty bucket, where it waits about
        // 0.8 s (2.7 ms real) at the limit, rather than draining a full one 80 ms (267 µs real)
        // apart.
        let cases = [
            ("single_client", 1, "10s", ""),
            ("heroku_5x5", 1, "10s", ""),
            ("single_client", 10, "2m", ""),
            ("heroku_5x5", 10, "2m", ""),
            ("single_client", 60, "10m", ""),
            ("heroku_5x5", 60, "10m", ""),
            ("single_client", 300, "30m", "server.initial=0"),
            ("heroku_5x5", 300, "1h", ""),
        ];
        let mut failures = Vec::new();
        for (name, scale, duration, more) in cases {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.toml"));
            let text = std::fs::read_to_string(&path).unwrap();
            let scale_set = format!("run.time_scale={scale}");
            let duration_set = format!("run.duration={duration}");
            // The scenarios' own ranges are for 5 hours, not these short runs.
            let mut sets = vec![scale_set.as_str(), duration_set.as_str(), "expect={}"];
            if !more.is_empty() {
                sets.push(more);
            }
            let [
                (ratio, ratio_sd),
                (util, util_sd),
                (requests, requests_sd),
                _,
            ] = sim_stats(&text, &sets, 20);
            let ratio_tol = spread(ratio_sd).max(0.005);
            let util_tol = spread(util_sd).max(0.03);
            let requests_tol = spread(requests_sd).max(0.05 * requests);
            let disagreement = retried(|| {
                let tmp = tempfile::tempdir().unwrap();
                let (live, wall) = run_live(&path, &sets, &tmp.path().join("live"));
                let live_ratio = live["ratio_429"].as_f64().unwrap();
                let live_util = live["utilization"].as_f64().unwrap();
                let live_requests = live["requests"].as_f64().unwrap();
                let line = format!(
                    "{name} at {scale}x for {duration} {more} ({:.1} s): ratio_429 live {:.2}% sim {:.2}% (tol {:.2}); utilization live {live_util:.4} sim {util:.4} (tol {util_tol:.3}); requests live {live_requests} sim {requests:.0} (tol {requests_tol:.0}){}",
                    wall.as_secs_f64(),
                    live_ratio * 100.0,
                    ratio * 100.0,
                    ratio_tol * 100.0,
                    live.get("timing_warning")
                        .map_or(String::new(), |w| format!("; warned: {w}"))
                );
                eprintln!("{line}");
                // 20 ms of latency is 67 µs of real time at 300×: below what the machine resolves,
                // which the run says before it starts and records; at 60× (333 µs) it does not.
                assert_eq!(
                    live.get("timing_warning").is_some(),
                    scale >= 300,
                    "{name} at {scale}x: timing_warning {:?}",
                    live.get("timing_warning")
                );
                let warned = live.get("timing_warning").is_some();
                let disagrees = (live_util - util).abs() > util_tol
                    || !warned
                        && ((live_ratio - ratio).abs() > ratio_tol
                            || (live_requests - requests).abs() > requests_tol);
                disagrees.then_some(line)
            });
            failures.extend(disagreement);
        }
        assert!(
            failures.is_empty(),
            "disagreements:\n{}",
            failures.join("\n")
        );
    }

    /// fair-share beyond Heroku's hourly bucket, live: three cells of the API-shape matrix
    /// (`scenarios/gauntlet/api_shapes.toml`), five per second in real time, an hourly fixed
    /// window and a per-minute bucket at 60×, each against the sim's mean over 10 seeds of the same cell and length. Held to
    /// the tolerances above: 0.5 points of 429s, 0.03 of utilization and of fairness, widened by
    /// [`spread`] where the sim's own seeds vary more, and a case that disagrees run once more
    /// ([`retried`]).
    #[test]
    #[ignore = "tier 2, a long real-time check (about 65 s): cargo test -- --ignored tier2::"]
    fn fair_share_live_agrees_with_the_sim_on_per_second_per_minute_and_hourly_apis() {
        let _turn = beside_other_light_runs();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/gauntlet/api_shapes.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        // (cell, time scale, duration): 60 s of wall time each. The per-second API runs in real
        // time: a server at a time scale writes its policy and reset in whole real seconds, ten of
        // a per-second API's periods at 10x (there one live run used 0.75 of the capacity where
        // the sim used 0.998). One thread, whose sim ranges 0.970-0.984 over ten seeds in a minute.
        // A per-minute bucket at 60x: the server's whole real second is a whole minute of the
        // clients' time, so a bucket's reset (under a real second) says a whole period, as a
        // sliding window's does. Read to the client's second it was taken for one: 9.7 % 429s live
        // where the sim draws 0.07 %; the law now reads resets at the server's resolution
        // (`reset_resolution`, the time scale's seconds).
        let cases = [
            ("1x1/gcra_5ps", 1, "60s"),
            ("2x4/fw_5000ph", 60, "1h"),
            ("2x4/gcra_100pm", 60, "20m"),
        ];
        // The sim's seeds, which keep a core busy, all run before any live run starts; then the
        // three run at once, each in its own thread with its own server: about a hundred requests
        // a second between them, which share the two cores without measuring each other (the
        // cases in turn took 190 s).
        let expected = cases.map(|(cell, scale, duration)| {
            let sets = [
                format!("cell={cell}"),
                format!("run.time_scale={scale}"),
                format!("run.duration={duration}"),
                "run.sample_every=5s".to_string(),
                "expect={}".to_string(),
            ];
            let stats = sim_stats(&text, &sets.each_ref().map(String::as_str), 10);
            let [_, (util, _), _, (fair, _)] = stats;
            // The comparison means something: in the sim, fair-share uses this API well.
            assert!(util >= 0.9 && fair >= 0.9, "{cell}: sim {util} {fair}");
            ((cell, scale, duration), sets, stats)
        });
        let check = |((cell, scale, duration), sets, stats): &(_, [String; 5], _)| {
            let sets = sets.each_ref().map(String::as_str);
            let [(ratio, ratio_sd), (util, util_sd), _, (fair, fair_sd)]: [(f64, f64); 4] = *stats;
            let (ratio_tol, util_tol) = (spread(ratio_sd).max(0.005), spread(util_sd).max(0.03));
            let fair_tol = spread(fair_sd).max(0.03);
            retried(|| {
                let tmp = tempfile::tempdir().unwrap();
                let (live, wall) = run_live(&path, &sets, &tmp.path().join("live"));
                let live_ratio = live["ratio_429"].as_f64().unwrap();
                let live_util = live["utilization"].as_f64().unwrap();
                let live_fair = live["fairness"].as_f64().unwrap();
                let line = format!(
                    "{cell} at {scale}x for {duration} ({:.1} s): ratio_429 live {:.2}% sim {:.2}% (tol {:.2}); utilization live {live_util:.4} sim {util:.4} (tol {util_tol:.3}); fairness live {live_fair:.4} sim {fair:.4} (tol {fair_tol:.3})",
                    wall.as_secs_f64(),
                    live_ratio * 100.0,
                    ratio * 100.0,
                    ratio_tol * 100.0,
                );
                eprintln!("{line}");
                let disagrees = (live_ratio - ratio).abs() > ratio_tol
                    || (live_util - util).abs() > util_tol
                    || (live_fair - fair).abs() > fair_tol;
                disagrees.then_some(line)
            })
        };
        let failures: Vec<String> = std::thread::scope(|s| {
            let running = expected.each_ref().map(|case| s.spawn(move || check(case)));
            running
                .into_iter()
                .filter_map(|run| run.join().expect("a case panicked"))
                .collect()
        });
        assert!(
            failures.is_empty(),
            "disagreements:\n{}",
            failures.join("\n")
        );
    }
}
