#!/usr/bin/env bash
# run_view_facts.sh [BUILD] [EVENTS...] — the facts behind `memanalyze view` (issue 31): on
# synthetic traces of EVENTS events (default 10 M; `synth`, a steady training loop) and on the
# realistic 1 M-entry PyTorch snapshot (tests/make_pickles.py --realistic), warm: 200 random
# windows at random zooms through bench_view_facts (the p50/p95/max of query/view_timeline.h's
# 2000 buckets and of query/view_blocks.h's 2000 largest blocks), and what their indexes cost:
# the cold import (`report`, GMT_TIMING's split) with the rows and bytes of timeline_levels in
# the cache, the blocks' sidecar's build time and bytes. Not part of `make test`. Prints
# figures for bench/README.md. Needs ~1 GB of free disk per 10 M events in $TMPDIR (the sidecar
# ~0.1 GB of it) and ~1 GB of memory per 10 M events while the sidecar is built. BLOCKS=0: the
# timeline alone (no sidecar).
set -eu
B=${1:-build}
shift || true
SIZES=${*:-10000000}
MA=$B/analyzer/memanalyze
BV=$B/bench/bench_view_facts
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GMT_CACHE_DIR=$T/cache

levels_cost() { # DB: timeline_levels' rows and bytes (SQLite's dbstat, where the CLI has it)
  command -v sqlite3 >/dev/null || return 0
  sqlite3 "$1" "SELECT 'timeline_levels: ' || (SELECT count(*) FROM timeline_levels) || ' rows, ' ||
    printf('%.1f MB', (SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'timeline_levels%') / 1e6) ||
    ' of a ' || printf('%.1f MB', (SELECT page_count * page_size FROM pragma_page_count, pragma_page_size) / 1e6) ||
    ' database'" 2>/dev/null || true
}

one() { # INPUT LABEL
  echo "== $2"
  rm -rf "$T/cache"
  GMT_TIMING=1 /usr/bin/time -f "report, cold (replay, database, report): %e s wall, %M KB peak RSS" \
    "$MA" report "$1" 2>&1 >/dev/null | tail -3
  local db
  db=$(ls -S "$T/cache"/* | head -1)
  levels_cost "$db"
  if [ "${BLOCKS:-1}" = 0 ]; then
    "$BV" "$db" - 200
    return
  fi
  /usr/bin/time -f "bench (sidecar built, then the requests): %e s wall, %M KB peak RSS" \
    "$BV" "$db" "$T/blocks.sqlite" 200 2>&1
  ls -l "$T/blocks.sqlite" | awk '{printf "sidecar: %.1f MB\n", $5 / 1e6}'
  echo "-- again, the sidecar there (warm):"
  "$BV" "$db" "$T/blocks.sqlite" 200 7
  rm -f "$T/blocks.sqlite"
}

for n in $SIZES; do
  "$B/samples/synth/synth" -o "$T/t.zst" --events "$n" 2>/dev/null
  one "$T/t.zst" "$n-event synthetic trace"
  rm -f "$T/t.zst"
done

python3 "$SRC/tests/make_pickles.py" --realistic "$T/r.pickle" --entries 1000000
one "$T/r.pickle" "realistic 1 M-entry snapshot"
