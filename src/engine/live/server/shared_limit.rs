//! A request against the limit kept in Redis (`serve --store`): the faults decide first, in
//! front, then one script in Redis.

use std::sync::atomic::Ordering;

use http_body_util::Full;
use hyper::Response;
use hyper::body::Bytes;

use super::{KeyId, ServerState, SharedGcra};
use crate::exchange::Status;
use crate::limiter::{Decision, Limiter};
use crate::time::Nanos;

impl ServerState {
    /// One request against the limit kept in Redis: faults first (here), then one script in
    /// Redis decides. A Redis that does not answer in time gets the client a 503, never an
    /// admission nobody counted.
    pub(super) async fn handle_shared(
        &self,
        shared: &SharedGcra,
        key: Option<&KeyId>,
        client: usize,
        sent_at: Option<Nanos>,
        seen: impl FnOnce(&Decision, Nanos),
    ) -> Response<Full<Bytes>> {
        let (front, index, name, decided, latency) = {
            let mut k = self.lock();
            let (d, index, now, latency) = self.admit(&mut k, key, client);
            (d, index, k.stored_name(index), now, latency)
        };
        let decision = if front.status == Status::Ok {
            match shared.admit(&name).await {
                Ok(d) => d,
                Err(e) => {
                    let n = self.store_failures.fetch_add(1, Ordering::Relaxed);
                    if n.is_power_of_two() || n == 0 {
                        eprintln!("{e} (answered 503; {} failed calls so far)", n + 1);
                    }
                    Decision {
                        status: Status::Unavailable,
                        remaining: 0,
                        limit: 0,
                        retry_after: None,
                        reset: 0,
                        window: 0,
                    }
                }
            }
        } else {
            front
        };
        self.lock().stats[index].add(decision.status);
        seen(&decision, latency);
        if latency > 0 {
            self.answer_at(decided, sent_at, latency).await;
        }
        self.respond(&decision)
    }
}

/// The rule's place when the rule itself is in Redis: whatever the faults let through goes on
/// to Redis.
pub(super) struct InFront {
    pub(super) rate: f64,
}

impl Limiter for InFront {
    fn admit(&mut self, _now: Nanos, _key: usize) -> Decision {
        Decision {
            status: Status::Ok,
            remaining: 0,
            limit: 1,
            retry_after: None,
            reset: 0,
            window: 0,
        }
    }

    fn capacity(&self, _duration: Nanos) -> f64 {
        0.0
    }

    fn rate_per_sec(&self) -> f64 {
        self.rate
    }
}
