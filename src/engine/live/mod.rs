//! The live engine: a real hyper server on loopback and real OS processes of tokio client tasks,
//! on a scaled clock, calling the same `Throttle` and `Limiter` code as the sim and writing the
//! same files through the same `Recorder`.
//!
//! The parent (this module) starts the server in-process on an ephemeral port (or points at an
//! external target), re-executes its own binary once per client process (`throttle-sim worker`,
//! hidden), hands each its spec, starts them all on one clock origin, and records the events
//! they stream back. Sampling ticks are written when their time has passed (plus a grace for
//! answers still on the wire), so `series.csv` has the sim's rows: one per thread per tick.

pub mod client;
pub mod clock;
pub mod headers;
pub mod protocol;
pub mod server;
pub mod worker;

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};

pub use clock::ScaledClock;

use self::protocol::{Command, Event, WorkerSpec};
use self::server::{ServerSettings, ServerState};
use super::Control;
use crate::limiter::Latency;
use crate::record::{DeadWorker, FinishContext, Recorder, RequestRecord, Summary};
use crate::scenario::Layout;
use crate::scenario::Scenario;
use crate::store::RedisLink;
use crate::time::Nanos;

/// Where the clients send their requests.
#[derive(Clone, Debug)]
pub enum Target {
    /// The scenario's server, started in this process on a free loopback port.
    InProcess,
    /// Any HTTP endpoint, with extra headers (`Authorization`, …).
    External {
        url: String,
        headers: Vec<(String, String)>,
    },
}

#[derive(Clone, Debug)]
pub struct LiveConfig {
    pub target: Target,
    /// How long one request may take (real time) before it counts as an error.
    pub request_timeout: Duration,
    /// The binary to re-execute as workers (this one).
    pub worker_exe: PathBuf,
    /// How long workers get to start, and to finish after the end or a stop.
    pub startup_timeout: Duration,
}

impl LiveConfig {
    pub fn new(target: Target) -> std::io::Result<Self> {
        Ok(LiveConfig {
            target,
            request_timeout: Duration::from_secs(10),
            worker_exe: std::env::current_exe()?,
            startup_timeout: Duration::from_secs(30),
        })
    }
}

