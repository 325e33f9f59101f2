#!/usr/bin/env bash
# Screenshot pages in headless Chromium, to see them as a reader would.
#
#   scripts/screenshot_report.sh PAGE [OUT.png] [WIDTH] [HEIGHT]
#       one page: a report.html, or a URL such as http://127.0.0.1:9292/_dashboard
#   scripts/screenshot_report.sh --all OUT_DIR
#       makes a run report (scenarios/fast_slow.toml), a compare report (the same over 3 seeds
#       with two more algorithms) and serve's live page with 20 clients and with 500, and
#       shoots each at 1,000 and 1,600 px wide into OUT_DIR/*.png
#
# Needs Debian's chromium (apt-get install -y chromium). The pages load nothing from the
# network; networking features of the browser are switched off too, so a page that tried
# would show it as broken rather than fetch. --all runs the binary THROTTLE_SIM names
# (default: target/release/throttle-sim, built first). Not part of `cargo test`.
set -euo pipefail

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "chromium not found: apt-get install -y chromium" >&2
    exit 2
fi

# shoot PAGE OUT WIDTH HEIGHT [BUDGET_MS]: one screenshot; a URL's scripts get BUDGET_MS of the
# browser's virtual time to run (its polls included).
shoot() {
    local page=$1 out=$2 width=$3 height=$4 budget=${5:-0} url profile
    if [[ $page == http://* || $page == https://* ]]; then url=$page; else url="file://$(realpath "$page")"; fi
    profile=$(mktemp -d)
    local extra=()
    if [[ $budget -gt 0 ]]; then extra+=(--virtual-time-budget="$budget"); fi
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic \
        --disable-background-networking --disable-component-update --disable-sync \
        --no-first-run --user-data-dir="$profile" "${extra[@]}" \
        --hide-scrollbars --window-size="$width,$height" \
        --screenshot="$(realpath -m "$out")" "$url" 2>/dev/null
    rm -rf "$profile"
    echo "$out"
}

if [[ ${1:-} != --all ]]; then
    page=${1:?usage: $0 PAGE [OUT.png] [WIDTH] [HEIGHT] | $0 --all OUT_DIR}
    out=${2:-${page%.html}.png}
    [[ $page == http* && -z ${2:-} ]] && out=page.png
    shoot "$page" "$out" "${3:-1200}" "${4:-3000}" 3000
    exit 0
fi

dir=${2:?usage: $0 --all OUT_DIR}
cd "$(dirname "$0")/.."
bin=${THROTTLE_SIM:-}
if [[ -z $bin ]]; then
    cargo build --release --quiet
    bin="${CARGO_TARGET_DIR:-target}/release/throttle-sim"
fi
mkdir -p "$dir"
work=$(mktemp -d)
serve_pid=
cleanup() {
    if [[ -n $serve_pid ]]; then kill "$serve_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$bin" run scenarios/fast_slow.toml --quiet --out "$work/run"
"$bin" compare scenarios/fast_slow.toml --seeds 3 --algorithms schneems,fair-share,aimd \
    --quiet --out "$work/compare"
for w in 1000 1600; do
    shoot "$work/run/report.html" "$dir/run-$w.png" "$w" 4000
    shoot "$work/compare/report.html" "$dir/compare-$w.png" "$w" 5000
done

# The live page: serve, 20 of our clients for a few seconds, then 480 more clients by hand.
"$bin" serve --addr 127.0.0.1:0 --limit 50 --period 1s --quiet >"$work/serve.out" 2>/dev/null &
serve_pid=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
addr=$(sed -n 's|.*http://\([^/]*\)/.*|\1|p' "$work/serve.out" | head -1)
"$bin" client --target "http://$addr/" --algorithm fair-share --processes 5 --threads 4 \
    --duration 6s --quiet --out "$work/client"
for w in 1000 1600; do shoot "http://$addr/_dashboard" "$dir/dashboard-20-$w.png" "$w" 1400 3000; done
for i in $(seq 1 480); do
    curl -s -o /dev/null -H "X-Client-Id: many/c$i" "http://$addr/" || true
done
for w in 1000 1600; do shoot "http://$addr/_dashboard" "$dir/dashboard-500-$w.png" "$w" 1400 3000; done
