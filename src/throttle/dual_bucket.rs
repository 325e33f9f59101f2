//! `dual-bucket`: Toggl's dual buckets, the Toggl mobile app's two local "leaky buckets" (a
//! minute bucket of 60 requests per 60 s and a seconds bucket of 3 per 1 s; docs/sources.md),
//! every number a parameter whose default is the app's.
//!
//! Each bucket is the app's moving window: it remembers the times of its last `slots` claims,
//! and a slot is free again one `window` after the claim that took it. Claiming `n` slots at
//! once succeeds only if all `n` are free now; otherwise the bucket answers how long until they
//! would be, claimed one after another.
//!
//! A *sync* of `n` requests first claims `n` slots of the minute bucket. If it is refused, the
//! device waits the time the bucket gave and then restarts the whole sync (claims again). Once
//! granted, each request of the sync asks the seconds bucket for one slot, waits the time it
//! gives when refused and asks again, then is sent.
//!
//! - `workload = "pull"`: a sync is `pull_requests` (9) GET requests sent in parallel waves;
//!   the group's `threads` are the parallel requests (3 for the app's waves of 3), each thread
//!   taking the next request of the sync. A new sync starts `every` after the last one started,
//!   or as soon as the last one's requests are all handed out, whichever is later.
//! - `workload = "push"`: one request at a time (give the group 1 thread), each its own
//!   minute-bucket claim of 1; a refusal waits and restarts the push.
//!
//! The source does not say what a sync does on a 429; the app fails the sync, so here any
//! answer other than 2xx cancels the sync's requests not yet sent and the next sync starts
//! afresh (its requests claim minute slots again).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Acquire, Algorithm, BuildContext, Throttle};
use crate::config::{ParamProblem, check_nonzero_duration};
use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::time::{HumanDuration, Nanos, secs};

/// What one device does over and over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Syncs of `pull_requests` requests, one minute-bucket claim each.
    #[default]
    Pull,
    /// One request at a time, each its own claim.
    Push,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DualBucketConfig {
    /// The minute bucket's slots. Default 60.
    pub minute_slots: u32,
    /// The minute bucket's window. Default 60 s.
    pub minute_window: HumanDuration,
    /// The seconds bucket's slots. Default 3.
    pub second_slots: u32,
    /// The seconds bucket's window. Default 1 s.
    pub second_window: HumanDuration,
    /// `pull` (the default) or `push`.
    pub workload: Workload,
    /// Requests in one pull sync. Default 9 ("we make 9 GET requests at once").
    pub pull_requests: u32,
    /// Pull only: the time from the start of one sync to the start of the next. Default 0 s: back
    /// to back, a device that always has something to sync (the app's description gives no period).
    pub every: HumanDuration,
}

impl Default for DualBucketConfig {
    fn default() -> Self {
        DualBucketConfig {
            minute_slots: 60,
            minute_window: HumanDuration::from_secs(60),
            second_slots: 3,
            second_window: HumanDuration::from_secs(1),
            workload: Workload::Pull,
            pull_requests: 9,
            every: HumanDuration::from_secs(0),
        }
    }
}

impl DualBucketConfig {
    pub fn build(&self, ctx: BuildContext) -> DualBucket {
        let threads = ctx.threads.max(1);
        DualBucket {
            minute: MovingWindow::new(self.minute_slots, self.minute_window.nanos()),
            seconds: MovingWindow::new(self.second_slots, self.second_window.nanos()),
            cfg: self.clone(),
            dispatching: None,
            last_sync: 0,
            valid_from: 1,
            next_claim_at: 0,
            ticket: vec![None; threads],
            in_flight: vec![None; threads],
            restarts: 0,
            last_minute_wait: 0,
        }
    }
}

impl Algorithm for DualBucketConfig {
    const NAME: &'static str = "dual-bucket";
    const DESCRIPTION: &'static str =
        "Toggl's dual buckets (60/60 s, 3/1 s); pull syncs of 9 or one-at-a-time pushes";

    fn problems(&self) -> Vec<ParamProblem> {
        let mut out = Vec::new();
        for (field, slots) in [
            ("minute_slots", self.minute_slots),
            ("second_slots", self.second_slots),
        ] {
            if slots == 0 {
                out.push((field, "must be at least 1 (got 0)".to_string()));
            }
        }
        for (field, w) in [
            ("minute_window", self.minute_window),
            ("second_window", self.second_window),
        ] {
            check_nonzero_duration(&mut out, field, w);
        }
        if self.pull_requests == 0 || self.pull_requests > self.minute_slots {
            out.push((
                "pull_requests",
                format!(
                    "must be from 1 to minute_slots ({}): a claim larger than the bucket never succeeds (got {})",
                    self.minute_slots, self.pull_requests
                ),
            ));
        }
        out
    }

