//! When `serve --record` stops: the recorded clients become a scenario's groups (one process
//! of one thread per client), and the journal is read back through the very `Recorder` a run
//! uses, so `series.csv` and `summary.json` have the same columns and the same definitions.
//! What only a client knows is estimated from what the server saw (docs/serve-record.md):
//! `sleep` is the observed gap between a client's requests, `wait` the time between its 2xx.

use std::io::Write;
use std::sync::atomic::AtomicBool;

use super::journal::{Client, Entry};
use crate::exchange::{DEFAULT_KEY, Quota, Response, Status};
use hdrhistogram::Histogram;

use crate::record::{
    Failure, FinishContext, GapPercentiles, GroupGaps, Recorder, RequestRecord, RunMode, Summary,
    too_large,
};
use crate::scenario::{
    ClientGroup, Expect, GroupCommon, Layout, Mode, RunConfig, Scenario, ServerConfig,
};
use crate::store::StoreConfig;
use crate::throttle::ThrottleConfig;
use crate::time::{HumanDuration, NANOS_PER_MS, Nanos, secs};

/// What the recording is made of besides the requests.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The run's name (`scenario.toml`'s `name`).
    pub name: String,
    pub server: ServerConfig,
    pub time_scale: f64,
    pub seed: u64,
    pub sample_every: Nanos,
    pub fairness_window: Nanos,
    /// `--log-requests`: also write `requests.csv`, one row per recorded request.
    pub log_requests: bool,
}

/// The placeholder algorithm of the recorded groups: the clients ran their own code.
const PLACEHOLDER: &str = "none";

/// The scenario standing for the recorded clients, ending at `end`, and the thread index of
/// each client (`clients`' order). Groups come in the order they were first seen, clients
/// within a group sorted by name. Also says when `sample_every` had to grow.
pub fn scenario_of(
    plan: &Plan,
    clients: &[Client],
    end: Nanos,
) -> (Scenario, Vec<usize>, Option<String>) {
    let mut groups = group_clients(clients);
    let mut thread_of = vec![0; clients.len()];
    let mut next = 0;
    let mut latest_start = 0;
    let mut scenario_groups = Vec::new();
    for (name, members) in &mut groups {
        members.sort_by(|&a, &b| clients[a].id.name.cmp(&clients[b].id.name));
        for &m in members.iter() {
            thread_of[m] = next;
            next += 1;
        }
        let first = members
            .iter()
            .map(|&m| clients[m].first_at)
            .min()
            .unwrap_or(0);
        // Whole milliseconds: the start is written to scenario.toml and read back.
        let start = first / NANOS_PER_MS * NANOS_PER_MS;
        latest_start = latest_start.max(start);
        let key = members
            .iter()
            .min_by_key(|&&m| clients[m].first_at)
            .map(|&m| clients[m].key.clone())
            .filter(|k| k != DEFAULT_KEY);
        scenario_groups.push(group(name, members.len() as u32, start, key));
    }
    if scenario_groups.is_empty() {
        scenario_groups.push(group(super::identity::DEFAULT_GROUP, 1, 0, None));
    }
    let duration = end.max(latest_start + NANOS_PER_MS);
    let mut scenario = recorded_scenario(plan, clients.len(), scenario_groups, duration);
    // Many clients over a long recording: sample less often rather than fill a disk.
    let note = too_large(&scenario).map(|big| {
        scenario.run.sample_every = big.fitting_every;
        format!(
            "sample_every {} would write about {:.1} GB of series.csv for {} clients; \
             sampled every {} instead",
            big.sample_every,
            big.bytes as f64 / 1e9,
            clients.len(),
            big.fitting_every
        )
    });
    (scenario, thread_of, note)
}

