#!/usr/bin/env bash
# test_cli_simulate.sh — `memanalyze simulate` on synthetic runs (issue 14): the
# run's own configuration reproduces the recording (the reserved bytes after every
# request, and the recorded OOMs, which still happen), expandable segments avoid
# the OOMs of a fragmenting run on the same device, the smallest device memory is
# a 2 MiB bracket between the peak allocated and the peak reserved, the verdict
# says so; on snapshots shaped as real ones are (make_pickles.py --sim-shapes): the
# device's limit from an OOM's reserved + free, shortfalls to the byte, PyTorch's own
# release-and-retry not taken for empty_cache(), where a run's own configuration departs
# from its recording (and the caveat in front of the verdicts), no replay of a history
# that asks nothing; errors are one line, exit 2.
# usage: test_cli_simulate.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_simulate
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" -o "$T/steady.zst" --steps 30 --seed 2 2>/dev/null || fail synth
"$SYNTH" -o "$T/frag.zst" --steps 20 --fragment --streams 3 --seed 4 2>/dev/null || fail synth
"$SYNTH" -o "$T/oom.zst" --steps 6 --fragment --device-memory 2684354560 2>/dev/null || fail synth
for run in steady frag oom; do
    "$MA" simulate "$T/$run.zst" --json >"$T/$run.json" || fail "$run: exit $?"
done
"$MA" sql "$T/oom.zst" "SELECT (SELECT reserved_bytes FROM event_rows WHERE op = 7 ORDER BY \
event_id LIMIT 1) + (SELECT value FROM counters WHERE kind = 'driver_free' AND event_id < (SELECT \
min(event_id) FROM event_rows WHERE op = 7) ORDER BY event_id DESC LIMIT 1) AS limit_bytes" --csv >"$T/limit.csv" ||
    fail "the OOM's limit"
python3 - "$T" <<'PY' || fail "simulate's answers"
import json, os, sys
t = sys.argv[1]
def load(name):
    return json.load(open(os.path.join(t, name + ".json")))
for name in ("steady", "frag", "oom"):
    d = load(name)
    own, other = d["configs"][0], d["configs"][1]
    assert own["own"] and not other["own"], name
    assert other["config"] == "expandable_segments:True", (name, other["config"])
    rep = own["reproduction"]
    assert rep and rep["differing"] == 0 and rep["compared_events"] > 0, (name, rep)
    assert own["peak_reserved_bytes"] == rep["recorded_peak_reserved_bytes"], (name, own)
    for c in d["configs"]:
        # the search lies between what is allocated and what a run without OOM reserves
        assert c["peak_allocated_bytes"] <= c["min_device_memory_bytes"], (name, c)
        if not c["oom_count"]:
            assert c["min_device_memory_bytes"] <= c["peak_reserved_bytes"], (name, c)
        else:
            assert c["min_device_memory_bytes"] > d["device_memory_bytes"], (name, c)
        assert c["min_device_memory_exact"], (name, c)
    assert d["verdict"], name
oom = load("oom")
own, es = oom["configs"]
assert own["recorded_ooms"] > 0 and own["recorded_ooms_still_happening"] == own["recorded_ooms"], own
assert own["recorded_oom"] == "still happens" and own["oom_count"] >= own["recorded_ooms"], own
assert es["recorded_oom"] == "avoided" and es["oom_count"] == 0, es
assert "avoids the recorded OOMs" in oom["verdict"], oom["verdict"]
# the limit: the first OOM's reserved + the driver's free its report carried (limit.csv), not
# the device's total (other memory is in use) nor the most the run reserved
assert oom["device_memory_source"] == "an OOM's reserved + free", oom
assert oom["device_memory_bytes"] == int(open(os.path.join(t, "limit.csv")).read().split()[1]), oom
assert oom["device_memory_bytes"] >= own["peak_reserved_bytes"], oom
steady = load("steady")
assert steady["configs"][0]["recorded_oom"] is None, steady["configs"][0]
PY

