//! Every bad input a user can give, in one table: the arguments (and the scenario text, when
//! the case needs a file of its own) → the exit code and a fragment of what the tool says
//! (stderr and stdout together). Every defect of this kind found so far has its row; add a
//! row for each new one.
//!
//! In the arguments: `{file}` is the row's scenario text written to a file, `{scen}` the
//! bundled scenarios folder, `{tmp}` a fresh folder of the row's own, `{afile}` a file in it,
//! `{busy}` an address something listens on, `{busy_port}` its port, `{closed}` a port nothing
//! listens on, `{nan}` a results folder whose series.csv holds a NaN, `{moved}` the address of
//! a hostile server (`tests/common/hostile.rs`) answering 301 to everything, `{stalled}` one
//! that never answers, `{longurl}` a 70 KB URL, `{fifo}` a FIFO (named pipe) nobody writes to,
//! `{big}` a regular file of 9 MiB, `{dangling}` a symbolic link to a missing `{tmp}/nowhere`,
//! `{loop}` one of two links to each other, `{incomplete}` a folder left as `serve --record`
//! leaves it on a full disk (an empty scenario.toml), `{zero}` a run folder whose run sent no
//! request, `{pipes}` a folder whose scenario.toml, series.csv and requests.csv are FIFOs,
//! `{ragged}` a folder whose requests.csv has a row of too few fields on its line 3, `{farout}`
//! a folder whose requests.csv's last request is at t = 1e300 s (its line 42), `{badlen}` a
//! hostile server whose answers' Content-Length is `abc`, `{short}` a run folder whose trace
//! cannot tell a rule, `{hugeslice}` a slice whose shard.json claims 10^18 runs, `{nanslice}`
//! a slice whose runs.csv has a NaN on line 2.
//!
//! What no command line can show has its test elsewhere: a client that hangs up on serve
//! (`tests/live/hostile_serve.rs`: slots given back, answers never sent, tokens kept by
//! fingerprint and two tokens of one fingerprint), a target that dies mid-run, Ctrl-C with
//! requests in flight, a store that answers SET NX wrongly (`tests/live/hostile.rs`), a Redis
//! password (`tests/live/redis.rs`), a recording of 10,000 keys and a run past the machine's
//! memory (unit tests of `recording::replay` and `record::footprint`).

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Running, exe};

/// A small valid scenario for rows to change.
const BASE: &str = r#"name = "t"
[run]
duration = "1h"
seed = 3
[server]
limit = 100
[[clients]]
name = "a"
threads = 2
"#;

struct Case {
    args: &'static str,
    /// The scenario text `{file}` stands for.
    file: Option<String>,
    code: i32,
    says: &'static str,
    /// A path (with placeholders) that must not exist afterwards.
    absent: Option<&'static str>,
    /// Text that must not be said (a secret given in the arguments).
    hides: Option<&'static str>,
}

/// A row whose output must not hold `secret`.
fn hiding(args: &'static str, code: i32, says: &'static str, secret: &'static str) -> Case {
    Case {
        hides: Some(secret),
        ..case(args, code, says)
    }
}

fn case(args: &'static str, code: i32, says: &'static str) -> Case {
    Case {
        args,
        file: None,
        code,
        says,
        absent: None,
        hides: None,
    }
}

/// A row running `run {file} --quiet` on BASE with `from` replaced by `to`.
fn edited(from: &str, to: &str, code: i32, says: &'static str) -> Case {
    assert!(BASE.contains(from), "{from}");
    text(BASE.replacen(from, to, 1), code, says)
}

/// A row running `run {file} --quiet` on BASE with `more` appended.
fn plus(more: &str, code: i32, says: &'static str) -> Case {
    text(format!("{BASE}{more}"), code, says)
}

fn text(file: String, code: i32, says: &'static str) -> Case {
    Case {
        args: "run {file} --quiet --no-charts --out {tmp}/r",
        file: Some(file),
        code,
        says,
        absent: None,
        hides: None,
    }
}

