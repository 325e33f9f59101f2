//! `throttle-sim serve`: the mock rate-limited API on its own, for any client (curl included).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::toml_integer;
use crate::cli::ServeArgs;
use crate::engine::live::server::{Dashboard, ServerSettings, ServerState, serve_per_thread};
use crate::engine::live::tls::{self, TlsError};
use crate::engine::live::{ScaledClock, SharedGcra, StatusText, raise_fd_limit};
use crate::error::Error;
use crate::exit;
use crate::limiter::{FaultConfig, GcraConfig, Headers, Latency, LimiterConfig, ParamStep};
use crate::parallel::cores;
use crate::progress::StatusLine;
use crate::recording::{Plan, Recording};
use crate::report;
use crate::run::{claim_dir_for, print};
use crate::scenario::{
    MIN_SAMPLE_EVERY, Override, RunConfig, ServerConfig, check_time_scale, read_scenario,
};
use crate::store::{RedisLink, check_url};
use crate::time::{HumanDuration, Nanos};

/// What is wrong with how `serve` was asked to run; the flag is added where it is found.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("cannot listen there: {0}")]
    Listen(std::io::Error),
    #[error("must be at least {MIN_SAMPLE_EVERY}")]
    SampleEveryTooShort,
    /// `--duration` below what `run` accepts: the server would stop before it began.
    #[error("must be at least {MIN_SAMPLE_EVERY}, as a run's (got {0})")]
    DurationTooShort(HumanDuration),
    #[error(
        "only the gcra server kind keeps its state in Redis, not {0}; serve it without \
         --store (each instance then has its own limit)"
    )]
    NotGcra(&'static str),
    #[error("--set needs --scenario FILE")]
    SetWithoutScenario,
    /// A rule's parameter out of its range, as the rule words it.
    #[error("{0}")]
    Parameter(String),
}

/// `throttle-sim serve`: answer until `interrupt` turns true (Ctrl-C, SIGTERM), then stop
/// accepting and let requests in flight finish.
pub fn serve(args: &ServeArgs, interrupt: &'static AtomicBool) -> Result<i32, Error> {
    if let Some(d) = args.duration
        && d < MIN_SAMPLE_EVERY
    {
        return Err(Error::flag(format!("--duration {d}"))(
            ServeError::DurationTooShort(d),
        ));
    }
    let (mut settings, scale) = server_settings(args)?;
    settings.header_read_timeout = Duration::from_nanos(args.header_timeout.nanos().max(1));
    if let Some(url) = &args.store {
        settings.shared_limit = Some(shared_limit(url, &args.store_namespace, &settings, scale)?);
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        settings.tls = Some(tls_config(cert, key)?);
    }
    raise_fd_limit();
    let what = describe(&settings, scale);
    let clock = ScaledClock::starting_now(scale);
    let recording = start_recording(args, &mut settings, clock)?;
    // From here until the folder is written, a second interrupt does not cut it short.
    let _keep = recording.as_ref().map(|_| exit::keep_until_written());
    let capacity_rule = settings
        .shared_limit
        .is_some()
        .then(|| settings.limiter.build());
    let scheme = if settings.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let mut dashboard = Dashboard::new(clock, recording.is_some());
    dashboard.rule = what.clone();
    dashboard.limit_per_s = sustained_rate(&settings.limiter);
    dashboard.bucket = stated_limit(&settings.limiter);
    let dashboard = Arc::new(dashboard);
    settings.dashboard = Some(dashboard.clone());
    let state = ServerState::new(settings, clock);
    let threads = args.threads.map_or_else(cores, usize::from);
    let running = match serve_per_thread(args.addr, state.clone(), threads, interrupt) {
        Ok(r) => r,
        Err(e) => {
            // Nothing was served: leave no half-made results folder behind.
            if let Some(rec) = recording {
                rec.abandon();
            }
            return Err(Error::flag(format!("--addr {}", args.addr))(
                ServeError::Listen(e),
            ));
        }
    };
    // The first line says where: scripts and tests read the port from it.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "listening on {scheme}://{}/ ({what}); Ctrl-C stops",
        running.addr
    );
    let _ = out.flush();
    if !args.quiet {
        eprintln!(
            "live page: {scheme}://{}/_dashboard (its data: /_dashboard.json)",
            running.addr
        );
    }
    if let Some(d) = args.duration {
        stop_after(clock, d.nanos(), interrupt);
    }
    let line = {
        let watch = dashboard.watch.clone();
        let mut text = StatusText::new(args.duration.map(|d| d.nanos()), true);
        StatusLine::start(args.quiet, move || text.line(watch.snapshot()))
    };
    running.join();
    drop(line);
    print_key_stats(&state);
    if let Some(rec) = recording {
        // With the rule in Redis, the capacity is the rule's own (the state holds none).
        let capacity = |span: Nanos| match &capacity_rule {
            Some(rule) => rule.capacity(span),
            None => state.capacity(span),
        };
        // A `--duration` stop ends the recording at that time, not at the moment the last
        // serving thread noticed.
        let now = clock.now();
        let end = args.duration.map_or(now, |d| now.min(d.nanos()));
        let dir = rec.dir().to_path_buf();
        // Serving has stopped: an answer due after `now` was never sent.
        if let Err(e) = finish_recording(rec, (end, now), &capacity) {
            // A full disk, most often: what was written is no run folder.
            eprintln!(
                "serve --record: the recording in {} is incomplete; compare --runs and plot \
                 cannot use it",
                dir.display()
            );
            return Err(e);
        }
        if exit::interrupted_twice() {
            // The second signal asked for an end at once: the folder is whole, and the exit
            // code says the end was asked for twice.
            return Ok(exit::INTERRUPTED);
        }
    }
    Ok(exit::OK)
}