# The text: one block per configuration, the run's own first, and the verdict.
"$MA" simulate "$T/oom.zst" --config "expandable_segments:True,max_split_size_mb:256" \
    --config "roundup_power2_divisions:4" >"$T/oom.txt" || fail "text: exit $?"
grep -q "^  the run's own: expandable_segments:False" "$T/oom.txt" || fail "own config first"
grep -q "^  expandable_segments:True,max_split_size_mb:256$" "$T/oom.txt" || fail "given config"
grep -q "reproduces the recording: yes" "$T/oom.txt" || fail "reproduction line"
grep -q "^  verdict: " "$T/oom.txt" || fail "verdict line"

# garbage_collection_threshold acts only under a memory fraction, as in PyTorch: inert with
# the device's own memory, active under --device-memory or per_process_memory_fraction, where
# collecting cached segments early makes the fragmenting run allocate more often.
"$MA" simulate "$T/frag.zst" --config "garbage_collection_threshold:0.01" >"$T/gc.txt" ||
    fail "gc text: exit $?"
grep -q "garbage_collection_threshold changes nothing here" "$T/gc.txt" || fail "gc inert note"
"$MA" simulate "$T/frag.zst" --device-memory 8GiB --config "garbage_collection_threshold:0.01" \
    --json >"$T/gc.json" || fail "gc json: exit $?"
"$MA" simulate "$T/frag.zst" --config "garbage_collection_threshold:0.01,per_process_memory_fraction:1" \
    --json >"$T/gc2.json" || fail "gc fraction: exit $?"
"$MA" simulate "$T/frag.zst" --device-memory 8GiB --config "per_process_memory_fraction:0.5" \
    --json >"$T/half.json" || fail "fraction json: exit $?"
python3 - "$T" <<'PY' || fail "garbage collection, memory fraction"
import json, os, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "gc.json")))
own, gc = d["configs"]
assert own["garbage_collection"] is None and gc["garbage_collection"] == "active", d
assert gc["driver_allocations"] > own["driver_allocations"], (own, gc)
d2 = json.load(open(os.path.join(t, "gc2.json")))
assert d2["configs"][1]["garbage_collection"] == "active", d2["configs"][1]
# half the device: the same request stream needs twice the device (to the search's 2 MiB)
own, half = json.load(open(os.path.join(t, "half.json")))["configs"]
assert abs(half["min_device_memory_bytes"] - 2 * own["min_device_memory_bytes"]) <= 4 << 20, (own, half)
assert half["peak_reserved_bytes"] <= 4 << 30, half
assert d2["configs"][1]["config"].endswith(",per_process_memory_fraction:1") or \
    d2["configs"][1]["config"] == "garbage_collection_threshold:0.01,per_process_memory_fraction:1", d2
PY

# -o: the picture of reserved under each configuration (when this build draws pictures).
if "$MA" simulate "$T/oom.zst" -o "$T/sim.png" >/dev/null 2>"$T/o.err"; then
    python3 -c "import sys; d=open(sys.argv[1],'rb').read(8); sys.exit(d != b'\x89PNG\r\n\x1a\n')" "$T/sim.png" ||
        fail "-o wrote no PNG"
else
    grep -q "pictures are off in this build" "$T/o.err" || fail "-o: $(cat "$T/o.err")"
fi

# Snapshots with the shapes of real recordings (tests/make_pickles.py --sim-shapes).
python3 "$(dirname "$0")/make_pickles.py" --sim-shapes "$T/shapes" >/dev/null || fail "make_pickles --sim-shapes"
for run in retry-oom settings-unrecorded; do
    "$MA" simulate "$T/shapes/$run.pickle" --json >"$T/$run.json" || fail "$run: exit $?"
    "$MA" simulate "$T/shapes/$run.pickle" >"$T/$run.txt" || fail "$run text: exit $?"
