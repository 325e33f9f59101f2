#!/usr/bin/env python3
"""Regenerate docs/real-limiters.md: throttle-sim's client algorithms against real, widely
deployed rate limiters on loopback, each configured as an API would configure it.

The limiters are the servers of tests/real/ (nginx's `limit_req` and HAProxy's stick table with a
configuration written per run, Flask-Limiter in tests/real/python/.venv, express-rate-limit and @fastify/rate-limit in
tests/real/node/), started here with realistic limits instead of the tests' short periods. For
each configuration:

- every algorithm `throttle-sim list` names that runs without shared state (those needing a
  Redis store and the bounds `oracle` and `independent` are left out) runs as 3 processes × 4
  threads of `throttle-sim client` for `--minutes`, each against a freshly started limiter (so
  every run starts from a fresh key), and its summary.json and requests.csv give the share of
  429s, the utilization, Jain's index over the processes' 2xx, over the whole run and after the
  first two periods of the limit;
- `fixed` runs about 22 % faster than the limit for three periods (at least 30 s), and
  `throttle-sim fit DIR --json` says what rule it sees in that trace;
- one 2xx and one 429 of a fresh instance are captured, status line and rate-limit fields.

Configurations run `--jobs` at a time (default 4), the runs of one configuration one after the
other. Before it starts, the script prints how long it expects to take.

    scripts/install_real_limiters.sh && cargo build --release
    python3 scripts/real_limiters.py                     # everything: about 4 hours
    python3 scripts/real_limiters.py --minutes 1 --algorithms fair-share,schneems,aimd
    python3 scripts/real_limiters.py --limiters nginx,flask-two-limits --out /tmp/page.md

Standard library only. The binary is target/release/throttle-sim (under $CARGO_TARGET_DIR when
that is set) unless `--binary` names another.
"""

import argparse
import concurrent.futures
import csv
import datetime
import functools
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(ROOT, "tests", "real", "node")
PYTHON_DIR = os.path.join(ROOT, "tests", "real", "python")
VENV_PYTHON = os.path.join(PYTHON_DIR, ".venv", "bin", "python")
DEFAULT_OUT = os.path.join(ROOT, "docs", "real-limiters.md")

# The fleet of every algorithm's run.
PROCESSES = 3
THREADS = 4
# The trace for fit: this many threads of `fixed`, together this much faster than the binding
# limit, for this many of its periods but never less than TRACE_FLOOR_S (fit wants a few dozen
# answers at least), each sleep stretched by a random 0 to TRACE_JITTER of itself.
TRACE_THREADS = 2
TRACE_AHEAD = 1.22
TRACE_PERIODS = 3
TRACE_FLOOR_S = 30.0
TRACE_JITTER = 0.2
# fit's limit and period count as the configured ones within this share of them.
FIT_TOLERANCE = 0.10
# Metrics "after two periods" count the requests sent from this many periods on.
SETTLE_PERIODS = 2
# The sort: runs with more 429s than this share go after all the others.
MAX_429 = 0.01
# How long a limiter may take to answer /ready, and how many ports to try it on.
START_TIMEOUT_S = 20.0
START_ATTEMPTS = 3
# Time a run takes beyond its duration (starting and stopping the limiter, the client's start
# and its summary and charts), for the estimate; measured on a 2-core machine.
RUN_OVERHEAD_S = 3.0
CONFIG_OVERHEAD_S = 5.0

# Algorithms not run, and why: these coordinate their processes through a shared store
# (`--store`, Redis), or are bounds that must be told the server's rule and every thread.
NEEDS_STORE = ("interval-lock", "window-queue", "shared-bucket", "aatb")
BOUNDS = ("oracle", "independent")


# ----------------------------------------------------------------------------------------
# The limiter configurations


class Limit:
    """`count` requests per `seconds`."""

    def __init__(self, count, seconds):
        self.count = count
        self.seconds = seconds

    @property
    def rate(self):
        return self.count / self.seconds

    def words(self):
        return f"{self.count} per {show_secs(self.seconds)}"


class Config:
    """One configuration of one real limiter.

    `limits` are the limits it applies at once (the slowest binds in the long run); `told` is
    what the client is told with --quota/--period where the answers state nothing; `fitted`
    is what fit should find, `(rule, limit, period s)` as fit --json names them, or None where
    the answers give it nothing to find a rule by; `capture_at_once` sends the capture's
    requests all at once (nginx without nodelay refuses only what overflows its queue);
    `rule_text` names the configured rule in words where `fitted` alone does not.
    """

    def __init__(self, name, family, title, settings, limits, launch, fitted, told=None,
                 capture_at_once=0, capture_most=None, rule_text=None, version=None):
        self.name = name
        self.family = family
        self.title = title
        self.settings = settings
        self.limits = limits
        self.launch = launch
        self.fitted = fitted
        self.told = told
        self.capture_at_once = capture_at_once
        self.capture_most = capture_most
        self.rule_text = rule_text
        # What a server that prints no line of versions is (nginx, HAProxy), asked of its binary.
        self.version = version

    @property
    def binding(self):
        return min(self.limits, key=lambda l: l.rate)

    @property
    def period(self):
        """The period of the binding limit: the settling time is two of it."""
        return self.binding.seconds

    def trace_seconds(self):
        return max(TRACE_PERIODS * self.period, TRACE_FLOOR_S)


def node_server(script, options):
    def launch(port, _workdir):
        argv = ["node", os.path.join(NODE_DIR, script), "--port", str(port)]
        for key, value in options:
            argv += [f"--{key}", str(value)]
        return argv, True
    return launch


def express(name, draft, legacy):
    legacy_text = "true" if legacy else "false"
    settings = (
        "```js\n"
        "app.use(rateLimit({\n"
        "  windowMs: 60_000,\n"
        "  limit: 100,\n"
        f"  standardHeaders: '{draft}',\n"
        f"  legacyHeaders: {legacy_text},\n"
        "  keyGenerator: () => 'token',  // one key: every client sends the same API token\n"
        "}));\n"
        "```\n\n"
        "The in-memory store: a key's window of 60 s opens with its first request. Server: "
        "[`tests/real/node/express_app.mjs`](../tests/real/node/express_app.mjs)."
    )
    title = f"express-rate-limit, 100 per 60 s, `standardHeaders: '{draft}'`"
    if legacy:
        title += ", `legacyHeaders: true`"
    return Config(
        name=name, family="express-rate-limit", title=title, settings=settings,
        limits=[Limit(100, 60)],
        launch=node_server("express_app.mjs", [
            ("limit", 100), ("window-ms", 60_000), ("standard-headers", draft),
            ("legacy-headers", legacy_text)]),
        fitted=("fixed-window", 100, 60),
    )


