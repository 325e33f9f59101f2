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
use crate::engine::live::server::{Observer, Seen, shown_key};
use crate::exchange::{DEFAULT_KEY, Status};
use crate::time::Nanos;

/// The scratch file's largest size (about 130 million requests); requests past it are counted
/// but not recorded, and the summary says the recording is partial.
pub const MAX_JOURNAL_BYTES: u64 = 4_000_000_000;

/// The scratch file's name in the results folder; removed once the run folder is written.
pub const JOURNAL_FILE: &str = ".serve-record.journal";

/// One request on disk: time, client, status, remaining (flag and value), latency.
const RECORD_BYTES: usize = 8 + 4 + 1 + 1 + 8 + 8;

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
}

impl Entry {
    fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
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
        b
    }

    fn decode(b: &[u8; RECORD_BYTES]) -> Entry {
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
        }
    }
}

/// A client as the recording knows it.
#[derive(Clone, Debug)]
pub struct Client {
    pub id: ClientName,
    /// The server key of its first request, as `/_stats` shows it (a fingerprint).
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
}

impl Inner {
    /// Nothing heard yet, writing to `file`.
    fn new(file: BufWriter<File>) -> Inner {
        Inner {
            file,
            table: ClientTable::default(),
            clients: Vec::new(),
            bytes: 0,
            unrecorded: 0,
            failure: None,
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
}

impl Journal {
    /// A journal in `dir` (a claimed, empty results folder) on the server's clock.
    pub fn create(dir: &Path, clock: ScaledClock) -> std::io::Result<Journal> {
        let path = dir.join(JOURNAL_FILE);
        let file = BufWriter::new(File::create(&path)?);
        Ok(Journal {
            clock,
            path,
            inner: Mutex::new(Inner::new(file)),
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
        }
    }
}

impl Inner {
    /// The index of the client `id` (with the key of its first request), registering it while
    /// the caps allow; past them, the overflow client's or another group's.
    fn client(&mut self, id: ClientName, key: Option<&str>, t: Nanos) -> u32 {
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
                key: shown_key(key.unwrap_or(DEFAULT_KEY)),
                first_at: t,
            });
        }
        i
    }

    fn write(&mut self, e: &Entry, path: &Path) {
        if self.failure.is_some() || self.bytes + RECORD_BYTES as u64 > MAX_JOURNAL_BYTES {
            if self.unrecorded == 0 && self.failure.is_none() {
                crate::progress::warn(&format!(
                    "serve --record: the recording reached its cap of {} GB; later requests are \
                     counted but not recorded (the summary will say partial)",
                    MAX_JOURNAL_BYTES / 1_000_000_000
                ));
            }
            self.unrecorded += 1;
            return;
        }
        match self.file.write_all(&e.encode()) {
            Ok(()) => self.bytes += RECORD_BYTES as u64,
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
        let id = ClientName::of(seen.client_id, seen.key, seen.peer);
        let mut inner = self.lock();
        // The time is read under the lock, so the file is in time order.
        let t = self.clock.now();
        let client = inner.client(id, seen.key, t);
        let entry = Entry {
            t,
            client,
            status: seen.status,
            remaining: seen.remaining,
            latency: seen.latency,
        };
        inner.write(&entry, &self.path);
    }
}

/// The entries of a journal file, in the order written.
pub struct Entries<R: Read> {
    reader: R,
}

impl Entries<std::io::BufReader<File>> {
    pub fn open(path: &Path) -> std::io::Result<Self> {
        Ok(Entries {
            reader: std::io::BufReader::new(File::open(path)?),
        })
    }
}

impl<R: Read> Iterator for Entries<R> {
    type Item = std::io::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut b = [0u8; RECORD_BYTES];
        match self.reader.read_exact(&mut b) {
            Ok(()) => Some(Ok(Entry::decode(&b))),
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
        };
        assert_eq!(Entry::decode(&e.encode()), e);
        let e = Entry {
            remaining: None,
            status: Status::Unavailable,
            ..e
        };
        assert_eq!(Entry::decode(&e.encode()), e);
    }
}
