//! The live runs of each configuration, made once and shared by its three tests.
//!
//! A configuration gets two runs at once, each against its own instance of the limiter:
//!
//! - `fair-share`, `PROCESSES` × `THREADS` for `CLIENT_PERIODS` of its periods (told
//!   the quota where the answers state none);
//! - `fixed`, `FIT_THREADS` threads together `FIT_AHEAD` times faster than the binding
//!   rule for `FIT_PERIODS` periods, for `fit` to learn the rule from.
//!
//! The first test of a configuration to ask for them makes them; the other two wait for the
//! same runs ([`runs`]). The first test of the binary to ask for any also starts, in threads of
//! their own, the runs of every other configuration whose tests the command line selects (its
//! filters and `--skip`s, matched as the test harness matches them), so that the
//! configurations run at once, on their own ports, whatever the number of test threads:
//! each run is slow (about 10 requests a second) and the machine has room for all of them.
//! Nothing depends on that guess: a configuration not started ahead is started when asked for.
//!
//! A run that fails (a limiter that does not start, a client that exits non-zero) is kept as
//! its message, which each test that needs it reports.

use std::sync::{LazyLock, Once, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::agreement::caught;
use crate::harness::{self, Sent};
use crate::measure::{PROCESSES, Setup, THREADS};

/// The trace for `fit`: this many threads, together this much faster than the binding rule,
/// for this many periods, each thread's sleep stretched by a random 0 to `FIT_JITTER` of it.
const FIT_THREADS: usize = 2;
const FIT_AHEAD: f64 = 1.22;
const FIT_PERIODS: f64 = 4.0;
const FIT_JITTER: f64 = 0.2;

/// The fair-share run, as its tests read it.
pub struct Live {
    /// Its `requests.csv`.
    pub csv: String,
    pub rows: Vec<Sent>,
    /// The packages under test and their versions.
    pub versions: String,
}

/// The `fixed` run and what `fit` said of it.
pub struct Fitted {
    /// `fit --json`'s `fit` object.
    pub said: serde_json::Value,
    /// The trace's `requests.csv`.
    pub csv: String,
}

/// Both runs of a configuration, or why each failed.
pub struct Runs {
    pub live: Result<Live, String>,
    pub fitted: Result<Fitted, String>,
    /// The real time both took, in seconds.
    pub seconds: f64,
}

static SETUPS: LazyLock<Vec<Setup>> = LazyLock::new(crate::setups);
static RUNS: LazyLock<Vec<OnceLock<Runs>>> =
    LazyLock::new(|| SETUPS.iter().map(|_| OnceLock::new()).collect());
static AHEAD: Once = Once::new();

/// The configuration named `name`.
pub fn setup(name: &str) -> &'static Setup {
    &SETUPS[index(name)]
}

fn index(name: &str) -> usize {
    SETUPS
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no configuration is named {name}"))
}

/// The runs of the configuration named `name`: made now, or waited for if another test (or
/// the start ahead) is making them.
pub fn runs(name: &str) -> &'static Runs {
    AHEAD.call_once(start_ahead);
    let i = index(name);
    RUNS[i].get_or_init(|| make(&SETUPS[i]))
}

/// Start, each in a thread of its own, the runs of every configuration that runs here and
/// whose tests the command line selects.
fn start_ahead() {
    let selection = Selection::of(std::env::args().skip(1));
    for (i, s) in SETUPS.iter().enumerate() {
        let names = ["fit", "sim_agrees", "fair_share_targets"].map(|t| format!("{}{t}", s.tests));
        if s.available && names.iter().any(|n| selection.selects(n)) {
            std::thread::spawn(move || {
                RUNS[i].get_or_init(|| make(&SETUPS[i]));
            });
        }
    }
}

/// The test harness's filters and `--skip`s, from its command line.
#[derive(Debug, Default, PartialEq)]
struct Selection {
    filters: Vec<String>,
    skips: Vec<String>,
    exact: bool,
}

/// The harness's options that take a value as the next argument.
const TAKES_A_VALUE: [&str; 7] = [
    "--skip",
    "--test-threads",
    "--logfile",
    "--format",
    "--color",
    "--shuffle-seed",
    "-Z",
];

impl Selection {
    fn of(args: impl IntoIterator<Item = String>) -> Selection {
        let mut out = Selection::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "--exact" {
                out.exact = true;
            } else if let Some(skip) = arg.strip_prefix("--skip=") {
                out.skips.push(skip.into());
            } else if arg == "--skip" {
                out.skips.extend(args.next());
            } else if TAKES_A_VALUE.contains(&arg.as_str()) {
                args.next();
            } else if !arg.starts_with('-') {
                out.filters.push(arg);
            }
        }
        out
    }

    /// Whether the harness runs the test `name` (ignored or not).
    fn selects(&self, name: &str) -> bool {
        let matches = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skips.iter().any(matches)
    }
}