/// `--tls-cert` and `--tls-key`, or what is wrong with them, named by the flag at fault.
fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, Error> {
    tls::server_config(cert, key).map_err(|e| {
        let flag = match &e {
            TlsError::PrivateKey { .. } | TlsError::KeyFile { .. } => {
                format!("--tls-key {}", key.display())
            }
            TlsError::KeyMismatch { .. } => {
                format!(
                    "--tls-cert {} with --tls-key {}",
                    cert.display(),
                    key.display()
                )
            }
            _ => format!("--tls-cert {}", cert.display()),
        };
        Error::flag(flag)(e)
    })
}

/// The most keys the Ctrl-C summary names one per line; the rest are counted on one line
/// (a client inventing keys made 100,001 lines).
const SHOWN_KEYS: usize = 20;

/// Once stopped: what each key that was asked got, the busiest first, at most
/// [`SHOWN_KEYS`] lines and one for the rest; `/_stats` has them all.
fn print_key_stats(state: &ServerState) {
    eprint!("{}", key_stats_text(state.stats()));
}

fn key_stats_text(stats: Vec<(String, crate::engine::live::server::KeyStats)>) -> String {
    let mut asked: Vec<_> = stats.into_iter().filter(|(_, s)| s.requests > 0).collect();
    // The busiest first; a stable sort keeps the order keys were first seen among equals.
    asked.sort_by_key(|(_, s)| std::cmp::Reverse(s.requests));
    let mut out = String::new();
    for (key, s) in asked.iter().take(SHOWN_KEYS) {
        out.push_str(&format!(
            "key {key}: {} requests, {} ok, {} limited\n",
            s.requests, s.ok, s.limited
        ));
    }
    if asked.len() > SHOWN_KEYS {
        let rest = &asked[SHOWN_KEYS..];
        let sum = |f: fn(&crate::engine::live::server::KeyStats) -> u64| {
            rest.iter().map(|(_, s)| f(s)).sum::<u64>()
        };
        out.push_str(&format!(
            "and {} more keys: {} requests, {} ok, {} limited\n",
            rest.len(),
            sum(|s| s.requests),
            sum(|s| s.ok),
            sum(|s| s.limited)
        ));
    }
    out
}

/// `--record DIR`: claim the folder (bad input names `--record`) and hand the server the
/// journal. The run settings come from `--scenario` when given.
fn start_recording(
    args: &ServeArgs,
    settings: &mut ServerSettings,
    clock: ScaledClock,
) -> Result<Option<Recording>, Error> {
    let Some(dir) = &args.record else {
        return Ok(None);
    };
    let (name, run) = match &args.scenario {
        Some(path) => {
            let s = read_scenario(path, &args.sets.set, 0)?;
            (format!("{}-recorded", s.name), s.run)
        }
        None => ("serve-recorded".to_string(), RunConfig::default()),
    };
    let sample_every = args.sample_every.unwrap_or(run.sample_every);
    if sample_every.nanos() < MIN_SAMPLE_EVERY.nanos() {
        let flag = format!("--sample-every {sample_every}");
        return Err(Error::flag(flag)(ServeError::SampleEveryTooShort));
    }
    let dir = claim_dir_for("--record", dir)?;
    let plan = Plan {
        name,
        server: ServerConfig {
            limiter: settings.limiter.clone(),
            latency: settings.latency.clone(),
            faults: settings.faults.clone(),
            headers: settings.headers,
        },
        time_scale: clock.scale(),
        seed: settings.seed,
        sample_every: sample_every.nanos(),
        fairness_window: run.fairness_window.nanos(),
        log_requests: args.log_requests,
    };
    let rec = Recording::start(&dir, plan, clock)?;
    settings.observer = Some(rec.journal());
    Ok(Some(rec))
}

