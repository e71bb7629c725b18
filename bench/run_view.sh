#!/usr/bin/env bash
# run_view.sh [BUILD] — `memanalyze view` as a user meets it (issue 31): on a synth trace of
# EVENTS events (default 10 M; 100 M: EVENTS=100000000, ~40 s to make and ~40 s to cache here,
# ~1 GB of disk with the blocks index), on a 1 M-event synth trace (the memory comparison) and
# on the realistic 1 M-entry PyTorch snapshot (tests/make_pickles.py --realistic), each with its
# database cached first (untimed: `memanalyze sql INPUT "select 1"`, then one `view` until its
# blocks index is made), bench/bench_view.py times: the first screen from starting `view` (the
# URL printed, the page's load requests answered, and headless Chromium's body[data-ready] with
# its JS heap), 200 random zoom/pan/click/segment-map/window/stack requests at the client (per
# endpoint p50/p95/max and the largest body), and the JS heap after 50 zoom/pan steps in the
# page. Not part of `make test`. Prints figures for bench/README.md.
#   MEMORYVIZ=/path/to/MemoryViz.js  PyTorch's viewer (torch/utils/viz/MemoryViz.js; not in this
#       tree, never copied into it), loaded on the same snapshot in the same headless browser
#       (bench_view.py --memoryviz): its time to first screen and to a segment map. Skipped,
#       saying why, when not given. MEMORYVIZ_IMPORTMAP=map.json: an import map for its d3
#       imports (CDN URLs → local ES modules; relative paths from the map's folder);
#       MEMORYVIZ_REPS=N its runs (default REPS; a 1 M-entry load takes ~1 min here).
#   REPS=3 (first-screen runs), REQUESTS=200, STEPS=50, SNAPSHOT=0 / SMALL=0 / EVENTS=0 to leave
#   one out, ENTRIES=N the snapshot's history entries (default 1000000).
set -eu
B=${1:-build}
EVENTS=${EVENTS:-10000000}
MA=$(cd "$B" && pwd)/analyzer/memanalyze
SYNTH=$B/samples/synth/synth
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GMT_CACHE_DIR=$T/cache
ARGS=(--reps "${REPS:-3}" --requests "${REQUESTS:-200}" --steps "${STEPS:-50}")

echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(date -u +%F)"

one() { # INPUT LABEL [bench_view.py options]
  local inp=$1 label=$2
  shift 2
  /usr/bin/time -f "cache built (sql 'select 1', cold): %e s, %M KB peak RSS" \
    "$MA" sql "$inp" "select 1" 2>&1 >/dev/null | tail -1
  python3 "$SRC/bench/bench_view.py" "$MA" "$inp" "$label" "${ARGS[@]}" "$@"
}

if [ "${SMALL:-1}" != 0 ] && [ "$EVENTS" != 1000000 ]; then
  "$SYNTH" -o "$T/small.zst" --events 1000000 2>/dev/null
  one "$T/small.zst" "synth --events 1000000"
  rm -rf "$T/cache" "$T/small.zst"
fi

if [ "$EVENTS" != 0 ]; then
  /usr/bin/time -f "synth --events $EVENTS: %e s" "$SYNTH" -o "$T/t.zst" --events "$EVENTS" \
    2>&1 >/dev/null | tail -1
  one "$T/t.zst" "synth --events $EVENTS"
  rm -rf "$T/cache" "$T/t.zst"
fi

if [ "${SNAPSHOT:-1}" != 0 ]; then
  ENTRIES=${ENTRIES:-1000000}
  python3 "$SRC/tests/make_pickles.py" --realistic "$T/r.pickle" --entries "$ENTRIES" >/dev/null
  MV=()
  if [ -n "${MEMORYVIZ:-}" ]; then
    MV=(--memoryviz "$MEMORYVIZ" --memoryviz-reps "${MEMORYVIZ_REPS:-${REPS:-3}}")
  else
    echo "MemoryViz: skipped (MEMORYVIZ=/path/to/MemoryViz.js not given: PyTorch's" \
      "torch/utils/viz/MemoryViz.js, which this tree does not hold)"
  fi
  one "$T/r.pickle" "realistic snapshot, --entries $ENTRIES" "${MV[@]}"
fi
