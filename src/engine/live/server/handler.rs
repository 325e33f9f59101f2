//! One request, from its headers to its answer: the key and client it comes from, the
//! decision, the latency waited out on the precise timer, and the rate-limit headers of the
//! server's dialect.

use std::net::IpAddr;
use std::sync::atomic::Ordering;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde::Serialize;

use super::dashboard;
use super::keys::{KeyId, key_id_of};
use super::{CLIENT_ID, Observer, SENT_AT, Seen, ServerState};
use crate::engine::live::headers::{PolicyHeaders, Waits, write_decision};
use crate::engine::live::timer;
use crate::exchange::Status;
use crate::limiter::{Decision, Headers};
use crate::time::Nanos;

thread_local! {
    /// The policy headers of the last limit this thread answered with (limits rarely change
    /// between requests); per thread, so their reference counts are never shared.
    static POLICY: std::cell::RefCell<Option<PolicyHeaders>> = const { std::cell::RefCell::new(None) };
}

impl ServerState {
    pub(super) async fn handle(
        &self,
        req: Request<Incoming>,
        conn: u64,
        peer: IpAddr,
    ) -> Response<Full<Bytes>> {
        if req.uri().path() == "/_stats" {
            return self.stats_response();
        }
        if let Some(d) = &self.settings.dashboard {
            match req.uri().path() {
                "/_dashboard" | "/_dashboard/" => {
                    return page(dashboard::PAGE.as_bytes(), "text/html; charset=utf-8");
                }
                "/_dashboard.json" => {
                    let body = serde_json::to_vec(&d.view()).expect("the view serializes");
                    return page(&body, "application/json");
                }
                _ => {}
            }
        }
        let key = key_id_of(&req);
        let own = req
            .headers()
            .get(CLIENT_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let client = own.unwrap_or(conn as usize);
        let sent_at = own.and_then(|_| {
            req.headers()
                .get(SENT_AT)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<Nanos>().ok())
        });
        let seen = |decision: &Decision, latency: Nanos| {
            if let Some(o) = &self.settings.observer {
                self.tell(o.as_ref(), &req, key, peer, decision, latency);
            }
            if let Some(d) = &self.settings.dashboard {
                self.tell(d.as_ref(), &req, key, peer, decision, latency);
            }
        };
        if let Some(shared) = &self.settings.shared_limit {
            return self
                .handle_shared(shared, key.as_ref(), client, sent_at, seen)
                .await;
        }
        let (decision, index, decided, latency) = self.decide(key.as_ref(), client, seen);
        if latency > 0 {
            // Only an admitted request holds a place in flight, given back when the wait is
            // over, or when the client hangs up first and hyper drops this future.
            let _place = (decision.status == Status::Ok).then(|| InFlight { state: self, index });
            // Every answer waits out its latency, as in the sim, on the precise timer
            // (tokio's rounds up to the next millisecond, which the scale multiplies).
            self.answer_at(decided, sent_at, latency).await;
        }
        self.respond(&decision)
    }

    /// Tell `observer` of an answered request, with what its answer shows.
    fn tell<B>(
        &self,
        observer: &dyn Observer,
        req: &Request<B>,
        key: Option<KeyId>,
        peer: IpAddr,
        decision: &Decision,
        latency: Nanos,
    ) {
        let shown = self.settings.headers.shown(*decision);
        observer.observe(Seen {
            client_id: req.headers().get(CLIENT_ID).and_then(|v| v.to_str().ok()),
            key,
            peer,
            status: decision.status,
            remaining: shown.has_headers().then_some(shown.remaining),
            latency,
            answer: self
                .settings
                .headers
                .response(*decision, self.clock.now(), latency),
        });
    }