fn cases() -> Vec<Case> {
    vec![
        // Output that would fill the disk.
        case(
            "run {scen}/fast_slow.toml --set run.sample_every=1ms --no-charts --out {tmp}/r",
            2,
            "run.sample_every = 1ms would write about 8.5 GB of series.csv",
        ),
        case(
            "run {scen}/fast_slow.toml --set run.sample_every=1ms --out {tmp}/r",
            2,
            "or pass --allow-large-output",
        ),
        case(
            "run {scen}/fast_slow.toml --set run.sample_every=1ns --out {tmp}/r",
            2,
            "run.sample_every: must be at least 1ms (got 1ns)",
        ),
        case(
            "compare {scen}/fast_slow.toml --set run.sample_every=1ms --out {tmp}/c",
            2,
            "variant `base`: run.sample_every = 1ms would write",
        ),
        case(
            "run {scen}/fast_slow.toml --duration 500us --out {tmp}/r",
            2,
            "run.duration: must be at least 1ms",
        ),
        // compare keeps every metric (peak_requests was null).
        case(
            "compare {scen}/interval_lock.toml --seeds 2 --out {tmp}/c",
            0,
            "ranking:",
        ),
        case(
            "compare {scen}/dual_bucket.toml --seeds 2 --out {tmp}/c",
            0,
            "ranking:",
        ),
        // A busy port.
        case(
            "serve --addr {busy}",
            2,
            "the port is already in use (another serve, or another program)",
        ),
        // The normal latency (each hop |N(mean, sd)|) names what it lacks.
        edited(
            "limit = 100",
            "limit = 100\nlatency = { distribution = \"normal\", mean = \"10ms\" }",
            2,
            "normal needs `sd`",
        ),
        edited(
            "limit = 100",
            "limit = 100\nlatency = { distribution = \"normal\", mean = \"10ms\", sd = \"2ms\", sigma = 1 }",
            2,
            "`sigma` does not apply to the normal distribution",
        ),
        edited(
            "limit = 100",
            "limit = 100\nlatency = { distribution = \"normal\", mean = \"-1ms\", sd = \"2ms\" }",
            2,
            "server.latency",
        ),
        // [compare] metrics must name metrics, once each.
        plus(
            "[compare]\nmetrics = [\"speed\"]\n",
            2,
            "compare.metrics: unknown metric `speed`, expected one of: requests",
        ),
        plus(
            "[compare]\nmetrics = []\n",
            2,
            "compare.metrics: name at least one metric",
        ),
        plus(
            "[compare]\nmetrics = [\"requests\", \"requests\"]\n",
            2,
            "compare.metrics: `requests` is named twice",
        ),
        plus("[compare]\nrank = 1\n", 2, "compare.rank: unknown field"),
        // Names that leave results/.
        edited(
            "name = \"t\"",
            "name = \"../../etc/x\"",
            2,
            ":1: name: `../../etc/x` cannot name a results folder",
        ),
        edited(
            "name = \"t\"",
            "name = \"\"",
            2,
            ":1: name: must not be empty",
        ),
        // A clock that runs out.
        case(
            "serve --time-scale 1e12",
            2,
            "--time-scale: must be at most 10000",
        ),
        case(
            "run {scen}/fast_slow.toml --mode live --set run.time_scale=1e12 --out {tmp}/r",
            2,
            "run.time_scale: must be at most 10000",
        ),
        // Failures that looked like success. (A target nothing listens on is now named before
        // the run: the client's rows below.)
        case(
            "client --target http://{moved}/ --algorithm fixed --set clients.*.sleep=50ms --duration 300ms --quiet --out {tmp}/c",
            4,
            "error: every one of the",
        ),
        case(
            "client --target http://{busy}/ --duration 300ms --quiet --out {tmp}/c",
            4,
            "error: the run sent no requests",
        ),
        edited(
            "threads = 2",
            "algorithm = \"fixed\"\nsleep = \"2h\"\n[expect]\nrequests = [0, 10]",
            4,
            "the run sent no requests",
        ),
        // Poor messages and exit codes.
        case(
            "run {scen}/fast_slow.toml --out {afile}",
            2,
            "--out {afile}: is a file, not a folder",
        ),
        case(
            "run {scen}/fast_slow.toml --out {afile}/under",
            2,
            "--out {afile}/under: cannot create the folder",
        ),
        case(
            "run {scen}/fast_slow.toml --out /proc/throttle-sim-x",
            2,
            "--out /proc/throttle-sim-x: cannot",
        ),
        edited(
            "limit = 100",
            "limit = 99999999999999999999",
            2,
            ":6: a whole number larger than TOML allows",
        ),
        edited(
            "duration = \"1h\"",
            "duration = \"1000000000000000000s\"",
            2,
            "run.duration: `1000000000000000000s` is not a duration (too long",
        ),
        plus(
            "[expect]\nratio_429 = [nan, 0.5]\n",
            2,
            "expect.ratio_429: range [NaN, 0.5] holds a value that is not a number",
        ),
        case(
            "run {scen}/fast_slow.toml --set expect.ratio_429=[0,",
            2,
            "the value `[0,` is not valid TOML",
        ),
        case(
            "run {scen}/fast_slow.toml --set server.limit=99999999999999999999",
            2,
            "`99999999999999999999` is not valid TOML",
        ),
        // A host name is resolved (the port is busy, so it stops there).
        case(
            "serve --addr localhost:{busy_port}",
            2,
            "cannot listen there: the port is already in use",
        ),
        case("serve --addr localhost", 2, "has no port"),
        case("serve --addr nonexistent.invalid:80", 2, "cannot resolve"),
        case("serve --limit -1", 2, "`-1` is not a whole number"),
        case(
            "serve --scenario {scen}/occ_contention.toml --limit 5",
            2,
            "server.limit: unknown field `limit`, expected `read_ahead`; every server also takes latency, outages, error_rate, headers (from --limit 5)",
        ),
        case(
            "client --target http://127.0.0.1:{closed}/ --set server.limit=5",
            2,
            "--set server.limit=5: client runs against --target",
        ),
        edited(
            "threads = 2",
            "stop = \"2h\"",
            2,
            "clients[0].stop: 2h is after the end of the run (1h)",
        ),
        edited(
            "seed = 3",
            "peak_window = \"2h\"",
            2,
            "run.peak_window: 2h is longer than the run (1h)",
        ),
        edited(
            "name = \"a\"",
            "name = \"*\"",
            2,
            "clients[0].name: `*` cannot name a group",
        ),
        edited(
            "name = \"a\"",
            "name = \"0\"",
            2,
            "clients[0].name: `0` cannot name a group",
        ),
        case(
            "plot {nan}",
            2,
            "series.csv:2: t is NaN, not a finite number",
        ),
        case(
            "run /dev/zero",
            2,
            "/dev/zero: cannot read the file: it is a character device, not a regular file",
        ),
        // A FIFO once blocked the open (and the first SIGTERM with it).
        case(
            "run {fifo}",
            2,
            "{fifo}: cannot read the file: it is a FIFO (named pipe), not a regular file",
        ),
        case(
            "check {fifo}",
            2,
            "it is a FIFO (named pipe), not a regular file",
        ),
        case(
            "run {big}",
            2,
            "{big}: cannot read the file: it is larger than 8 MiB",
        ),
        Case {
            absent: Some("{tmp}/st"),
            hides: None,
            ..case(
                "run {scen}/shared_redis.toml --set store.url=redis://127.0.0.1:{closed} --out {tmp}/st",
                2,
                "store.url: the store at redis://127.0.0.1:",
            )
        },
        // A hostile world: the poor cases of the command line and files.
        case(
            "run {scen}/fast_slow.toml --seed 5 --set run.seed=7 --out {tmp}/r",
            2,
            "--seed 5 and --set run.seed=7 both set run.seed; give one of them",
        ),
        case(
            "compare {scen}/fast_slow.toml --duration 10m --set run.duration=20m --out {tmp}/c",
            2,
            "--duration 10m and --set run.duration=20m both set run.duration",
        ),
        Case {
            args: "check {file}",
            file: Some(BASE.to_string()),
            code: 2,
            says: "has no [expect] ranges, so check judged nothing there; add an [expect] table, or pass --allow-empty",
            absent: None,
            hides: None,
        },
        Case {
            args: "check {file} --allow-empty",
            file: Some(BASE.to_string()),
            code: 0,
            says: "1 without [expect]",
            absent: None,
            hides: None,
        },
        case(
            "run {scen}/fast_slow.toml --out {dangling}",
            2,
            "is a symbolic link to {tmp}/nowhere, which does not exist",
        ),
        case(
            "run {scen}/fast_slow.toml --out {loop}",
            2,
            "is a symbolic link that leads back to itself",
        ),
        case(
            "compare --runs {incomplete}",
            2,
            "the run folder is incomplete: scenario.toml is empty",
        ),
        case(
            "compare --runs {zero} --out {tmp}/c",
            0,
            "no requests were sent",
        ),
        // Unicode names: letters of any script name a results folder; invisible and
        // direction-changing characters never name a group.
        Case {
            args: "run {file} --no-charts --out {tmp}/r",
            file: Some(BASE.replacen("name = \"t\"", "name = \"café-été\"", 1)),
            code: 0,
            says: "café-été: 3600 s simulated",
            absent: None,
            hides: None,
        },
        edited(
            "name = \"t\"",
            "name = \"café été\"",
            2,
            "`café été` cannot name a results folder: use letters, digits, `_`, `-` and `.` (not first), e.g. `café_été`",
        ),
        edited(
            "name = \"a\"",
            "name = \"ab\\u202Ec\"",
            2,
            "clients[0].name: `ab\\u{202e}c` holds U+202E, a control, invisible or direction-changing character",
        ),
        edited(
            "name = \"a\"",
            "name = \"a\\u200Bb\"",
            2,
            "holds U+200B, a control, invisible or direction-changing character",
        ),
        edited(
            "name = \"a\"",
            "name = \"a\\nb\"",
            2,
            "`a\\nb` holds U+000A",
        ),
        // Files that cannot be read, bad TOML, unknown names and out-of-range values.
        case(
            "run {tmp}/missing.toml",
            2,
            "missing.toml: cannot read the file",
        ),
        case("run {tmp}", 2, "it is a folder, not a scenario file"),
        text("name = \"x\"\n[run\n".into(), 2, ":2: not valid TOML"),
        plus("surprise = 1\n", 2, "surprise: unknown field"),
        edited(
            "threads = 2",
            "jiter = 0.1",
            2,
            ":9: clients[0].jiter: unknown field `jiter`",
        ),
        edited(
            "threads = 2",
            "algorithm = \"magic\"",
            2,
            "unknown algorithm `magic`, expected one of: schneems",
        ),
        edited(
            "limit = 100",
            "kind = \"leaky\"",
            2,
            "server.kind: unknown kind `leaky`",
        ),
        edited(
            "threads = 2",
            "threads = 0",
            2,
            ":9: clients[0].threads: must be at least 1 (got 0)",
        ),
        edited(
            "threads = 2",
            "processes = 0",
            2,
            "clients[0].processes: must be at least 1",
        ),
        edited(
            "threads = 2",
            "jobs = 0",
            2,
            "clients[0].jobs: must be at least 1",
        ),
        edited(
            "threads = 2",
            "threads = \"two\"",
            2,
            "clients[0].threads: invalid type: string",
        ),
        edited(
            "threads = 2",
            "start = \"2h\"",
            2,
            "clients[0].start: 2h is not before the end of the run",
        ),
        edited(
            "threads = 2",
            "start = \"10m\"\nstop = \"5m\"",
            2,
            "clients[0].stop: must be after start",
        ),
        plus(
            "[[clients]]\nname = \"a\"\n",
            2,
            "clients[1].name: `a` names two groups",
        ),
        text(
            "[run]\nduration = \"1h\"\n".into(),
            2,
            "clients: missing: a scenario needs at least one [[clients]] group",
        ),
        text(
            "clients = 3\n".into(),
            2,
            "clients: must be a list of [[clients]] tables",
        ),
        plus(
            "[expect]\nspeed = [0, 1]\n",
            2,
            "expect.speed: unknown metric",
        ),
        plus(
            "[expect]\nratio_429 = [0.5, 0.1]\n",
            2,
            "range [0.5, 0.1] is upside down",
        ),
        edited(
            "limit = 100",
            "limit = 100\noutages = [[\"50m\", \"2h\"]]",
            2,
            "server.outages[0]: ends at 2h, after the end of the run (1h)",
        ),
        edited(
            "limit = 100",
            "limit = 100\noutages = [[\"10m\", \"20m\"], [\"15m\", \"25m\"]]",
            2,
            "overlaps outages[0]",
        ),
        edited(
            "limit = 100",
            "limit = 100\nerror_rate = 1.5",
            2,
            "server.error_rate: must be a probability from 0 to 1 (got 1.5)",
        ),
        edited(
            "duration = \"1h\"",
            "duration = \"5 parsecs\"",
            2,
            "run.duration: `5 parsecs` is not a duration",
        ),
        edited(
            "limit = 100",
            "limit = -5",
            2,
            "server.limit: invalid value: integer `-5`",
        ),
        // Series levels.
        edited(
            "seed = 3",
            "series = \"threads\"",
            2,
            "run.series: unknown value `threads`, expected one of `thread`, `process`, `group`",
        ),
        case(
            "run {scen}/fast_slow.toml --set run.series=7 --out {tmp}/r",
            2,
            "run.series: invalid type",
        ),
        case(
            "run {scen}/fast_slow.toml --set run.sample_every=1ms --no-charts --out {tmp}/r",
            2,
            "write a row per process or group (--set run.series=group)",
        ),
        edited(
            "seed = 3",
            "sample_every = \"2h\"",
            2,
            "run.sample_every: must be at most the run's duration (1h)",
        ),
        edited(
            "seed = 3",
            "time_scale = -1.0",
            2,
            "run.time_scale: must be a number above 0 (got -1)",
        ),
        edited(
            "seed = 3",
            "peak_window = \"0s\"",
            2,
            "run.peak_window: must be longer than 0s",
        ),
        case(
            "run {scen}/interval_lock.toml --mode live --out {tmp}/r",
            2,
            "interval-lock coordinates its",
        ),
        plus(
            "[store]\nurl = \"http://127.0.0.1:6379\"\n",
            2,
            "store.url: `http://127.0.0.1:6379`: unknown scheme",
        ),
        case(
            "run {scen}/fast_slow.toml --seed 18446744073709551615",
            2,
            "is not a seed",
        ),
        case(
            "run {scen}/fast_slow.toml --duration 2parsecs",
            2,
            "is not a duration",
        ),
        case(
            "run {scen}/fast_slow.toml --mode fast",
            2,
            "invalid value 'fast' for '--mode <MODE>'",
        ),
        case(
            "run {scen}/fast_slow.toml --set server.limit",
            2,
            "needs the form path=value",
        ),
        case(
            "run {scen}/fast_slow.toml --set a..b=1",
            2,
            "`a..b` is not a field path",
        ),
        case(
            "run {scen}/fast_slow.toml --set clients.nosuch.threads=2",
            2,
            "`clients` has no entry named `nosuch` (names: fast, slow",
        ),
        case(
            "run {scen}/fast_slow.toml --set clients.*.threads=0",
            2,
            "(from --set clients.*.threads=0)",
        ),
        case(
            "run {scen}/outage.toml --duration 5m",
            2,
            "server.outages[0]: ends at 40m, after the end of the run (5m)",
        ),
        case(
            "run {scen}/fast_slow.toml --duration 0s",
            2,
            "run.duration: must be at least 1ms (got 0s) (from --duration 0s)",
        ),
        case(
            "run {scen}/fast_slow.toml --quiet --out {tmp}",
            2,
            "the folder is not empty; results never overwrite an earlier run",
        ),
        case(
            "compare {scen}/fast_slow.toml --variants nosuch --out {tmp}/c",
            2,
            "has no variant `nosuch`",
        ),
        case(
            "compare {scen}/fast_slow.toml --algorithms magic --out {tmp}/c",
            2,
            "--algorithms: unknown algorithm `magic`",
        ),
        case(
            "compare {scen}/fast_slow.toml --seeds 0",
            2,
            "0 is not in 1..=10000",
        ),
        case(
            "client --target http://127.0.0.1:{closed}/ --ca-file Cargo.toml",
            2,
            "--ca-file Cargo.toml: only an https:// --target uses it",
        ),
        case(
            "client --target https://127.0.0.1:{closed}/ --ca-file Cargo.toml",
            2,
            "--ca-file Cargo.toml: no certificate in it",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-cert Cargo.toml --tls-key Cargo.toml",
            2,
            "--tls-cert Cargo.toml: no certificate in it",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-key Cargo.toml",
            2,
            "--tls-cert",
        ),
        case(
            "client --target notaurl",
            2,
            "--target notaurl: expected an http:// or https:// URL",
        ),
        case(
            "client --target http://127.0.0.1:{closed}/ --algorithm magic",
            2,
            "--algorithm magic: unknown algorithm",
        ),
        // A misspelt name of ours gets the nearest one; clap does it for commands and flags.
        case(
            "client --target http://127.0.0.1:{closed}/ --algorithm schneem",
            2,
            "did you mean `schneems`?",
        ),
        case(
            "compare {scen}/fast_slow.toml --algorithms fairshare --out {tmp}/c",
            2,
            "--algorithms: unknown algorithm `fairshare`, expected one of: schneems",
        ),
        case(
            "compare {scen}/fast_slow.toml --algorithms fairshare --out {tmp}/c",
            2,
            "did you mean `fair-share`?",
        ),
        case(
            "compare {scen}/fast_slow.toml --variants bsae --out {tmp}/c",
            2,
            "did you mean `base`?",
        ),
        case("serve --headers ietff", 2, "did you mean `ietf`?"),
        case(
            "serve --rule token-bucket --limit 0",
            2,
            "--limit: must be at least 1 token per period",
        ),
        case(
            "serve --rule fixed-window --scenario {scen}/fast_slow.toml",
            2,
            "'--rule <RULE>' cannot be used with '--scenario <FILE>'",
        ),
        case(
            "chek {scen}/fast_slow.toml",
            2,
            "a similar subcommand exists: 'check'",
        ),
        case(
            "run --seeed 1 {scen}/fast_slow.toml",
            2,
            "a similar argument exists: '--seed'",
        ),
        edited("threads = 2", "thread = 2", 2, "did you mean `threads`?"),
        edited("limit = 100", "kind = \"gcar\"", 2, "did you mean `gcra`?"),
        case(
            "client --target http://127.0.0.1:{closed}/ --header nocolon",
            2,
            "`nocolon` is not a header",
        ),
        // A hostile world, the client's side: what a target, a server's answers and serve's
        // flags can do.
        Case {
            args: "client --target http://127.0.0.1:{closed}/ --duration 1m --quiet --out {tmp}/c",
            file: None,
            code: 4,
            says: "error: cannot connect to 127.0.0.1:{closed}: Connection refused",
            absent: Some("{tmp}/c"),
            hides: None,
        },
        case(
            "client --target http://{moved}/ --algorithm fixed --set clients.*.sleep=50ms --duration 300ms --quiet --out {tmp}/c",
            4,
            "requests failed (no 2xx and no 429): ",
        ),
        case(
            "client --target http://{moved}/ --algorithm fixed --set clients.*.sleep=50ms --duration 300ms --quiet --out {tmp}/c",
            4,
            "answered 301; requests.csv with --log-requests has each one",
        ),
        // A request in flight at the end is abandoned a second after it, not after
        // --timeout (the row's 20 s deadline would kill the old wait of an hour).
        case(
            "client --target http://{stalled}/ --algorithm fixed --set clients.*.sleep=50ms --duration 300ms --timeout 1h --quiet --out {tmp}/c",
            4,
            "the one request failed (no 2xx and no 429): 1 timed out",
        ),
        case("client --target {longurl}", 2, "aaaaaaaaaa… (7002"),
        case(
            "client --target {longurl}",
            2,
            " bytes): not a URL (uri too long)",
        ),
        case(
            "client --target http://u:SECRET@127.0.0.1:{closed}/?key=SECRET --ca-file Cargo.toml",
            2,
            "--ca-file Cargo.toml: only an https:// --target uses it, not http://***@127.0.0.1:{closed}/?key=***",
        ),
        case(
            "run {scen}/fast_slow.toml --mode live --set run.time_scale=1e-300 --out {tmp}/r",
            2,
            "run.time_scale: must be at least 0.001 (got 1e-300)",
        ),
        Case {
            args: "run {scen}/fast_slow.toml --mode live --set run.time_scale=1e-12 --out {tmp}/r",
            file: None,
            code: 2,
            says: "run.time_scale: must be at least 0.001 (got 1e-12): slower, a second",
            absent: Some("{tmp}/r"),
            hides: None,
        },
        case(
            "serve --addr 127.0.0.1:0 --time-scale 1e-16",
            2,
            "--time-scale: must be at least 0.001 (got 1e-16)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --time-scale 1e-300",
            2,
            "--time-scale: must be at least 0.001 (got 1e-300)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --duration 0s",
            2,
            "--duration 0s: must be at least 1ms, as a run's (got 0s)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --store redis://{moved}",
            2,
            "--store: the store at redis://{moved} failed: cannot reach it: it answered, but not as a Redis server does",
        ),
        case(
            "run {scen}/shared_redis.toml --set store.url=redis://{moved} --out {tmp}/st",
            2,
            "it answered, but not as a Redis server does",
        ),
        case(
            "serve --set server.limit=3",
            2,
            "--set needs --scenario FILE",
        ),
        case(
            "serve --time-scale 0",
            2,
            "--time-scale: must be a number above 0",
        ),
        case(
            "serve --store http://x",
            2,
            "--store: `http://x`: unknown scheme",
        ),
        // serve --record and compare --runs.
        case(
            "serve --addr 127.0.0.1:0 --record {afile}",
            2,
            "--record {afile}: is a file, not a folder",
        ),
        case(
            "serve --addr 127.0.0.1:0 --record {afile}/under",
            2,
            "--record {afile}/under: cannot create the folder",
        ),
        case(
            "serve --addr 127.0.0.1:0 --record {nan}",
            2,
            "--record {nan}: the folder is not empty",
        ),
        Case {
            args: "serve --addr {busy} --record {tmp}/r",
            file: None,
            code: 2,
            says: "the port is already in use",
            absent: Some("{tmp}/r"),
            hides: None,
        },
        case(
            "serve --addr 127.0.0.1:0 --record {tmp}/r --sample-every 500us",
            2,
            "--sample-every 500us: must be at least 1ms",
        ),
        case("serve --sample-every 1s", 2, "--record <DIR>"),
        case("serve --duration soon", 2, "--duration"),
        case(
            "compare --runs {tmp}/missing",
            2,
            "--runs {tmp}/missing: no such folder",
        ),
        case(
            "compare --runs {tmp}",
            2,
            "--runs {tmp}: not a run folder: {tmp}/scenario.toml: missing",
        ),
        case(
            "compare --runs {afile}",
            2,
            "--runs {afile}: is a file, not a run folder",
        ),
        case(
            "compare {scen}/fast_slow.toml --runs {nan}",
            2,
            "cannot be used with",
        ),
        case("compare", 2, "<SCENARIO>"),
        case("plot {afile}", 2, "not a folder"),
        case("plot {tmp}", 2, "scenario.toml: missing"),
        case(
            "check {scen}/fast_slow.toml {tmp}/missing.toml",
            2,
            "cannot read the file",
        ),
        case("list --bogus", 2, "unexpected argument '--bogus'"),
        // Ports, file flags, secrets, memory and merged slices.
        case(
            "client --target http://127.0.0.1:99999/ --duration 5s",
            2,
            "--target http://127.0.0.1:99999/: `99999` is not a port",
        ),
        case(
            "client --target http://127.0.0.1:-1/ --duration 5s",
            2,
            "`-1` is not a port",
        ),
        // Every file a flag names is a regular file, read with a bound: a FIFO blocked open()
        // past SIGTERM, and /dev/zero grew without bound.
        case(
            "client --target http://127.0.0.1:{closed}/ --body-file {fifo}",
            2,
            "--body-file {fifo}: cannot read it: it is a FIFO (named pipe), not a regular file",
        ),
        case(
            "client --target http://127.0.0.1:{closed}/ --body-file /dev/zero",
            2,
            "--body-file /dev/zero: cannot read it: it is a character device, not a regular file",
        ),
        case(
            "client --target https://127.0.0.1:{closed}/ --ca-file {fifo}",
            2,
            "--ca-file {fifo}: cannot read it (it is a FIFO (named pipe), not a regular file)",
        ),
        case(
            "client --target https://127.0.0.1:{closed}/ --ca-file /dev/zero",
            2,
            "--ca-file /dev/zero: cannot read it (it is a character device, not a regular file)",
        ),
        case(
            "client --target https://127.0.0.1:{closed}/ --ca-file {big}",
            2,
            "--ca-file {big}: cannot read it (it is larger than 1 MiB)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-cert {fifo} --tls-key {fifo} --duration 2s",
            2,
            "--tls-cert {fifo}: cannot read it (it is a FIFO (named pipe), not a regular file)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-cert {afile} --tls-key {fifo} --duration 2s",
            2,
            "--tls-key {fifo}: cannot read it (it is a FIFO (named pipe), not a regular file)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-cert /dev/zero --tls-key /dev/zero",
            2,
            "--tls-cert /dev/zero: cannot read it (it is a character device, not a regular file)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-cert {afile} --tls-key /dev/urandom",
            2,
            "--tls-key /dev/urandom: cannot read it (it is a character device, not a regular file)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --tls-cert {big} --tls-key {afile}",
            2,
            "--tls-cert {big}: cannot read it (it is larger than 1 MiB)",
        ),
        // Every scenario that runs can be read back from its results: one whose resolved
        // scenario.toml would pass the reader's bound is refused before it runs.
        plus(
            &(0..30_000)
                .map(|i| format!("[[clients]]\nname = \"g{i}\"\n"))
                .collect::<String>(),
            2,
            "written out with every default, as its results record it, the scenario is",
        ),
        // A URL's secrets are never echoed, however mistyped the URL.
        hiding(
            "client --target http:/alice:S3CRET@127.0.0.1/",
            2,
            "--target http:/***@127.0.0.1/: not a URL",
            "S3CRET",
        ),
        hiding(
            "client --target http://127.0.0.1:{closed}/cb#access_token=S3CRET --ca-file {afile}",
            2,
            "not http://127.0.0.1:{closed}/cb#***",
            "S3CRET",
        ),
        hiding(
            "run {scen}/shared_redis.toml --store http://u:S3CRET@127.0.0.1:1 --out {tmp}/r",
            2,
            "`http://***@127.0.0.1:1`: unknown scheme",
            "S3CRET",
        ),
        // Files of a results folder that are FIFOs are named as such, not as missing; a CSV
        // error names its line.
        case(
            "plot {pipes}",
            2,
            "{pipes}/scenario.toml: cannot read it: it is a FIFO (named pipe), not a regular file",
        ),
        case(
            "fit {pipes}",
            2,
            "{pipes}/requests.csv: cannot read it: it is a FIFO (named pipe), not a regular file",
        ),
        case("fit {ragged}", 2, "{ragged}/requests.csv: line 3: "),
        case(
            "fit {farout}",
            2,
            "{farout}/requests.csv: line 42: t = 1e300 s is past any trace (at most a century)",
        ),
        // Thousands of problems in one file are said up to a count.
        plus(
            &(0..100)
                .map(|i| format!("[[clients]]\nname = \"a.{i}\"\n"))
                .collect::<String>(),
            2,
            ": and 80 more problems like these (mend these and run again to see them)",
        ),
        // A run shorter than the default sample_every is sampled at its end; one given
        // longer than the run is still named.
        Case {
            args: "run {file} --no-charts --out {tmp}/r",
            file: Some(BASE.replacen("duration = \"1h\"", "duration = \"2s\"", 1)),
            code: 0,
            says: "t: 2 s simulated",
            absent: None,
            hides: Some("sample_every"),
        },
        edited(
            "duration = \"1h\"",
            "duration = \"2s\"\nsample_every = \"5s\"",
            2,
            "run.sample_every: must be at most the run's duration (2s)",
        ),
        // A run is refused when it would need more memory than any machine has free.
        Case {
            args: "client --target http://{moved}/ --processes 100000 --duration 1m --out {tmp}/c",
            file: None,
            code: 2,
            says: "100000 processes of 100000 threads in all would need about 845.9 GB of memory",
            absent: Some("{tmp}/c"),
            hides: None,
        },
        // One run folder given twice counted as two variants.
        case(
            "compare --runs {nan} {nan}/ --out {tmp}/c",
            2,
            "is given twice (as {nan} and {nan}/); each run is one variant of the table",
        ),
        // A number past what a scenario holds was silently made 2^63 - 1.
        case(
            "advise --rule gcra --limit 18446744073709551615 --period 1h --fleet 1x1",
            2,
            "`18446744073709551615` is past the largest whole number a scenario holds (9223372036854775807)",
        ),
        case(
            "serve --addr 127.0.0.1:0 --limit 9223372036854775808",
            2,
            "is past the largest whole number a scenario holds",
        ),
        // A slice's numbers are checked before anything is sized by them, and a NaN metric
        // is refused naming its place.
        case(
            "compare --merge {hugeslice} --out {tmp}/m",
            2,
            "shard.json: 1 planned variant × 1 seed make 1 run, not 1000000000000000000",
        ),
        case(
            "compare --merge {nanslice} --out {tmp}/m",
            2,
            "{nanslice}/runs.csv: line 2: column `utilization`: `NaN` is not a finite number",
        ),
        // A bad Content-Length is a bad header, not "not HTTP/1.1".
        case(
            "client --target http://{badlen}/ --algorithm fixed --set clients.*.sleep=50ms --duration 300ms --out {tmp}/c",
            4,
            "malformed (an answer HTTP/1.1 cannot read: its status line or a header such as Content-Length)",
        ),
        // fit that cannot tell has an exit code of its own.
        case(
            "fit {short}",
            5,
            "no fit.toml written: the trace cannot tell the rule",
        ),
        // A --set value of two TOML lines was cut to the first.
        case(
            "run {scen}/fast_slow.toml --set server.limit=5\nrun.seed=3 --out {tmp}/r",
            2,
            "the value holds a line break; one --set sets one value",
        ),
        // Runs that work, and a missed [expect]: the other exit codes.
        case(
            "run {scen}/single_client.toml --duration 10m --set expect.ratio_429=[0.5,1] --quiet --no-charts --out {tmp}/r",
            1,
            "is outside [0.5, 1]",
        ),
        case(
            "check {scen}/single_client.toml --set run.duration=10m --set expect.ratio_429=[0.5,1]",
            1,
            "MISSED",
        ),
        case(
            "run {scen}/fast_slow.toml --duration 30m --no-charts --out {tmp}/r",
            0,
            "fast_slow: 1800 s simulated",
        ),
    ]
}

