//! One client process of a live run: `threads` tokio tasks sharing one `Throttle`, each driving
//! the sim engine's own [`ClientLoop`] — sleeping its waits for real (scaled) and sending real
//! HTTP requests. Events stream
//! to the parent as JSON lines on stdout; commands arrive on stdin.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use super::client::{Exchange, HttpClient, Target, TargetError, read_body_file};
use super::protocol::{Command, Event, RequestBody, RequestEvent, WorkerSpec};
use super::server::CLIENT_ID;
use super::{ScaledClock, timer};
use crate::engine::client_loop::{ClientLoop, Pool, Step};
use crate::redact::shown_url;
use crate::rng::{SimRng, Stream, stream};
use crate::scenario::Layout;
use crate::scenario::{Scenario, ScenarioError, parse_scenario};
use crate::store::{RedisLink, RedisStore, SharedStore, StoreError};
use crate::throttle::{BuildContext, Throttle};
use crate::time::{Nanos, instant_after};

type Shared = Arc<Mutex<Box<dyn Throttle>>>;

/// How long past the group's stop (and the answers' usual grace) a request in flight is
/// still waited for before it is abandoned, whatever `--timeout` allows.
const END_GRACE: Duration = Duration::from_secs(1);

/// The hidden `worker` subcommand: run until done or told to stop; the exit code is 0 when the
/// process ran to its end, 3 when it could not start.
pub fn main() -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("worker: cannot start the async runtime: {e}");
            return crate::exit::FAILED;
        }
    };
    let result = rt.block_on(run());
    // Reading stdin blocks a thread the runtime would otherwise wait for.
    rt.shutdown_background();
    match result {
        Ok(()) => crate::exit::OK,
        Err(e) => {
            eprintln!("worker: {e}");
            crate::exit::FAILED
        }
    }
}

/// Why a worker could not run its process: the parent's spec or commands do not make sense
/// (a fault of this program), or what the process needs cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    #[error("no group {0} in the scenario")]
    NoGroup(usize),
    #[error("group {group} has no process {process}")]
    NoProcess { group: String, process: usize },
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("--target {url}: {source}")]
    Target { url: String, source: TargetError },
    #[error("bad command line {line:?}: {source}")]
    BadCommand {
        line: String,
        source: serde_json::Error,
    },
    #[error("reading commands: {0}")]
    Stdin(std::io::Error),
    #[error("expected {expected}, got {got:?}")]
    UnexpectedCommand {
        expected: &'static str,
        got: Box<Command>,
    },
    #[error("no start command on stdin")]
    NoStart,
}

/// A worker's view of its process, built from the spec before the run starts.
pub struct Process {
    scenario: Scenario,
    layout: Layout,
    /// Global index of the process.
    index: usize,
    /// What the throttle coordinates through; watched for failures.
    store: SharedStore,
    throttle: Shared,
    target: Target,
    spec: WorkerSpec,
}

