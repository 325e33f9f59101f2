#!/usr/bin/env python3
"""Server throughput and tail latency on loopback: `throttle-sim serve` against nginx
`limit_req`, measured by wrk with the same settings, in two modes:

- all-2xx: both with a limit too high to refuse;
- mostly-429: both limited to 1,000 requests/s (GCRA / limit_req with a burst of 1,000,
  answering 429 past it, with the same rate-limit headers), so nearly every answer is the
  refusal rate-limited clients get.

Prints requests per second, p50 / p99 / p99.9 latency (wrk's histogram, through a Lua
`done` hook) and the share of non-2xx answers for each run, then the medians and the ratio
serve / nginx; the targets are a ratio of at least 1 and a p99 no worse than nginx's.

wrk is closed-loop (each connection sends its next request when the answer comes), so each
server runs at its own maximum throughput; when the two are within a few percent of each
other the latencies compare at about the same offered load. `--rate N` compares them at
exactly the same offered load instead: wrk2 (github.com/giltene/wrk2, built from source:
`make` in its folder; `--wrk2 PATH` or `$WRK2`, default `wrk2` on the PATH) sends N requests
per second whatever the answers do, and reports latency from each request's intended send
time (no coordinated omission). wrk2 spends its first ~10 s calibrating and drops them, so
open-loop runs last 30 s unless `--duration` says otherwise.

wrk and nginx come from Debian's packages (installed with apt-get when missing; needs root).
Both servers get the machine's cores (one serving thread per core, nginx's
`worker_processes auto`), and wrk shares the same cores, as it would on any one machine.
How each spreads wrk's connections over its workers is its own: serve's threads share them
by `SO_REUSEPORT` hashing, while nginx (one listening socket, `accept_mutex off`) usually
ends up with all 64 on one worker, leaving the other core to wrk.

Usage: python3 scripts/bench_serve.py [--duration 10] [--connections 64] [--threads 2]
                                      [--rounds 3] [--mode all-2xx|mostly-429] [--bin PATH]
                                      [--rate N [--wrk2 PATH]]
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.path.join(TARGET, "release", "throttle-sim")

# The refusing mode's limit, per second, for both servers.
LIMIT_429 = 1000

# wrk's Lua hook: the percentiles of its latency histogram, in microseconds.
WRK_LUA = """
done = function(summary, latency, requests)
  io.write(string.format("PCT %d %d %d\\n", latency:percentile(50), latency:percentile(99),
                         latency:percentile(99.9)))