/// Both runs of `setup`, at once.
fn make(setup: &Setup) -> Runs {
    let began = Instant::now();
    let (live, fitted) = std::thread::scope(|s| {
        let live = s.spawn(|| caught(|| run_fair_share(setup)));
        let fitted = s.spawn(|| caught(|| record_and_fit(setup)));
        (live.join().expect("caught"), fitted.join().expect("caught"))
    });
    Runs {
        live,
        fitted,
        seconds: began.elapsed().as_secs_f64(),
    }
}

/// One more fair-share run of `setup`, on an instance of its own (for a test that wants a
/// second draw), or why it failed.
pub fn fair_share_again(setup: &Setup) -> Result<Live, String> {
    caught(|| run_fair_share(setup))
}

fn run_fair_share(setup: &Setup) -> Live {
    let limiter = (setup.start)();
    let tmp = tempfile::Builder::new()
        .prefix("throttle-sim-real-fair-share-")
        .tempdir()
        .expect("a temporary folder for the run");
    let out = tmp.path().join("fair-share");
    let mut args: Vec<String> = [
        "--algorithm",
        "fair-share",
        "--processes",
        &PROCESSES.to_string(),
        "--threads",
        &THREADS.to_string(),
    ]
    .map(String::from)
    .to_vec();
    if let Some((quota, period)) = setup.told {
        args.extend([
            "--quota".into(),
            quota.to_string(),
            "--period".into(),
            period.into(),
        ]);
    }
    if setup.on_grid {
        wait_for_the_grid(setup.period);
    }
    harness::client(&limiter.url(), setup.seconds(), &args, &out);
    let csv = harness::requests_csv(&out);
    Live {
        rows: harness::requests(&csv),
        csv,
        versions: limiter.versions().into(),
    }
}

/// Sleep until the epoch's next multiple of `period` seconds: the client starts a few
/// milliseconds after a window of the limiter's epoch-aligned grid opens, as the sim's clients
/// start at its t = 0, where its grid's first window opens.
fn wait_for_the_grid(period: f64) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let next = (now / period).ceil() * period;
    std::thread::sleep(Duration::from_secs_f64((next - now).max(0.0)));
}

/// `fixed` a little faster than the binding rule, then `fit` of its trace.
fn record_and_fit(setup: &Setup) -> Fitted {
    let limiter = (setup.start)();
    let tmp = tempfile::Builder::new()
        .prefix("throttle-sim-real-fixed-")
        .tempdir()
        .expect("a temporary folder for the run");
    let out = tmp.path().join("fixed");
    let (_, limit, period) = setup.binding().as_fitted();
    // Each thread waits its sleep, stretched by 0 to FIT_JITTER of it: on average by half that.
    let gap = FIT_THREADS as f64 * period / (FIT_AHEAD * limit);
    let sleep = gap / (1.0 + FIT_JITTER / 2.0);
    let args = [
        "--algorithm".to_string(),
        "fixed".into(),
        "--threads".into(),
        FIT_THREADS.to_string(),
        "--set".into(),
        format!("clients.*.sleep={:.0}ms", sleep * 1000.0),
        "--set".into(),
        format!("clients.*.jitter={FIT_JITTER}"),
    ];
    harness::client(&limiter.url(), FIT_PERIODS * setup.period, &args, &out);
    Fitted {
        said: harness::fit(&out),
        csv: harness::requests_csv(&out),
    }
}

#[test]
fn the_selection_reads_filters_skips_and_options_with_values() {
    let of = |args: &[&str]| Selection::of(args.iter().map(|a| a.to_string()));
    let s = of(&[
        "--test-threads",
        "2",
        "express::",
        "--skip",
        "draft_8",
        "--skip=targets",
        "--nocapture",
    ]);
    assert_eq!(
        s,
        Selection {
            filters: vec!["express::".into()],
            skips: vec!["draft_8".into(), "targets".into()],
            exact: false,
        }
    );
    assert!(s.selects("express::draft_6_fit"));
    assert!(!s.selects("express::draft_8_fit"));
    assert!(!s.selects("express::draft_6_fair_share_targets"));
    assert!(!s.selects("nginx::delay_fit"));
    assert!(of(&[]).selects("nginx::delay_fit"));
    let exact = of(&["--exact", "nginx::delay_fit"]);
    assert!(exact.selects("nginx::delay_fit") && !exact.selects("nginx::delay_fit_x"));
}
