//! One GCRA limit shared by several `serve` instances (`serve --store`): the bucket of every
//! key lives in Redis and each decision is one Lua script, so two instances on different ports
//! (or machines) together admit no more than one limit. It lives with the live server rather
//! than in `limiter/` because it does I/O: the rules there are pure (told the time), so the
//! sim can run them.
//!
//! The rule is `limiter::Gcra`'s, in whole virtual microseconds instead of nanoseconds (Lua's
//! numbers are doubles, exact to 2^53): a bucket of `limit` tokens, one token = `period` µs of
//! level, refilled by `limit` per µs, capped at `limit` tokens; an admitted request takes one
//! token; a refused one takes nothing and is told how long until a whole token is there.
//!
//! Clock: Redis's `TIME`, read inside the script. Every instance then uses the one clock that
//! orders their decisions anyway, whatever their own clocks or start times; with a
//! `time_scale`, elapsed real time is multiplied by it, as every instance is given the same
//! scale (it is part of the key namespace, so instances with different rules never share a
//! bucket). Buckets start at `initial` tokens when the first instance starts: it records that
//! moment (`origin`) for as long as a bucket could still be below full because of it, so a key
//! first seen later gets what it would have had since then, exactly as the in-process GCRA's
//! keys that exist from time 0. A bucket key expires once its bucket would be full again,
//! when it no longer differs from a missing one.

use std::sync::LazyLock;

use redis::Script;

use crate::exchange::Status;
use crate::limiter::{Decision, GcraConfig};
use crate::store::{RedisLink, StoreError, StoreResult, key_segment};
use crate::time::HumanDuration;

/// The largest bucket, in level units, whose arithmetic stays exact in Lua (twice it must fit
/// in 2^53).
const MAX_UNITS: u128 = 1 << 52;

/// KEYS: bucket, origin. ARGV: limit, token (µs per period), initial level, scale.
/// Returns {admitted 0|1, remaining, retry-after µs or -1}.
static ADMIT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit = tonumber(ARGV[1])
local token = tonumber(ARGV[2])
local capacity = limit * token
local scale = tonumber(ARGV[4])
local level, updated
local b = redis.call('HMGET', KEYS[1], 'level', 'updated')
if b[1] then
  level = tonumber(b[1])
  updated = tonumber(b[2])
else
  local origin = redis.call('GET', KEYS[2])
  if origin then
    level = tonumber(ARGV[3])
    updated = tonumber(origin)
  else
    level = capacity
    updated = now
  end
end
if now > updated then
  local elapsed = math.floor((now - updated) * scale)
  if elapsed >= token then
    level = capacity
  else
    level = math.min(capacity, level + elapsed * limit)
  end
  updated = now
end
local admitted, retry = 0, -1
if level >= token then
  level = level - token
  admitted = 1
else
  retry = math.ceil((token - level) / limit)
end
redis.call('HSET', KEYS[1], 'level', string.format('%.0f', level), 'updated', string.format('%.0f', updated))
local full_in_ms = math.ceil((capacity - level) / limit / scale / 1000)
redis.call('PEXPIRE', KEYS[1], full_in_ms + 1000)
return {admitted, math.floor(level / token), retry}
",
    )
});

/// KEYS: origin. ARGV: how long it matters, real ms. Sets it to Redis's `TIME` unless another
/// instance already did.
static START: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('SET', KEYS[1], string.format('%.0f', now), 'NX', 'PX', ARGV[1])
return 1
",
    )
});

/// Why a GCRA cannot be shared through Redis.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SharedGcraError {
    #[error(
        "period {period} is not a whole number of microseconds, the unit of the bucket in Redis"
    )]
    PeriodNotMicroseconds { period: HumanDuration },
    #[error(
        "limit × period is too large for exact arithmetic in Redis's Lua ({limit} × \
         {period_us} µs > 2^52); use a shorter period or a smaller limit"
    )]
    TooLarge { limit: u64, period_us: u64 },
    /// Redis did not take the buckets' start.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// The GCRA of `serve --store`.
