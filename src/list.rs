//! `throttle-sim list`: every client algorithm and server kind with its parameters and
//! defaults, read from the registries, so what is added there shows here by itself.

use serde_json::json;

use crate::limiter::{Headers, Latency, LimiterConfig};
use crate::scenario::params::{Parameters, algorithm_parameters, server_parameters};
use crate::scenario::{GROUP_COMMON, SERVER_COMMON};

/// One registered algorithm or server kind.
pub struct Entry {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: Parameters,
    /// What the parameters mean beyond their names, printed under them.
    pub notes: &'static [&'static str],
    /// The parameters `advise` searches (algorithms only).
    pub tune: &'static [&'static str],
    /// What a parameter's number counts, where the algorithm says.
    pub units: &'static [(&'static str, &'static str)],
}

pub fn algorithms() -> Vec<Entry> {
    crate::throttle::ThrottleConfig::NAMES
        .iter()
        .map(|&name| Entry {
            name,
            description: crate::throttle::ThrottleConfig::describe(name).unwrap_or(""),
            parameters: algorithm_parameters(name).unwrap_or_default(),
            notes: crate::throttle::ThrottleConfig::notes(name),
            tune: crate::throttle::ThrottleConfig::tunable(name),
            units: crate::throttle::ThrottleConfig::units(name),
        })
        .collect()
}

pub fn servers() -> Vec<Entry> {
    LimiterConfig::NAMES
        .iter()
        .map(|&name| Entry {
            name,
            description: LimiterConfig::describe(name).unwrap_or(""),
            parameters: server_parameters(name).unwrap_or_default(),
            notes: LimiterConfig::notes(name),
            tune: &[],
            units: &[],
        })
        .collect()
}

fn value_text(v: &Option<toml::Value>) -> String {
    match v {
        Some(v) => format!("= {v}"),
        None => "(optional, no default)".to_string(),
    }
}

fn entries_text(out: &mut String, entries: &[Entry]) {
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in entries {
        out.push_str(&format!("\n{:width$}  {}\n", e.name, e.description));
        if e.parameters.is_empty() {
            out.push_str("    (no parameters)\n");
        }
        let pw = e.parameters.iter().map(|p| p.0.len()).max().unwrap_or(0);
        let vw = e
            .parameters
            .iter()
            .map(|p| value_text(&p.1).len())
            .max()
            .unwrap_or(0);
        for (k, v) in &e.parameters {
            match e.units.iter().find(|(name, _)| name == k) {
                Some((_, unit)) => {
                    out.push_str(&format!("    {k:pw$} {:vw$}  # {unit}\n", value_text(v)))
                }
                None => out.push_str(&format!("    {k:pw$} {}\n", value_text(v))),
            }
        }
        for line in e.notes {
            out.push_str(&format!("    {line}\n"));
        }
        if !e.tune.is_empty() {
            out.push_str(&format!(
                "    tune: {} (advise tries each at half and twice its default)\n",
                e.tune.join(", ")
            ));
        }
    }
}

/// The listing a person reads.
pub fn text() -> String {
    let mut out = String::from("Client algorithms (algorithm = \"...\" in [[clients]])\n");
    entries_text(&mut out, &algorithms());
    out.push_str(&format!(
        "\nEvery [[clients]] group also takes: {}.\n",
        GROUP_COMMON.join(", ")
    ));
    out.push_str("\nServer kinds (kind = \"...\" in [server])\n");
    entries_text(&mut out, &servers());
    out.push_str(&format!(
        "\nEvery [server] also takes: {} (latency default {}).\n",
        SERVER_COMMON.join(", "),
        toml::Value::try_from(Latency::default()).map_or("?".into(), |v| v.to_string())
    ));
    out.push_str(&format!(
        "headers = one of {} (default \"{}\"): the dialect of the answers' rate-limit fields. \
         \"full\" sends every field (RateLimit-*, Retry-After, retry-after-ms), \"ietf\" the \
         draft's RateLimit and RateLimit-Policy, \"heroku\" RateLimit-Remaining only, \
         \"github\" x-ratelimit-*, \"none\" nothing (the client sees only the status); \
         docs/headers.md.\n",
        Headers::NAMES.join(", "),
        Headers::default().name()
    ));
    out.push_str(
        "\nSwitching a group's algorithm with --set clients.NAME.algorithm=... (or a \
         [[variants]] set) drops the parameters the new algorithm does not take.\n",
    );
    out
}

