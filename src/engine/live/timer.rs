//! Waits precise to well under a millisecond, for the live engine's client waits and the live
//! server's latency.
//!
//! tokio's timers fire on a 1 ms wheel and round every deadline up to the next tick, so a wait
//! of 1.3 ms takes 2 ms, and on a scaled clock that error is multiplied by the scale (1 ms real
//! is 60 ms of the algorithms' time at 60×). Here one timer thread per process keeps every
//! pending deadline in a heap and sleeps on a condition variable until the earliest, with the
//! thread's timer slack set to 1 ns on Linux (the kernel otherwise adds up to 50 µs to merge
//! wake-ups), then wakes the waiting task. One thread serves every task of the process, so
//! 1,000 client tasks cost what one does.
//!
//! Sleeping to the deadline still leaves the scheduler's delay between the timer thread firing
//! and the task running again, 30-50 µs on a busy 2-core machine: small, but always late, so
//! it adds up wait after wait. The timer fires early by that delay as it learns it from the
//! wake-ups themselves ([`Timer::learn`]), so wake-ups are on time at the median and their
//! lateness averages to about zero. Spinning through the last stretch before a deadline would
//! give a 5 µs median on a quiet machine but a worse tail on a busy one (a thread that yields
//! loses its turn; one that sleeps is favoured when it wakes). Measured in docs/live-timing.md.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// The precision a live run can count on, real time: a wait's usual lateness plus what a
/// loopback HTTP exchange takes, measured on a busy 2-core machine (docs/live-timing.md). A
/// scale that asks for waits below it gets a warning (and `summary.json` records it).
pub const PRECISION: Duration = Duration::from_micros(150);

struct Pending {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Reverse<Pending>>,
    seq: u64,
}

struct Timer {
    queue: Mutex<Queue>,
    changed: Condvar,
    /// How early to fire, nanoseconds: the usual lateness between the timer thread firing
    /// and the waiting task running again (see [`Timer::learn`]).
    lead: AtomicI64,
}

/// The most the timer fires early: more would be a machine too busy to time anything.
const MAX_LEAD: i64 = 1_000_000;

/// The most one wake-up counts when learning the lead, nanoseconds: a stall of milliseconds
/// (the machine busy elsewhere) says nothing about the usual delay, and must not make the
/// next thousand waits end early.
const MAX_LESSON: i64 = 100_000;

impl Timer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A task woke `late` nanoseconds after its deadline (negative: before it). The lead moves
    /// a sixteenth of the way to cancel it, so the lateness of the wake-ups averages to zero
    /// instead of every wait adding the scheduler's delay, which the time scale multiplies.
    fn learn(&self, late: i64) {
        let lead = self.lead.load(Ordering::Relaxed);
        let next = (lead + late.clamp(-MAX_LESSON, MAX_LESSON) / 16).clamp(0, MAX_LEAD);
        self.lead.store(next, Ordering::Relaxed);
    }

    /// The timer thread: fire what is due (less the lead), sleep until the next deadline or a
    /// new earlier one.
    fn run(&self) {
        set_fine_timer_slack();
        let mut q = self.lock();
        loop {
            let lead = Duration::from_nanos(self.lead.load(Ordering::Relaxed).max(0) as u64);
            let now = Instant::now() + lead;
            while q.heap.peek().is_some_and(|p| p.0.at <= now) {
                let Reverse(p) = q.heap.pop().expect("peeked");
                // The waiter may be gone (its task was stopped): nothing to wake.
                let _ = p.wake.send(());
            }
            match q.heap.peek().map(|p| p.0.at) {
                None => q = self.changed.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(at) => {
                    let nap = at.saturating_duration_since(now);
                    q = self
                        .changed
                        .wait_timeout(q, nap)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            lead: AtomicI64::new(0),
        }));
        std::thread::Builder::new()
            .name("precise-timer".into())
            .spawn(move || t.run())
            .expect("the timer thread starts");
        t
    })
}

/// Wait until `at`, to within the machine's scheduling delay rather than tokio's millisecond.
/// Dropping the future (e.g. in a `select!`) abandons the wait.
pub async fn sleep_until(at: Instant) {
    if at <= Instant::now() {
        return;
    }
    let (tx, rx) = oneshot::channel();
    let t = timer();
    {
        let mut q = t.lock();
        let earliest = q.heap.peek().is_none_or(|p| at < p.0.at);
        q.seq += 1;
        let seq = q.seq;
        q.heap.push(Reverse(Pending { at, seq, wake: tx }));
        // Only a new earliest deadline changes how long the timer thread should sleep.
        if earliest {
            t.changed.notify_one();
        }
    }
    // The sender is only dropped unsent if the timer thread died, which it does not; either
    // way the wait is over.
    let _ = rx.await;
    let now = Instant::now();
    let late = if now >= at {
        (now - at).as_nanos() as i64
    } else {
        -((at - now).as_nanos() as i64)
    };
    t.learn(late);
}

