//! What a live run or `serve` has done so far, for the status line on the terminal: counters
//! the engine bumps as answers come in, read a few times a second by the line's own thread.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::ScaledClock;
use crate::exchange::Status;
use crate::time::Nanos;

/// `remaining` not seen yet.
const NONE: u64 = u64::MAX;

/// Counters of answers, shared between the engine and the status line.
#[derive(Debug, Default)]
pub struct LiveWatch {
    clock: OnceLock<ScaledClock>,
    requests: AtomicU64,
    ok: AtomicU64,
    limited: AtomicU64,
    errors: AtomicU64,
    remaining: AtomicU64,
    /// Clients seen (`serve`); 0 where not counted.
    clients: AtomicU64,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Real seconds since the clock started (0 before).
    pub real_s: f64,
    /// Virtual seconds since then.
    pub virtual_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub limited: u64,
    pub errors: u64,
    /// The last `remaining` an answer carried.
    pub remaining: Option<u64>,
    pub clients: u64,
}

impl LiveWatch {
    pub fn new() -> Self {
        LiveWatch {
            remaining: AtomicU64::new(NONE),
            ..Default::default()
        }
    }

    /// The run's clock has started (its virtual time 0).
    pub fn started(&self, clock: ScaledClock) {
        let _ = self.clock.set(clock);
    }

    /// One answer.
    pub fn answered(&self, status: Status, remaining: Option<u64>) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let counter = match status {
            Status::Ok => &self.ok,
            Status::Limited => &self.limited,
            Status::Unavailable | Status::Error => &self.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = remaining {
            self.remaining.store(r.min(NONE - 1), Ordering::Relaxed);
        }
    }

    pub fn set_clients(&self, n: u64) {
        self.clients.store(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let (real_s, virtual_s) = match self.clock.get() {
            Some(c) => {
                let real = Instant::now()
                    .saturating_duration_since(c.instant_at(0))
                    .as_secs_f64();
                (real, real * c.scale())
            }
            None => (0.0, 0.0),
        };
        let remaining = self.remaining.load(Ordering::Relaxed);
        Snapshot {
            real_s,
            virtual_s,
            requests: self.requests.load(Ordering::Relaxed),
            ok: self.ok.load(Ordering::Relaxed),
            limited: self.limited.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            remaining: (remaining != NONE).then_some(remaining),
            clients: self.clients.load(Ordering::Relaxed),
        }
    }
}

/// Draws the status line from successive snapshots: the rate is the requests per virtual
/// second since the previous one (smoothed over about two seconds of real time).
#[derive(Debug)]
pub struct StatusText {
    /// The run's length in virtual time, when it has one.
    pub duration: Option<Nanos>,
    /// Show the count of clients (`serve`).
    pub clients: bool,
    rate: Option<f64>,
    last: Option<Snapshot>,
}

impl StatusText {
    pub fn new(duration: Option<Nanos>, clients: bool) -> Self {
        StatusText {
            duration,
            clients,
            rate: None,
            last: None,
        }
    }

    /// The line for `now`.
    pub fn line(&mut self, now: Snapshot) -> String {
        if let Some(last) = self.last
            && now.virtual_s > last.virtual_s
        {
            let r = (now.requests - last.requests.min(now.requests)) as f64
                / (now.virtual_s - last.virtual_s);
            // About two seconds of real time at four lines a second.
            self.rate = Some(self.rate.map_or(r, |old| 0.75 * old + 0.25 * r));
        }
        self.last = Some(now);
        // Past the end the run only winds down: its time stays at the end.
        let shown = self
            .duration
            .map_or(now.virtual_s, |d| now.virtual_s.min(d as f64 / 1e9));
        let mut s = format!("{} virtual", clock_text(shown));
        if let Some(d) = self.duration {
            s.push_str(&format!(" of {}", clock_text(d as f64 / 1e9)));
        }
        s.push_str(&format!(
            " ({} real) | {} req/s | 2xx {} | 429 {} | errors {} | remaining {}",
            clock_text(now.real_s),
            self.rate.map_or("-".to_string(), rate_text),
            now.ok,
            now.limited,
            now.errors,
            now.remaining.map_or("-".to_string(), |r| r.to_string()),
        ));
        if self.clients {
            s.push_str(&format!(" | clients {}", now.clients));
        }
        s
    }
}

/// Seconds as `42.0s`, `12m05s` or `3h02m`.
fn clock_text(s: f64) -> String {
    let s = s.max(0.0);
    if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{}h{:02}m",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

fn rate_text(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 1.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_count_each_answer_by_its_status() {
        let w = LiveWatch::new();
        assert_eq!(w.snapshot().remaining, None);
        w.answered(Status::Ok, Some(7));
        w.answered(Status::Limited, Some(0));
        w.answered(Status::Error, None);
        w.set_clients(3);
        let s = w.snapshot();
        assert_eq!(
            (
                s.requests,
                s.ok,
                s.limited,
                s.errors,
                s.remaining,
                s.clients
            ),
            (3, 1, 1, 1, Some(0), 3)
        );
        // Before the clock starts no time has passed.
        assert_eq!((s.real_s, s.virtual_s), (0.0, 0.0));
    }

    #[test]
    fn the_line_says_times_rate_counts_and_remaining() {
        let mut t = StatusText::new(Some(3_600_000_000_000), true);
        let first = Snapshot {
            real_s: 1.0,
            virtual_s: 100.0,
            requests: 100,
            ok: 90,
            limited: 10,
            errors: 0,
            remaining: Some(4),
            clients: 2,
        };
        t.line(first);
        let line = t.line(Snapshot {
            real_s: 2.0,
            virtual_s: 200.0,
            requests: 300,
            ok: 280,
            limited: 20,
            ..first
        });
        assert_eq!(
            line,
            "3m20s virtual of 1h00m (2.0s real) | 2.0 req/s | 2xx 280 | 429 20 | errors 0 \
             | remaining 4 | clients 2"
        );
        let mut t = StatusText::new(None, false);
        let line = t.line(Snapshot {
            remaining: None,
            ..first
        });
        assert!(line.ends_with("remaining -"), "{line}");
        assert!(!line.contains("clients"), "{line}");
        // A run past its end is shown at its end.
        let mut t = StatusText::new(Some(60_000_000_000), false);
        let line = t.line(Snapshot {
            virtual_s: 75.0,
            ..first
        });
        assert!(line.starts_with("1m00s virtual of 1m00s"), "{line}");
    }
}
