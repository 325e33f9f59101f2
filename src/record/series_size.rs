//! How large `series.csv` will grow, known before a run starts: a fine `sample_every` over a
//! long run of many threads can ask for more disk than a machine has, so a run refuses past
//! [`MAX_SERIES_BYTES`] (unless allowed) and `serve --record` samples less often.

use crate::scenario::{Scenario, SeriesLevel};
use crate::time::{HumanDuration, NANOS_PER_SEC};

/// The largest `series.csv` a run writes without `--allow-large-output`.
pub const MAX_SERIES_BYTES: u64 = 2_000_000_000;

/// About how many bytes `series.csv` takes: a row per thread (process, group: `[run] series`)
/// per tick (every row counted at every tick, an upper bound for groups that join late or
/// leave early), each row its group's name and about 43 bytes of numbers (measured: 47 for
/// `fast`).
pub fn series_bytes_estimate(scenario: &Scenario) -> u64 {
    let every = scenario.run.sample_every.nanos().max(1);
    let ticks = scenario.run.duration.nanos().div_ceil(every) + 1;
    scenario
        .clients
        .iter()
        .map(|g| {
            let threads = match scenario.run.series {
                SeriesLevel::Thread => u64::from(g.common.processes) * u64::from(g.common.threads),
                SeriesLevel::Process => u64::from(g.common.processes),
                SeriesLevel::Group => 1,
            };
            let row = 43 + g.common.name.len() as u64;
            threads.saturating_mul(ticks).saturating_mul(row)
        })
        .fold(0u64, u64::saturating_add)
}

/// A `series.csv` estimated past [`MAX_SERIES_BYTES`]: what a refusal or a note says of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeriesTooLarge {
    /// The scenario's `[run] sample_every`.
    pub sample_every: HumanDuration,
    /// The estimate, bytes.
    pub bytes: u64,
    /// Sampling ticks over the run.
    pub ticks: u64,
    /// The sample interval that would fit, rounded up to whole seconds.
    pub fitting_every: HumanDuration,
}

/// `Some` when `scenario`'s `series.csv` would pass [`MAX_SERIES_BYTES`].
pub fn too_large(scenario: &Scenario) -> Option<SeriesTooLarge> {
    let bytes = series_bytes_estimate(scenario);
    if bytes <= MAX_SERIES_BYTES {
        return None;
    }
    let every = scenario.run.sample_every;
    let fits = (bytes as f64 / MAX_SERIES_BYTES as f64 * every.secs()).ceil() as u64;
    Some(SeriesTooLarge {
        sample_every: every,
        bytes,
        ticks: scenario.run.duration.nanos().div_ceil(every.nanos().max(1)),
        fitting_every: HumanDuration(fits.max(1) * NANOS_PER_SEC),
    })
}
