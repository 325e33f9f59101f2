#!/usr/bin/env bash
# Installs the real rate limiters that the tests of tests/real/ run throttle-sim against, each
# at the version those tests were written for: Debian's nginx-light and haproxy; Flask-Limiter, Flask and
# waitress in the virtual environment tests/real/python/.venv (tests/real/python/requirements.txt);
# express-rate-limit, express, @fastify/rate-limit and fastify in tests/real/node/node_modules
# (tests/real/node/package-lock.json, by `npm ci`). Everything but nginx and HAProxy goes inside the checkout
# and is git-ignored. Run it from anywhere, then `cargo test`: build.rs looks for the limiters
# again once these folders change, and the tests of any still missing stay ignored, with why.
set -euo pipefail
cd "$(dirname "$0")/.."

debian=()
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || debian+=(nginx-light)
command -v haproxy >/dev/null || [[ -x /usr/sbin/haproxy ]] || debian+=(haproxy)
if [[ ${#debian[@]} -gt 0 ]]; then
  as_root=()
  [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  "${as_root[@]}" apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${debian[@]}"
fi

venv=tests/real/python/.venv
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv" || {
    echo "python3 cannot make a virtual environment (on Debian: apt-get install python3-venv)" >&2
    exit 1
  }
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r tests/real/python/requirements.txt

command -v npm >/dev/null || {
  echo "npm is missing: the Node.js limiters need Node.js 20 or later with npm" >&2
  exit 1
}
(cd tests/real/node && npm ci --no-audit --no-fund --loglevel=error)