impl Process {
    pub fn build(spec: WorkerSpec) -> Result<Process, WorkerError> {
        let scenario = parse_scenario(&spec.scenario, "<worker spec>", "worker", &[], 0)?;
        let layout = Layout::new(&scenario);
        let group = layout
            .groups
            .get(spec.group)
            .ok_or(WorkerError::NoGroup(spec.group))?;
        let index = group.processes.start + spec.process;
        if !group.processes.contains(&index) {
            return Err(WorkerError::NoProcess {
                group: group.name.clone(),
                process: spec.process,
            });
        }
        let population = layout.population(group.key, spec.rate_per_sec, &scenario.server);
        let store = match (&scenario.store.url, &spec.store_namespace) {
            (Some(url), Some(namespace)) => {
                let link = RedisLink::connect(url)?;
                SharedStore::redis(RedisStore::new(link, namespace, scenario.run.time_scale))
            }
            // Without Redis the store is this process's own (the scenario was refused if
            // processes had to share it).
            _ => crate::store::shared(),
        };
        let ctx = BuildContext {
            threads: layout.processes[index].threads.len(),
            group: group.name.clone(),
            process: spec.process,
            key: layout.keys[group.key].clone(),
            store: store.clone(),
            time_scale: scenario.run.time_scale,
            population,
        };
        let throttle = scenario.clients[spec.group].throttle.build(ctx);
        let mut target = Target::parse(&spec.target, &spec.headers, spec.ca_file.as_deref())
            .map_err(|source| WorkerError::Target {
                url: shown_url(&spec.target),
                source,
            })?;
        if spec.method.is_some() || spec.body.is_some() {
            let body = match &spec.body {
                None => Ok(hyper::body::Bytes::new()),
                Some(RequestBody::Text(t)) => Ok(hyper::body::Bytes::from(t.clone())),
                Some(RequestBody::File(path)) => read_body_file(path),
            };
            let method = spec.method.as_deref().unwrap_or("GET");
            target = body
                .and_then(|b| target.with_request(method, b))
                .map_err(|source| WorkerError::Target {
                    url: shown_url(&spec.target),
                    source,
                })?;
        }
        if spec.send_key {
            target = target.with_header("authorization", &layout.keys[group.key]);
        }
        Ok(Process {
            scenario,
            index,
            store,
            throttle: Arc::new(Mutex::new(throttle)),
            target,
            layout,
            spec,
        })
    }

    /// Run every thread from the clock's time 0 until they end or `stop` turns true; events go
    /// to `events`. Returns the final sleep value and backoffs.
    pub async fn run(
        &self,
        clock: ScaledClock,
        events: mpsc::UnboundedSender<Event>,
        stop: watch::Receiver<bool>,
    ) -> (f64, u64) {
        let p = &self.layout.processes[self.index];
        let group = &self.layout.groups[p.group];
        let timeout = Duration::from_millis(self.spec.timeout_ms.max(1));
        let mut tasks = tokio::task::JoinSet::new();
        // A pool is shared by the threads of this process (the scenario refuses a live pool
        // over several processes).
        let pool = group.pool.map(Pool::new);
        // A request still unanswered this long after the group's stop is abandoned: the run
        // is over, and waiting out its whole timeout would only delay the end.
        let cut_at = instant_after(
            clock.instant_at(group.stop),
            END_GRACE + super::answer_grace(&self.scenario.server.latency, clock),
        );
        for global in p.threads.clone() {
            let mut target = self.target.clone();
            // Our own server takes the global thread index; any other target is told
            // `group/pP/tT`, so `serve --record` (and the target's logs) tell threads apart.
            target = if self.spec.send_client_id {
                target.with_header(CLIENT_ID, &global.to_string())
            } else {
                let local = self.layout.threads[global].local;
                let id = format!("{}/p{}/t{local}", group.name, p.index);
                target.with_header_unless_set(CLIENT_ID, &id)
            };
            let t = ThreadRun {
                client_loop: ClientLoop::new(
                    self.layout.threads[global].local,
                    group.start,
                    group.stop,
                    group.jobs,
                )
                .with_pool(pool.clone())
                .with_stop_when_remaining(group.stop_when_remaining),
                start: group.start,
                rng: stream(self.scenario.run.seed(), global as u64, Stream::Throttle),
                client: HttpClient::new(target, timeout)
                    .stamped(self.spec.send_client_id.then_some(clock)),
                throttle: self.throttle.clone(),
                store: self.store.clone(),
                clock,
                cut_at,
                events: events.clone(),
                halt: stop.clone(),
                raw_headers: self.spec.raw_headers,
            };
            tasks.spawn(t.run());
        }
        let ticker = tokio::spawn(tick_sleeps(
            self.throttle.clone(),
            clock,
            self.scenario.run.sample_every.nanos(),
            group.stop,
            events.clone(),
        ));
        while let Some(ended) = tasks.join_next().await {
            // A thread that panicked sent nothing more: the run must not look complete.
            if let Err(e) = ended
                && e.is_panic()
            {
                let message = format!("a client thread of process {} panicked", self.index);
                let _ = events.send(Event::Failed { message });
            }
        }
        ticker.abort();
        let t = lock(&self.throttle);
        (t.sleep_value(), t.backoffs())
    }
}