def fastify():
    settings = (
        "```js\n"
        "await app.register(rateLimit, {\n"
        "  max: 100,\n"
        "  timeWindow: 60_000,\n"
        "  keyGenerator: () => 'token',  // one key: every client sends the same API token\n"
        "});\n"
        "```\n\n"
        "The in-memory store: a key's window of 60 s opens with its first request. Server: "
        "[`tests/real/node/fastify_app.mjs`](../tests/real/node/fastify_app.mjs)."
    )
    return Config(
        name="fastify", family="@fastify/rate-limit",
        title="@fastify/rate-limit, 100 per 60 s", settings=settings,
        limits=[Limit(100, 60)],
        launch=node_server("fastify_app.mjs", [("max", 100), ("time-window-ms", 60_000)]),
        fitted=("fixed-window", 100, 60),
    )


FLASK_STRATEGIES = {
    "fixed-window": "a key's window opens with its first request after the last one ended",
    "moving-window": "a log of every request: at most the limit in any window's length",
    "sliding-window-counter": ("windows on the clock; the previous window's count, weighted by "
                               "its share still inside the sliding window, plus the current "
                               "one's"),
}


def flask(name, strategy, limits_text, limits, fitted, title, rule_text=None):
    def launch(port, _workdir):
        # -B: no bytecode written next to the app or into the environment.
        return [VENV_PYTHON, "-B", os.path.join(PYTHON_DIR, "flask_limiter_app.py"),
                "--port", str(port), "--strategy", strategy, "--limits", limits_text], True
    settings = (
        "```python\n"
        "Limiter(\n"
        "    key_func=lambda: \"token\",  # one key: every client sends the same API token\n"
        "    app=app,\n"
        f"    strategy=\"{strategy}\",\n"
        "    headers_enabled=True,\n"
        "    storage_uri=\"memory://\",\n"
        f"    default_limits=[\"{limits_text}\"],\n"
        ")\n"
        "```\n\n"
        f"The `{strategy}` strategy: {FLASK_STRATEGIES[strategy]}. Served by waitress with 16 "
        "threads: [`tests/real/python/flask_limiter_app.py`]"
        "(../tests/real/python/flask_limiter_app.py)."
    )
    if len(limits) > 1:
        settings += (" Both limits count every admitted request; the answers state the limit "
                     "of the shortest window until one is spent, then the one spent.")
    return Config(name=name, family="Flask-Limiter", title=title, settings=settings,
                  limits=limits, launch=launch, fitted=fitted, rule_text=rule_text)


def nginx(name, nodelay):
    def launch(port, workdir):
        html = os.path.join(workdir, "html")
        os.makedirs(html, exist_ok=True)
        with open(os.path.join(html, "index.html"), "w") as f:
            f.write("ok\n")
        conf = os.path.join(workdir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(port, workdir, nodelay))
        argv = [nginx_binary(), "-p", workdir, "-c", conf,
                "-e", os.path.join(workdir, "error.log")]
        # nginx does not watch its stdin: have the kernel kill it if this script dies.
        if shutil.which("setpriv"):
            argv = ["setpriv", "--pdeathsig", "KILL", "--"] + argv
        return argv, False
    how = ("answered at once while the burst lasts, refused after" if nodelay else
           "held in line and answered at the rate, refused only beyond a line of 10")
    settings = (
        "```nginx\n"
        "limit_req_zone $binary_remote_addr zone=api:1m rate=5r/s;\n"
        "limit_req_status 429;\n"
        f"location / {{ limit_req zone=api burst=10{' nodelay' if nodelay else ''}; }}\n"
        "```\n\n"
        f"Every client comes from 127.0.0.1, so all share one key. Requests beyond the rate are "
        f"{how}. nginx sends no rate-limit field, so every run is told the quota "
        "(`--quota 5 --period 1s`). The configuration is written per run as in "
        "[`tests/real/nginx.rs`](../tests/real/nginx.rs), in front of a static file."
    )
    title = ("nginx `limit_req`, 5r/s burst=10 nodelay" if nodelay else
             "nginx `limit_req`, 5r/s burst=10 (delaying)")
    return Config(
        name=name, family="nginx", title=title, settings=settings,
        limits=[Limit(5, 1)], launch=launch,
        # A bucket of burst + 1 that drains 5 a second: 11 per 2.2 s, if fit can tell.
        fitted=("bucket", 11, 2.2), told=Limit(5, 1),
        capture_at_once=0 if nodelay else 20, capture_most=40,
        rule_text="a bucket of 11 (the burst and one) drained at 5 a second: 11 per 2.2 s",
        version=lambda: nginx_version(),
    )


def nginx_conf(port, d, nodelay):
    nd = " nodelay" if nodelay else ""
    return f"""daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    limit_req_zone $binary_remote_addr zone=api:1m rate=5r/s;
    limit_req_status 429;
    server {{
        listen 127.0.0.1:{port};
        root {d}/html;
        location = /ready {{ return 204; }}
        location / {{ limit_req zone=api burst=10{nd}; }}
    }}
}}
"""


def nginx_binary():
    return shutil.which("nginx") or "/usr/sbin/nginx"


HAPROXY_LIMIT = Limit(50, 10)


