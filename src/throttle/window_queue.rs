//! `window-queue`: the Discord job queue's fixed window, a job queue's rate limiting for
//! Discord (10 member role updates per 10 s per Discord server; docs/sources.md), kept in Redis
//! by every worker of the queue.
//!
//! Time is cut into fixed windows of `window`, numbered `⌊t / window⌋`. Before running, a job
//! increments its group's call counter for the current window (`INCR
//! counter:delay:calls:<group>:<window>`, expiring with the window). If the count is at most
//! the `reservoir` it runs now (first decrementing the group's waiting count if it had been
//! delayed). Otherwise it joins the group's waiting count (`INCR counter:delay:enqueued:<group>`,
//! minus one for itself) and is delayed to
//!
//! ```text
//! readyTimestamp = nextWindowStart + ⌊waiting / REQUESTS_PER_WINDOW⌋ × window
//! ```
//!
//! where REQUESTS_PER_WINDOW is the reservoir. At that time it starts over. The counters live
//! in the run's shared store (in memory in the sim, a real Redis in a live run with `[store]
//! url`), keyed by the group (`delay_group`, default the client group's name), so all
//! processes of a group count together; the count and the waiting count change in one atomic
//! step (`Store::window_admit`). Like the queue's flow chart, a job that is
//! delayed twice joins the waiting count twice and leaves it once.

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::ParamProblem;
use crate::exchange::Response;
use crate::rng::SimRng;
use crate::store::{SharedStore, WindowAdmit};
use crate::time::{HumanDuration, NANOS_PER_MS, Nanos, secs};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WindowQueueConfig {
    /// Calls allowed per window, also the formula's REQUESTS_PER_WINDOW. Default 10.
    pub reservoir: u64,
    /// The fixed window. Default 10 s.
    pub window: HumanDuration,
    /// The delayed group the counters belong to. Default: the client group's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_group: Option<String>,
}

impl Default for WindowQueueConfig {
    fn default() -> Self {
        WindowQueueConfig {
            reservoir: 10,
            window: HumanDuration::from_secs(10),
            delay_group: None,
        }
    }
}

impl WindowQueueConfig {
    /// The delayed group whose counters the processes of client group `group` share.
    pub fn delay_scope(&self, group: &str) -> String {
        format!(
            "counter:delay:{}",
            self.delay_group.as_deref().unwrap_or(group)
        )
    }

    pub fn build(&self, ctx: BuildContext) -> WindowQueue {
        let group = self
            .delay_group
            .clone()
            .unwrap_or_else(|| ctx.group.clone());
        WindowQueue {
            calls_prefix: format!("counter:delay:calls:{group}:"),
            enqueued_key: format!("counter:delay:enqueued:{group}"),
            cfg: self.clone(),
            store: ctx.store,
            delayed: vec![false; ctx.threads.max(1)],
            delays: 0,
            last_delay: 0,
        }
    }
}

impl Algorithm for WindowQueueConfig {
    const NAME: &'static str = "window-queue";
    const DESCRIPTION: &'static str = "the Discord job queue's fixed-window counters per group and delay to the window a job's turn falls in";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        if self.reservoir == 0 {
            out.push(("reservoir", "must be at least 1 (got 0)".to_string()));
        }
        if self.window.nanos() < NANOS_PER_MS {
            out.push((
                "window",
                format!(
                    "must be at least 1ms, counters expire in whole milliseconds (got {})",
                    self.window
                ),
            ));
        }
        if self
            .delay_group
            .as_deref()
            .is_some_and(|g| g.trim().is_empty())
        {
            out.push(("delay_group", "must not be empty".to_string()));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }

    fn store_scope(&self, group: &str, _key: &str) -> Option<String> {
        Some(self.delay_scope(group))
    }
}

pub struct WindowQueue {
    cfg: WindowQueueConfig,
    calls_prefix: String,
    enqueued_key: String,
    store: SharedStore,
    /// Per thread: its job was delayed and is waiting count.
    delayed: Vec<bool>,
    delays: u64,
    last_delay: Nanos,
}

impl WindowQueue {
    /// `nextWindowStart + ⌊waiting / reservoir⌋ × window`, for a job refused at `now`.
    pub fn ready_at(&self, now: Nanos, waiting: u64) -> Nanos {
        let w = self.cfg.window.nanos();
        let next_window_start = (now / w + 1) * w;
        next_window_start + (waiting / self.cfg.reservoir) * w
    }
}