fn entries_json(entries: &[Entry]) -> serde_json::Value {
    entries
        .iter()
        .map(|e| {
            let params: serde_json::Map<String, serde_json::Value> = e
                .parameters
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_ref()
                            .and_then(|v| serde_json::to_value(v).ok())
                            .unwrap_or(serde_json::Value::Null),
                    )
                })
                .collect();
            let mut entry =
                json!({"name": e.name, "description": e.description, "parameters": params});
            if !e.notes.is_empty() {
                entry["notes"] = json!(e.notes);
            }
            if !e.tune.is_empty() {
                entry["tune"] = json!(e.tune);
            }
            if !e.units.is_empty() {
                let units: serde_json::Map<String, serde_json::Value> = e
                    .units
                    .iter()
                    .map(|(k, u)| (k.to_string(), json!(u)))
                    .collect();
                entry["units"] = units.into();
            }
            entry
        })
        .collect()
}

/// The listing for scripts: parameters map to their defaults (null: none). `blind` names the
/// algorithms a client could run without shared state, as `advise` ranks them: not `none`, not
/// the bounds (told the thread count), not those that coordinate through a store.
pub fn json() -> serde_json::Value {
    json!({
        "algorithms": entries_json(&algorithms()),
        "blind": crate::advise::algorithms(false),
        "group_fields": GROUP_COMMON,
        "servers": entries_json(&servers()),
        "server_fields": SERVER_COMMON,
        "server_headers": Headers::NAMES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_registered_name_with_its_defaults() {
        let t = text();
        for name in crate::throttle::ThrottleConfig::NAMES
            .iter()
            .chain(LimiterConfig::NAMES)
        {
            assert!(t.contains(&format!("\n{name} ")), "{name} missing:\n{t}");
        }
        let line = |k: &str| {
            t.lines()
                .find(|l| l.trim_start().starts_with(&format!("{k} ")))
                .unwrap_or_else(|| panic!("no {k} line:\n{t}"))
                .to_string()
        };
        assert!(line("initial_sleep").ends_with("= \"1.6s\""), "{t}");
        assert!(line("initial").ends_with("(optional, no default)"), "{t}");
        // The backoff's notes say how base maps onto each jitter, with the AWS post's settings.
        assert!(
            t.contains("base = \"10ms\" for none/full/equal and base = \"5ms\" for decorrelated"),
            "{t}"
        );
        let j = json();
        let backoff = j["algorithms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "backoff")
            .unwrap();
        assert!(
            backoff["notes"][0]
                .as_str()
                .unwrap()
                .contains("base × 2^(failures − 1)")
        );
        // fair-share says what each number counts, on every one of its parameters.
        assert!(
            line("reserve").ends_with("# fraction of the bucket B"),
            "{t}"
        );
        let fair = j["algorithms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "fair-share")
            .unwrap();
        let params = fair["parameters"].as_object().unwrap();
        let units = fair["units"].as_object().unwrap();
        assert_eq!(params.len(), units.len());
        assert!(params.keys().all(|k| units.contains_key(k)), "{units:?}");
        let j = json();
        assert_eq!(j["algorithms"][0]["name"], "schneems");
        assert_eq!(j["algorithms"][0]["parameters"]["jitter"], 0.1);
        let blind: Vec<&str> = j["blind"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            blind.contains(&"fair-share") && blind.contains(&"aimd"),
            "{blind:?}"
        );
        for other in [
            "none",
            "oracle",
            "independent",
            "shared-bucket",
            "interval-lock",
        ] {
            assert!(!blind.contains(&other), "{other}: {blind:?}");
        }
    }
}