/// A results folder whose series.csv starts with a NaN time.
fn nan_results(dir: &Path) {
    let out = Command::new(exe())
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/single_client.toml"))
        .args(["--duration", "1m", "--quiet", "--no-charts", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{out:?}");
    let series = dir.join("series.csv");
    let text = std::fs::read_to_string(&series).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let (_, row) = rest.split_once(',').unwrap();
    std::fs::write(&series, format!("{header}\nNaN,{row}")).unwrap();
}

/// A results folder with a trace of 10 s of one thread of an hourly quota: its count only
/// falls, so `fit` cannot tell the rule from it.
fn short_trace(dir: &Path) {
    let out = Command::new(exe())
        .arg("run")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/single_client.toml"))
        .args([
            "--duration",
            "10s",
            "--log-requests",
            "--quiet",
            "--no-charts",
            "--out",
        ])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{out:?}");
}

/// Two slices of `compare --shard` as a hostile hand would leave them: one whose shard.json
/// claims 10^18 runs, one whose runs.csv holds a NaN on its line 2.
fn spoiled_slices(huge: &Path, nan: &Path) {
    let manifest = |runs: &str| {
        format!(
            r#"{{"version":"{}","shard":1,"shards":1,"scenario_file":"","scenario_path":"s.toml","overrides":[],"variants":[],"algorithms":[],"seeds":[1],"plan":["base"],"runs":{runs}}}"#,
            env!("CARGO_PKG_VERSION")
        )
    };
    for (dir, runs) in [(huge, "1000000000000000000"), (nan, "1")] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("shard.json"), manifest(runs)).unwrap();
    }
    std::fs::write(
        nan.join("runs.csv"),
        "job,variant,seed,utilization\n0,base,1,NaN\n",
    )
    .unwrap();
}

