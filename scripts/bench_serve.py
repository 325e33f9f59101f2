#!/usr/bin/env python3
"""Server throughput on loopback: `throttle-sim serve` against nginx `limit_req`, both with a
limit too high to refuse, measured by wrk with the same settings. Prints requests per second
for each and the ratio (serve / nginx); the target is a ratio of at least 1.

wrk and nginx come from Debian's packages (installed with apt-get when missing; needs root).
Both servers get the machine's cores (tokio's default worker threads, nginx's
`worker_processes auto`), and wrk shares the same cores, as it would on any one machine.

Usage: python3 scripts/bench_serve.py [--duration 10] [--connections 64] [--threads 2]
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
BIN = os.path.join(ROOT, "target", "release", "throttle-sim")

NGINX_CONF = """
worker_processes auto;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    keepalive_requests 1000000;
    limit_req_zone $binary_remote_addr zone=api:10m rate=100000000r/s;
    server_tokens off;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            limit_req zone=api burst=100000000 nodelay;
            default_type text/plain;
            # The same rate-limit headers as serve's answers (static here: nginx does not
            # report its bucket), so both send the same bytes for wrk to parse.
            add_header RateLimit-Limit 1000000000;
            add_header RateLimit-Remaining 999999999;
            add_header RateLimit-Policy '"default";q=1000000000;w=1';
            add_header RateLimit '"default";r=999999999;t=0';
            return 200 "ok\\n";
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
    out = subprocess.run(
        ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s",
         "--latency", f"http://127.0.0.1:{port}/"],
        check=True, capture_output=True, text=True, timeout=args.duration + 60,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+(\S+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rps, p99.group(1) if p99 else "?", int(non2xx.group(1)) if non2xx else 0


def bench_serve(args):
    port = free_port()
    proc = subprocess.Popen(
        [BIN, "serve", "--addr", f"127.0.0.1:{port}", "--limit", "1000000000", "--period", "1s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(port)
        return wrk(port, args)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def bench_nginx(args):
    prefix = tempfile.mkdtemp(prefix="bench-nginx-")
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(prefix=prefix, port=port))
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
    p.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    args = p.parse_args()
    ensure_tools()
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    # Alternate the two, three times, so neither gets the quieter moment of the machine.
    results = {"serve": [], "nginx": []}
    for _ in range(3):
        results["serve"].append(bench_serve(args))
        results["nginx"].append(bench_nginx(args))
    for name, runs in results.items():
        for rps, p99, non2xx in runs:
            print(f"{name:6} {rps:12.0f} req/s   p99 {p99:>8}   non-2xx {non2xx}")
    median = lambda runs: sorted(r[0] for r in runs)[len(runs) // 2]
    serve, nginx = median(results["serve"]), median(results["nginx"])
    print(f"median: serve {serve:.0f} req/s, nginx {nginx:.0f} req/s, ratio serve/nginx {serve / nginx:.2f}")


if __name__ == "__main__":
    main()
