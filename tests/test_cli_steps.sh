#!/usr/bin/env bash
# test_cli_steps.sh — `memanalyze steps` (issue 16) on a synthetic run with a planted spike: one
# forward of step 7 allocates 1 GiB more at layers.py:70 for a moment. The table flags that step
# alone, its peak is the spike's allocation, in forward; step 0's peak is AdamW's state (the
# optimizer), the others' in backward (gradients made while activations live); every end state,
# count and growth agrees with the events.
# usage: test_cli_steps.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_steps
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" -o "$T/spike.zst" --steps 12 --spike 7:1GiB 2>/dev/null || fail synth
"$MA" import "$T/spike.zst" -o "$T/spike.db" >/dev/null || fail import
"$MA" steps "$T/spike.db" --json >"$T/steps.json" || fail "steps: exit $?"
"$MA" steps "$T/spike.db" >"$T/steps.txt" || fail "steps text: exit $?"
python3 - "$T" <<'PY' || fail "steps' answers"
import json, os, sqlite3, sys
t = sys.argv[1]
rows = json.load(open(os.path.join(t, "steps.json")))["steps"]
db = sqlite3.connect(os.path.join(t, "spike.db"))
assert [r["step"] for r in rows] == list(range(12)), [r["step"] for r in rows]
flagged = [r["step"] for r in rows if r["anomaly"]]
assert flagged == [7] and rows[7]["anomaly"].startswith("peak "), (flagged, rows[7])
# the peak of step 7 is the spike's own allocation, made in forward
size, site = db.execute(
    "SELECT e.size, f.file || ':' || f.line FROM events e JOIN stack_frames f ON "
    "f.stack_id = e.stack_id AND f.depth = 0 WHERE e.event_id = ?",
    (rows[7]["peak_event_id"],)).fetchone()
inner = db.execute("SELECT name, file, line FROM stack_frames WHERE stack_id = (SELECT stack_id "
                   "FROM events WHERE event_id = ?) AND file LIKE '%.py' ORDER BY depth LIMIT 1",
                   (rows[7]["peak_event_id"],)).fetchone()
assert size == 1 << 30 and inner == ("forward", "layers.py", 70), (size, inner)
assert rows[7]["peak_phase"] == "forward", rows[7]
assert rows[0]["peak_phase"] == "optimizer", rows[0]
assert all(r["peak_phase"] == "backward" for r in rows[1:7] + rows[8:]), [r["peak_phase"] for r in rows]
before = None
for r in rows:
    begin, end = db.execute("SELECT begin_event_id, end_event_id FROM steps WHERE step = ?",
                            (r["step"],)).fetchone()
    peak, allocs, frees = db.execute(
        "SELECT max(allocated_bytes), sum(op = 'alloc' AND level = 'block'), sum(op = 'free' AND "
        "level = 'block') FROM events WHERE device = 0 AND event_id > ? AND event_id <= ?",
        (begin, end)).fetchone()
    assert (r["peak_allocated_bytes"], r["allocs"], r["frees"]) == (peak, allocs, frees), r
    alloc_end, res_end, segs = db.execute(
        "SELECT allocated_bytes, reserved_bytes, segments FROM timeline WHERE device = 0 AND "
        "event_id <= ? ORDER BY event_id DESC LIMIT 1", (end,)).fetchone()
    assert (r["allocated_at_end_bytes"], r["reserved_at_end_bytes"], r["segments_at_end"]) == \
        (alloc_end, res_end, segs), r
    if before is None:
        before = db.execute("SELECT allocated_bytes FROM timeline WHERE device = 0 AND "
                            "event_id <= ? ORDER BY event_id DESC LIMIT 1", (begin,)).fetchone()[0]
    assert r["growth_bytes"] == alloc_end - before, r
    before = alloc_end
    assert abs(r["fragmentation_at_end"] - (res_end - alloc_end) / res_end) < 1e-5, r
PY
grep -q "^ *7 .*forward .*peak .* above its neighbours" "$T/steps.txt" || fail "steps text: the spike"

# A run without steps says so; a bad device is one line, exit 2.
python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/snaps" >/dev/null || fail "make_pickles"
"$MA" steps "$T/snaps/es-oom.pickle" >"$T/none.txt" || fail "steps without steps: exit $?"
grep -q "no steps" "$T/none.txt" || fail "steps without steps: $(cat "$T/none.txt")"
"$MA" steps "$T/spike.db" --device 5 >/dev/null 2>"$T/e1"; [ $? -eq 2 ] || fail "bad device: exit"
grep -q "no device 5" "$T/e1" || fail "bad device: $(cat "$T/e1")"

finish
