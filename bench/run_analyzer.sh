#!/usr/bin/env bash
# run_analyzer.sh [BUILD] — the analyzer's speed and memory targets (issue 3),
# side by side in one run. Not part of `make test`. Prints figures for
# bench/README.md:
#   1. a 10 M-event synthetic trace: import (events/s end to end), `report`
#      cold (import included) and warm, peak RSS;
#   2. a ~1 M-entry PyTorch snapshot (written here with Python's pickle, as a
#      real one is shaped): `memanalyze report` cold against
#      `python3 -c "import pickle; pickle.load(...)"`, time and peak RSS;
#   3. each shared snapshot converted to a trace: bytes/event of both files.
set -eu
B=${1:-build}
MA=$B/analyzer/memanalyze
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GMT_CACHE_DIR=$T/cache
SRC=$(cd "$(dirname "$0")/.." && pwd)

measure() { # label, command...: prints wall seconds and peak RSS
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %M KB peak RSS" "$@" >/dev/null 2>"$T/time" || { cat "$T/time"; exit 1; }
  tail -1 "$T/time"
}

echo "== 10 M-event synthetic trace"
"$B/samples/synth/synth" -o "$T/t10m.zst" --events 10000000 2>/dev/null
GMT_TIMING=1 /usr/bin/time -f "import: %e s wall, %M KB peak RSS" "$MA" import "$T/t10m.zst" -o "$T/t10m.db" 2>&1 >/dev/null | tail -2
rm -f "$T/t10m.db"
measure "report, cold (import included)" "$MA" report "$T/t10m.zst"
measure "report, warm (database reused)" "$MA" report "$T/t10m.zst"
measure "leaks, warm" "$MA" leaks "$T/t10m.zst"
measure "segments --at peak, warm" "$MA" segments "$T/t10m.zst" --at peak

echo "== ~1 M-entry PyTorch snapshot"
python3 "$SRC/tests/make_pickles.py" --big "$T/big.pickle" --entries 1000000 >/dev/null
ls -l "$T/big.pickle" | awk '{printf "snapshot: %.0f MB\n", $5 / 1e6}'
measure "python3 pickle.load" python3 -c "import pickle; pickle.load(open('$T/big.pickle', 'rb'))"
measure "memanalyze report, cold" "$MA" report "$T/big.pickle"

echo "== shared snapshots as traces"
for f in "$SRC"/../shared/data/pytorch/*.pickle; do
  [ -f "$f" ] || continue
  "$MA" import "$f" -o "$T/s.db" >/dev/null
  # the trace the importer writes (zstd level 3), kept by converting once more
  python3 - "$f" "$T/s.db" <<'PY'
import os, sqlite3, sys
pickle_size = os.path.getsize(sys.argv[1])
db = sqlite3.connect(sys.argv[2])
events = db.execute("SELECT count(*) FROM event_rows").fetchone()[0]
print(f"{os.path.basename(sys.argv[1])}: {events} events (seed included), pickle {pickle_size} B "
      f"= {pickle_size / max(events, 1):.1f} B/event", end="")
PY
  "$B/bench/snapshot_to_trace" "$f" "$T/s.zst"
  python3 - "$T/s.zst" "$T/s.db" <<'PY'
import os, sqlite3, sys
size = os.path.getsize(sys.argv[1])
events = sqlite3.connect(sys.argv[2]).execute("SELECT count(*) FROM event_rows").fetchone()[0]
print(f", trace {size} B = {size / max(events, 1):.1f} B/event")
PY
  rm -f "$T/s.db" "$T/s.zst"
done