fn lock(t: &Shared) -> std::sync::MutexGuard<'_, Box<dyn Throttle>> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// Report the process's sleep value at every sampling tick, so the parent's series rows carry
/// it even while every thread is waiting.
async fn tick_sleeps(
    throttle: Shared,
    clock: ScaledClock,
    every: Nanos,
    until: Nanos,
    events: mpsc::UnboundedSender<Event>,
) {
    let every = every.max(1);
    let mut t = every;
    while t <= until {
        tokio::time::sleep_until(clock.instant_at(t).into()).await;
        let (value, backoffs) = {
            let th = lock(&throttle);
            (th.sleep_value(), th.backoffs())
        };
        if events.send(Event::Sleep { value, backoffs }).is_err() {
            return;
        }
        t += every;
    }
}

/// One thread of the process: the sim's closed loop on a real clock.
struct ThreadRun {
    client_loop: ClientLoop,
    start: Nanos,
    rng: SimRng,
    client: HttpClient,
    throttle: Shared,
    store: SharedStore,
    clock: ScaledClock,
    /// When a request in flight past the group's stop is abandoned.
    cut_at: Instant,
    events: mpsc::UnboundedSender<Event>,
    /// Turns true when the parent says stop.
    halt: watch::Receiver<bool>,
    /// Report each answer's rate-limit fields as sent (`--log-requests`).
    raw_headers: bool,
}

impl ThreadRun {
    /// Sleep until virtual time `t` on the precise timer (tokio's rounds up to the next
    /// millisecond, which the scale multiplies); false when told to stop first.
    async fn sleep_until(&mut self, t: Nanos) -> bool {
        let at: Instant = self.clock.instant_at(t);
        tokio::select! {
            () = timer::sleep_until(at) => true,
            _ = self.halt.wait_for(|s| *s) => false,
        }
    }

    async fn run(mut self) {
        let th = self.client_loop.local();
        if !self.sleep_until(self.start).await {
            return;
        }
        let mut max_delay: Option<Nanos> = None;
        // The time of the last call to the loop: waits run from it.
        let mut now = self.clock.now();
        let mut step = self
            .client_loop
            .start(now, lock(&self.throttle).as_mut(), &mut self.rng);
        loop {
            match step {
                Step::Done => return,
                Step::Sleep { delay, gave_up } => {
                    if gave_up {
                        let _ = self.events.send(Event::GiveUp { th });
                    }
                    self.report_delay(&mut max_delay, delay);
                    let until = now.saturating_add(delay);
                    // Past the group's stop the loop would only say done: end without waiting.
                    if self.client_loop.stopped_at(until) || !self.sleep_until(until).await {
                        return;
                    }
                    now = self.clock.now();
                    step = self
                        .client_loop
                        .wake(now, lock(&self.throttle).as_mut(), &mut self.rng);
                    // The throttle waits when its store fails; the run cannot go on without it.
                    if let Some(e) = self.store.failure() {
                        let message = e.to_string();
                        let _ = self.events.send(Event::Failed { message });
                        return;
                    }
                }
                Step::Send { waited } => {
                    let sent_at = self.clock.now();
                    // A timer that fired late (or a slow gate) must not send past the group's
                    // stop: the sim never does, and the recorder has no row for the group after.
                    if self.client_loop.stopped_at(sent_at) {
                        return;
                    }
                    let sent_real = Instant::now();
                    let mut cut = false;
                    let exchange = tokio::select! {
                        ex = self.client.send() => ex,
                        _ = self.halt.wait_for(|s| *s) => return,
                        // The run is over: the request counts as timed out, as it got no
                        // answer within the run, and the thread ends.
                        () = timer::sleep_until(self.cut_at) => {
                            cut = true;
                            Exchange::timed_out(sent_real.elapsed())
                        }
                    };
                    let response = exchange.response(self.clock.scale());
                    now = sent_at.saturating_add(response.latency);
                    let (answered, sleep, backoffs) = {
                        let mut t = lock(&self.throttle);
                        let answered =
                            self.client_loop
                                .answered(now, &response, t.as_mut(), &mut self.rng);
                        (answered, t.sleep_value(), t.backoffs())
                    };
                    let event = Event::Request(RequestEvent {
                        th,
                        t: sent_at,
                        response,
                        waited,
                        failure: exchange.failure,
                        job_wait: answered.job_wait,
                        finished: answered.finished,
                        sleep,
                        backoffs,
                        raw: self
                            .raw_headers
                            .then(|| exchange.raw_fields())
                            .flatten()
                            .map(Box::new),
                    });
                    if self.events.send(event).is_err() || cut {
                        return;
                    }
                    step = self
                        .client_loop
                        .next(now, lock(&self.throttle).as_mut(), &mut self.rng);
                }
            }
        }
    }