/// Raise this process's open-file limit to its hard limit: a server with thousands of
/// connections, or a worker with a thousand, needs more than the usual soft 1024.
pub fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// What a reader task passes on from one worker's stdout.
enum Msg {
    Event(Event),
    /// The stream ended (the worker exited or closed stdout).
    Closed,
    /// A line that is not an event (a worker bug); reported, not fatal.
    Garbled(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WorkerState {
    Starting,
    Running,
    Done,
    Dead,
}

struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
    state: WorkerState,
    died_at: Nanos,
}

/// Run `scenario` live, streaming rows to `series` (and `requests`).
pub fn run<W: Write, R: Write>(
    scenario: &Scenario,
    series: W,
    requests: Option<R>,
    cfg: &LiveConfig,
    control: Control<'_>,
) -> std::io::Result<Summary> {
    raise_fd_limit();
    let layout = Layout::new(scenario);
    let scale = scenario.run.time_scale;
    let duration = layout.duration;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let _guard = rt.enter();

    let (listener, url, headers, in_process) = match &cfg.target {
        Target::InProcess => {
            let (listener, addr) = rt.block_on(server::bind(([127, 0, 0, 1], 0).into()))?;
            (Some(listener), format!("http://{addr}/"), Vec::new(), true)
        }
        Target::External { url, headers } => (None, url.clone(), headers.clone(), false),
    };
    let rate_per_sec = if in_process {
        scenario.server.limiter.build().rate_per_sec()
    } else {
        0.0
    };

    // Shared state in Redis: reachable now (or the run does not start), under a namespace
    // of this run only, removed at the end.
    let store = match &scenario.store.url {
        Some(url) => {
            let link = RedisLink::connect(url).map_err(|e| std::io::Error::other(e.to_string()))?;
            Some((link, run_namespace(&scenario.name)))
        }
        None => None,
    };
    let resolved = scenario.to_toml();
    let (tx, rx) = mpsc::channel::<(usize, Msg)>();
    let mut workers = Vec::with_capacity(layout.processes.len());
    for (pi, p) in layout.processes.iter().enumerate() {
        let spec = WorkerSpec {
            scenario: resolved.clone(),
            group: p.group,
            process: p.index,
            target: url.clone(),
            headers: headers.clone(),
            send_key: in_process,
            send_client_id: in_process,
            timeout_ms: cfg.request_timeout.as_millis() as u64,
            rate_per_sec,
            store_namespace: store.as_ref().map(|(_, ns)| ns.clone()),
        };
        let mut child = tokio::process::Command::new(&cfg.worker_exe)
            .arg("worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("starting worker {}: {e}", cfg.worker_exe.display()),
                )
            })?;
        let pid = child.id().unwrap_or(0);
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stdin = child.stdin.take();
        rt.spawn(read_events(pi, stdout, tx.clone()));
        if let Some(s) = &mut stdin {
            let _ = rt.block_on(send(s, &Command::Start(Box::new(spec))));
        }
        workers.push(Worker {
            child,
            stdin,
            pid,
            state: WorkerState::Starting,
            died_at: 0,
        });
    }
    drop(tx);

    let mut sleeps = vec![0.0; layout.processes.len()];
    let mut backoffs = vec![0u64; layout.processes.len()];
    let mut garbled = 0usize;

    // Every worker builds its throttle and says ready; only then does the clock start, so
    // slow process start-up does not eat into the run.
    let ready_by = Instant::now() + cfg.startup_timeout;
    while workers.iter().any(|w| w.state == WorkerState::Starting) {
        let left = ready_by.saturating_duration_since(Instant::now());
        let failure = match rx.recv_timeout(left.min(Duration::from_millis(50))) {
            Ok((w, Msg::Event(Event::Ready { sleep, backoffs: b }))) => {
                workers[w].state = WorkerState::Running;
                sleeps[w] = sleep;
                backoffs[w] = b;
                None
            }
            Ok((w, Msg::Closed)) => Some(format!(
                "worker {} exited before it started",
                worker_name(&layout, w)
            )),
            Ok(_) => None,
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                Some("workers did not start in time".to_string())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some("every worker exited".to_string()),
        };
        if control.interrupt.load(std::sync::atomic::Ordering::Relaxed) && failure.is_none() {
            stop_all(&rt, &mut workers);
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted before the run started",
            ));
        }
        if let Some(f) = failure {
            stop_all(&rt, &mut workers);
            return Err(std::io::Error::other(f));
        }
    }

    let clock = ScaledClock::starting_now(scale);
    let (server_stop, server_task) = match listener {
        Some(listener) => {
            let mut settings = ServerSettings::new(
                scenario.server.limiter.clone(),
                scenario.server.latency.clone(),
                scenario.run.seed(),
            );
            settings.keys = layout.keys.clone();
            settings.faults = scenario.server.faults.clone();
            // Clients may sleep long between requests; keep-alive connections stay open.
            settings.header_read_timeout = Duration::from_secs(600);
            let state = ServerState::new(settings, clock);
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let task = rt.spawn(server::serve(listener, state.clone(), async {
                let _ = stop_rx.await;
            }));
            (Some((stop_tx, state)), Some(task))
        }
        None => (None, None),
    };
    let go = Command::Go {
        origin_unix_nanos: clock.unix_origin(),
    };
    for w in &mut workers {
        if let Some(s) = &mut w.stdin {
            let _ = rt.block_on(send(s, &go));
        }
    }

    let mut rec = Recorder::new(&layout, scenario.run.sample_every.nanos(), series, requests)?
        .with_peak_window(scenario.run.peak_window.map(|w| w.nanos()));
    // Answers sent just before a tick may still be on their way when it falls due.
    let grace =
        Duration::from_millis(100) + clock.to_real(typical_latency(&scenario.server.latency)) * 3;
    let end_by = clock.instant_at(duration) + cfg.request_timeout + cfg.startup_timeout;
    let mut interrupted_at: Option<Nanos> = None;
    // The first store failure a worker reported: the run stops there.
    let mut failure: Option<String> = None;
    let mut stop_by: Option<Instant> = None;
    let mut last_tick: Option<Nanos> = None;
    let every = scenario.run.sample_every.nanos();
    // The last row of a group that leaves early waits until its workers are done: an answer
    // arriving after that row would be counted in the summary but in no row.
    let settled = |t: Nanos, workers: &[Worker]| {
        layout.groups.iter().all(|g| {
            let last_row = g.stop < duration && t >= g.stop && t.saturating_sub(every) < g.stop;
            !last_row
                || g.processes
                    .clone()
                    .all(|p| matches!(workers[p].state, WorkerState::Done | WorkerState::Dead))
        })
    };

    loop {
        if workers
            .iter()
            .all(|w| matches!(w.state, WorkerState::Done | WorkerState::Dead))
        {
            break;
        }
        let wait = rec
            .next_tick()
            .map_or(Duration::from_millis(50), |t| {
                (clock.instant_at(t) + grace).saturating_duration_since(Instant::now())
            })
            .min(Duration::from_millis(50));
        match rx.recv_timeout(wait) {
            Ok((w, Msg::Event(ev))) => {
                let first = layout.processes[w].threads.start;
                let threads = layout.processes[w].threads.len();
                let thread = |th: u32| (th as usize) < threads;
                match ev {
                    Event::Request(r) if thread(r.th) => {
                        let i = first + r.th as usize;
                        while let Some(t) = rec
                            .next_tick()
                            .filter(|&t| t < r.t && t < duration && settled(t, &workers))
                        {
                            rec.tick(t, &sleeps)?;
                            last_tick = Some(t);
                            (control.progress)(t);
                        }
                        rec.record_request(&RequestRecord {
                            thread: i,
                            sent_at: r.t,
                            response: r.response,
                            waited: r.waited,
                        })?;
                        if let Some(wait) = r.job_wait {
                            rec.record_success(i, wait);
                        }
                        if r.finished {
                            rec.record_finished(i, r.t.saturating_add(r.response.latency));
                        }
                        sleeps[w] = r.sleep;
                        backoffs[w] = r.backoffs;
                    }
                    Event::Delay { th, d } if thread(th) => {
                        rec.record_delay(first + th as usize, d)
                    }
                    Event::GiveUp { th } if thread(th) => rec.record_give_up(first + th as usize),
                    Event::Sleep { value, backoffs: b } => {
                        sleeps[w] = value;
                        backoffs[w] = b;
                    }
                    Event::Failed { message } => {
                        failure.get_or_insert(message);
                    }
                    Event::Done { sleep, backoffs: b } => {
                        sleeps[w] = sleep;
                        backoffs[w] = b;
                        workers[w].state = WorkerState::Done;
                    }
                    _ => garbled += 1,
                }
            }
            Ok((w, Msg::Closed)) => {
                if workers[w].state != WorkerState::Done {
                    workers[w].state = WorkerState::Dead;
                    workers[w].died_at = clock.now().min(duration);
                }
            }
            Ok((_, Msg::Garbled(line))) => {
                garbled += 1;
                if garbled <= 3 {
                    eprintln!("warning: a worker wrote a line that is not an event: {line:?}");
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                for w in &mut workers {
                    if w.state != WorkerState::Done {
                        w.state = WorkerState::Dead;
                        w.died_at = clock.now().min(duration);
                    }
                }
                break;
            }
        }
        // Ticks whose time (and grace) has passed; the one at the end waits for the last
        // answers, so the rows always add up to the totals.
        if interrupted_at.is_none() {
            while let Some(t) = rec.next_tick().filter(|&t| {
                t < duration
                    && clock.instant_at(t) + grace <= Instant::now()
                    && settled(t, &workers)
            }) {
                rec.tick(t, &sleeps)?;
                last_tick = Some(t);
                (control.progress)(t);
            }
        }
        if interrupted_at.is_none()
            && (failure.is_some() || control.interrupt.load(std::sync::atomic::Ordering::Relaxed))
        {
            interrupted_at = Some(clock.now().min(duration));
            stop_by = Some(Instant::now() + Duration::from_secs(5));
            for w in &mut workers {
                if let Some(s) = &mut w.stdin {
                    let _ = rt.block_on(send(s, &Command::Stop));
                }
            }
        }
        let overdue = stop_by.unwrap_or(end_by);
        if Instant::now() > overdue {
            for w in &mut workers {
                if matches!(w.state, WorkerState::Running | WorkerState::Starting) {
                    w.state = WorkerState::Dead;
                    w.died_at = clock.now().min(duration);
                }
            }
            break;
        }
    }

    let end = interrupted_at.unwrap_or(duration);
    match interrupted_at {
        Some(at) => {
            if last_tick.is_none_or(|t| t < at) {
                rec.tick(at, &sleeps)?;
            }
        }
        None => {
            while let Some(t) = rec.next_tick() {
                rec.tick(t, &sleeps)?;
            }
        }
    }
    (control.progress)(end);

    // Let every worker go: close its stdin, give it a moment, then kill what is left.
    let mut dead = Vec::new();
    for (pi, w) in workers.iter_mut().enumerate() {
        w.stdin = None;
        let status = rt.block_on(async {
            match tokio::time::timeout(Duration::from_secs(5), w.child.wait()).await {
                Ok(s) => s.ok(),
                Err(_) => {
                    let _ = w.child.start_kill();
                    w.child.wait().await.ok()
                }
            }
        });
        if w.state == WorkerState::Dead {
            let p = &layout.processes[pi];
            dead.push(DeadWorker {
                group: layout.groups[p.group].name.clone(),
                process: p.index,
                pid: w.pid,
                at_s: crate::time::secs(w.died_at),
                reason: describe_exit(status),
            });
        }
    }

    let capacity = match server_stop {
        Some((stop, state)) => {
            let _ = stop.send(());
            if let Some(task) = server_task {
                let _ =
                    rt.block_on(async { tokio::time::timeout(Duration::from_secs(6), task).await });
            }
            state.capacity(end)
        }
        // An external API's capacity is not known.
        None => 0.0,
    };
    let processes: Vec<(f64, u64)> = sleeps
        .iter()
        .copied()
        .zip(backoffs.iter().copied())
        .collect();
    if let Some((link, namespace)) = &store
        && let Err(e) = link.delete_prefixed(namespace)
        && failure.is_none()
    {
        eprintln!("warning: could not remove the run's keys ({namespace}*): {e}");
    }
    let partial_reason = match (&failure, interrupted_at) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(_)) => Some("interrupted".to_string()),
        (None, None) => None,
    };
    let mut summary = rec.finish(
        end,
        FinishContext {
            scenario: &scenario.name,
            seed: scenario.run.seed(),
            mode: "live",
            partial: interrupted_at.is_some(),
            partial_reason,
            processes: &processes,
            capacity_per_key: capacity,
        },
    )?;
    summary.dead_workers = dead;
    summary.failure = failure;
    Ok(summary)
}

