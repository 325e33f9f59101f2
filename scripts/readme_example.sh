#!/usr/bin/env bash
# Make the README's example again, with the tool, from the bundled fast_slow scenario: the
# sleep convergence chart (README.md's picture), the 429-against-utilization chart and the
# comparison table.
#
#   scripts/readme_example.sh
#
# Uses ${CARGO_TARGET_DIR:-target}/release/throttle-sim (THROTTLE_SIM overrides), building it
# if needed.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${THROTTLE_SIM:-${CARGO_TARGET_DIR:-target}/release/throttle-sim}
[[ -x "$bin" ]] || cargo build --release

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Exit 1 only says a variant missed an [expect] range, which the table shows.
"$bin" compare scenarios/fast_slow.toml --seeds 5 --out "$work/cmp" --quiet || [[ $? -eq 1 ]]

mkdir -p docs
cp "$work/cmp/variants/01-base/charts/sleep.png" docs/fast_slow_sleep.png
cp "$work/cmp/charts/tradeoff.png" docs/fast_slow_tradeoff.png
cp "$work/cmp/compare.md" docs/fast_slow_compare.md

# Every registered algorithm on the Heroku GCRA demo client's two classic problems
# (docs/algorithms.md, "Every algorithm").
algorithms=$("$bin" list --json | python3 -c 'import json,sys; print(",".join(a["name"] for a in json.load(sys.stdin)["algorithms"]))')
for scenario in fast_slow heroku_5x5; do
  "$bin" compare "scenarios/$scenario.toml" --algorithms "$algorithms" --seeds 5 \
    --out "$work/all-$scenario" --quiet || [[ $? -eq 1 ]]
  cp "$work/all-$scenario/compare.md" "docs/${scenario}_algorithms.md"
done
echo "wrote docs/fast_slow_sleep.png, docs/fast_slow_tradeoff.png, docs/fast_slow_compare.md,"
echo "      docs/fast_slow_algorithms.md, docs/heroku_5x5_algorithms.md"
