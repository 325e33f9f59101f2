//! Which forms an answer's rate-limit fields are written in, so a tool can say what a server
//! actually sends ("IETF draft-8 fields and X-RateLimit-* with an epoch-second reset") instead
//! of the nearest dialect it knows.

use std::fmt;

use std::time::SystemTime;

use crate::fields::{members, number};
use crate::when::{self, ResetForm};

/// One form of rate-limit field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Form {
    /// Separate `RateLimit-Limit` / `-Remaining` / `-Reset` (IETF draft-6).
    IetfSeparate,
    /// `RateLimit-Remaining` alone (Heroku).
    RemainingAlone,
    /// One `RateLimit: limit=…, remaining=…, reset=…` (IETF draft-7).
    IetfDictionary,
    /// `RateLimit: "name";r=…;t=…` items (IETF draft-8 and later).
    IetfStructured,
    /// `RateLimit-Policy: 100;w=60` (IETF draft-6 and -7).
    PolicyNumbered,
    /// `RateLimit-Policy: "name";q=100;w=60` (IETF draft-8 and later).
    PolicyNamed,
    /// `RateLimit-Policy` with several policies (a short and a long limit).
    SeveralPolicies,
    /// `X-RateLimit-*` or `X-Rate-Limit-*` with no reset.
    Legacy,
    /// `X-RateLimit-*` whose reset is seconds to it (fastify).
    LegacyDeltaReset,
    /// `X-RateLimit-*` whose reset is an epoch second (GitHub, Flask-Limiter, express's legacy).
    LegacyEpochReset,
    /// `X-RateLimit-*` whose reset is an epoch millisecond.
    LegacyEpochMillisReset,
    /// `X-RateLimit-*` whose reset is a duration or a date.
    LegacyOtherReset,
    /// `RateLimit-Reset` as an epoch (GitLab), not the seconds the draft says.
    IetfEpochReset,
    /// `Retry-After` in seconds.
    RetryAfterSeconds,
    /// `Retry-After` as an HTTP date.
    RetryAfterDate,
    /// `retry-after-ms` (or Azure's `x-ms-retry-after-ms`).
    RetryAfterMs,
    /// `anthropic-ratelimit-requests-*`, the reset an RFC 3339 date.
    Anthropic,
    /// A token bucket's refill beside its count: Spring Cloud Gateway's
    /// `X-RateLimit-Replenish-Rate`, Atlassian's `X-RateLimit-FillRate`.
    Refill,
    /// tollbooth's `X-Rate-Limit-Duration`, the window of its limit.
    LimitWindow,
    /// Shopify's `X-Shopify-Shop-Api-Call-Limit: used/limit`.
    CallLimit,
}

impl Form {
    const ALL: [Form; 20] = [
        Form::IetfSeparate,
        Form::RemainingAlone,
        Form::IetfDictionary,
        Form::IetfStructured,
        Form::PolicyNumbered,
        Form::PolicyNamed,
        Form::SeveralPolicies,
        Form::Legacy,
        Form::LegacyDeltaReset,
        Form::LegacyEpochReset,
        Form::LegacyEpochMillisReset,
        Form::LegacyOtherReset,
        Form::IetfEpochReset,
        Form::RetryAfterSeconds,
        Form::RetryAfterDate,
        Form::RetryAfterMs,
        Form::Anthropic,
        Form::Refill,
        Form::LimitWindow,
        Form::CallLimit,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for Form {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Form::IetfSeparate => "RateLimit-Limit/-Remaining/-Reset (IETF draft-6)",
            Form::RemainingAlone => "RateLimit-Remaining alone (Heroku)",
            Form::IetfDictionary => "RateLimit: limit, remaining, reset (IETF draft-7)",
            Form::IetfStructured => "RateLimit: \"name\";r;t (IETF draft-8 or later)",
            Form::PolicyNumbered => "RateLimit-Policy: q;w= (IETF draft-6/7)",
            Form::PolicyNamed => "RateLimit-Policy: \"name\";q;w (IETF draft-8 or later)",
            Form::SeveralPolicies => "RateLimit-Policy with several policies",
            Form::Legacy => "X-RateLimit-* without a reset",
            Form::LegacyDeltaReset => "X-RateLimit-* with the reset in seconds to it",
            Form::LegacyEpochReset => "X-RateLimit-* with the reset as an epoch second",
            Form::LegacyEpochMillisReset => "X-RateLimit-* with the reset as an epoch millisecond",
            Form::LegacyOtherReset => "X-RateLimit-* with the reset as a duration or a date",
            Form::IetfEpochReset => "RateLimit-Reset as an epoch",
            Form::RetryAfterSeconds => "Retry-After in seconds",
            Form::RetryAfterDate => "Retry-After as a date",
            Form::RetryAfterMs => "retry-after-ms",
            Form::Anthropic => "anthropic-ratelimit-requests-* (the reset a date)",
            Form::Refill => {
                "a bucket's refill: X-RateLimit-Replenish-Rate (Spring Cloud Gateway) or -FillRate (Atlassian)"
            }
            Form::LimitWindow => "X-Rate-Limit-Duration, the limit's window (tollbooth)",
            Form::CallLimit => "X-Shopify-Shop-Api-Call-Limit: used/limit (Shopify)",
        })
    }
}