    fn report_delay(&self, max: &mut Option<Nanos>, d: Nanos) {
        if max.is_none_or(|m| d > m) {
            *max = Some(d);
            let _ = self.events.send(Event::Delay {
                th: self.client_loop.local(),
                d,
            });
        }
    }
}

async fn next_command<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
) -> Result<Option<Command>, WorkerError> {
    match lines.next_line().await {
        Ok(Some(line)) => serde_json::from_str(&line)
            .map(Some)
            .map_err(|source| WorkerError::BadCommand { line, source }),
        Ok(None) => Ok(None),
        Err(e) => Err(WorkerError::Stdin(e)),
    }
}

/// Write events to stdout as JSON lines, flushing whenever the queue runs dry.
async fn write_events(mut rx: mpsc::UnboundedReceiver<Event>, stop: watch::Sender<bool>) {
    let mut out = tokio::io::BufWriter::new(tokio::io::stdout());
    let mut line = Vec::with_capacity(256);
    while let Some(ev) = rx.recv().await {
        let mut next = Some(ev);
        while let Some(ev) = next {
            line.clear();
            serde_json::to_writer(&mut line, &ev).expect("events serialize");
            line.push(b'\n');
            if out.write_all(&line).await.is_err() {
                // The parent is gone: nobody will record anything more.
                let _ = stop.send(true);
                return;
            }
            next = rx.try_recv().ok();
        }
        if out.flush().await.is_err() {
            let _ = stop.send(true);
            return;
        }
    }
    let _ = out.flush().await;
}

