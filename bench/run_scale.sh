#!/usr/bin/env bash
# run_scale.sh [BUILD] [EVENTS...] — the analyzer at scale (issue 13), side by side in one run.
# Not part of `make test`. Prints figures for bench/README.md:
#   1. synthetic traces of EVENTS events each (default 10 M and 100 M; `synth`, a steady
#      training loop): `import -o` (events/s, peak RSS, database bytes/event) and `report`
#      cold (first use: replay, database, report; GMT_TIMING's split: categories, replay+load,
#      commit+indexes) and warm, each with its peak RSS — the RSS must not grow with the trace's
#      length — and the cache's bytes/event (the event store, analyzer/base/event_store.h);
#   2. a realistic 1 M-entry PyTorch snapshot (tests/make_pickles.py --realistic: a training
#      loop through the simulated caching allocator, so its layout is real and the replay
#      raises no warning; frames shared as PyTorch's pickler shares them): `memanalyze report`
#      cold against `pickle.load` of the same file and a _memory_viz-like pass in Python (load,
#      then one walk over the history keeping the live blocks and the peak, and over the
#      segments), alternating, three rounds: the ratio is what counts on a noisy machine.
# Needs ~10 GB of free disk per 100 M events (the database) in $TMPDIR.
set -eu
B=${1:-build}
shift || true
SIZES=${*:-10000000 100000000}
MA=$B/analyzer/memanalyze
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

measure() { # label, command...: wall seconds and peak RSS of the command
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %M KB peak RSS" "$@" >/dev/null 2>"$T/time" || { cat "$T/time"; exit 1; }
  tail -1 "$T/time"
}

for n in $SIZES; do
  echo "== $n-event synthetic trace"
  "$B/samples/synth/synth" -o "$T/t.zst" --events "$n" 2>/dev/null
  GMT_TIMING=1 /usr/bin/time -f "import -o: %e s wall, %M KB peak RSS" \
    "$MA" import "$T/t.zst" -o "$T/t.db" 2>&1 >/dev/null | tail -2
  python3 -c "import os,sys; n=int(sys.argv[2]); s=os.path.getsize(sys.argv[1]); print(f'database: {s/1e9:.2f} GB = {s/n:.1f} B/event')" "$T/t.db" "$n"
  rm -f "$T/t.db"
  export GMT_CACHE_DIR=$T/cache
  GMT_TIMING=1 /usr/bin/time -f "report, cold (replay, database, report): %e s wall, %M KB peak RSS" \
    "$MA" report "$T/t.zst" 2>&1 >/dev/null | tail -3
  du -sb "$T/cache" | awk -v n="$n" '{printf "cache (event store): %.2f GB = %.1f B/event\n", $1 / 1e9, $1 / n}'
  measure "report, warm" "$MA" report "$T/t.zst"
  rm -rf "$T/cache" "$T/t.zst"
done

echo "== realistic 1 M-entry snapshot"
python3 "$SRC/tests/make_pickles.py" --realistic "$T/r.pickle" --entries 1000000
ls -l "$T/r.pickle" | awk '{printf "snapshot: %.0f MB\n", $5 / 1e6}'
cat >"$T/viz.py" <<'PY'
import pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
reserved = sum(s["total_size"] for s in snap["segments"])
for trace in snap["device_traces"]:
    live, total, peak = {}, 0, 0
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]; total += e["size"]; peak = max(peak, total)
        elif e["action"] == "free_completed":
            total -= live.pop(e["addr"], 0)
print(reserved, peak)
PY
for round in 1 2 3; do
  measure "pickle.load" python3 -c "import pickle; pickle.load(open('$T/r.pickle', 'rb'))"
  measure "_memory_viz-like pass" python3 "$T/viz.py" "$T/r.pickle"
  rm -rf "$T/cache"
  GMT_CACHE_DIR=$T/cache measure "memanalyze report, cold" "$MA" report "$T/r.pickle"
done
GMT_CACHE_DIR=$T/cache "$MA" sql "$T/r.pickle" --csv "SELECT count(*) AS replay_warnings FROM warnings"
