//! The serving side of `serve --record`: every answered request becomes one fixed-size record
//! in a scratch file of the results folder, and every new client an entry in a table. Memory
//! grows with the number of clients, which is capped ([`MAX_CLIENTS`], [`MAX_GROUPS`]); the
//! file with the number of requests, also capped ([`MAX_JOURNAL_BYTES`]). When `serve` stops,
//! `replay.rs` reads the file back through the run's `Recorder`.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::identity::{Capped, ClientName, ClientTable};
pub use super::identity::{MAX_CLIENTS, MAX_GROUPS, OTHER_GROUP, OVERFLOW_GROUP, OVERFLOW_NAME};
use crate::engine::live::ScaledClock;
use crate::engine::live::server::{KeyId, Observer, Seen};
use crate::exchange::Status;
use crate::time::Nanos;

/// The scratch file's largest size (about 130 million requests); requests past it are counted
/// but not recorded, and the summary says the recording is partial.
pub const MAX_JOURNAL_BYTES: u64 = 4_000_000_000;

/// With `--log-requests` the records are longer and each becomes a requests.csv row: the file
/// stops at 1 GB (about 16 million requests), which keeps requests.csv within about 2 GB.
pub const MAX_DETAIL_JOURNAL_BYTES: u64 = 1_000_000_000;

/// The scratch file's name in the results folder; removed once the run folder is written.
pub const JOURNAL_FILE: &str = ".serve-record.journal";

/// One request on disk: time, client, status, remaining (flag and value), latency.
const RECORD_BYTES: usize = 8 + 4 + 1 + 1 + 8 + 8;

/// With `--log-requests`, then what else the answer told (flags, limit, retry-after, policy
/// window, reset): what `requests.csv` and `throttle-sim fit` need.
const DETAIL_BYTES: usize = RECORD_BYTES + 1 + 4 * 8;

/// One request read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Virtual time since `serve` started when the server heard of it.
    pub t: Nanos,
    pub client: u32,
    pub status: Status,
    pub remaining: Option<u64>,
    /// The virtual wait before the answer went out.
    pub latency: Nanos,
    /// What else the answer's rate-limit fields told, as a client of the server's dialect
    /// reads them (`limiter::Headers::response`); kept only with `--log-requests`.
    pub told: Told,
}

/// An answer's limit, `Retry-After`, policy window and reset, as far as its dialect tells
/// them (virtual time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Told {
    pub limit: Option<u64>,
    pub retry_after: Option<Nanos>,
    pub window: Option<Nanos>,
    pub reset: Option<Nanos>,
}

impl Told {
    /// What `answer` tells besides its status and remaining count.
    pub fn of(answer: &crate::exchange::Response) -> Told {
        Told {
            limit: answer.limit,
            retry_after: answer.retry_after,
            window: answer.quota.map(|q| q.window),
            reset: answer.reset,
        }
    }
}

impl Entry {
    /// The record's bytes: the first [`RECORD_BYTES`], or [`DETAIL_BYTES`] with `detail`.
    fn encode(&self, detail: bool) -> ([u8; DETAIL_BYTES], usize) {
        let mut b = [0u8; DETAIL_BYTES];
        b[0..8].copy_from_slice(&self.t.to_le_bytes());
        b[8..12].copy_from_slice(&self.client.to_le_bytes());
        b[12] = match self.status {
            Status::Ok => 0,
            Status::Limited => 1,
            Status::Unavailable => 2,
            Status::Error => 3,
        };
        b[13] = u8::from(self.remaining.is_some());
        b[14..22].copy_from_slice(&self.remaining.unwrap_or(0).to_le_bytes());
        b[22..30].copy_from_slice(&self.latency.to_le_bytes());
        if !detail {
            return (b, RECORD_BYTES);
        }
        let told = &self.told;
        let fields = [told.limit, told.retry_after, told.window, told.reset];
        for (i, v) in fields.iter().enumerate() {
            b[RECORD_BYTES] |= u8::from(v.is_some()) << i;
            let at = RECORD_BYTES + 1 + 8 * i;
            b[at..at + 8].copy_from_slice(&v.unwrap_or(0).to_le_bytes());
        }
        (b, DETAIL_BYTES)
    }

