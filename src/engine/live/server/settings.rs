//! What a server is built from: the rule, its faults and latency, the answers' dialect, and
//! what `serve` adds (a limit in Redis, a recording, TLS).

use std::sync::Arc;
use std::time::Duration;

use super::{Dashboard, Observer, SharedGcra};
use crate::limiter::{FaultConfig, Headers, Latency, LimiterConfig};

/// What the server is built from.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    pub limiter: LimiterConfig,
    /// Outages and random errors on top of the rule, as in the sim.
    pub faults: FaultConfig,
    pub latency: Latency,
    /// Which rate-limit fields the answers carry.
    pub headers: Headers,
    /// Seeds the latency draws.
    pub seed: u64,
    /// Keys registered up front, in this order (a live run passes its layout's keys, so the
    /// indices match the sim's).
    pub keys: Vec<String>,
    /// How long a connection may take to send a request's headers before it is closed.
    pub header_read_timeout: Duration,
    /// How long shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
    /// `serve --store`: the GCRA kept in Redis, shared with every instance that uses the same
    /// namespace; `limiter` then only gives the rate for the policy headers.
    pub shared_limit: Option<SharedGcra>,
    /// `serve --record`: told of every answered request (`src/recording/`).
    pub observer: Option<Arc<dyn Observer>>,
    /// `serve`: the live page at `/_dashboard`, told of every answered request too.
    pub dashboard: Option<Arc<Dashboard>>,
    /// `serve --tls-cert --tls-key`: answer HTTPS (HTTP/1.1 over TLS) instead of HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl ServerSettings {
    pub fn new(limiter: LimiterConfig, latency: Latency, seed: u64) -> Self {
        ServerSettings {
            limiter,
            faults: FaultConfig::default(),
            latency,
            headers: Headers::default(),
            seed,
            keys: Vec::new(),
            header_read_timeout: Duration::from_secs(30),
            shutdown_grace: crate::engine::live::STOP_GRACE,
            shared_limit: None,
            observer: None,
            dashboard: None,
            tls: None,
        }
    }
}