    fn throttle(&self, ctx: BuildContext) -> Box<dyn Throttle> {
        Box::new(self.build(ctx))
    }
}

/// The app's "leaky bucket": the times of the last `slots` claims; a slot frees one `width`
/// after the claim that took it, so no window of `width` ever holds more than `slots` claims.
#[derive(Clone, Debug)]
pub struct MovingWindow {
    slots: usize,
    width: Nanos,
    history: VecDeque<Nanos>,
}

impl MovingWindow {
    pub fn new(slots: u32, width: Nanos) -> Self {
        MovingWindow {
            slots: slots.max(1) as usize,
            width,
            history: VecDeque::new(),
        }
    }

    fn time_to_one(slots: usize, width: Nanos, history: &VecDeque<Nanos>, at: Nanos) -> Nanos {
        match history.front() {
            Some(&oldest) if history.len() == slots => (oldest + width).saturating_sub(at),
            _ => 0,
        }
    }

    fn take(slots: usize, history: &mut VecDeque<Nanos>, at: Nanos) {
        if history.len() == slots {
            history.pop_front();
        }
        history.push_back(at);
    }

    /// How long from `now` until `n` slots are free, claiming them one after another.
    pub fn time_to_free(&self, now: Nanos, n: u32) -> Nanos {
        let mut trial = self.history.clone();
        let mut total = 0;
        for _ in 0..n {
            total += Self::time_to_one(self.slots, self.width, &trial, now + total);
            Self::take(self.slots, &mut trial, now + total);
        }
        total
    }

    /// Claim `n` slots at `now` if all are free; else how long until they would be.
    pub fn try_claim(&mut self, now: Nanos, n: u32) -> Result<(), Nanos> {
        match self.time_to_free(now, n) {
            0 => {
                for _ in 0..n {
                    Self::take(self.slots, &mut self.history, now);
                }
                Ok(())
            }
            wait => Err(wait),
        }
    }
}

/// A granted sync whose requests are still being handed out.
#[derive(Clone, Copy, Debug)]
struct Dispatching {
    id: u64,
    unsent: u32,
}

pub struct DualBucket {
    cfg: DualBucketConfig,
    minute: MovingWindow,
    seconds: MovingWindow,
    dispatching: Option<Dispatching>,
    /// The id of the latest sync granted (0: none yet).
    last_sync: u64,
    /// Requests of syncs before this one were cancelled by a failure.
    valid_from: u64,
    /// No new sync before this time (the pull period, or the minute bucket's answer).
    next_claim_at: Nanos,
    /// Per thread: the sync whose request it holds (minute slot claimed, not yet sent).
    ticket: Vec<Option<u64>>,
    /// Per thread: the sync of the request it has in flight.
    in_flight: Vec<Option<u64>>,
    restarts: u64,
    last_minute_wait: Nanos,
}

impl DualBucket {
    fn sync_size(&self) -> u32 {
        match self.cfg.workload {
            Workload::Pull => self.cfg.pull_requests,
            Workload::Push => 1,
        }
    }

    /// Hand the next request of the sync being dispatched to `thread`, if there is one.
    fn take_ticket(&mut self, thread: usize) -> bool {
        let Some(d) = &mut self.dispatching else {
            return false;
        };
        d.unsent -= 1;
        self.ticket[thread] = Some(d.id);
        if d.unsent == 0 {
            self.dispatching = None;
        }
        true
    }

    /// Start a sync: claim its minute slots, or learn how long to wait before restarting.
    fn start_sync(&mut self, now: Nanos) -> Result<(), Nanos> {
        if now < self.next_claim_at {
            return Err(self.next_claim_at - now);
        }
        let n = self.sync_size();
        match self.minute.try_claim(now, n) {
            Ok(()) => {
                self.last_sync += 1;
                self.dispatching = Some(Dispatching {
                    id: self.last_sync,
                    unsent: n,
                });
                self.last_minute_wait = 0;
                if self.cfg.workload == Workload::Pull {
                    self.next_claim_at = now + self.cfg.every.nanos();
                }
                Ok(())
            }
            Err(wait) => {
                // "Wait for the time period returned by the leaky bucket and then repeat the
                // whole sync process from the start."
                self.restarts += 1;
                self.last_minute_wait = wait;
                self.next_claim_at = now + wait;
                Err(wait)
            }
        }
    }
}

