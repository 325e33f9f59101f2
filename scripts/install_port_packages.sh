#!/usr/bin/env bash
# Installs what the tests of the fair-share packages' adapters need beyond the interpreters: for
# the Python port, requests and httpx at pinned versions (ports/python/requirements-adapters.txt)
# in the virtual environment ports/python/.venv, git-ignored, which tests/ports/ and the Python
# unittest suite use when it is there. (The Ruby gem's Faraday and minitest and npm come from
# Debian: .ci/run installs them.) Run it from anywhere, then `cargo test`: build.rs looks again
# once the folder changes, and an adapter whose library is still missing stays ignored, with why.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=ports/python/.venv
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv" || {
    echo "python3 cannot make a virtual environment (on Debian: apt-get install python3-venv)" >&2
    exit 1
  }
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r ports/python/requirements-adapters.txt
"$venv/bin/python" -c 'import requests, httpx; print("ports/python/.venv: requests", requests.__version__, "httpx", httpx.__version__)'