/// Write the recorded run folder and say what it holds.
fn finish_recording(
    rec: Recording,
    (end, stopped_at): (Nanos, Nanos),
    capacity: &dyn Fn(Nanos) -> f64,
) -> Result<(), Error> {
    let dir = rec.dir().to_path_buf();
    let done = rec.finish(end, stopped_at, capacity)?;
    if let Some(note) = &done.note {
        eprintln!("serve --record: {note}");
    }
    report::write_run_report(&dir)?;
    let s = &done.summary;
    if s.metrics.requests == 0 {
        eprintln!("serve --record: no requests were recorded");
    }
    print(&report::terminal_summary(s));
    if let Some(g) = &s.gaps {
        print(&format!("{}\n", crate::recording::gaps_line(g)));
    }
    print(&format!(
        "recorded {} requests of {} client{}: {}\n",
        s.metrics.requests,
        done.clients,
        if done.clients == 1 { "" } else { "s" },
        dir.display()
    ));
    Ok(())
}

/// `--duration`: stop serving once the server's clock reaches `end`, as Ctrl-C would.
fn stop_after(clock: ScaledClock, end: Nanos, stop: &'static AtomicBool) {
    let at = clock.instant_at(end);
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let left = at.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    });
}

/// `--store`: the GCRA in Redis, or why it cannot be.
fn shared_limit(
    url: &str,
    namespace: &str,
    settings: &ServerSettings,
    scale: f64,
) -> Result<SharedGcra, Error> {
    check_url(url).map_err(Error::flag("--store"))?;
    let LimiterConfig::Gcra(cfg) = &settings.limiter else {
        let kind = settings.limiter.name();
        return Err(Error::flag("--store")(ServeError::NotGcra(kind)));
    };
    SharedGcra::check(cfg).map_err(Error::flag("--store"))?;
    // What the user named cannot be reached: bad input (2), as for `run`'s `store.url`.
    let link = RedisLink::connect(url).map_err(Error::flag("--store"))?;
    SharedGcra::start(link, namespace, cfg, scale).map_err(Error::failed)
}

/// The rule served, for the first line: its kind (and for a GCRA its numbers), the time
/// scale, the headers when not all are sent, and where its state is shared.
fn describe(settings: &ServerSettings, scale: f64) -> String {
    let mut what = describe_rule(&settings.limiter, scale);
    if settings.headers != Headers::Full {
        what.push_str(&format!(", headers {}", settings.headers.name()));
    }
    if let Some(shared) = &settings.shared_limit {
        what.push_str(&format!(
            ", shared through {} as {}*",
            crate::redact::shown_url(shared.url()),
            shared.prefix()
        ));
    }
    what
}

/// The rule's sustained rate per (virtual) second, for one key; None for a rule without one
/// (`concurrency`, `occ`).
fn sustained_rate(limiter: &LimiterConfig) -> Option<f64> {
    let rate = limiter.build().rate_per_sec();
    (rate.is_finite() && rate > 0.0).then_some(rate)
}

/// The limit the rule states (`RateLimit-Limit`): a bucket's size, a window's count. Asked of
/// a fresh copy of the rule, which serves nobody; None when it states none.
fn stated_limit(limiter: &LimiterConfig) -> Option<u64> {
    let limit = limiter.build().admit(0, 0).limit;
    (limit > 0).then_some(limit)
}

fn describe_rule(limiter: &LimiterConfig, scale: f64) -> String {
    let kind = match limiter {
        LimiterConfig::Gcra(g) => format!(
            "gcra: {} per {}, {} to start",
            g.limit,
            g.period,
            g.initial_tokens()
        ),
        LimiterConfig::TokenBucket(t) => format!(
            "token-bucket: {} per {} into a bucket of {}",
            t.rate, t.period, t.burst
        ),
        LimiterConfig::FixedWindow(w) => {
            format!("fixed-window: {} per {} window", w.limit, w.window)
        }
        LimiterConfig::SlidingWindow(w) => {
            format!("sliding-window: {} in any {}", w.limit, w.window)
        }
        #[allow(unreachable_patterns)]
        other => other.name().to_string(),
    };
    if scale == 1.0 {
        kind
    } else {
        format!("{kind}, time scale {scale}")
    }
}

