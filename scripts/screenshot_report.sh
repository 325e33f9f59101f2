#!/usr/bin/env bash
# Screenshot a report.html in headless Chromium, to see it as a reader would.
#
#   scripts/screenshot_report.sh RESULTS_DIR/report.html [OUT.png] [WIDTH] [HEIGHT]
#
# Needs Debian's chromium (apt-get install -y chromium). The page loads nothing from the
# network; networking features of the browser are switched off too, so a page that tried
# would show it as broken rather than fetch. Not part of `cargo test`.
set -euo pipefail

page=${1:?usage: $0 REPORT.html [OUT.png] [WIDTH] [HEIGHT]}
out=${2:-${page%.html}.png}
width=${3:-1200}
height=${4:-3000}

browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "chromium not found: apt-get install -y chromium" >&2
    exit 2
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

"$browser" --headless --no-sandbox --disable-gpu \
    --disable-background-networking --disable-component-update --disable-sync \
    --no-first-run --user-data-dir="$profile" \
    --hide-scrollbars --window-size="$width,$height" \
    --screenshot="$(realpath -m "$out")" "file://$(realpath "$page")" 2>/dev/null

echo "$out"
