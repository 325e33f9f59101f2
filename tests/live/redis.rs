//! Shared state on a real Redis: the store against the in-memory one, Rebased's Redis interval
//! lock and the Discord job queue's fixed window across real OS processes, one limit shared by two
//! `serve` instances, and what happens when Redis goes away. Every wait has a deadline.
//!
//! Redis: the server named by `THROTTLE_SIM_TEST_REDIS` (CI starts one), else a
//! `redis-server` this test starts on a free port (tests that kill Redis always start their
//! own). The tests that need Redis are `#[ignore]`d, so plain `cargo test` shows them as
//! ignored with the reason; `cargo test --test live -- --ignored redis::` (as .ci/run does)
//! runs them, and they fail when no Redis can be had.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::common;
use common::{Running, exe, summary, write};

/// `serve` with one serving thread, as these tests count what each instance admitted.
fn serve(args: &[&str]) -> (Running, String) {
    let mut all = vec!["--threads", "1"];
    all.extend_from_slice(args);
    common::serve(&all)
}
use throttle_sim::store::{
    MemoryStore, RedisLink, RedisStore, Store, StoreResult, Ttl, WindowAdmit,
};

const ENV_URL: &str = "THROTTLE_SIM_TEST_REDIS";

struct Redis {
    url: String,
    port: u16,
    server: Option<Child>,
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Redis {
    fn stop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn answers_ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    // A server that asks for a password answers `-NOAUTH…`: it is up too.
    s.write_all(b"PING\r\n").is_ok()
        && s.read_exact(&mut buf).is_ok()
        && (&buf == b"+PONG\r\n" || buf.starts_with(b"-NOAUTH"))
}

/// Start `redis-server` on `port` (no persistence) and wait until it answers.
fn start_server_on(port: u16) -> Result<Child, String> {
    start_server_with(port, &[])
}

/// As [`start_server_on`], with more of `redis-server`'s flags.
fn start_server_with(port: u16, extra: &[&str]) -> Result<Child, String> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if answers_ping(port) {
            return Ok(child);
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("redis-server exited at once ({status})"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err("redis-server did not answer within 10 s".into())
}

/// These tests are `#[ignore]`d, so plain `cargo test` lists them as ignored (with the
/// reason) instead of passing them silently without Redis; run on purpose, they fail when no
/// Redis can be had.
fn skip_or_fail(why: &str) -> Option<Redis> {
    panic!("the Redis tests need redis-server: {why}");
}

/// A Redis server of this test's own, which it may stop.
fn own_redis() -> Option<Redis> {
    let port = free_port();
    match start_server_on(port) {
        Ok(child) => Some(Redis {
            url: format!("redis://127.0.0.1:{port}"),
            port,
            server: Some(child),
        }),
        Err(e) => skip_or_fail(&e),
    }
}

/// CI's Redis when there is one, else one of this test's own.
fn redis() -> Option<Redis> {
    match std::env::var(ENV_URL) {
        Ok(url) if !url.is_empty() => {
            let port = url
                .rsplit(':')
                .next()
                .and_then(|p| p.split('/').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(6379);
            assert!(
                answers_ping(port),
                "{ENV_URL}={url}, but nothing answers PING there"
            );
            Some(Redis {
                url,
                port,
                server: None,
            })
        }
        _ => own_redis(),
    }
}

/// A key prefix no other test (or earlier run of this one) uses.
fn namespace(test: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "throttle-sim-test:{test}:{}-{now}-{}:",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Removes a namespace's keys when dropped (also when the test fails).
struct Cleanup(RedisLink, String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.delete_prefixed(&self.1);
    }
}

// ---------------------------------------------------------------------------------------------
// The store: Redis gives what the in-memory store gives.

#[derive(Clone, Debug)]
enum Op {
    SetNxPx {
        key: usize,
        value: i64,
        ttl_s: u64,
    },
    Pttl {
        key: usize,
    },
    Get {
        key: usize,
    },
    IncrBy {
        key: usize,
        delta: i64,
    },
    IncrWithExpiry {
        key: usize,
        ttl_s: u64,
    },
    Del {
        key: usize,
    },
    Window {
        calls: usize,
        reservoir: u64,
        delayed: bool,
    },
    IncrByWithExpiry {
        key: usize,
        delta: i64,
        ttl_s: u64,
    },
    /// Every integer key and a set key (which MGET answers as nil).
    Mget,
    Sadd {
        set: usize,
        member: usize,
        ttl_s: u64,
    },
    SunionCount,
    /// A reservation on the one GCRA key, on the caller's virtual clock.
    Gcra {
        interval_s: u64,
        burst: u64,
    },
    /// Past every TTL the sequence uses.
    Expire,
}

const SETS: [&str; 2] = ["s0", "s1"];
const MEMBERS: [&str; 3] = ["p0", "p1", "p2"];

const KEYS: [&str; 3] = ["a", "b", "c"];
/// Virtual time runs this many times faster than Redis's clock in the comparison, so TTLs of
/// minutes expire in a fraction of a real second.
const SCALE: f64 = 1000.0;
/// Every TTL is 5 to 10 virtual minutes (0.3 to 0.6 s of Redis time) and `Expire` moves 12
/// minutes on (0.72 s): no key expires between two steps unless one is `Expire`.
const EXPIRE_S: u64 = 720;

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let ttl = 300u64..600;
    prop_oneof![
        (key.clone(), -50i64..50, ttl.clone()).prop_map(|(key, value, ttl_s)| Op::SetNxPx {
            key,
            value,
            ttl_s
        }),
        key.clone().prop_map(|key| Op::Pttl { key }),
        key.clone().prop_map(|key| Op::Get { key }),
        (key.clone(), -3i64..=3).prop_map(|(key, delta)| Op::IncrBy { key, delta }),
        (key.clone(), ttl.clone()).prop_map(|(key, ttl_s)| Op::IncrWithExpiry { key, ttl_s }),
        key.clone().prop_map(|key| Op::Del { key }),
        (key.clone(), 1u64..3, any::<bool>()).prop_map(|(calls, reservoir, delayed)| {
            Op::Window {
                calls,
                reservoir,
                delayed,
            }
        }),
        (key, -3i64..=3, ttl.clone()).prop_map(|(key, delta, ttl_s)| Op::IncrByWithExpiry {
            key,
            delta,
            ttl_s
        }),
        Just(Op::Mget),
        (0..SETS.len(), 0..MEMBERS.len(), ttl).prop_map(|(set, member, ttl_s)| Op::Sadd {
            set,
            member,
            ttl_s
        }),
        Just(Op::SunionCount),
        (1u64..100, 1u64..4).prop_map(|(interval_s, burst)| Op::Gcra { interval_s, burst }),
    ]
}

/// Operation sequences with at most one `Expire`, somewhere in the middle when there is one.
fn sequence() -> impl Strategy<Value = Vec<Op>> {
    (
        prop::collection::vec(op(), 1..24),
        any::<bool>(),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut ops, expire, at)| {
            if expire {
                ops.insert(at.index(ops.len() + 1), Op::Expire);
            }
            ops
        })
}

#[derive(Debug, PartialEq)]
enum Answer {
    Bool(bool),
    Ttl(Ttl),
    Int(i64),
    Value(Option<i64>),
    Window(WindowAdmit),
    Values(Vec<Option<i64>>),
    Count(u64),
    Wait(u64),
    Slept,
}

fn apply(store: &mut dyn Store, op: &Op, now: u64) -> StoreResult<Answer> {
    Ok(match *op {
        Op::SetNxPx { key, value, ttl_s } => {
            Answer::Bool(store.set_nx_px(KEYS[key], value, ttl_s * 1000, now)?)
        }
        Op::Pttl { key } => Answer::Ttl(store.pttl(KEYS[key], now)?),
        Op::Get { key } => Answer::Value(store.get(KEYS[key], now)?),
        Op::IncrBy { key, delta } => Answer::Int(store.incr_by(KEYS[key], delta, now)?),
        Op::IncrWithExpiry { key, ttl_s } => {
            Answer::Int(store.incr_with_expiry(KEYS[key], ttl_s * 1000, now)?)
        }
        Op::Del { key } => Answer::Bool(store.del(KEYS[key], now)?),
        Op::Window {
            calls,
            reservoir,
            delayed,
        } => Answer::Window(store.window_admit(
            KEYS[calls],
            400_000,
            reservoir,
            "queued",
            delayed,
            now,
        )?),
        Op::IncrByWithExpiry { key, delta, ttl_s } => {
            Answer::Int(store.incr_by_with_expiry(KEYS[key], delta, ttl_s * 1000, now)?)
        }
        Op::Mget => {
            let keys: Vec<String> = KEYS.iter().chain(&SETS).map(|k| k.to_string()).collect();
            Answer::Values(store.mget(&keys, now)?)
        }
        Op::Sadd { set, member, ttl_s } => {
            Answer::Bool(store.sadd_with_expiry(SETS[set], MEMBERS[member], ttl_s * 1000, now)?)
        }
        Op::SunionCount => {
            let sets: Vec<String> = SETS.iter().map(|k| k.to_string()).collect();
            Answer::Count(store.sunion_count(&sets, now)?)
        }
        Op::Gcra { interval_s, burst } => {
            Answer::Wait(store.gcra_reserve("g", interval_s * 1_000_000_000, burst, now)?)
        }
        Op::Expire => Answer::Slept,
    })
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn memory_and_redis_stores_answer_the_same_operation_sequences() {
    let Some(redis) = redis() else { return };
    let link = RedisLink::connect(&redis.url).unwrap();
    let config = ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(ops in sequence())| {
        let mut memory = MemoryStore::new();
        let ns = namespace("same");
        let _clean = Cleanup(link.clone(), ns.clone());
        let mut remote = RedisStore::new(link.clone(), &ns, SCALE);
        let mut now = 0u64;
        // Real time since the last `Expire`: a Redis PTTL may be that much (scaled) lower.
        let mut since = Instant::now();
        for op in &ops {
            if let Op::Expire = op {
                std::thread::sleep(Duration::from_millis((EXPIRE_S as f64 / SCALE * 1000.0) as u64));
                now += EXPIRE_S * 1_000_000_000;
                since = Instant::now();
                continue;
            }
            let m = apply(&mut memory, op, now).unwrap();
            let r = apply(&mut remote, op, now).unwrap();
            match (&m, &r) {
                (Answer::Ttl(Ttl::Millis(a)), Answer::Ttl(Ttl::Millis(b))) => {
                    let drift = ((since.elapsed().as_secs_f64() * 1000.0 + 2.0) * SCALE) as u64;
                    prop_assert!(*b <= *a && a - b <= drift, "{op:?}: memory {a} ms, Redis {b} ms");
                }
                _ => prop_assert_eq!(&m, &r, "{:?} after {:?}", op, ops),
            }
        }
    });
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn redis_ttls_are_scaled_to_real_time_and_back() {
    let Some(redis) = redis() else { return };
    let link = RedisLink::connect(&redis.url).unwrap();
    let ns = namespace("scale");
    let _clean = Cleanup(link.clone(), ns.clone());
    let mut s = RedisStore::new(link, &ns, 60.0);
    // A one-second lock at 60× lasts ⌈1000 / 60⌉ = 17 real ms: never less than its interval.
    assert_eq!(s.real_ms(1000), 17);
    assert_eq!(s.virtual_ms(17), 1020);
    assert_eq!(s.real_ms(1), 1);
    assert!(s.set_nx_px("lock", 1, 1000, 0).unwrap());
    assert!(!s.set_nx_px("lock", 1, 1000, 0).unwrap());
    match s.pttl("lock", 0).unwrap() {
        // Redis answers in real ms (≤ 17), seen as virtual ms in steps of 60.
        Ttl::Millis(ms) => assert!(ms <= 1020 && ms % 60 == 0, "{ms}"),
        other => panic!("{other:?}"),
    }
    std::thread::sleep(Duration::from_millis(40));
    assert_eq!(s.pttl("lock", 0).unwrap(), Ttl::Missing);
    assert!(s.set_nx_px("lock", 1, 1000, 0).unwrap());
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn the_window_step_is_atomic_across_connections() {
    let Some(redis) = redis() else { return };
    let ns = namespace("atomic");
    let _clean = Cleanup(RedisLink::connect(&redis.url).unwrap(), ns.clone());
    let reservoir = 5u64;
    let jobs = 40usize;
    // Eight connections (as eight processes would have) race for one window.
    let answers = race(&redis, &ns, 1.0, jobs / 8, |s| {
        s.window_admit("calls:7", 60_000, reservoir, "queued", false, 0)
            .unwrap()
    });
    let runs = answers.iter().filter(|a| **a == WindowAdmit::Run).count();
    assert_eq!(runs, reservoir as usize);
    // The refused jobs joined the waiting count one at a time: 0, 1, 2, … each once.
    let mut waiting: Vec<u64> = answers
        .iter()
        .filter_map(|a| match a {
            WindowAdmit::Wait { waiting } => Some(*waiting),
            WindowAdmit::Run => None,
        })
        .collect();
    waiting.sort_unstable();
    assert_eq!(waiting, (0..(jobs as u64 - reservoir)).collect::<Vec<_>>());
    let mut s = RedisStore::new(RedisLink::connect(&redis.url).unwrap(), &ns, 1.0);
    // The window key got its expiry with its first INCR; the waiting count has none.
    assert!(matches!(s.pttl("calls:7", 0).unwrap(), Ttl::Millis(ms) if ms <= 60_000));
    assert_eq!(
        s.get("queued", 0).unwrap(),
        Some(jobs as i64 - reservoir as i64)
    );
    assert_eq!(s.pttl("queued", 0).unwrap(), Ttl::Persistent);
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn gcra_reservations_across_connections_each_get_their_own_token() {
    let Some(redis) = redis() else { return };
    let ns = namespace("gcra");
    let _clean = Cleanup(RedisLink::connect(&redis.url).unwrap(), ns.clone());
    let interval = 2_000_000_000u64;
    let burst = 3u64;
    // Eight connections (eight processes of `shared-bucket`) reserve at the same virtual time.
    let mut waits = race(&redis, &ns, 60.0, 5, |s| {
        s.gcra_reserve("bucket", interval, burst, 7_000).unwrap()
    });
    waits.sort_unstable();
    // The burst at once, then one token per interval: no two callers share one.
    let mut expected = vec![0; burst as usize];
    expected.extend((1..=(40 - burst)).map(|k| k * interval));
    assert_eq!(waits, expected);
}

/// Eight connections to `redis` (as eight processes would have, each its own store in `ns`
/// at `scale`) call `call` `calls` times each, at once; every answer, connection after
/// connection.
fn race<T: Send>(
    redis: &Redis,
    ns: &str,
    scale: f64,
    calls: usize,
    call: impl Fn(&mut RedisStore) -> T + Sync,
) -> Vec<T> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let call = &call;
                scope.spawn(move || {
                    let mut s = RedisStore::new(RedisLink::connect(&redis.url).unwrap(), ns, scale);
                    (0..calls).map(|_| call(&mut s)).collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

// ---------------------------------------------------------------------------------------------
// Live runs across real processes.

/// Run a scenario live (requests logged); exit code, stderr and the results folder.
fn run_live(scenario: &Path, out: &Path, extra: &[&str], limit: Duration) -> (i32, String) {
    let mut child = Command::new(exe())
        .arg("run")
        .arg(scenario)
        .args(["--quiet", "--no-charts", "--log-requests", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, reader.join().unwrap())
}

/// Run a scenario live with `redis` as its store; it must succeed. Its results folder.
fn run_on_redis(scenario: &Path, out: &Path, redis: &Redis) -> PathBuf {
    let (code, err) = run_live(
        scenario,
        out,
        &["--store", &redis.url],
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    out.to_path_buf()
}

/// `(t, group, process, status)` of every request, in time order.
fn requests(dir: &Path) -> Vec<(f64, String, u64, String)> {
    let mut rdr = csv::Reader::from_path(dir.join("requests.csv")).unwrap();
    let mut out: Vec<_> = rdr
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[0].parse::<f64>().unwrap(),
                r[1].to_string(),
                r[2].parse::<u64>().unwrap(),
                r[4].to_string(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// How many processes sent at least one request.
fn processes(sent: &[(f64, String, u64, String)]) -> usize {
    sent.iter()
        .map(|r| r.2)
        .collect::<std::collections::BTreeSet<u64>>()
        .len()
}

/// The shortest time between two consecutive requests, in seconds.
fn smallest_gap(sent: &[(f64, String, u64, String)]) -> f64 {
    sent.windows(2)
        .map(|w| w[1].0 - w[0].0)
        .fold(f64::INFINITY, f64::min)
}

/// Rebased's Redis interval lock: a minute of virtual time at 3× (20 s real), a server that would
/// take far more, so only the lock spaces the requests.
const LOCK: &str = r#"
name = "lock_redis"
[run]
mode = "live"
duration = "60s"
time_scale = 3.0
sample_every = "10s"
seed = 1
[server]
kind = "gcra"
limit = 100
period = "1s"
latency = "50ms"
"#;

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn the_lock_admits_at_most_one_request_per_interval_across_four_processes() {
    let Some(redis) = redis() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let shared = write(
        tmp.path(),
        "shared.toml",
        &format!(
            "{LOCK}[[clients]]\nname = \"jobs\"\nprocesses = 4\nthreads = 2\nalgorithm = \"interval-lock\"\n"
        ),
    );
    // The control: four processes, each with a lock of its own.
    let mut own = LOCK.to_string();
    for g in ["a", "b", "c", "d"] {
        own.push_str(&format!(
            "[[clients]]\nname = \"{g}\"\nthreads = 2\nalgorithm = \"interval-lock\"\n"
        ));
    }
    let own = write(tmp.path(), "own.toml", &own);
    let store = ["--store", redis.url.as_str()];
    let (shared_out, own_out) = (tmp.path().join("shared"), tmp.path().join("own"));
    let limit = Duration::from_secs(60);
    let ((code, err), (control_code, control_err)) = std::thread::scope(|s| {
        let a = s.spawn(|| run_live(&shared, &shared_out, &store, limit));
        let b = s.spawn(|| run_live(&own, &own_out, &store, limit));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(code, 0, "{err}");
    assert_eq!(control_code, 0, "{control_err}");

    let sent = requests(&shared_out);
    assert_eq!(processes(&sent), 4, "every process got the lock at times");
    assert!(sent.iter().all(|r| r.3 == "ok"));
    // At most one per 1 s interval: consecutive requests an interval apart, less what the
    // clock readings can differ by: Redis counts whole milliseconds, and the worker reads its
    // clock a moment after the lock's SET (about 0.1 real ms; 67 real ms, 0.2 s of virtual
    // time at 3×, are allowed for a loaded machine: at 6× a fresh-clone CI run saw a worker
    // send 36 real ms after its token). Uncoordinated, the gaps are near 0.
    let min_gap = smallest_gap(&sent);
    assert!(min_gap >= 0.8, "two requests {min_gap:.4} s apart");
    assert!(sent.len() <= 61, "{} requests in 60 s", sent.len());
    // The lock let the run work: close to one request per interval.
    assert!(sent.len() >= 45, "only {} requests in 60 s", sent.len());
    let per_second = |reqs: &[(f64, String, u64, String)]| {
        let mut bins = BTreeMap::new();
        for r in reqs {
            *bins.entry(r.0 as u64).or_insert(0u32) += 1;
        }
        bins.into_values().max().unwrap_or(0)
    };
    println!(
        "lock over 4 processes: {} requests in 60 s, smallest gap {min_gap:.4} s, at most {} in a second",
        sent.len(),
        per_second(&sent)
    );
    // Without a shared lock the same check fails: the processes send side by side.
    let control = requests(&own_out);
    let control_gap = smallest_gap(&control);
    assert!(control_gap < 0.5, "{control_gap}");
    assert!(control.len() > 150, "{}", control.len());
    // Nothing of either run is left in Redis.
    assert_eq!(keys_like(&redis, "throttle-sim:run:lock_redis-*"), 0);
}

/// `shared-bucket`: four processes of two threads reserve from one client-side GCRA of 2 per
/// second in Redis, before a server that would take far more.
#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn the_shared_bucket_spaces_every_process_by_the_interval() {
    let Some(redis) = redis() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let file = write(
        tmp.path(),
        "bucket.toml",
        &LOCK.replace("lock_redis", "bucket_redis").replace(
            "[server]",
            "[[clients]]\nname = \"jobs\"\nprocesses = 4\nthreads = 2\n\
             algorithm = \"shared-bucket\"\nlimit = 2\nperiod = \"1s\"\n[server]",
        ),
    );
    let out = run_on_redis(&file, &tmp.path().join("r"), &redis);
    let sent = requests(&out);
    assert_eq!(processes(&sent), 4, "every process got tokens");
    assert!(sent.iter().all(|r| r.3 == "ok"));
    // One token per 0.5 s between them all, less clock-reading noise (as for the lock).
    let min_gap = smallest_gap(&sent);
    assert!(min_gap >= 0.3, "two requests {min_gap:.4} s apart");
    assert!(
        (100..=121).contains(&sent.len()),
        "{} requests in 60 s",
        sent.len()
    );
    assert_eq!(keys_like(&redis, "throttle-sim:run:bucket_redis-*"), 0);
}

/// `aatb`: three processes report to one aggregator in Redis; the run works and the store's
/// slot counts and client sets serve real processes.
#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn aatb_processes_share_one_aggregator_on_redis() {
    let Some(redis) = redis() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let file = write(
        tmp.path(),
        "aatb.toml",
        r#"
name = "aatb_redis"
[run]
mode = "live"
duration = "120s"
time_scale = 12.0
sample_every = "10s"
seed = 5
[server]
kind = "gcra"
limit = 60
period = "1m"
initial = 10
latency = "20ms"
[[clients]]
name = "workers"
processes = 3
threads = 2
algorithm = "aatb"
"#,
    );
    let out = run_on_redis(&file, &tmp.path().join("r"), &redis);
    let s = summary(&out);
    let g = &s["groups"][0];
    // The sim of the same run gives 57-89 successes over seeds 1-20 (78 on ten of them: AATB's
    // halvings land at different times), so a live run is held above the sim's least less a
    // margin for real timing, not above 60, which four of those twenty seeds miss.
    assert!(g["ok"].as_u64().unwrap() >= 45, "{g}");
    // 40/min each from three processes is twice the server's rate: AATB meets 429s and backs
    // off, so the limit holds without a flood of them.
    assert!(g["ratio_429"].as_f64().unwrap() < 0.5, "{g}");
    assert_eq!(keys_like(&redis, "throttle-sim:run:aatb_redis-*"), 0);
}

/// Keys matching `pattern` (one SCAN sweep).
fn keys_like(redis: &Redis, pattern: &str) -> u64 {
    let link = RedisLink::connect(&redis.url).unwrap();
    let pattern = pattern.to_string();
    link.call_blocking(move |mut c| async move {
        let mut cursor = 0u64;
        let mut n = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut c)
                .await?;
            n += keys.len() as u64;
            if next == 0 {
                return Ok(n);
            }
            cursor = next;
        }
    })
    .unwrap()
}

/// The Discord job queue's fixed window: four processes of two threads share a reservoir of 2
/// per 1 s window, for a minute of virtual time at 3× (a send late by a loaded machine's tens of
/// real milliseconds stays in its window, as for the lock; one held up for a third of a real
/// second lands in the next, see the test).
const QUEUE: &str = r#"
name = "queue_redis"
[run]
mode = "live"
duration = "60s"
time_scale = 3.0
sample_every = "10s"
seed = 2
[server]
kind = "gcra"
limit = 100
period = "1s"
latency = "50ms"
[[clients]]
name = "guild"
processes = 4
threads = 2
algorithm = "window-queue"
reservoir = 2
window = "1s"
"#;

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn the_window_queue_never_lets_more_than_the_reservoir_through_per_window() {
    let Some(redis) = redis() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "queue.toml", QUEUE);
    let out = run_on_redis(&file, &tmp.path().join("r"), &redis);
    let sent = requests(&out);
    let mut per_window: BTreeMap<u64, u32> = BTreeMap::new();
    for r in &sent {
        *per_window.entry(r.0 as u64).or_insert(0) += 1;
    }
    let busiest = per_window.values().copied().max().unwrap();
    println!(
        "window queue over 4 processes: {} requests in {} windows, at most {busiest} in one",
        sent.len(),
        per_window.len()
    );
    // The reservoir lets 2 through per window. `t` is when the request left, after its grant: a
    // process the machine held up for a third of a real second (a virtual second at 3×) sends
    // its window's grant in the next window (a CI run saw 0 then 3, twice). A late send only
    // moves a request later, so by the end of every window no more than 2 per window so far
    // have gone, and one window may hold a late third.
    let mut so_far = 0;
    for (&w, &n) in &per_window {
        so_far += n;
        assert!(
            so_far as u64 <= 2 * (w + 1),
            "{so_far} by window {w}: {per_window:?}"
        );
    }
    assert!(busiest <= 3, "{per_window:?}");
    // The reservoir was used: about two per window over the minute, by every process.
    assert!(sent.len() >= 100, "only {} requests", sent.len());
    assert_eq!(processes(&sent), 4);
    let s = summary(&out);
    assert_eq!(s["partial"], false);
    assert!(s["processes"][0]["backoffs"].as_u64().unwrap() > 0, "{s}");
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn a_redis_that_goes_away_mid_run_stops_it_with_a_partial_summary() {
    let Some(mut redis) = own_redis() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "queue.toml", QUEUE);
    let out = tmp.path().join("r");
    let url = redis.url.clone();
    let (code, err) = std::thread::scope(|s| {
        let run = s.spawn(|| {
            run_live(
                &file,
                &out,
                &["--store", &url, "--duration", "1h"],
                Duration::from_secs(60),
            )
        });
        // Let it run a while, then take Redis away.
        std::thread::sleep(Duration::from_secs(3));
        redis.stop();
        run.join().unwrap()
    });
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains(&format!("error: the store at {url} failed")),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["partial"], true);
    let reason = s["partial_reason"].as_str().unwrap();
    assert!(reason.contains(&url), "{reason}");
    assert_eq!(s["failure"].as_str(), Some(reason));
    let covered = s["duration_s"].as_f64().unwrap();
    assert!((5.0..200.0).contains(&covered), "covered {covered} s");
    assert!(s["requests"].as_u64().unwrap() > 0);
}

#[test]
fn an_unreachable_store_is_named_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "queue.toml", QUEUE);
    let url = format!("redis://127.0.0.1:{}", free_port());
    let (code, err) = run_live(
        &file,
        &tmp.path().join("r"),
        &["--store", &url],
        Duration::from_secs(30),
    );
    // The store the user named is tried before anything runs: bad input, not a failed run.
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "store.url: the store at {url} failed: cannot reach it"
        )),
        "{err}"
    );
    let (code, err) = run_live(
        &file,
        &tmp.path().join("r2"),
        &["--store", "http://127.0.0.1:6379"],
        Duration::from_secs(30),
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("store.url: `http://127.0.0.1:6379`: unknown scheme"),
        "{err}"
    );
}

#[test]
fn a_live_run_that_needs_a_store_and_has_none_is_refused_with_the_way_to_give_it_one() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "queue.toml", QUEUE);
    let (code, err) = run_live(&file, &tmp.path().join("r"), &[], Duration::from_secs(30));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("clients[0].algorithm: window-queue coordinates its 4 processes"),
        "{err}"
    );
    assert!(err.contains("--store redis://"), "{err}");
    // `client` says the same, with the same way out.
    let out = Command::new(exe())
        .args([
            "client",
            "--target",
            "http://127.0.0.1:1/",
            "--algorithm",
            "interval-lock",
        ])
        .args(["--processes", "2", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("interval-lock coordinates its 2 processes"),
        "{err}"
    );
    assert!(err.contains("--store redis://"), "{err}");
    // The same scenario in sim mode needs no Redis.
    let (code, err) = run_live(
        &file,
        &tmp.path().join("sim"),
        &["--mode", "sim"],
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
}

// ---------------------------------------------------------------------------------------------
// One limit shared by several `serve` instances.

/// Requests on one keep-alive connection until `until`: (2xx, 429, 503) counts.
fn hammer(addr: &str, until: Instant) -> (u64, u64, u64) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let request = format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let (mut ok, mut limited, mut unavailable) = (0, 0, 0);
    while Instant::now() < until {
        s.write_all(request.as_bytes()).unwrap();
        let mut status_line = String::new();
        reader.read_line(&mut status_line).unwrap();
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h == "\r\n" || h.is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        match status_line.split(' ').nth(1) {
            Some("200") => ok += 1,
            Some("429") => limited += 1,
            Some("503") => unavailable += 1,
            other => panic!("unexpected status {other:?}"),
        }
    }
    (ok, limited, unavailable)
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn two_serve_instances_together_admit_no_more_than_one_limit() {
    let Some(redis) = redis() else { return };
    let ns = namespace("two").replace(':', "_");
    let _clean = Cleanup(
        RedisLink::connect(&redis.url).unwrap(),
        format!("throttle-sim:serve:{ns}:"),
    );
    let args = [
        "--limit",
        "40",
        "--period",
        "1s",
        "--store",
        &redis.url,
        "--store-namespace",
        &ns,
    ];
    let (_a, addr_a) = serve(&args);
    let (_b, addr_b) = serve(&args);
    let started = Instant::now();
    let until = started + Duration::from_secs(2);
    let counts: Vec<(u64, u64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = [&addr_a, &addr_a, &addr_a, &addr_b, &addr_b, &addr_b]
            .into_iter()
            .map(|addr| s.spawn(move || hammer(addr, until)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let admitted_a: u64 = counts[..3].iter().map(|c| c.0).sum();
    let admitted_b: u64 = counts[3..].iter().map(|c| c.0).sum();
    let refused: u64 = counts.iter().map(|c| c.1).sum();
    assert!(counts.iter().all(|c| c.2 == 0), "{counts:?}");
    // The bucket starts full (40) and earns 40 per second.
    let limit = 40.0 + 40.0 * elapsed;
    let total = admitted_a + admitted_b;
    println!(
        "two instances: {admitted_a} + {admitted_b} = {total} admitted in {elapsed:.2} s \
         (one limit: {limit:.1}), {refused} refused"
    );
    assert!(total as f64 <= limit, "{total} > {limit:.1}");
    // Each alone would have admitted about the limit: together they used it, no more.
    assert!(total as f64 >= 0.85 * limit, "{total} of {limit:.1}");
    assert!(admitted_a > 0 && admitted_b > 0);
    assert!(refused > total, "the clients pushed past the limit");
}

/// Status and lower-cased head of one request on a fresh connection.
fn get(addr: &str) -> (u16, String) {
    common::http_get(addr, "/", "", Duration::from_secs(10))
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(|v| v.trim().to_string())
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn the_shared_bucket_answers_as_one_serve_would_and_a_later_instance_joins_it() {
    let Some(redis) = redis() else { return };
    let ns = namespace("join").replace(':', "_");
    let other_ns = format!("{ns}-other");
    let link = RedisLink::connect(&redis.url).unwrap();
    let _clean =
        [&ns, &other_ns].map(|n| Cleanup(link.clone(), format!("throttle-sim:serve:{n}:")));
    let rule = ["--limit", "10", "--period", "1h", "--initial", "3"];
    let (_local, local) = serve(&rule);
    let mut shared_args = rule.to_vec();
    shared_args.extend(["--store", &redis.url, "--store-namespace", &ns]);
    let (_a, a) = serve(&shared_args);
    // Three tokens to start, one more every 6 minutes: the same answers, headers included.
    for expected in ["2", "1", "0"] {
        let (l, r) = (get(&local), get(&a));
        assert_eq!((l.0, r.0), (200, 200));
        assert_eq!(
            header(&r.1, "ratelimit-remaining").as_deref(),
            Some(expected)
        );
        assert_eq!(
            header(&l.1, "ratelimit-remaining").as_deref(),
            Some(expected)
        );
    }
    let (l, r) = (get(&local), get(&a));
    assert_eq!((l.0, r.0), (429, 429));
    assert_eq!(header(&r.1, "retry-after"), header(&l.1, "retry-after"));
    assert_eq!(header(&r.1, "retry-after").as_deref(), Some("360"));
    // An instance started now shares the drained bucket instead of starting its own.
    let (_b, b) = serve(&shared_args);
    assert_eq!(get(&b).0, 429);
    // Another namespace is another limit.
    let mut other = rule.to_vec();
    other.extend(["--store", &redis.url, "--store-namespace", &other_ns]);
    let (_c, c) = serve(&other);
    assert_eq!(get(&c).0, 200);
}

#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn serve_answers_503_while_redis_is_away_and_recovers_when_it_is_back() {
    let Some(mut redis) = own_redis() else { return };
    let (_s, addr) = serve(&[
        "--limit",
        "1000",
        "--period",
        "1s",
        "--store",
        &redis.url.clone(),
    ]);
    let one = |addr: &str| get(addr).0;
    assert_eq!(one(&addr), 200);
    redis.stop();
    let asked = Instant::now();
    assert_eq!(one(&addr), 503);
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    // The same port again: the connection comes back by itself.
    let server = start_server_on(redis.port).expect("restart redis-server");
    redis.server = Some(server);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if one(&addr) == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "serve did not recover");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn serve_refuses_a_store_for_kinds_it_cannot_share_and_names_an_unreachable_one() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(
        tmp.path(),
        "fw.toml",
        "[server]\nkind = \"fixed-window\"\n[[clients]]\nname = \"a\"\n",
    );
    let out = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0", "--scenario"])
        .arg(&file)
        .args(["--store", "redis://127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--store: only the gcra server kind keeps its state in Redis, not fixed-window"
        ),
        "{err}"
    );
    let url = format!("redis://127.0.0.1:{}", free_port());
    let out = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0", "--store", &url])
        .output()
        .unwrap();
    // Bad input, as `run`'s `store.url` is: exit 2 from both commands (serve once said 3
    // where run said 2).
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("the store at {url} failed: cannot reach it")),
        "{err}"
    );
}

/// `run --store redis://:PW@…` wrote the password into the results' `scenario.toml`, and
/// `serve --store` printed it in its first line. The run still authenticates with it; nothing
/// it writes or prints holds it.
#[test]
#[ignore = "needs redis-server: install it (apt-get install redis-server) or set THROTTLE_SIM_TEST_REDIS, then cargo test --test live -- --ignored redis::"]
fn redis_a_store_password_is_never_written_or_shown() {
    const PW: &str = "S3CRETpw";
    let port = free_port();
    let server = match start_server_with(port, &["--requirepass", PW]) {
        Ok(child) => child,
        Err(e) => {
            skip_or_fail(&e);
            return;
        }
    };
    let _redis = Redis {
        url: String::new(),
        port,
        server: Some(server),
    };
    let url = format!("redis://:{PW}@127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/shared_redis.toml");
    let out = tmp.path().join("r");
    let (code, err) = run_live(
        &scenario,
        &out,
        &["--store", &url, "--duration", "20s"],
        Duration::from_secs(60),
    );
    // Exit 1 is an [expect] range missed: the scenario's 3 % of 429s is one 429 in a run this
    // short, which live timing gives now and then (its subject is the lock, not this test's).
    // A run that could not reach Redis exits 3 or 4.
    assert!(
        code == 0 || code == 1,
        "the run must reach Redis with the password (exit {code}): {err}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(summary["ok"].as_u64() > Some(0), "{summary}");
    assert!(!err.contains(PW), "{err}");
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains(PW), "{} holds the password", path.display());
        }
    }
    let written = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(
        written.contains(&format!("redis://***@127.0.0.1:{port}")),
        "{written}"
    );

    let mut child = Command::new(exe())
        .args(["serve", "--addr", "127.0.0.1:0", "--store", &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _serve = Running(child);
    assert!(line.starts_with("listening on"), "{line}");
    assert!(!line.contains(PW), "{line}");
    assert!(
        line.contains(&format!("redis://***@127.0.0.1:{port}")),
        "{line}"
    );
}