impl Throttle for WindowQueue {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        let w = self.cfg.window.nanos();
        let key = format!("{}{}", self.calls_prefix, now / w);
        let step = self.store.lock().window_admit(
            &key,
            w / NANOS_PER_MS,
            self.cfg.reservoir,
            &self.enqueued_key,
            self.delayed[thread],
            now,
        );
        let waiting = match step {
            Ok(WindowAdmit::Run) => {
                self.delayed[thread] = false;
                return Acquire::Send;
            }
            Ok(WindowAdmit::Wait { waiting }) => waiting,
            // A store that cannot answer runs nothing: the job waits for the next window, and
            // the engine sees the failure and ends the run.
            Err(_) => {
                let next = (now / w + 1) * w;
                return Acquire::Wait(next - now);
            }
        };
        self.delayed[thread] = true;
        self.delays += 1;
        let ready = self.ready_at(now, waiting);
        self.last_delay = ready - now;
        Acquire::Wait(ready - now)
    }

    fn on_response(&mut self, _: Nanos, _: usize, _: &Response, _: &mut SimRng) {}

    /// The last delay a job was given, seconds.
    fn sleep_value(&self) -> f64 {
        secs(self.last_delay)
    }

    /// Jobs put on the delayed queue.
    fn backoffs(&self) -> u64 {
        self.delays
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;

    fn build(group: &str, store: &SharedStore, threads: usize) -> WindowQueue {
        build_with(WindowQueueConfig::default(), group, store, threads)
    }

    fn build_with(
        cfg: WindowQueueConfig,
        group: &str,
        store: &SharedStore,
        threads: usize,
    ) -> WindowQueue {
        cfg.build(BuildContext {
            group: group.into(),
            store: store.clone(),
            ..BuildContext::solo(threads)
        })
    }

    /// One call per window, on the store key of the solo context's group (`clients`).
    fn one_per_window(store: &SharedStore, threads: usize) -> WindowQueue {
        let cfg = WindowQueueConfig {
            reservoir: 1,
            ..WindowQueueConfig::default()
        };
        build_with(cfg, "clients", store, threads)
    }

    #[test]
    fn ready_timestamp_matches_the_queues_formula() {
        let t = build("g", &crate::store::shared(), 1);
        // Refused at 13 s: the next window starts at 20 s.
        assert_eq!(t.ready_at(13 * S, 0), 20 * S);
        assert_eq!(t.ready_at(13 * S, 9), 20 * S);
        assert_eq!(t.ready_at(13 * S, 10), 30 * S);
        assert_eq!(t.ready_at(13 * S, 25), 40 * S);
        // At a window's very start the next one is a full window away.
        assert_eq!(t.ready_at(20 * S, 0), 30 * S);
    }

    #[test]
    fn the_reservoir_is_shared_by_the_processes_of_a_group_only() {
        let store = crate::store::shared();
        let mut a = build("guild-1", &store, 10);
        let mut b = build("guild-1", &store, 10);
        let mut other = build("guild-2", &store, 1);
        let mut rng = test_rng();
        for th in 0..5 {
            assert_eq!(a.acquire(S, th, &mut rng), Acquire::Send);
            assert_eq!(b.acquire(2 * S, th, &mut rng), Acquire::Send);
        }
        // The 11th call of window 0 waits for window 1 (10 s), the 21st for window 2.
        let mut waits = Vec::new();
        for th in 5..10 {
            waits.push(a.acquire(3 * S, th, &mut rng));
            waits.push(b.acquire(3 * S, th, &mut rng));
        }
        assert_eq!(waits[0], Acquire::Wait(7 * S));
        assert_eq!(waits[9], Acquire::Wait(7 * S));
        assert_eq!(other.acquire(3 * S, 0, &mut rng), Acquire::Send);
        // Ten wait for window 1: the next refused job goes to window 2.
        assert_eq!(a.acquire(4 * S, 0, &mut rng), Acquire::Wait(16 * S));
        assert_eq!(b.acquire(4 * S, 0, &mut rng), Acquire::Wait(16 * S));
    }

    #[test]
    fn a_delayed_job_runs_at_its_window_and_leaves_the_waiting_count() {
        let store = crate::store::shared();
        let mut t = one_per_window(&store, 3);
        let mut rng = test_rng();
        assert_eq!(t.acquire(0, 0, &mut rng), Acquire::Send);
        assert_eq!(t.acquire(S, 1, &mut rng), Acquire::Wait(9 * S));
        assert_eq!(t.acquire(S, 2, &mut rng), Acquire::Wait(19 * S));
        let waiting = |s: &SharedStore| {
            s.lock()
                .get("counter:delay:enqueued:clients", 0)
                .unwrap()
                .unwrap()
        };
        assert_eq!(waiting(&store), 2);
        assert_eq!(t.acquire(10 * S, 1, &mut rng), Acquire::Send);
        assert_eq!(waiting(&store), 1);
        assert_eq!(t.acquire(20 * S, 2, &mut rng), Acquire::Send);
        assert_eq!(waiting(&store), 0);
        assert_eq!(t.backoffs(), 2);
    }

    #[test]
    fn a_job_delayed_twice_counts_twice_as_the_flow_chart_does() {
        let store = crate::store::shared();
        let mut t = one_per_window(&store, 2);
        let mut rng = test_rng();
        assert_eq!(t.acquire(0, 0, &mut rng), Acquire::Send);
        assert_eq!(t.acquire(S, 1, &mut rng), Acquire::Wait(9 * S));
        // Another job takes window 1's only call first.
        assert_eq!(t.acquire(10 * S, 0, &mut rng), Acquire::Send);
        // The delayed job is refused again; the waiting count already holds it once.
        assert_eq!(t.acquire(10 * S, 1, &mut rng), Acquire::Wait(20 * S));
        assert_eq!(t.acquire(30 * S, 1, &mut rng), Acquire::Send);
        let left = store.lock().get("counter:delay:enqueued:clients", 0);
        assert_eq!(left, Ok(Some(1)));
    }
}
