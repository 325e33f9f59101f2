//! `serve`'s live page: `GET /_dashboard` is a self-contained HTML page (its script and style
//! inline, nothing fetched but its own data), which polls `GET /_dashboard.json`: per client
//! (named as `serve --record` names them, `identity.rs`) its totals, the rate of 2xx and 429
//! over the last minute and its `remaining` second by second; and the same for all of them.
//! Memory is bounded: a fixed ring of seconds per client, clients capped by the table.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;

use super::identity::{ClientName, ClientTable};
use super::{KeyId, Observer, Seen};
use crate::engine::live::{LiveWatch, ScaledClock};
use crate::exchange::Status;
use crate::record::Counts;

/// Seconds of real time the page shows second by second ("the last minute").
pub const WINDOW: usize = 60;

/// The most clients one answer of `/_dashboard.json` lists: those with the most requests in
/// the last minute (the totals count every client).
pub const MAX_SHOWN: usize = 1_000;

/// The page itself.
pub const PAGE: &str = include_str!("dashboard.html");

/// No `remaining` in this second.
const NO_REMAINING: u64 = u64::MAX;

/// One second of one client (or of all).
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The real second (since the dashboard started) plus one; 0: never used.
    second: u64,
    ok: u32,
    limited: u32,
    errors: u32,
    /// The last `remaining` answered in that second.
    remaining: u64,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            second: 0,
            ok: 0,
            limited: 0,
            errors: 0,
            remaining: NO_REMAINING,
        }
    }
}

/// The last [`WINDOW`] seconds.
#[derive(Clone, Debug)]
struct Ring([Slot; WINDOW]);

impl Default for Ring {
    fn default() -> Self {
        Ring([Slot::default(); WINDOW])
    }
}

impl Ring {
    fn add(&mut self, second: u64, status: Status, remaining: Option<u64>) {
        let slot = &mut self.0[second as usize % WINDOW];
        if slot.second != second + 1 {
            *slot = Slot {
                second: second + 1,
                ..Slot::default()
            };
        }
        match status {
            Status::Ok => slot.ok = slot.ok.saturating_add(1),
            Status::Limited => slot.limited = slot.limited.saturating_add(1),
            Status::Unavailable | Status::Error => slot.errors = slot.errors.saturating_add(1),
        }
        if let Some(r) = remaining {
            slot.remaining = r.min(NO_REMAINING - 1);
        }
    }

    /// The seconds up to `now`, oldest first: [`WINDOW`] of them, empty where nothing came.
    fn recent(&self, now: u64) -> impl Iterator<Item = Slot> + '_ {
        // Seconds before the start (when less than a minute has passed) are empty.
        let first = now as i64 + 1 - WINDOW as i64;
        (first..=now as i64).map(move |s| match u64::try_from(s) {
            Ok(s) if self.0[s as usize % WINDOW].second == s + 1 => self.0[s as usize % WINDOW],
            _ => Slot::default(),
        })
    }

    /// 2xx and 429 in the last minute up to `now`.
    fn last_minute(&self, now: u64) -> (u64, u64) {
        self.recent(now).fold((0, 0), |(ok, lim), s| {
            (ok + u64::from(s.ok), lim + u64::from(s.limited))
        })
    }
}

/// One client as the page knows it.
#[derive(Clone, Debug, Default)]
struct Client {
    counts: Counts,
    remaining: Option<u64>,
    ring: Ring,
}

#[derive(Debug, Default)]
struct Board {
    table: ClientTable,
    clients: Vec<Client>,
    all: Client,
}

/// What `serve` shows at `/_dashboard`; told of every answered request.
#[derive(Debug)]
pub struct Dashboard {
    started: Instant,
    clock: ScaledClock,
    /// The status line's counters, kept here too.
    pub watch: Arc<LiveWatch>,
    /// `serve --record`: the page says the ids are those `clients.csv` will hold.
    pub recording: bool,
    /// The rule being served, as `serve`'s first line states it ("gcra: 50 per 10s, 50 to
    /// start").
    pub rule: String,
    /// The rule's sustained rate, per virtual second, drawn as a line on the rate chart.
    pub limit_per_s: Option<f64>,
    /// The limit the rule states (a bucket's size): the top of the remaining axis.
    pub bucket: Option<u64>,
    board: Mutex<Board>,
}