def haproxy():
    def launch(port, workdir):
        conf = os.path.join(workdir, "haproxy.cfg")
        with open(conf, "w") as f:
            f.write(haproxy_conf(port, HAPROXY_LIMIT))
        argv = [haproxy_binary(), "-db", "-f", conf]
        if shutil.which("setpriv"):
            argv = ["setpriv", "--pdeathsig", "KILL", "--"] + argv
        return argv, False
    settings = (
        "```haproxy\n"
        + haproxy_rules(HAPROXY_LIMIT)
        + "```\n\n"
        "Every request is tracked under one string, as if every client sent the same API token. "
        "`http_req_rate` is a sliding-window counter whose windows follow on from the key's "
        "first request, and the request is tracked before `deny` reads the rate, so refused "
        "requests count too: a client that keeps sending while refused keeps itself out. HAProxy "
        "sends no rate-limit field, so every run is told the quota (`--quota 50 --period 10s`). "
        "The configuration is written per run as in [`tests/real/haproxy.rs`]"
        "(../tests/real/haproxy.rs); the proxy answers the requests itself."
    )
    return Config(
        name="haproxy", family="HAProxy",
        title="HAProxy stick table, `http_req_rate(10s)`, 429 above 50", settings=settings,
        limits=[HAPROXY_LIMIT], launch=launch,
        fitted=("sliding-window-counter", 50, 10), told=HAPROXY_LIMIT,
        rule_text=("a sliding-window counter of 50 per 10 s whose windows follow on from the "
                   "first request, refused requests counted"),
        version=haproxy_version,
    )


def haproxy_rules(limit):
    return (
        f"stick-table type string len 8 size 16 expire {4 * limit.seconds:g}s "
        f"store http_req_rate({limit.seconds:g}s)\n"
        "http-request track-sc0 str(token)\n"
        f"http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt {limit.count} }}\n"
        "http-request return status 200 content-type text/plain string ok\n"
    )


def haproxy_conf(port, limit):
    rules = haproxy_rules(limit).rstrip("\n").replace("\n", "\n    ")
    return f"""global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend api
    bind 127.0.0.1:{port}
    http-request return status 204 if {{ path /ready }}
    {rules}
"""


def haproxy_binary():
    return shutil.which("haproxy") or "/usr/sbin/haproxy"


@functools.lru_cache(maxsize=None)
def haproxy_version():
    """`HAProxy 2.6.12`, from the first line `haproxy -v` prints."""
    def read(said):
        words = said.split()
        return f"HAProxy {words[2]}" if len(words) > 2 else "HAProxy"
    return asked_version("HAProxy", haproxy_binary(), read)


def asked_version(name, binary, read):
    """What `binary -v` says of its version, as `read` words it (from stderr, else stdout);
    `name` where the program does not run."""
    try:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True)
    except OSError:
        return name
    return read((out.stderr or out.stdout).strip())


CONFIGS = [
    express("express-draft-6", "draft-6", False),
    express("express-draft-7", "draft-7", False),
    express("express-draft-8-legacy", "draft-8", True),
    fastify(),
    flask("flask-fixed-window", "fixed-window", "30 per minute", [Limit(30, 60)],
          ("fixed-window", 30, 60), "Flask-Limiter, fixed window, 30 per minute"),
    flask("flask-moving-window", "moving-window", "30 per minute", [Limit(30, 60)],
          ("sliding-window", 30, 60), "Flask-Limiter, moving window, 30 per minute"),
    flask("flask-moving-window-1s", "moving-window", "10 per second", [Limit(10, 1)],
          ("sliding-window", 10, 1), "Flask-Limiter, moving window, 10 per second"),
    flask("flask-sliding-window-counter", "sliding-window-counter", "30 per minute",
          [Limit(30, 60)], ("sliding-window-counter", 30, 60),
          "Flask-Limiter, sliding-window counter, 30 per minute"),
    flask("flask-two-limits", "fixed-window", "2 per second; 30 per minute",
          [Limit(2, 1), Limit(30, 60)], ("fixed-window", 30, 60),
          "Flask-Limiter, two limits at once: 2 per second; 30 per minute (fixed windows)",
          rule_text="two fixed windows at once, 2 per 1 s and 30 per 60 s (the second binds "
                    "in the long run)"),
    nginx("nginx-nodelay", True),
    nginx("nginx-delay", False),
    haproxy(),
]


# ----------------------------------------------------------------------------------------
# Child processes


class Stopping(Exception):
    """The run was interrupted."""


STOP = threading.Event()
CHILDREN = set()
CHILDREN_LOCK = threading.Lock()


def spawn(argv, **kwargs):
    if STOP.is_set():
        raise Stopping()
    proc = subprocess.Popen(argv, **kwargs)
    with CHILDREN_LOCK:
        CHILDREN.add(proc)
    return proc


def reap(proc, grace=5.0):
    """End `proc` (SIGTERM, then SIGKILL after `grace` seconds) and forget it."""
    if proc.poll() is None:
        try:
            proc.terminate()
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except ProcessLookupError:
            pass
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()
    with CHILDREN_LOCK:
        CHILDREN.discard(proc)