    /// Hold an answer decided at `decided` for `latency`, on the precise timer ([`timer`]).
    /// A request stamped with the time it was sent ([`SENT_AT`]) had its trip here already:
    /// the answer then leaves `latency` after the send less the trip back, taken as long as
    /// the trip here, so the client sees the scenario's latency, not it plus the loopback's.
    pub(super) async fn answer_at(&self, decided: Nanos, sent_at: Option<Nanos>, latency: Nanos) {
        let at = match sent_at {
            // A stamp from the future (a client's clock a little ahead) counts no trip.
            Some(sent) if sent <= decided => {
                let trip = decided - sent;
                sent.saturating_add(latency).saturating_sub(trip)
            }
            _ => decided.saturating_add(latency),
        };
        timer::sleep_until(self.clock.instant_at(at)).await;
    }

    /// The HTTP answer for a decision, with the rate-limit headers the server sends.
    pub(super) fn respond(&self, decision: &Decision) -> Response<Full<Bytes>> {
        let status = match decision.status {
            Status::Ok => StatusCode::OK,
            Status::Limited => StatusCode::TOO_MANY_REQUESTS,
            Status::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Status::Error => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = match decision.status {
            Status::Ok => "ok\n",
            Status::Limited => "rate limited\n",
            _ => "unavailable\n",
        };
        let retry = decision.retry_after.map(|r| self.clock.to_real(r));
        let mut resp = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *resp.status_mut() = status;
        let mut h = HeaderMap::with_capacity(8);
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        // Injected faults come from no rule: they carry no rate-limit headers.
        if !decision.has_headers() || self.settings.headers == Headers::None {
            *resp.headers_mut() = h;
            return resp;
        }
        POLICY.with_borrow_mut(|cached| {
            let window = self.clock.to_real(decision.window);
            if cached
                .as_ref()
                .is_none_or(|p| p.limit != decision.limit || p.window != window)
            {
                *cached = Some(PolicyHeaders::new(decision.limit, window));
            }
            let policy = cached.as_ref().expect("just set");
            // Only the epoch-second resets read the wall clock; the others skip the call.
            let now = if matches!(
                self.settings.headers,
                Headers::Github | Headers::FlaskLimiter
            ) {
                std::time::SystemTime::now()
            } else {
                std::time::SystemTime::UNIX_EPOCH
            };
            let until_whole = self.clock.to_real(decision.reset);
            let waits = Waits::of(decision, retry, until_whole, now);
            write_decision(&mut h, self.settings.headers, decision, policy, waits);
        });
        *resp.headers_mut() = h;
        resp
    }

    fn stats_response(&self) -> Response<Full<Bytes>> {
        #[derive(Serialize)]
        struct Stats {
            uptime_s: f64,
            virtual_s: f64,
            time_scale: f64,
            connections: u64,
            keys: serde_json::Map<String, serde_json::Value>,
        }
        let keys = self
            .stats()
            .into_iter()
            .map(|(k, s)| (k, serde_json::to_value(s).expect("counters serialize")))
            .collect();
        let now = self.clock.now();
        let stats = Stats {
            uptime_s: now as f64 / 1e9 / self.clock.scale(),
            virtual_s: now as f64 / 1e9,
            time_scale: self.clock.scale(),
            connections: self.connections.load(Ordering::Relaxed),
            keys,
        };
        let mut body = serde_json::to_vec_pretty(&stats).expect("stats serialize");
        body.push(b'\n');
        let mut resp = Response::new(Full::new(Bytes::from(body)));
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        resp
    }
}

/// An admitted request's place in flight (rules that count requests in flight, such as
/// `concurrency`), given back to the rule when dropped: after the answer's wait, or as soon as
/// the connection goes away, where a place was once held for ever.
struct InFlight<'a> {
    state: &'a ServerState,
    index: usize,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut k = self.state.lock();
        let now = self.state.clock.now();
        k.limiter.release(now, self.index);
    }
}

/// A page of `serve`'s own (the dashboard and its data), never cached.
fn page(body: &[u8], content_type: &'static str) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::copy_from_slice(body)));
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    resp
}
