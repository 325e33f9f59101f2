//! One client thread's closed loop, without I/O: ask the throttle for a delay, wait, pass its
//! local gate (send, wait more, or give up the job), send, hand the answer to the throttle,
//! count the job, repeat. Both engines drive this one machine — the sim from its event queue
//! on virtual time, the live worker with real sleeps and real HTTP — so what a thread does
//! between two requests is written once, and the two engines agree by construction.
//!
//! The driver owns time and transport: it waits out a [`Step::Sleep`]'s `delay`, sends on
//! [`Step::Send`] and reports the answer through [`ClientLoop::answered`]. The machine makes
//! every call to the throttle, in the same order the sim always made them, so a seeded run
//! draws the same random numbers.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::exchange::{Response, Status};
use crate::rng::SimRng;
use crate::throttle::{Acquire, Throttle};
use crate::time::Nanos;

/// The least time between two sends of one thread. A send due at the very instant of the
/// thread's previous one (no latency and no wait: `[server] latency = "0s"` with `none`, or
/// `fixed` at `sleep = "0s"`) waits this long first, so virtual time always advances between
/// a refusal and its retry; without it the sim sent hundreds of millions of requests at one
/// instant and never reached the end of the run. A run with any latency never meets it.
pub const MIN_RESEND_GAP: Nanos = crate::time::NANOS_PER_SEC / 1000;

/// What the driver does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Wait `delay` from the time of the call (chosen by [`Throttle::delay`], or by the
    /// gate's [`Acquire::Wait`]), then call [`ClientLoop::wake`]; `gave_up` says the gate
    /// abandoned the job before this new wait. (Small enough to come back in registers.)
    Sleep { delay: Nanos, gave_up: bool },
    /// Send the request now; `waited` is how long the thread waited for this send since it
    /// last asked the throttle for a delay. Then call [`ClientLoop::answered`].
    Send { waited: Nanos },
    /// The thread sends nothing more (its group stopped, or its jobs are done).
    Done,
}

/// What an answer meant for the thread's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered {
    /// On a 2xx: how long since the thread first wanted to send this job.
    pub job_wait: Option<Nanos>,
    /// This 2xx was the thread's last job.
    pub finished: bool,
}

/// A group's shared job pool (`pool = N`): its threads take jobs from one count, and each
/// works the job it took until it gets a 2xx. The group is done when the pool is empty and
/// every job taken got its 2xx, so exactly `N` requests succeed.
#[derive(Debug)]
pub struct Pool(AtomicU64);

impl Pool {
    pub fn new(jobs: u64) -> Arc<Self> {
        Arc::new(Pool(AtomicU64::new(jobs)))
    }

