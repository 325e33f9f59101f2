//! The sim engine's event queue: one pending event per thread, taken in order of time, ties
//! broken by thread.
//!
//! Most of a busy run's events come in two kinds: a wake after the throttle's delay (seconds
//! ahead, in no particular order) and an answer one latency after its send. With a fixed
//! latency the answers are scheduled in the very order they come due, so they need no heap at
//! all: they go to a FIFO lane, and only the wakes pay for the heap (`queue/heap.rs`). An
//! event goes to the lane only when it sorts after everything already there, so the lane stays
//! sorted whatever the latency distribution, and the queue's order — the smaller of the two
//! fronts — is exactly the order of one heap over all events, so runs stay byte-identical.
//! The heap's sifts are the engine's largest cost; the lane halves them per request, and the
//! heap's shape (`queue/heap.rs`) makes each cheaper. The other queues measured against this
//! one, and why none was kept, are in docs/engine-notes.md.

mod heap;

use std::collections::VecDeque;

use heap::Heap;

use crate::time::Nanos;

/// A pending event: when, and whose. Events order by time, then by thread: each thread has
/// exactly one pending event, so this is a total order and the run is deterministic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    pub at: Nanos,
    pub thread: u32,
}

impl Event {
    pub fn new(at: Nanos, thread: u32) -> Self {
        Event { at, thread }
    }
}

/// The queue of a run, its events packed in one integer each: 64 bits (time above, thread
/// below) when the run's threads and length fit, which halves the memory every sift walks
/// through; 128 bits otherwise.
pub enum EventQueue {
    Narrow(Lanes<u64>),
    Wide(Lanes<u128>),
}

impl EventQueue {
    /// A queue for `threads` threads of a run of `duration`, holding `events`.
    pub fn new(threads: usize, duration: Nanos, events: impl IntoIterator<Item = Event>) -> Self {
        let shift = usize::BITS - threads.saturating_sub(1).leading_zeros();
        // Any time past the run's end is stored as its end + 1: the run stops at the first
        // such event, so their order among themselves never matters.
        let cap = duration.saturating_add(1);
        if cap <= u64::MAX >> shift {
            EventQueue::Narrow(Lanes::new(threads, shift, cap, events))
        } else {
            EventQueue::Wide(Lanes::new(threads, 32, Nanos::MAX, events))
        }
    }

    /// The next event, if any. The other calls act on the event this returned.
    #[inline]
    pub fn peek(&mut self) -> Option<Event> {
        match self {
            EventQueue::Narrow(q) => q.peek(),
            EventQueue::Wide(q) => q.peek(),
        }
    }

    /// Schedule a thread's next event (its last one taken off with
    /// [`EventQueue::remove_top`]). `soon` says `next` is one latency away (an answer, a read's
    /// round trip): such events tend to come due in the order they are scheduled, and try the
    /// FIFO lane first.
    #[inline]
    pub fn push(&mut self, next: Event, soon: bool) {
        match self {
            EventQueue::Narrow(q) => q.push(next, soon),
            EventQueue::Wide(q) => q.push(next, soon),
        }
    }

    /// Take off the event [`EventQueue::peek`] returned. The engine does this before it handles
    /// the event: the heap's sift is then a chain of loads the CPU works through while it
    /// handles the event, instead of one it waits on afterwards.
    #[inline]
    pub fn remove_top(&mut self) {
        match self {
            EventQueue::Narrow(q) => q.remove_top(),
            EventQueue::Wide(q) => q.remove_top(),
        }
    }
}

/// An event packed in an unsigned integer: its time shifted up by `shift` bits, its thread
/// below, so the integers order as the events do.
pub trait Key: Copy + Ord {
    fn pack(at: Nanos, thread: u32, shift: u32) -> Self;
    fn unpack(self, shift: u32) -> Event;
}

impl Key for u64 {
    #[inline]
    fn pack(at: Nanos, thread: u32, shift: u32) -> Self {
        (at << shift) | u64::from(thread)
    }
    #[inline]
    fn unpack(self, shift: u32) -> Event {
        Event::new(self >> shift, (self & ((1 << shift) - 1)) as u32)
    }
}

impl Key for u128 {
    #[inline]
    fn pack(at: Nanos, thread: u32, shift: u32) -> Self {
        (u128::from(at) << shift) | u128::from(thread)
    }
    #[inline]
    fn unpack(self, shift: u32) -> Event {
        Event::new((self >> shift) as Nanos, self as u32)
    }
}

/// Where the event `peek` returned lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Heap,
    Fifo,
}

