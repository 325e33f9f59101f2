#!/usr/bin/env bash
# Every bundled scenario (scenarios/*.toml and scenarios/gauntlet/*.toml) run in sim mode at one
# seed, with requests.csv, each into its own folder under OUT. Two snapshots of the same seed
# made by two builds are compared with `diff -r`: a refactoring that claims "outputs unchanged"
# shows it this way.
#
#   scripts/snapshot_outputs.sh OUT [SEED]
#
# SEED defaults to 7. Environment: THROTTLE_SIM (the binary; default
# ${CARGO_TARGET_DIR:-target}/release/throttle-sim, built when missing). A scenario whose
# `[run]` says `mode = "live"` is run with `--mode sim`, so no Redis or server is needed.
# A file with [[axes]] (the API-shape matrix) stands for many cells: it is compared over that one
# seed instead, every cell as written, into compare.csv and the rest.
# Prints one line per scenario with its exit code (1, a missed `[expect]`, is an output too).
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:?usage: $0 OUT [SEED]}
seed=${2:-7}
bin=${THROTTLE_SIM:-${CARGO_TARGET_DIR:-target}/release/throttle-sim}
if [[ ! -x $bin ]]; then
    cargo build --release --quiet
fi
if [[ -e $out && -n "$(ls -A "$out")" ]]; then
    echo "$out exists and is not empty" >&2
    exit 2
fi
mkdir -p "$out"

for file in scenarios/*.toml scenarios/gauntlet/*.toml; do
    name="$(basename "$(dirname "$file")")_$(basename "$file" .toml)"
    code=0
    if grep -q '^\[\[axes\]\]' "$file"; then
        "$bin" compare "$file" --variants base --seeds 1 --seed "$seed" --quiet \
            --out "$out/$name" >"$out/$name.stdout" 2>"$out/$name.stderr" || code=$?
    else
        "$bin" run "$file" --mode sim --seed "$seed" --log-requests --quiet \
            --out "$out/$name" >"$out/$name.stdout" 2>"$out/$name.stderr" || code=$?
    fi
    echo "$name $code"
done
