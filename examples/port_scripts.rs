//! Writes the event scripts of `ports/scripts/`: one process of the `fair-share` library
//! (`crates/fair-share/`) runs in a closed loop against a real rule of the simulator, whose
//! answers carry the exact header text the live server writes in the chosen dialect, while
//! other clients (not in the script) take tokens too; every `wait` the process asked and every
//! answer it read is written down. Replayed through the library (`cargo run -p fair-share
//! --example replay`) or any port, a script must give the same waits: that is how
//! `tests/port_scripts.rs` catches a port drifting from the law. Each script also carries the waits the
//! law gave (`waits`: integer nanoseconds, one per `wait` event, in the events' order, as
//! `replay` prints them), so a port can check itself without the crate;
//! `tests/port_scripts.rs` checks that the scripts on disk are what this example writes now.
//!
//!     cargo run --example port_scripts -- ports/scripts

use std::time::{Duration, SystemTime};

use fair_share::{Answer, Cycle, FairShare, Params};
use hyper::HeaderMap;
use serde_json::{Value, json};
use throttle_sim::engine::live::headers::{PolicyHeaders, Waits, write_decision};
use throttle_sim::exchange::Status;
use throttle_sim::limiter::{Decision, Headers};
use throttle_sim::rng::{Stream, stream};
use throttle_sim::scenario::parse_scenario;

/// One script: a server, a dialect, a process, and how long.
struct Shape {
    name: &'static str,
    server: &'static str,
    dialect: Headers,
    threads: usize,
    /// The law's parameters the script sets (by name; durations in seconds).
    params: &'static [(&'static str, f64)],
    /// Other clients' requests, one every this many seconds (0: none).
    others_every: f64,
    /// Others' requests sent together, and when (seconds): on a sliding window they leave it
    /// together a period later.
    others_burst: (u64, f64),
    minutes: u64,
    /// Latencies of 0.5-1.5 s whose two legs differ (see `latency`).
    skewed: bool,
    /// The draws, gone round in order (none: every draw is [`RANDOM`]).
    draws: &'static [f64],
}

/// What a script leaves as it is: no parameters, no other clients, latencies of 5-101 ms.
const PLAIN: Shape = Shape {
    name: "",
    server: "",
    dialect: Headers::Full,
    threads: 1,
    params: &[],
    others_every: 0.0,
    others_burst: (0, 0.0),
    minutes: 1,
    skewed: false,
    draws: &[],
};

/// Others alone take more than the refill: the bucket, which holds a crowd's swing, runs dry
/// again and again after the process has read it, and each refusal cuts the process of eight
/// threads by 2^(-1/8), an eighth of a halving.
const CROWD_REFUSALS: Shape = Shape {
    name: "gcra_crowd_refusals",
    server: "kind = \"gcra\"\nlimit = 600\nperiod = \"10m\"\ninitial = 100",
    dialect: Headers::Full,
    threads: 8,
    others_every: 0.8,
    minutes: 10,
    ..PLAIN
};