/// The server's rule from `--scenario` (with the flags as overrides) or from the flags alone.
fn server_settings(args: &ServeArgs) -> Result<(ServerSettings, f64), Error> {
    let (limiter, latency, scale, seed, faults, headers) = match &args.scenario {
        Some(path) => {
            let mut sets = args.sets.set.clone();
            let mut push = |flag: &str, shown: String, path: &str, v: toml::Value| {
                sets.push(Override::from_flag(flag, &shown, path, v));
            };
            if let Some(l) = args.limit {
                let v = toml_integer(l);
                push("--limit", l.to_string(), "server.limit", v);
            }
            if let Some(p) = args.period {
                let v = toml::Value::String(p.to_string());
                push("--period", p.to_string(), "server.period", v);
            }
            if let Some(i) = args.initial {
                let v = toml_integer(i);
                push("--initial", i.to_string(), "server.initial", v);
            }
            if let Some(l) = args.latency {
                let v = toml::Value::String(l.to_string());
                push("--latency", l.to_string(), "server.latency", v);
            }
            if let Some(s) = args.time_scale {
                push(
                    "--time-scale",
                    s.to_string(),
                    "run.time_scale",
                    toml::Value::Float(s),
                );
            }
            if let Some(h) = args.headers {
                let v = toml::Value::String(h.name().into());
                push("--headers", h.name().to_string(), "server.headers", v);
            }
            let s = read_scenario(path, &sets, 0)?;
            (
                s.server.limiter,
                s.server.latency,
                s.run.time_scale,
                s.run.seed(),
                s.server.faults,
                s.server.headers,
            )
        }
        None => {
            if !args.sets.set.is_empty() {
                return Err(Error::usage(ServeError::SetWithoutScenario));
            }
            let defaults = GcraConfig::default();
            let mut table = super::rule_table(
                args.rule,
                args.limit.unwrap_or(defaults.limit),
                args.period.unwrap_or(defaults.period),
                args.burst,
                args.initial,
            );
            let kind = table
                .remove("kind")
                .and_then(|k| k.as_str().map(String::from))
                .unwrap_or_default();
            let limiter = LimiterConfig::from_params(&kind, toml::Value::Table(table))
                .expect("every --rule names a server kind")
                .map_err(|e| Error::usage(ServeError::Parameter(e.to_string())))?;
            if let Some(p) = limiter.problems().into_iter().next() {
                // The flag the rule's field came from.
                let flag = match p.at.first() {
                    Some(ParamStep::Field(f)) => match *f {
                        "rate" => "limit",
                        "window" => "period",
                        f => f,
                    },
                    _ => "limit",
                };
                return Err(Error::flag(format!("--{flag}"))(ServeError::Parameter(
                    p.message,
                )));
            }
            let scale = args.time_scale.unwrap_or(1.0);
            check_time_scale(scale).map_err(Error::flag("--time-scale"))?;
            let latency = Latency::Fixed(args.latency.unwrap_or(HumanDuration(0)));
            (
                limiter,
                latency,
                scale,
                0,
                FaultConfig::default(),
                args.headers.unwrap_or_default(),
            )
        }
    };
    let mut settings = ServerSettings::new(limiter, latency, seed);
    settings.faults = faults;
    settings.headers = headers;
    Ok((settings, scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::live::server::KeyStats;

    #[test]
    fn the_key_summary_names_the_busiest_keys_and_counts_the_rest() {
        // The summary stays a few lines however many keys came: 200,000 keys once printed
        // 100,001 lines.
        let stats: Vec<(String, KeyStats)> = (0..200_000u64)
            .map(|i| {
                let s = KeyStats {
                    requests: 1 + u64::from(i == 7) * 9,
                    ok: 1,
                    limited: u64::from(i == 7) * 9,
                    errors: 0,
                };
                (format!("fnv:{i:08x}"), s)
            })
            .collect();
        let text = key_stats_text(stats);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), SHOWN_KEYS + 1, "{text}");
        assert_eq!(lines[0], "key fnv:00000007: 10 requests, 1 ok, 9 limited");
        assert_eq!(
            lines[SHOWN_KEYS],
            format!(
                "and {} more keys: {} requests, {} ok, 0 limited",
                200_000 - SHOWN_KEYS,
                200_000 - SHOWN_KEYS,
                200_000 - SHOWN_KEYS
            )
        );
        assert_eq!(key_stats_text(Vec::new()), "");
    }
}
