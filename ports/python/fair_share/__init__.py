"""fair-share in Python (standard library only): processes and threads that share one API
token share its quota equally, without counting each other.

It follows the version of crates/fair-share named by FOLLOWS below (what changed from version to
version: crates/fair-share/CHANGELOG.md). It is held to the crate by the event scripts of
ports/scripts/ and the readings of ports/answers.json: the same answers at the same times give the
same waits, to the nanosecond, and every answer is read as the crate reads it.

What it reads in an answer (read_answer, as the crate's Answer::read with fields.rs and when.rs):
the IETF fields of every draft (RateLimit-Limit/-Remaining/-Reset, draft-7's RateLimit dictionary,
draft-8's named RateLimit items, RateLimit-Policy in either form, policies after the count in a
limit field as Envoy sends them); the separate fields under ratelimit-, x-ratelimit-,
x-rate-limit- and anthropic-ratelimit-requests-, in that order, each also with the -requests
suffix; Discord's reset-after (seconds), else a reset told apart by its size (under 1e9 seconds to
it, from 1e9 an epoch second, from 1e12 an epoch millisecond), a Go-style duration (6m0s) or a
date; Kong's per-window fields (second to year); without a limit field, used + remaining as the
limit, else a refill's burst-capacity; Zendesk's bare x-rate-limit as the limit; a bucket's refill
(replenish-rate a second, or fillrate every interval-seconds, default 1) as its policy's window,
quota × cost × every / tokens, the quota and the count divided by requested-tokens; else
tollbooth's duration (seconds or a Go duration) as the window; Shopify's call limit (used/limit)
as one more limit; retry-after-ms (or x-ms-retry-after-ms), else Retry-After in seconds or as a date, else
x-ratelimit-retry-after, x-rate-limit-retry-after-seconds or x-retry-in, each read as a reset. A date in the HTTP form, RFC 850's or asctime's, or RFC 3339's
(with a fraction or an offset), each clock field two digits. Of several limits, the binding one:
the nearest to empty (the smallest share of its quota when every counted limit has one, else the
smallest count; the later reset on a tie), each count joined to the policy of its name, else of
its quota, else the only one when the count states no quota; limits of one quota and one count
are one (Kong's RateLimit-* beside its per-window fields, draft-8's beside the legacy ones), the
first's values kept (a longer window's, where the two state different ones) and the other's
filling in what it left out. Epoch resets and dates are read against the wall clock, or the
answer's Date when the two are more than 2 s apart. A Retry-After on a 2xx is the reset, not a
wait (one of 0 states nothing); a 429 whose binding limit is the separate fields' spent count waits for its reset when it
names no wait (GitHub); a 403 with x-ratelimit-remaining: 0 or a Retry-After is a refusal; every
wait, reset and window is capped at a day. ports/answers.json holds this reading to the crate's
(ports/README.md).

The same law as the Rust library crates/fair-share (src/law/, whose doc comment in lib.rs has
every formula; answer.rs, the reading of an answer in every dialect); docs/fair-share.md is the
porter's page. Time is integer nanoseconds inside, as in Rust, so
the same answers give the same waits (ports/README.md: how that is checked). One FairShare per
process, shared by its threads:

    law = FairShare(4)                                   # or FairShare(4, quota=5, period=1)
    w = law.wait(thread, time.monotonic())               # seconds; 0: send now (booked)
    law.observe(thread, time.monotonic(), status, response.getheaders(), latency)

This module is the core of the package fair-share (ports/python/pyproject.toml) and stays the
standard library only; fair_share.requests and fair_share.httpx, installed as extras, call
wait and observe around every request of a requests Session or an httpx client
(ports/python/README.md).
"""

import bisect, math, random as _random, re, threading, time
from fractions import Fraction
from types import SimpleNamespace

FOLLOWS = "0.30.0"  # the version of crates/fair-share (its Cargo.toml) this port follows
NS, U64, U32, DAY = 10**9, 2**64 - 1, 2**32 - 1, 86_400 * 10**9  # DAY: MAX_SERVER_WAIT
OK, LIMITED, UNAVAILABLE, ERROR = "ok", "limited", "unavailable", "error"
# The stated resets pin a bucket's refill once their lowest ceiling is within this factor of their
# highest lower bound: a bound alone may be half the refill.
PINNED_RATIO = 1.5
# Blind to the count: the share of refusals the probe aims for, how hard an answer moves it, a
# refused thread's cut, how far below the quota a rate counts in the climb (R/X), and the probe's
# bounds in R² per second.
BLIND_REFUSALS, BLIND_ADAPT, BLIND_CUT, BLIND_BELOW_MAX = 0.005, 1.0, 0.3, 10.0
BLIND_PROBE_MIN, BLIND_PROBE_MAX = 1e-6, 1.0
# A blocked key (a second refusal in a row, blind): the process holds this many spacings 1/x, and this
# many when a request sent after that hold began is refused too (at most a period).
BLOCKED_HOLD, BLOCKED_HOLD_AGAIN = 1.0, 2.0
DEFAULTS = dict(quota=None, period=None, first_spread=0.0, initial_sleep=None, reserve=0.005, span=0.03,
                crowd=1000.0, gain=0.4, window_periods=1.0, min_samples=3, min_flow=30.0, drain_windows=4.0,
                drain_fill=1.0 / 12.0, full_level=0.9, full_drain=1.0, pull_periods=1.5, pull_max=0.5,
                decrease=0.5, retry_jitter=0.5, jitter=0.1, increase=0.00005, error_backoff=1.0,
                error_backoff_max=60.0, max_rate=4.0, reset_resolution=1.0)
DURATIONS = ("period", "first_spread", "initial_sleep", "error_backoff", "error_backoff_max", "reset_resolution")
POSITIVE = ("quota", "period", "crowd", "gain", "drain_windows", "full_drain", "pull_periods", "error_backoff",
            "max_rate", "reset_resolution")
NON_NEGATIVE = ("reserve", "span", "window_periods", "drain_fill", "pull_max", "retry_jitter", "increase",
                "min_flow", "full_level", "first_spread", "initial_sleep")
RANGES = [("reserve", lambda c: c["reserve"] < 1.0, "below 1"),
          ("pull_max", lambda c: c["pull_max"] <= 1.0, "at most 1"), ("gain", lambda c: c["gain"] <= 1.0, "at most 1"),
          ("decrease", lambda c: 0 < c["decrease"] < 1, "above 0 and below 1"),
          ("jitter", lambda c: 0 <= c["jitter"] < 1, "from 0 to below 1"),
          ("min_samples", lambda c: c["min_samples"] >= 2, "at least 2"),
          ("error_backoff_max", lambda c: c["error_backoff_max"] >= c["error_backoff"], "at least error_backoff")]
LN_100, LN_2 = math.log(100.0), math.log(2.0)

def from_secs(s):
    """time.rs's from_secs: seconds to nanoseconds, 0 for NaN or negative, saturating, half up."""
    if s != s or s <= 0.0:
        return 0
    n = s * 1e9
    if n >= 18446744073709551616.0:
        return U64
    whole = int(n)
    return whole + 1 if n - float(whole) >= 0.5 else whole

def secs(n): return n / 1e9
def _ln(v): return math.log(v) if v > 0.0 else -math.inf if v == 0.0 else math.nan  # f64::ln
def _clamp(v, lo, hi): return lo if v < lo else hi if v > hi else v  # f64::clamp
def _step(v): return _clamp(v, -LN_100, LN_2)  # clamp_step
def _rem_euclid(a, b): return math.fmod(a, b) + abs(b) if math.fmod(a, b) < 0.0 else math.fmod(a, b)
def _round(v): return float(math.trunc(v)) + (math.copysign(1.0, v) if abs(v - math.trunc(v)) >= 0.5 else 0.0)  # Rust's f64::round: half away from 0

