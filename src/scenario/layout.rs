//! Who runs: groups → processes → threads with dense global indices, and the server keys they
//! use. Engines and the recorder index everything by these numbers.

use std::ops::Range;
use std::sync::Arc;

use super::{Scenario, ServerConfig};
use crate::throttle::Population;
use crate::time::Nanos;

#[derive(Clone, Debug)]
pub struct GroupInfo {
    pub name: String,
    /// Index into [`Layout::keys`].
    pub key: usize,
    pub start: Nanos,
    /// When the group leaves, never later than the end of the run.
    pub stop: Nanos,
    pub processes: Range<usize>,
    pub threads: Range<usize>,
    /// Each thread is done after this many 2xx, if set.
    pub jobs: Option<u64>,
    /// The group's threads share this many jobs, if set.
    pub pool: Option<u64>,
    /// Each thread stops after an answer with `remaining` at most this, if set.
    pub stop_when_remaining: Option<u64>,
}

impl GroupInfo {
    /// Whether the group is running at `t` (a group that leaves at `t` still counts).
    pub fn active_at(&self, t: Nanos) -> bool {
        self.start <= t && t <= self.stop
    }

    /// Whether its threads have an end of their own (a quota, a shared pool or a stop rule),
    /// so that `time_to_clear` means something.
    pub fn finite(&self) -> bool {
        self.jobs.is_some() || self.pool.is_some() || self.stop_when_remaining.is_some()
    }

    /// How long each of its threads runs in a run that ended at `end`.
    pub fn active_time(&self, end: Nanos) -> Nanos {
        self.stop.min(end).saturating_sub(self.start)
    }
}

#[derive(Clone, Debug)]
pub struct ProcessInfo {
    pub group: usize,
    /// 0-based within its group.
    pub index: usize,
    pub threads: Range<usize>,
}

#[derive(Clone, Copy, Debug)]
pub struct ThreadInfo {
    pub group: u32,
    pub process: u32,
    /// 0-based within its process.
    pub local: u32,
}

#[derive(Clone, Debug)]
pub struct Layout {
    pub groups: Vec<GroupInfo>,
    pub processes: Vec<ProcessInfo>,
    pub threads: Vec<ThreadInfo>,
    /// Server keys in order of first use.
    pub keys: Vec<String>,
    pub duration: Nanos,
}

impl Layout {
    pub fn new(s: &Scenario) -> Self {
        let duration = s.run.duration.nanos();
        let mut layout = Layout {
            groups: Vec::new(),
            processes: Vec::new(),
            threads: Vec::new(),
            keys: Vec::new(),
            duration,
        };
        // Key → index: a map, as a recording may hold thousands of groups of a key each.
        let mut key_index: std::collections::HashMap<&str, usize> = Default::default();
        for (g, c) in s.clients.iter().enumerate() {
            let common = &c.common;
            let key = *key_index.entry(common.key()).or_insert_with(|| {
                layout.keys.push(common.key().to_string());
                layout.keys.len() - 1
            });
            let (p0, t0) = (layout.processes.len(), layout.threads.len());
            for index in 0..common.processes as usize {
                let first = layout.threads.len();
                for local in 0..common.threads {
                    layout.threads.push(ThreadInfo {
                        group: g as u32,
                        process: layout.processes.len() as u32,
                        local,
                    });
                }
                layout.processes.push(ProcessInfo {
                    group: g,
                    index,
                    threads: first..layout.threads.len(),
                });
            }
            layout.groups.push(GroupInfo {
                name: common.name.clone(),
                key,
                start: common.start.nanos(),
                stop: common.stop.map_or(duration, |s| s.nanos().min(duration)),
                processes: p0..layout.processes.len(),
                threads: t0..layout.threads.len(),
                jobs: common.jobs,
                pool: common.pool,
                stop_when_remaining: common.stop_when_remaining_at_most,
            });
        }
        layout
    }

    pub fn group_of_thread(&self, thread: usize) -> &GroupInfo {
        &self.groups[self.threads[thread].group as usize]
    }

    /// What the `oracle` may know of `key`: who uses it when, and the server (`rate` requests
    /// per second, 0 when unknown).
    pub fn population(&self, key: usize, rate: f64, server: &ServerConfig) -> Arc<Population> {
        let rule = &server.limiter;
        let on_key = || self.groups.iter().filter(move |g| g.key == key);
        Arc::new(Population {
            rate_per_sec: rate,
            windows: on_key()
                .map(|g| (g.start, g.stop, g.threads.len() as u32))
                .collect(),
            groups: on_key().map(|g| g.name.clone()).collect(),
            allowance: rule.build().capacity(0),
            windowed_rule: rule.counts_in_windows(),
            weighted_rule: rule.weighs_the_previous_window(),
            outages: server
                .faults
                .outages
                .iter()
                .map(|[a, b]| (a.nanos(), b.nanos()))
                .collect(),
        })
    }
}
