//! The discrete-event engine: a virtual clock in integer nanoseconds and one event queue.
//!
//! Each thread is the closed loop of [`ClientLoop`] — ask its process's throttle for a delay,
//! wait, send (the server decides on arrival), wait out the latency (and the rule's hold, for
//! one that serves a request late), hand the response to the throttle, repeat — so every
//! thread has exactly one pending event. For a rule whose clients
//! read before they write (`occ`), a send is first a read round trip and then the write, each
//! leg a draw of the latency, still one pending event at a time. Ties are broken by thread
//! index (`engine/queue.rs`), which with one seeded stream per thread makes a run
//! byte-for-byte repeatable.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::client_loop::{ClientLoop, Pool, Step};
use super::queue::{Event, EventQueue};
use super::{Control, EngineError};
use crate::exchange::{Response, Status};
use crate::limiter::{Headers, Held, LatencySampler, Limiter};
use crate::record::{FinishContext, Recorder, RequestRecord, RunMode, Summary};
use crate::rng::{SimRng, Stream, stream};
use crate::scenario::{Layout, Scenario};
use crate::throttle::{BuildContext, Population, Throttle};
use crate::time::Nanos;

/// What a thread's pending event means when it comes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Joining: choose the first delay.
    Start,
    /// The wait is over: pass the gate and send.
    Wake,
    /// The read sent before a write reaches the server (rules that read first).
    Read,
    /// That write reaches the server, its read's answer having come back.
    Write,
    /// The answer arrives.
    Respond,
}

struct SimThread {
    phase: Phase,
    process: u32,
    key: u32,
    client: ClientLoop,
    /// The answer on its way back (the server decided when the request arrived).
    pending: Response,
    /// How long the request on its way (read first) waited before it was sent.
    waited: Nanos,
    throttle_rng: SimRng,
    net_rng: SimRng,
}

/// How often, in events, the engine reports progress and checks for an interrupt.
const CHECK_EVERY: u64 = 1 << 16;

/// Run a scenario in virtual time, streaming rows to `series` (and `requests`).
pub fn run<W: Write, R: Write>(
    scenario: &Scenario,
    series: W,
    requests: Option<R>,
    mut control: Control<'_>,
) -> Result<Summary, EngineError> {
    let layout = Layout::new(scenario);
    let mut sim = Sim::new(scenario, &layout, series, requests)?;
    let mut queue = EventQueue::new(
        layout.threads.len(),
        layout.duration,
        layout
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| Event::new(layout.groups[t.group as usize].start, i as u32)),
    );
    let interrupted_at = sim.run_events(&mut queue, &mut control)?;
    sim.finish(scenario, interrupted_at, control)
}

/// Everything a run changes as its events come up: the server's rule, every process's
/// throttle, every thread's state, and the recorder.
struct Sim<'a, W: Write, R: Write> {
    /// The run's end.
    duration: Nanos,
    limiter: Box<dyn Limiter>,
    latency: LatencySampler,
    headers: Headers,
    /// The rule's clients read before they write (`occ`).
    reads_first: bool,
    throttles: Vec<Box<dyn Throttle>>,
    threads: Vec<SimThread>,
    /// Every process's sleep value, refreshed for each sampling tick.
    sleeps: Vec<f64>,
    rec: Recorder<'a, W, R>,
}

impl<'a, W: Write, R: Write> Sim<'a, W, R> {
    fn new(
        scenario: &Scenario,
        layout: &'a Layout,
        series: W,
        requests: Option<R>,
    ) -> Result<Self, EngineError> {
        let seed = scenario.run.seed();
        let limiter = scenario
            .server
            .build_limiter(stream(seed, 0, Stream::Server));
        let throttles = build_throttles(scenario, layout, limiter.rate_per_sec());
        Ok(Sim {
            duration: layout.duration,
            latency: scenario.server.latency.sampler(),
            headers: scenario.server.headers,
            reads_first: limiter.reads_first(),
            limiter,
            sleeps: vec![0.0; throttles.len()],
            throttles,
            threads: build_threads(layout, seed),
            rec: Recorder::for_run(layout, &scenario.run, series, requests)?,
        })
    }