    /// A record of [`RECORD_BYTES`], or of [`DETAIL_BYTES`] (`b`'s length says which).
    fn decode(b: &[u8]) -> Entry {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Entry {
            t: u64_at(0),
            client: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            status: match b[12] {
                0 => Status::Ok,
                1 => Status::Limited,
                2 => Status::Unavailable,
                _ => Status::Error,
            },
            remaining: (b[13] == 1).then(|| u64_at(14)),
            latency: u64_at(22),
            told: if b.len() >= DETAIL_BYTES {
                let field = |i: usize| {
                    (b[RECORD_BYTES] & (1 << i) != 0).then(|| u64_at(RECORD_BYTES + 1 + 8 * i))
                };
                Told {
                    limit: field(0),
                    retry_after: field(1),
                    window: field(2),
                    reset: field(3),
                }
            } else {
                Told::default()
            },
        }
    }
}

/// A client as the recording knows it.
#[derive(Clone, Debug)]
pub struct Client {
    pub id: ClientName,
    /// The server key of its first request: its fingerprint, numbered (`fnv:…#2`) where two
    /// keys the server keeps apart share one, so the recording keeps them apart too.
    pub key: String,
    /// Virtual time of its first request.
    pub first_at: Nanos,
}

/// What the serving threads share.
struct Inner {
    file: BufWriter<File>,
    table: ClientTable,
    clients: Vec<Client>,
    bytes: u64,
    /// Requests heard but not written (the file reached its cap, or a write failed).
    unrecorded: u64,
    /// The first write error, if any; nothing more is written after it.
    failure: Option<String>,
    /// Detailed records (`--log-requests`).
    detail: bool,
}

impl Inner {
    /// Nothing heard yet, writing to `file`.
    fn new(file: BufWriter<File>, detail: bool) -> Inner {
        Inner {
            file,
            table: ClientTable::default(),
            clients: Vec::new(),
            bytes: 0,
            unrecorded: 0,
            failure: None,
            detail,
        }
    }
}

