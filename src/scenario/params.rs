//! What each registered algorithm and server kind takes, found from the registries alone
//! (`from_params`, `Serialize`), so `list` and algorithm switching work for kinds added later
//! without a table to keep in step.

use serde::Serialize;

use super::FieldPath;
use super::path::Segment;
use crate::config::ConfigError;
use crate::limiter::LimiterConfig;
use crate::throttle::ThrottleConfig;

/// A field name no config has: typing it provokes the "unknown field" error that lists the
/// fields a `deny_unknown_fields` config accepts.
const PROBE: &str = "__throttle_sim_probe__";

/// Parameter names with their defaults (`None`: no default, e.g. an optional field).
pub type Parameters = Vec<(String, Option<toml::Value>)>;

/// The parameters of registry entry `name` and, for those with one, the default, in the order
/// the config declares them. `tag` (`algorithm`, `kind`) is left out. `None` for an unknown name.
pub fn parameters<T: Serialize>(
    name: &str,
    tag: &str,
    from_params: impl Fn(&str, toml::Value) -> Option<Result<T, ConfigError>>,
) -> Option<Parameters> {
    let mut out: Parameters = Vec::new();
    if let Some(Ok(defaults)) = from_params(name, toml::Value::Table(toml::Table::new()))
        && let Ok(toml::Value::Table(t)) = toml::Value::try_from(&defaults)
    {
        out.extend(
            t.into_iter()
                .filter(|(k, _)| k != tag)
                .map(|(k, v)| (k, Some(v))),
        );
    }
    let mut probe = toml::Table::new();
    probe.insert(PROBE.into(), toml::Value::Integer(0));
    // A config that accepts the probe ignores unknown fields: its defaults are all we know.
    if let Err(e) = from_params(name, toml::Value::Table(probe))? {
        for field in expected_fields(e.inner().message()) {
            if !out.iter().any(|(k, _)| *k == field) {
                out.push((field, None));
            }
        }
    }
    Some(out)
}

/// The field names in serde's "unknown field `x`, expected one of `a`, `b`" (or "expected
/// `a`", or "there are no fields").
fn expected_fields(message: &str) -> Vec<String> {
    let Some((_, rest)) = message.split_once("expected") else {
        return Vec::new();
    };
    rest.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

pub fn algorithm_parameters(name: &str) -> Option<Parameters> {
    parameters(name, "algorithm", ThrottleConfig::from_params)
}

pub fn server_parameters(name: &str) -> Option<Parameters> {
    parameters(name, "kind", LimiterConfig::from_params)
}

/// After an override set `clients[i].algorithm` or `server.kind`, drop the fields the new
/// algorithm or kind does not take, so `--set clients.*.algorithm=fixed` works on a scenario
/// written for another algorithm. Fields both take are kept (`jitter` stays `jitter`), as are
/// the fields every group or server shares. An unknown name drops nothing: validation then
/// names it and lists the valid ones.
pub fn drop_foreign_fields(
    root: &mut toml::Table,
    set: &[FieldPath],
    group_common: &[&str],
    server_common: &[&str],
) {
    for path in set {
        match &path.0[..] {
            [Segment::Key(c), Segment::Index(i), Segment::Key(a)]
                if c == "clients" && a == "algorithm" =>
            {
                let Some(group) = root
                    .get_mut("clients")
                    .and_then(|v| v.as_array_mut())
                    .and_then(|a| a.get_mut(*i))
                    .and_then(|g| g.as_table_mut())
                else {
                    continue;
                };
                retain_taken(group, "algorithm", group_common, algorithm_parameters);
            }
            [Segment::Key(s), Segment::Key(k)] if s == "server" && k == "kind" => {
                if let Some(server) = root.get_mut("server").and_then(|v| v.as_table_mut()) {
                    retain_taken(server, "kind", server_common, server_parameters);
                }
            }
            _ => {}
        }
    }
}

fn retain_taken(
    table: &mut toml::Table,
    tag: &str,
    common: &[&str],
    parameters: fn(&str) -> Option<Parameters>,
) {
    let Some(name) = table.get(tag).and_then(|v| v.as_str()).map(str::to_string) else {
        return;
    };
    let Some(taken) = parameters(&name) else {
        return;
    };
    table.retain(|k: &str, _| k == tag || common.contains(&k) || taken.iter().any(|t| t.0 == k));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fields_serde_lists() {
        assert_eq!(
            expected_fields("unknown field `x`, expected one of `a`, `b_c`"),
            vec!["a", "b_c"]
        );
        assert_eq!(
            expected_fields("unknown field `x`, expected `a`"),
            vec!["a"]
        );
        assert!(expected_fields("unknown field `x`, there are no fields").is_empty());
    }

    #[test]
    fn every_registered_name_has_its_parameters_listed() {
        for name in ThrottleConfig::NAMES {
            let p = algorithm_parameters(name).unwrap_or_else(|| panic!("{name}"));
            assert!(p.iter().all(|(k, _)| k != "algorithm"), "{name}: {p:?}");
        }
        let s = algorithm_parameters("schneems").unwrap();
        assert!(s.iter().any(|(k, v)| k == "initial_sleep" && v.is_some()));
        assert!(algorithm_parameters("none").unwrap().is_empty());
        assert!(algorithm_parameters("no-such").is_none());
        // gcra's `initial` has no default (the bucket starts full) but is still a parameter.
        let g = server_parameters("gcra").unwrap();
        assert!(
            g.iter().any(|(k, v)| k == "initial" && v.is_none()),
            "{g:?}"
        );
        assert!(g.iter().any(|(k, v)| k == "limit" && v.is_some()), "{g:?}");
    }
}
