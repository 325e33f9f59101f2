//! `throttle-sim client`: our clients against any HTTP endpoint, in live mode.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hyper::body::Bytes;

use super::run::{report_run, run_options};
use super::toml_integer;
use crate::cli::ClientArgs;
use crate::engine::EngineError;
use crate::engine::live::client::{self, TargetError};
use crate::engine::live::protocol::RequestBody;
use crate::engine::live::tls::HandshakeError;
use crate::engine::live::{LiveConfig, Target};
use crate::error::Error;
use crate::exchange::Quota;
use crate::redact::shown_url;
use crate::report;
use crate::rng::fresh_seed;
use crate::run::run_live;
use crate::scenario::{Override, Scenario, parse_scenario};
use crate::throttle::ThrottleConfig;
use crate::time::HumanDuration;

/// What is wrong with a flag of `client` (the flag is named by the caller).
#[derive(Debug, thiserror::Error)]
enum ClientFlagError {
    #[error(
        "unknown algorithm, expected one of: {}{}",
        ThrottleConfig::NAMES.join(", "),
        crate::suggest::did_you_mean(.0, ThrottleConfig::NAMES.iter().copied())
    )]
    UnknownAlgorithm(String),
    #[error(
        "client runs against --target, whose limits are its own; only clients.*, run.*, \
         store.* and expect.* apply (serve --limit … sets a mock server's)"
    )]
    ServerSetting,
}

/// Run our clients against any HTTP endpoint and record what they did.
pub fn client(args: &ClientArgs, interrupt: &AtomicBool) -> Result<i32, Error> {
    let scenario = client_scenario(args, fresh_seed())?;
    let cfg = client_config(args)?;
    if !args.output.quiet && !args.output.json {
        eprintln!(
            "running {} × {} {} clients against {} for {}",
            args.processes,
            args.threads,
            args.algorithm,
            shown_url(&args.target),
            scenario.run.duration
        );
    }
    let started = std::time::Instant::now();
    let result = run_live(
        &scenario,
        &run_options(&args.output, args.log_requests, interrupt),
        &cfg,
    )?;
    let wall = started.elapsed();
    report::write_run_report(&result.dir)?;
    Ok(report_run(&scenario, &result, wall, &args.output))
}

/// The scenario `throttle-sim client` runs: one group of `processes × threads` running the
/// algorithm, in live mode, with `--set` applied as for any scenario.
pub(crate) fn client_scenario(args: &ClientArgs, seed_if_absent: u64) -> Result<Scenario, Error> {
    if !ThrottleConfig::NAMES.contains(&args.algorithm.as_str()) {
        let flag = format!("--algorithm {}", args.algorithm);
        return Err(Error::flag(flag)(ClientFlagError::UnknownAlgorithm(
            args.algorithm.clone(),
        )));
    }
    args.scenario_flags
        .refuse_given_twice(None)
        .map_err(Error::usage)?;
    // The server is the target's own: a `server.*` value would be silently ignored.
    if let Some(o) = args
        .scenario_flags
        .sets
        .set
        .iter()
        .find(|o| o.path[0] == "server")
    {
        return Err(Error::flag(format!("--set {o}"))(
            ClientFlagError::ServerSetting,
        ));
    }
    let every = args
        .sample_every
        .unwrap_or_else(|| default_sample_every(args.duration));
    let mut root = toml::Table::new();
    root.insert("name".into(), "client".into());
    root.insert(
        "description".into(),
        format!("throttle-sim client --target {}", shown_url(&args.target)).into(),
    );
    let mut run = toml::Table::new();
    run.insert("duration".into(), args.duration.to_string().into());
    run.insert("mode".into(), "live".into());
    run.insert("sample_every".into(), every.to_string().into());
    if let Some(seed) = args.scenario_flags.seed {
        run.insert("seed".into(), toml_integer(seed));
    }
    root.insert("run".into(), toml::Value::Table(run));
    if let Some(url) = &args.store {
        let mut store = toml::Table::new();
        store.insert("url".into(), url.clone().into());
        root.insert("store".into(), toml::Value::Table(store));
    }
    let mut group = toml::Table::new();
    group.insert("name".into(), "client".into());
    group.insert(
        "processes".into(),
        toml::Value::Integer(args.processes.into()),
    );
    group.insert("threads".into(), toml::Value::Integer(args.threads.into()));
    group.insert("algorithm".into(), args.algorithm.clone().into());
    root.insert(
        "clients".into(),
        toml::Value::Array(vec![toml::Value::Table(group)]),
    );
    let text = toml::to_string(&root).expect("a table serializes");
    Ok(parse_scenario(
        &text,
        "<client flags>",
        "client",
        &quota_overrides(args),
        seed_if_absent,
    )?)
}

