//! Who shares the key: a drawn fleet of processes and threads, and when each comes and goes.
//!
//! A fleet is one group of `P` processes of `T` threads, or (a quarter of the fleets) two such
//! groups of different shapes (a big worker pool beside many small cron jobs, as the matrix's
//! 500 + 500 × 1). `P` is log-uniform on 1 to 500 and `T` on 1 to 200, drawn again until the
//! fleet has at most 500 processes and 2,000 threads: the many-small and the few-large fleets
//! come as often as the middle ones, which is where blind laws break (one process cannot tell
//! 200 one-thread peers from none).
//!
//! A fifth of the fleets churn: one group (at least two processes), of which a share stays
//! throughout and the rest leave and join in two to eight groups, each present for at least two
//! fairness windows, so the law must find the new fair share after every change.

use super::draw::{chance, log_uniform_int, uniform, uniform_int};
use crate::rng::SimRng;
use crate::time::HumanDuration;

/// The most processes and threads a fleet has in all.
pub const MAX_PROCESSES: u64 = 500;
pub const MAX_THREADS: u64 = 2_000;
/// The most threads one process has.
pub const MAX_THREADS_PER_PROCESS: u64 = 200;
/// Share of the fleets that churn, and of the others that are two groups.
pub const CHURN_SHARE: f64 = 0.2;
pub const TWO_GROUPS_SHARE: f64 = 0.25;
/// How many groups of a churning fleet come and go.
pub const CHURN_GROUPS: (u64, u64) = (2, 8);
/// The share of a churning fleet's processes that stays throughout.
pub const STAYING: (f64, f64) = (0.2, 0.8);
/// Share of the coming and going groups present from the start (they only leave).
pub const FROM_THE_START: f64 = 0.25;
/// Processes at t = 0 with one thread each, from which the matrix's targets for "many
/// independent one-thread processes" apply.
pub const MANY_SINGLES: u64 = 200;

/// One `[[clients]]` group.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub name: String,
    pub processes: u64,
    pub threads: u64,
    /// When it joins and leaves, in seconds; 0 and `None`: throughout.
    pub start_s: u64,
    pub stop_s: Option<u64>,
}

impl Group {
    fn new(name: &str, processes: u64, threads: u64) -> Self {
        Group {
            name: name.to_string(),
            processes,
            threads,
            start_s: 0,
            stop_s: None,
        }
    }

    fn total_threads(&self) -> u64 {
        self.processes * self.threads
    }

    /// Whether it runs from the start to the end.
    fn stays(&self) -> bool {
        self.start_s == 0 && self.stop_s.is_none()
    }
}

/// A drawn fleet.
#[derive(Clone, Debug, PartialEq)]
pub struct Fleet {
    pub groups: Vec<Group>,
    pub churn: bool,
}

impl Fleet {
    /// Every thread of every group, as if all ran at once: what sizes the run.
    pub fn total_threads(&self) -> u64 {
        self.groups.iter().map(Group::total_threads).sum()
    }

    pub fn total_processes(&self) -> u64 {
        self.groups.iter().map(|g| g.processes).sum()
    }

    /// The threads present throughout: the fewest that ever share the key.
    pub fn staying_threads(&self) -> u64 {
        self.groups
            .iter()
            .filter(|g| g.stays())
            .map(Group::total_threads)
            .sum()
    }

    /// The most threads on the key at one time.
    pub fn peak_threads(&self) -> u64 {
        self.groups
            .iter()
            .map(|g| g.start_s)
            .map(|t| {
                self.groups
                    .iter()
                    .filter(|g| g.start_s <= t && g.stop_s.is_none_or(|s| s > t))
                    .map(Group::total_threads)
                    .sum()
            })
            .max()
            .unwrap_or(0)
    }

    /// One-thread processes there at t = 0.
    pub fn singles_at_start(&self) -> u64 {
        self.groups
            .iter()
            .filter(|g| g.threads == 1 && g.start_s == 0)
            .map(|g| g.processes)
            .sum()
    }

    /// `5x4`, `1x200+300x1`, `20x4-churn`: a part of the shape's name.
    pub fn short(&self) -> String {
        if self.churn {
            let all = self.total_processes();
            let threads = self.groups[0].threads;
            return format!("{all}x{threads}-churn");
        }
        let parts: Vec<String> = self
            .groups
            .iter()
            .map(|g| format!("{}x{}", g.processes, g.threads))
            .collect();
        parts.join("+")
    }

    /// "5 processes of 4 threads", "…; 3 processes join at 20m and leave at 1h10m", for the
    /// shape's description.
    pub fn describe(&self) -> String {
        let of = |g: &Group| {
            let p = if g.processes == 1 {
                "process"
            } else {
                "processes"
            };
            let t = if g.threads == 1 { "thread" } else { "threads" };
            format!("{} {p} of {} {t}", g.processes, g.threads)
        };
        let mut parts = Vec::new();
        for g in &self.groups {
            let mut text = of(g);
            if g.start_s > 0 {
                text += &format!(" joining at {}", HumanDuration::from_secs(g.start_s));
            }
            if let Some(stop) = g.stop_s {
                text += &format!(" leaving at {}", HumanDuration::from_secs(stop));
            }
            parts.push(text);
        }
        parts.join(", ")
    }

