//! The discrete-event engine: a virtual clock in integer nanoseconds and one event queue.
//!
//! Each thread is the closed loop of [`ClientLoop`] — ask its process's throttle for a delay,
//! wait, send (the server decides on arrival), wait out the latency, hand the response to the
//! throttle, repeat — so every thread has exactly one pending event. For a rule whose clients
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
use crate::limiter::Limiter;
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
    control: Control<'_>,
) -> Result<Summary, EngineError> {
    let layout = Layout::new(scenario);
    let seed = scenario.run.seed();
    let duration = layout.duration;
    let mut limiter: Box<dyn Limiter> =
        scenario
            .server
            .build_limiter(stream(seed, 0, Stream::Server));
    let latency = scenario.server.latency.sampler();
    let headers = scenario.server.headers;
    let reads_first = limiter.reads_first();
    let store = crate::store::shared();
    let populations: Vec<Arc<Population>> = (0..layout.keys.len())
        .map(|key| layout.population(key, limiter.rate_per_sec(), &scenario.server))
        .collect();
    let mut throttles: Vec<Box<dyn Throttle>> = layout
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
                population: populations[group.key].clone(),
            };
            scenario.clients[p.group].throttle.build(ctx)
        })
        .collect();
    // One shared job pool per group that has one, fresh for this run.
    let pools: Vec<_> = layout
        .groups
        .iter()
        .map(|g| g.pool.map(Pool::new))
        .collect();
    let mut threads: Vec<SimThread> = layout
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
        .collect();

    let mut rec = Recorder::new(&layout, scenario.run.sample_every.nanos(), series, requests)?
        .with_peak_window(scenario.run.peak_window.map(|w| w.nanos()))
        .with_fairness_window(scenario.run.fairness_window.nanos())
        .with_series_level(scenario.run.series);
    let mut queue = EventQueue::new(
        layout.threads.len(),
        duration,
        layout
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| Event::new(layout.groups[t.group as usize].start, i as u32)),
    );
    let mut sleeps = vec![0.0; throttles.len()];
    let mut interrupted_at = None;
    let mut events: u64 = 0;

    'events: while let Some(event) = queue.peek() {
        let (now, id) = (event.at, event.thread);
        if now > duration {
            break;
        }
        while let Some(tick) = rec.next_tick().filter(|&t| t < now) {
            // Between two events there may be millions of ticks (a fine `sample_every`, threads
            // that wait for hours): the interrupt is checked at each, not only every
            // CHECK_EVERY events.
            if control.interrupt.load(Ordering::Relaxed) {
                interrupted_at = Some(tick);
                break 'events;
            }
            for (s, t) in sleeps.iter_mut().zip(&throttles) {
                *s = t.sleep_value();
            }
            rec.tick(tick, &sleeps)?;
        }
        events += 1;
        if events.is_multiple_of(CHECK_EVERY) {
            (control.progress)(now);
            if control.interrupt.load(Ordering::Relaxed) {
                interrupted_at = Some(now);
                break;
            }
        }
        queue.remove_top();
        // Start loading the state of the thread whose event is next (unless this thread's
        // next event comes first) now, while this event is handled, instead of stalling on it
        // then. With 10,000 threads the states do not fit the nearest caches, and the stall
        // was the engine's largest cost after the heap (issue 15).
        if let Some(next) = queue.peek() {
            let n = next.thread as usize;
            crate::prefetch::prefetch(&threads[n]);
            rec.prefetch_thread(n);
        }
        let i = id as usize;
        let th = &mut threads[i];
        let throttle = &mut throttles[th.process as usize];
        if th.phase == Phase::Read {
            limiter.read(now, th.key as usize, i);
            // The read's answer comes back, then the write goes out.
            let legs = latency
                .sample(&mut th.net_rng)
                .saturating_add(latency.sample(&mut th.net_rng));
            th.phase = Phase::Write;
            queue.push(Event::new(now.saturating_add(legs), id), true);
            continue;
        }
        let step = match th.phase {
            Phase::Start => th
                .client
                .start(now, throttle.as_mut(), &mut th.throttle_rng),
            Phase::Wake => th.client.wake(now, throttle.as_mut(), &mut th.throttle_rng),
            Phase::Read => unreachable!("handled above"),
            // A write due past the group's stop is not sent, as a send never is.
            Phase::Write if th.client.stopped_at(now) => Step::Done,
            Phase::Write => Step::Send { waited: th.waited },
            Phase::Respond => {
                let response = th.pending;
                // Only an admitted request held a place in the server; a refusal never did.
                if response.status == Status::Ok {
                    limiter.release(now, th.key as usize);
                }
                let answered =
                    th.client
                        .answered(now, &response, throttle.as_mut(), &mut th.throttle_rng);
                if let Some(wait) = answered.job_wait {
                    rec.record_success(i, wait);
                }
                if answered.finished {
                    rec.record_finished(i, now);
                }
                th.client.next(now, throttle.as_mut(), &mut th.throttle_rng)
            }
        };
        let next = match step {
            Step::Sleep { delay, gave_up } => {
                if gave_up {
                    rec.record_give_up(i);
                }
                rec.record_delay(i, delay);
                th.phase = Phase::Wake;
                Some((now.saturating_add(delay), false))
            }
            Step::Send { waited } if reads_first && th.phase == Phase::Wake => {
                // The client sends its read now; its write follows once the answer is back.
                th.waited = waited;
                th.phase = Phase::Read;
                Some((now.saturating_add(latency.sample(&mut th.net_rng)), true))
            }
            Step::Send { waited } => {
                // What the client is told: the rule's decision, less the fields this server
                // does not send.
                let d = limiter.admit_from(now, th.key as usize, i);
                let lat = latency.sample(&mut th.net_rng);
                let response = headers.response(d, now, lat);
                th.pending = response;
                rec.record_request(&RequestRecord {
                    thread: i,
                    sent_at: now,
                    response,
                    waited,
                    failure: crate::record::Failure::of_status(d.status),
                })?;
                th.phase = Phase::Respond;
                Some((now.saturating_add(lat), true))
            }
            Step::Done => None,
        };
        // The thread's next event, if it has one; one a latency away is `soon`.
        if let Some((at, soon)) = next {
            queue.push(Event::new(at, id), soon);
        }
    }

    for (s, t) in sleeps.iter_mut().zip(&throttles) {
        *s = t.sleep_value();
    }
    let interrupted_at = rec.finish_rows(interrupted_at, &sleeps, control.interrupt)?;
    let end = interrupted_at.unwrap_or(duration);
    (control.progress)(end);
    let processes: Vec<(f64, u64)> = throttles
        .iter()
        .map(|t| (t.sleep_value(), t.backoffs()))
        .collect();
    let summary = rec.finish(
        end,
        FinishContext {
            scenario: &scenario.name,
            seed,
            mode: RunMode::Sim,
            partial: interrupted_at.is_some(),
            partial_reason: interrupted_at.map(|_| "interrupted".to_string()),
            processes: &processes,
            capacity_per_key: limiter.capacity(end),
        },
    )?;
    Ok(summary)
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