end
"""

NGINX_CONF = """
worker_processes auto;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    open_file_cache max=16;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    keepalive_requests 1000000;
    limit_req_zone $binary_remote_addr zone=api:10m rate={rate}r/s;
    limit_req_status 429;
    # nginx logs every refusal (an error-level line) by default; serve logs none, so neither
    # writes a line per request (info is below error_log's warn).
    limit_req_log_level info;
    server_tokens off;
    server {{
        listen 127.0.0.1:{port};
        error_page 429 = @limited;
        location @limited {{
            default_type text/plain;
            # The fields serve's refusals carry (static here), so both send as many bytes.
            add_header RateLimit-Limit {limit} always;
            add_header RateLimit-Remaining 0 always;
            add_header RateLimit-Policy '"default";q={limit};w=1' always;
            add_header RateLimit '"default";r=0;t=1' always;
            add_header Retry-After 1 always;
            add_header retry-after-ms 0.500 always;
            return 429 "limited\\n";
        }}
        location / {{
            limit_req zone=api burst={burst} nodelay;
            default_type text/plain;
            # The same rate-limit headers as serve's answers (static here: nginx does not
            # report its bucket), so both send the same bytes for wrk to parse.
            add_header RateLimit-Limit 1000000000;
            add_header RateLimit-Remaining 999999999;
            add_header RateLimit-Policy '"default";q=1000000000;w=1';
            add_header RateLimit '"default";r=999999999;t=0';
            # A file, not `return`: `return` answers in the rewrite phase, before limit_req
            # ever runs, and nginx would be measured without its limit.
            root {prefix};
            try_files /ok.txt =404;
        }}
    }}
}}
"""


def ensure_tools():
    missing = [t for t in ("wrk", "nginx") if shutil.which(t) is None and not os.path.exists("/usr/sbin/" + t)]
    if missing:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        pkgs = ["wrk" if t == "wrk" else "nginx-light" for t in missing]
        subprocess.run(["apt-get", "install", "-y", "-qq", *pkgs], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, limit=10.0):
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on port {port}")


def wrk(port, args):
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(WRK_LUA)
    try:
        tool = [args.wrk2, f"-R{args.rate}"] if args.rate else ["wrk"]
        out = subprocess.run(
            [*tool, f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s",
             "-s", lua.name, f"http://127.0.0.1:{port}/"],
            check=True, capture_output=True, text=True, timeout=args.duration + 60,
        ).stdout
    finally:
        os.unlink(lua.name)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    total = int(re.search(r"(\d+) requests in", out).group(1))
    p50, p99, p999 = (int(v) / 1000 for v in re.search(r"PCT (\d+) (\d+) (\d+)", out).groups())
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    share = (int(non2xx.group(1)) if non2xx else 0) / max(total, 1)
    return {"rps": rps, "p50": p50, "p99": p99, "p999": p999, "non2xx": share}


def bench_serve(args, mode):
    port = free_port()
    limit = ["1000000000", "1s"] if mode == "all-2xx" else [str(LIMIT_429), "1s"]
    proc = subprocess.Popen(
        [args.bin, "serve", "--addr", f"127.0.0.1:{port}", "--limit", limit[0], "--period", limit[1]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(port)
        return wrk(port, args)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def bench_nginx(args, mode):
    prefix = tempfile.mkdtemp(prefix="bench-nginx-")
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    rate, burst = (100000000, 100000000) if mode == "all-2xx" else (LIMIT_429, LIMIT_429)
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(prefix=prefix, port=port, rate=rate, burst=burst, limit=rate))
    with open(os.path.join(prefix, "ok.txt"), "w") as f:
        f.write("ok\n")
    # nginx's workers run as an unprivileged user; mkdtemp's folder is the owner's alone.
    os.chmod(prefix, 0o755)
    os.chmod(os.path.join(prefix, "ok.txt"), 0o644)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-c", conf, "-p", prefix, "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(port)
        return wrk(port, args)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        shutil.rmtree(prefix, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=int, help="seconds per wrk run (default 10, 30 with --rate)")
    p.add_argument("--rate", type=int, help="open loop: this many requests/s in all, with wrk2")
    p.add_argument("--wrk2", default=os.environ.get("WRK2", "wrk2"), help="wrk2's binary")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--rounds", type=int, default=3, help="serve/nginx pairs per mode")
    p.add_argument("--mode", choices=["all-2xx", "mostly-429"], action="append",
                   help="default: both")
    p.add_argument("--bin", help="the throttle-sim binary (default: build this tree's release)")
    args = p.parse_args()
    if args.duration is None:
        args.duration = 30 if args.rate else 10
    ensure_tools()
    if args.rate and shutil.which(args.wrk2) is None:
        sys.exit(f"--rate needs wrk2: {args.wrk2} is not a program (build github.com/giltene/wrk2 "
                 "with make and pass --wrk2 PATH)")
    if not args.bin:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        args.bin = BIN
    if args.rate:
        print(f"open loop: {args.rate} requests/s offered to each server by wrk2")
    print(f"{'mode':<11}{'server':<7}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}{'non-2xx':>9}")
    for mode in args.mode or ["all-2xx", "mostly-429"]:
        # Alternate the two, so neither gets the quieter moment of the machine.
        results = {"serve": [], "nginx": []}
        for _ in range(args.rounds):
            results["serve"].append(bench_serve(args, mode))
            results["nginx"].append(bench_nginx(args, mode))
        for name, runs in results.items():
            for r in runs:
                print(f"{mode:<11}{name:<7}{r['rps']:>10.0f}{r['p50']:>9.3f}{r['p99']:>9.3f}"
                      f"{r['p999']:>10.3f}{r['non2xx']:>9.1%}", flush=True)
        med = lambda runs, k: sorted(r[k] for r in runs)[len(runs) // 2]
        s, n = results["serve"], results["nginx"]
        print(f"{mode} medians: serve {med(s, 'rps'):.0f} req/s, p50/p99/p99.9 "
              f"{med(s, 'p50'):.3f}/{med(s, 'p99'):.3f}/{med(s, 'p999'):.3f} ms; nginx "
              f"{med(n, 'rps'):.0f} req/s, {med(n, 'p50'):.3f}/{med(n, 'p99'):.3f}/"
              f"{med(n, 'p999'):.3f} ms; ratio serve/nginx {med(s, 'rps') / med(n, 'rps'):.2f}",
              flush=True)


if __name__ == "__main__":
    main()
