//! `--set path=value` overrides, applied to the parsed TOML before it is typed, so a flag can
//! change anything the file can say. `clients.*.jitter` sets every group; `clients.fast.jitter`
//! the group named `fast`; `clients.0.jitter` the first.

use std::fmt;
use std::str::FromStr;

use super::path::{FieldPath, Segment};

/// What is wrong with an override: as written (`path=value`), or where it is applied.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OverrideError {
    #[error("`{raw}` needs the form path=value, e.g. server.limit=600")]
    NoValue { raw: String },
    #[error("`{raw}`: `{path}` is not a field path; write e.g. server.limit=600")]
    NotAPath { raw: String, path: String },
    /// A value that looks like TOML (a list, a quoted string, a number) but does not parse.
    #[error("`{raw}`: the value `{value}` is not valid TOML: {message}")]
    NotToml {
        raw: String,
        value: String,
        message: String,
    },
    /// A value with a line break that is not one TOML value (`5\nrun.seed=3`): what came
    /// after the break was silently dropped.
    #[error(
        "`{}`: the value holds a line break; one --set sets one value (give another --set for \
         the next, or write text with line breaks as a TOML string: \"\"\"…\"\"\")",
        raw.escape_debug()
    )]
    LineBreak { raw: String },
    #[error("`{at}` is a list; name an element and a field, e.g. {at}.*.{field}")]
    ListNeedsElement { at: FieldPath, field: String },
    #[error("`{at}` has {len} entries, no [{index}]")]
    NoIndex {
        at: FieldPath,
        len: usize,
        index: usize,
    },
    #[error("`{at}` has no entry named `{name}` (names: {}; or use * or an index)", names.join(", "))]
    NoName {
        at: FieldPath,
        name: String,
        names: Vec<String>,
    },
    #[error("`{at}` is a single value, not a table")]
    NotATable { at: FieldPath },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    pub path: Vec<String>,
    pub value: toml::Value,
    /// As the user wrote it, for error messages.
    pub raw: String,
}

impl Override {
    pub fn new(path: &str, value: toml::Value) -> Result<Self, OverrideError> {
        let raw = format!("{path}={value}");
        Ok(Override {
            path: split_path(path, &raw)?,
            value,
            raw,
        })
    }
}

impl Override {
    /// The override a named flag stands for, quoted in errors as the flag was typed
    /// (`--limit 5`), not as a `--set` the user never wrote.
    pub fn from_flag(flag: &str, shown: &str, path: &str, value: toml::Value) -> Self {
        let mut o = Override::new(path, value).expect("flags map to valid paths");
        o.raw = format!("{flag} {shown}");
        o
    }
}

fn split_path(path: &str, raw: &str) -> Result<Vec<String>, OverrideError> {
    let segs: Vec<String> = path
        .trim()
        .split('.')
        .map(|s| s.trim().to_string())
        .collect();
    if segs.iter().any(String::is_empty) {
        return Err(OverrideError::NotAPath {
            raw: raw.to_string(),
            path: path.to_string(),
        });
    }
    Ok(segs)
}

impl FromStr for Override {
    type Err = OverrideError;

    /// `server.limit=600`, `run.duration=2h`, `clients.*.jitter=0.0`, `expect.ratio_429=[0,0.1]`.
    /// The value is read as TOML, and as a plain string when it is not TOML (`2h`, `fast`).
    fn from_str(s: &str) -> Result<Self, OverrideError> {
        let (path, value) = s
            .split_once('=')
            .ok_or_else(|| OverrideError::NoValue { raw: s.to_string() })?;
        let value_text = value.trim();
        let parsed = toml::from_str::<toml::Table>(&format!("v = {value_text}"));
        let one_value = parsed.as_ref().is_ok_and(|t| t.len() == 1);
        if !one_value && value_text.contains(['\n', '\r']) {
            return Err(OverrideError::LineBreak { raw: s.to_string() });
        }
        let value = match parsed {
            Ok(mut t) => t.remove("v").expect("the one key just parsed"),
            // A list, a table, a quoted string or a number that is not valid TOML is a typo
            // to show, not text to pass on (where it would only be "invalid type: string").
            Err(e) if looks_like_toml(value_text) => {
                return Err(OverrideError::NotToml {
                    raw: s.to_string(),
                    value: value_text.to_string(),
                    message: e.message().trim().to_string(),
                });
            }
            Err(_) => toml::Value::String(value_text.to_string()),
        };
        Ok(Override {
            path: split_path(path, s)?,
            value,
            raw: s.to_string(),
        })
    }
}