impl Throttle for DualBucket {
    fn delay(&mut self, _: Nanos, _: usize, _: &mut SimRng) -> Nanos {
        0
    }

    fn acquire(&mut self, now: Nanos, thread: usize, _: &mut SimRng) -> Acquire {
        if self.ticket[thread].is_some_and(|id| id < self.valid_from) {
            self.ticket[thread] = None;
        }
        if self.ticket[thread].is_none() && !self.take_ticket(thread) {
            if let Err(wait) = self.start_sync(now) {
                return Acquire::Wait(wait);
            }
            self.take_ticket(thread);
        }
        match self.seconds.try_claim(now, 1) {
            Ok(()) => {
                self.in_flight[thread] = self.ticket[thread].take();
                Acquire::Send
            }
            // "Wait for the time period given by the leaky bucket and then send again."
            Err(wait) => Acquire::Wait(wait),
        }
    }

    fn on_response(&mut self, _: Nanos, thread: usize, response: &Response, _: &mut SimRng) {
        let sync = self.in_flight[thread].take();
        if response.status != Status::Ok
            && let Some(id) = sync
            && id >= self.valid_from
        {
            // The sync failed: what it has not sent yet is dropped, the next sync starts over.
            self.valid_from = id + 1;
            if self.dispatching.is_some_and(|d| d.id == id) {
                self.dispatching = None;
            }
        }
    }

    /// The minute bucket's last answer: how long the last refused sync had to wait (0 after
    /// a granted one), seconds.
    fn sleep_value(&self) -> f64 {
        secs(self.last_minute_wait)
    }

