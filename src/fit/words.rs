//! What `fit` says: the dialect of the answers, the fleet, what the 429s show, the findings as
//! text and the scenario it writes.

use std::fmt::Write as _;

use fair_share::{Form, Forms};

use super::rules::WindowStart;
use super::{Event, Fit, Rule};

/// The dialect of the sim's nearest to what the answers speak (a scenario's `headers`): from
/// the forms of the raw columns when the trace has them (docs/headers.md), else as far as the
/// parsed columns show.
pub(super) fn dialect(events: &[Event]) -> &'static str {
    let any = |f: &dyn Fn(&Event) -> bool| events.iter().any(f);
    let seen = forms_seen(events);
    let legacy = [
        Form::Legacy,
        Form::LegacyDeltaReset,
        Form::LegacyEpochReset,
        Form::LegacyEpochMillisReset,
        Form::LegacyOtherReset,
    ];
    let ietf = [
        Form::IetfDictionary,
        Form::IetfStructured,
        Form::PolicyNamed,
        Form::PolicyNumbered,
        Form::SeveralPolicies,
    ];
    let has = |forms: &[Form]| forms.iter().any(|f| seen.contains(*f));
    if has(&ietf) {
        // The full dialect is the IETF fields and Heroku's together.
        return if has(&[Form::IetfSeparate, Form::RemainingAlone]) {
            "full"
        } else {
            "ietf"
        };
    }
    // A bucket's refill states a count and a policy, as the sim's IETF fields do.
    if has(&[Form::Refill]) {
        return "ietf";
    }
    // A reset in seconds to go is rounded at each answer's phase, an epoch second names one
    // instant: the sim's two dialects of the legacy fields.
    if has(&[Form::LegacyDeltaReset])
        && !has(&[Form::LegacyEpochReset, Form::LegacyEpochMillisReset])
    {
        return "fastify";
    }
    // Flask-Limiter's fields are GitHub's with a `Retry-After` on every answer: the one sign
    // of its reset, the epoch second after the instant's, that a trace carries.
    if has(&legacy) && retry_after_on_2xx(events) {
        return "flask-limiter";
    }
    if has(&legacy) {
        return "github";
    }
    if has(&[Form::IetfSeparate, Form::RemainingAlone]) {
        return "heroku";
    }
    // The full dialect is the IETF fields and more: the parsed columns cannot tell them apart,
    // and the IETF fields are what a client reads of either.
    if any(&|e| e.policy.is_some()) {
        "ietf"
    } else if any(&|e| e.limit.is_some()) {
        "github"
    } else if any(&|e| e.remaining.is_some()) {
        "heroku"
    } else {
        "none"
    }
}

/// Every form the trace's answers were written in.
fn forms_seen(events: &[Event]) -> Forms {
    events
        .iter()
        .fold(Forms::default(), |all, e| all.union(e.forms))
}

/// What the answers sent, in words: the forms of their fields, and whether a 2xx carried a
/// `Retry-After` (Flask-Limiter sends it on every answer, as the time to the reset).
pub(super) fn sent(events: &[Event]) -> String {
    let seen = forms_seen(events);
    if seen.is_empty() {
        return match dialect(events) {
            "none" => "no rate-limit fields".to_string(),
            d => format!("the {d} dialect (no raw columns)"),
        };
    }
    let mut words = seen.to_string();
    if retry_after_on_2xx(events) {
        words.push_str(" (also on 2xx)");
    }
    words
}

/// Whether a 2xx carried a `Retry-After`, as Flask-Limiter's do.
fn retry_after_on_2xx(events: &[Event]) -> bool {
    events.iter().any(|e| {
        e.admitted
            && (e.forms.contains(Form::RetryAfterSeconds) || e.forms.contains(Form::RetryAfterDate))
    })
}

/// Each group with its processes and threads.
pub(super) fn fleet(events: &[Event]) -> Vec<(String, u64, u64)> {
    let mut out: Vec<(String, u64, u64)> = Vec::new();
    for e in events {
        match out.iter_mut().find(|g| g.0 == e.group) {
            Some(g) => {
                g.1 = g.1.max(e.process + 1);
                g.2 = g.2.max(e.thread + 1);
            }
            None => out.push((e.group.clone(), e.process + 1, e.thread + 1)),
        }
    }
    out
}

/// Without counts: the most 2xx any window of a round length held.
pub(super) fn what_429s_show(events: &[Event]) -> Vec<String> {
    let ok: Vec<f64> = events.iter().filter(|e| e.admitted).map(|e| e.at).collect();
    let mut out = Vec::new();
    for w in [1.0, 60.0, 3600.0] {
        let mut most = 0;
        let mut j = 0;
        for i in 0..ok.len() {
            while ok[i] - ok[j] >= w {
                j += 1;
            }
            most = most.max(i - j + 1);
        }
        out.push(format!("the most 2xx in any {}: {most}", show_secs(w)));
    }
    out
}