/// A value meant as TOML rather than as plain text (`2h`, `fast`): a list, a table, a quoted
/// string, or a number.
fn looks_like_toml(v: &str) -> bool {
    v.starts_with(['[', '{', '"', '\''])
        || v.strip_prefix(['-', '+'])
            .unwrap_or(v)
            .chars()
            .all(|c| c.is_ascii_digit() || c == '_')
            && !v.is_empty()
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// Apply one override; returns the concrete paths it set.
pub fn apply(root: &mut toml::Table, o: &Override) -> Result<Vec<FieldPath>, OverrideError> {
    let mut set = Vec::new();
    apply_table(root, &o.path, &o.value, FieldPath::root(), &mut set)?;
    Ok(set)
}

fn apply_table(
    table: &mut toml::Table,
    segs: &[String],
    value: &toml::Value,
    at: FieldPath,
    set: &mut Vec<FieldPath>,
) -> Result<(), OverrideError> {
    let (first, rest) = segs.split_first().expect("paths are never empty");
    let here = at.key(first);
    if rest.is_empty() {
        table.insert(first.clone(), value.clone());
        set.push(here);
        return Ok(());
    }
    let child = table
        .entry(first.clone())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    apply_value(child, rest, value, here, set)
}

fn apply_value(
    node: &mut toml::Value,
    segs: &[String],
    value: &toml::Value,
    at: FieldPath,
    set: &mut Vec<FieldPath>,
) -> Result<(), OverrideError> {
    match node {
        toml::Value::Table(t) => apply_table(t, segs, value, at, set),
        toml::Value::Array(items) => {
            let (sel, rest) = segs.split_first().expect("paths are never empty");
            if rest.is_empty() {
                return Err(OverrideError::ListNeedsElement {
                    at,
                    field: sel.clone(),
                });
            }
            let chosen: Vec<usize> = if sel == "*" {
                (0..items.len()).collect()
            } else if let Ok(i) = sel.parse::<usize>() {
                if i >= items.len() {
                    return Err(OverrideError::NoIndex {
                        at,
                        len: items.len(),
                        index: i,
                    });
                }
                vec![i]
            } else {
                let named: Vec<usize> = items
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.get("name").and_then(|n| n.as_str()) == Some(sel.as_str()))
                    .map(|(i, _)| i)
                    .collect();
                if named.is_empty() {
                    let names = items
                        .iter()
                        .filter_map(|v| v.get("name").and_then(|n| n.as_str()))
                        .map(str::to_string)
                        .collect();
                    return Err(OverrideError::NoName {
                        at,
                        name: sel.clone(),
                        names,
                    });
                }
                named
            };
            for i in chosen {
                apply_value(&mut items[i], rest, value, at.index(i), set)?;
            }
            Ok(())
        }
        _ => Err(OverrideError::NotATable { at }),
    }
}

/// Whether `path` was set by one of the overrides, and by which.
pub fn set_by<'a>(path: &FieldPath, applied: &'a [(FieldPath, String)]) -> Option<&'a str> {
    applied
        .iter()
        .find(|(p, _)| {
            path.starts_with(p)
                || (p.starts_with(path) && !path.0.is_empty() && is_leaf_parent(path, p))
        })
        .map(|(_, raw)| raw.as_str())
}

