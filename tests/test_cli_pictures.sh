#!/usr/bin/env bash
# test_cli_pictures.sh — what the pictures and the report say about the same moments, on
# snapshots made by tests/make_pickles.py's simulated allocator:
#   - without timestamps (PyTorch <= 2.1), the timeline's "event N" of the peak is the report's
#   - a --from/--to window's timeline gives the window's own length; time: past the last event
#     is an error, as event: past it is
#   - a warm cache at the end (whole free segments empty_cache() returns) is not called severe
#     fragmentation: the verdict word follows the trapped ratio, the raw ratio beside it, and
#     the fragmentation picture says which ratio its bands rate
#   - a one-entry snapshot's timeline draws no band wider than a column in the allocated line's
#     colour (a slab no legend has)
# The pictures need Cairo: without it those checks are skipped. Skipped (77) without python3.
# usage: test_cli_pictures.sh MEMANALYZE
set -u
MA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
name=test_cli_pictures
. "$(dirname "$0")/cli_lib.sh"

if ! command -v python3 >/dev/null; then
    echo "SKIP: test_cli_pictures needs python3" >&2
    exit 77
fi
cd "$T" || exit 1
python3 - "$HERE" <<'PY' || fail "making the snapshots"
import pickle, sys
sys.path.insert(0, sys.argv[1])
import make_pickles as mp
def dump(name, snap):
    with open(name, "wb") as f:
        pickle.dump(snap, f, protocol=4)
dump("untimed.pickle", mp.es_no_time())
snap, _ = mp.training_snapshot()
dump("train.pickle", snap)
# the end: 2 GiB of whole free segments (releasable) beside one small live block
a = mp.Allocator(0, 16 << 30, clock=mp.Clock())
big = [a.malloc(512 << 20, 0) for _ in range(4)]
small = a.malloc(1 << 20, 0)
for b in big:
    a.free_block(b)
dump("warm.pickle", mp.snapshot_of([a], 1.0, mp.settings_dict()))
# one entry: an allocation in a segment the snapshot already holds
a = mp.Allocator(0, 1 << 30, clock=mp.Clock())
a.malloc(3 << 20, 0)
one = mp.snapshot_of([a], 1.0, mp.settings_dict())
one["device_traces"][0] = one["device_traces"][0][-1:]
dump("one.pickle", one)
PY
[ "$fails" -eq 0 ] || exit 1
pictures=0
"$MA" timeline train.pickle -o probe.svg >/dev/null 2>&1 && pictures=1

# time: past the last event
out=$("$MA" report train.pickle --from time:5s 2>&1)
[ $? -eq 2 ] || fail "time:5s past the end: not an error"
echo "$out" | grep -q "time:5s: the trace spans time:0 \.\. " || fail "time:5s: $out"
"$MA" report train.pickle --to time:1ms >/dev/null || fail "time:1ms inside the run"

# the warm cache's verdict
"$MA" report warm.pickle >warm.txt || fail "report warm.pickle"
grep -A3 'fragmentation (reserved - allocated) / reserved, each rated by its trapped part' \
    warm.txt | grep -q 'at the end  [01]\.[0-9][0-9] (good by trapped 0\.0[0-9])' ||
    fail "warm cache: the end's verdict is not the trapped ratio's: $(grep -A3 fragmentation warm.txt)"
grep -q 'severe' warm.txt && fail "warm cache: called severe"
"$MA" report --json warm.pickle >warm.json || fail "report --json warm.pickle"
python3 -c '
import json
d = json.load(open("warm.json"))["devices"][0]
assert d["fragmentation_at_end"] > 0.9, d["fragmentation_at_end"]
assert d["fragmentation_ratings"]["at_end"] == "good", d["fragmentation_ratings"]
by = d["fragmentation_rated_by_trapped"]
assert by["at_end"] is not None and by["at_end"] < 0.15, by' || fail "warm cache: JSON"