    /// Handle events in time order until the queue is empty, the run's end is passed, or
    /// `control` says stop; returns when it stopped early, if it did.
    fn run_events(
        &mut self,
        queue: &mut EventQueue,
        control: &mut Control<'_>,
    ) -> Result<Option<Nanos>, EngineError> {
        let mut events: u64 = 0;
        while let Some(event) = queue.peek() {
            let (now, id) = (event.at, event.thread);
            if now > self.duration {
                break;
            }
            if let Some(tick) = self.ticks_before(now, control.interrupt)? {
                return Ok(Some(tick));
            }
            events += 1;
            if events.is_multiple_of(CHECK_EVERY) {
                (control.progress)(now);
                if control.interrupt.load(Ordering::Relaxed) {
                    return Ok(Some(now));
                }
            }
            queue.remove_top();
            // Start loading the state of the thread whose event is next (unless this thread's
            // next event comes first) now, while this event is handled, instead of stalling
            // on it then. With 10,000 threads the states do not fit the nearest caches, and
            // the stall is the engine's largest cost after the heap (docs/engine-notes.md).
            if let Some(next) = queue.peek() {
                let n = next.thread as usize;
                crate::prefetch::prefetch(&self.threads[n]);
                self.rec.prefetch_thread(n);
            }
            // The thread's next event, if it has one; one a latency away is `soon`.
            if let Some((at, soon)) = self.handle(now, id as usize)? {
                queue.push(Event::new(at, id), soon);
            }
        }
        Ok(None)
    }

    /// Write the sampling ticks that fall before `now`; the tick at which `interrupt` was
    /// found set, if it was.
    #[inline]
    fn ticks_before(
        &mut self,
        now: Nanos,
        interrupt: &AtomicBool,
    ) -> Result<Option<Nanos>, EngineError> {
        while let Some(tick) = self.rec.next_tick().filter(|&t| t < now) {
            // Between two events there may be millions of ticks (a fine `sample_every`,
            // threads that wait for hours): the interrupt is checked at each, not only every
            // CHECK_EVERY events.
            if interrupt.load(Ordering::Relaxed) {
                return Ok(Some(tick));
            }
            self.refresh_sleeps();
            self.rec.tick(tick, &self.sleeps)?;
        }
        Ok(None)
    }

    fn refresh_sleeps(&mut self) {
        for (s, t) in self.sleeps.iter_mut().zip(&self.throttles) {
            *s = t.sleep_value();
        }
    }

    /// Thread `i`'s event at `now`: what it does, and when its next event is (and whether it
    /// is a latency away).
    #[inline]
    fn handle(&mut self, now: Nanos, i: usize) -> Result<Option<(Nanos, bool)>, EngineError> {
        let th = &mut self.threads[i];
        if th.phase == Phase::Read {
            self.limiter.read(now, th.key as usize, i);
            // The read's answer comes back, then the write goes out.
            let legs = self
                .latency
                .sample(&mut th.net_rng)
                .saturating_add(self.latency.sample(&mut th.net_rng));
            th.phase = Phase::Write;
            return Ok(Some((now.saturating_add(legs), true)));
        }
        let step = self.step(now, i);
        self.follow(now, i, step)
    }

    /// Drive thread `i`'s client loop for its event at `now` (any phase but a read).
    #[inline]
    fn step(&mut self, now: Nanos, i: usize) -> Step {
        let th = &mut self.threads[i];
        let throttle = &mut self.throttles[th.process as usize];
        match th.phase {
            Phase::Start => th
                .client
                .start(now, throttle.as_mut(), &mut th.throttle_rng),
            Phase::Wake => th.client.wake(now, throttle.as_mut(), &mut th.throttle_rng),
            Phase::Read => unreachable!("a read is handled before the client loop"),
            // A write due past the group's stop is not sent, as a send never is.
            Phase::Write if th.client.stopped_at(now) => Step::Done,
            Phase::Write => Step::Send { waited: th.waited },
            Phase::Respond => {
                let response = th.pending;
                // Only an admitted request held a place in the server; a refusal never did.
                if response.status == Status::Ok {
                    self.limiter.release(now, th.key as usize);
                }
                let answered =
                    th.client
                        .answered(now, &response, throttle.as_mut(), &mut th.throttle_rng);
                if let Some(wait) = answered.job_wait {
                    self.rec.record_success(i, wait);
                }
                if answered.finished {
                    self.rec.record_finished(i, now);
                }
                th.client.next(now, throttle.as_mut(), &mut th.throttle_rng)
            }
        }
    }