# --- Reading an answer: Answer::read of crates/fair-share/src/answer.rs, with fields.rs (the list
# grammar) and when.rs (the times). Durations are whole nanoseconds, DMAX Rust's Duration::MAX.
WS = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")  # eq_ignore_ascii_case
DMAX = U64 * NS + NS - 1
CLOCK_SKEW = 2 * NS  # how far the answer's Date may be from the wall clock before it is the clock
SEPARATE = ("ratelimit-", "x-ratelimit-", "x-rate-limit-", "anthropic-ratelimit-requests-")  # in the order taken
# The wait under other names, where Retry-After is absent or unreadable (Symfony's, bucket4j's, Traefik's), read
# as a reset is: seconds, an epoch second or millisecond, a Go duration or a date.
RETRY_AFTER_ALIASES = ("x-ratelimit-retry-after", "x-rate-limit-retry-after-seconds", "x-retry-in")
WINDOW_SUFFIXES = (("second", 1), ("minute", 60), ("hour", 3600), ("day", 86_400), ("month", 30 * 86_400),
                   ("year", 365 * 86_400))  # Kong's X-RateLimit-Remaining-Minute and its kin
_UINT, _INT = re.compile(r"\+?[0-9]+"), re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(inf|infinity|nan|([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?)", re.I | re.A)
_DURATION = re.compile(r"([0-9.]+)([^0-9.]+)")  # a number and its unit, `6m` of `6m0s`
_DECIMAL = re.compile(r"[0-9]+\.?[0-9]*|\.[0-9]+")
_TWO_DIGITS, _DIGITS, _DATE_TIME = re.compile("[0-9]{2}"), re.compile("[0-9]+"), re.compile("[Tt ]")
UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9}
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

def _then(v, f): return None if v is None else f(v)  # Option::and_then

def _int(v, regex=_INT, lo=-(2**63), hi=2**63 - 1):  # str::parse::<i64> (or u64 with _UINT)
    if not regex.fullmatch(v):
        return None
    digits = v.lstrip("+-").lstrip("0") or "0"  # (int() refuses more than 4,300 digits)
    n = int(digits) * (-1 if v.startswith("-") else 1) if len(digits) <= 20 else None
    return n if n is not None and lo <= n <= hi else None

def number(v):
    """fields.rs: a non-negative number as Rust's f64 parses it (`inf` too); NaN says nothing."""
    v = v.strip(WS)
    f = float(v) if _FLOAT.fullmatch(v) else math.nan
    return f if f >= 0.0 else None

def _as_u64(f): return U64 if f >= 18446744073709551616.0 else int(f)  # `f as u64`, f >= 0

def count(v):
    """fields.rs: a whole number, or a non-negative decimal cut to its whole part."""
    v = v.strip(WS)
    n = _int(v, _UINT, 0, U64)
    return n if n is not None else _then(number(v), _as_u64)

def _split(text, sep):  # split_outside_quotes: `text` cut at every `sep` not inside double quotes
    out, start, quoted, escaped = [], 0, False, False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\" and quoted:
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == sep and not quoted:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out

def _unquote(v): return v[1:-1] if len(v) >= 2 and v[0] == '"' and v[-1] == '"' else v

def _pair(piece):  # `key=value`: the key in lower case, the value unquoted
    k, eq, v = piece.partition("=")
    k = k.strip(WS).translate(_LOWER)
    return (k, _unquote(v.strip(WS))) if eq and k else None

def members(field):
    """fields.rs: a field's members, each a head (name or number) and its parameters; a field
    whose members are `key=value` (draft-7's dictionary, `r=42;t=7`) is one member of every pair."""
    parts = _split(field, ",")
    if any("=" in _split(p, ";")[0] for p in parts):
        pairs = [_pair(piece) for part in parts for piece in _split(part, ";")]
        return [SimpleNamespace(name=None, number=None, params=[p for p in pairs if p])]
    out = []
    for part in parts:
        if not part.strip(WS):
            continue
        pieces = _split(part, ";")
        head, m = pieces[0].strip(WS), SimpleNamespace(name=None, number=None)
        m.params = [p for p in map(_pair, pieces[1:]) if p]
        if head.startswith('"'):
            m.name = _unquote(head)
        elif number(head) is not None:
            m.number = number(head)
        elif head:
            m.name = head
        out.append(m)
    return out

def _param(m, keys):  # the first parameter named any of `keys`, in the order of `keys`
    return next((v for k in keys for name, v in m.params if name == k), None)

def seconds(s):  # when.rs: Duration::try_from_secs_f64 (the nearest nanosecond, ties to even), else MAX
    return DMAX if not s < 18446744073709551616.0 else round(Fraction(s) * NS)

def _until(at, now):  # from `now` to the epoch second `at`, 0 once passed (past SystemTime's range: MAX)
    d = seconds(at)
    return DMAX if d >= 2**63 * NS else max(0, d - now)

def _go_duration(v):  # `6m0s`, `1.5s`, `20ms`: numbers each followed by h, m, s, ms, us, µs or ns
    total, at = 0.0, 0
    if not v:
        return None
    while at < len(v):
        m = _DURATION.match(v, at)
        if not m or not _DECIMAL.fullmatch(m[1]) or m[2] not in UNITS:
            return None
        total += float(m[1]) * UNITS[m[2]]
        at = m.end()
    return seconds(total) if math.isfinite(total) else None

def _span(v):  # when.rs span: seconds, or a Go duration (tollbooth's X-Rate-Limit-Duration)
    v = v.strip(WS)
    x = number(v)
    return seconds(x) if x is not None else _go_duration(v)

def _month(m): return MONTHS.index(m) + 1 if m in MONTHS else None

def _civil(year, month, day, clock, fraction=0):
    """when.rs civil: a civil date and an `hh:mm:ss` clock (UTC, each part exactly two digits), plus
    `fraction` nanoseconds, as Unix nanoseconds, or None."""
    hms = clock.split(":")
    if None in (year, month, day) or len(hms) != 3 or not all(_TWO_DIGITS.fullmatch(x) for x in hms):
        return None
    h, m, sec = (int(x) for x in hms)
    if not (1 <= month <= 12 and 1 <= day <= 31 and h <= 23 and m <= 59 and sec <= 60 and 1970 <= year <= 9999):
        return None
    y, mo = (year - 1, month + 9) if month <= 2 else (year, month - 3)  # days from a civil date
    era = y // 400
    yoe = y - era * 400
    doe = yoe * 365 + yoe // 4 - yoe // 100 + (153 * mo + 2) // 5 + day - 1
    return ((era * 146_097 + doe - 719_468) * 86_400 + h * 3600 + m * 60 + sec) * NS + fraction

def _rfc3339(v):  # `1994-11-06T08:49:37Z`, `1994-11-06T08:49:37.25+01:00`
    at = _DATE_TIME.search(v)
    if not at:
        return None
    date, rest = v[:at.start()], v[at.end():]
    ymd = date.split("-")
    if len(ymd) != 3:
        return None
    if rest[-1:] in ("Z", "z"):
        clock, offset = rest[:-1], 0
    else:
        at = max(rest.rfind("+"), rest.rfind("-"))
        if at < 0:
            return None
        clock, zone = rest[:at], rest[at:]
        oh, colon, om = zone[1:].partition(":")
        oh, om = _int(oh), _int(om)
        if not colon or oh is None or om is None or not (0 <= oh <= 23 and 0 <= om <= 59):
            return None
        offset = (-1 if zone[0] == "-" else 1) * (oh * 3600 + om * 60)
    whole, dot, f = clock.partition(".")
    if dot and not _DIGITS.fullmatch(f):
        return None
    local = _civil(_int(ymd[0]), _int(ymd[1]), _int(ymd[2]), whole, seconds(float("0." + f)) if dot else 0)
    return None if local is None else local - offset * NS

def _imf_date(p):  # `Sun, 06 Nov 1994 08:49:37 GMT`, its parts split at ASCII white space
    return _civil(_int(p[3]), _month(p[2]), _int(p[1]), p[4]) if len(p) == 6 and p[5] == "GMT" else None

def _rfc850_date(p):  # `Sunday, 06-Nov-94 08:49:37 GMT`: a two-digit year is the one within 50 years of 2000
    dmy = p[1].split("-") if len(p) == 4 and p[3] == "GMT" else []
    year = _int(dmy[2]) if len(dmy) >= 3 else None
    if year is None:
        return None
    year = 2000 + year if year < 50 else 1900 + year if year < 100 else year
    return _civil(year, _month(dmy[1]), _int(dmy[0]), p[2])

def _asctime_date(p):  # `Sun Nov  6 08:49:37 1994`
    return _civil(_int(p[4]), _month(p[1]), _int(p[2]), p[3]) if len(p) == 5 else None

def _date_ns(v):
    """when.rs http_date: a date in any form a server writes one, as Unix nanoseconds, or None: the
    HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850's and asctime's (`Sunday, 06-Nov-94
    08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`), or RFC 3339 (`1994-11-06T08:49:37Z`, with a fraction
    or an offset)."""
    v = v.strip(WS)
    p = [x for x in re.split("[ \t\n\x0c\r]+", v) if x]  # split_ascii_whitespace
    return next((at for at in (_imf_date(p), _rfc850_date(p), _asctime_date(p), _rfc3339(v)) if at is not None),
                None)

def http_date(v):
    """A date in any form _date_ns reads, as Unix seconds (an int; a Fraction where RFC 3339 states a
    fraction of a second), or None."""
    ns = _date_ns(v)
    return None if ns is None else ns // NS if ns % NS == 0 else Fraction(ns, NS)

def _reset(value, now):  # when.rs reset: seconds to it, an epoch second or millisecond, a duration, a date
    v = value.strip(WS)
    x = number(v)
    if x is not None:
        return _until(x / 1e3, now) if x >= 1e12 else _until(x, now) if x >= 1e9 else seconds(x)
    d = _go_duration(v)
    return d if d is not None else _then(_date_ns(v), lambda at: max(0, at - now))

def _retry_after(value, now):  # seconds, whole or not, or an HTTP date (passed: 0)
    s = number(value)
    return seconds(s) if s is not None else _then(_date_ns(value), lambda at: max(0, at - now))

def classify(status, h):
    """Status::read: 2xx ok; 429, or a 403 with x-ratelimit-remaining: 0 or a Retry-After, limited;
    503 unavailable; anything else (None or 0: no answer) an error. `h`: read_headers' mapping."""
    if status == 403 and (_then(h.get("x-ratelimit-remaining"), count) == 0 or "retry-after" in h):
        return LIMITED
    if status is not None and 200 <= status <= 299:
        return OK
    return LIMITED if status == 429 else UNAVAILABLE if status == 503 else ERROR

def read_headers(headers):
    """A mapping or (name, value) pairs as {name: value}: names trimmed and in lower case, values
    trimmed, the first of a name kept (answer.rs's `field`)."""
    h = {}
    for name, value in headers.items() if hasattr(headers, "items") else headers or ():
        h.setdefault(name.strip(WS).translate(_LOWER), value.strip(WS))
    return h

def _stated(**kw):  # one limit an answer speaks of (answer.rs's Stated)
    return SimpleNamespace(**dict(dict(name=None, quota=None, window=None, remaining=None, reset=None,
                                       separate=False), **kw))

def _item(m, now):  # a member of `RateLimit`: draft-8's `"name";r=…;t=…`, draft-7's `limit=…, remaining=…`
    return _stated(name=m.name, quota=_then(_param(m, ("limit", "q", "l")), count),
                   window=_then(_then(_param(m, ("w",)), number), seconds),
                   remaining=_then(_param(m, ("r", "remaining")), count),
                   reset=_then(_param(m, ("t", "reset")), lambda v: _reset(v, now)))

def _policy(m):  # draft-6/7's `100;w=60` or draft-8's `"name";q=100;w=60`; None without a quota
    quota = _as_u64(m.number) if m.number is not None else _then(_param(m, ("q", "l", "limit")), count)
    return None if quota is None else _stated(name=m.name, quota=quota,
                                              window=_then(_then(_param(m, ("w",)), number), seconds))

def _separate(h, now, policies):  # the separate fields, also with `-requests`; policies in the limit join
    def get(what):
        return next((h[n] for p in SEPARATE for n in (p + what, p + what + "-requests") if n in h), None)
    quota, limit = None, get("limit")
    limit = h.get("x-rate-limit") if limit is None else limit  # Zendesk's bare X-Rate-Limit
    for m in members(limit) if limit is not None else ():
        if _param(m, ("w",)) is not None:
            policies.extend(p for p in [_policy(m)] if p)
        elif quota is None:
            quota = _then(m.number, _as_u64)
    reset = _then(_then(get("reset-after"), number), seconds)  # Discord's exact reset-after before its epoch reset
    reset = _then(get("reset"), lambda v: _reset(v, now)) if reset is None else reset
    remaining = _then(get("remaining"), count)
    if quota is None and remaining is not None:  # used and remaining make the limit (Reddit's x-ratelimit-used)
        used = _then(get("used"), count)
        quota = used + remaining if used is not None and used + remaining < 2 ** 64 else None
    quota = _then(get("burst-capacity"), count) if quota is None else quota  # else the bucket a refill names
    cost = _then(get("requested-tokens"), count)  # a request's cost in tokens (Spring Cloud Gateway)
    cost = cost if cost is not None and cost > 1 else 1
    quota, remaining = _then(quota, lambda q: q // cost), _then(remaining, lambda r: r // cost)
    # A bucket refilled at `tokens` every `every` seconds: its window is the time the refill fills it in
    # (Spring Cloud Gateway's replenish-rate a second, Atlassian's fillrate every interval-seconds).
    refill = _then(_then(get("replenish-rate"), number), lambda t: (t, 1.0))
    if refill is None:
        fill = _then(get("fillrate"), number)
        every = _then(get("interval-seconds"), number)
        refill = None if fill is None else (fill, 1.0 if every is None else every)
    refill = refill if refill is not None and refill[0] > 0.0 and refill[1] > 0.0 else None
    if refill is not None and quota is not None:
        window = seconds(float(quota) * float(cost) * refill[1] / refill[0])
    else:  # tollbooth's duration, the limit's window
        window = _then(get("duration"), _span)
    s = _stated(quota=quota, window=window, remaining=remaining, reset=reset, separate=True)
    return s if s.quota is not None or s.remaining is not None else None

def _call_limit(h):  # Shopify's `X-Shopify-Shop-Api-Call-Limit: 32/40`, 32 used of a bucket of 40
    v = h.get("x-shopify-shop-api-call-limit")
    if v is None or "/" not in v:
        return None
    used, limit = (count(x) for x in v.split("/", 1))
    if used is None or limit is None:
        return None
    return _stated(quota=limit, remaining=max(limit - used, 0))

def _per_window(h):  # one limit per window named, `X-RateLimit-Limit-Minute` and `-Remaining-Minute`
    out = []
    for suffix, secs_ in WINDOW_SUFFIXES:
        def get(what):
            return _then(next((h[n] for n in (f"{p}{what}-{suffix}" for p in SEPARATE) if n in h), None), count)
        quota, remaining = get("limit"), get("remaining")
        if quota is not None or remaining is not None:
            out.append(_stated(quota=quota, window=secs_ * NS, remaining=remaining))
    return out

def _limits(h, now):  # every limit the answer states, each count given its policy, those that say the same as one
    limits, policies = [], []
    if "ratelimit" in h:
        limits.extend(_item(m, now) for m in members(h["ratelimit"]))
    if "ratelimit-policy" in h:
        policies.extend(p for p in map(_policy, members(h["ratelimit-policy"])) if p)
    limits.extend(s for s in [_separate(h, now, policies)] if s)
    limits.extend(_per_window(h))
    limits.extend(s for s in [_call_limit(h)] if s)
    limits = [l for l in limits if l not in (_stated(), _stated(separate=True))]
    used = [False] * len(policies)
    for l in limits:  # the policy of the same name, else of the same quota, else the only one if it states none
        i = next((j for j, p in enumerate(policies) if l.name is not None and p.name == l.name), None)
        i = next((j for j, p in enumerate(policies) if l.quota is not None and p.quota == l.quota), None) \
            if i is None else i
        i = 0 if i is None and len(policies) == 1 and l.quota is None else i
        if i is not None:
            l.quota = policies[i].quota if l.quota is None else l.quota
            l.window = policies[i].window if l.window is None else l.window
            used[i] = True
    if not limits:  # a policy no count names still states the quota
        limits.extend(SimpleNamespace(**vars(p)) for p, u in zip(policies, used) if not u)
    i = 0
    while i < len(limits):  # limits of one quota and one count are one (Kong's RateLimit-* and its windows)
        a = limits[i]
        j = next((j for j in range(i + 1, len(limits)) if a.quota is not None and limits[j].quota == a.quota
                  and a.remaining is not None and limits[j].remaining == a.remaining), None)
        if j is None:
            i += 1
            continue
        b = limits.pop(j)  # each fills in what the other left out: the first's values kept, but
        if a.window is not None and b.window is not None and b.window > a.window:  # a longer window's first
            a, b = b, a
            limits[i] = a
        if a.reset is None:  # GitHub's rule (a spent count waits for the reset) follows the reset kept
            a.separate = b.separate
        a.window = b.window if a.window is None else a.window
        a.reset = b.reset if a.reset is None else a.reset
        a.name = b.name if a.name is None else a.name
    return limits

def _binding(limits):
    """Of the limits that state a count, the one nearest to empty (the smallest share of its quota
    left, or the smallest count where a quota is missing), the later reset on a tie, else the first
    of them; with no count, the first that states a quota."""
    counted = [l for l in limits if l.remaining is not None]
    if not counted:
        return next((l for l in limits if l.quota is not None), None)
    quotas = all(l.quota is not None and l.quota > 0 for l in counted)
    full = lambda l: float(l.remaining) / float(l.quota) if quotas else float(l.remaining)  # noqa: E731
    best = counted[0]
    for l in counted[1:]:
        a, b = full(l), full(best)
        if a < b or (a == b and l.reset is not None and (best.reset is None or l.reset > best.reset)):
            best = l
    return best

def read_answer(status, headers=(), latency_ns=0, unix_ns=None):
    """(class, remaining, limit, retry_after, policy, reset, latency) as Answer::read reads them:
    times in nanoseconds, the policy as (limit, window); `unix_ns` the wall clock (default now),
    the answer's Date instead when the two are more than 2 s apart."""
    h, wall = read_headers(headers), time.time_ns() if unix_ns is None else unix_ns
    date = _then(h.get("date"), _date_ns)
    now = wall if date is None or abs(date - wall) <= CLOCK_SKEW else date
    cls, b = classify(status, h), _binding(_limits(h, now))
    ms = _then(h["retry-after-ms"] if "retry-after-ms" in h else h.get("x-ms-retry-after-ms"), number)
    retry_after = seconds(ms / 1e3) if ms is not None else _then(h.get("retry-after"), lambda v: _retry_after(v, now))
    if retry_after is None:
        retry_after = next((w for n in RETRY_AFTER_ALIASES if n in h for w in [_reset(h[n], now)] if w is not None),
                           None)
    reset, wait = None if b is None else b.reset, None
    if cls == OK:  # on a 2xx a Retry-After can only be the reset (Flask-Limiter's), unless 0 (Atlassian's)
        reset = retry_after if reset is None and retry_after != 0 else reset
    else:  # GitHub's primary limit names no wait but the time its count resets
        wait = retry_after
        if wait is None and b is not None and b.separate and b.remaining == 0 and cls == LIMITED:
            wait = b.reset
    policy = (b.quota, min(b.window, DAY)) if b is not None and b.quota is not None and b.window else None
    cap = lambda d: None if d is None else min(d, DAY)  # noqa: E731
    return (cls, None if b is None else b.remaining, None if b is None else b.quota, cap(wait), policy, cap(reset),
            latency_ns)

def _quota_rate(q): return 0.0 if q[1] == 0 else float(q[0]) * 1e9 / float(q[1])

class FairShare:
    """One process's law, shared by its `threads` threads. Parameters as the crate's Params,
    durations in seconds; `random()` returns a float in [0, 1)."""
    def __init__(self, threads, random=None, **params):
        c = dict(DEFAULTS, **params)
        for k in sorted(set(params) - set(DEFAULTS))[:1]:
            raise ValueError(f"{k}: not a parameter of fair-share (docs/fair-share.md lists them)")
        for k in POSITIVE + NON_NEGATIVE:
            v, zero = 1.0 if c[k] is None else c[k], k in NON_NEGATIVE
            if not (isinstance(v, (int, float)) and math.isfinite(v) and (v >= 0 if zero else v > 0)):
                raise ValueError(f"{k}: must be a number {'of 0 or more' if zero else 'above 0'} (got {v!r})")
        if (c["quota"] is None) != (c["period"] is None):
            given, other = ("quota", "period") if c["period"] is None else ("period", "quota")
            raise ValueError(f"{other}: must be set with {given} (or leave both to the server's policy)")
        for k, ok, want in RANGES:
            if not ok(c):
                raise ValueError(f"{k}: must be {want} (got {c[k]!r})")
        for k in DURATIONS:  # Duration::from_secs_f64: the nearest nanosecond
            c[k] = None if c[k] is None else round(Fraction(float(c[k])) * NS)
        self.c, self.random, self.lock = c, random or _random.random, threading.Lock()
        n = max(int(threads), 1)
        quota = 4500.0 if c["quota"] is None else float(c["quota"])
        self.period = 3600.0 if c["period"] is None else secs(c["period"])
        self.rate, self.limit, self.policy, self.headers = quota / self.period, quota, None, False
        # Each thread: the phase it sends at next, when it last sent, its jitter, held until, errors.
        self.threads = [SimpleNamespace(target=None, last_send=None, jit=0.0, hold=0, errors=0, drawn=False)
                        for _ in range(n)]
        self.at, self.ph = 0, 0.0  # the phase: periods of x elapsed, continuous across changes of x
        self.offset = self.window = self.newest = self.since = None
        self.newest_slack = 0.0  # how far the newest reading's count may lie from its t
        # the window's reading the level is read against, what was taken before it, own 429s,
        # its latest reading, and the tokens the refill may have lost to a full bucket
        self.win_since, self.win_taken, self.win_refused, self.win_last, self.win_overflow = None, 0.0, 0.0, None, 0.0
        self.last_decrease = self.last_increase = None
        self.samples = self.decreases = self.updates = self.votes = 0
        self.full_start = self.sliding = self.stated_policy = False
        self.window_end = self.last_end = None  # a window end the stated resets agree on
        self.period_read = self.period_before = None  # (end, period) read there; the one before
        self.stated_end = None  # the first success that stated the current end, (end, (t, r))
        self.fixed_end = None  # on a fixed window, the end stated since the mode or the last turnover
        self.end_drifted = False  # a fixed window's end drifted once: stated ends place none again
        self.reset_span = None  # where the resets fall, modulo the period, (lo, hi)
        self.moving_end = self.refill_bound = None  # (end, t, reset, r) of the last answer; the learned refill
        # the lowest ceiling the stated resets put on a bucket's refill, the longest reset, no bucket
        self.refill_ceiling, self.longest_reset, self.no_bucket = None, 0.0, False
        self.from_resets, self.win_successes = False, 0.0  # a reset bounded R; own successes in the window
        # when the server counted own successes over the last period; [since, readings, exact, above, level]
        self.own, self.own_head, self.echo = [], 0, None  # own[own_head:]: the period's successes
        self.echoed = False  # the level echoed own successes: a sliding window, whatever the resets say
        # where no limit is stated: whether one was, the highest count read, the rate the test began at
        self.limit_stated, self.top, self.x_at_top = False, None, 0.0
        self.steady_cuts = None  # the cuts at the first reading after the start: none since, the test runs
        # stacked limits: the limit the last success stated; the total's bound from another limit's refusals
        self.success_limit, self.other_cap = None, math.inf
        x0, sleep = self.rate / n, c["initial_sleep"]
        self.x = self.clamp_rate(x0 if sleep is None else min(1.0 / secs(sleep) if sleep else math.inf, x0))
        self.probe = self.c["increase"] * self.rate * self.rate  # blind to the count: how fast it climbs
        self.in_a_row, self.blocked_at = 0, None  # blind: refusals since a success; the last blocked-key hold
    def wait(self, thread, now):
        """Seconds `thread` waits before it sends (0: send now; the send is booked)."""
        return secs(self.wait_ns(thread, from_secs(now)))
    def observe(self, thread, now, status, headers=(), latency=0.0, unix=None):
        """An answer (status None: a transport error), at `now`; returns its class."""
        unix_ns = None if unix is None else unix * NS if isinstance(unix, int) else from_secs(unix)
        return self.observe_ns(thread, from_secs(now), status, headers, from_secs(latency), unix_ns)
    def wait_ns(self, thread, now):
        if not 0 <= thread < len(self.threads):
            return NS  # a thread out of range waits a second
        with self.lock:
            th = self.threads[thread]
            if not th.drawn:  # the sim's `delay`, once per request
                self.delay(now, thread)
            w = self.acquire(now, thread)
            th.drawn = w > 0
            return w
    def observe_ns(self, thread, now, status, headers=(), latency=0, unix_ns=None):
        answer = read_answer(status, headers, latency, unix_ns)
        with self.lock:
            if 0 <= thread < len(self.threads):
                self.on_response(now, thread, answer)
        return answer[0]
    # --- the law, as crates/fair-share/src/law/: the same names, the same order of operations ---
    def clamp_rate(self, x): return _clamp(x, self.rate / self.c["crowd"] * 0.01, self.c["max_rate"] * self.rate)
    def own_reserve(self): return min(max(self.c["reserve"] * self.limit, 1.0), self.limit * 0.25)
    def reserve(self):  # at least a quarter of the crowd's swing where the bucket holds it
        own = self.own_reserve()
        return min(max(own, 0.25 * self.swing()), self.limit * 0.25) if self.holds_crowd() else own
    @property
    def reset_at(self):  # the middle of the span the turnovers agree on
        return None if self.reset_span is None else (self.reset_span[0] + self.reset_span[1]) / 2.0
    def refill(self): return 0.0 if self.reset_at is not None else self.rate
    def window_secs(self): return self.c["window_periods"] / self.x / math.sqrt(float(len(self.threads)))
    def loop_secs(self): return max(self.window_secs(), self.c["min_flow"] / self.rate)
    def phase(self, now): return self.ph + secs(max(now - self.at, 0)) * self.x
    def room(self): return self.room_above(self.reserve())
    def room_above(self, reserve): return max(self.limit - 1.0 - reserve, 0.0) * 0.8  # up to B − 1
    def swing(self): return 2.0 * math.sqrt(self.c["crowd"])  # the level's swing from K senders
    def holds_crowd(self):  # the room above the configured reserve holds the swing
        return self.reset_span is None and self.swing() <= self.room_above(self.own_reserve())
    def slope(self):
        room = self.room()
        floor = 4.0 if self.reset_span is not None else self.swing() if self.holds_crowd() else 10.0  # tokens
        span = max(self.c["span"] * self.limit, min(floor, room))
        return max(span / math.log(self.c["crowd"]), 2.2250738585072014e-308)
    def price(self, r):
        return self.rate / self.c["crowd"] * math.exp(min((r - self.reserve()) / self.slope(), 50.0))
    def to_reset(self, t):
        return None if self.reset_at is None else self.period - _rem_euclid(t - self.reset_at, self.period)
    def planned(self, t):
        left = self.to_reset(t)
        return 0.0 if left is None else max(self.limit - self.reserve(), 0.0) * left / self.period
    def min_flow(self):
        return self.c["min_flow"] if self.reset_at is None else min(self.c["min_flow"], self.limit * 0.3)
    def target(self, r, t):
        left = self.to_reset(t)
        if left is not None:  # what is left at the reset is lost: the reserve shrinks to nothing
            reserve = 0.75 * self.reserve() * min(left / self.period, 1.0)  # 3/4 of it
            # past the reset, the allowances that follow; over at least the reset's uncertainty
            h = max(left, self.window_secs(), min(2.5 * secs(self.c["reset_resolution"]), 0.5 * self.period))
            later = self.limit * (h - left) / self.period  # whole
            return min(max((r + 1.0 - reserve + later) / h, self.rate * 0.05), self.other_cap)
        tau = max(self.c["drain_fill"] * self.limit / self.rate, self.c["drain_windows"] * self.loop_secs())
        surplus = (r - self.reserve()) / tau
        surplus = min(surplus, self.c["full_drain"] * self.rate) if self.full_start else surplus
        return min(max(self.rate + surplus, self.rate * 0.25), self.other_cap)  # under another limit's bound
    def set_rate(self, now, x):
        now = max(now, self.at)
        self.ph, self.at, self.x = self.phase(now), now, self.clamp_rate(x)
    def apply_window(self, now, first, last):
        (t0, r0), (t1, r1) = first, last
        dt, n = t1 - t0, float(len(self.threads))
        if self.sliding:  # the level is what the last period took; no pull
            average, fall = (self.limit - (r0 + r1) / 2.0) / self.period, (r0 - r1) / dt
            total, target = max(max(average, fall), self.rate * 0.02), min(self.limit / self.period, self.other_cap)
            gain = self.c["gain"] if fall > average else self.c["gain"] * min(1.0 * dt / self.period, 1.0)
            return self.set_rate(now, math.exp(math.log(self.x) + gain * _step(_ln(target / total))))
        (ts, rs), refused = self.win_since, self.win_refused if self.reset_span is not None else 0.0
        # what the bucket lost to overflowing counts as refilled and taken by nobody
        overflow = self.win_overflow if self.reset_span is None else 0.0
        total = max(self.refill() - (r1 - rs - self.win_taken - refused + overflow) / dt, self.rate * 0.02)
        target = self.target((rs + r1) / 2.0, (ts + t1) / 2.0)
        # a first window that reads a flood cuts straight to the target
        flood = self.updates == 0 and not self.full_start and self.reset_span is None and total > 4.0 * target
        ln_x = math.log(self.x) + (1.0 if flood else self.c["gain"]) * _step(_ln(target / total))
        alone = n * self.x >= (1.0 - 0.1) * total  # the whole total: a slow start, then R from successes
        if alone and self.overflowing(first, last):
            ln_x = max(ln_x, math.log(self.x) + LN_2)
        price = self.price(r1 - self.planned(t1))
        crowd = max(total / max(self.x, price), n)
        periods = 4.0 if self.reset_span is not None else self.c["pull_periods"]
        pull = min(self.slope() / (periods * crowd), self.c["pull_max"])
        share = _clamp(n * self.x / total, 0.0, 1.0)
        if self.holds_crowd():  # room for a crowd's swing, a lone process keeps half its pull
            pull = pull * (1.0 - 0.5 * share)
        else:
            pull = pull * (1.0 - share) * min((1.0 - share) / 0.1, 1.0)  # a lone process's fades
        cap = target * self.x / total if self.full_start else target
        ln_x += pull * max(_ln(min(price, cap)) - ln_x, -LN_100)
        self.set_rate(now, math.exp(ln_x))
        if alone:
            self.learn_refill_from_successes(now, first, last)
    def reset_slack(self):  # a stated reset's rounding: the header's second, or 0.02 of the period
        return max(self.period * 0.02, secs(self.c["reset_resolution"]))
    def read_reset(self, t, stated, r):  # a whole period at any level: a sliding window
        if self.reset_at is not None or not self.knows_quota():
            self.forget_sliding()
            return
        bucket, slack = max(self.limit - r, 0.0) / self.rate, self.reset_slack()
        if stated >= self.period - slack and stated > bucket + 1.5 * slack:
            self.since = t if self.since is None else self.since
            self.votes = min(self.votes + 1, U32)
            self.sliding = self.sliding or (self.votes >= 3 and t - self.since > 2.0 * slack)
        elif stated < self.period - 1.5 * slack:
            self.forget_sliding()
    def forget_sliding(self):  # a stated reset says no sliding window, unless the level's echo said one
        self.sliding, self.votes, self.since = self.sliding and self.echoed, 0, None
    def read_top(self, r, refused):  # no limit stated: a level that cutting cannot raise is the top
        if self.limit_stated:
            return
        top = self.top
        if top is not None and top - 1.0 <= r <= top and not refused:
            if self.steady_cuts is None and self.updates > 0:  # the first reading after the start
                self.steady_cuts = self.decreases
                if self.decreases > 0:  # cut in the start's flood: the test starts now
                    self.x_at_top = self.x
                    return
            uncut = self.decreases == 0 or self.steady_cuts == self.decreases
            if uncut and top >= 1.0 and top + 1.0 < self.limit and self.x < self.x_at_top / 4.0:
                self.limit, self.x_at_top = top + 1.0, self.x
        else:
            self.top, self.x_at_top = r if top is None else max(top, r), self.x
    def read_echo(self, t, r):  # alone, r + own = B says sliding, whatever the resets say
        if not self.knows_quota():
            self.own, self.own_head, self.echo = [], 0, None
            return
        own, head, start = self.own, self.own_head, t - self.period
        while head < len(own) and (own[head] <= start or len(own) - head > 2.0 * self.limit):
            head += 1  # dropped from the front by moving the head: no shift of the list per answer
        if head > 64 and 2 * head > len(own):
            del own[:head]
            head = 0
        self.own_head = head
        at = bisect.bisect_right(own, t, head)
        before = own[at - 1] if at > head else None
        own.insert(at, t)
        if before is None or t - before < 1.0 / self.rate:  # a bucket gave a token back since: it tells
            return
        e = r + (at - head + 1) - self.limit
        if self.echo is None:
            self.echo = [t, 0, 0, 0, 0.0]
        tally = self.echo
        tally[1] += 1
        tally[4] += r
        if abs(e) < 0.5:
            tally[2] += 1
        elif e > 0.0:
            tally[3] += 1
        if t - tally[0] >= 4.0 * self.period and tally[1] >= 30:
            if tally[2] >= 0.95 * tally[1] and tally[4] / tally[1] >= 0.1 * self.limit + 1.0:
                self.reset_span, self.sliding = None, True  # a turnover seen was a burst's echo
                self.echoed = True  # a sliding window, whatever the stated resets say from now on
            elif 2 * tally[3] >= tally[1]:
                self.sliding = self.echoed = False
            self.echo = [t, 0, 0, 0, 0.0]
    def read_end_drift(self, t, stated, latency):  # a fixed window's end that drifts within a window is none
        if self.reset_at is None:
            self.fixed_end = None
            return
        end = t + stated
        if self.fixed_end is None:
            self.fixed_end = (end, latency)
            return
        res = secs(self.c["reset_resolution"])
        # one window's ends differ by its rounding and either answer's latency, no more
        drift, slack = abs(end - self.fixed_end[0]), res + max(latency, self.fixed_end[1]) + 1e-6
        if drift <= slack:
            return
        # whole periods later is the next window's end (on a period of a few resolutions, never)
        if self.period > 4.0 * res and abs(drift - _round(drift / self.period) * self.period) <= slack:
            self.fixed_end = (end, latency)
        else:
            self.reset_span, self.fixed_end, self.end_drifted = None, None, True
    def read_fixed_end(self, t, stated, r, apart):  # a stated end that stays put while r falls
        if self.reset_at is not None or self.end_drifted:
            self.stated_end = None
            return
        end, same = t + stated, secs(self.c["reset_resolution"])
        cur = self.stated_end
        if cur is None or not abs(end - cur[0]) <= same:
            self.stated_end = (end, (t, r))
            return
        first_end, first = cur
        if not (r < first[1] and t - first[0] > apart):
            return
        if not self.knows_quota():  # no period to place it by, but no bucket's end stays put
            self.no_bucket, self.stated_end = True, None
            return
        # a fixed window's end is never more than a period away (a sliding-window counter's can be)
        if first_end - first[0] <= self.period + same:
            self.place_reset(first_end - same, first_end)  # a stated end is rounded up
            self.place_reset(end - same, end)
            self.stated_end = None
            self.full_start = self.sliding = False
            self.window, self.samples = None, 0
    def read_stated_end(self, t, stated):  # an end stated later than the reset predicted moves it on
        left = self.to_reset(t)
        if left is None:
            return
        res = secs(self.c["reset_resolution"])
        least = stated - res  # the end is rounded up: the window closes no sooner
        if stated <= self.period + res and left < least:
            later = least - left
            self.reset_span = (self.reset_span[0] + later, self.reset_span[1] + later)
    def hold_spent_window(self, now, sent, stated):  # every thread waits for the end, less its rounding
        sure = stated - secs(self.c["reset_resolution"])
        if self.reset_at is not None and sure > 0.0:
            self.hold_process(now, sent + from_secs(sure))
    def place_reset(self, lo, hi):  # every turnover seen narrows down where the resets fall
        span = (lo, hi)
        if self.reset_span is not None:
            a, b = self.reset_span
            shift = _round(((lo + hi) - (a + b)) / 2.0 / self.period) * self.period
            lo2, hi2 = max(lo, a + shift), min(hi, b + shift)
            if lo2 <= hi2:
                span = (lo2, hi2)
        self.reset_span = span
    def level(self, now, t, r):  # Rust's `observe`: a reading of the shared level at t
        if self.newest is None and r >= self.c["full_level"] * self.limit:
            self.full_start = True
        elif r <= self.reserve() + self.slope() * math.log(self.c["crowd"]):
            self.full_start = False
        slack = max(secs(now) - t, 0.0)  # counted at t give or take this (half the latency)
        if self.newest is not None and t >= self.newest[0]:
            # on a sliding window a jump is requests leaving it a period after they were sent
            if not self.sliding and r > self.newest[1] + self.refill() * (t - self.newest[0] + slack + self.newest_slack) + max(self.limit * 0.1, 2.0):
                newest = self.newest
                self.place_reset(newest[0], t)  # a window reset between the two readings
                self.fixed_end = None
                self.full_start = False
                self.newest, self.newest_slack = (t, r), slack
                return self.carry_window(newest, (t, r))
            if self.reset_at is not None and r > self.newest[1] + 2.0:
                self.reset_span = None
        if self.newest is None or t >= self.newest[0]:
            self.newest, self.newest_slack = (t, r), slack
        if self.window is None:
            return self.open_window((t, r))
        self.samples += 1
        limit, refill = self.limit, self.refill()
        if t > self.win_last[0]:
            # a reading at the top (B − 1, the request just counted) found the bucket full: since
            # the reading before it refilled from that level, then overflowed for at most the time
            # left over (others' requests only shorten it; for a process alone it is exact)
            if r >= limit - 1.0 and refill > 0.0:
                fill = max(limit - self.win_last[1], 0.0) / refill
                self.win_overflow += max((t - self.win_last[0]) - fill, 0.0) * refill
            self.win_last = (t, r)
        (t0, r0), periods = self.window, 0.7 if self.updates == 0 else 1.0
        if (t - t0 >= self.window_secs() * periods and self.samples >= self.c["min_samples"]
                and self.rate * (t - t0) - (r - self.win_since[1]) + self.win_taken >= self.min_flow()):
            self.apply_window(now, self.window, (t, r))
            self.updates += 1
            self.open_window((t, r))
    def open_window(self, s):
        self.window, self.samples, self.win_since, self.win_taken, self.win_refused = s, 1, s, 0.0, 0.0
        self.win_last, self.win_overflow, self.win_successes = s, 0.0, 0.0
    def carry_window(self, newest, s):  # a window of the law carries on across a turnover
        if self.window is None:
            return self.open_window(s)
        left = self.to_reset(newest[0])
        turnover = left is not None and newest[0] + left <= s[0] + 1e-9  # the reset placed between
        self.win_taken += max(self.win_since[1] - newest[1], 0.0)  # the fall up to the turnover
        if turnover:
            self.win_taken += max(self.limit - s[1], 0.0)  # what the new allowance lost before s
        self.win_since = s
    def take_policy(self, now, q, limit_from_quota):
        if self.policy != q:
            self.policy = q
            self.limit = float(q[0]) if limit_from_quota else self.limit
            self.move_refill(now, _quota_rate(q), secs(q[1]))
    def move_refill(self, now, rate, period):  # the per-thread rate moves with R
        scale = rate / self.rate
        self.rate, self.period = rate, period
        self.set_rate(now, self.x * scale)
    def knows_quota(self):  # stated, given, or learned from the stated resets
        return self.policy is not None or self.c["quota"] is not None or self.refill_bound is not None
    def learn_refill(self, now, stated, r):  # R >= (B - r - 1)/reset, from an end that moved
        if self.c["quota"] is not None or self.policy is not None:
            return
        self.longest_reset = max(self.longest_reset, stated)
        self.no_bucket = self.no_bucket or self.reset_span is not None  # a fixed window's turnover too
        if self.no_bucket:
            return self.refill_from_longest_reset(now)
        t, res = secs(now), secs(self.c["reset_resolution"])
        if stated > res:  # a bucket's reset is rounded up by less than a resolution
            ceiling = (self.limit - r + 1.0) / (stated - res)
            self.refill_ceiling = ceiling if self.refill_ceiling is None else min(self.refill_ceiling, ceiling)
        end, last = t + stated, self.moving_end
        # an end that moved, or a count that rose (a bucket filling), is no fixed window's
        moved = last is not None and t > last[1] and (abs(end - last[0]) > res or r > last[3] + 1.0)
        self.moving_end = (end, t, stated, r)
        if not moved or stated <= 0.0:
            return
        bound = (self.limit - r - 1.0) / stated
        if stated > 2.0 * res and abs(stated - last[2]) <= res:  # one reset at levels no bucket explains
            bucket_rate_at_most = (self.limit - min(r, last[3]) + 1.0) / (stated - res)
            if abs(r - last[3]) > 2.0 * res * bucket_rate_at_most + 1.0:
                bound = max(bound, self.limit / stated)  # a sliding window: a period at any level
        too_slow = bound > 0.0 and self.limit / bound > 7.0 * 86_400.0  # no bucket takes a week to fill
        if too_slow or (self.refill_ceiling is not None and bound > self.refill_ceiling):  # no bucket says this
            self.no_bucket = True
            return self.refill_from_longest_reset(now)
        if bound > (0.0 if self.refill_bound is None else self.refill_bound):
            self.refill_bound, self.from_resets = bound, True
            self.move_refill(now, bound, self.limit / bound)
    def refill_pinned(self):  # a reset bounded R, and their ceiling lies within PINNED_RATIO of it
        return (self.from_resets and self.refill_ceiling is not None and self.refill_bound is not None
                and self.refill_ceiling <= PINNED_RATIO * self.refill_bound)
    def refill_unproven(self):  # a bucket's refill nothing states, tells or bounds from its resets
        return (self.c["quota"] is None and self.policy is None and not self.refill_pinned() and not self.no_bucket
                and self.reset_span is None and self.updates > 0)
    def learn_refill_from_successes(self, now, first, last):  # R·dt >= own successes + the level's rise
        (t0, r0), (t1, r1) = first, last
        if not self.refill_unproven() or t1 - t0 <= 0.0 or r1 - r0 > 1.0:
            return
        bound = (self.win_successes + (r1 - r0) - 1.0) / (t1 - t0)
        capped = self.refill_ceiling is not None and bound > self.refill_ceiling
        if bound > self.rate and not capped:
            self.refill_bound = bound
            self.move_refill(now, bound, self.limit / bound)
    def overflowing(self, first, last):  # full at both ends, never refused: the refill is more than taken
        top = self.limit - 1.0
        return (self.refill_unproven() and self.limit > 2.0 and self.win_successes > 0.0
                and self.win_refused == 0.0 and first[1] >= top and last[1] >= top)
    def refill_from_longest_reset(self, now):  # B over the longest reset, the period from below
        if self.longest_reset <= 0.0:
            return
        rate = self.limit / self.longest_reset
        if self.refill_bound != rate:
            self.refill_bound = rate
            self.move_refill(now, rate, self.longest_reset)
    def read_period(self, now, stated):  # a fixed window's period from its stated reset
        if self.c["quota"] is not None or self.stated_policy:
            return
        t, same = secs(now), secs(self.c["reset_resolution"])  # the header's resolution
        # cur: [end as first stated, the earliest stated, since, seen]
        end, cur, steady = t + stated, self.window_end, 2.0 * same
        if cur is None or not abs(end - cur[0]) <= same:  # a new end: the one before, if steady
            if cur is not None:
                self.last_end = cur[1] if cur[3] - cur[2] > steady else None
            self.window_end = [end, end, t, t]
            return
        cur[1], cur[3] = min(cur[1], end), t  # seconds to go are rounded at each answer's phase
        if self.last_end is None or not cur[3] - cur[2] > steady:
            return
        read = _round(cur[1] - self.last_end)  # read again as the end narrows
        if self.period_read is not None and self.period_read[0] == cur[0]:
            self.period_read = (cur[0], read)
        else:  # a new end read: keep the one before
            self.period_before = None if self.period_read is None else self.period_read[1]
            self.period_read = (cur[0], read)
        # Ends read further apart than a period now and then (a window opened late, an epoch
        # second rounded up): the shorter of the last two.
        period = read if self.period_before is None else min(read, self.period_before)
        turned_over = self.reset_at is not None and abs(self.reset_at - self.last_end) <= 0.1 * period + same
        # Never shorter than an end stated alike takes: two ends closer are one end, rounded.
        if turned_over and max(steady, 1.0) <= period <= 86_400.0:
            self.take_policy(now, (min(int(self.limit), U64), int(period) * NS), False)
    def _wait(self, now, thread):
        th = self.threads[thread]
        left = 0 if th.target is None else from_secs(max(th.target + th.jit - self.phase(now), 0.0) / self.x)
        # Looked at again every eighth of a period, and a hold (the thread's, or the process's
        # phase stopped by a refusal) waited out whole.
        return max(min(left, max(from_secs(1.0 / self.x / 8.0), 1)), max(max(th.hold, self.at) - now, 0))
    def hold_process(self, now, until):
        """The key is empty until `until` for every thread, not only the one refused: the phase
        stops until then, so the threads resume in their order, one spacing apart."""
        if until > max(self.at, now):
            self.ph, self.at = self.phase(now), until
    def near_reset(self, d):  # d later than the reset predicted, on the period's circle, rounded up
        lo, hi = self.reset_span
        within = 0.1 * self.period + (hi - lo) / 2.0  # the prediction's uncertainty
        return _rem_euclid(d + within, self.period) - within <= secs(self.c["reset_resolution"]) + within
    def delay(self, now, thread):
        th, n = self.threads[thread], float(len(self.threads))
        if th.target is None:  # in line, 1/(n·x0) apart, from an offset drawn once per process
            spread = max(secs(self.c["first_spread"]) * self.x, 1.0)
            if self.offset is None:
                self.offset, self.at, self.ph = self.random(), now, 0.0
            th.target = (float(thread) + self.offset) / n * spread
        j = self.c["jitter"]
        # scaled to what the bucket tolerates: a bucket of one token lets no send come early (the
        # draw is made all the same, so the order of the draws does not depend on the bucket)
        fits = _clamp(self.limit - 1.0, 0.0, 1.0)
        th.jit = 0.0 if j <= 0.0 else (-j + self.random() * (2.0 * j)) * fits / n
        return self._wait(now, thread)
    def acquire(self, now, thread):
        w = self._wait(now, thread)
        if w == 0:
            th, phase = self.threads[thread], self.phase(now)
            nxt = (phase if th.target is None else th.target) + 1.0
            nxt += math.ceil(phase + 0.5 - nxt) if nxt < phase + 0.5 else 0
            th.target, th.last_send = nxt, now
        return w
    def take_stated_limit(self, cls, limit, reset, retry_after):
        """A refusal stating another limit than the last success's bounds the key's total rate by
        `L / (T - resolution)`, T the later of its reset and Retry-After, where T exceeds two
        resolutions, and leaves the bucket; any other stated limit is the bucket."""
        self.limit_stated = True
        if cls == LIMITED and self.success_limit is not None and self.success_limit != limit:
            res = secs(self.c["reset_resolution"])
            wait = max(0.0 if reset is None else secs(reset), 0.0 if retry_after is None else secs(retry_after))
            if wait > 2.0 * res:
                self.other_cap = min(self.other_cap, limit / (wait - res))
            return
        self.limit = limit
        if cls == OK:
            self.success_limit = limit
    def on_response(self, now, thread, answer):
        cls, remaining, limit, retry_after, quota, reset, latency = answer
        th, n = self.threads[thread], float(len(self.threads))
        quota = quota if quota is not None and _quota_rate(quota) > 0.0 else None
        self.stated_policy = self.stated_policy or quota is not None
        if self.c["quota"] is None and quota is not None:
            self.take_policy(now, quota, limit is None)
        if limit is not None and limit > 0:
            self.take_stated_limit(cls, float(limit), reset, retry_after)
        elif remaining is not None and remaining >= self.limit:  # the bucket held what is left and this
            self.limit = remaining + 1.0
        sent = now if th.last_send is None else th.last_send
        counted = max(max(now - latency // 2, 0), sent)  # a refusal's reset counts from the last let in
        if remaining is not None and cls in (OK, LIMITED):
            self.headers = True
            if reset is not None and cls == OK:
                self.read_reset(secs(now), secs(reset), float(remaining))
                self.read_fixed_end(secs(counted), secs(reset), float(remaining), 2.0 * secs(self.c["reset_resolution"]))
            elif reset is not None and retry_after is not None and cls == LIMITED:  # a window's end, far off
                res = secs(self.c["reset_resolution"])
                if secs(reset) > 2.0 * res and abs(secs(reset) - secs(retry_after)) <= res:
                    self.read_fixed_end(secs(counted), secs(reset), float(remaining), res)
            if cls == OK:
                self.read_echo(secs(counted), float(remaining))
            self.read_top(float(remaining), cls == LIMITED)
            self.level(now, secs(counted), float(remaining))
            if reset is not None and cls == OK:
                self.read_end_drift(secs(now), secs(reset), secs(latency))
                self.read_period(now, secs(reset))
                self.learn_refill(now, secs(reset), float(remaining))
                self.read_stated_end(secs(sent), secs(reset))  # from the send: no sooner counted
                if remaining == 0:  # a fixed window's allowance read spent: empty to its stated end
                    self.hold_spent_window(now, sent, secs(reset))
        if cls == OK:
            th.errors = 0
            if remaining is not None and self.window is not None and secs(counted) > self.window[0]:
                self.win_successes += 1.0  # a token the refill gave, read after the window's first reading
            if not self.headers:  # blind to the count: climb by the probe, faster below the quota
                since = 0.0 if self.last_increase is None else secs(now - min(self.last_increase, now))
                self.last_increase = now
                own = n * self.x
                below = min(self.rate / own, BLIND_BELOW_MAX)
                self.set_rate(now, min((own + self.probe * below * below * since) / n, self.rate / n))
                self.probe = min(self.probe * math.exp(BLIND_ADAPT * BLIND_REFUSALS),
                                 self.rate * self.rate * BLIND_PROBE_MAX)
                self.in_a_row, self.blocked_at = 0, None
        elif cls == LIMITED:
            if self.window is not None:  # a request the level of a spent window cannot show
                self.win_refused += 1.0
            th.errors, period, left = 0, from_secs(1.0 / self.x), self.to_reset(secs(now))
            spent = (self.period * self.x * n >= 4.0 and retry_after is not None and left is not None
                     and self.near_reset(secs(retry_after) - left))  # a fixed window's reset
            d = self.last_decrease
            if not self.headers:  # blind to the count: the refused thread is one of n, cut to BLIND_CUT
                self.in_a_row = min(self.in_a_row + 1, U32)
                self.set_rate(now, self.x * math.exp(math.log(BLIND_CUT) / n))
                if self.blocked_at is None:  # once held for a blocked key, a refusal leaves the probe
                    self.probe = max(self.probe * math.exp(-BLIND_ADAPT * (1.0 - BLIND_REFUSALS)),
                                     self.rate * self.rate * BLIND_PROBE_MIN)
                self.last_increase = self.last_decrease = now
                self.decreases += 1
                if self.in_a_row >= 2:  # a blocked key: the whole process holds
                    k = BLOCKED_HOLD if self.blocked_at is None else (
                        BLOCKED_HOLD_AGAIN if sent >= self.blocked_at else None)  # sent before: nothing new
                    if k is not None:
                        self.blocked_at = now
                        self.hold_process(now, min(now + from_secs(min(k / self.x, self.period)), U64))
            elif not spent and (d is None or (sent >= d and now >= min(d + period, U64))):
                factor = self.c["decrease"]
                if self.sliding:  # one request per period off the process
                    factor = max(1.0 - 1.0 / max(n * self.x * self.period, 1.0), factor)
                elif self.headers and self.holds_crowd():
                    if self.updates == 0 and self.decreases == 0:
                        factor = min(n / self.swing(), factor)  # refused before any window, a crowd
                    else:
                        factor = math.exp(math.log(factor) / n)  # an n-th of a halving per refusal
                self.set_rate(now, self.x * factor)
                self.last_decrease, self.decreases, self.window, self.samples = now, self.decreases + 1, None, 0
            wait = 0
            if retry_after is not None:
                stretch = self.random() * self.c["retry_jitter"] if self.c["retry_jitter"] > 0.0 else 0.0
                wait = from_secs(secs(retry_after) + stretch * min(secs(retry_after), 1.0 / self.x))
            th.hold = min(now + wait, U64)
            if retry_after is not None and not spent:  # the key is surely empty, less its rounding
                self.hold_process(now, min(now + max(retry_after - self.c["reset_resolution"], 0), U64))
            elif retry_after is not None and left is not None:  # explained by the reset: all hold to it
                ra, res = secs(retry_after), secs(self.c["reset_resolution"])
                if ra > 4.0 * res:
                    self.hold_process(now, min(now + from_secs(max(ra - res, min(left, ra))), U64))
        else:  # a 503 or a transport error: this thread backs off, the rate stays
            base = secs(self.c["error_backoff"]) * 2.0 ** min(th.errors, 30)
            th.errors = min(th.errors + 1, U32)
            th.hold = min(now + from_secs(min(base, secs(self.c["error_backoff_max"]))), U64)