def kill_all_children():
    with CHILDREN_LOCK:
        procs = list(CHILDREN)
    for proc in procs:
        if proc.poll() is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout):
    """One GET on a fresh connection: (status line, status, [(name, value)]) of its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                  "Connection: close\r\n\r\n".encode())
        # No half-close: nginx takes the end of a request's stream for a client gone away and
        # drops a request it is delaying.
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    head = raw.decode("latin-1").split("\r\n\r\n", 1)[0]
    lines = head.split("\r\n")
    status_line = lines[0]
    status = int(status_line.split(" ")[1])
    headers = []
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers.append((name, value.strip()))
    return status_line, status, headers


class Limiter:
    """A limiter of `config` running on 127.0.0.1:port, in its own folder."""

    def __init__(self, config, workdir):
        self.config = config
        self.dir = tempfile.mkdtemp(prefix="limiter-", dir=workdir)
        self.proc = None
        self.port = None
        self.versions = ""
        failures = []
        for _ in range(START_ATTEMPTS):
            port = free_port()
            why = self._start(port)
            if why is None:
                self.port = port
                return
            failures.append(f"on port {port}: {why}")
        raise RuntimeError(f"{config.name} did not start:\n" + "\n".join(failures))

    def _start(self, port):
        argv, announces = self.config.launch(port, self.dir)
        stderr = open(os.path.join(self.dir, "stderr.log"), "wb")
        try:
            proc = spawn(argv, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE if announces else subprocess.DEVNULL,
                         stderr=stderr, cwd=ROOT)
        finally:
            stderr.close()
        first_line = []
        reader = None
        if announces:
            # The Python and Node.js servers print one JSON line once listening, and exit when
            # their stdin closes (kept open here until reap).
            reader = threading.Thread(target=lambda: first_line.append(proc.stdout.readline()),
                                      daemon=True)
            reader.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._ready(port):
            if proc.poll() is not None or time.monotonic() > deadline or STOP.is_set():
                gone = proc.poll()
                reap(proc)
                if STOP.is_set():
                    raise Stopping()
                said = self.stderr()
                what = (f"exited ({gone}) before answering" if gone is not None
                        else f"no answer in {START_TIMEOUT_S:.0f} s")
                return f"{what}; stderr: {said}"
            time.sleep(0.05)
        if reader is not None:
            reader.join(5)
            try:
                versions = json.loads(first_line[0])["versions"]
                self.versions = ", ".join(f"{k} {v}" for k, v in versions.items())
            except (IndexError, ValueError, KeyError, TypeError):
                reap(proc)
                return f"no line of versions on stdout; stderr: {self.stderr()}"
        else:
            self.versions = self.config.version() if self.config.version else ""
        self.proc = proc
        return None

    @staticmethod
    def _ready(port):
        try:
            return 200 <= http_get(port, "/ready", 2.0)[1] < 300
        except (OSError, ValueError, IndexError):
            return False

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"

    def stderr(self):
        try:
            with open(os.path.join(self.dir, "stderr.log"), errors="replace") as f:
                return f.read().strip()[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            reap(self.proc)
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stop()


@functools.lru_cache(maxsize=None)
def nginx_version():
    return asked_version("nginx", nginx_binary(),
                         lambda said: "nginx " + said.rsplit("/", 1)[-1] if "/" in said else said)


def run_to_end(argv, limit_s, out_path, err_path):
    """Run argv, its output into files; (exit status, stdout, stderr). Killed past limit_s."""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = spawn(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=ROOT)
        try:
            code = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            reap(proc, grace=2.0)
            code = None
        finally:
            with CHILDREN_LOCK:
                CHILDREN.discard(proc)
    if STOP.is_set():
        raise Stopping()
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    return code, stdout, stderr


# ----------------------------------------------------------------------------------------
# One configuration's runs


def client_argv(binary, url, algorithm, seconds, out, config, extra=()):
    argv = [binary, "client", "--target", url, "--algorithm", algorithm,
            "--duration", f"{seconds:g}s", "--out", out, "-q", "--log-requests"]
    argv += list(extra)
    if config.told is not None:
        argv += ["--quota", str(config.told.count), "--period", show_secs(config.told.seconds)]
    return argv


def jain(xs):
    total = sum(xs)
    squares = sum(x * x for x in xs)
    if squares <= 0:
        return None
    return total * total / (len(xs) * squares)


def measure(dir_, config):
    """The numbers of one run: from summary.json and requests.csv."""
    with open(os.path.join(dir_, "summary.json")) as f:
        s = json.load(f)
    duration = float(s.get("duration_s") or 0.0)
    requests, ok, limited = s.get("requests", 0), s.get("ok", 0), s.get("limited", 0)
    errors, dropped = s.get("errors", 0), s.get("timed_out", 0)
    rate = config.binding.rate
    # The client's utilization when it knows the quota (stated by a policy, or --quota);
    # else 2xx over the configured binding limit's rate times the run, capped at 1 as the
    # client caps its own.
    if (s.get("capacity") or 0) > 0 and s.get("utilization") is not None:
        utilization, source = float(s["utilization"]), "client"
    else:
        utilization = min(1.0, ok / (rate * duration)) if duration > 0 else None
        source = "configured"
    settle = SETTLE_PERIODS * config.period
    late = {"requests": 0, "ok": 0, "limited": 0}
    ok_by_process = [0] * PROCESSES
    late_ok_by_process = [0] * PROCESSES
    failures = {}
    with open(os.path.join(dir_, "requests.csv"), newline="") as f:
        rows = csv.reader(f)
        header = next(rows)
        t_i, p_i, s_i = header.index("t"), header.index("process"), header.index("status")
        e_i = header.index("error")
        for row in rows:
            status, process = row[s_i], int(row[p_i])
            is_ok = status == "ok"
            if not is_ok and status != "limited":
                kind = row[e_i] or status
                failures[kind] = failures.get(kind, 0) + 1
            if is_ok and process < PROCESSES:
                ok_by_process[process] += 1
            if float(row[t_i]) >= settle:
                late["requests"] += 1
                if is_ok:
                    late["ok"] += 1
                    if process < PROCESSES:
                        late_ok_by_process[process] += 1
                elif status == "limited":
                    late["limited"] += 1
    late_span = duration - settle
    after = None
    if late_span > 0:
        after = {
            "ratio_429": late["limited"] / late["requests"] if late["requests"] else None,
            "utilization": min(1.0, late["ok"] / (rate * late_span)),
            "fairness": jain(late_ok_by_process),
        }
    return {
        "requests": requests, "ok": ok, "limited": limited, "errors": errors,
        "dropped": dropped, "duration": duration,
        "ratio_429": limited / requests if requests else None,
        "utilization": utilization, "utilization_source": source,
        "fairness": jain(ok_by_process),
        "after": after,
        "failures": failures,
    }


def capture(config, workdir):
    """One 2xx and one 429 of a fresh instance: (versions, [(status line, [fields])])."""
    with Limiter(config, workdir) as limiter:
        answers = []
        if config.capture_at_once:
            got = [None] * config.capture_at_once

            def one(i):
                try:
                    got[i] = http_get(limiter.port, "/", 30.0)
                except (OSError, ValueError, IndexError):
                    pass
            threads = [threading.Thread(target=one, args=(i,))
                       for i in range(config.capture_at_once)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            answers = [a for a in got if a is not None]
        else:
            most = config.capture_most or (config.binding.count + 10)
            for _ in range(most):
                a = http_get(limiter.port, "/", 30.0)
                answers.append(a)
                if a[1] == 429:
                    break
        kept = []
        for want in (lambda s: 200 <= s < 300, lambda s: s == 429):
            for status_line, status, headers in answers:
                if want(status):
                    fields = [(n, v) for n, v in headers if kept_field(n)]
                    kept.append((status_line, fields))
                    break
        return limiter.versions, kept


def kept_field(name):
    n = name.lower()
    return "ratelimit" in n or n.startswith("retry-after") or n == "date"


def record_and_fit(binary, config, workdir):
    """`fixed` about TRACE_AHEAD times the binding limit, then fit --json: its `fit` object."""
    seconds = config.trace_seconds()
    gap = TRACE_THREADS / (TRACE_AHEAD * config.binding.rate)
    sleep_ms = 1000 * gap / (1 + TRACE_JITTER / 2)
    out = os.path.join(workdir, f"{config.name}-fit-trace")
    try:
        with Limiter(config, workdir) as limiter:
            argv = [binary, "client", "--target", limiter.url, "--algorithm", "fixed",
                    "--threads", str(TRACE_THREADS), "--set",
                    f"clients.*.sleep={sleep_ms:.0f}ms", "--set",
                    f"clients.*.jitter={TRACE_JITTER}", "--duration", f"{seconds:g}s",
                    "--out", out, "-q", "--log-requests"]
            code, _, err = run_to_end(argv, seconds + 60, out + ".stdout", out + ".stderr")
    except (OSError, RuntimeError) as e:
        return {"error": str(e).splitlines()[0]}
    if code != 0:
        return {"error": f"the trace's client {exited(code)}: {last_line(err)}"}
    code, said, err = run_to_end([binary, "fit", out, "--json"], 120,
                                 out + ".fit.stdout", out + ".fit.stderr")
    # fit exits 5 when it cannot tell the rule, its verdict printed all the same.
    if code not in (0, FIT_CANNOT_TELL):
        return {"error": f"fit {exited(code)}: {last_line(err)}"}
    try:
        fit = json.loads(said)["fit"]
    except (ValueError, KeyError) as e:
        return {"error": f"fit --json printed no fit ({e})"}
    fit["trace_seconds"] = seconds
    fit["trace_sleep_ms"] = round(sleep_ms)
    return fit


# fit's exit code when the trace cannot tell the rule (src/exit.rs, CANNOT_TELL).
FIT_CANNOT_TELL = 5


def exited(code):
    return "did not end in time" if code is None else f"exited {code}"


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(nothing on stderr)"


def run_config(binary, config, algorithms, seconds, workdir, keep, log):
    """Every run of one configuration, one after the other."""
    began = time.monotonic()
    result = {"config": config, "runs": {}, "versions": "", "answers": [], "fit": None}
    try:
        result["versions"], result["answers"] = capture(config, workdir)
    except (OSError, RuntimeError, ValueError, IndexError) as e:
        result["capture_error"] = str(e)
    log(f"{config.name}: captured its answers")
    result["fit"] = record_and_fit(binary, config, workdir)
    log(f"{config.name}: fit: {fit_words(config, result['fit'])[0]}")
    for algorithm in algorithms:
        out = os.path.join(workdir, f"{config.name}-{algorithm}")
        try:
            with Limiter(config, workdir) as limiter:
                if not result["versions"]:
                    result["versions"] = limiter.versions
                argv = client_argv(binary, limiter.url, algorithm, seconds, out, config,
                                   ["--processes", str(PROCESSES), "--threads", str(THREADS)])
                code, _, err = run_to_end(argv, seconds + 120, out + ".stdout", out + ".stderr")
            if code != 0:
                run = {"error": f"client {exited(code)}: {last_line(err)}"}
            else:
                run = measure(out, config)
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            run = {"error": str(e).splitlines()[0]}
        result["runs"][algorithm] = run
        log(f"{config.name}: {algorithm}: {run_words(run)}")
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
    result["elapsed"] = time.monotonic() - began
    return result


def run_words(run):
    if "error" in run:
        return "failed: " + run["error"]
    return (f"{run['requests']} requests, 429s {pct(run['ratio_429'])}, utilization "
            f"{num(run['utilization'])}, fairness {num(run['fairness'])}")


# ----------------------------------------------------------------------------------------
# Estimates


def config_seconds(config, n_algorithms, seconds):
    return (n_algorithms * (seconds + RUN_OVERHEAD_S) + config.trace_seconds()
            + RUN_OVERHEAD_S + CONFIG_OVERHEAD_S)


def estimate(configs, n_algorithms, seconds, jobs):
    """Seconds of real time: the configurations handed to `jobs` workers in order."""
    workers = [0.0] * max(1, jobs)
    for c in configs:
        i = workers.index(min(workers))
        workers[i] += config_seconds(c, n_algorithms, seconds)
    return max(workers)


# ----------------------------------------------------------------------------------------
# Words and numbers


def show_secs(s):
    """A duration as throttle-sim writes one: 1s, 2.2s, 1m."""
    if s >= 60 and s % 60 == 0:
        return f"{s / 60:g}m"
    return f"{s:g}s"


def show_span(s):
    """A settling time in words: 2 s, 2 min."""
    if s >= 60 and s % 60 == 0:
        return f"{s / 60:g} min"
    return f"{s:g} s"


def show_time(s):
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60:02d} s" if s % 60 else "")
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def pct(x):
    return "–" if x is None else f"{100 * x:.2f} %"


def num(x):
    return "–" if x is None else f"{x:.3f}"


def fit_words(config, fit):
    """(the verdict in one line, evidence lines, whether it matches the configuration)."""
    if fit is None:
        return "not run", [], None
    if "error" in fit:
        return "failed: " + fit["error"], [], None
    evidence = [f"the answers sent {fit.get('sent', '?')}; the sim speaks it as its "
                f"`{fit.get('dialect', '?')}` dialect"] + list(fit.get("evidence", []))
    rule = fit.get("rule")
    if rule is None:
        why = fit.get("cannot_tell", "(no reason given)")
        return f"cannot tell the rule: {why}", evidence, None
    kind = rule.get("rule", "?")
    limit = rule.get("size", rule.get("limit"))
    period = rule.get("period", rule.get("window"))
    name = {
        "bucket": "a bucket (GCRA or token bucket)",
        "fixed-window": ("a fixed window started by the first request after the last"
                         if rule.get("start") == "first-request" else "a fixed window"),
        "sliding-window": "a sliding window",
        "sliding-window-counter": "a sliding-window counter",
    }.get(kind, kind)
    cost = {True: "cost a token", False: "free"}.get(fit.get("refused_cost"),
                                                        "cost a token or not (cannot tell)")
    verdict = (f"{name} of {limit:g} per {period:.3g} s (confidence "
               f"{fit.get('confidence', 0):.2f}), refused requests {cost}")
    want_rule, want_limit, want_period = config.fitted
    close = (lambda got, want: got is not None and abs(got - want) <= FIT_TOLERANCE * want)
    matches = kind == want_rule and close(limit, want_limit) and close(period, want_period)
    return verdict, evidence, matches


def fitted_words(config):
    if config.rule_text:
        return config.rule_text
    rule, limit, period = config.fitted
    name = {"bucket": "a bucket", "fixed-window": "a fixed window",
            "sliding-window": "a sliding window",
            "sliding-window-counter": "a sliding-window counter"}[rule]
    return f"{name} of {limit:g} per {period:g} s"


def sort_key(item):
    _, run = item
    if "error" in run:
        return (2, 0.0)
    over = run["ratio_429"] is None or run["ratio_429"] > MAX_429
    score = min(1.0, run["utilization"] or 0.0) * (run["fairness"] or 0.0)
    return (1 if over else 0, -score)


SORT_RULE = (f"runs with more than {100 * MAX_429:g} % 429s after all the others, then by "
             "utilization × fairness, highest first (whole run).")


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        cpu = platform.processor() or cpu
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    memory = f", {int(line.split()[1]) / 1024 / 1024:.0f} GB of memory"
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()} {platform.release()}"


def git_commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def binary_version(binary):
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True)
        return out.stdout.strip() or "throttle-sim"
    except OSError:
        return "throttle-sim"


def anchor(title):
    """GitHub's anchor of a heading."""
    out = []
    for ch in title.lower():
        if ch.isalnum() or ch in "-_":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def page(results, args, algorithms, descriptions, skipped, elapsed, command, commit):
    seconds = args.minutes * 60
    all_configs = len(CONFIGS)
    full = estimate(CONFIGS, len(algorithms_all(descriptions)), 300, 4)
    now = datetime.datetime.now(datetime.timezone.utc)
    lines = []
    w = lines.append
    w("<!-- Generated by scripts/real_limiters.py: do not edit by hand; run the script again "
      "(see below). -->")
    w("")
    w("# throttle-sim against real rate limiters")
    w("")
    w("How throttle-sim's client algorithms fare against rate limiters that real APIs run, "
      "each started on loopback with a configuration an API would use: express-rate-limit, "
      "@fastify/rate-limit, Flask-Limiter, nginx's `limit_req` and HAProxy's stick table (the "
      "servers of [`tests/real/`](../tests/real/), which hold `fair-share` to its targets against the same "
      "limiters with short periods). Every client shares one key, as processes sharing one API "
      "token do. For each configuration: each algorithm as "
      f"{PROCESSES} processes × {THREADS} threads of `throttle-sim client`, each run against a "
      "freshly started limiter; a trace of `fixed` about 22 % faster than the limit, and what "
      "`throttle-sim fit` makes of it; and what the limiter's answers look like.")
    w("")
    w("Regenerate it with the limiters installed and a release build:")
    w("")
    w("    scripts/install_real_limiters.sh && cargo build --release")
    w("    python3 scripts/real_limiters.py")
    w("")
    w(f"With the defaults (every algorithm below, {all_configs} configurations, 5 minutes a "
      f"run, 4 configurations at once) that takes about {show_time(full)}. "
      "`--minutes`, `--algorithms a,b`, `--limiters name,…` (the names below, or a family: "
      "`express`, `fastify`, `flask`, `nginx`, `haproxy`), `--jobs N` and `--out FILE` change "
      "it; "
      "`python3 scripts/real_limiters.py --help` says more.")
    w("")
    w(f"**This page** was made by `{command}` ({len(results)} configurations, "
      f"{len(algorithms)} algorithms, {args.minutes:g} minute{'s' if args.minutes != 1 else ''} "
      f"a run, {args.jobs} configuration{'s' if args.jobs != 1 else ''} at once) in "
      f"{show_time(elapsed)}, finished {now:%Y-%m-%d %H:%M} UTC, on {machine()}, with "
      f"{binary_version(args.binary)}"
      + (f" at commit `{commit}`" if commit else "") + ".")
    if args.minutes * 60 <= SETTLE_PERIODS * 60:
        w("")
        w(f"With runs of {args.minutes:g} minute{'s' if args.minutes != 1 else ''}, the "
          "columns after two periods are empty for limits of a minute: the run ends before "
          "two of their periods are over.")
    w("")
    if "none" in algorithms and args.jobs > 1:
        w("The configurations run side by side, each its runs one after the other; `none` "
          "sends as fast as the answers come (thousands a second, nearly all refused) and takes "
          "much of the machine while it runs, beside the other configurations' runs.")
        w("")
    if skipped:
        w("Not run: " + "; ".join(skipped) + ".")
        w("")
    w("## How to read the tables")
    w("")
    w(f"- **429s**: the share of requests refused with 429. **utilization**: 2xx over the most "
      "the limit allows over the run (the limit's rate × the run's length), as the client "
      "reports it from the policy the answers state or from `--quota`/`--period`, else "
      "computed the same way from the configured limit (the binding one, where there are "
      "two); capped at 1, as the client caps it (a bucket's burst or a window opened at the "
      "first request lets through a little more than the rate alone). **fairness**: Jain's "
      "index over the three processes' 2xx (1 when equal, 1/3 when one got them all).")
    w(f"- **after 2 periods**: the same over the requests sent after the first two periods of "
      "the binding limit (once the clients have had time to settle), where the run lasted "
      "longer than that.")
    w("- **requests**: all the run sent; in brackets, those answered neither 2xx nor 429, by "
      "the client's name for what became of them (`timed_out`: no answer within 10 s or "
      "before the run ended, as a request held in nginx's line can be; `refused`, `reset`: the "
      "connection).")
    w(f"- **Sorted**: {SORT_RULE}")
    w("")
    w("## Summary")
    w("")
    w("| limiter | first in its table | 429s | utilization | fairness | fit |")
    w("| --- | --- | ---: | ---: | ---: | --- |")
    for r in results:
        c = r["config"]
        ranked = sorted(r["runs"].items(), key=sort_key)
        verdict, _, matches = fit_words(c, r["fit"])
        fit_short = ("the configured rule" if matches else
                     "cannot tell" if verdict.startswith("cannot tell") else
                     "failed" if verdict.startswith("failed") else "another rule")
        if ranked and "error" not in ranked[0][1]:
            a, run = ranked[0]
            w(f"| [{c.title}](#{anchor(c.title)}) | `{a}` | {pct(run['ratio_429'])} | "
              f"{num(run['utilization'])} | {num(run['fairness'])} | {fit_short} |")
        else:
            w(f"| [{c.title}](#{anchor(c.title)}) | – | – | – | – | {fit_short} |")
    w("")
    for r in results:
        lines.extend(config_section(r, seconds))
    w("## The algorithms")
    w("")
    w("As `throttle-sim list` describes them, each with its default parameters:")
    w("")
    for a in algorithms:
        w(f"- `{a}`: {descriptions.get(a, '')}")
    w("")
    return "\n".join(lines)