/// A set of forms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Forms(u32);

impl Forms {
    /// The forms of one answer's fields (names in any case).
    pub fn of<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Forms {
        let mut set = Forms::default();
        let mut names = Vec::new();
        for (name, value) in headers {
            let name = name.trim().to_ascii_lowercase();
            if let Some(form) = form_of_field(&name, value.trim()) {
                set.insert(form);
            }
            if name == "ratelimit-reset"
                && let Some((ResetForm::EpochSeconds | ResetForm::EpochMillis, _)) =
                    when::reset(value, SystemTime::UNIX_EPOCH)
            {
                set.insert(Form::IetfEpochReset);
            }
            names.push(name);
        }
        let has = |n: &str| names.iter().any(|x| x == n);
        // Heroku's count alone is not draft-6, whose count comes with its limit and reset.
        if has("ratelimit-remaining") && !has("ratelimit-limit") && !has("ratelimit-reset") {
            set.remove(Form::IetfSeparate);
            set.insert(Form::RemainingAlone);
        }
        let legacy_reset = [
            Form::LegacyDeltaReset,
            Form::LegacyEpochReset,
            Form::LegacyEpochMillisReset,
            Form::LegacyOtherReset,
        ];
        if legacy_reset.iter().any(|f| set.contains(*f)) {
            set.remove(Form::Legacy);
        }
        set
    }

    pub fn insert(&mut self, form: Form) {
        self.0 |= form.bit();
    }

    fn remove(&mut self, form: Form) {
        self.0 &= !form.bit();
    }

    pub fn contains(self, form: Form) -> bool {
        self.0 & form.bit() != 0
    }

    pub fn union(self, other: Forms) -> Forms {
        Forms(self.0 | other.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The forms in the set, in a fixed order.
    pub fn iter(self) -> impl Iterator<Item = Form> {
        Form::ALL.into_iter().filter(move |f| self.contains(*f))
    }
}

impl fmt::Display for Forms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("no rate-limit fields");
        }
        let words: Vec<String> = self.iter().map(|form| form.to_string()).collect();
        f.write_str(&words.join(", "))
    }
}