    /// Carry out `step` for thread `i` at `now`: record it, and say when its next event is.
    #[inline]
    fn follow(
        &mut self,
        now: Nanos,
        i: usize,
        step: Step,
    ) -> Result<Option<(Nanos, bool)>, EngineError> {
        let th = &mut self.threads[i];
        Ok(match step {
            Step::Sleep { delay, gave_up } => {
                if gave_up {
                    self.rec.record_give_up(i);
                }
                self.rec.record_delay(i, delay);
                th.phase = Phase::Wake;
                Some((now.saturating_add(delay), false))
            }
            Step::Send { waited } if self.reads_first && th.phase == Phase::Wake => {
                // The client sends its read now; its write follows once the answer is back.
                th.waited = waited;
                th.phase = Phase::Read;
                Some((
                    now.saturating_add(self.latency.sample(&mut th.net_rng)),
                    true,
                ))
            }
            Step::Send { waited } => {
                // What the client is told: the rule's decision, less the fields this server
                // does not send. The rule counts the request now; a held answer leaves the
                // server `hold` later and arrives a latency after that.
                let Held { decision: d, hold } = self.limiter.admit_held(now, th.key as usize, i);
                let lat = self.latency.sample(&mut th.net_rng);
                let sent_back = now.saturating_add(hold);
                let response = self
                    .headers
                    .response(d, sent_back, lat.saturating_add(hold));
                th.pending = response;
                self.rec.record_request(&RequestRecord {
                    thread: i,
                    sent_at: now,
                    response,
                    waited,
                    failure: crate::record::Failure::of_status(d.status),
                    raw: None,
                })?;
                th.phase = Phase::Respond;
                Some((sent_back.saturating_add(lat), hold == 0))
            }
            Step::Done => None,
        })
    }

    /// End the rows (at `interrupted_at`, when the run was stopped) and compute the summary.
    fn finish(
        mut self,
        scenario: &Scenario,
        interrupted_at: Option<Nanos>,
        control: Control<'_>,
    ) -> Result<Summary, EngineError> {
        self.refresh_sleeps();
        let interrupted_at =
            self.rec
                .finish_rows(interrupted_at, &self.sleeps, control.interrupt)?;
        let end = interrupted_at.unwrap_or(self.duration);
        (control.progress)(end);
        let processes: Vec<(f64, u64)> = self
            .throttles
            .iter()
            .map(|t| (t.sleep_value(), t.backoffs()))
            .collect();
        let summary = self.rec.finish(
            end,
            FinishContext {
                scenario: &scenario.name,
                seed: scenario.run.seed(),
                mode: RunMode::Sim,
                partial: interrupted_at.is_some(),
                partial_reason: interrupted_at.map(|_| "interrupted".to_string()),
                processes: &processes,
                capacity_per_key: self.limiter.capacity(end),
            },
        )?;
        Ok(summary)
    }
}

/// One throttle per process, each told its group, key and (for the `oracle`) the key's
/// population; all share one in-memory store.
fn build_throttles(
    scenario: &Scenario,
    layout: &Layout,
    rate_per_sec: f64,
) -> Vec<Box<dyn Throttle>> {
    let store = crate::store::shared();
    let populations: Vec<Arc<Population>> = (0..layout.keys.len())
        .map(|key| layout.population(key, rate_per_sec, &scenario.server))
        .collect();
    layout
        .processes
        .iter()
        .map(|p| {
            let group = &layout.groups[p.group];
            let ctx = BuildContext {
                threads: p.threads.len(),
                group: group.name.clone(),
                process: p.index,
                key: layout.keys[group.key].clone(),
                store: store.clone(),
                time_scale: 1.0,
                population: populations[group.key].clone(),
            };
            scenario.clients[p.group].throttle.build(ctx)
        })
        .collect()
}

/// Every thread at its start, with its own random streams; one shared job pool per group
/// that has one, fresh for this run.
fn build_threads(layout: &Layout, seed: u64) -> Vec<SimThread> {
    let pools: Vec<_> = layout
        .groups
        .iter()
        .map(|g| g.pool.map(Pool::new))
        .collect();
    layout
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let g = &layout.groups[t.group as usize];
            SimThread {
                phase: Phase::Start,
                process: t.process,
                key: g.key as u32,
                client: ClientLoop::new(t.local, g.start, g.stop, g.jobs)
                    .with_pool(pools[t.group as usize].clone())
                    .with_stop_when_remaining(g.stop_when_remaining),
                pending: Response::bare(Status::Ok),
                waited: 0,
                throttle_rng: stream(seed, i as u64, Stream::Throttle),
                net_rng: stream(seed, i as u64, Stream::Network),
            }
        })
        .collect()
}

/// Run without writing any file: the summary alone (for tests, sweeps and comparisons).
pub fn summarize(scenario: &Scenario) -> Summary {
    let never = AtomicBool::new(false);
    let mut ignore = |_| {};
    let control = Control {
        progress: &mut ignore,
        interrupt: &never,
    };
    let mut summary = run(scenario, std::io::sink(), None::<std::io::Sink>, control)
        .expect("writing to a sink cannot fail");
    summary.judge(&scenario.expect);
    summary
}