def config_section(r, seconds):
    c = r["config"]
    out = []
    w = out.append
    w(f"## {c.title}")
    w("")
    if r["versions"]:
        w(f"{r['versions']}; `--limiters {c.name}`.")
        w("")
    w(c.settings)
    w("")
    w("### Its answers")
    w("")
    if r.get("capture_error"):
        w(f"Not captured: {r['capture_error']}")
    elif not r["answers"]:
        w("Not captured: no 2xx or 429 came back.")
    else:
        w("A 2xx and a 429 of a fresh instance, each its status line and rate-limit fields "
          "(`Retry-After` and `Date` included, every other field left out):")
        w("")
        w("```http")
        for i, (status_line, fields) in enumerate(r["answers"]):
            if i:
                w("")
            w(status_line)
            for name, value in fields:
                w(f"{name}: {value}")
        w("```")
    w("")
    w("### What fit said")
    w("")
    fit = r["fit"]
    verdict, evidence, matches = fit_words(c, fit)
    if fit and "error" not in fit:
        w(f"Of {fit.get('span', 0):.1f} s of `fixed`, {TRACE_THREADS} threads each sleeping "
          f"{fit['trace_sleep_ms']} ms (stretched by up to {TRACE_JITTER:g} of it), about "
          f"{(TRACE_AHEAD - 1) * 100:.0f} % faster than {c.binding.words()}:")
    w("")
    w(f"> {verdict}")
    w("")
    for e in evidence:
        w(f"- {e}")
    if evidence:
        w("")
    notes = []
    if matches is True:
        notes.append(f"That is the configured rule, {fitted_words(c)}, within "
                     f"{100 * FIT_TOLERANCE:.0f} %.")
    elif fit and "error" not in fit:
        notes.append(f"The configured rule: {fitted_words(c)}.")
    if c.told is not None and verdict.startswith("cannot tell"):
        notes.append(f"{c.family} states nothing in its answers, so only the pattern of "
                     "429s can show the rule.")
    if fit and "error" not in fit and any(e.endswith(" and 0 429") for e in
                                            fit.get("evidence", [])):
        notes.append("The trace got no 429: each of its threads waits for its answer before "
                     "the next request, and a limiter that holds requests beyond the rate in "
                     "a line (nginx without `nodelay`) slows them to the rate instead of "
                     "refusing them.")
    if notes:
        w(" ".join(notes))
        w("")
    w(f"### The algorithms, {PROCESSES} × {THREADS} for {show_time(seconds)} each")
    w("")
    sources = {run.get("utilization_source") for run in r["runs"].values() if "error" not in run}
    if sources == {"configured"}:
        w(f"The client knew no quota here (the answers state no window), so utilization is "
          f"computed from the configured {c.binding.words()}.")
        w("")
    elif sources == {"client"} and c.told is not None:
        w(f"Utilization as the client reports it against `--quota {c.told.count} --period "
          f"{show_secs(c.told.seconds)}`.")
        w("")
    elif sources == {"client"}:
        w("Utilization as the client reports it against the policy the answers state.")
        w("")
    elif len(sources) > 1:
        w("Utilization as the client reports it where it knew the quota, else computed from "
          f"the configured {c.binding.words()}.")
        w("")
    settle = SETTLE_PERIODS * c.period
    after = f"after {show_span(settle)}"
    w(f"| algorithm | requests | 2xx | 429s | utilization | fairness | 429s {after} "
      f"| utilization {after} | fairness {after} |")
    w("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for a, run in sorted(r["runs"].items(), key=sort_key):
        if "error" in run:
            w(f"| `{a}` | failed: {run['error'].replace('|', '/')} | | | | | | | |")
            continue
        after = run["after"] or {}
        extra = ""
        if run["failures"]:
            extra = " (" + ", ".join(f"{n} {kind}" for kind, n in
                                     sorted(run["failures"].items())) + ")"
        w(f"| `{a}` | {run['requests']}{extra} | {run['ok']} | {pct(run['ratio_429'])} | "
          f"{num(run['utilization'])} | {num(run['fairness'])} | "
          f"{pct(after.get('ratio_429'))} | {num(after.get('utilization'))} | "
          f"{num(after.get('fairness'))} |")
    w("")
    w(f"All of this configuration's runs took {show_time(r.get('elapsed', 0))}.")
    w("")
    return out


def algorithms_all(descriptions):
    return [a for a in descriptions if a not in NEEDS_STORE and a not in BOUNDS]


# ----------------------------------------------------------------------------------------
# Main


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="limiters: " + ", ".join(c.name for c in CONFIGS)
        + " (or a family: express, fastify, flask, nginx, haproxy)")
    default_bin = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")),
                               "release", "throttle-sim")
    parser.add_argument("--minutes", type=float, default=5.0,
                        help="how long each algorithm's run lasts (default 5)")
    parser.add_argument("--algorithms", default="",
                        help="a,b,c: the algorithms to run (default every one that runs "
                             "without shared state and is not a bound)")
    parser.add_argument("--limiters", default="",
                        help="a,b: the configurations to run, by name or family (default all)")
    parser.add_argument("--jobs", type=int, default=4,
                        help="configurations run at once (default 4); the runs of one "
                             "configuration go one after the other")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help="the page to write (default docs/real-limiters.md)")
    parser.add_argument("--binary", default=default_bin,
                        help="throttle-sim (default target/release/throttle-sim, under "
                             "$CARGO_TARGET_DIR when set; cargo build --release)")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep every run's results folder in DIR (default: a temporary "
                             "folder, removed at the end)")
    args = parser.parse_args()
    if args.minutes <= 0:
        parser.error("--minutes must be more than 0")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return parser, args