pub struct Lanes<K: Key> {
    heap: Heap<K>,
    /// Sorted: each event pushed here sorts after the one before.
    fifo: VecDeque<K>,
    /// The lane of the event the last `peek` returned.
    top: Lane,
    shift: u32,
    /// Times are stored as at most this.
    cap: Nanos,
}

impl<K: Key> Lanes<K> {
    fn new(
        threads: usize,
        shift: u32,
        cap: Nanos,
        events: impl IntoIterator<Item = Event>,
    ) -> Self {
        let mut q = Lanes {
            heap: Heap::with_capacity(threads),
            fifo: VecDeque::with_capacity(threads),
            top: Lane::Heap,
            shift,
            cap,
        };
        for e in events {
            let k = q.pack(e);
            q.heap.push(k);
        }
        q
    }

    #[inline]
    fn pack(&self, e: Event) -> K {
        K::pack(e.at.min(self.cap), e.thread, self.shift)
    }

    #[inline]
    fn peek(&mut self) -> Option<Event> {
        let k = match (self.heap.first(), self.fifo.front()) {
            (Some(&h), Some(&f)) if f < h => {
                self.top = Lane::Fifo;
                f
            }
            (Some(&h), _) => {
                self.top = Lane::Heap;
                h
            }
            (None, Some(&f)) => {
                self.top = Lane::Fifo;
                f
            }
            (None, None) => return None,
        };
        Some(k.unpack(self.shift))
    }

    #[inline]
    fn push(&mut self, next: Event, soon: bool) {
        let next = self.pack(next);
        if soon && self.fifo.back().is_none_or(|&b| b < next) {
            self.fifo.push_back(next);
        } else {
            self.heap.push(next);
        }
    }

    #[inline]
    fn remove_top(&mut self) {
        match self.top {
            Lane::Fifo => {
                self.fifo.pop_front();
            }
            Lane::Heap => self.heap.pop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Whatever is scheduled, the queue gives the events in the order one sorted set of
        /// them would.
        #[test]
        fn takes_events_in_the_order_of_one_sorted_set(
            starts in prop::collection::vec(0u64..50, 1..40),
            duration in prop_oneof![Just(u64::MAX), 0u64..200],
            steps in prop::collection::vec((0u64..60, any::<bool>(), 0u8..10), 0..400),
        ) {
            let mut q = EventQueue::new(
                starts.len(),
                duration,
                starts.iter().enumerate().map(|(i, &t)| Event::new(t, i as u32)),
            );
            let mut model: BTreeSet<Event> = starts
                .iter()
                .enumerate()
                .map(|(i, &t)| Event::new(t, i as u32))
                .collect();
            for (delay, soon, end) in steps {
                // The engine stops at the first event past the end: what follows is unordered.
                let Some(top) = q.peek().filter(|t| t.at <= duration) else { break };
                prop_assert_eq!(Some(top), model.first().copied().map(|e| clamp(e, duration)));
                let model_at = model.pop_first().expect("the model has the top").at;
                q.remove_top();
                if end != 0 {
                    let next = Event::new(model_at + delay, top.thread);
                    q.push(next, soon);
                    model.insert(next);
                }
            }
            while let Some(top) = q.peek().filter(|t| t.at <= duration) {
                prop_assert_eq!(Some(top), model.pop_first().map(|e| clamp(e, duration)));
                q.remove_top();
            }
            prop_assert!(model.first().is_none_or(|e| e.at > duration));
        }
    }

    /// What the queue gives for an event of a run of `duration`.
    fn clamp(e: Event, duration: Nanos) -> Event {
        Event::new(e.at.min(duration.saturating_add(1)), e.thread)
    }

    #[test]
    fn events_pack_narrow_when_the_run_fits_and_wide_otherwise() {
        let narrow = EventQueue::new(10_000, 86_400 * crate::time::NANOS_PER_SEC, []);
        assert!(matches!(narrow, EventQueue::Narrow(_)));
        let long = EventQueue::new(10_000, 1 << 50, []);
        assert!(matches!(long, EventQueue::Wide(_)));
        for (threads, at, thread) in [(1, 7, 0), (10_000, (1 << 50) - 1, 9_999)] {
            let mut q = EventQueue::new(threads, u64::MAX, [Event::new(at, thread)]);
            assert_eq!(q.peek(), Some(Event::new(at, thread)));
        }
        let mut q = EventQueue::new(3, 100, [Event::new(u64::MAX, 2), Event::new(100, 1)]);
        assert_eq!(q.peek(), Some(Event::new(100, 1)));
        q.remove_top();
        assert_eq!(
            q.peek(),
            Some(Event::new(101, 2)),
            "past the end: the end + 1"
        );
    }
}
