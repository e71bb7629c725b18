#!/usr/bin/env bash
# run_ranks.sh [BUILD] [RANKS] [EVENTS] [FLEET] — `memanalyze ranks` (issue 15), side by side in
# one run. Not part of `make test`. Prints figures for bench/README.md:
#   1. RANKS synthetic rank traces of EVENTS events each (default 8 x 1 M): their databases
#      built one after another (`memanalyze sql TRACE "SELECT 1"` per trace, each import two
#      threads), against
#      `memanalyze ranks` over the directory with an empty cache (one process per import, -j
#      the core count) — ranks must be no slower;
#   2. FLEET small ranks (default 1024, imported once): `memanalyze ranks` when all are cached
#      (the summary tables only), five runs — the goal is 2 s.
set -eu
B=${1:-build}
RANKS=${2:-8}
EVENTS=${3:-1000000}
FLEET=${4:-1024}
MA=$B/analyzer/memanalyze
SYNTH=$B/samples/synth/synth
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

measure() { # label, command...: wall seconds of the command
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %S s sys, %M KB peak RSS" "$@" >/dev/null 2>"$T/time" ||
    { cat "$T/time"; exit 1; }
  tail -1 "$T/time"
}

echo "== $RANKS ranks of $EVENTS events, cold"
mkdir -p "$T/job"
for r in $(seq 0 $((RANKS - 1))); do
  "$SYNTH" -o "$T/job/trace.$r.zst" --rank "$r" --events "$EVENTS" --seed $((r + 1)) 2>/dev/null
done
one_after_another() { for f in "$T"/job/trace.*.zst; do "$MA" sql "$f" "SELECT 1" >/dev/null; done; }
export -f one_after_another
export MA T
GMT_CACHE_DIR=$T/cache1 measure "one import after another" bash -c one_after_another
GMT_CACHE_DIR=$T/cache2 measure "memanalyze ranks (-j $(nproc))" "$MA" ranks "$T/job"
GMT_CACHE_DIR=$T/cache2 measure "memanalyze ranks, all cached" "$MA" ranks "$T/job"
rm -rf "$T/job" "$T/cache1" "$T/cache2"

echo "== $FLEET small ranks, all cached"
mkdir -p "$T/fleet"
for r in $(seq 0 $((FLEET - 1))); do
  "$SYNTH" -o "$T/fleet/t.$r.zst" --rank "$r" --steps 3 --layers 2 --seed $((r % 7 + 1)) 2>/dev/null
done
export GMT_CACHE_DIR=$T/fleet-cache
measure "first run (imports)" "$MA" ranks "$T/fleet"
for i in 1 2 3 4 5; do
  measure "ranks over $FLEET cached ranks, run $i" "$MA" ranks "$T/fleet" --json
done