/// A key prefix no other run shares: the scenario's name, the time, this process's id and a
/// count of its runs (`compare` runs several at once).
fn run_namespace(scenario: &str) -> String {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!(
        "throttle-sim:run:{}-{ms}-{}-{}:",
        crate::store::key_segment(scenario),
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// A latency worth waiting for before a tick is written: the fixed value or the median.
fn typical_latency(l: &Latency) -> Nanos {
    match l {
        Latency::Fixed(d) => d.nanos(),
        Latency::LogNormal { median, .. } => median.nanos(),
    }
}

fn worker_name(layout: &Layout, process: usize) -> String {
    let p = &layout.processes[process];
    format!("{}/{}", layout.groups[p.group].name, p.index)
}

fn describe_exit(status: Option<std::process::ExitStatus>) -> String {
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    match status {
        None => "no exit status".to_string(),
        #[cfg(unix)]
        Some(s) if s.signal().is_some() => {
            format!("killed by signal {}", s.signal().unwrap_or_default())
        }
        Some(s) => match s.code() {
            Some(0) => "ended without reporting done".to_string(),
            Some(c) => format!("exited with code {c}"),
            None => "ended".to_string(),
        },
    }
}

async fn send(stdin: &mut ChildStdin, cmd: &Command) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(cmd).expect("commands serialize");
    line.push(b'\n');
    stdin.write_all(&line).await?;
    stdin.flush().await
}

fn stop_all(rt: &tokio::runtime::Runtime, workers: &mut [Worker]) {
    for w in workers {
        w.stdin = None;
        let _ = w.child.start_kill();
        let _ = rt
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), w.child.wait()).await });
    }
}

async fn read_events(
    worker: usize,
    stdout: tokio::process::ChildStdout,
    tx: mpsc::Sender<(usize, Msg)>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let msg = match serde_json::from_str::<Event>(&line) {
            Ok(ev) => Msg::Event(ev),
            Err(_) => Msg::Garbled(line),
        };
        if tx.send((worker, msg)).is_err() {
            return;
        }
    }
    let _ = tx.send((worker, Msg::Closed));
}