    /// Syncs restarted because the minute bucket refused.
    fn backoffs(&self) -> u64 {
        self.restarts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;
    use crate::time::NANOS_PER_SEC;

    const S: Nanos = NANOS_PER_SEC;
    const MS: Nanos = 1_000_000;

    fn ok() -> Response {
        Response::bare(Status::Ok)
    }

    #[test]
    fn a_moving_window_frees_each_slot_one_window_after_its_claim() {
        let mut w = MovingWindow::new(3, S);
        assert_eq!(w.try_claim(0, 2), Ok(()));
        assert_eq!(w.try_claim(400 * MS, 1), Ok(()));
        // Full: the slot of the claim at 0 frees at 1 s.
        assert_eq!(w.try_claim(500 * MS, 1), Err(500 * MS));
        // Two slots: both claims at 0 free at 1 s.
        assert_eq!(w.time_to_free(500 * MS, 2), 500 * MS);
        // Three: the third is the one taken at 400 ms, free at 1.4 s.
        assert_eq!(w.time_to_free(500 * MS, 3), 900 * MS);
        assert_eq!(w.try_claim(S, 1), Ok(()));
    }

    #[test]
    fn claims_wait_as_the_app_describes() {
        // 60 requests at 3 per second go out from 0 s to 19 s; the 61st then waits 41 s for the
        // first minute slot (the app's description rounds these to "20 seconds" and "up to 40").
        let mut minute = MovingWindow::new(60, 60 * S);
        let mut seconds = MovingWindow::new(3, S);
        let mut now = 0;
        let mut sent = 0;
        while sent < 60 {
            assert_eq!(minute.try_claim(now, 1), Ok(()));
            match seconds.try_claim(now, 1) {
                Ok(()) => sent += 1,
                Err(w) => {
                    now += w;
                    seconds.try_claim(now, 1).unwrap();
                    sent += 1;
                }
            }
        }
        assert_eq!(now, 19 * S);
        assert_eq!(minute.try_claim(now, 1), Err(41 * S));
        // The description's "if we tried to send 60 requests in parallel, at least one of them will
        // wait for at least 20 seconds": with the first three sent at once, the 60th waits 19.
        assert_eq!(MovingWindow::new(3, S).time_to_free(0, 60), 19 * S);
    }

    #[test]
    fn a_pull_sync_claims_nine_minute_slots_and_sends_in_waves_of_three() {
        let cfg = DualBucketConfig::default();
        let mut t = cfg.build(BuildContext::solo(3));
        let mut rng = test_rng();
        let mut sends = Vec::new();
        // Three threads, answers after 20 ms; each thread asks again when its answer is in.
        let mut next = [0 as Nanos; 3];
        while sends.len() < 9 {
            let th = (0..3).min_by_key(|&i| next[i]).unwrap();
            let now = next[th];
            match t.acquire(now, th, &mut rng) {
                Acquire::Send => {
                    sends.push(now);
                    t.on_response(now + 20 * MS, th, &ok(), &mut rng);
                    next[th] = now + 20 * MS;
                }
                Acquire::Wait(w) => next[th] = now + w,
                Acquire::GiveUp => unreachable!(),
            }
        }
        assert_eq!(sends[..3], [0, 0, 0]);
        assert_eq!(sends[3..6], [S, S, S]);
        assert_eq!(sends[6..9], [2 * S, 2 * S, 2 * S]);
        assert_eq!(t.minute.history.len(), 9);
        assert!(t.minute.history.iter().all(|&c| c == 0));
    }

    #[test]
    fn a_full_minute_bucket_restarts_the_sync_after_its_wait() {
        let cfg = DualBucketConfig::default();
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        // 54 slots used at t = 0: a sync of 9 needs 3 of them back, free at 60 s.
        t.minute.try_claim(0, 54).unwrap();
        assert_eq!(t.acquire(10 * S, 0, &mut rng), Acquire::Wait(50 * S));
        assert_eq!(t.backoffs(), 1);
        assert_eq!(t.sleep_value(), 50.0);
        // Asking early changes nothing: the sync restarts at 60 s.
        assert_eq!(t.acquire(30 * S, 0, &mut rng), Acquire::Wait(30 * S));
        assert_eq!(t.acquire(60 * S, 0, &mut rng), Acquire::Send);
        assert_eq!(t.backoffs(), 1);
    }

    #[test]
    fn push_claims_one_minute_slot_per_request() {
        let cfg = DualBucketConfig {
            workload: Workload::Push,
            ..DualBucketConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        let mut now = 0;
        let mut sent = Vec::new();
        while sent.len() < 61 {
            match t.acquire(now, 0, &mut rng) {
                Acquire::Send => {
                    sent.push(now);
                    t.on_response(now, 0, &ok(), &mut rng);
                }
                Acquire::Wait(w) => now += w,
                Acquire::GiveUp => unreachable!(),
            }
        }
        // 3 per second for 20 s, then the 61st waits for the first minute slot to free.
        assert_eq!(sent[59], 19 * S);
        assert_eq!(sent[60], 60 * S);
        assert_eq!(t.backoffs(), 1);
    }

    #[test]
    fn a_429_cancels_the_rest_of_the_sync() {
        let cfg = DualBucketConfig::default();
        let mut t = cfg.build(BuildContext::solo(3));
        let mut rng = test_rng();
        for th in 0..3 {
            assert_eq!(t.acquire(0, th, &mut rng), Acquire::Send);
        }
        // Thread 2 takes the 4th request and waits for the seconds bucket.
        assert_eq!(t.acquire(10 * MS, 2, &mut rng), Acquire::Wait(990 * MS));
        let limited = Response {
            status: Status::Limited,
            ..ok()
        };
        t.on_response(20 * MS, 0, &limited, &mut rng);
        t.on_response(20 * MS, 1, &ok(), &mut rng);
        // Thread 2's request was cancelled with its sync: at 1 s a new sync claims 9 more.
        assert_eq!(t.acquire(S, 2, &mut rng), Acquire::Send);
        assert_eq!(t.minute.history.len(), 18);
        assert_eq!(t.last_sync, 2);
    }

    #[test]
    fn a_pull_period_spaces_the_syncs() {
        let cfg = DualBucketConfig {
            every: HumanDuration::from_secs(60),
            pull_requests: 1,
            ..DualBucketConfig::default()
        };
        let mut t = cfg.build(BuildContext::solo(1));
        let mut rng = test_rng();
        assert_eq!(t.acquire(0, 0, &mut rng), Acquire::Send);
        t.on_response(S, 0, &ok(), &mut rng);
        assert_eq!(t.acquire(S, 0, &mut rng), Acquire::Wait(59 * S));
        assert_eq!(t.acquire(60 * S, 0, &mut rng), Acquire::Send);
    }

    #[test]
    fn oversized_pulls_are_refused() {
        let cfg = DualBucketConfig {
            pull_requests: 61,
            ..DualBucketConfig::default()
        };
        assert_eq!(cfg.problems()[0].0, "pull_requests");
    }
}