if [ "$pictures" -eq 1 ]; then
    # the peak's event number, in the report and in the timeline of an untimed snapshot
    "$MA" report untimed.pickle >untimed.txt || fail "report untimed.pickle"
    peak=$(sed -n 's/.*peak allocated .* at event \([0-9]*\).*/\1/p' untimed.txt | head -1)
    "$MA" timeline untimed.pickle -o untimed.svg >/dev/null || fail "timeline untimed.pickle"
    grep -q "peak [^<]* at event $peak<" untimed.svg ||
        fail "untimed: the timeline's peak is not at event $peak: $(grep -o 'peak [^<]*' untimed.svg)"
    # the heatmap's and the fragmentation picture's axes count the same event ids: one entry
    # of this snapshot makes several events, so their times end short of the last event id
    "$MA" sql untimed.pickle --csv "SELECT max(event_id), max(ts_ns) / 1000 FROM event_rows" |
        tail -1 >ids.csv || fail "sql: the untimed ids"
    for pic in heatmap fragmentation; do
        "$MA" $pic untimed.pickle -o "untimed-$pic.svg" >/dev/null || fail "$pic untimed.pickle"
        python3 - "untimed-$pic.svg" ids.csv <<'PY' || fail "untimed: the $pic's axis is not event ids"
import re, sys
last_id, last_entry = (int(x) for x in open(sys.argv[2]).read().strip().split(","))
ticks = [int(t) for t in re.findall(r">(\d+)<", open(sys.argv[1]).read())]
assert last_entry < last_id, (last_entry, last_id)  # the shape this check needs
top = max(ticks)
assert last_entry < top <= last_id, (ticks, last_entry, last_id)
PY
    done

    # a window's own length
    "$MA" timeline train.pickle --from step:1 --to step:2 -o window.svg >/dev/null ||
        fail "timeline --from step:1 --to step:2"
    "$MA" sql train.pickle --csv "SELECT (SELECT ts_ns FROM event_rows WHERE event_id = \
        (SELECT end_event_id FROM steps WHERE step = 2)) - (SELECT ts_ns FROM event_rows \
        WHERE event_id = (SELECT end_event_id FROM steps WHERE step = 1))" >len.csv ||
        fail "sql: the window's length"
    python3 - window.svg len.csv <<'PY' || fail "window: the subtitle's length"
import re, sys
svg = open(sys.argv[1]).read()
want = int(open(sys.argv[2]).read().split()[-1])
m = re.search(r"reserved over ([0-9.]+) (ns|us|ms|s)\b", svg)
assert m, "no length in the subtitle"
got = float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]
assert abs(got - want) <= 0.01 * want, (m.group(0), want)
PY

    # the fragmentation picture's bands
    "$MA" fragmentation warm.pickle -o frag.svg >/dev/null || fail "fragmentation warm.pickle"
    grep -q "rating of trapped / reserved" frag.svg || fail "fragmentation: the bands' ratio"

    # one entry: the allocated line's colour fills no band wider than a column
    "$MA" timeline one.pickle -o one.svg >/dev/null || fail "timeline one.pickle"
    python3 - one.svg <<'PY' || fail "one entry: a slab in the allocated line's colour"
import re, sys
svg = open(sys.argv[1]).read()
worst = 0
for style, d in re.findall(r'<path style="([^"]*)" d="([^"]*)"', svg):
    if "fill:rgb(6.666667%,6.666667%,6.666667%)" not in style or "fill-opacity" not in style:
        continue
    for ring in d.split("Z"):
        pts = [tuple(map(float, p)) for p in re.findall(r"(-?[0-9.]+) (-?[0-9.]+)", ring)]
        area = abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(pts, pts[1:] + pts[:1])))
        worst = max(worst, area / 2)
assert worst < 400, f"a band of {worst:.0f} px^2 in the allocated line's colour"
PY
fi
finish
