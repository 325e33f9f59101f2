//! `throttle-sim advise`: the API and fleets from the flags, every algorithm run, the advice
//! printed.

use std::sync::atomic::AtomicBool;

use crate::advise::{self, AdviseOptions, Api};
use crate::cli::AdviseArgs;
use crate::error::Error;
use crate::exit;
use crate::limiter::Headers;
use crate::parallel::cores;
use crate::progress::Progress;
use crate::run::print;
use crate::scenario::read_scenario;
use crate::time::HumanDuration;

pub fn advise(args: &AdviseArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    let api = api(args)?;
    let progress = Progress::new(args.quiet);
    let opts = AdviseOptions {
        api,
        fleets: args.fleet.clone(),
        churn: args.churn,
        shared_state: args.shared_state.is_some(),
        seeds: args.seeds as usize,
        seed: args.seed,
        duration: args.duration,
        jobs: args.jobs.map_or_else(cores, |j| j as usize),
        out: args.out.clone(),
        progress: &progress,
        interrupt,
    };
    let advice = advise::advise(&opts)?;
    if args.json {
        let json = serde_json::json!({
            "api": advice.api,
            "recommended": advice.recommended().map(|s| s.algorithm.clone()),
            "why": advise::verdict(&advice),
            "ranking": advise::ranking_rule(),
            "standings": advice.standings,
            "shared_state_reference": advice.reference.as_ref().map(|r| &r.standings),
            "tuning": advice.tuning,
            "paced": advice.paced.map(|p| serde_json::json!({
                "variant": advise::PACED,
                "fleet": p.fleet.name(),
                "sleep": p.sleep.to_string(),
                "jitter": advise::paced::JITTER,
                "holds": p.holds_only(),
            })),
            "results": advice.dir,
        });
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json).expect("advice serializes")
        ));
    } else {
        let base = read_scenario(&advice.scenario, &[], 0)?;
        let mut text = advise::advice_text(&opts.api, &base, &advice, false);
        text.push_str(&advise::tuning_text(&advice.tuning, "  "));
        text.push_str(&format!(
            "\nresults: {} (advice.md; compare/report.html has every algorithm in every fleet)\n\
             run it again: throttle-sim compare {} {}\n",
            advice.dir.display(),
            advice.scenario.display(),
            advise::rerun_args(&advice)
        ));
        print(&text);
    }
    Ok(exit::OK)
}

/// The API from `--scenario`'s `[server]`, else from the flags; the flags `--headers` and
/// `--latency` change either.
fn api(args: &AdviseArgs) -> Result<Api, Error> {
    let mut server = match &args.scenario {
        Some(path) => {
            let s = read_scenario(path, &[], 0)?;
            let table: toml::Table = s.to_toml().parse().expect("a scenario's TOML parses");
            match table.get("server") {
                Some(toml::Value::Table(t)) => t.clone(),
                _ => toml::Table::new(),
            }
        }
        None => from_flags(args),
    };
    if let Some(h) = args.headers {
        server.insert("headers".into(), h.name().into());
    }
    if let Some(l) = args.latency {
        server.insert("latency".into(), l.to_string().into());
    }
    let number = |k: &str| {
        server
            .get(k)
            .and_then(|v| v.as_integer().map(|i| i as f64).or(v.as_float()))
    };
    let quota = number("limit").or_else(|| number("rate")).unwrap_or(0.0);
    let period = server
        .get("period")
        .or_else(|| server.get("window"))
        .and_then(|v| v.as_str())
        .and_then(|p| crate::time::parse_duration(p).ok())
        .unwrap_or(HumanDuration::from_secs(3600));
    let headers = server
        .get("headers")
        .and_then(|v| v.as_str())
        .unwrap_or("full");
    let states_quota = !matches!(headers, "heroku" | "none");
    Ok(Api {
        server,
        quota,
        period,
        states_quota,
    })
}

fn from_flags(args: &AdviseArgs) -> toml::Table {
    let mut t = super::rule_table(
        args.rule,
        args.limit.unwrap_or(0),
        args.period.unwrap_or(HumanDuration::from_secs(3600)),
        args.burst,
        args.initial,
    );
    t.insert("headers".into(), Headers::default().name().into());
    t
}
