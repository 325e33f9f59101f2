//! When the live engine writes a sampling row. Answers arrive over pipes, late and out of
//! order across workers, so a row waits a grace period past its time (answers sent before it
//! may still be on their way), and the last row of a group that leaves early waits for the
//! group's workers to end; otherwise an answer could count in the summary but in no row.

use std::io::Write;
use std::time::{Duration, Instant};

use super::ScaledClock;
use super::workers::Worker;
use crate::record::Recorder;
use crate::scenario::Layout;
use crate::time::{Nanos, instant_after};

pub(super) struct TickPacing<'a> {
    pub layout: &'a Layout,
    pub clock: ScaledClock,
    /// How long past a row's time answers sent before it may still arrive.
    pub grace: Duration,
    pub every: Nanos,
}

/// The longest the engine waits for an event before looking at the clock again.
const POLL: Duration = Duration::from_millis(50);

impl TickPacing<'_> {
    /// Whether the row at `t` may be written as far as groups that leave early go.
    fn settled(&self, t: Nanos, workers: &[Worker]) -> bool {
        let duration = self.layout.duration;
        self.layout.groups.iter().all(|g| {
            let last_row =
                g.stop < duration && t >= g.stop && t.saturating_sub(self.every) < g.stop;
            !last_row || g.processes.clone().all(|p| workers[p].ended())
        })
    }

    /// How long to wait for the next event: until the next row falls due, at most [`POLL`].
    pub fn wait<W: Write, R: Write>(&self, rec: &Recorder<'_, W, R>) -> Duration {
        rec.next_tick()
            .map_or(POLL, |t| {
                instant_after(self.clock.instant_at(t), self.grace)
                    .saturating_duration_since(Instant::now())
            })
            .min(POLL)
    }

    /// Before counting a request sent at `sent_at`: the rows that fall before it.
    pub fn rows_before<W: Write, R: Write>(
        &self,
        rec: &mut Recorder<'_, W, R>,
        sent_at: Nanos,
        workers: &[Worker],
        sleeps: &[f64],
        progress: &mut dyn FnMut(Nanos),
    ) -> std::io::Result<()> {
        let duration = self.layout.duration;
        while let Some(t) = rec
            .next_tick()
            .filter(|&t| t < sent_at && t < duration && self.settled(t, workers))
        {
            rec.tick(t, sleeps)?;
            progress(t);
        }
        Ok(())
    }

    /// The rows whose time (and grace) has passed; the one at the end of the run waits for
    /// the last answers (`Recorder::finish_rows`), so the rows always add up to the totals.
    pub fn rows_due<W: Write, R: Write>(
        &self,
        rec: &mut Recorder<'_, W, R>,
        workers: &[Worker],
        sleeps: &[f64],
        progress: &mut dyn FnMut(Nanos),
    ) -> std::io::Result<()> {
        let duration = self.layout.duration;
        while let Some(t) = rec.next_tick().filter(|&t| {
            t < duration
                && instant_after(self.clock.instant_at(t), self.grace) <= Instant::now()
                && self.settled(t, workers)
        }) {
            rec.tick(t, sleeps)?;
            progress(t);
        }
        Ok(())
    }
}