/// `/_dashboard.json`.
#[derive(Debug, Serialize)]
pub struct View {
    pub real_s: f64,
    pub virtual_s: f64,
    pub time_scale: f64,
    /// Real seconds the per-second series cover (the last minute).
    pub window_s: usize,
    pub recording: bool,
    /// The rule being served, and its sustained rate per virtual second.
    pub rule: String,
    pub limit_per_s: Option<f64>,
    /// The limit the rule states: the remaining axis goes up to it.
    pub bucket: Option<u64>,
    pub totals: Counts,
    /// Clients seen, each counted once (capped as `serve --record` caps them).
    pub clients_seen: usize,
    /// The last `remaining` answered, to anyone.
    pub remaining: Option<u64>,
    /// Every client together, second by second, oldest first.
    pub all: Series,
    /// The clients listed (at most [`MAX_SHOWN`]), in the order first seen.
    pub clients: Vec<ClientView>,
}

#[derive(Debug, Serialize)]
pub struct Series {
    pub ok: Vec<u32>,
    pub limited: Vec<u32>,
    pub errors: Vec<u32>,
    pub remaining: Vec<Option<u64>>,
    /// 2xx and 429 per virtual second over the last minute.
    pub ok_per_s: f64,
    pub limited_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct ClientView {
    /// `group/name`, as `clients.csv` has it.
    pub id: String,
    pub group: String,
    pub name: String,
    /// How the client was told apart: `x-client-id`, `key` or `peer`.
    pub by: &'static str,
    pub requests: u64,
    pub ok: u64,
    pub limited: u64,
    pub errors: u64,
    pub remaining: Option<u64>,
    pub ok_per_s: f64,
    pub limited_per_s: f64,
    /// The last `remaining` of each second of the last minute, oldest first.
    pub remaining_series: Vec<Option<u64>>,
}

impl Dashboard {
    pub fn new(clock: ScaledClock, recording: bool) -> Self {
        let watch = Arc::new(LiveWatch::new());
        watch.started(clock);
        Dashboard {
            started: Instant::now(),
            clock,
            watch,
            recording,
            rule: String::new(),
            limit_per_s: None,
            bucket: None,
            board: Mutex::new(Board::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Board> {
        self.board.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn second(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// The page's data now.
    pub fn view(&self) -> View {
        let real = self.started.elapsed().as_secs_f64();
        self.view_at(self.second(), real)
    }

    fn view_at(&self, now: u64, real_s: f64) -> View {
        let scale = self.clock.scale();
        // The rates are over the part of the minute that has passed, in virtual seconds.
        let span = real_s.clamp(1e-9, WINDOW as f64) * scale;
        let board = self.lock();
        let mut shown: Vec<(u64, usize)> = board
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (ok, lim) = c.ring.last_minute(now);
                (ok + lim, i)
            })
            .collect();
        if shown.len() > MAX_SHOWN {
            shown.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            shown.truncate(MAX_SHOWN);
            shown.sort_by_key(|&(_, i)| i);
        }
        let clients = shown
            .into_iter()
            .map(|(_, i)| {
                let c = &board.clients[i];
                let name: &ClientName = board.table.name(i as u32);
                let (ok, lim) = c.ring.last_minute(now);
                ClientView {
                    id: name.key(),
                    group: name.group.clone(),
                    name: name.name.clone(),
                    by: name.by.as_str(),
                    requests: c.counts.requests,
                    ok: c.counts.ok,
                    limited: c.counts.limited,
                    errors: c.counts.errors,
                    remaining: c.remaining,
                    ok_per_s: ok as f64 / span,
                    limited_per_s: lim as f64 / span,
                    remaining_series: c.ring.recent(now).map(remaining_of).collect(),
                }
            })
            .collect();
        let (ok, lim) = board.all.ring.last_minute(now);
        let slots: Vec<Slot> = board.all.ring.recent(now).collect();
        View {
            real_s,
            virtual_s: real_s * scale,
            time_scale: scale,
            window_s: WINDOW,
            recording: self.recording,
            rule: self.rule.clone(),
            limit_per_s: self.limit_per_s,
            bucket: self.bucket,
            totals: board.all.counts,
            clients_seen: board.table.len(),
            remaining: board.all.remaining,
            all: Series {
                ok: slots.iter().map(|s| s.ok).collect(),
                limited: slots.iter().map(|s| s.limited).collect(),
                errors: slots.iter().map(|s| s.errors).collect(),
                remaining: slots.iter().copied().map(remaining_of).collect(),
                ok_per_s: ok as f64 / span,
                limited_per_s: lim as f64 / span,
            },
            clients,
        }
    }

    fn heard(
        &self,
        id: ClientName,
        key: Option<&KeyId>,
        status: Status,
        remaining: Option<u64>,
        second: u64,
    ) {
        let mut board = self.lock();
        let (i, new, _) = board.table.client(id, key);
        if new {
            board.clients.push(Client::default());
        }
        let seen = board.table.len();
        let Board { all, clients, .. } = &mut *board;
        for c in [all, &mut clients[i as usize]] {
            c.counts.add(status);
            if remaining.is_some() {
                c.remaining = remaining;
            }
            c.ring.add(second, status, remaining);
        }
        drop(board);
        self.watch.answered(status, remaining);
        self.watch.set_clients(seen as u64);
    }
}

fn remaining_of(s: Slot) -> Option<u64> {
    (s.remaining != NO_REMAINING).then_some(s.remaining)
}

impl Observer for Dashboard {
    fn observe(&self, seen: Seen<'_>) {
        let id = ClientName::of(seen.client_id, seen.key.as_ref(), seen.peer);
        self.heard(
            id,
            seen.key.as_ref(),
            seen.status,
            seen.remaining,
            self.second(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> ClientName {
        ClientName::of(Some(name), None, "127.0.0.1".parse().unwrap())
    }

    fn board() -> Dashboard {
        Dashboard::new(ScaledClock::starting_now(10.0), true)
    }

    #[test]
    fn each_client_has_its_totals_rates_and_remaining_by_the_second() {
        let d = board();
        d.heard(named("py/a"), None, Status::Ok, Some(5), 0);
        d.heard(named("py/a"), None, Status::Ok, Some(4), 0);
        d.heard(named("py/b"), None, Status::Limited, Some(0), 2);
        d.heard(named("py/a"), None, Status::Error, None, 3);
        let v = d.view_at(3, 3.0);
        assert_eq!(v.clients_seen, 2);
        assert_eq!(
            (
                v.totals.requests,
                v.totals.ok,
                v.totals.limited,
                v.totals.errors
            ),
            (4, 2, 1, 1)
        );
        assert_eq!(v.remaining, Some(0));
        let a = &v.clients[0];
        assert_eq!((a.id.as_str(), a.by), ("py/a", "x-client-id"));
        assert_eq!(
            (a.requests, a.ok, a.errors, a.remaining),
            (3, 2, 1, Some(4))
        );
        // 2 of 2xx over 3 real seconds at time scale 10: 30 virtual seconds.
        assert!((a.ok_per_s - 2.0 / 30.0).abs() < 1e-12, "{}", a.ok_per_s);
        let series = &a.remaining_series;
        assert_eq!(series.len(), WINDOW);
        assert_eq!(&series[WINDOW - 4..], &[Some(4), None, None, None]);
        assert_eq!(v.all.ok[WINDOW - 4], 2);
        assert_eq!(v.all.limited[WINDOW - 2], 1);
        assert_eq!(v.all.remaining[WINDOW - 2], Some(0));
        // The whole view is what the page reads.
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["clients"][1]["id"], "py/b");
        assert_eq!(json["recording"], true);
    }

    #[test]
    fn seconds_older_than_the_window_drop_out_of_the_rates() {
        let d = board();
        d.heard(named("a"), None, Status::Ok, Some(1), 0);
        d.heard(named("a"), None, Status::Limited, Some(0), 59);
        let v = d.view_at(59, 59.5);
        assert_eq!(v.all.ok.iter().sum::<u32>(), 1);
        let v = d.view_at(60, 60.5);
        assert_eq!(
            v.all.ok.iter().sum::<u32>(),
            0,
            "second 0 is past the minute"
        );
        assert_eq!(v.all.limited.iter().sum::<u32>(), 1);
        // The totals keep it.
        assert_eq!(v.totals.ok, 1);
        // A slot used again a minute later starts from nothing.
        d.heard(named("a"), None, Status::Limited, None, 60);
        let v = d.view_at(60, 60.5);
        assert_eq!((v.all.ok[WINDOW - 1], v.all.limited[WINDOW - 1]), (0, 1));
    }

    #[test]
    fn five_hundred_clients_are_listed_and_past_the_cap_the_busiest() {
        let d = board();
        for i in 0..500 {
            d.heard(named(&format!("w/c{i}")), None, Status::Ok, Some(1), 0);
        }
        let v = d.view_at(0, 0.5);
        assert_eq!((v.clients.len(), v.clients_seen), (500, 500));
        assert_eq!(v.clients[499].id, "w/c499");
        for i in 0..MAX_SHOWN + 10 {
            d.heard(named(&format!("x/c{i}")), None, Status::Ok, None, 1);
        }
        // The busiest: the last one seen sent twice.
        let last = format!("x/c{}", MAX_SHOWN + 9);
        d.heard(named(&last), None, Status::Ok, None, 1);
        let v = d.view_at(1, 1.5);
        assert_eq!(v.clients.len(), MAX_SHOWN);
        assert_eq!(v.clients_seen, 500 + MAX_SHOWN + 10);
        assert_eq!(v.clients.last().unwrap().id, last);
        assert_eq!(v.totals.requests, (500 + MAX_SHOWN + 11) as u64);
        assert!(v.clients.windows(2).all(|w| w[0].id != w[1].id));
    }
}
