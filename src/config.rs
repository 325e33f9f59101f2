//! Typing parameter tables and wording their problems, shared by the client algorithms, the
//! server rules and the scenario loader, so each says what is wrong the same way.

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