/// The [`Observer`] `serve --record` hands the server.
pub struct Journal {
    clock: ScaledClock,
    path: PathBuf,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

/// What the serving side leaves for the replay.
pub struct Finished {
    pub path: PathBuf,
    pub clients: Vec<Client>,
    pub unrecorded: u64,
    pub failure: Option<String>,
    /// The records are detailed (`--log-requests`).
    pub detail: bool,
}

impl Journal {
    /// A journal in `dir` (a claimed, empty results folder) on the server's clock; with
    /// `detail` (`--log-requests`) each record also keeps what the answer told
    /// ([`Told`]).
    pub fn create(dir: &Path, clock: ScaledClock, detail: bool) -> std::io::Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let file = BufWriter::new(File::create(&path)?);
        Ok(Journal {
            clock,
            path,
            inner: Mutex::new(Inner::new(file, detail)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Flush the file and hand over what was recorded. Call once the server has stopped.
    pub fn finish(&self) -> Finished {
        let mut inner = self.lock();
        if inner.failure.is_none()
            && let Err(e) = inner.file.flush()
        {
            inner.failure = Some(format!("{}: {e}", self.path.display()));
        }
        Finished {
            path: self.path.clone(),
            clients: inner.clients.clone(),
            unrecorded: inner.unrecorded,
            failure: inner.failure.clone(),
            detail: inner.detail,
        }
    }
}

impl Inner {
    /// The index of the client `id` (with the key of its first request), registering it while
    /// the caps allow; past them, the overflow client's or another group's.
    fn client(&mut self, id: ClientName, key: Option<&KeyId>, t: Nanos) -> u32 {
        let (i, new, capped) = self.table.client(id, key);
        match capped {
            Some(Capped::Clients) => crate::progress::warn(&format!(
                "serve --record: {MAX_CLIENTS} distinct clients recorded; requests of clients \
                 first seen from now on are recorded together as {OVERFLOW_GROUP}/{OVERFLOW_NAME}"
            )),
            Some(Capped::Groups) => crate::progress::warn(&format!(
                "serve --record: {MAX_GROUPS} client groups recorded; clients of groups \
                 first seen from now on are recorded in group {OTHER_GROUP}"
            )),
            None => {}
        }
        if new {
            self.clients.push(Client {
                id: self.table.name(i).clone(),
                key: self.table.key_name(key),
                first_at: t,
            });
        }
        i
    }

    fn write(&mut self, e: &Entry, path: &Path) {
        let (bytes, len) = e.encode(self.detail);
        let cap = if self.detail {
            MAX_DETAIL_JOURNAL_BYTES
        } else {
            MAX_JOURNAL_BYTES
        };
        if self.failure.is_some() || self.bytes + len as u64 > cap {
            if self.unrecorded == 0 && self.failure.is_none() {
                crate::progress::warn(&format!(
                    "serve --record: the recording reached its cap of {} GB; later requests are \
                     counted but not recorded (the summary will say partial)",
                    cap / 1_000_000_000
                ));
            }
            self.unrecorded += 1;
            return;
        }
        match self.file.write_all(&bytes[..len]) {
            Ok(()) => self.bytes += len as u64,
            Err(err) => {
                crate::progress::warn(&format!(
                    "serve --record: cannot write {}: {err}",
                    path.display()
                ));
                self.failure = Some(format!("{}: {err}", path.display()));
                self.unrecorded += 1;
            }
        }
    }
}

impl Observer for Journal {
    fn observe(&self, seen: Seen<'_>) {
        let id = ClientName::of(seen.client_id, seen.key.as_ref(), seen.peer);
        let mut inner = self.lock();
        // The time is read under the lock, so the file is in time order.
        let t = self.clock.now();
        let client = inner.client(id, seen.key.as_ref(), t);
        let entry = Entry {
            t,
            client,
            status: seen.status,
            remaining: seen.remaining,
            latency: seen.latency,
            told: Told::of(&seen.answer),
        };
        inner.write(&entry, &self.path);
    }
}

/// The entries of a journal file, in the order written.
pub struct Entries<R: Read> {
    reader: R,
    /// The records are detailed (`--log-requests`).
    detail: bool,
}

impl Entries<std::io::BufReader<File>> {
    pub fn open(path: &Path, detail: bool) -> std::io::Result<Self> {
        Ok(Entries {
            reader: std::io::BufReader::new(File::open(path)?),
            detail,
        })
    }
}

impl<R: Read> Iterator for Entries<R> {
    type Item = std::io::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut b = [0u8; DETAIL_BYTES];
        let b = &mut b[..if self.detail {
            DETAIL_BYTES
        } else {
            RECORD_BYTES
        }];
        match self.reader.read_exact(b) {
            Ok(()) => Some(Ok(Entry::decode(b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let e = Entry {
            t: 123_456_789_012,
            client: 70_000,
            status: Status::Limited,
            remaining: Some(0),
            latency: 5,
            told: Told::default(),
        };
        let round = |e: &Entry, detail: bool| {
            let (b, len) = e.encode(detail);
            assert_eq!(len, if detail { DETAIL_BYTES } else { RECORD_BYTES });
            Entry::decode(&b[..len])
        };
        assert_eq!(round(&e, false), e);
        let e = Entry {
            remaining: None,
            status: Status::Unavailable,
            ..e
        };
        assert_eq!(round(&e, false), e);
        // Detailed: what the answer told survives, each field present or not.
        let told = Told {
            limit: Some(4500),
            retry_after: None,
            window: Some(3_600_000_000_000),
            reset: Some(0),
        };
        let e = Entry { told, ..e };
        assert_eq!(round(&e, true), e);
        // Without detail it is not kept.
        assert_eq!(round(&e, false).told, Told::default());
    }
}