/// The recorded clients by scenario group, in the order the groups were first seen: a
/// scenario's group has one key, so clients of one group that use several keys become one
/// group per key (`web`, `web-key2`, …) and the capacity counts every key's bucket.
fn group_clients(clients: &[Client]) -> Vec<(String, Vec<usize>)> {
    // (client group, key, scenario group)
    let mut split: Vec<(&str, &str, String)> = Vec::new();
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        let at = split
            .iter()
            .position(|(g, k, _)| *g == c.id.group && *k == c.key);
        let name = match at {
            Some(j) => split[j].2.clone(),
            None => {
                let mut n = split.iter().filter(|(g, _, _)| *g == c.id.group).count();
                let mut name = c.id.group.clone();
                // Never a name another group has (a client may call its group `web-key2`).
                while n > 0 || split.iter().any(|(_, _, taken)| *taken == name) {
                    n += 1;
                    name = format!("{}-key{n}", c.id.group);
                    if !split.iter().any(|(_, _, taken)| *taken == name) {
                        break;
                    }
                }
                split.push((&c.id.group, &c.key, name.clone()));
                name
            }
        };
        match groups.iter_mut().find(|(g, _)| *g == name) {
            Some((_, members)) => members.push(i),
            None => groups.push((name, vec![i])),
        }
    }
    groups
}

/// The scenario of a recording of `n_clients` clients in `groups` over `duration`, with the
/// server and run settings of `plan`.
fn recorded_scenario(
    plan: &Plan,
    n_clients: usize,
    groups: Vec<ClientGroup>,
    duration: Nanos,
) -> Scenario {
    let n_groups = groups.len();
    // A recording may stop before its sampling interval, or in the middle of the scenario's
    // outages: the scenario describes the span recorded.
    let mut server = plan.server.clone();
    server.faults.outages = server
        .faults
        .outages
        .iter()
        .filter(|[start, _]| start.nanos() < duration)
        .map(|&[start, stop]| [start, HumanDuration(stop.nanos().min(duration))])
        .collect();
    Scenario {
        name: plan.name.clone(),
        description: format!(
            "Recorded by `throttle-sim serve --record`: {n_clients} client{} in {n_groups} \
             group{} (clients.csv names each). Each [[clients]] group stands for recorded \
             clients, one process of one thread per client; its algorithm `{PLACEHOLDER}` is \
             a placeholder, the clients ran their own code. sleep is the observed gap between \
             a client's requests, wait the time between its 2xx (docs/serve-record.md).",
            if n_clients == 1 { "" } else { "s" },
            if n_groups == 1 { "" } else { "s" },
        ),
        run: RunConfig {
            duration: HumanDuration(duration),
            seed: Some(plan.seed),
            mode: Mode::Live,
            time_scale: plan.time_scale,
            sample_every: HumanDuration(plan.sample_every.clamp(NANOS_PER_MS, duration)),
            peak_window: None,
            fairness_window: HumanDuration(plan.fairness_window.max(NANOS_PER_MS)),
            seeds: None,
            series: Default::default(),
        },
        server,
        clients: groups,
        variants: Vec::new(),
        compare: Default::default(),
        expect: Expect::new(),
        store: StoreConfig::default(),
        axes: Default::default(),
        cell: None,
    }
}

fn group(name: &str, processes: u32, start: Nanos, key: Option<String>) -> ClientGroup {
    ClientGroup {
        common: GroupCommon {
            name: name.to_string(),
            processes,
            threads: 1,
            start: HumanDuration(start),
            stop: None,
            jobs: None,
            pool: None,
            stop_when_remaining_at_most: None,
            key,
            keep_algorithm: false,
        },
        throttle: ThrottleConfig::defaults(PLACEHOLDER).expect("`none` is an algorithm"),
    }
}

/// What a client did so far, as the server saw it.
#[derive(Clone, Copy, Debug, Default)]
struct SoFar {
    /// When the answer to its last request went out.
    last_answer: Option<Nanos>,
    /// When the answer to its last 2xx went out, else its first request.
    wait_from: Option<Nanos>,
}

/// What a recording lacks: requests not recorded (why it is partial, when it is), and answers
/// never sent.
pub struct Gaps {
    pub unrecorded: u64,
    pub failure: Option<String>,
    /// When serve stopped answering (virtual time): an answer due later was never sent.
    pub stopped_at: Nanos,
}

/// Feed the `entries` (in time order) through a `Recorder` on `scenario`'s layout, writing
/// `series` (and `requests`, requests.csv's rows); `capacity` is the rule's capacity for one
/// key over a span from time 0.
pub fn replay<W: Write, R: Write>(
    scenario: &Scenario,
    thread_of: &[usize],
    entries: impl Iterator<Item = std::io::Result<Entry>>,
    (series, requests): (W, Option<R>),
    capacity: &dyn Fn(Nanos) -> f64,
    gaps: Gaps,
) -> std::io::Result<Summary> {
    let layout = Layout::new(scenario);
    let mut replayer = Replayer::new(scenario, &layout, series, requests)?;
    replayer.answered_by = gaps.stopped_at;
    for entry in entries {
        let e = entry?;
        if let Some(&thread) = thread_of.get(e.client as usize) {
            replayer.entry(thread, &e)?;
        }
    }
    replayer.finish(scenario, capacity, &gaps)
}

