//! `fairness_windowed`: fairness that a changing population does not spoil.
//!
//! `fairness` compares each thread's 2xx per active second over the whole run, so when groups
//! join and leave even a perfectly fair client scores below 1: a thread present only in the
//! crowded hours gets fewer per second than one that also ran alone. Here time is cut into
//! consecutive windows `[k·W, (k+1)·W)` (`W` = `[run] fairness_window`, at most the run's
//! length); in each, Jain's index is taken over the 2xx counts of the threads that ran through
//! the whole window (their group started by its start and had not left before its end, and a
//! finite workload was not done before its end). The metric is the mean of those indices over
//! the windows. A window in which those threads got no 2xx at all (an outage) says nothing
//! about fairness and is left out; with no window left the metric is null.
//!
//! Counted from the recorder's own per-thread counters as requests are recorded: two counters
//! per thread (the open window and the next, for answers recorded a little out of order in
//! live mode), closed at the sampling ticks, which engines only reach once every earlier
//! request is in.

use super::ThreadStats;
use super::summary::jain_index;
use crate::scenario::Layout;
use crate::time::Nanos;

/// The running mean of one group's (or the run's) per-window indices.
#[derive(Clone, Copy, Debug, Default)]
struct MeanOf {
    sum: f64,
    windows: u32,
}

impl MeanOf {
    fn add(&mut self, counts: &[f64]) {
        if counts.iter().sum::<f64>() > 0.0 {
            self.sum += jain_index(counts);
            self.windows += 1;
        }
    }

    fn mean(&self) -> Option<f64> {
        (self.windows > 0).then(|| self.sum / f64::from(self.windows))
    }
}

pub(super) struct Windowed {
    window: Nanos,
    /// The end of the window `open` counts.
    end: Nanos,
    /// Per thread: 2xx in the open window, and in the one after it.
    open: Vec<u32>,
    next: Vec<u32>,
    groups: Vec<MeanOf>,
    overall: MeanOf,
    scratch: Vec<f64>,
    scratch_all: Vec<f64>,
}

impl Windowed {
    /// Windows of `window` (cut to the run's length) over `layout`'s threads.
    pub(super) fn new(layout: &Layout, window: Nanos) -> Self {
        let window = window.min(layout.duration).max(1);
        Windowed {
            window,
            end: window,
            open: vec![0; layout.threads.len()],
            next: vec![0; layout.threads.len()],
            groups: vec![MeanOf::default(); layout.groups.len()],
            overall: MeanOf::default(),
            scratch: Vec::new(),
            scratch_all: Vec::new(),
        }
    }

    /// A 2xx for a request `thread` sent at `t`.
    #[inline]
    pub(super) fn record_ok(
        &mut self,
        thread: usize,
        t: Nanos,
        layout: &Layout,
        threads: &[ThreadStats],
    ) {
        // Two windows ahead: every request of the open window is in (the engines record in
        // time order, give or take one window in live mode), so it can be closed.
        while t >= self.end.saturating_add(self.window) {
            self.close(layout, threads);
        }
        let slot = if t < self.end {
            &mut self.open[thread]
        } else {
            &mut self.next[thread]
        };
        *slot = slot.saturating_add(1);
    }

    /// Close every window that ends at or before `t` (a tick, or the end of the run: every
    /// request sent before `t` has been recorded).
    pub(super) fn close_through(&mut self, t: Nanos, layout: &Layout, threads: &[ThreadStats]) {
        while self.end <= t {
            self.close(layout, threads);
        }
    }

    fn close(&mut self, layout: &Layout, threads: &[ThreadStats]) {
        let (start, end) = (self.end - self.window, self.end);
        self.scratch_all.clear();
        for (gi, g) in layout.groups.iter().enumerate() {
            if g.start > start || g.stop < end {
                continue;
            }
            self.scratch.clear();
            for th in g.threads.clone() {
                if threads[th].finished_at.is_some_and(|f| f < end) {
                    continue;
                }
                self.scratch.push(f64::from(self.open[th]));
            }
            self.groups[gi].add(&self.scratch);
            self.scratch_all.extend_from_slice(&self.scratch);
        }
        self.overall.add(&self.scratch_all);
        std::mem::swap(&mut self.open, &mut self.next);
        self.next.iter_mut().for_each(|c| *c = 0);
        self.end = self.end.saturating_add(self.window);
    }

