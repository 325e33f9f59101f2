//! `occ`: the contended resource of the AWS Architecture Blog's "Exponential Backoff And
//! Jitter" (Marc Brooker, 2015) and its simulator (aws-samples/aws-arch-backoff-simulator):
//! one row per key with a version number, and clients that each want one successful
//! optimistic-concurrency write. Every request is a conditional write carrying the version the
//! client read; it succeeds, and bumps the version, only if no other write succeeded since that
//! read. The post measures the total write calls and the time until every client is done
//! (`requests` and `time_to_clear` with `jobs = 1`).
//!
//! The read is a round trip of its own, as in the AWS simulator: a client that wants to write
//! sends a read, and the version it carries is the row's version when that read reached the row
//! ([`Limiter::read`]); the write reaches the row after the read's answer came back and the
//! write went out. The sim draws each of those legs (read out, read back, write out, write
//! back) from the server's `latency`, so with `latency = { distribution = "normal", mean =
//! "10ms", sd = "2ms" }` it is the post's network, and the randomness of every hop decides how
//! soon another writer gets in between a client's read and its write. A failed write is
//! followed, after the client's wait, by a new read.
//!
//! Writers that send no read of their own (the live engine's clients, and any client of
//! `throttle-sim serve`, which only sends writes) are given the version a read would have seen
//! `read_ahead` before the write, or the version the answer to their own previous write
//! reported if that is newer (a failed conditional write reports the current version, as a
//! compare-and-swap does). [`Limiter::admit`] is such a writer with no earlier write.
//!
//! A failed write is a 409 Conflict in HTTP. It is answered as [`Status::Limited`] (429),
//! because "someone else got there first, back off and retry" is exactly what backoff
//! algorithms react to, and it keeps `ratio_429` meaning "share of wasted calls". It carries no
//! `Retry-After`. `RateLimit-Limit` is 1 (one row); `RateLimit-Remaining` is 1 after a success
//! and 0 after a conflict.
//!
//! Parameters and defaults:
//! - `read_ahead`: for a writer that sends no read of its own, how long before its write the
//!   read it is credited with reached the row. Default 20 ms: two network hops of 10 ms (read
//!   answer back, write out). The sim's clients always read, so the sim never uses it.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::{Decision, Limiter, Rule};
use crate::config::ParamProblem;
use crate::exchange::Status;
use crate::time::{HumanDuration, Nanos};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OccConfig {
    /// For a writer that sends no read of its own, how long before its write the read it is
    /// credited with reached the row. Default 20 ms.
    pub read_ahead: HumanDuration,
}

impl Default for OccConfig {
    fn default() -> Self {
        OccConfig {
            read_ahead: HumanDuration::from_millis(20),
        }
    }
}

impl Rule for OccConfig {
    const NAME: &'static str = "occ";
    const DESCRIPTION: &'static str = "one versioned row per key written optimistically; a stale write conflicts (409, answered as 429) (AWS backoff post)";

    /// Every `read_ahead` is valid; 0 means a writer without a read of its own reads at its
    /// write's instant, after every write decided before it, so it never conflicts.
    fn problems(&self) -> Vec<ParamProblem> {
        Vec::new()
    }

    fn limiter(&self) -> Box<dyn Limiter> {
        Box::new(Occ::new(self))
    }
}

#[derive(Default)]
struct Row {
    version: u64,
    /// When the writes that a fresh read made now would not see succeeded, oldest first:
    /// those later than `now − read_ahead`.
    recent: VecDeque<Nanos>,
    /// Per client, the version the answer to its last write reported.
    answered: HashMap<usize, u64>,
    /// Per client, the version its read saw, until the write it was for.
    read: HashMap<usize, u64>,
}

pub struct Occ {
    read_ahead: Nanos,
    rows: Vec<Row>,
}

impl Occ {
    pub fn new(cfg: &OccConfig) -> Self {
        Occ {
            read_ahead: cfg.read_ahead.nanos(),
            rows: Vec::new(),
        }
    }

    /// The row's version for `key` (the number of successful writes so far).
    pub fn version(&self, key: usize) -> u64 {
        self.rows.get(key).map_or(0, |r| r.version)
    }

    fn row(&mut self, key: usize) -> &mut Row {
        if key >= self.rows.len() {
            self.rows.resize_with(key + 1, Row::default);
        }
        &mut self.rows[key]
    }

    fn write(&mut self, now: Nanos, key: usize, client: Option<usize>) -> Decision {
        let ahead = self.read_ahead;
        let row = self.row(key);
        // A read at `now − ahead` saw every success at or before it.
        while row
            .recent
            .front()
            .is_some_and(|&s| s.saturating_add(ahead) <= now)
        {
            row.recent.pop_front();
        }
        let fresh = row.version - row.recent.len() as u64;
        let answered = client.and_then(|c| row.answered.get(&c).copied());
        let carried = match client.and_then(|c| row.read.remove(&c)) {
            Some(read) => read,
            None => answered.map_or(fresh, |a| a.max(fresh)),
        };
        let status = if carried == row.version {
            row.version += 1;
            row.recent.push_back(now);
            Status::Ok
        } else {
            Status::Limited
        };
        if let Some(c) = client {
            row.answered.insert(c, row.version);
        }
        Decision {
            status,
            remaining: u64::from(status == Status::Ok),
            limit: 1,
            retry_after: None,
            reset: 0,
            window: 0,
        }
    }
}

impl Limiter for Occ {
    fn admit(&mut self, now: Nanos, key: usize) -> Decision {
        self.write(now, key, None)
    }