/// Ask the kernel not to defer this thread's timed wake-ups (Linux adds up to 50 µs by
/// default to merge them). Elsewhere nothing is changed.
fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    {
        // Best effort: a kernel that refuses leaves the default slack.
        let _ = nix::sys::prctl::set_timerslack(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timer fires in deadline order whatever the order of the calls, and never earlier
    /// than its greatest lead. (Real time: this is the one module whose job is real time.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waits_end_at_their_deadline_not_before_and_in_order() {
        let start = Instant::now();
        // Deadlines 15 ms apart or more, so a busy machine's scheduling cannot swap two wakes
        // (3 ms apart, a .ci/run whose two cores were also running simulations swapped two).
        let offsets_us = [100_000u64, 10_000, 55_000, 25_000, 85_000, 40_000];
        let mut tasks = Vec::new();
        for (i, us) in offsets_us.iter().enumerate() {
            let at = start + Duration::from_micros(*us);
            tasks.push(tokio::spawn(async move {
                sleep_until(at).await;
                (i, Instant::now(), at)
            }));
        }
        let mut woke = Vec::new();
        for t in tasks {
            woke.push(t.await.unwrap());
        }
        let max_lead = Duration::from_nanos(MAX_LEAD as u64);
        for &(_, now, at) in &woke {
            assert!(now + max_lead >= at, "woke {:?} early", at - now);
        }
        woke.sort_by_key(|w| w.1);
        let order: Vec<usize> = woke.iter().map(|w| w.0).collect();
        assert_eq!(order, [1, 3, 5, 2, 4, 0]);
        // A deadline already past returns at once.
        let before = Instant::now();
        sleep_until(start).await;
        assert!(before.elapsed() < Duration::from_millis(50));
    }

    #[tokio::test]
    async fn an_abandoned_wait_does_not_stop_the_others() {
        let short = sleep_until(Instant::now() + Duration::from_millis(1));
        let long = sleep_until(Instant::now() + Duration::from_secs(60));
        tokio::select! {
            () = short => {}
            () = long => panic!("the long wait ended first"),
        }
        // The abandoned 60 s wait is still in the heap; a new one still fires.
        let t = Instant::now();
        sleep_until(t + Duration::from_millis(10)).await;
        assert!(t.elapsed() + Duration::from_nanos(MAX_LEAD as u64) >= Duration::from_millis(10));
    }

    fn timer_alone() -> Timer {
        Timer {
            queue: Mutex::new(Queue::default()),
            changed: Condvar::new(),
            lead: AtomicI64::new(0),
        }
    }

    /// Told its wake-ups' lateness, the lead settles on the scheduler's delay, so a wake-up
    /// fired that early lands on its deadline; it follows the delay down again, and never
    /// passes its bound.
    #[test]
    fn the_lead_learns_the_scheduler_delay_and_follows_it() {
        let t = timer_alone();
        // A scheduler that runs a task 80 µs after it is woken: fired `lead` early, the task
        // is `80 µs - lead` late.
        let settle = |t: &Timer, delay: i64| {
            for _ in 0..400 {
                let lead = t.lead.load(Ordering::Relaxed);
                t.learn(delay - lead);
            }
            t.lead.load(Ordering::Relaxed)
        };
        assert!((settle(&t, 80_000) - 80_000).abs() < 1_000);
        // A quieter machine: early wake-ups pull the lead back.
        assert!((settle(&t, 10_000) - 10_000).abs() < 1_000);
        // One stall of 15 ms moves it by a lesson's worth, not by a thousandth of the stall.
        let before = t.lead.load(Ordering::Relaxed);
        t.learn(15_000_000);
        assert_eq!(t.lead.load(Ordering::Relaxed) - before, MAX_LESSON / 16);
        // A machine stalled for good: the lead stops at its bound rather than firing
        // milliseconds early.
        assert_eq!(settle(&t, 50_000_000), MAX_LEAD);
        // Early by more than the delay ever was: never a negative lead.
        assert_eq!(settle(&t, -5_000_000), 0);
    }
}