const SHAPES: &[Shape] = &[
    Shape {
        name: "gcra_full",
        server: "kind = \"gcra\"\nlimit = 300\nperiod = \"1m\"\noutages = [[\"1m30s\", \"1m40s\"]]",
        dialect: Headers::Full,
        threads: 3,
        others_every: 0.5,
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "gcra_heroku",
        server: "kind = \"gcra\"\nlimit = 4500\nperiod = \"1h\"\ninitial = 600",
        dialect: Headers::Heroku,
        threads: 4,
        params: &[("quota", 4500.0), ("period", 3600.0)],
        others_every: 1.5,
        minutes: 8,
        ..PLAIN
    },
    Shape {
        name: "fixed_window_github",
        server: "kind = \"fixed-window\"\nlimit = 100\nwindow = \"1m\"",
        dialect: Headers::Github,
        threads: 2,
        others_every: 0.7,
        minutes: 15,
        ..PLAIN
    },
    Shape {
        name: "sliding_window_ietf",
        server: "kind = \"sliding-window\"\nlimit = 30\nwindow = \"1m\"",
        dialect: Headers::Ietf,
        threads: 2,
        minutes: 10,
        ..PLAIN
    },
    Shape {
        name: "token_bucket_none",
        server: "kind = \"token-bucket\"\nrate = 1\nperiod = \"1s\"\nburst = 20\nerror_rate = 0.02",
        dialect: Headers::None,
        threads: 2,
        params: &[("quota", 1.0), ("period", 1.0), ("jitter", 0.0)],
        others_every: 3.0,
        minutes: 5,
        ..PLAIN
    },
    // nginx's limit_req (5 r/s, a burst of 10, nodelay) sends no count: the law blind to it,
    // refused often at first beside another client taking four fifths of the rate.
    Shape {
        name: "leaky_bucket_none",
        server: "kind = \"leaky-bucket\"\nrate = \"5r/s\"\nburst = 10\ndelay = \"nodelay\"",
        dialect: Headers::None,
        threads: 4,
        params: &[("quota", 5.0), ("period", 1.0)],
        others_every: 0.25,
        minutes: 3,
        ..PLAIN
    },
    // HAProxy's request rate (a sliding-window counter from the first request, refused
    // requests counted) sends no count: beside another client, the law's runs of refusals hold
    // the process while the key is blocked.
    Shape {
        name: "sliding_window_counter_none_refused_counted",
        server: "kind = \"sliding-window-counter\"\nlimit = 50\nwindow = \"5s\"\nstart = \"first-request\"\nrefused = \"counted\"",
        dialect: Headers::None,
        threads: 4,
        params: &[("quota", 50.0), ("period", 5.0)],
        others_every: 0.12,
        minutes: 2,
        ..PLAIN
    },
    Shape {
        name: "fixed_window_github_coarse",
        server: "kind = \"fixed-window\"\nlimit = 100\nwindow = \"1m\"",
        dialect: Headers::Github,
        threads: 3,
        // The stated resets read as if each of the server's seconds were 3 of the client's (a
        // time-scaled server): the window ends agree within 3 s, steady over 6 s.
        params: &[("reset_resolution", 3.0)],
        others_every: 1.0,
        minutes: 10,
        ..PLAIN
    },
    Shape {
        name: "fixed_window_full",
        server: "kind = \"fixed-window\"\nlimit = 100\nwindow = \"1m\"",
        dialect: Headers::Full,
        threads: 3,
        // The policy is stated: the window's end, stated alike while the count falls, places
        // its reset before any turnover (`read_fixed_end`).
        others_every: 0.7,
        minutes: 8,
        ..PLAIN
    },
    Shape {
        name: "gcra_github",
        server: "kind = \"gcra\"\nlimit = 5\nperiod = \"1s\"",
        dialect: Headers::Github,
        threads: 3,
        // No policy: the refill is learned from the stated resets (`learn_refill`).
        others_every: 0.5,
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "sliding_window_github",
        server: "kind = \"sliding-window\"\nlimit = 30\nwindow = \"1m\"",
        dialect: Headers::Github,
        threads: 2,
        // No policy: a whole window stated at any count bounds the refill by `(B − r − 1)/60 s`,
        // and one reset at counts no bucket's refill explains reads it as `B/60 s`.
        minutes: 10,
        ..PLAIN
    },
    Shape {
        name: "sliding_window_github_busy",
        server: "kind = \"sliding-window\"\nlimit = 300\nwindow = \"5m\"",
        dialect: Headers::Github,
        threads: 2,
        // Others take 4 a second: the count falls by several between two of this process's
        // answers under one stated reset of 5 minutes, no bucket's (the refill `B/reset`).
        others_every: 0.25,
        minutes: 6,
        ..PLAIN
    },
    Shape {
        name: "token_bucket_heroku_told",
        server: "kind = \"token-bucket\"\nrate = 1\nperiod = \"1s\"\nburst = 20",
        dialect: Headers::Heroku,
        threads: 2,
        // Told the refill as `1 per 1 s`: the bucket the quota implies holds 1, the counts say
        // 20 (the bucket is raised to a count above it when no limit is stated).
        params: &[("quota", 1.0), ("period", 1.0)],
        others_every: 2.0,
        minutes: 5,
        ..PLAIN
    },
    Shape {
        name: "token_bucket_heroku_held_top",
        server: "kind = \"token-bucket\"\nrate = 10\nperiod = \"1s\"\nburst = 10",
        dialect: Headers::Heroku,
        threads: 4,
        // Told 600 a minute with no limit stated, the law takes a bucket of 600; the count
        // stays at 9 or 10, read as that bucket drained far below its reserve, and the rate
        // steps down against a level it cannot raise until it has fallen to a quarter: then the
        // bucket is read as 10 tokens (the held top) and the law drains its surplus.
        params: &[("quota", 600.0), ("period", 60.0)],
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "token_bucket_two_tokens",
        server: "kind = \"token-bucket\"\nrate = 2\nperiod = \"1s\"\nburst = 2",
        dialect: Headers::Heroku,
        threads: 1,
        // One thread alone on a bucket of 2 tokens: a count read after a request is at most 1,
        // the readable top the price spans to, and a window of the law whose every reading
        // found the bucket there overflowed, its total read as the process's own sends.
        params: &[("quota", 2.0), ("period", 1.0)],
        others_burst: (2, 0.0),
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "gcra_small_skewed_latency",
        server: "kind = \"gcra\"\nlimit = 5\nperiod = \"1s\"",
        dialect: Headers::Full,
        threads: 5,
        // Each request counted a twentieth or nineteen twentieths into its latency, where the
        // law takes halfway: two readings' times can be off by a few tenths of a second, and
        // the level seem to jump by more than the refill over their spacing; the law widens that
        // spacing by both readings' slack before it reads a fixed window's turnover.
        others_every: 0.5,
        minutes: 3,
        skewed: true,
        ..PLAIN
    },
    Shape {
        name: "gcra_flood",
        server: "kind = \"gcra\"\nlimit = 4500\nperiod = \"1h\"\ninitial = 500",
        dialect: Headers::Full,
        threads: 1,
        // Others take 100 a second, as a crowd started together would: the first window of the
        // law reads a total far above its target and cuts straight to it.
        others_every: 0.01,
        minutes: 2,
        ..PLAIN
    },
    CROWD_REFUSALS,
    Shape {
        name: "gcra_full_drain",
        server: "kind = \"gcra\"\nlimit = 3000\nperiod = \"1h\"",
        dialect: Headers::Full,
        threads: 2,
        // A full start beside others taking a request a second: the surplus is spent at most at
        // `R` on top of the refill, and the process, under half of the total, pulls toward at
        // most its own share of the target.
        others_every: 1.0,
        minutes: 10,
        ..PLAIN
    },
    Shape {
        name: "fixed_window_fast",
        server: "kind = \"fixed-window\"\nlimit = 10\nwindow = \"1s\"",
        dialect: Headers::Full,
        threads: 4,
        // A 1-second window: a window of the law spans resets and aims at the whole allowances
        // of the windows that follow, and keeps three quarters of the reserve in the current
        // one.
        others_every: 0.25,
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "stacked_flask_first",
        server: "kind = \"stacked\"\nshows = \"first\"\nlimits = [\
                 { kind = \"fixed-window\", limit = 10, window = \"1s\" },\
                 { kind = \"fixed-window\", limit = 100, window = \"1m\", \
                 start = \"first-request\" }]",
        dialect: Headers::Github,
        threads: 4,
        // Flask-Limiter's "10 per second; 100 per minute": the successes state the short
        // limit, and the long one refuses with its own limit and the seconds to its end. Each
        // such refusal bounds the key's total under the long limit; the bucket stays 10.
        // Others take one a second of the long limit's 1.67.
        others_every: 1.0,
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "fixed_window_first_request",
        server: "kind = \"fixed-window\"\nlimit = 50\nwindow = \"5s\"\nstart = \"first-request\"",
        dialect: Headers::Ietf,
        threads: 4,
        // A window opened by its key's first request after the last one closed (express-rate-
        // limit, Flask-Limiter), others taking 8 a second: the resets come a little later each
        // period than the turnovers seen say, and the allowance runs out before them. A refusal
        // whose reset is its `Retry-After` reads the window's end, and one told a rounded-up
        // second past the reset placed is the window spent.
        others_every: 0.125,
        minutes: 2,
        ..PLAIN
    },
    Shape {
        name: "fixed_window_fastify",
        server: "kind = \"fixed-window\"\nlimit = 50\nwindow = \"5s\"\nstart = \"first-request\"",
        dialect: Headers::Fastify,
        threads: 4,
        // The same window in @fastify/rate-limit's fields: no policy, and the reset in seconds
        // to go, rounded up at each answer's phase. The period is read from the earliest end
        // each window stated; two windows' first readings alone are a second off now and then.
        others_every: 0.125,
        minutes: 2,
        ..PLAIN
    },
    Shape {
        name: "outage_backoff",
        server: "kind = \"gcra\"\nlimit = 100\nperiod = \"1m\"\noutages = [[\"0s\", \"10m\"]]",
        dialect: Headers::Full,
        threads: 2,
        // Waits from 100 ns doubling per error: an outage of 10 minutes takes more than 30
        // doublings, where the law stops doubling.
        params: &[("error_backoff", 1e-7), ("error_backoff_max", 1e6)],
        minutes: 14,
        ..PLAIN
    },
    Shape {
        name: "sliding_window_echo",
        server: "kind = \"sliding-window\"\nlimit = 100\nwindow = \"1m\"",
        dialect: Headers::Full,
        threads: 2,
        // Others take 60 at once at the start, and the process sends slowly at first: a period
        // later the 60 leave the window together, and the level jumps as a fixed window's does
        // at its turnover. The law has read a sliding window by then, and reads no turnover in
        // the jump.
        params: &[("initial_sleep", 10.0)],
        others_burst: (60, 0.0),
        minutes: 4,
        ..PLAIN
    },
    Shape {
        name: "sliding_window_one_second",
        server: "kind = \"sliding-window\"\nlimit = 20\nwindow = \"1s\"",
        dialect: Headers::Full,
        // Alone on a window whose stated reset (one second) a bucket's would round to as well:
        // the level and the process's own successes tell it.
        minutes: 1,
        ..PLAIN
    },
    // The draws go round a list: the process's offset first, each request's jitter, each
    // refusal's stretch of its `Retry-After` (18 of them), in the crate's order.
    Shape {
        name: "gcra_crowd_refusals_drawn",
        draws: DRAWS,
        ..CROWD_REFUSALS
    },
    // Six threads placed by the drawn offset, every request jittered by its own draw.
    Shape {
        name: "gcra_heroku_start_drawn",
        server: "kind = \"gcra\"\nlimit = 4500\nperiod = \"1h\"\ninitial = 300",
        dialect: Headers::Heroku,
        threads: 6,
        params: &[("quota", 4500.0), ("period", 3600.0)],
        others_every: 1.5,
        minutes: 3,
        draws: DRAWS,
        ..PLAIN
    },
    // One thread alone on a bucket of one token, every draw off the middle (where the jitter
    // would be nothing anyway): the bucket refuses any send sooner than a second after the
    // last, so the jitter is scaled to nothing, and every reading finds the bucket at its top,
    // the refill it lost to overflowing counted back.
    Shape {
        name: "gcra_one_token_drawn",
        server: "kind = \"gcra\"\nlimit = 1\nperiod = \"1s\"",
        dialect: Headers::Full,
        minutes: 3,
        draws: &[0.13],
        ..PLAIN
    },
    // Others take 80 of the 100 a minute and a process of four threads starts at the whole
    // quota: the window is emptied, and a refusal's `Retry-After` (less its rounding) holds
    // all four threads, not only the one refused.
    Shape {
        name: "sliding_window_process_hold",
        server: "kind = \"sliding-window\"\nlimit = 100\nwindow = \"1m\"",
        dialect: Headers::Full,
        threads: 4,
        others_every: 0.75,
        minutes: 4,
        ..PLAIN
    },
    // A sliding-window counter (Flask-Limiter's `sliding-window-counter`, most gateways'
    // "sliding windows") states when its allowance is whole again: while the previous window
    // still weighs, the end of the window after this one. That end stays put while the count
    // falls, as a fixed window's does, but lies more than a period ahead, where no fixed
    // window's end can be: the law must not read a fixed window here.
    Shape {
        name: "sliding_window_counter_ietf",
        server: "kind = \"sliding-window-counter\"\nlimit = 60\nwindow = \"1m\"",
        dialect: Headers::Ietf,
        threads: 1,
        minutes: 5,
        ..PLAIN
    },
    // Flask-Limiter's counter stating when its count next drops, through GitHub's fields (no
    // policy): through its first window its end stays put while the count falls (no bucket,
    // no quota known yet), the next two read it as a fixed window's, and then the end drifts
    // a second every second with no turnover: no fixed window after all, for good.
    Shape {
        name: "fixed_window_github_spent_early",
        server: "kind = \"fixed-window\"\nlimit = 30\nwindow = \"1m\"\nstart = \"first-request\"",
        dialect: Headers::Github,
        threads: 4,
        // Flask-Limiter's 30 a minute in GitHub's fields (no policy), others sending 20
        // together 15 s in: the window is spent long before its reset, and a refusal there
        // holds every thread of the process to the reset, not only the refused one (each would
        // take a 429 of its own: 5 in this script without the hold, 1 with it).
        others_every: 0.0,
        others_burst: (20, 15.0),
        minutes: 4,
        ..PLAIN
    },
    Shape {
        name: "gcra_fastify_faster_than_its_resets",
        server: "kind = \"gcra\"\nlimit = 20\nperiod = \"1s\"",
        dialect: Headers::Fastify,
        threads: 2,
        // A bucket of 20 refilled at 20 a second in fastify's fields (no policy): kept full,
        // it states a reset of one second and a count of 19 whatever its refill, so the law
        // starts from the default quota's 1.25 a second; alone and full through a window it
        // doubles, and its successes bound the refill from below.
        minutes: 2,
        ..PLAIN
    },
    Shape {
        name: "token_bucket_github_kept_near_full",
        server: "kind = \"token-bucket\"\nrate = 1\nperiod = \"1s\"\nburst = 12",
        dialect: Headers::Github,
        threads: 1,
        // A bucket of 12 refilled at 1 a second in GitHub's fields (no policy, the reset an
        // epoch second): read one or two tokens below the top, its resets bound the refill
        // from below by a token over the reset, half of it or less, and from above by three
        // times that. Until the two come within `PINNED_RATIO`, the refill is unproven: alone
        // and full through a window, the process doubles.
        minutes: 4,
        ..PLAIN
    },
    Shape {
        name: "token_bucket_fastify_resets_of_a_second",
        server: "kind = \"token-bucket\"\nrate = 59\nperiod = \"15s\"\nburst = 6\ninitial = 2",
        dialect: Headers::Fastify,
        threads: 3,
        // A bucket of 6 refilled at 3.9 a second in fastify's fields: every reset it states is
        // one second, which caps no refill, and its second answer (4 left) bounds the refill
        // by a token a second. A bound with no ceiling pins nothing: alone and full through a
        // window, the process doubles, and its successes raise the bound.
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "sliding_log_ietf_oldest_alone",
        server: "kind = \"sliding-window\"\nlimit = 200\nwindow = \"20s\"\nreset = \"oldest\"",
        dialect: Headers::Ietf,
        threads: 5,
        // A sliding log of 200 per 20 s stating when its oldest admission leaves: a second off
        // once busy, short of a period, so its resets say no sliding window. Alone, the process
        // reads `r + own = B` on every success, and the level's echo makes it one.
        minutes: 3,
        ..PLAIN
    },
    Shape {
        name: "sliding_window_counter_github_next_drop",
        server: "kind = \"sliding-window-counter\"\nlimit = 50\nwindow = \"5s\"\nreset = \"next-drop\"",
        dialect: Headers::Github,
        threads: 4,
        others_every: 0.3,
        minutes: 1,
        ..PLAIN
    },
    Shape {
        name: "leaky_bucket_heroku_held_top_after_start",
        server: "kind = \"leaky-bucket\"\nrate = \"20r/s\"\nburst = 5\ndelay = \"nodelay\"",
        dialect: Headers::Heroku,
        threads: 4,
        // nginx's burst of 5 told as 20 a second, no limit stated: others empty the bucket at
        // the start, so the process is refused and cut before any window of the law closed.
        // That cut says nothing of the bucket's size: from its first reading after the start,
        // the process steps down against a count it cannot raise until the held top reads the
        // bucket as 6 tokens.
        params: &[("quota", 20.0), ("period", 1.0)],
        others_burst: (8, 0.0),
        minutes: 3,
        ..PLAIN
    },
];