/// A period in seconds as a scenario writes durations (`HumanDuration`'s own form: "1h",
/// "15m", "1m30s", "1.25s"), to the millisecond.
pub fn show_secs(s: f64) -> String {
    let ms = (s * 1000.0).round().clamp(0.0, 1e15) as u64;
    crate::time::HumanDuration::from_millis(ms).to_string()
}

/// The median latency as a scenario writes it: to the microsecond below 10 ms (a server on
/// loopback answers in a fraction of a millisecond, which rounding to milliseconds made
/// `0ms`), to the millisecond above.
pub fn show_latency(s: f64) -> String {
    let us = (s * 1e6).round().clamp(0.0, 1e15) as u64;
    let us = if us >= 10_000 {
        (us + 500) / 1000 * 1000
    } else {
        us
    };
    crate::time::HumanDuration(us * 1000).to_string()
}

impl Fit {
    /// The fitted server as a scenario, with the trace's fleet running fair-share; `None`
    /// when the trace cannot tell the rule.
    pub fn scenario(&self, name: &str) -> Option<String> {
        let rule = self.rule?;
        let mut s = String::new();
        let _ = writeln!(s, "name = \"{name}\"");
        let _ = writeln!(
            s,
            "description = \"Fitted by throttle-sim fit from a trace of {:.0} s (confidence {:.2}).\"",
            self.span, self.confidence
        );
        let hours = (self.span / 3600.0).ceil().max(1.0);
        let _ = writeln!(
            s,
            "\n[run]\nduration = \"{hours}h\"\nseed = 42\nseeds = 10\n"
        );
        let _ = writeln!(s, "[server]");
        match rule {
            Rule::Bucket { size, period } => {
                let _ = writeln!(
                    s,
                    "kind = \"gcra\"\nlimit = {}\nperiod = \"{}\"",
                    size.round(),
                    show_secs(period)
                );
                if self.refused_cost == Some(true) {
                    let _ = writeln!(s, "refused_cost = 1");
                }
            }
            Rule::FixedWindow {
                limit,
                window,
                start,
            } => {
                let _ = writeln!(
                    s,
                    "kind = \"fixed-window\"\nlimit = {}\nwindow = \"{}\"",
                    limit.round(),
                    show_secs(window)
                );
                if start == WindowStart::FirstRequest {
                    let _ = writeln!(s, "start = \"first-request\"");
                }
            }
            Rule::SlidingCounter { limit, window, .. } => {
                let _ = writeln!(
                    s,
                    "kind = \"sliding-window-counter\"\nlimit = {}\nwindow = \"{}\"",
                    limit.round(),
                    show_secs(window)
                );
            }
            Rule::SlidingWindow { limit, window } => {
                let _ = writeln!(
                    s,
                    "kind = \"sliding-window\"\nlimit = {}\nwindow = \"{}\"",
                    limit.round(),
                    show_secs(window)
                );
                if self.refused_cost == Some(true) {
                    let _ = writeln!(
                        s,
                        "# the trace's refusals were counted in the window: no sliding-window \
                         option does that, so this server is kinder than the traced one"
                    );
                }
            }
        }
        let _ = writeln!(s, "# the answers sent {}", self.sent.replace('\n', " "));
        let _ = writeln!(s, "headers = \"{}\"", self.dialect);
        let _ = writeln!(s, "latency = \"{}\"", show_latency(self.latency));
        for (group, processes, threads) in &self.fleet {
            let _ = writeln!(
                s,
                "\n[[clients]]\nname = \"{}\"\nprocesses = {processes}\nthreads = {threads}\nalgorithm = \"fair-share\"",
                group.replace(['"', '\\'], "_")
            );
        }
        Some(s)
    }

    /// The findings as text.
    pub fn text(&self) -> String {
        let mut out = String::new();
        match (&self.rule, &self.cannot_tell) {
            (Some(r), _) => {
                let _ = writeln!(
                    out,
                    "fit: {} of {} per {} (confidence {:.2}), refused requests {}",
                    r.name(),
                    r.limit(),
                    show_secs(r.period()),
                    self.confidence,
                    match self.refused_cost {
                        Some(true) => "cost a token",
                        Some(false) => "free",
                        None => "cost a token or not (cannot tell)",
                    }
                );
            }
            (None, Some(why)) => {
                let _ = writeln!(out, "fit: cannot tell the rule: {why}",);
            }
            (None, None) => {}
        }
        let _ = writeln!(
            out,
            "  - the answers sent {}; the sim speaks it as its `{}` dialect",
            self.sent, self.dialect
        );
        for e in &self.evidence {
            let _ = writeln!(out, "  - {e}");
        }
        out
    }
}