done
python3 - "$T" <<'PY' || fail "simulate on the shapes"
import json, os, sys
t = sys.argv[1]
MIB = 1 << 20
d = json.load(open(os.path.join(t, "retry-oom.json")))
own = d["configs"][0]
# the limit: the first OOM's reserved (8000 MiB) + the free its entry recorded, not the peak
assert d["device_memory_bytes"] == 10240 * MIB - 2900000, d["device_memory_bytes"]
assert d["device_memory_source"] == "an OOM's reserved + free", d
# the releases before the retried 5000 MiB request and before each OOM are PyTorch's own: the
# one empty_cache() is the program's, at the end
assert own["empty_cache_calls"] == 1, own
assert own["reproduction"]["differing"] == 0, own["reproduction"]
assert own["recorded_ooms"] == 2 and own["oom_count"] == 2, own
oom = own["ooms"][0]
assert oom["driver_request_bytes"] == 2240 * MIB and oom["shortfall_bytes"] == 2900000, oom
assert d["caveat"] is None and not d["verdict"].startswith("an estimate"), d
d = json.load(open(os.path.join(t, "settings-unrecorded.json")))
rep = d["configs"][0]["reproduction"]
assert rep["differing"] > 0 and rep["first_difference_op"] == "alloc", rep
assert rep["first_difference_recorded_reserved_bytes"] == 130 * MIB, rep
assert rep["first_difference_reserved_bytes"] == 100 * MIB, rep
assert rep["first_difference_bytes"] == -30 * MIB, rep
assert rep["largest_difference_bytes"] == -80 * MIB, rep
assert d["caveat"].startswith("an estimate: the run's own configuration departs from the "
                              "recording at event %d" % rep["first_difference_event_id"]), d
assert d["verdict"].startswith(d["caveat"] + "; "), d
PY
grep -q "with 2.18 GiB free: 2.77 MiB short$" "$T/retry-oom.txt" || fail "shortfall: $(grep OOM "$T/retry-oom.txt")"
grep -q "1 empty_cache() calls replayed" "$T/retry-oom.txt" || fail "retry-oom: empty_cache count"
grep -q "estimate" "$T/retry-oom.txt" && fail "retry-oom reproduces: no estimate"
grep -q "reproduces the recording: no (recorded peak reserved 180 MiB): from event [0-9]* (an alloc) on, reserved 100 MiB against the recorded 130 MiB (-30.0 MiB)" \
    "$T/settings-unrecorded.txt" || fail "where it departs: $(grep reproduces "$T/settings-unrecorded.txt")"
[ "$(grep -c "^    estimate: needs " "$T/settings-unrecorded.txt")" -eq 2 ] || fail "caveat on each row's verdict"
grep -q "^  verdict: an estimate: the run's own configuration departs from the recording at event" \
    "$T/settings-unrecorded.txt" || fail "caveat in front of the verdict"
# histories that ask the allocator nothing: nothing to replay, one line, exit 2
"$MA" simulate "$T/shapes/one-entry.pickle" >"$T/one.out" 2>"$T/one.err"; [ $? -eq 2 ] || fail "one entry: exit"
[ ! -s "$T/one.out" ] && grep -q "device 0's history holds one entry: nothing to replay$" "$T/one.err" ||
    fail "one entry: $(cat "$T/one.out" "$T/one.err")"
"$MA" simulate "$T/shapes/frees-only.pickle" >/dev/null 2>"$T/frees.err"; [ $? -eq 2 ] || fail "frees only: exit"
grep -q "history holds 2 entries and no allocation: nothing to replay$" "$T/frees.err" || fail "frees only: $(cat "$T/frees.err")"

# Errors: one line, exit 2.
"$MA" simulate "$T/steady.zst" --config "bogus:1" >/dev/null 2>"$T/e1"; [ $? -eq 2 ] || fail "bad config exit"
[ "$(wc -l <"$T/e1")" -eq 1 ] && grep -q "unknown key 'bogus'" "$T/e1" || fail "bad config: $(cat "$T/e1")"
"$MA" simulate "$T/steady.zst" --config "per_process_memory_fraction:2" >/dev/null 2>"$T/e2"
[ $? -eq 2 ] && grep -q "must be in \[0.0, 1.0\]" "$T/e2" || fail "fraction: $(cat "$T/e2")"
"$MA" simulate "$T/steady.zst" --device-memory lots >/dev/null 2>"$T/e3"; [ $? -eq 2 ] || fail "bad memory exit"

finish
