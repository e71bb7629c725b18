#!/usr/bin/env bash
# run_render.sh [BUILD] — time per picture on 1 M and 10 M-event synthetic
# traces, after the import (the database is built first and reused), as
# issue 4 asks. Not part of `make test`.
set -eu
B=${1:-build}
MA=$B/analyzer/memanalyze
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GMT_CACHE_DIR=$T/cache
for n in 1000000 10000000; do
  "$B/samples/synth/synth" -o "$T/t.zst" --events $n --fragment 2>/dev/null
  "$MA" import "$T/t.zst" -o "$T/t.db" >/dev/null
  for p in timeline heatmap fragmentation; do
    /usr/bin/time -f "$n events, $p: %e s, %M KB" "$MA" $p "$T/t.db" -o "$T/$p.png" 2>&1 >/dev/null | tail -1
  done
  /usr/bin/time -f "$n events, segments --at peak: %e s, %M KB" "$MA" segments "$T/t.db" --at peak -o "$T/s.png" 2>&1 >/dev/null | tail -1
  /usr/bin/time -f "$n events, segments --at end: %e s, %M KB" "$MA" segments "$T/t.db" --at end -o "$T/s.png" 2>&1 >/dev/null | tail -1
done
