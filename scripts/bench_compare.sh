#!/usr/bin/env bash
# Wall time of `throttle-sim compare` with --jobs 1 and 2 (best of 3 each), and a check that
# both give the same compare.md. Run on an otherwise idle machine:
#
#   scripts/bench_compare.sh [SCENARIO] [extra compare flags...]
#
# Default: scenarios/fast_slow.toml --seeds 5. A heavier case:
#   scripts/bench_compare.sh scenarios/heroku_5x5.toml --seeds 5 --set 'clients.*.processes=200'
# The case --jobs was tuned on, every algorithm over 10 seeds:
#   scripts/bench_compare.sh scenarios/heroku_5x5.toml --seeds 10 --algorithms "$(throttle-sim list --json | python3 -c 'import json,sys; print(",".join(a["name"] for a in json.load(sys.stdin)["algorithms"]))')"
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${THROTTLE_SIM:-${CARGO_TARGET_DIR:-target}/release/throttle-sim}
[[ -x "$bin" ]] || cargo build --release
scenario=${1:-scenarios/fast_slow.toml}
shift || true
extra=("$@")
[[ ${#extra[@]} -gt 0 ]] || extra=(--seeds 5)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for jobs in 1 2; do
    best=""
    for try in 1 2 3; do
        out="$work/j$jobs-$try"
        start=$(date +%s.%N)
        "$bin" compare "$scenario" "${extra[@]}" --jobs "$jobs" --out "$out" --quiet || [[ $? -eq 1 ]]
        end=$(date +%s.%N)
        t=$(echo "$end - $start" | bc)
        if [[ -z "$best" ]] || (( $(echo "$t < $best" | bc) )); then best=$t; fi
    done
    printf 'jobs %d: best of 3 %.3f s wall\n' "$jobs" "$best"
    eval "best_$jobs=$best"
done
# The target: --jobs 2 within ~20 % of (single-run time × runs / cores), taken here as the
# --jobs 1 time / 2 (compare's own work besides the runs is small).
echo "$best_1 $best_2" | awk '{printf "speed-up %.2f with 2 jobs (ideal 2.00): %.0f %% over --jobs 1 time / 2\n", $1/$2, ($2/($1/2)-1)*100}'

cmp "$work/j1-1/compare.md" "$work/j2-1/compare.md" && echo "compare.md identical for --jobs 1 and 2"