/// The form one field is written in, if it is a rate-limit field.
fn form_of_field(name: &str, value: &str) -> Option<Form> {
    let legacy = name.starts_with("x-ratelimit-")
        || name.starts_with("x-rate-limit-")
        || name == "x-rate-limit";
    Some(match name {
        "ratelimit" => {
            let m = members(value);
            let structured = m.len() > 1
                || m.iter()
                    .any(|m| m.name.is_some() || m.param(&["r", "t"]).is_some());
            if structured {
                Form::IetfStructured
            } else {
                Form::IetfDictionary
            }
        }
        "ratelimit-policy" => {
            let m = members(value);
            if m.len() > 1 {
                Form::SeveralPolicies
            } else if m.iter().any(|m| m.name.is_some()) {
                Form::PolicyNamed
            } else {
                Form::PolicyNumbered
            }
        }
        "ratelimit-remaining" | "ratelimit-limit" | "ratelimit-reset" => Form::IetfSeparate,
        "retry-after" if number(value).is_some() => Form::RetryAfterSeconds,
        "retry-after" => Form::RetryAfterDate,
        "retry-after-ms" | "x-ms-retry-after-ms" => Form::RetryAfterMs,
        _ if name.starts_with("anthropic-ratelimit-requests-") => Form::Anthropic,
        "x-shopify-shop-api-call-limit" => Form::CallLimit,
        _ if legacy && (name.ends_with("-replenish-rate") || name.ends_with("-fillrate")) => {
            Form::Refill
        }
        _ if legacy && name.ends_with("-duration") => Form::LimitWindow,
        _ if legacy && name.ends_with("-reset-after") => Form::LegacyDeltaReset,
        _ if legacy && (name.ends_with("-reset") || name.ends_with("-reset-requests")) => {
            match when::reset(value, SystemTime::UNIX_EPOCH).map(|(f, _)| f) {
                Some(ResetForm::Delta) => Form::LegacyDeltaReset,
                Some(ResetForm::EpochSeconds) => Form::LegacyEpochReset,
                Some(ResetForm::EpochMillis) => Form::LegacyEpochMillisReset,
                _ => Form::LegacyOtherReset,
            }
        }
        _ if legacy => Form::Legacy,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_is_named_by_what_was_sent() {
        let forms = |pairs: &[(&str, &str)]| Forms::of(pairs.iter().copied()).to_string();
        assert_eq!(
            forms(&[
                ("RateLimit", "\"5-in-10sec\"; r=4; t=10"),
                ("RateLimit-Policy", "\"5-in-10sec\"; q=5; w=10; pk=:MTJj:"),
                ("X-RateLimit-Reset", "1796415570"),
                ("X-RateLimit-Remaining", "4"),
            ]),
            "RateLimit: \"name\";r;t (IETF draft-8 or later), RateLimit-Policy: \"name\";q;w \
             (IETF draft-8 or later), X-RateLimit-* with the reset as an epoch second"
        );
        assert_eq!(
            forms(&[
                ("RateLimit", "limit=5, remaining=4, reset=10"),
                ("RateLimit-Policy", "5;w=10")
            ]),
            "RateLimit: limit, remaining, reset (IETF draft-7), RateLimit-Policy: q;w= (IETF draft-6/7)"
        );
        assert_eq!(
            forms(&[("ratelimit-remaining", "7")]),
            "RateLimit-Remaining alone (Heroku)"
        );
        assert_eq!(
            forms(&[
                ("RateLimit-Remaining", "7"),
                ("RateLimit-Reset", "1796415570")
            ]),
            "RateLimit-Limit/-Remaining/-Reset (IETF draft-6), RateLimit-Reset as an epoch"
        );
        assert_eq!(
            forms(&[
                ("x-ratelimit-remaining", "4"),
                ("x-ratelimit-reset", "10"),
                ("retry-after", "10")
            ]),
            "X-RateLimit-* with the reset in seconds to it, Retry-After in seconds"
        );
        assert_eq!(
            forms(&[("x-ratelimit-remaining", "4")]),
            "X-RateLimit-* without a reset"
        );
        assert_eq!(
            forms(&[
                ("X-RateLimit-Remaining", "19"),
                ("X-RateLimit-Replenish-Rate", "10"),
                ("X-RateLimit-Burst-Capacity", "20"),
            ]),
            "X-RateLimit-* without a reset, a bucket's refill: X-RateLimit-Replenish-Rate \
             (Spring Cloud Gateway) or -FillRate (Atlassian)"
        );
        assert_eq!(
            forms(&[
                ("X-Rate-Limit-Limit", "10.00"),
                ("X-Rate-Limit-Duration", "1")
            ]),
            "X-RateLimit-* without a reset, X-Rate-Limit-Duration, the limit's window (tollbooth)"
        );
        assert_eq!(
            forms(&[("X-Shopify-Shop-Api-Call-Limit", "32/40")]),
            "X-Shopify-Shop-Api-Call-Limit: used/limit (Shopify)"
        );
        assert_eq!(
            forms(&[("Date", "Fri, 04 Dec 2026 20:19:40 GMT")]),
            "no rate-limit fields"
        );
    }
}