/// Every draw of the law at the middle of its range, where a script lists no draws: the
/// jitter is then 0 and every draw alike, so such a script holds neither the jitter nor the
/// order of the draws.
const RANDOM: f64 = 0.5;
/// The draws of the scripts that list them: uneven, none at the middle, so one draw more or
/// fewer, or two swapped, moves a wait.
const DRAWS: &[f64] = &[0.13, 0.71, 0.42, 0.97, 0.05, 0.58, 0.86];
/// The scripts' wall clock starts here (GitHub's reset is an epoch second).
const UNIX_START: u64 = 1_790_000_000;
/// The `k`-th request's latency: 5 to 101 ms, spread over the range in a fixed order (the law
/// counts a reading at half the latency, so every port must too).
/// Request `k`'s latency and when after its send the server counts it: halfway, or with
/// `skewed` a latency of 0.5-1.5 s counted after a twentieth of it or after nineteen twentieths
/// (the two legs of a heavy-tailed latency differ).
fn latency(k: u64, skewed: bool) -> (u64, u64) {
    if skewed {
        let latency = (500 + k * 7919 % 1001) * 1_000_000;
        let to_count = if k.is_multiple_of(2) {
            latency / 20
        } else {
            latency / 20 * 19
        };
        return (latency, to_count);
    }
    let latency = (5 + k * 7919 % 97) * 1_000_000;
    (latency, latency / 2)
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: port_scripts DIR");
        std::process::exit(2);
    };
    for (name, text) in scripts() {
        let path = std::path::Path::new(&dir).join(format!("{name}.json"));
        std::fs::write(&path, text).expect("the folder is writable");
        println!("{}", path.display());
    }
}