/// The journal's entries fed, in time order, to a run's `Recorder`, with what a client
/// would have known estimated from what the server saw.
struct Replayer<'a, W: Write, R: Write> {
    layout: &'a Layout,
    rec: Recorder<'a, W, R>,
    /// Per process (one client each): its last observed gap, as the sleep value.
    sleeps: Vec<f64>,
    so_far: Vec<SoFar>,
    /// Observed gaps: index 0 overall, then one per group.
    gaps_seen: Vec<Histogram<u64>>,
    /// The capacity counts up to the last answer: the idle time after the clients finished,
    /// before serve was stopped, is not held against them.
    last_answer: Nanos,
    /// When serve stopped answering: an answer due later was never sent.
    answered_by: Nanos,
}

impl<'a, W: Write, R: Write> Replayer<'a, W, R> {
    fn new(
        scenario: &Scenario,
        layout: &'a Layout,
        series: W,
        requests: Option<R>,
    ) -> std::io::Result<Self> {
        let histogram =
            Histogram::<u64>::new(3).expect("3 significant figures is a valid precision");
        Ok(Replayer {
            layout,
            rec: Recorder::for_run(layout, &scenario.run, series, requests)?,
            sleeps: vec![0.0; layout.processes.len()],
            so_far: vec![SoFar::default(); layout.threads.len()],
            gaps_seen: vec![histogram; layout.groups.len() + 1],
            last_answer: 0,
            answered_by: Nanos::MAX,
        })
    }

    /// One recorded request of the client that is `thread`.
    fn entry(&mut self, thread: usize, e: &Entry) -> std::io::Result<()> {
        let duration = self.layout.duration;
        let t = e.t.min(duration);
        while let Some(tick) = self.rec.next_tick().filter(|&k| k < t && k < duration) {
            self.rec.tick(tick, &self.sleeps)?;
        }
        let process = self.layout.threads[thread].process as usize;
        let s = &mut self.so_far[thread];
        let answer = t.saturating_add(e.latency);
        let mut gap = 0;
        if let Some(prev) = s.last_answer {
            // Requests of one client that overlap (threads sharing an id) have no gap.
            gap = t.saturating_sub(prev);
            self.sleeps[process] = secs(gap);
            self.rec.record_delay(thread, gap);
            let group = self.layout.threads[thread].group as usize + 1;
            for i in [0, group] {
                // Auto-resizing: only a value past u64 range fails, which a Nanos is not.
                let _ = self.gaps_seen[i].record(gap.max(1));
            }
        }
        let wait_from = *s.wait_from.get_or_insert(t);
        s.last_answer = Some(answer);
        // An answer due after serve stopped was never sent (a Ctrl-C during a long latency):
        // the client got none, whatever the rule decided.
        let unanswered = e.t.saturating_add(e.latency) > self.answered_by;
        if !unanswered {
            self.last_answer = self.last_answer.max(answer);
        }
        let response = match unanswered {
            true => Response {
                latency: e.latency,
                ..Response::bare(Status::Error)
            },
            false => Response {
                status: e.status,
                remaining: e.remaining,
                limit: e.told.limit,
                retry_after: e.told.retry_after,
                latency: e.latency,
                quota: e.told.window.map(|window| Quota {
                    limit: e.told.limit.unwrap_or(0),
                    window,
                }),
                reset: e.told.reset,
            },
        };
        self.rec.record_request(&RequestRecord {
            thread,
            sent_at: t,
            response,
            waited: gap,
            failure: unanswered.then_some(Failure::TimedOut),
            raw: None,
        })?;
        if response.status == Status::Ok {
            self.rec
                .record_success(thread, answer.saturating_sub(wait_from));
            s.wait_from = Some(answer);
        }
        Ok(())
    }