/// A results folder of a run that sent no request (its one thread sleeps past the end).
fn zero_results(dir: &Path) {
    let file = dir.with_extension("toml");
    let text = BASE.replacen(
        "threads = 2",
        "threads = 1\nalgorithm = \"fixed\"\nsleep = \"2h\"",
        1,
    );
    std::fs::write(&file, text).unwrap();
    let out = Command::new(exe())
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-charts", "--out"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
}

#[test]
fn every_bad_input_gets_its_exit_code_and_message() {
    let shared = tempfile::tempdir().unwrap();
    let scen = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nan = shared.path().join("nan");
    nan_results(&nan);
    // A server that answers every request (and anything else sent to it) with a 301.
    let moved = common::hostile::HostileServer::always(
        common::hostile::Answer::status(301).header("location", "/elsewhere"),
    );
    // A server that never answers.
    let stalled =
        common::hostile::HostileServer::always(common::hostile::Answer::status(200).stalled());
    let longurl = format!("http://127.0.0.1:{closed}/{}", "a".repeat(70_000));
    let zero = shared.path().join("zero");
    zero_results(&zero);
    // A server whose every answer has a Content-Length that is no number.
    let badlen = common::hostile::HostileServer::always(
        common::hostile::Answer::status(200).header("content-length", "abc"),
    );
    let short = shared.path().join("short");
    short_trace(&short);
    let hugeslice = shared.path().join("hugeslice");
    let nanslice = shared.path().join("nanslice");
    spoiled_slices(&hugeslice, &nanslice);

    let cases = cases();
    assert!(cases.len() >= 50, "{} rows", cases.len());
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("s.toml");
        if let Some(text) = &c.file {
            std::fs::write(&file, text).unwrap();
        }
        let afile = tmp.path().join("afile");
        std::fs::write(&afile, "not a folder").unwrap();
        let fifo = tmp.path().join("fifo.toml");
        if c.args.contains("{fifo}") {
            let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success(), "mkfifo");
        }
        let dangling = tmp.path().join("dangling");
        let looping = tmp.path().join("loop");
        if c.args.contains("{dangling}") {
            std::os::unix::fs::symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        }
        if c.args.contains("{loop}") {
            let other = tmp.path().join("loop2");
            std::os::unix::fs::symlink(&other, &looping).unwrap();
            std::os::unix::fs::symlink(&looping, &other).unwrap();
        }
        let incomplete = tmp.path().join("incomplete");
        if c.args.contains("{incomplete}") {
            std::fs::create_dir(&incomplete).unwrap();
            std::fs::write(incomplete.join("scenario.toml"), "").unwrap();
        }
        let pipes = tmp.path().join("pipes");
        if c.args.contains("{pipes}") {
            std::fs::create_dir(&pipes).unwrap();
            for f in ["scenario.toml", "series.csv", "requests.csv"] {
                let made = Command::new("mkfifo").arg(pipes.join(f)).status().unwrap();
                assert!(made.success(), "mkfifo");
            }
        }
        let ragged = tmp.path().join("ragged");
        if c.args.contains("{ragged}") {
            std::fs::create_dir(&ragged).unwrap();
            std::fs::write(
                ragged.join("requests.csv"),
                "t,status,latency,group,process,thread\n1,ok,0.1,a,0,0\n2,ok\n",
            )
            .unwrap();
        }
        let farout = tmp.path().join("farout");
        if c.args.contains("{farout}") {
            std::fs::create_dir(&farout).unwrap();
            let mut rows = String::from("t,status,latency,group,process,thread,remaining\n");
            for i in 0..40 {
                rows.push_str(&format!("{},ok,0.01,a,0,0,{}\n", i, 40 - i));
            }
            rows.push_str("1e300,ok,0.01,a,0,0,0\n");
            std::fs::write(farout.join("requests.csv"), rows).unwrap();
        }
        let big = tmp.path().join("big.toml");
        if c.args.contains("{big}") {
            std::fs::write(&big, "#".repeat(9 << 20)).unwrap();
        }
        let fill = |s: &str| {
            s.replace("{file}", &file.display().to_string())
                .replace("{scen}", &scen.display().to_string())
                .replace("{tmp}", &tmp.path().display().to_string())
                .replace("{afile}", &afile.display().to_string())
                .replace("{busy_port}", &busy_addr.port().to_string())
                .replace("{busy}", &busy_addr.to_string())
                .replace("{closed}", &closed.to_string())
                .replace("{nan}", &nan.display().to_string())
                .replace("{moved}", &moved.addr.to_string())
                .replace("{stalled}", &stalled.addr.to_string())
                .replace("{longurl}", &longurl)
                .replace("{fifo}", &fifo.display().to_string())
                .replace("{big}", &big.display().to_string())
                .replace("{dangling}", &dangling.display().to_string())
                .replace("{loop}", &looping.display().to_string())
                .replace("{incomplete}", &incomplete.display().to_string())
                .replace("{zero}", &zero.display().to_string())
                .replace("{pipes}", &pipes.display().to_string())
                .replace("{ragged}", &ragged.display().to_string())
                .replace("{farout}", &farout.display().to_string())
                .replace("{badlen}", &badlen.addr.to_string())
                .replace("{short}", &short.display().to_string())
                .replace("{hugeslice}", &hugeslice.display().to_string())
                .replace("{nanslice}", &nanslice.display().to_string())
        };
        let args = fill(c.args);
        let mut child = Running(
            Command::new(exe())
                .args(args.split(' '))
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // Both pipes are read while it runs, so a chatty command never blocks on a full pipe
        // and one that never ends cannot hang the test: it is killed at the deadline.
        let read = |mut pipe: Box<dyn std::io::Read + Send>| {
            std::thread::spawn(move || {
                let mut s = String::new();
                let _ = pipe.read_to_string(&mut s);
                s
            })
        };
        let out = read(Box::new(child.0.stdout.take().unwrap()));
        let err = read(Box::new(child.0.stderr.take().unwrap()));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let code = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break status.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = child.0.kill();
                let _ = child.0.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut said = err.join().unwrap();
        said.push_str(&out.join().unwrap());
        let says = fill(c.says);
        if code != Some(c.code) || !said.contains(&says) {
            failures.push(format!(
                "row {i}: {args}\n  wanted exit {} saying {says:?}\n  got {code:?}: {said}",
                c.code
            ));
        }
        if let Some(secret) = c.hides.filter(|s| said.contains(s)) {
            failures.push(format!("row {i}: {args}\n  said {secret:?}: {said}"));
        }
        if let Some(p) = c.absent {
            let p = fill(p);
            if Path::new(&p).exists() {
                failures.push(format!("row {i}: {args}\n  left {p} behind"));
            }
        }
        assert!(
            !said.contains("panicked"),
            "row {i}: {args} panicked: {said}"
        );
    }
    drop(busy);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A scenario of 4,000 groups ran, but its results' scenario.toml (over 1 MiB written out)