fn is_leaf_parent(path: &FieldPath, set: &FieldPath) -> bool {
    // An error about `clients[0]` (e.g. an unknown field) may come from a field set under it.
    set.0.len() == path.0.len() + 1 && matches!(set.0.last(), Some(Segment::Key(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(s: &str) -> toml::Table {
        s.parse().unwrap()
    }

    #[test]
    fn values_are_typed_like_toml_or_kept_as_strings() {
        let o: Override = "server.limit=600".parse().unwrap();
        assert_eq!(o.value, toml::Value::Integer(600));
        let o: Override = "run.duration=2h".parse().unwrap();
        assert_eq!(o.value, toml::Value::String("2h".into()));
        let o: Override = "expect.ratio_429=[0, 0.1]".parse().unwrap();
        assert!(o.value.is_array());
        assert!("server.limit".parse::<Override>().is_err());
        assert!("server..limit=3".parse::<Override>().is_err());
    }

    /// `--set 'server.limit=5\nrun.duration=1s'` set the limit and silently dropped the rest.
    #[test]
    fn a_value_of_two_toml_lines_is_refused_not_cut() {
        for raw in [
            "server.limit=5\nrun.seed=3",
            "server.limit=5\nrun.duration=1s",
            "run.duration=2h\r\nserver.limit=5",
        ] {
            let e = raw.parse::<Override>().unwrap_err();
            assert!(matches!(e, OverrideError::LineBreak { .. }), "{raw}: {e}");
            assert!(e.to_string().contains("one --set sets one value"), "{e}");
        }
        let e = "server.limit=5\nrun.seed=3"
            .parse::<Override>()
            .unwrap_err();
        assert!(e.to_string().contains("server.limit=5\\nrun.seed=3"), "{e}");
        // One TOML value over lines is one value.
        let o: Override = "description=\"\"\"two\nlines\"\"\"".parse().unwrap();
        assert_eq!(o.value, toml::Value::String("two\nlines".into()));
        let o: Override = "expect.ratio_429=[0,\n0.1]".parse().unwrap();
        assert!(o.value.is_array());
    }

    #[test]
    fn wildcards_names_and_indices_select_groups() {
        let mut t = table("[[clients]]\nname = \"fast\"\n[[clients]]\nname = \"slow\"\n");
        let set = apply(&mut t, &"clients.*.jitter=0.0".parse().unwrap()).unwrap();
        assert_eq!(set.len(), 2);
        apply(&mut t, &"clients.slow.threads=9".parse().unwrap()).unwrap();
        apply(&mut t, &"clients.0.threads=3".parse().unwrap()).unwrap();
        let c = t["clients"].as_array().unwrap();
        assert_eq!(c[0]["jitter"].as_float(), Some(0.0));
        assert_eq!(c[0]["threads"].as_integer(), Some(3));
        assert_eq!(c[1]["threads"].as_integer(), Some(9));
    }

    #[test]
    fn missing_tables_are_created_and_bad_selectors_named() {
        let mut t = table("[[clients]]\nname = \"a\"\n");
        apply(&mut t, &"server.limit=10".parse().unwrap()).unwrap();
        assert_eq!(t["server"]["limit"].as_integer(), Some(10));
        let e = apply(&mut t, &"clients.b.threads=1".parse().unwrap()).unwrap_err();
        assert!(
            matches!(&e, OverrideError::NoName { name, .. } if name == "b"),
            "{e}"
        );
        assert!(
            e.to_string().contains("no entry named `b` (names: a;"),
            "{e}"
        );
        let e = apply(&mut t, &"clients.4.threads=1".parse().unwrap()).unwrap_err();
        assert!(
            matches!(
                e,
                OverrideError::NoIndex {
                    len: 1,
                    index: 4,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.to_string(), "`clients` has 1 entries, no [4]");
        let e = apply(&mut t, &"server.limit.x=1".parse().unwrap()).unwrap_err();
        assert!(e.to_string().contains("single value"), "{e}");
    }
}
