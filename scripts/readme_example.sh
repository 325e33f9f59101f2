#!/usr/bin/env bash
# Make the README's example again, with the tool, from the bundled fast_slow scenario: the
# sleep convergence chart, the 429-against-utilization chart and the comparison table.
#
#   scripts/readme_example.sh        (uses target/release/throttle-sim, building it if needed)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${THROTTLE_SIM:-target/release/throttle-sim}
[[ -x "$bin" ]] || cargo build --release

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Exit 1 only says a variant missed an [expect] range, which the table shows.
"$bin" compare scenarios/fast_slow.toml --seeds 5 --out "$work/cmp" --quiet || [[ $? -eq 1 ]]

mkdir -p docs
cp "$work/cmp/variants/01-base/charts/sleep.png" docs/fast_slow_sleep.png
cp "$work/cmp/charts/tradeoff.png" docs/fast_slow_tradeoff.png
cp "$work/cmp/compare.md" docs/fast_slow_compare.md
echo "wrote docs/fast_slow_sleep.png, docs/fast_slow_tradeoff.png, docs/fast_slow_compare.md"
