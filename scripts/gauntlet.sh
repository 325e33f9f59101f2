#!/usr/bin/env bash
# The gauntlet: every algorithm `throttle-sim list --json` names, compared over the
# same seeds on every scenarios/gauntlet/*.toml, summed up in docs/gauntlet.md with a heat map
# of every algorithm on every case (docs/gauntlet.svg). A file with [[axes]] (the API-shape matrix) is
# compared cell by cell; docs/gauntlet.md gets each algorithm's cells met per server rule,
# capacity class and level of every axis, and its worst cell. The matrix runs the algorithms of
# MATRIX_ALGORITHMS only (default below: about two minutes for both files on two cores): its
# largest cells (1,000 threads for 48 hours) take most others from seconds to minutes a run
# (`none` sends billions of requests there; eleven algorithms did not finish api_shapes.toml in
# twenty minutes). docs/api-shapes.md is its matrix section.
#
#   scripts/gauntlet.sh [--seeds N] [--jobs N] [--keep DIR]
#
# --seeds: seeds per algorithm and case (default 10). --jobs: runs at a time (default: every
# core). --keep: keep each case's compare folder (charts, compare.json) under DIR; by default
# they go to a temporary folder that is removed at the end. Environment: THROTTLE_SIM (the
# binary; default ${CARGO_TARGET_DIR:-target}/release/throttle-sim, built when missing),
# GAUNTLET_DIR (default scenarios/gauntlet), GAUNTLET_MD and GAUNTLET_SVG (default
# docs/gauntlet.md and .svg).
# Every algorithm runs in sim mode, so those that need Redis live use the in-memory store.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=10
jobs=()
keep=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --seeds) seeds=$2; shift 2 ;;
        --jobs) jobs=(--jobs "$2"); shift 2 ;;
        --keep) keep=$2; shift 2 ;;
        *) echo "usage: $0 [--seeds N] [--jobs N] [--keep DIR]" >&2; exit 2 ;;
    esac
done

dir=${GAUNTLET_DIR:-scenarios/gauntlet}
md=${GAUNTLET_MD:-docs/gauntlet.md}
svg=${GAUNTLET_SVG:-docs/gauntlet.svg}
shopt -s nullglob
cases=("$dir"/*.toml)
if [[ ${#cases[@]} -eq 0 ]]; then
    echo "no scenarios in $dir/*.toml: nothing to run, $md left as it is" >&2
    exit 0
fi

bin=${THROTTLE_SIM:-${CARGO_TARGET_DIR:-target}/release/throttle-sim}
[[ -x "$bin" ]] || cargo build --release
algorithms=$("$bin" list --json | python3 -c \
    'import json, sys; print(",".join(a["name"] for a in json.load(sys.stdin)["algorithms"]))')

if [[ -n "$keep" ]]; then
    work=$keep
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

n_alg=$(tr ',' '\n' <<<"$algorithms" | wc -l)
echo "gauntlet: ${#cases[@]} cases × $n_alg algorithms × $seeds seeds" >&2
started=$(date +%s)
matrix_algorithms=${MATRIX_ALGORITHMS:-fair-share,oracle,schneems,gem-proportional,aimd}
for f in "${cases[@]}"; do
    name=$(basename "$f" .toml)
    out="$work/$name"
    t0=$(date +%s)
    these=$algorithms
    grep -q '^\[\[axes\]\]' "$f" && these=$matrix_algorithms
    # Exit 1 only says some algorithm missed the case's [expect] ranges: that is a result
    # (the misses are in the table). Anything else stops the gauntlet with compare's words.
    rc=0
    "$bin" compare "$f" --algorithms "$these" --seeds "$seeds" "${jobs[@]}" \
        --out "$out" --quiet 2>"$work/$name.stderr" || rc=$?
    if [[ $rc -ne 0 && $rc -ne 1 ]]; then
        cat "$work/$name.stderr" >&2
        echo "gauntlet: compare failed on $f (exit $rc)" >&2
        exit "$rc"
    fi
    echo "  $name: $(( $(date +%s) - t0 )) s" >&2
done
elapsed=$(( $(date +%s) - started ))

python3 scripts/gauntlet_report.py --md "$md" --svg "$svg" --seeds "$seeds" \
    "${cases[@]/#/--case=}" -- "$work"
echo "gauntlet: $elapsed s of compare; wrote $md and $svg" >&2