    fn finish(
        mut self,
        scenario: &Scenario,
        capacity: &dyn Fn(Nanos) -> f64,
        gaps: &Gaps,
    ) -> std::io::Result<Summary> {
        let duration = self.layout.duration;
        let settled = AtomicBool::new(false);
        self.rec.finish_rows(None, &self.sleeps, &settled)?;
        let processes: Vec<(f64, u64)> = self.sleeps.iter().map(|&s| (s, 0)).collect();
        let partial_reason = gaps.partial_reason();
        let mut summary = self.rec.finish(
            duration,
            FinishContext {
                scenario: &scenario.name,
                seed: scenario.run.seed(),
                mode: RunMode::Recorded,
                partial: partial_reason.is_some(),
                partial_reason,
                processes: &processes,
                capacity_per_key: capacity(self.last_answer.min(duration)),
            },
        )?;
        let mut observed = GapPercentiles::of(&self.gaps_seen[0]);
        observed.groups = self
            .layout
            .groups
            .iter()
            .zip(&self.gaps_seen[1..])
            .map(|(g, h)| GroupGaps {
                name: g.name.clone(),
                gaps: GapPercentiles::of(h),
            })
            .collect();
        summary.gaps = Some(observed);
        Ok(summary)
    }
}

impl Gaps {
    /// Why the recording is partial, if it is.
    fn partial_reason(&self) -> Option<String> {
        match (&self.failure, self.unrecorded) {
            (Some(f), n) => Some(format!(
                "the recording failed ({f}); {n} requests not recorded"
            )),
            (None, 0) => None,
            (None, n) => Some(format!(
                "{n} requests past the recording's cap were not recorded"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::identity::{ClientName, IdentifiedBy};
    use super::super::journal::Journal;
    use super::*;
    use crate::engine::live::ScaledClock;
    use crate::engine::live::server::{KeyId, Observer, Seen};
    use crate::time::NANOS_PER_SEC;

    fn heard(journal: &Journal, token: &str, status: Status) {
        journal.observe(Seen {
            client_id: None,
            key: Some(KeyId::of(token)),
            peer: "127.0.0.1".parse().unwrap(),
            status,
            remaining: Some(0),
            latency: 0,
            answer: Response::bare(status),
        });
    }

    /// Two tokens the server keeps in two buckets are two keys of the recording, though they
    /// share a fingerprint (`fnv:820a5676`): the recording made them one key, and so counted
    /// one bucket's capacity for both buckets' 2xx. From the journal's hearing to the replayed
    /// layout, so it stands here, above the journal.
    #[test]
    fn keys_the_server_keeps_apart_are_apart_in_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ScaledClock::starting_now(1.0);
        let journal = Journal::create(dir.path(), clock, false).unwrap();
        for token in ["Bearer tok157397", "Bearer tok678860"] {
            for _ in 0..5 {
                heard(&journal, token, Status::Ok);
            }
        }
        heard(&journal, "Bearer tok157397", Status::Limited);
        let done = journal.finish();
        let keys: Vec<&str> = done.clients.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["fnv:820a5676", "fnv:820a5676#2"]);
        let plan = Plan {
            name: "rec".into(),
            server: Default::default(),
            time_scale: 1.0,
            seed: 1,
            sample_every: crate::time::NANOS_PER_SEC,
            fairness_window: crate::time::NANOS_PER_SEC,
            log_requests: false,
        };
        let end = 2 * crate::time::NANOS_PER_SEC;
        let (scenario, ..) = scenario_of(&plan, &done.clients, end);
        // The summary's capacity is one key's times the layout's keys.
        assert_eq!(crate::scenario::Layout::new(&scenario).keys.len(), 2);
    }

    fn client(group: &str, name: &str, key: &str, first_s: u64) -> Client {
        Client {
            id: ClientName {
                group: group.into(),
                name: name.into(),
                by: IdentifiedBy::Header,
            },
            key: key.into(),
            first_at: first_s * NANOS_PER_SEC,
        }
    }

    fn plan() -> Plan {
        Plan {
            name: "rec".into(),
            server: ServerConfig::default(),
            time_scale: 10.0,
            seed: 7,
            sample_every: 2 * NANOS_PER_SEC,
            fairness_window: 600 * NANOS_PER_SEC,
            log_requests: false,
        }
    }

    fn at(s: f64, client: u32, status: Status, latency_s: f64) -> std::io::Result<Entry> {
        Ok(Entry {
            t: crate::time::from_secs(s),
            client,
            status,
            remaining: Some(3),
            latency: crate::time::from_secs(latency_s),
            told: Default::default(),
        })
    }

    #[test]
    fn clients_become_groups_of_one_key_sorted_by_name() {
        let clients = [
            client("g", "b", "default", 1),
            client("g", "x", "fnv:1", 2),
            client("h", "c", "default", 3),
            client("g", "a", "default", 4),
        ];
        let (s, thread_of, note) = scenario_of(&plan(), &clients, 10 * NANOS_PER_SEC);
        assert!(note.is_none());
        let names: Vec<&str> = s.clients.iter().map(|c| c.common.name.as_str()).collect();
        assert_eq!(names, ["g", "g-key2", "h"]);
        assert_eq!(s.clients[0].common.processes, 2);
        assert_eq!(s.clients[0].common.start, HumanDuration::from_secs(1));
        assert_eq!(s.clients[1].common.key.as_deref(), Some("fnv:1"));
        // Within `g`, `a` (seen last) comes first.
        assert_eq!(thread_of, [1, 2, 3, 0]);
        let text = s.to_toml();
        crate::scenario::parse_scenario(&text, "t", "t", &[], 0).unwrap();
    }

    /// A recording of about 9,500 clients with a key each wrote a scenario.toml over 1 MiB
    /// that its own reader refused: no charts, no report, serve exited 2 and `plot` failed.
    /// The most clients a recording names, each with a key of its own and the longest group
    /// name, make a scenario.toml the reader takes.
    #[test]
    fn a_recording_of_the_most_clients_with_a_key_each_reads_back() {
        let group = "g".repeat(crate::engine::live::server::identity::MAX_GROUP_CHARS);
        let clients: Vec<Client> = (0..crate::recording::journal::MAX_CLIENTS)
            .map(|i| client(&group, &format!("c{i}"), &format!("fnv:{i:08x}#2"), 3_599))
            .collect();
        let (s, _, _) = scenario_of(&plan(), &clients, 3_600 * NANOS_PER_SEC);
        assert_eq!(s.clients.len(), clients.len(), "a group per key");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scenario.toml");
        std::fs::write(&path, s.to_toml()).unwrap();
        let again = crate::scenario::read_scenario(&path, &[], 0).unwrap();
        assert_eq!(again.clients.len(), clients.len());
    }

    /// `serve --latency 1h --record`, then Ctrl-C: the request decided but still waiting out
    /// its latency was recorded as a 2xx, though no answer was ever sent.
    #[test]
    fn a_request_whose_answer_was_never_sent_is_no_2xx() {
        let clients = [client("g", "a", "default", 1)];
        let end = 10 * NANOS_PER_SEC;
        let (s, thread_of, _) = scenario_of(&plan(), &clients, end);
        let entries = vec![at(1.0, 0, Status::Ok, 0.5), at(2.0, 0, Status::Ok, 3600.0)];
        let gaps = Gaps {
            unrecorded: 0,
            failure: None,
            stopped_at: end,
        };
        let sum = replay(
            &s,
            &thread_of,
            entries.into_iter(),
            (std::io::sink(), None::<std::io::Sink>),
            &|_| 100.0,
            gaps,
        )
        .unwrap();
        let m = &sum.metrics;
        assert_eq!((m.requests, m.ok, m.errors), (2, 1, 1), "{m:?}");
        assert_eq!(sum.failure_kinds, [(Failure::TimedOut, 1)]);
    }

    #[test]
    fn gaps_waits_and_counts_come_from_what_the_server_saw() {
        let clients = [client("g", "a", "default", 1), client("g", "b", "fnv:1", 2)];
        let end = 10 * NANOS_PER_SEC;
        let (s, thread_of, _) = scenario_of(&plan(), &clients, end);
        let entries = vec![
            at(1.0, 0, Status::Ok, 0.5),
            at(2.0, 1, Status::Ok, 0.5),
            at(3.0, 0, Status::Limited, 0.0),
            at(4.0, 0, Status::Ok, 0.5),
        ];
        let mut series = Vec::new();
        let capacity = |span: Nanos| 10.0 + secs(span);
        let gaps = Gaps {
            unrecorded: 0,
            failure: None,
            stopped_at: Nanos::MAX,
        };
        let sum = replay(
            &s,
            &thread_of,
            entries.into_iter(),
            (&mut series, None::<std::io::Sink>),
            &capacity,
            gaps,
        )
        .unwrap();
        let m = &sum.metrics;
        assert_eq!((m.requests, m.ok, m.limited), (4, 3, 1));
        // Gaps from the answer before: 3 − 1.5 and 4 − 3.
        assert_eq!(m.max_sleep, 1.5);
        // Waits: 0.5 (a's first), 0.5 (b's), 4.5 − 1.5 = 3 (a's second 2xx).
        assert!((m.wait_p50.unwrap() - 0.5).abs() < 0.01, "{m:?}");
        assert!((m.wait_p99.unwrap() - 3.0).abs() < 0.01, "{m:?}");
        // Two keys, each counted up to the last answer (4.5 s).
        assert_eq!(m.capacity, 2.0 * 14.5);
        assert_eq!(sum.mode, RunMode::Recorded);
        assert!(!sum.partial);
        assert_eq!(sum.processes[0].final_sleep, 1.0);
        // The two gaps, 1.5 s and 1 s, both a's.
        let g = sum.gaps.as_ref().unwrap();
        assert_eq!(g.count, 2);
        assert!((g.max.unwrap() - 1.5).abs() < 0.01, "{g:?}");
        assert!((g.p50.unwrap() - 1.0).abs() < 0.01, "{g:?}");
        assert_eq!(g.groups.len(), 2);
        assert_eq!(
            (g.groups[0].name.as_str(), g.groups[0].gaps.count),
            ("g", 2)
        );
        assert_eq!(
            (g.groups[1].name.as_str(), g.groups[1].gaps.count),
            ("g-key2", 0)
        );
        assert_eq!(g.groups[1].gaps.p50, None);
        let text = String::from_utf8(series).unwrap();
        let requests: u64 = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(5).unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(requests, 4);
    }

    #[test]
    fn a_short_recording_makes_a_valid_scenario() {
        let mut p = plan();
        p.sample_every = 10 * NANOS_PER_SEC;
        p.server.faults.outages = vec![
            [HumanDuration::from_secs(1), HumanDuration::from_secs(3)],
            [HumanDuration::from_secs(4), HumanDuration::from_secs(60)],
            [HumanDuration::from_secs(70), HumanDuration::from_secs(80)],
        ];
        let clients = [client("g", "a", "default", 0)];
        let (s, _, _) = scenario_of(&p, &clients, 5 * NANOS_PER_SEC);
        assert_eq!(s.run.sample_every, HumanDuration::from_secs(5));
        assert_eq!(
            s.server.faults.outages,
            [
                [HumanDuration::from_secs(1), HumanDuration::from_secs(3)],
                [HumanDuration::from_secs(4), HumanDuration::from_secs(5)],
            ]
        );
        crate::scenario::parse_scenario(&s.to_toml(), "t", "t", &[], 0).unwrap();
        // Nothing recorded at all, stopped at once: still a scenario.
        let (s, _, _) = scenario_of(&p, &[], 0);
        crate::scenario::parse_scenario(&s.to_toml(), "t", "t", &[], 0).unwrap();
    }

    #[test]
    fn a_recording_past_its_cap_is_partial() {
        let clients = [client("g", "a", "default", 0)];
        let (s, thread_of, _) = scenario_of(&plan(), &clients, NANOS_PER_SEC);
        let gaps = Gaps {
            unrecorded: 12,
            failure: None,
            stopped_at: Nanos::MAX,
        };
        let sum = replay(
            &s,
            &thread_of,
            std::iter::empty(),
            (std::io::sink(), None::<std::io::Sink>),
            &|_| 1.0,
            gaps,
        )
        .unwrap();
        assert!(sum.partial);
        assert!(sum.partial_reason.unwrap().contains("12 requests"));
    }

    #[test]
    fn many_clients_over_a_long_recording_sample_less_often() {
        let clients: Vec<Client> = (0..10_000)
            .map(|i| client("g", &format!("c{i}"), "default", 0))
            .collect();
        let mut p = plan();
        p.sample_every = NANOS_PER_SEC;
        let (s, _, note) = scenario_of(&p, &clients, 24 * 3600 * NANOS_PER_SEC);
        assert!(note.unwrap().contains("sampled every"));
        assert!(crate::record::series_bytes_estimate(&s) <= crate::record::MAX_SERIES_BYTES);
    }
}