/// could not be run again, nor drawn: every scenario that runs can run again from its results.
#[test]
fn a_scenario_of_thousands_of_groups_runs_again_from_its_results() {
    let tmp = tempfile::tempdir().unwrap();
    let groups: String = (0..4_000)
        .map(|i| format!("[[clients]]\nname = \"g{i}\"\n"))
        .collect();
    let file = tmp.path().join("many.toml");
    std::fs::write(
        &file,
        BASE.replacen("duration = \"1h\"", "duration = \"1m\"", 1) + &groups,
    )
    .unwrap();
    let run = |scenario: &Path, out: &Path| {
        Command::new(exe())
            .arg("run")
            .arg(scenario)
            .args(["--quiet", "--no-charts", "--out"])
            .arg(out)
            .output()
            .unwrap()
    };
    let first = tmp.path().join("first");
    let out = run(&file, &first);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let written = first.join("scenario.toml");
    assert!(std::fs::metadata(&written).unwrap().len() > 1 << 20);
    let again = run(&written, &tmp.path().join("again"));
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    let plot = Command::new(exe())
        .arg("plot")
        .arg(&first)
        .output()
        .unwrap();
    assert_eq!(plot.status.code(), Some(0), "{plot:?}");
}

/// Every problem of a file is an error of its own line; the second was once printed
/// without the `error:` prefix, as if it went on the first.
#[test]
fn every_problem_of_a_file_is_its_own_error_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("two.toml");
    let bad = BASE
        .replacen("duration = \"1h\"", "duration = \"bogus\"", 1)
        .replacen("threads = 2", "threads = 2\nalgorithm = \"nope\"", 1);
    std::fs::write(&file, bad).unwrap();
    let out = Command::new(exe())
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(tmp.path().join("r"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines.iter().all(|l| l.starts_with("error: ")), "{err}");
    assert!(
        lines[0].contains("run.duration") && lines[1].contains("algorithm"),
        "{err}"
    );
}
