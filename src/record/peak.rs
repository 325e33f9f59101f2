//! The most requests sent within any window of a given length: the number behind claims such as
//! Toggl's dual buckets' "never more than 60 requests in a window of one minute" and Rebased's
//! Redis interval lock's "at least a 1 second delay between calls".
//!
//! A window is half-open, `[t, t + w)`, so two requests exactly `w` apart never share one. Only
//! the send times still inside the latest window are kept: memory is bounded by the peak
//! itself, never by the number of requests.

use std::collections::VecDeque;

use crate::time::Nanos;

/// Sliding count of one sender's requests and the highest it reached.
#[derive(Clone, Debug)]
pub struct PeakCounter {
    window: Nanos,
    recent: VecDeque<Nanos>,
    peak: u64,
}

impl PeakCounter {
    pub fn new(window: Nanos) -> Self {
        PeakCounter {
            window: window.max(1),
            recent: VecDeque::new(),
            peak: 0,
        }
    }

    /// One request sent at `t`; calls come in time order (a late one is counted with the
    /// window it would have closed, never dropped).
    pub fn record(&mut self, t: Nanos) {
        while self
            .recent
            .front()
            .is_some_and(|&f| f.saturating_add(self.window) <= t)
        {
            self.recent.pop_front();
        }
        self.recent.push_back(t);
        self.peak = self.peak.max(self.recent.len() as u64);
    }

    pub fn peak(&self) -> u64 {
        self.peak
    }
}

/// Peak counters per process, per group and per server key of one run.
#[derive(Clone, Debug)]
pub struct Peaks {
    pub processes: Vec<PeakCounter>,
    pub groups: Vec<PeakCounter>,
    pub keys: Vec<PeakCounter>,
}

impl Peaks {
    pub fn new(window: Nanos, processes: usize, groups: usize, keys: usize) -> Self {
        let counters = |n| vec![PeakCounter::new(window); n];
        Peaks {
            processes: counters(processes),
            groups: counters(groups),
            keys: counters(keys),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_busiest_half_open_window() {
        let mut c = PeakCounter::new(10);
        for t in [0, 3, 9] {
            c.record(t);
        }
        assert_eq!(c.peak(), 3);
        // 10 is exactly one window after 0: the window [0, 10) does not hold it.
        c.record(10);
        assert_eq!(c.peak(), 3);
        // [3, 13) holds 3, 9, 10, 12.
        c.record(12);
        assert_eq!(c.peak(), 4);
        // Far later, alone again; the peak stays.
        c.record(100);
        assert_eq!(c.peak(), 4);
        assert_eq!(c.recent.len(), 1);
    }

    #[test]
    fn evenly_spaced_requests_one_window_apart_peak_at_one() {
        let mut c = PeakCounter::new(1_000);
        for i in 0..50 {
            c.record(i * 1_000);
        }
        assert_eq!(c.peak(), 1);
        c.record(49_999);
        assert_eq!(c.peak(), 2);
    }
}
