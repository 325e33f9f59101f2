//! Typing parameter tables and wording their problems, shared by the client algorithms, the
//! server rules and the scenario loader, so each says what is wrong the same way.

use crate::time::HumanDuration;

/// A parameter table that does not fit its type, with the path of the field at fault.
pub type ConfigError = serde_path_to_error::Error<toml::de::Error>;

/// Deserialize a TOML value tracking the path of a failure.
pub fn typed<T: serde::de::DeserializeOwned>(v: toml::Value) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(v)
}

/// A parameter that is out of range: its field name and what is wrong.
pub type ParamProblem = (&'static str, String);

/// Shared checks for parameters, so every algorithm words its errors the same way.
pub(crate) fn check_non_negative(out: &mut Vec<ParamProblem>, field: &'static str, v: f64) {
    if !(v.is_finite() && v >= 0.0) {
        out.push((field, format!("must be a number of 0 or more (got {v})")));
    }
}

pub(crate) fn check_positive(out: &mut Vec<ParamProblem>, field: &'static str, v: f64) {
    if !(v.is_finite() && v > 0.0) {
        out.push((field, format!("must be a number above 0 (got {v})")));
    }
}

/// A span of time that must not be empty (a window, a period, a wait).
pub(crate) fn check_nonzero_duration(
    out: &mut Vec<ParamProblem>,
    field: &'static str,
    d: HumanDuration,
) {
    if d.nanos() == 0 {
        out.push((field, "must be longer than 0s".to_string()));
    }
}

/// A quota, `count` per `span`, as the server rules and `shared-bucket` give it: at least one
/// `unit` (e.g. "request per period") over a span longer than 0s.
pub(crate) fn check_quota(
    out: &mut Vec<ParamProblem>,
    (count_field, count, unit): (&'static str, u64, &str),
    (span_field, span): (&'static str, HumanDuration),
) {
    if count == 0 {
        out.push((count_field, format!("must be at least 1 {unit}")));
    }
    check_nonzero_duration(out, span_field, span);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_quota_names_both_fields_in_the_rules_words() {
        let mut out = Vec::new();
        check_quota(
            &mut out,
            ("limit", 0, "request per period"),
            ("period", HumanDuration(0)),
        );
        assert_eq!(
            out,
            [
                ("limit", "must be at least 1 request per period".to_string()),
                ("period", "must be longer than 0s".to_string()),
            ]
        );
        let mut out = Vec::new();
        check_quota(
            &mut out,
            ("rate", 1, "token per period"),
            ("period", HumanDuration(1)),
        );
        assert!(out.is_empty());
    }
}