def shown_command(args):
    """The command that makes this page again with these settings (the binary left out)."""
    argv = ["python3", "scripts/real_limiters.py"]
    if args.minutes != 5:
        argv += ["--minutes", f"{args.minutes:g}"]
    if args.algorithms:
        argv += ["--algorithms", args.algorithms]
    if args.limiters:
        argv += ["--limiters", args.limiters]
    if args.jobs != 4:
        argv += ["--jobs", str(args.jobs)]
    if os.path.abspath(args.out) != DEFAULT_OUT:
        argv += ["--out", args.out]
    return shlex.join(argv)


def listed_algorithms(binary):
    out = subprocess.run([binary, "list", "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{binary} list --json failed: {out.stderr.strip()}")
    return {a["name"]: a.get("description", "") for a in json.loads(out.stdout)["algorithms"]}


def choose_configs(parser, spec):
    if not spec:
        return list(CONFIGS)
    chosen = []
    for name in [n.strip() for n in spec.split(",") if n.strip()]:
        # A configuration's own name, else a family: the names that start with it.
        found = ([c for c in CONFIGS if c.name == name]
                 or [c for c in CONFIGS if c.name.startswith(name + "-")])
        if not found:
            parser.error(f"--limiters: no configuration {name!r}; the names: "
                         + ", ".join(c.name for c in CONFIGS))
        chosen += [c for c in found if c not in chosen]
    return [c for c in CONFIGS if c in chosen]


def check_installed(configs):
    problems = []
    families = {c.family for c in configs}
    if "Flask-Limiter" in families and not os.access(VENV_PYTHON, os.X_OK):
        problems.append(f"Flask-Limiter: no {VENV_PYTHON}")
    if families & {"express-rate-limit", "@fastify/rate-limit"}:
        if not shutil.which("node"):
            problems.append("node is not on the PATH")
        elif not os.path.isdir(os.path.join(NODE_DIR, "node_modules")):
            problems.append(f"no {os.path.join(NODE_DIR, 'node_modules')}")
    if "nginx" in families and not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")):
        problems.append("nginx is not installed")
    if "HAProxy" in families and not (shutil.which("haproxy")
                                      or os.path.exists("/usr/sbin/haproxy")):
        problems.append("haproxy is not installed")
    if problems:
        sys.exit("missing: " + "; ".join(problems)
                 + "\nrun scripts/install_real_limiters.sh first")


def main():
    parser, args = parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"{args.binary} is not there: cargo build --release (or --binary PATH)")
    descriptions = listed_algorithms(args.binary)
    runnable = algorithms_all(descriptions)
    if args.algorithms:
        algorithms = [a.strip() for a in args.algorithms.split(",") if a.strip()]
        for a in algorithms:
            if a not in descriptions:
                parser.error(f"--algorithms: throttle-sim list names no {a!r}")
            if a not in runnable:
                parser.error(f"--algorithms: {a} needs a shared store or is a bound; "
                             "this page runs neither")
    else:
        algorithms = runnable
    configs = choose_configs(parser, args.limiters)
    check_installed(configs)
    skipped = []
    store = [a for a in NEEDS_STORE if a in descriptions]
    bounds = [a for a in BOUNDS if a in descriptions]
    if store:
        skipped.append(", ".join(f"`{a}`" for a in store)
                       + " (their processes coordinate through a shared Redis store, `--store`)")
    if bounds:
        skipped.append(", ".join(f"`{a}`" for a in bounds)
                       + " (bounds that must be told the server's rule and every thread, "
                         "which a real server does not tell)")
    seconds = args.minutes * 60
    expected = estimate(configs, len(algorithms), seconds, args.jobs)
    print(f"{len(configs)} configurations × {len(algorithms)} algorithms, "
          f"{show_time(seconds)} a run, {args.jobs} at once: about {show_time(expected)}",
          file=sys.stderr)

    workdir = args.keep or tempfile.mkdtemp(prefix="real-limiters-")
    os.makedirs(workdir, exist_ok=True)
    log_lock = threading.Lock()
    # The commit the runs start from: the tree may move on while they run.
    commit = git_commit()
    began = time.monotonic()

    def log(message):
        with log_lock:
            print(f"[{show_time(time.monotonic() - began):>12}] {message}", file=sys.stderr,
                  flush=True)

    def stop(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    results = {}
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    try:
        futures = {pool.submit(run_config, args.binary, c, algorithms, seconds, workdir,
                               bool(args.keep), log): c for c in configs}
        pending = set(futures)
        while pending:
            done, pending = concurrent.futures.wait(pending, timeout=1.0)
            for f in done:
                results[futures[f].name] = f.result()
    except (KeyboardInterrupt, Stopping):
        STOP.set()
        kill_all_children()
        pool.shutdown(wait=True, cancel_futures=True)
        kill_all_children()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        sys.exit("interrupted: no page written")
    pool.shutdown(wait=True)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - began

    command = shown_command(args)
    text = page([results[c.name] for c in configs], args, algorithms, descriptions, skipped,
                elapsed, command, commit)
    out = os.path.abspath(args.out)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    print(f"wrote {os.path.relpath(out)} in {show_time(elapsed)}", file=sys.stderr)


if __name__ == "__main__":
    main()