/// Every script: its file's name without `.json`, and the file's text.
pub fn scripts() -> Vec<(&'static str, String)> {
    SHAPES
        .iter()
        .map(|shape| (shape.name, format!("{}\n", record(shape))))
        .collect()
}

/// Runs `shape` and returns its script.
fn record(shape: &Shape) -> Value {
    let text = format!(
        "name = \"{}\"\n[server]\n{}\nheaders = \"{}\"\n[[clients]]\nname = \"w\"\nalgorithm = \"fair-share\"\n",
        shape.name,
        shape.server,
        dialect_name(shape.dialect)
    );
    let scenario = parse_scenario(&text, shape.name, shape.name, &[], 1).expect("a valid server");
    let mut server = scenario.server.build_limiter(stream(1, 0, Stream::Server));
    let mut params = Params::default();
    for (name, value) in shape.params {
        params.set(name, *value).expect("a parameter of the law");
    }
    let draws = if shape.draws.is_empty() {
        vec![RANDOM]
    } else {
        shape.draws.to_vec()
    };
    let law = FairShare::with_draw(
        shape.threads,
        params,
        Cycle::new(draws).expect("at least one draw"),
    );
    let end = shape.minutes * 60_000_000_000;
    let others = (shape.others_every * 1e9) as u64;
    let mut next_other = if others > 0 { others / 2 } else { u64::MAX };
    let (mut burst, burst_at) = (shape.others_burst.0, (shape.others_burst.1 * 1e9) as u64);
    // Per thread: when it next asks, and whether that is for an answer (its request's) or a
    // wait.
    let mut due: Vec<(u64, Option<(Decision, u64)>)> = vec![(0, None); shape.threads];
    let mut sent = 0u64;
    let mut events = Vec::new();
    // The wait the law gave at each `wait` event, in order: what a replay must print.
    let mut waits = Vec::new();
    loop {
        let (thread, &(now, answer)) = due
            .iter()
            .enumerate()
            .min_by_key(|(i, d)| (d.0, *i))
            .expect("at least one thread");
        if now >= end {
            break;
        }
        while next_other <= now {
            server.admit(next_other, 0);
            next_other += others;
        }
        while burst > 0 && burst_at <= now {
            server.admit(burst_at, 0);
            burst -= 1;
        }
        let at = Duration::from_nanos(now);
        match answer {
            Some((decision, latency)) => {
                let (status, headers) = http_answer(&decision, shape.dialect, now);
                let wall =
                    SystemTime::UNIX_EPOCH + Duration::from_secs(UNIX_START + now / 1_000_000_000);
                let pairs = headers.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                let read = Answer::read(status, pairs, Duration::from_nanos(latency), wall);
                law.observe(thread, at, &read);
                events.push(json!({
                    "at": now, "thread": thread, "do": "answer", "status": status,
                    "latency": latency, "unix": UNIX_START + now / 1_000_000_000,
                    "headers": headers,
                }));
                due[thread] = (now, None);
            }
            None => {
                let wait = u64::try_from(law.wait(thread, at).as_nanos()).expect("a wait");
                events.push(json!({"at": now, "thread": thread, "do": "wait"}));
                waits.push(wait);
                due[thread] = if wait == 0 {
                    // Counted by the server (halfway, mostly), answered a latency later.
                    sent += 1;
                    let (latency, to_count) = latency(sent, shape.skewed);
                    let decision = server.admit(now + to_count, 0);
                    (now + latency, Some((decision, latency)))
                } else {
                    (now + wait, None)
                };
            }
        }
    }
    let params: serde_json::Map<String, Value> = shape
        .params
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    json!({
        "name": shape.name,
        "server": shape.server,
        "dialect": dialect_name(shape.dialect),
        "threads": shape.threads,
        "params": params,
        "random": if shape.draws.is_empty() { json!(RANDOM) } else { json!(shape.draws) },
        "events": events,
        "waits": waits,
    })
}

/// The status code and the header lines the live server would send for `d` at `now`
/// (`engine/live/server/handler.rs`, at time scale 1).
fn http_answer(d: &Decision, dialect: Headers, now: u64) -> (u16, Vec<(String, String)>) {
    let status = match d.status {
        Status::Ok => 200,
        Status::Limited => 429,
        Status::Unavailable => 503,
        Status::Error => 500,
    };
    let mut map = HeaderMap::new();
    if d.has_headers() {
        let policy = PolicyHeaders::new(d.limit, Duration::from_nanos(d.window));
        let wall = SystemTime::UNIX_EPOCH + Duration::from_nanos(UNIX_START * 1_000_000_000 + now);
        let retry = d.retry_after.map(Duration::from_nanos);
        let waits = Waits::of(d, retry, Duration::from_nanos(d.reset), wall);
        write_decision(&mut map, dialect, d, &policy, waits);
    }
    let lines = map
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    (status, lines)
}

/// The dialect's name in a scenario (`headers = "github"`).
fn dialect_name(h: Headers) -> String {
    serde_json::to_value(h)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .expect("a dialect serializes as its name")
}
