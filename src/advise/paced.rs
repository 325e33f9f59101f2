//! The paced candidate: `fixed` with the sleep a client sets when it counts the threads that
//! share the key. Every other candidate is blind to the fleet; this one is told it, because
//! the user told advise (`--fleet`). Where the answers carry no count (nginx's `limit_req`,
//! most gateways) a blind fleet of several processes has nothing to find its share by but
//! its own refusals, and no blind algorithm keeps them within advise's cap on a large one
//! (17 × 78 threads on a window of 1,470 per 15 minutes: every one past 30 % 429s); pacing
//! at the quota ÷ the fleet's threads does what `independent`, the bound, does, and a user
//! can write it in one line.
//!
//! The sleep is set for the largest fleet: `N / (LOAD · R)` between one thread's sends, less
//! the mean answer time (a thread sends, waits for the answer, then sleeps), and less the
//! jitter's mean. In a smaller fleet it under-uses the key (the ranking shows by how much);
//! with more threads than `N` it floods, which is why advise says so wherever it recommends
//! it.

use super::{Api, Fleet};
use crate::limiter::Latency;
use crate::time::HumanDuration;

/// The variant's name in `advise.toml`, the ranking and the results folder.
pub const NAME: &str = "fixed-paced";

/// The share of the quota the largest fleet offers (unitless): under 1 so that independent
/// phases and latency rarely bring a window's count past its limit, over the 0.97
/// utilization target so that the fleet can still meet it.
pub const LOAD: f64 = 0.98;

/// The sleep's jitter, a share of the sleep (unitless): threads started together must spread
/// apart, as their first sends all come one sleep after the start. At 0.1 they stayed in
/// bunches (17 × 78 threads on a window of 1,470 per 15 minutes: 2.55 % 429s); at 1 their
/// sends came near random (3 × 4 threads on a bucket of 5 a second: 1.84 %); at 0.5, 0.07 %
/// and 1.43 % (3 seeds each).
pub const JITTER: f64 = 0.5;

/// `fixed`'s settings for the largest fleet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paced {
    pub fleet: Fleet,
    pub sleep: HumanDuration,
}

/// The pace for the largest of `fleets` on `api`: the mean latency is the server's
/// (20 ms when it names none, as advise's scenario sets).
pub fn paced(api: &Api, fleets: &[Fleet]) -> Option<Paced> {
    let fleet = *fleets.iter().max_by_key(|f| f.threads_total())?;
    let latency = api
        .server
        .get("latency")
        .and_then(|v| v.clone().try_into::<Latency>().ok())
        .unwrap_or_default()
        .mean_secs();
    let spacing = fleet.threads_total() as f64 / (LOAD * api.rate());
    let sleep = ((spacing - latency) / (1.0 + JITTER / 2.0)).max(0.0);
    Some(Paced {
        fleet,
        sleep: HumanDuration::from_millis((sleep * 1000.0).round().min(1e15) as u64),
    })
}

impl Paced {
    /// Its `[[variants]]` entry: every client group switched to `fixed` at this sleep.
    pub fn variant(&self) -> toml::Value {
        let mut set = toml::Table::new();
        set.insert("clients.*.algorithm".into(), "fixed".into());
        set.insert("clients.*.sleep".into(), self.sleep.to_string().into());
        set.insert("clients.*.jitter".into(), JITTER.into());
        let mut v = toml::Table::new();
        v.insert("name".into(), NAME.into());
        v.insert("description".into(), self.describe().into());
        v.insert("set".into(), toml::Value::Table(set));
        toml::Value::Table(v)
    }

    /// "fixed, paced for 17x78 (1326 threads in all): sleep 10m17s + up to 50 % jitter, 0.98
    /// of the quota".
    pub fn describe(&self) -> String {
        format!(
            "fixed, paced for {} ({} threads in all): sleep {} + up to {} % jitter, {} of the \
             quota",
            self.fleet.name(),
            self.fleet.threads_total(),
            self.sleep,
            (JITTER * 100.0).round(),
            LOAD
        )
    }

    /// The `[[clients]]` lines a user pastes.
    pub fn lines(&self) -> [String; 3] {
        [
            "    algorithm = \"fixed\"".into(),
            format!("    sleep = \"{}\"", self.sleep),
            format!("    jitter = {JITTER}"),
        ]
    }

    /// The one condition those lines hold under, in a sentence.
    pub fn holds_only(&self) -> String {
        format!(
            "This sleep holds only while at most {} threads in all send with this key: it is \
             their share of the quota, told, not found. With more threads it floods the key; \
             with fewer it leaves part of the quota unused.",
            self.fleet.threads_total()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(latency: &str) -> Api {
        let server: toml::Table =
            format!("kind = \"fixed-window\"\nlimit = 1470\nwindow = \"15m\"\nlatency = {latency}")
                .parse()
                .unwrap();
        Api {
            server,
            quota: 1470.0,
            period: HumanDuration::from_secs(900),
            states_quota: false,
        }
    }

    fn fleet(processes: u32, threads: u32) -> Fleet {
        Fleet { processes, threads }
    }

    #[test]
    fn the_largest_fleet_sends_at_its_load_of_the_quota() {
        for latency in [
            "\"11ms\"",
            "{ distribution = \"lognormal\", median = \"200ms\", sigma = 1.0 }",
        ] {
            let a = api(latency);
            let p = paced(&a, &[fleet(2, 2), fleet(17, 78), fleet(100, 1)]).unwrap();
            assert_eq!(p.fleet, fleet(17, 78));
            // One thread's cycle: its sleep, the jitter's mean, the mean answer time.
            let l: Latency = a.server["latency"].clone().try_into().unwrap();
            let cycle = p.sleep.secs() * (1.0 + JITTER / 2.0) + l.mean_secs();
            let offered = 1326.0 / cycle;
            assert!(
                (offered / a.rate() - LOAD).abs() < 1e-4,
                "{latency}: {offered}"
            );
        }
    }

    #[test]
    fn a_fleet_too_slow_to_reach_the_quota_sleeps_not_at_all() {
        // 1000 threads whose answers take 11 ms send at most 91,000 a second, fewer than the
        // 111,000 a second allowed: no sleep.
        let mut a = api("\"11ms\"");
        a.quota = 100_000_000.0;
        let p = paced(&a, &[fleet(1, 1000)]).unwrap();
        assert_eq!(p.sleep, HumanDuration::from_millis(0));
    }

    #[test]
    fn its_variant_switches_every_group_to_fixed_at_its_sleep() {
        let p = paced(&api("\"11ms\""), &[fleet(17, 78)]).unwrap();
        let v = p.variant();
        assert_eq!(v["name"].as_str(), Some(NAME));
        let set = v["set"].as_table().unwrap();
        assert_eq!(set["clients.*.algorithm"].as_str(), Some("fixed"));
        assert_eq!(
            set["clients.*.sleep"].as_str(),
            Some(p.sleep.to_string().as_str())
        );
        let (lines, holds) = (p.lines(), p.holds_only());
        assert!(lines[1].contains(&p.sleep.to_string()));
        assert!(holds.contains("at most 1326 threads"), "{holds}");
    }
}
