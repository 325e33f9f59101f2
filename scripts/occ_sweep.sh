#!/usr/bin/env bash
# Write calls and time until every client is done, per client count and backoff, for
# scenarios/occ_contention.toml (the AWS backoff post's contended row): the mean over SEEDS
# seeds of `throttle-sim compare` at each count. Prints a markdown table (docs/occ_contention.md).
#   scripts/occ_sweep.sh [SEEDS] [COUNTS...]      defaults: 20 seeds; 10 20 50 100 150 190
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
shift || true
counts=${*:-10 20 50 100 150 190}
bin=${THROTTLE_SIM:-${CARGO_TARGET_DIR:-target}/release/throttle-sim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| clients | variant | write calls | time to clear s |"
echo "|---:|---|---:|---:|"
for n in $counts; do
  # The [expect] ranges are for 50 clients: at other counts a miss (exit 1) is expected.
  rc=0
  "$bin" compare scenarios/occ_contention.toml --seeds "$seeds" --quiet --out "$tmp/$n" \
    --set "clients.writers.processes=$n" >/dev/null 2>&1 || rc=$?
  [ "$rc" -le 1 ] || { echo "compare failed at $n clients (exit $rc)" >&2; exit "$rc"; }
  python3 - "$tmp/$n/compare.csv" "$n" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
order = []
for r in rows:
    if r["variant"] not in order:
        order.append(r["variant"])
for v in order:
    rs = [r for r in rows if r["variant"] == v]
    calls = sum(float(r["requests"]) for r in rs) / len(rs)
    t = sum(float(r["time_to_clear"]) for r in rs) / len(rs)
    print(f"| {sys.argv[2]} | {v} | {calls:.0f} | {t:.2f} |")
PY
done