async fn run() -> Result<(), WorkerError> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let spec = match next_command(&mut lines).await? {
        Some(Command::Start(spec)) => *spec,
        Some(other) => {
            return Err(WorkerError::UnexpectedCommand {
                expected: "a start command first",
                got: Box::new(other),
            });
        }
        None => return Err(WorkerError::NoStart),
    };
    let process = Process::build(spec)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_events(rx, stop_tx.clone()));
    let (sleep, backoffs) = {
        let t = lock(&process.throttle);
        (t.sleep_value(), t.backoffs())
    };
    let _ = tx.send(Event::Ready { sleep, backoffs });
    let origin = match next_command(&mut lines).await? {
        Some(Command::Go { origin_unix_nanos }) => origin_unix_nanos,
        Some(Command::Stop) | None => {
            let _ = tx.send(Event::Done { sleep, backoffs });
            drop(tx);
            let _ = writer.await;
            return Ok(());
        }
        Some(other) => {
            return Err(WorkerError::UnexpectedCommand {
                expected: "go",
                got: Box::new(other),
            });
        }
    };
    let clock = ScaledClock::from_unix_origin(origin, process.scenario.run.time_scale);
    // Stop on `stop`, and when the parent closes stdin or goes away.
    tokio::spawn(async move {
        loop {
            match next_command(&mut lines).await {
                Ok(Some(Command::Stop)) | Ok(None) | Err(_) => break,
                Ok(Some(_)) => {}
            }
        }
        let _ = stop_tx.send(true);
    });
    let (sleep, backoffs) = process.run(clock, tx.clone(), stop_rx).await;
    let _ = tx.send(Event::Done { sleep, backoffs });
    drop(tx);
    let _ = writer.await;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Transport faults on real loopback sockets: each must reach the throttle as
    //! `Status::Error` and end up in the event stream, and the thread must keep going.

    use super::*;
    use crate::exchange::{Response, Status};
    use crate::rng::SimRng;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    const MS: Nanos = 1_000_000;

    /// Waits 20 ms between requests and remembers every answer it is told about.
    struct Recording(Arc<Mutex<Vec<Response>>>);

    impl Throttle for Recording {
        fn delay(&mut self, _now: Nanos, _thread: usize, _rng: &mut SimRng) -> Nanos {
            20 * MS
        }
        fn on_response(&mut self, _now: Nanos, _t: usize, r: &Response, _rng: &mut SimRng) {
            self.0.lock().unwrap().push(*r);
        }
        fn sleep_value(&self) -> f64 {
            0.02
        }
    }

    /// One thread against `url` for `run_for`; what the throttle saw and the events sent.
    async fn one_thread(
        url: &str,
        timeout: Duration,
        run_for: Nanos,
    ) -> (Vec<Response>, Vec<Event>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let throttle: Box<dyn Throttle> = Box::new(Recording(seen.clone()));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (_halt_tx, halt) = watch::channel(false);
        let t = ThreadRun {
            client_loop: ClientLoop::new(0, 0, run_for, None),
            start: 0,
            rng: stream(1, 0, Stream::Throttle),
            client: HttpClient::new(Target::parse(url, &[], None).unwrap(), timeout),
            throttle: Arc::new(Mutex::new(throttle)),
            store: crate::store::shared(),
            clock: ScaledClock::starting_now(1.0),
            cut_at: Instant::now() + Duration::from_nanos(run_for) + END_GRACE,
            events: tx,
            halt,
            raw_headers: true,
        };
        tokio::time::timeout(Duration::from_secs(20), t.run())
            .await
            .expect("the thread ends by itself");
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(e);
        }
        let seen = seen.lock().unwrap().clone();
        (seen, events)
    }

    fn assert_all_errors(seen: &[Response], events: &[Event]) {
        assert!(
            seen.len() >= 2,
            "the thread kept trying: {} answers",
            seen.len()
        );
        assert!(seen.iter().all(|r| r.status == Status::Error), "{seen:?}");
        let reported = events
            .iter()
            .filter(|e| matches!(e, Event::Request(r) if r.response.status == Status::Error))
            .count();
        assert_eq!(reported, seen.len());
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_error_the_throttle_hears() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // The listener is gone: every connect is refused.
        let url = format!("http://127.0.0.1:{port}/");
        let (seen, events) = one_thread(&url, Duration::from_secs(2), 200 * MS).await;
        assert_all_errors(&seen, &events);
    }

    #[tokio::test]
    async fn a_reset_connection_is_an_error_the_throttle_hears() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                // Linger 0: closing sends RST instead of FIN.
                let _ = s.set_zero_linger();
                drop(s);
            }
        });
        let (seen, events) = one_thread(&url, Duration::from_secs(2), 200 * MS).await;
        assert_all_errors(&seen, &events);
    }

    #[tokio::test]
    async fn a_request_that_times_out_is_an_error_the_throttle_hears() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            // Accept and never answer.
            while let Ok((s, _)) = listener.accept().await {
                held.push(s);
            }
        });
        let timeout = Duration::from_millis(100);
        let (seen, events) = one_thread(&url, timeout, 300 * MS).await;
        assert_all_errors(&seen, &events);
        assert!(seen.iter().all(|r| r.latency >= 100 * MS), "{seen:?}");
    }
}