/// The `--set`s, after `--quota` and `--period` given to an algorithm that takes a quota (so a
/// `--set` of its own wins).
fn quota_overrides(args: &ClientArgs) -> Vec<Override> {
    let mut all = Vec::new();
    let takes = |p: &str| {
        ThrottleConfig::units(&args.algorithm)
            .iter()
            .any(|(n, _)| *n == p)
    };
    if let (Some(q), Some(p)) = (args.quota, args.period)
        && takes("quota")
        && takes("period")
    {
        all.push(Override::new("clients.*.quota", toml_integer(q)).expect("a fixed path"));
        all.push(Override::new("clients.*.period", p.to_string().into()).expect("a fixed path"));
    }
    all.extend(args.scenario_flags.sets.set.iter().cloned());
    all
}

/// How `client` runs: against the URL with the headers given.
pub fn client_config(args: &ClientArgs) -> Result<LiveConfig, Error> {
    // Refuse a bad URL, header, method, body file or CA file before any process starts.
    let flagged = |e: TargetError| {
        let flag = target_flag(args, &e);
        Error::flag(flag)(e)
    };
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(RequestBody::Text(text.clone())),
        (None, Some(path)) => Some(RequestBody::File(path.clone())),
        (None, None) => None,
    };
    let bytes = match &body {
        None => Bytes::new(),
        Some(RequestBody::Text(t)) => Bytes::from(t.clone()),
        Some(RequestBody::File(path)) => client::read_body_file(path).map_err(flagged)?,
    };
    let target = client::Target::parse(&args.target, &args.headers, args.ca_file.as_deref())
        .and_then(|t| t.with_request(&args.method, bytes))
        .map_err(flagged)?;
    check_handshake(&target)?;
    let mut cfg = LiveConfig::new(Target::External {
        url: args.target.clone(),
        headers: args.headers.clone(),
        method: Some(args.method.clone()),
        body,
    })
    .map_err(Error::Engine)?;
    cfg.request_timeout = Duration::from_nanos(args.timeout.nanos().max(1_000_000));
    cfg.ca_file = args.ca_file.clone();
    cfg.quota = args.quota.zip(args.period).map(|(limit, period)| Quota {
        limit,
        window: period.nanos(),
    });
    Ok(cfg)
}

/// A target that takes no connection, or an `https://` one whose TLS handshake fails, would
/// fail every request alike: say why once, before any process starts (exit 4, as for a run
/// in which every request failed).
fn check_handshake(target: &client::Target) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| {
            Error::Engine(EngineError::Setup {
                what: "starting the async runtime",
                source,
            })
        })?;
    let check = rt.block_on(async {
        tokio::time::timeout(HANDSHAKE_TIMEOUT, target.check_reachable()).await
    });
    match check {
        Ok(result) => Ok(result?),
        Err(_) if target.is_tls() => Err(HandshakeError::TimedOut {
            authority: target.authority().to_string(),
            within: HANDSHAKE_TIMEOUT,
        }
        .into()),
        Err(_) => Err(HandshakeError::ConnectTimedOut {
            authority: target.authority().to_string(),
            within: HANDSHAKE_TIMEOUT,
        }
        .into()),
    }
}

/// How long the handshake checked before the run may take: a TLS server answers within
/// milliseconds; one that takes this long would fail the run's requests anyway.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The flag, as typed, whose value `e` is about.
fn target_flag(args: &ClientArgs, e: &TargetError) -> String {
    match e {
        TargetError::HeaderName { name } | TargetError::HeaderValue { name } => {
            format!("--header {name}")
        }
        TargetError::Method { method } => format!("--method {method}"),
        TargetError::BodyFile { path, .. } | TargetError::BodyTooLarge { path, .. } => {
            format!("--body-file {}", path.display())
        }
        TargetError::CaFile(_) | TargetError::CaFileWithoutTls { .. } => {
            let ca = args.ca_file.as_deref().unwrap_or(std::path::Path::new(""));
            format!("--ca-file {}", ca.display())
        }
        _ => format!("--target {}", shown_url(&args.target)),
    }
}

/// A row per thread about 200 times over the run, between 100 ms and 10 s apart (in whole
/// milliseconds, never longer than the run): a 40 s run drew 4 points 10 s apart, joined by
/// lines that invented the sleeps between them.
fn default_sample_every(duration: HumanDuration) -> HumanDuration {
    let secs = (duration.secs() / 200.0).clamp(0.1, 10.0);
    let every = HumanDuration(crate::time::from_secs((secs * 1000.0).round() / 1000.0));
    every.min(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_sample_interval_follows_the_run_length() {
        let every = |s: u64| default_sample_every(HumanDuration::from_secs(s)).secs();
        assert_eq!(every(40), 0.2);
        assert_eq!(every(120), 0.6);
        assert_eq!(every(10), 0.1);
        assert_eq!(every(3600), 10.0);
        let short = HumanDuration(crate::time::from_secs(0.05));
        assert_eq!(default_sample_every(short), short);
    }
}
