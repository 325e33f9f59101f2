//! The body of every command: from parsed flags to output and an exit code, one file per
//! command, so `main.rs` only dispatches and the engines never see the command line.

mod advise;
mod check;
mod client;
mod compare;
mod fit;
mod list;
mod plot;
mod run;
mod serve;
mod shapes;

pub use advise::advise;
pub use check::check;
pub use client::client;
pub use compare::compare;
pub use fit::fit;
pub use list::list;
pub use plot::plot;
pub use run::run;
pub use serve::serve;
pub use shapes::shapes;

/// A flag's whole number as a TOML value: TOML integers are `i64`, and the flags that give
/// one refuse what is past `i64::MAX` (`cli::parse_whole`, `parse_seed`), so the clamp here
/// never bites.
fn toml_integer(v: u64) -> toml::Value {
    toml::Value::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// The `[server]` table of the rule flags `advise` and `serve` share (`--rule`, `--limit`,
/// `--period`, `--burst`, `--initial`): GCRA unless `--rule` says otherwise; a window rule's
/// window is the period, a token bucket refills `limit` per period into a bucket of `burst`
/// (default: the limit). No `headers`: each command adds its own default.
fn rule_table(
    rule: Option<crate::cli::RuleArg>,
    limit: u64,
    period: crate::time::HumanDuration,
    burst: Option<u64>,
    initial: Option<u64>,
) -> toml::Table {
    let rule = rule.unwrap_or(crate::cli::RuleArg::Gcra);
    let mut t = toml::Table::new();
    t.insert("kind".into(), rule.kind().into());
    let period = toml::Value::String(period.to_string());
    match rule.kind() {
        "token-bucket" => {
            t.insert("rate".into(), toml_integer(limit));
            t.insert("period".into(), period);
            t.insert("burst".into(), toml_integer(burst.unwrap_or(limit)));
        }
        "gcra" => {
            t.insert("limit".into(), toml_integer(limit));
            t.insert("period".into(), period);
        }
        _ => {
            t.insert("limit".into(), toml_integer(limit));
            t.insert("window".into(), period);
        }
    }
    if let Some(i) = initial {
        t.insert("initial".into(), toml_integer(i));
    }
    t
}