#[derive(Clone, Debug)]
pub struct SharedGcra {
    link: RedisLink,
    prefix: String,
    limit: u64,
    token_us: u64,
    initial_units: u64,
    scale: f64,
}

impl SharedGcra {
    /// Check that `cfg` can be kept in Redis exactly.
    pub fn check(cfg: &GcraConfig) -> Result<(), SharedGcraError> {
        let period_ns = cfg.period.nanos();
        if !period_ns.is_multiple_of(1000) || period_ns == 0 {
            return Err(SharedGcraError::PeriodNotMicroseconds { period: cfg.period });
        }
        let units = u128::from(cfg.limit) * u128::from(period_ns / 1000);
        if units > MAX_UNITS {
            return Err(SharedGcraError::TooLarge {
                limit: cfg.limit,
                period_us: period_ns / 1000,
            });
        }
        Ok(())
    }

    /// The limit `cfg` at `scale`, kept under `namespace` on `link`; records the start of the
    /// buckets unless an instance sharing them already did.
    pub fn start(
        link: RedisLink,
        namespace: &str,
        cfg: &GcraConfig,
        scale: f64,
    ) -> Result<SharedGcra, SharedGcraError> {
        Self::check(cfg)?;
        let limit = cfg.limit.max(1);
        let token_us = cfg.period.nanos() / 1000;
        let initial = cfg.initial_tokens().min(limit);
        // Instances share buckets only when they apply the very same rule at the same scale.
        let prefix = format!(
            "throttle-sim:serve:{}:gcra-{limit}-{token_us}us-{initial}-x{scale}:",
            key_segment(namespace)
        );
        let gcra = SharedGcra {
            link,
            prefix,
            limit,
            token_us,
            initial_units: initial * token_us,
            scale,
        };
        // How long a bucket can stay below full because it started at `initial`.
        let fill_us = (limit - initial) as f64 * token_us as f64 / limit as f64;
        let fill_ms = (fill_us / scale / 1000.0).ceil() as u64;
        if fill_ms > 0 {
            let origin = gcra.origin_key();
            gcra.link.call_blocking(move |mut c| async move {
                START
                    .key(&origin)
                    .arg(fill_ms)
                    .invoke_async::<i64>(&mut c)
                    .await
            })?;
        }
        Ok(gcra)
    }

    fn origin_key(&self) -> String {
        format!("{}origin", self.prefix)
    }

    /// The key names this limit's buckets start with (for tests and clean-up).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn url(&self) -> &str {
        self.link.url()
    }

    /// Decide on one request for `key`, atomically with every other instance's.
    pub async fn admit(&self, key: &str) -> StoreResult<Decision> {
        let bucket = format!("{}bucket:{key}", self.prefix);
        let origin = self.origin_key();
        let (limit, token, initial, scale) =
            (self.limit, self.token_us, self.initial_units, self.scale);
        let (admitted, remaining, retry_us): (i64, i64, i64) = self
            .link
            .call(move |mut c| async move {
                ADMIT
                    .key(&bucket)
                    .key(&origin)
                    .arg(limit)
                    .arg(token)
                    .arg(initial)
                    .arg(scale)
                    .invoke_async(&mut c)
                    .await
            })
            .await?;
        let remaining = remaining.max(0) as u64;
        // One token takes `token_us / limit` to earn; the bucket is whole `limit − remaining`
        // tokens later (to a whole token: the script answers in whole tokens).
        let window = self.token_us.saturating_mul(1000);
        let missing = u128::from(limit.saturating_sub(remaining));
        let reset = (missing * u128::from(window)).div_ceil(u128::from(limit));
        Ok(Decision {
            status: if admitted == 1 {
                Status::Ok
            } else {
                Status::Limited
            },
            remaining,
            limit,
            retry_after: (admitted != 1).then(|| (retry_us.max(0) as u64).saturating_mul(1000)),
            reset: u64::try_from(reset).unwrap_or(u64::MAX),
            window,
        })
    }
}
