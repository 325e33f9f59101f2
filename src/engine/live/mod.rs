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
mod gone;
pub mod headers;
mod pacing;
pub mod protocol;
pub mod server;
pub mod timer;
pub mod tls;
pub mod watch;
pub mod worker;
mod workers;

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use clock::ScaledClock;
pub use server::{SharedGcra, SharedGcraError};
pub use watch::{LiveWatch, StatusText};

use self::gone::TargetWatch;
use self::pacing::TickPacing;
use self::protocol::{Command, Event, RequestEvent, WorkerSpec};
use self::server::{ServerSettings, ServerState};
use self::workers::{Msg, WorkerState, Workers};
use super::{Control, EngineError};
use crate::exchange::{Quota, Status};
use crate::limiter::Latency;
use crate::record::{FinishContext, Recorder, RequestRecord, RunMode, Summary};
use crate::scenario::Layout;
use crate::scenario::Scenario;
use crate::store::RedisLink;
use crate::time::{Nanos, instant_after};

/// Where the clients send their requests.
#[derive(Clone, Debug)]
pub enum Target {
    /// The scenario's server, started in this process on a free loopback port.
    InProcess,
    /// Any HTTP endpoint, with extra headers (`Authorization`, …).
    External {
        url: String,
        headers: Vec<(String, String)>,
        /// The method (GET without one) and the body every request carries.
        method: Option<String>,
        body: Option<protocol::RequestBody>,
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
    /// Told of every answer as it comes in, for the status line on a terminal.
    pub watch: Option<std::sync::Arc<LiveWatch>>,
    /// The external API's quota as the user knows it (`client --quota --period`), in virtual
    /// time: what utilization is measured against when the answers state none.
    pub quota: Option<Quota>,
}

impl LiveConfig {
    pub fn new(target: Target) -> Result<Self, EngineError> {
        Ok(LiveConfig {
            target,
            request_timeout: Duration::from_secs(10),
            worker_exe: std::env::current_exe().map_err(EngineError::OwnBinary)?,
            startup_timeout: Duration::from_secs(30),
            ca_file: None,
            watch: None,
            quota: None,
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

/// Threads of the parent's async runtime: it only relays pipes and runs the in-process
/// server's accept loop; the answering happens on the same two.
const RUNTIME_THREADS: usize = 2;

/// How long workers (and the in-process server's answers in flight) get to finish after
/// being told to stop, before they are killed (or cut off).
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Lines of a worker that are not events shown as warnings; the rest are only counted.
const GARBLED_SHOWN: usize = 3;

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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(RUNTIME_THREADS)
        .enable_all()
        .build()
        .map_err(|source| EngineError::Setup {
            what: "starting the async runtime",
            source,
        })?;
    let _guard = rt.enter();
    let endpoint = Endpoint::open(&rt, &cfg.target)?;
    // Our own server's latency is known: say so when the scale asks too much of the timers.
    let timing_warning = endpoint
        .listener
        .as_ref()
        .and_then(|_| timing_warning(scenario));
    if let Some(w) = &timing_warning {
        crate::progress::warn(&format!("warning: {w}"));
    }
    let store = RunStore::connect(scenario)?;
    let namespace = store.as_ref().map(|s| &s.namespace);
    let raw_headers = requests.is_some();
    let specs = worker_specs(scenario, &layout, cfg, &endpoint, namespace, raw_headers);
    let mut workers = Workers::spawn(&rt, &cfg.worker_exe, specs)?;
    // Every worker builds its throttle and says ready; only then does the clock start, so
    // slow process start-up does not eat into the run.
    let mut sleeps = vec![0.0; layout.processes.len()];
    let mut backoffs = vec![0; layout.processes.len()];
    workers.wait_ready(
        &rt,
        &layout,
        cfg.startup_timeout,
        control.interrupt,
        &mut sleeps,
        &mut backoffs,
    )?;
    let clock = ScaledClock::starting_now(scenario.run.time_scale);
    if let Some(w) = &cfg.watch {
        w.started(clock);
    }
    let server = endpoint
        .listener
        .map(|l| start_server(&rt, l, scenario, &layout, clock));
    workers.send_all(
        &rt,
        &Command::Go {
            origin_unix_nanos: clock.unix_origin(),
        },
    );
    let mut parent = Parent::new(scenario, &layout, series, requests, sleeps, backoffs)?;
    parent.watch = cfg.watch.clone();
    let pacing = TickPacing {
        layout: &layout,
        clock,
        grace: answer_grace(&scenario.server.latency, clock),
        every: scenario.run.sample_every.nanos(),
    };
    let end_by = instant_after(
        clock.instant_at(layout.duration),
        cfg.request_timeout.saturating_add(cfg.startup_timeout),
    );
    parent.follow(&rt, &mut workers, &pacing, end_by, control)?;
    let mut summary = parent.finish(scenario, &rt, &mut workers, server, cfg.quota)?;
    if let Some(store) = store {
        // After a store failure, the run's summary says so already.
        store.clean(summary.failure.is_none());
    }
    summary.timing_warning = timing_warning;
    Ok(summary)
}

/// Shared state in Redis: reachable before the run (or it does not start), under a
/// namespace of this run only, removed at the end.
struct RunStore {
    link: RedisLink,
    namespace: String,
}

impl RunStore {
    fn connect(scenario: &Scenario) -> Result<Option<Self>, EngineError> {
        let Some(url) = &scenario.store.url else {
            return Ok(None);
        };
        Ok(Some(RunStore {
            link: RedisLink::connect(url)?,
            namespace: run_namespace(&scenario.name),
        }))
    }

    /// Remove the run's keys; `warn` when that fails.
    fn clean(self, warn: bool) {
        if let Err(e) = self.link.delete_prefixed(&self.namespace)
            && warn
        {
            let namespace = &self.namespace;
            crate::progress::warn(&format!(
                "warning: could not remove the run's keys ({namespace}*): {e}"
            ));
        }
    }
}

/// Where the workers send: the in-process server's socket (bound before the workers start,
/// so its address can be in their specs) or an external URL with its extra headers.
struct Endpoint {
    listener: Option<tokio::net::TcpListener>,
    url: String,
    headers: Vec<(String, String)>,
    method: Option<String>,
    body: Option<protocol::RequestBody>,
}

impl Endpoint {
    fn open(rt: &tokio::runtime::Runtime, target: &Target) -> Result<Self, EngineError> {
        Ok(match target {
            Target::InProcess => {
                let (listener, addr) = rt
                    .block_on(server::bind(([127, 0, 0, 1], 0).into()))
                    .map_err(|source| EngineError::Setup {
                        what: "opening the server's socket on 127.0.0.1",
                        source,
                    })?;
                Endpoint {
                    listener: Some(listener),
                    url: format!("http://{addr}/"),
                    headers: Vec::new(),
                    method: None,
                    body: None,
                }
            }
            Target::External {
                url,
                headers,
                method,
                body,
            } => Endpoint {
                listener: None,
                url: url.clone(),
                headers: headers.clone(),
                method: method.clone(),
                body: body.clone(),
            },
        })
    }
}

/// What each worker is told, made as each is started: the resolved scenario, which process
/// it is, where to send, and the store namespace of the run when processes share one.
fn worker_specs<'a>(
    scenario: &Scenario,
    layout: &'a Layout,
    cfg: &'a LiveConfig,
    endpoint: &'a Endpoint,
    store_namespace: Option<&'a String>,
    raw_headers: bool,
) -> impl Iterator<Item = WorkerSpec> + 'a {
    let in_process = endpoint.listener.is_some();
    // The oracle may know its key's rate only from our own server.
    let rate_per_sec = if in_process {
        scenario.server.limiter.build().rate_per_sec()
    } else {
        0.0
    };
    // The workers connect to the store: they are told its URL with any password in it.
    let resolved = scenario.to_toml_with_secrets();
    layout.processes.iter().map(move |p| WorkerSpec {
        scenario: resolved.clone(),
        group: p.group,
        process: p.index,
        target: endpoint.url.clone(),
        headers: endpoint.headers.clone(),
        send_key: in_process,
        send_client_id: in_process,
        timeout_ms: cfg.request_timeout.as_millis() as u64,
        rate_per_sec,
        store_namespace: store_namespace.cloned(),
        ca_file: cfg.ca_file.clone(),
        method: endpoint.method.clone(),
        body: endpoint.body.clone(),
        raw_headers,
    })
}

/// The parent's side of a live run: what it learns from the workers' events, and the
/// recorder it feeds.
struct Parent<'a, W: Write, R: Write> {
    layout: &'a Layout,
    rec: Recorder<'a, W, R>,
    /// Per process: its last sleep value and backoffs.
    sleeps: Vec<f64>,
    backoffs: Vec<u64>,
    /// Lines that were not events, and events of threads a worker does not have.
    garbled: usize,
    interrupted_at: Option<Nanos>,
    /// The first store failure a worker reported: the run stops there.
    failure: Option<String>,
    /// After a stop: when workers that have not ended count as dead.
    stop_by: Option<Instant>,
    /// When the last counted 2xx was answered: the server admitted it by then.
    last_ok_answer: Nanos,
    /// The quota the answers stated last (`RateLimit-Policy`), for an external API's
    /// utilization.
    stated_quota: Option<Quota>,
    /// The status line's counters, when one is drawn.
    watch: Option<std::sync::Arc<LiveWatch>>,
    /// Whether the requests still reach the target, and why the run stopped if they did not.
    target: TargetWatch,
    target_lost: Option<String>,
}

impl<'a, W: Write, R: Write> Parent<'a, W, R> {
    /// With every process's sleep value and backoffs as the workers said when ready.
    fn new(
        scenario: &Scenario,
        layout: &'a Layout,
        series: W,
        requests: Option<R>,
        sleeps: Vec<f64>,
        backoffs: Vec<u64>,
    ) -> Result<Self, EngineError> {
        Ok(Parent {
            layout,
            rec: Recorder::for_run(layout, &scenario.run, series, requests)?,
            sleeps,
            backoffs,
            garbled: 0,
            interrupted_at: None,
            failure: None,
            stop_by: None,
            last_ok_answer: 0,
            stated_quota: None,
            watch: None,
            target: TargetWatch::new(Instant::now()),
            target_lost: None,
        })
    }

