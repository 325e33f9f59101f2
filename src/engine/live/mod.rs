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
mod pacing;
pub mod protocol;
pub mod server;
mod shared_gcra;
pub mod timer;
pub mod tls;
pub mod worker;
mod workers;

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use clock::ScaledClock;
pub use shared_gcra::SharedGcra;

use self::pacing::TickPacing;
use self::protocol::{Command, Event, WorkerSpec};
use self::server::{ServerSettings, ServerState};
use self::workers::{Msg, WorkerState, Workers};
use super::{Control, EngineError};
use crate::limiter::Latency;
use crate::record::{FinishContext, Recorder, RequestRecord, RunMode, Summary};
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
    /// A CA file (PEM) trusted beside the usual roots for an `https://` target.
    pub ca_file: Option<PathBuf>,
}

impl LiveConfig {
    pub fn new(target: Target) -> std::io::Result<Self> {
        Ok(LiveConfig {
            target,
            request_timeout: Duration::from_secs(10),
            worker_exe: std::env::current_exe()?,
            startup_timeout: Duration::from_secs(30),
            ca_file: None,
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

/// Run `scenario` live, streaming rows to `series` (and `requests`).
pub fn run<W: Write, R: Write>(
    scenario: &Scenario,
    series: W,
    requests: Option<R>,
    cfg: &LiveConfig,
    control: Control<'_>,
) -> Result<Summary, EngineError> {
    raise_fd_limit();
    let layout = Layout::new(scenario);
    let scale = scenario.run.time_scale;
    let duration = layout.duration;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| EngineError::Setup {
            what: "starting the async runtime",
            source,
        })?;
    let _guard = rt.enter();

    let (listener, url, headers, in_process) = match &cfg.target {
        Target::InProcess => {
            let (listener, addr) = rt
                .block_on(server::bind(([127, 0, 0, 1], 0).into()))
                .map_err(|source| EngineError::Setup {
                    what: "opening the server's socket on 127.0.0.1",
                    source,
                })?;
            (Some(listener), format!("http://{addr}/"), Vec::new(), true)
        }
        Target::External { url, headers } => (None, url.clone(), headers.clone(), false),
    };
    let timing_warning = in_process
        .then(|| timing_warning(&scenario.server.latency, ScaledClock::starting_now(scale)))
        .flatten();
    if let Some(w) = &timing_warning {
        eprintln!("warning: {w}");
    }
    let rate_per_sec = if in_process {
        scenario.server.limiter.build().rate_per_sec()
    } else {
        0.0
    };

    // Shared state in Redis: reachable now (or the run does not start), under a namespace
    // of this run only, removed at the end.
    let store = match &scenario.store.url {
        Some(url) => {
            let link = RedisLink::connect(url)?;
            Some((link, run_namespace(&scenario.name)))
        }
        None => None,
    };
    let resolved = scenario.to_toml();
    let specs = layout.processes.iter().map(|p| WorkerSpec {
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
        ca_file: cfg.ca_file.clone(),
    });
    let mut workers = Workers::spawn(&rt, &cfg.worker_exe, specs)?;

    let mut sleeps = vec![0.0; layout.processes.len()];
    let mut backoffs = vec![0u64; layout.processes.len()];
    let mut garbled = 0usize;

    // Every worker builds its throttle and says ready; only then does the clock start, so
    // slow process start-up does not eat into the run.
    workers.wait_ready(
        &rt,
        &layout,
        cfg.startup_timeout,
        control.interrupt,
        &mut sleeps,
        &mut backoffs,
    )?;

    let clock = ScaledClock::starting_now(scale);
    let server = listener.map(|l| start_server(&rt, l, scenario, &layout, clock));
    workers.send_all(
        &rt,
        &Command::Go {
            origin_unix_nanos: clock.unix_origin(),
        },
    );

    let mut rec = Recorder::new(&layout, scenario.run.sample_every.nanos(), series, requests)?
        .with_peak_window(scenario.run.peak_window.map(|w| w.nanos()))
        .with_fairness_window(scenario.run.fairness_window.nanos())
        .with_series_level(scenario.run.series);
    let pacing = TickPacing {
        layout: &layout,
        clock,
        // Answers sent just before a tick may still be on their way when it falls due.
        grace: Duration::from_millis(100)
            + clock.to_real(typical_latency(&scenario.server.latency)) * 3,
        every: scenario.run.sample_every.nanos(),
    };
    let end_by = clock.instant_at(duration) + cfg.request_timeout + cfg.startup_timeout;
    let mut interrupted_at: Option<Nanos> = None;
    // The first store failure a worker reported: the run stops there.
    let mut failure: Option<String> = None;
    let mut stop_by: Option<Instant> = None;
    // When the last counted 2xx was answered: the server admitted it by then.
    let mut last_ok_answer: Nanos = 0;

    loop {
        if workers.all_ended() {
            break;
        }
        match workers.events.recv_timeout(pacing.wait(&rec)) {
            Ok((w, Msg::Event(ev))) => {
                let first = layout.processes[w].threads.start;
                let threads = layout.processes[w].threads.len();
                let thread = |th: u32| (th as usize) < threads;
                match ev {
                    Event::Request(r) if thread(r.th) => {
                        let i = first + r.th as usize;
                        pacing.rows_before(
                            &mut rec,
                            r.t,
                            &workers.list,
                            &sleeps,
                            control.progress,
                        )?;
                        if r.response.status == crate::exchange::Status::Ok {
                            last_ok_answer =
                                last_ok_answer.max(r.t.saturating_add(r.response.latency));
                        }
                        rec.record_request(&RequestRecord {
                            thread: i,
                            sent_at: r.t,
                            response: r.response,
                            waited: r.waited,
                            failure: r.failure,
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
                        workers.list[w].state = WorkerState::Done;
                    }
                    _ => garbled += 1,
                }
            }
            Ok((w, Msg::Closed)) => workers.list[w].lost(clock.now().min(duration)),
            Ok((_, Msg::Garbled(line))) => {
                garbled += 1;
                if garbled <= 3 {
                    eprintln!("warning: a worker wrote a line that is not an event: {line:?}");
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                for w in &mut workers.list {
                    w.lost(clock.now().min(duration));
                }
                break;
            }
        }
        if interrupted_at.is_none() {
            pacing.rows_due(&mut rec, &workers.list, &sleeps, control.progress)?;
        }
        if interrupted_at.is_none()
            && (failure.is_some() || control.interrupt.load(std::sync::atomic::Ordering::Relaxed))
        {
            interrupted_at = Some(clock.now().min(duration));
            stop_by = Some(Instant::now() + Duration::from_secs(5));
            workers.send_all(&rt, &Command::Stop);
        }
        let overdue = stop_by.unwrap_or(end_by);
        if Instant::now() > overdue {
            for w in &mut workers.list {
                if matches!(w.state, WorkerState::Running | WorkerState::Starting) {
                    w.state = WorkerState::Dead;
                    w.died_at = clock.now().min(duration);
                }
            }
            break;
        }
    }

    let end = interrupted_at.unwrap_or(duration);
    // The rows left are those of time already passed, written as it passed: few, so they
    // are not cut short by a late Ctrl-C.
    let settled = std::sync::atomic::AtomicBool::new(false);
    rec.finish_rows(interrupted_at, &sleeps, &settled)?;
    (control.progress)(end);

    // Let every worker go: close its stdin, give it a moment, then kill what is left.
    let dead = workers.release(&rt, &layout);

    // An overloaded server admits requests sent before the end only after it, with tokens
    // that refilled meanwhile: the capacity counts up to the last 2xx the run counted, or
    // utilization passes 1 (issue 11: 1.096 at 100,000 threads).
    let capacity = match server {
        Some(server) => server.stop(&rt, end.max(last_ok_answer)),
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
            mode: RunMode::Live,
            partial: interrupted_at.is_some(),
            partial_reason,
            processes: &processes,
            capacity_per_key: capacity,
        },
    )?;
    summary.dead_workers = dead;
    summary.failure = failure;
    summary.timing_warning = timing_warning;
    Ok(summary)
}

/// The in-process server of a run against its own scenario.
struct InProcessServer {
    stop: tokio::sync::oneshot::Sender<()>,
    state: ServerState,
    task: tokio::task::JoinHandle<()>,
}

impl InProcessServer {
    /// Stop it, let answers in flight go out, and say what the run's key could have had.
    fn stop(self, rt: &tokio::runtime::Runtime, end: Nanos) -> f64 {
        let _ = self.stop.send(());
        let task = self.task;
        let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(6), task).await });
        self.state.capacity(end)
    }
}

/// Serve the scenario's `[server]` on `listener`, on the run's clock.
fn start_server(
    rt: &tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
    scenario: &Scenario,
    layout: &Layout,
    clock: ScaledClock,
) -> InProcessServer {
    let mut settings = ServerSettings::new(
        scenario.server.limiter.clone(),
        scenario.server.latency.clone(),
        scenario.run.seed(),
    );
    settings.keys = layout.keys.clone();
    settings.faults = scenario.server.faults.clone();
    settings.headers = scenario.server.headers;
    // Clients may sleep long between requests; keep-alive connections stay open.
    settings.header_read_timeout = Duration::from_secs(600);
    let state = ServerState::new(settings, clock);
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = rt.spawn(server::serve(listener, state.clone(), async {
        let _ = stop_rx.await;
    }));
    InProcessServer { stop, state, task }
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

/// Why the scale asks for waits shorter than the machine can time, if it does: the server's
/// typical latency in real time against [`timer::PRECISION`].
fn timing_warning(latency: &Latency, clock: ScaledClock) -> Option<String> {
    let virt = typical_latency(latency);
    let real = clock.to_real(virt);
    (virt > 0 && real < timer::PRECISION).then(|| {
        format!(
            "at time_scale {} the server's latency ({} ms) is {} µs of real time, below the \
             {} µs this machine's timers and loopback resolve; live numbers may differ from \
             the sim's (a lower time_scale avoids it)",
            clock.scale(),
            virt as f64 / 1e6,
            real.as_micros(),
            timer::PRECISION.as_micros()
        )
    })
}

/// A latency worth waiting for before a tick is written: the fixed value, the median or the
/// mean.
fn typical_latency(l: &Latency) -> Nanos {
    match l {
        Latency::Fixed(d) => d.nanos(),
        Latency::LogNormal { median, .. } => median.nanos(),
        Latency::Normal { mean, .. } => mean.nanos(),
    }
}