    /// The run's mean index, and each group's.
    pub(super) fn result(&self) -> (Option<f64>, Vec<Option<f64>>) {
        (
            self.overall.mean(),
            self.groups.iter().map(MeanOf::mean).collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FinishContext, RequestRecord, RunMode, Summary};
    use super::*;
    use crate::exchange::{Response, Status};
    use crate::record::Recorder;
    use crate::scenario::parse_scenario;
    use crate::time::NANOS_PER_SEC;

    const MIN: Nanos = 60 * NANOS_PER_SEC;

    /// Run `oks` (thread, minute) 2xx through a recorder over the scenario `text`.
    fn summarize(text: &str, oks: &[(usize, Nanos)]) -> Summary {
        let scenario = parse_scenario(text, "<test>", "t", &[], 1).unwrap();
        let layout = Layout::new(&scenario);
        let mut rec = Recorder::new(&layout, MIN, std::io::sink(), None::<std::io::Sink>)
            .unwrap()
            .with_fairness_window(scenario.run.fairness_window.nanos());
        let mut oks = oks.to_vec();
        oks.sort_by_key(|&(th, t)| (t, th));
        for (thread, sent_at) in oks {
            while let Some(tick) = rec.next_tick().filter(|&t| t < sent_at) {
                rec.tick(tick, &vec![0.0; layout.processes.len()]).unwrap();
            }
            rec.record_request(&RequestRecord {
                thread,
                sent_at,
                response: Response::bare(Status::Ok),
                waited: 0,
                failure: None,
                raw: None,
            })
            .unwrap();
        }
        let procs = vec![(0.0, 0); layout.processes.len()];
        rec.finish(
            layout.duration,
            FinishContext {
                scenario: "t",
                seed: 1,
                mode: RunMode::Sim,
                partial: false,
                partial_reason: None,
                processes: &procs,
                capacity_per_key: 1.0,
            },
        )
        .unwrap()
    }

    /// `per_minute` 2xx for `thread` in every minute of `[from, to)` minutes, spread evenly.
    fn steady(thread: usize, from: u64, to: u64, per_minute: u64) -> Vec<(usize, Nanos)> {
        (from..to)
            .flat_map(|m| (0..per_minute).map(move |k| (thread, m * MIN + k * MIN / per_minute)))
            .collect()
    }

    const JOIN: &str = r#"
[run]
duration = "40m"
fairness_window = "10m"
[[clients]]
name = "early"
threads = 2
[[clients]]
name = "late"
threads = 2
start = "20m"
"#;

    #[test]
    fn a_fair_client_whose_population_grows_scores_one_where_fairness_does_not() {
        // 12 per minute shared equally: 6 each while two threads run, 3 each with four.
        let mut oks = Vec::new();
        for th in 0..2 {
            oks.extend(steady(th, 0, 20, 6));
            oks.extend(steady(th, 20, 40, 3));
        }
        for th in 2..4 {
            oks.extend(steady(th, 20, 40, 3));
        }
        let s = summarize(JOIN, &oks);
        // Per active second: early 180 / 2400 s, late 60 / 1200 s; Jain of
        // [0.075, 0.075, 0.05, 0.05] = 0.25² / (4 · 0.01625) = 0.9615…
        assert!((s.metrics.fairness - 0.0625 / 0.065).abs() < 1e-9);
        assert_eq!(s.metrics.fairness_windowed, Some(1.0));
        assert_eq!(s.groups[0].metrics.fairness_windowed, Some(1.0));
        assert_eq!(s.groups[1].metrics.fairness_windowed, Some(1.0));
    }

    #[test]
    fn each_window_is_judged_over_the_threads_running_through_it_and_averaged() {
        let mut oks = Vec::new();
        // Windows 0 and 1: only `early`; 1 against 3 per minute (Jain 16 / 20 = 0.8), then
        // equal (1.0).
        oks.extend(steady(0, 0, 10, 1));
        oks.extend(steady(1, 0, 10, 3));
        oks.extend(steady(0, 10, 20, 2));
        oks.extend(steady(1, 10, 20, 2));
        // Windows 2 and 3: all four; window 2 equal, window 3 one `late` thread gets nothing:
        // [1, 1, 1, 0] gives 9 / 12 = 0.75 overall, and `late` alone [1, 0] gives 0.5.
        for th in 0..4 {
            oks.extend(steady(th, 20, 30, 1));
        }
        for th in 0..3 {
            oks.extend(steady(th, 30, 40, 1));
        }
        let s = summarize(JOIN, &oks);
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(
            s.metrics.fairness_windowed,
            (0.8 + 1.0 + 1.0 + 0.75) / 4.0
        ));
        assert!(close(
            s.groups[0].metrics.fairness_windowed,
            (0.8 + 1.0 + 1.0 + 1.0) / 4.0
        ));
        assert!(close(
            s.groups[1].metrics.fairness_windowed,
            (1.0 + 0.5) / 2.0
        ));
    }

    #[test]
    fn partial_windows_and_windows_without_a_2xx_are_left_out() {
        let text = r#"
[run]
duration = "25m"
fairness_window = "10m"
[[clients]]
name = "a"
threads = 2
[[clients]]
name = "gone"
threads = 1
stop = "15m"
"#;
        let mut oks = Vec::new();
        // Window 0: nothing at all (an outage): left out. Window 1: `gone` leaves within it,
        // so only `a` counts, 1 against 3. The last 5 minutes are no whole window.
        oks.extend(steady(0, 10, 20, 1));
        oks.extend(steady(1, 10, 20, 3));
        oks.extend(steady(2, 10, 15, 9));
        oks.extend(steady(0, 20, 25, 7));
        let s = summarize(text, &oks);
        assert!((s.metrics.fairness_windowed.unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(s.groups[1].metrics.fairness_windowed, None);
    }

    #[test]
    fn a_run_shorter_than_the_window_is_one_window() {
        let text = "[run]\nduration = \"5m\"\n[[clients]]\nname = \"a\"\nthreads = 2\n";
        let mut oks = steady(0, 0, 5, 1);
        oks.extend(steady(1, 0, 5, 3));
        let s = summarize(text, &oks);
        assert!((s.metrics.fairness_windowed.unwrap() - 0.8).abs() < 1e-12);
    }
}