    /// Record the workers' events and write the rows as they fall due, until every worker
    /// has ended (or is overdue: past `end_by`, or the grace after a stop).
    fn follow(
        &mut self,
        rt: &tokio::runtime::Runtime,
        workers: &mut Workers,
        pacing: &TickPacing<'_>,
        end_by: Instant,
        control: Control<'_>,
    ) -> Result<(), EngineError> {
        let now = || pacing.clock.now().min(self.layout.duration);
        // When workers were last looked at for being stopped (a read of /proc each).
        let mut looked_stopped = Instant::now();
        while !workers.all_ended() {
            match workers.events.recv_timeout(pacing.wait(&self.rec)) {
                Ok((w, Msg::Event(ev))) => {
                    self.on_event(w, ev, workers, pacing, control.progress)?
                }
                Ok((w, Msg::Closed)) => workers.list[w].lost(now()),
                Ok((_, Msg::Garbled(line))) => {
                    self.garbled += 1;
                    if self.garbled <= GARBLED_SHOWN {
                        crate::progress::warn(&format!(
                            "warning: a worker wrote a line that is not an event: {line:?}"
                        ));
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    for w in &mut workers.list {
                        w.lost(now());
                    }
                    break;
                }
            }
            if self.interrupted_at.is_none() {
                pacing.rows_due(&mut self.rec, &workers.list, &self.sleeps, control.progress)?;
                if self.target_lost.is_none() {
                    self.target_lost = self.target.gone(Instant::now());
                }
                if self.failure.is_some()
                    || self.target_lost.is_some()
                    || control.interrupt.load(Ordering::Relaxed)
                {
                    self.interrupted_at = Some(now());
                    self.stop_by = Some(Instant::now() + STOP_GRACE);
                    workers.send_all(rt, &Command::Stop);
                }
            }
            // Past the run's end (or a stop), a worker that is stopped (SIGSTOP) will not
            // answer: it is not waited for until the deadline.
            if (now() >= self.layout.duration || self.stop_by.is_some())
                && looked_stopped.elapsed() >= Duration::from_millis(200)
                && {
                    looked_stopped = Instant::now();
                    workers.list.iter().any(|w| !w.ended() && w.is_stopped())
                }
            {
                let at = now();
                for w in workers.list.iter_mut().filter(|w| !w.ended()) {
                    if w.is_stopped() {
                        w.give_up(
                            at,
                            "was stopped (SIGSTOP or the like) and stopped answering",
                        );
                    }
                }
                continue;
            }
            if Instant::now() > self.stop_by.unwrap_or(end_by) {
                let at = now();
                for w in &mut workers.list {
                    w.give_up(
                        at,
                        "stopped answering (no word from it by the end of the run and the \
                         request timeout)",
                    );
                }
                break;
            }
        }
        // The rows left are those of time already passed, written as it passed: few, so
        // they are not cut short by a late Ctrl-C.
        let settled = AtomicBool::new(false);
        self.rec
            .finish_rows(self.interrupted_at, &self.sleeps, &settled)?;
        (control.progress)(self.interrupted_at.unwrap_or(self.layout.duration));
        Ok(())
    }

    /// One event of worker `w`.
    fn on_event(
        &mut self,
        w: usize,
        ev: Event,
        workers: &mut Workers,
        pacing: &TickPacing<'_>,
        progress: &mut dyn FnMut(Nanos),
    ) -> Result<(), EngineError> {
        let first = self.layout.processes[w].threads.start;
        let threads = self.layout.processes[w].threads.len();
        let thread = |th: u32| (th as usize) < threads;
        match ev {
            Event::Request(r) if thread(r.th) => {
                pacing.rows_before(&mut self.rec, r.t, &workers.list, &self.sleeps, progress)?;
                self.on_request(first + r.th as usize, &r)?;
                self.sleeps[w] = r.sleep;
                self.backoffs[w] = r.backoffs;
            }
            Event::Delay { th, d } if thread(th) => self.rec.record_delay(first + th as usize, d),
            Event::GiveUp { th } if thread(th) => self.rec.record_give_up(first + th as usize),
            Event::Sleep { value, backoffs } => {
                self.sleeps[w] = value;
                self.backoffs[w] = backoffs;
            }
            Event::Failed { message } => {
                self.failure.get_or_insert(message);
            }
            Event::Done { sleep, backoffs } => {
                self.sleeps[w] = sleep;
                self.backoffs[w] = backoffs;
                workers.list[w].state = WorkerState::Done;
            }
            _ => self.garbled += 1,
        }
        Ok(())
    }

    /// A request of thread `i` and what became of it.
    fn on_request(&mut self, i: usize, r: &RequestEvent) -> Result<(), EngineError> {
        let answered_at = r.t.saturating_add(r.response.latency);
        self.target.saw(r.failure, Instant::now());
        if let Some(w) = &self.watch {
            w.answered(r.response.status, r.response.remaining);
        }
        if r.response.status == Status::Ok {
            self.last_ok_answer = self.last_ok_answer.max(answered_at);
        }
        if let Some(q) = r.response.quota.filter(|q| q.window > 0) {
            self.stated_quota = Some(q);
        }
        self.rec.record_request(&RequestRecord {
            thread: i,
            sent_at: r.t,
            response: r.response,
            waited: r.waited,
            failure: r.failure,
            raw: r.raw.as_deref(),
        })?;
        if let Some(wait) = r.job_wait {
            self.rec.record_success(i, wait);
        }
        if r.finished {
            self.rec.record_finished(i, answered_at);
        }
        Ok(())
    }

    /// Let the workers go, stop the server, and compute the summary.
    fn finish(
        self,
        scenario: &Scenario,
        rt: &tokio::runtime::Runtime,
        workers: &mut Workers,
        server: Option<InProcessServer>,
        known_quota: Option<Quota>,
    ) -> Result<Summary, EngineError> {
        let end = self.interrupted_at.unwrap_or(self.layout.duration);
        // Let every worker go: close its stdin, give it a moment, then kill what is left.
        let dead = workers.release(rt, self.layout);
        // An overloaded server admits requests sent before the end only after it, with tokens
        // that refilled meanwhile: the capacity counts up to the last 2xx the run counted, or
        // utilization passes 1 (it reached 1.096 at 100,000 threads).
        let capacity = match server {
            Some(server) => server.stop(rt, end.max(self.last_ok_answer)),
            // An external API's: its quota's rate over the run, as the user gave it or else as
            // the answers stated it; not known without either.
            None => known_quota
                .or(self.stated_quota)
                .map_or(0.0, |q| q.rate() * crate::time::secs(end)),
        };
        let processes: Vec<(f64, u64)> = self
            .sleeps
            .iter()
            .copied()
            .zip(self.backoffs.iter().copied())
            .collect();
        let partial_reason = match (&self.failure, &self.target_lost, self.interrupted_at) {
            (Some(f), ..) | (None, Some(f), _) => Some(f.clone()),
            (None, None, Some(_)) => Some("interrupted".to_string()),
            (None, None, None) => None,
        };
        let mut summary = self.rec.finish(
            end,
            FinishContext {
                scenario: &scenario.name,
                seed: scenario.run.seed(),
                mode: RunMode::Live,
                partial: self.interrupted_at.is_some(),
                partial_reason,
                processes: &processes,
                capacity_per_key: capacity,
            },
        )?;
        summary.dead_workers = dead;
        summary.failure = self.failure;
        summary.target_lost = self.target_lost;
        Ok(summary)
    }
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
        // The server's own grace for answers in flight, and a second for it to notice.
        let wait = STOP_GRACE + Duration::from_secs(1);
        let _ = rt.block_on(async { tokio::time::timeout(wait, task).await });
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

/// How long past a row's time answers sent before it may still arrive: a fixed margin for
/// the pipes and three typical latencies.
fn answer_grace(latency: &Latency, clock: ScaledClock) -> Duration {
    Duration::from_millis(100) + clock.to_real(typical_latency(latency)) * 3
}

/// Why the scale asks for waits shorter than the machine can time, if it does: the server's
/// typical latency in real time against [`timer::PRECISION`].
fn timing_warning(scenario: &Scenario) -> Option<String> {
    let clock = ScaledClock::starting_now(scenario.run.time_scale);
    let latency = &scenario.server.latency;
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