    /// Give the coming and going groups their times in a run of `duration_s` judged on
    /// fairness windows of `window_s` (`duration_s ≥ 8 window_s`, [`super::sizing`] sees to
    /// it): each present at least two windows, a quarter from the start, the others joining
    /// between one window in and three before the end; a group that would leave within the
    /// last window stays to the end. Times are whole minutes.
    pub fn schedule(&mut self, rng: &mut SimRng, duration_s: u64, window_s: u64) {
        let minute = |s: u64| s / 60 * 60;
        for g in self.groups.iter_mut().filter(|g| g.name != STAY) {
            let (start, stop) = if chance(rng, FROM_THE_START) {
                let stop = uniform_int(rng, 3 * window_s, duration_s - window_s);
                (0, stop)
            } else {
                let start = uniform_int(rng, window_s, duration_s - 3 * window_s);
                (
                    start,
                    start + uniform_int(rng, 2 * window_s, duration_s - start),
                )
            };
            g.start_s = minute(start);
            let stop = minute(stop);
            g.stop_s = (stop + window_s <= duration_s).then_some(stop);
        }
    }
}

/// The name of a churning fleet's group that stays throughout.
const STAY: &str = "stay";

/// A fleet: churning ([`CHURN_SHARE`]), else one group or two ([`TWO_GROUPS_SHARE`]). A
/// churning fleet's times are set later ([`Fleet::schedule`]), once the run's length is known.
pub fn draw_fleet(rng: &mut SimRng) -> Fleet {
    if chance(rng, CHURN_SHARE) {
        return draw_churn(rng);
    }
    let groups = if chance(rng, TWO_GROUPS_SHARE) { 2 } else { 1 };
    loop {
        let sizes: Vec<(u64, u64)> = (0..groups).map(|_| draw_group(rng, 1)).collect();
        let processes: u64 = sizes.iter().map(|s| s.0).sum();
        let threads: u64 = sizes.iter().map(|s| s.0 * s.1).sum();
        if processes <= MAX_PROCESSES && threads <= MAX_THREADS {
            let names = ["a", "b"];
            let groups = sizes
                .iter()
                .zip(names)
                .map(|(&(p, t), name)| Group::new(if groups == 1 { "w" } else { name }, p, t))
                .collect();
            return Fleet {
                groups,
                churn: false,
            };
        }
    }
}

/// Processes log-uniform on `min_processes..=500` and threads on `1..=200`, drawn again until
/// the group alone fits the fleet's bounds.
fn draw_group(rng: &mut SimRng, min_processes: u64) -> (u64, u64) {
    loop {
        let p = log_uniform_int(rng, min_processes, MAX_PROCESSES);
        let t = log_uniform_int(rng, 1, MAX_THREADS_PER_PROCESS);
        if p * t <= MAX_THREADS {
            return (p, t);
        }
    }
}

/// A churning fleet: one group of at least two processes, a share in [`STAYING`] of them
/// staying, the rest cut into [`CHURN_GROUPS`] groups as even as can be.
fn draw_churn(rng: &mut SimRng) -> Fleet {
    let (p, t) = draw_group(rng, 2);
    let stay = ((p as f64 * uniform(rng, STAYING.0, STAYING.1)).round() as u64).clamp(1, p - 1);
    let comers = p - stay;
    let k = uniform_int(rng, CHURN_GROUPS.0, CHURN_GROUPS.1).min(comers);
    let mut groups = vec![Group::new(STAY, stay, t)];
    for i in 0..k {
        let size = comers / k + u64::from(i < comers % k);
        groups.push(Group::new(&format!("c{}", i + 1), size, t));
    }
    Fleet {
        groups,
        churn: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::test_rng;

    #[test]
    fn fleets_keep_their_bounds() {
        let mut rng = test_rng();
        let (mut churned, mut pairs) = (0, 0);
        for _ in 0..3000 {
            let f = draw_fleet(&mut rng);
            assert!(f.total_processes() <= MAX_PROCESSES, "{f:?}");
            assert!(f.total_threads() <= MAX_THREADS, "{f:?}");
            assert!(f.groups.iter().all(|g| g.processes >= 1
                && (1..=MAX_THREADS_PER_PROCESS).contains(&g.threads)));
            churned += usize::from(f.churn);
            pairs += usize::from(!f.churn && f.groups.len() == 2);
            if f.churn {
                assert!(f.groups.len() >= 2 && f.groups.len() <= 9, "{f:?}");
                assert!(f.groups.iter().all(|g| g.processes >= 1), "{f:?}");
            }
        }
        assert!((churned as f64 / 3000.0 - CHURN_SHARE).abs() < 0.03);
        assert!(pairs > 400, "{pairs}");
    }

    #[test]
    fn a_schedule_keeps_every_group_two_windows_and_the_stayers_throughout() {
        let mut rng = test_rng();
        for _ in 0..500 {
            let mut f = draw_churn(&mut rng);
            let (duration, window) = (8 * 3600, 3600);
            f.schedule(&mut rng, duration, window);
            assert!(f.groups[0].stays());
            for g in &f.groups[1..] {
                let stop = g.stop_s.unwrap_or(duration);
                assert!(g.start_s < duration && stop > g.start_s, "{g:?}");
                assert!(stop - g.start_s >= 2 * window - 60, "{g:?}");
                assert!(g.stop_s.is_none_or(|s| s <= duration - window), "{g:?}");
            }
            assert!(f.peak_threads() >= f.staying_threads());
            assert!(f.peak_threads() <= f.total_threads());
        }
    }
}