    fn admit_from(&mut self, now: Nanos, key: usize, client: usize) -> Decision {
        self.write(now, key, Some(client))
    }

    fn reads_first(&self) -> bool {
        true
    }

    fn read(&mut self, _now: Nanos, key: usize, client: usize) {
        let row = self.row(key);
        let version = row.version;
        row.read.insert(client, version);
    }

    /// 0: "no bound this rule can state". A row accepts any number of writes from a client
    /// that is alone; how many succeed depends only on how the clients interleave (and, with
    /// `jobs = 1`, on how many clients there are).
    fn capacity(&self, _duration: Nanos) -> f64 {
        0.0
    }

    /// 0, "unknown", for the same reason as [`Limiter::capacity`].
    fn rate_per_sec(&self) -> f64 {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn occ(read_ahead_ms: u64) -> Occ {
        Occ::new(&OccConfig {
            read_ahead: HumanDuration::from_millis(read_ahead_ms),
        })
    }

    #[test]
    fn the_first_writer_wins_and_the_others_conflict() {
        let mut o = occ(20);
        let d: Vec<_> = (0..3).map(|c| o.admit_from(0, 0, c)).collect();
        assert_eq!(
            d.iter().map(|d| d.status).collect::<Vec<_>>(),
            [Status::Ok, Status::Limited, Status::Limited]
        );
        assert_eq!((d[0].remaining, d[1].remaining, d[1].limit), (1, 0, 1));
        assert_eq!(d[1].retry_after, None);
        assert_eq!(o.version(0), 1);
    }

    #[test]
    fn a_write_fails_if_another_succeeded_within_read_ahead_before_it() {
        let mut o = occ(20);
        assert_eq!(o.admit_from(100 * MS, 0, 0).status, Status::Ok);
        // Client 1's fresh read for a write at 119 ms was at 99 ms: before the success.
        assert_eq!(o.admit_from(119 * MS, 0, 1).status, Status::Limited);
        // Client 2 writes first at 120 ms: its read at 100 ms saw the success at 100 ms.
        assert_eq!(o.admit_from(120 * MS, 0, 2).status, Status::Ok);
        assert_eq!(o.version(0), 2);
    }

    #[test]
    fn a_conflict_answer_reports_the_version_to_write_with_next() {
        let mut o = occ(50);
        assert_eq!(o.admit_from(0, 0, 0).status, Status::Ok);
        assert_eq!(o.admit_from(10 * MS, 0, 1).status, Status::Limited);
        // 5 ms later client 1's fresh read (at −35 ms) is older than what its conflict told it,
        // and nobody wrote since: the write goes through.
        assert_eq!(o.admit_from(15 * MS, 0, 1).status, Status::Ok);
        // An anonymous writer has only its fresh read (at −35 ms): it conflicts.
        assert_eq!(o.admit(15 * MS, 0).status, Status::Limited);
    }

    #[test]
    fn lockstep_retries_succeed_one_per_round() {
        // n clients that all write at t = 0 and retry one round trip later, as the unthrottled
        // clients of the AWS post do: one success per round, n(n + 1)/2 writes in all.
        let (n, rtt) = (6usize, 20 * MS);
        let mut o = occ(20);
        let mut waiting: Vec<usize> = (0..n).collect();
        let (mut writes, mut round) = (0, 0);
        while !waiting.is_empty() {
            let now = round * rtt;
            waiting.retain(|&c| {
                writes += 1;
                o.admit_from(now, 0, c).status != Status::Ok
            });
            round += 1;
        }
        assert_eq!(writes, n * (n + 1) / 2);
        assert_eq!(round, n as u64);
    }

    #[test]
    fn spread_out_writes_all_succeed_and_rows_are_per_key() {
        let mut o = occ(20);
        for c in 0..5 {
            assert_eq!(o.admit_from(c as Nanos * 21 * MS, 0, c).status, Status::Ok);
        }
        assert_eq!(o.admit_from(85 * MS, 1, 9).status, Status::Ok);
        assert_eq!((o.version(0), o.version(1)), (5, 1));
        assert_eq!((o.capacity(1), o.rate_per_sec()), (0.0, 0.0));
    }

    #[test]
    fn a_write_carries_the_version_its_own_read_saw() {
        // read_ahead is for writers without a read; it must not matter here.
        let mut o = occ(1000);
        assert!(o.reads_first());
        o.read(0, 0, 0);
        o.read(MS, 0, 1);
        assert_eq!(o.admit_from(30 * MS, 0, 0).status, Status::Ok);
        // Client 1 read version 0 before client 0's write: stale however long ago.
        assert_eq!(o.admit_from(31 * MS, 0, 1).status, Status::Limited);
        // Its next read sees version 1, and nobody wrote since.
        o.read(40 * MS, 0, 1);
        assert_eq!(o.admit_from(60 * MS, 0, 1).status, Status::Ok);
        // A read serves one write: a second write without a new read falls back to what a
        // writer without reads gets (a read 1 s back saw version 0, but its answer said 2).
        assert_eq!(o.admit_from(70 * MS, 0, 1).status, Status::Ok);
        // Reads are per key.
        o.read(80 * MS, 1, 0);
        assert_eq!(o.admit_from(81 * MS, 1, 0).status, Status::Ok);
        assert_eq!((o.version(0), o.version(1)), (3, 1));
    }

    #[test]
    fn with_no_read_ahead_nothing_conflicts() {
        // The read happens at the write's own instant and sees everything decided before it.
        let mut o = occ(0);
        for c in 0..4 {
            assert_eq!(o.admit_from(0, 0, c).status, Status::Ok);
        }
        assert_eq!(o.version(0), 4);
    }
}