    /// Take one job; false when the pool is empty.
    pub fn take(&self) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Jobs nobody has taken yet.
    pub fn left(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// One thread's state between two calls.
#[derive(Clone, Debug)]
pub struct ClientLoop {
    /// The thread's index within its process (what the throttle calls `thread`).
    local: u32,
    /// When the group leaves (the end of the run at the latest): nothing is sent from then.
    stop: Nanos,
    /// 2xx still to get before the thread is done (finite workloads).
    jobs_left: Option<u64>,
    /// When the thread first wanted to send the job it is working on.
    job_started: Nanos,
    /// The wait before the next send, summed over the gate's extra waits.
    waited: Nanos,
    /// The group's shared pool, when it has one (then `jobs_left` is `None`).
    pool: Option<Arc<Pool>>,
    /// `stop_when_remaining_at_most`: the thread stops after an answer whose `remaining` is at
    /// most this.
    stop_when_remaining: Option<u64>,
    /// The thread sends nothing more (its pool is empty or the server said stop).
    done: bool,
    /// When the thread last sent ([`Nanos::MAX`]: never).
    last_send: Nanos,
}

impl ClientLoop {
    pub fn new(local: u32, start: Nanos, stop: Nanos, jobs: Option<u64>) -> Self {
        ClientLoop {
            local,
            stop,
            jobs_left: jobs,
            job_started: start,
            waited: 0,
            pool: None,
            stop_when_remaining: None,
            done: false,
            last_send: Nanos::MAX,
        }
    }

    /// Take jobs from the group's shared `pool` instead of a quota of the thread's own.
    pub fn with_pool(mut self, pool: Option<Arc<Pool>>) -> Self {
        if pool.is_some() {
            self.jobs_left = None;
        }
        self.pool = pool;
        self
    }

    /// Stop after an answer whose `remaining` is at most `at_most` (the gem's "time to clear"
    /// benchmark).
    pub fn with_stop_when_remaining(mut self, at_most: Option<u64>) -> Self {
        self.stop_when_remaining = at_most;
        self
    }

    /// The thread's index within its process.
    pub fn local(&self) -> u32 {
        self.local
    }

    /// Whether a send at `at` would be past the group's stop (a driver on a real clock need
    /// not sleep until then to learn it).
    pub fn stopped_at(&self, at: Nanos) -> bool {
        at >= self.stop
    }

    /// The thread joins at `now`: its first wait.
    #[inline(always)]
    pub fn start(&mut self, now: Nanos, throttle: &mut dyn Throttle, rng: &mut SimRng) -> Step {
        self.job_started = now;
        if let Some(pool) = &self.pool
            && !pool.take()
        {
            // More threads than jobs: this one never gets one.
            self.done = true;
            return Step::Done;
        }
        self.next_wait(now, throttle, rng, false)
    }

    /// The wait is over at `now`: ask the throttle's gate.
    #[inline(always)]
    pub fn wake(&mut self, now: Nanos, throttle: &mut dyn Throttle, rng: &mut SimRng) -> Step {
        if self.stopped_at(now) {
            return Step::Done;
        }
        if now == self.last_send {
            // No time passed since the last send (no latency, no wait): wait the least gap
            // first, then ask the gate as after any wait.
            self.waited = self.waited.saturating_add(MIN_RESEND_GAP);
            return Step::Sleep {
                delay: MIN_RESEND_GAP,
                gave_up: false,
            };
        }
        match throttle.acquire(now, self.local as usize, rng) {
            Acquire::Send => {
                self.last_send = now;
                Step::Send {
                    waited: self.waited,
                }
            }
            Acquire::Wait(more) => {
                self.waited = self.waited.saturating_add(more);
                Step::Sleep {
                    delay: more,
                    gave_up: false,
                }
            }
            Acquire::GiveUp => {
                self.job_started = now;
                self.next_wait(now, throttle, rng, true)
            }
        }
    }

    /// The answer to the request sent last arrived at `now`: the throttle learns it and the
    /// job is counted. Call [`ClientLoop::next`] after recording what this returns.
    #[inline(always)]
    pub fn answered(
        &mut self,
        now: Nanos,
        response: &Response,
        throttle: &mut dyn Throttle,
        rng: &mut SimRng,
    ) -> Answered {
        throttle.on_response(now, self.local as usize, response, rng);
        let mut answered = Answered {
            job_wait: None,
            finished: false,
        };
        if response.status == Status::Ok {
            answered.job_wait = Some(now.saturating_sub(self.job_started));
            self.job_started = now;
            if let Some(left) = &mut self.jobs_left {
                *left -= 1;
                answered.finished = *left == 0;
            }
            if let Some(pool) = &self.pool
                && !pool.take()
            {
                answered.finished = true;
            }
        }
        if let (Some(at_most), Some(remaining)) = (self.stop_when_remaining, response.remaining)
            && remaining <= at_most
        {
            answered.finished = true;
        }
        self.done |= answered.finished;
        answered
    }

    /// After an answer at `now`: the next wait, or [`Step::Done`] once the jobs are done (or
    /// the pool is empty, or the server's `remaining` fell to the stop threshold).
    #[inline(always)]
    pub fn next(&mut self, now: Nanos, throttle: &mut dyn Throttle, rng: &mut SimRng) -> Step {
        if self.done {
            Step::Done
        } else {
            self.next_wait(now, throttle, rng, false)
        }
    }

    #[inline(always)]
    fn next_wait(
        &mut self,
        now: Nanos,
        throttle: &mut dyn Throttle,
        rng: &mut SimRng,
        gave_up: bool,
    ) -> Step {
        let delay = throttle.delay(now, self.local as usize, rng);
        self.waited = delay;
        Step::Sleep { delay, gave_up }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    const S: Nanos = crate::time::NANOS_PER_SEC;

    /// Waits 1 s; its gate refuses once (wait 0.5 s more), then gives up once, then sends.
    struct Gate {
        acquires: u32,
        answers: Vec<Status>,
    }

    impl Throttle for Gate {
        fn delay(&mut self, _now: Nanos, _thread: usize, _rng: &mut SimRng) -> Nanos {
            S
        }
        fn acquire(&mut self, _now: Nanos, _thread: usize, _rng: &mut SimRng) -> Acquire {
            self.acquires += 1;
            match self.acquires {
                1 => Acquire::Wait(S / 2),
                2 => Acquire::GiveUp,
                _ => Acquire::Send,
            }
        }
        fn on_response(&mut self, _now: Nanos, _t: usize, r: &Response, _rng: &mut SimRng) {
            self.answers.push(r.status);
        }
        fn sleep_value(&self) -> f64 {
            1.0
        }
    }

    fn sleep(delay: Nanos, gave_up: bool) -> Step {
        Step::Sleep { delay, gave_up }
    }

    #[test]
    fn waits_passes_the_gate_sends_and_counts_jobs() {
        let mut t = Gate {
            acquires: 0,
            answers: Vec::new(),
        };
        let mut rng = test_rng();
        let mut lp = ClientLoop::new(0, 10 * S, 100 * S, Some(2));
        assert_eq!(lp.start(10 * S, &mut t, &mut rng), sleep(S, false));
        // The gate asks for half a second more: the waits add up.
        assert_eq!(lp.wake(11 * S, &mut t, &mut rng), sleep(S / 2, false));
        // It gives up the job: a new job starts now, with a new delay.
        assert_eq!(lp.wake(11 * S + S / 2, &mut t, &mut rng), sleep(S, true));
        assert_eq!(
            lp.wake(12 * S + S / 2, &mut t, &mut rng),
            Step::Send { waited: S }
        );
        // A 429 is no job done.
        let limited = Response::bare(Status::Limited);
        let a = lp.answered(13 * S, &limited, &mut t, &mut rng);
        assert_eq!(
            a,
            Answered {
                job_wait: None,
                finished: false
            }
        );
        assert_eq!(lp.next(13 * S, &mut t, &mut rng), sleep(S, false));
        assert_eq!(lp.wake(14 * S, &mut t, &mut rng), Step::Send { waited: S });
        // The first 2xx: the job waited since the give-up at 11.5 s.
        let ok = Response::bare(Status::Ok);
        let a = lp.answered(15 * S, &ok, &mut t, &mut rng);
        assert_eq!(a.job_wait, Some(15 * S - (11 * S + S / 2)));
        assert!(!a.finished);
        assert_eq!(lp.next(15 * S, &mut t, &mut rng), sleep(S, false));
        assert_eq!(lp.wake(16 * S, &mut t, &mut rng), Step::Send { waited: S });
        let a = lp.answered(17 * S, &ok, &mut t, &mut rng);
        assert_eq!(a.job_wait, Some(2 * S));
        assert!(a.finished, "two jobs, two 2xx");
        assert_eq!(lp.next(17 * S, &mut t, &mut rng), Step::Done);
        assert_eq!(
            t.answers,
            vec![Status::Limited, Status::Ok, Status::Ok],
            "the throttle heard every answer"
        );
    }

    fn answer(
        lp: &mut ClientLoop,
        t: &mut Gate,
        status: Status,
        remaining: Option<u64>,
    ) -> Answered {
        let mut rng = test_rng();
        let r = Response {
            remaining,
            ..Response::bare(status)
        };
        lp.answered(0, &r, t, &mut rng)
    }

    #[test]
    fn threads_of_a_pool_share_one_count() {
        // Three jobs for two threads: A takes one, B takes one, A's 2xx takes the last, B's
        // 2xx finds the pool empty, then A's second 2xx does too. A 429 takes nothing.
        let mut t = Gate {
            acquires: 2,
            answers: Vec::new(),
        };
        let mut rng = test_rng();
        let pool = Pool::new(3);
        let mut a = ClientLoop::new(0, 0, 100 * S, Some(99)).with_pool(Some(pool.clone()));
        let mut b = ClientLoop::new(1, 0, 100 * S, None).with_pool(Some(pool.clone()));
        assert_eq!(a.start(0, &mut t, &mut rng), sleep(S, false));
        assert_eq!(b.start(0, &mut t, &mut rng), sleep(S, false));
        assert_eq!(pool.left(), 1);
        assert!(!answer(&mut a, &mut t, Status::Limited, None).finished);
        assert_eq!(pool.left(), 1, "a 429 finishes no job");
        assert!(!answer(&mut a, &mut t, Status::Ok, None).finished);
        assert_eq!(pool.left(), 0);
        assert_eq!(a.next(0, &mut t, &mut rng), sleep(S, false));
        assert!(answer(&mut b, &mut t, Status::Ok, None).finished);
        assert_eq!(b.next(0, &mut t, &mut rng), Step::Done);
        assert!(answer(&mut a, &mut t, Status::Ok, None).finished);
        assert_eq!(a.next(0, &mut t, &mut rng), Step::Done);
        // A third thread joining now finds nothing to do.
        let mut c = ClientLoop::new(2, 0, 100 * S, None).with_pool(Some(pool));
        assert_eq!(c.start(0, &mut t, &mut rng), Step::Done);
    }

    #[test]
    fn a_thread_stops_once_remaining_is_at_most_the_threshold() {
        let mut t = Gate {
            acquires: 2,
            answers: Vec::new(),
        };
        let mut rng = test_rng();
        let mut lp = ClientLoop::new(0, 0, 100 * S, None).with_stop_when_remaining(Some(10));
        assert_eq!(lp.start(0, &mut t, &mut rng), sleep(S, false));
        assert!(!answer(&mut lp, &mut t, Status::Ok, Some(11)).finished);
        assert!(
            !answer(&mut lp, &mut t, Status::Ok, None).finished,
            "no header, no stop"
        );
        assert_eq!(lp.next(0, &mut t, &mut rng), sleep(S, false));
        // A 429's remaining counts too: the server says the bucket is (nearly) empty.
        assert!(answer(&mut lp, &mut t, Status::Limited, Some(10)).finished);
        assert_eq!(lp.next(0, &mut t, &mut rng), Step::Done);
    }

    /// Never waits: `none`, or `fixed` at `sleep = "0s"`.
    struct Eager;

    impl Throttle for Eager {
        fn delay(&mut self, _now: Nanos, _thread: usize, _rng: &mut SimRng) -> Nanos {
            0
        }
        fn on_response(&mut self, _: Nanos, _: usize, _: &Response, _: &mut SimRng) {}
        fn sleep_value(&self) -> f64 {
            0.0
        }
    }

    #[test]
    fn a_thread_never_sends_twice_at_one_instant() {
        // No latency and no wait: the answer comes at the send's instant and the next wake
        // too. The retry waits the least gap, so the clock moves on (without it every retry
        // came at t = 0 and the run never ended).
        let mut t = Eager;
        let mut rng = test_rng();
        let mut lp = ClientLoop::new(0, 0, 100 * S, None);
        assert_eq!(lp.start(0, &mut t, &mut rng), sleep(0, false));
        assert_eq!(lp.wake(0, &mut t, &mut rng), Step::Send { waited: 0 });
        let limited = Response::bare(Status::Limited);
        lp.answered(0, &limited, &mut t, &mut rng);
        assert_eq!(lp.next(0, &mut t, &mut rng), sleep(0, false));
        assert_eq!(
            lp.wake(0, &mut t, &mut rng),
            sleep(MIN_RESEND_GAP, false),
            "a second send at t = 0 waits"
        );
        assert_eq!(
            lp.wake(MIN_RESEND_GAP, &mut t, &mut rng),
            Step::Send {
                waited: MIN_RESEND_GAP
            }
        );
        // Any time between two sends, however short, is left alone.
        lp.answered(MIN_RESEND_GAP + 1, &limited, &mut t, &mut rng);
        assert_eq!(
            lp.next(MIN_RESEND_GAP + 1, &mut t, &mut rng),
            sleep(0, false)
        );
        assert_eq!(
            lp.wake(MIN_RESEND_GAP + 1, &mut t, &mut rng),
            Step::Send { waited: 0 }
        );
    }

    #[test]
    fn nothing_is_sent_from_the_groups_stop() {
        let mut t = Gate {
            acquires: 2,
            answers: Vec::new(),
        };
        let mut rng = test_rng();
        let mut lp = ClientLoop::new(0, 0, 5 * S, None);
        assert_eq!(lp.start(4 * S, &mut t, &mut rng), sleep(S, false));
        assert_eq!(lp.wake(5 * S, &mut t, &mut rng), Step::Done);
        assert_eq!(t.acquires, 2, "the gate is not asked after the stop");
    }
}
