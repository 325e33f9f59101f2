//! `[server] headers`: which rate-limit fields the server puts on its answers.
//!
//! The rule decides; this setting only says how much of the decision the client is told. With
//! `none` the answer carries no `RateLimit-*` fields and no `Retry-After`, as many APIs send
//! (the client learns of the limit only from 429s). It is applied in one place per engine (the
//! sim's send, the live server's answer), so every server kind and every fault gets it alike.
//! An enum so further dialects (`ietf`, `heroku`, `github`: the same facts under other field
//! names) can be added as variants.

use serde::{Deserialize, Serialize};

use super::Decision;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Headers {
    /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`, the IETF `RateLimit` and
    /// `RateLimit-Policy`, and `Retry-After` on refusals (the default, and the only style
    /// before this setting existed).
    #[default]
    Full,
    /// No rate-limit fields and no `Retry-After`: only the status tells.
    None,
}

impl Headers {
    /// The valid values, as a scenario writes them.
    pub const NAMES: &'static [&'static str] = &["full", "none"];

    pub fn name(self) -> &'static str {
        match self {
            Headers::Full => "full",
            Headers::None => "none",
        }
    }

    /// The decision as the client may see it: the status always; the counts and the
    /// `Retry-After` only when this style sends them (a decision with `limit` 0 carries no
    /// rate-limit headers, see [`Decision::has_headers`]).
    #[inline]
    pub fn shown(self, d: Decision) -> Decision {
        match self {
            Headers::Full => d,
            Headers::None => Decision {
                status: d.status,
                remaining: 0,
                limit: 0,
                retry_after: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Status;

    #[test]
    fn none_hides_counts_and_retry_after_and_full_hides_nothing() {
        let d = Decision {
            status: Status::Limited,
            remaining: 0,
            limit: 4500,
            retry_after: Some(800_000_000),
        };
        assert_eq!(Headers::Full.shown(d), d);
        let hidden = Headers::None.shown(d);
        assert_eq!(hidden.status, Status::Limited);
        assert!(!hidden.has_headers());
        assert_eq!(hidden.retry_after, None);
        assert_eq!(Headers::default(), Headers::Full);
        for name in Headers::NAMES {
            let v: Headers = toml::Value::String(name.to_string()).try_into().unwrap();
            assert_eq!(v.name(), *name);
        }
    }
}
