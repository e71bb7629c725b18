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

# A history that begins mid-run (make_pickles.py --mid-run: PyTorch's ring dropped steps 0..3
# and half of step 4; the annotations kept them all): the steps that ended before the history
# are no rows (their end state would be the seed's), the one that straddles its first event has
# no growth, none is computed across the hole, and the text says where the history begins.
python3 "$(dirname "$0")/make_pickles.py" --mid-run "$T/mid.pickle" >/dev/null || fail "make_pickles --mid-run"
"$MA" steps "$T/mid.pickle" --json >"$T/mid.json" || fail "steps mid-run: exit $?"
"$MA" steps "$T/mid.pickle" >"$T/mid.txt" || fail "steps mid-run text: exit $?"
"$MA" import "$T/mid.pickle" -o "$T/mid.db" >/dev/null || fail "import mid-run"
python3 - "$T" <<'PY' || fail "steps of a history that begins mid-run"
import json, os, sqlite3, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "mid.json")))
want = json.load(open(os.path.join(t, "mid.pickle.expected.json")))
rows = d["steps"]
first, lost = want["first_step"], want["lost_steps"]
assert [r["step"] for r in rows] == [s for s in want["steps"] if s >= first], [r["step"] for r in rows]
h = d["history"]
assert h["mid_run"] and h["first_step"] == first and h["steps_before"] == len(lost), h
assert (h["steps_before_first"], h["steps_before_last"]) == (lost[0], lost[-1]), h
assert rows[0]["partial"] and rows[0]["growth_bytes"] is None, rows[0]
assert not any(r["partial"] for r in rows[1:]), rows
db = sqlite3.connect(os.path.join(t, "mid.db"))
for prev, r in zip(rows, rows[1:]):
    assert r["growth_bytes"] == r["allocated_at_end_bytes"] - prev["allocated_at_end_bytes"], r
first_event = db.execute("SELECT min(event_id) FROM events WHERE device = 0 AND event_id > 0").fetchone()[0]
begin = db.execute("SELECT begin_event_id FROM steps WHERE step = ?", (first,)).fetchone()[0]
assert begin < first_event, (begin, first_event)
PY
grep -q "history begins mid-run: 4 steps (0..3) ended before its first event" "$T/mid.txt" \
    || fail "steps mid-run text: $(head -3 "$T/mid.txt")"
grep -Eq "^ +4 .* \? +$" "$T/mid.txt" || fail "steps mid-run text: step 4's growth"

# An input without steps (make_pickles.py --no-steps: the training loop without its
# ProfilerStep#N markers) has implicit ones: the whole history, or one per optimizer step where
# torch.profiler's "Optimizer.step#..." ranges mark them; each peak and its phase are the marked
# steps' (the planted answers), and report says the peak's phase, text and JSON.
python3 "$(dirname "$0")/make_pickles.py" --no-steps "$T/ns" >/dev/null || fail "make_pickles --no-steps"
"$MA" steps "$T/ns/optimizer-ranges.pickle" --json >"$T/ns-opt.json" || fail "steps optimizer ranges: exit $?"
"$MA" steps "$T/ns/no-annotations.pickle" --json >"$T/ns-none.json" || fail "steps no annotations: exit $?"
"$MA" steps "$T/ns/no-annotations.pickle" >"$T/ns-none.txt" || fail "steps no annotations text: exit $?"
"$MA" report "$T/ns/no-annotations.pickle" --json >"$T/ns-report.json" || fail "report no steps: exit $?"
"$MA" report "$T/ns/no-annotations.pickle" >"$T/ns-report.txt" || fail "report no steps text: exit $?"
python3 - "$T" <<'PY' || fail "implicit steps"
import json, os, sys
t = sys.argv[1]
want = json.load(open(os.path.join(t, "ns", "expected.json")))
opt = json.load(open(os.path.join(t, "ns-opt.json")))["steps"]
assert [(r["step"], r["peak_allocated_bytes"], r["peak_phase"]) for r in opt] == \
    [(s["step"], s["peak_allocated_bytes"], s["peak_phase"]) for s in want["steps"]], opt
assert all(r["implicit"] for r in opt) and not opt[-1]["anomaly"], opt
one = json.load(open(os.path.join(t, "ns-none.json")))["steps"]
peak = max(want["steps"], key=lambda s: s["peak_allocated_bytes"])
assert len(one) == 1 and one[0]["implicit"], one
assert (one[0]["peak_allocated_bytes"], one[0]["peak_phase"]) == \
    (want["peak_allocated_bytes"], peak["peak_phase"]), (one, peak)
dev = json.load(open(os.path.join(t, "ns-report.json")))["devices"][0]
assert dev["peak_allocated_phase"] == peak["peak_phase"], dev["peak_allocated_phase"]
PY
grep -q "the input marks no steps: its history is one step" "$T/ns-none.txt" || fail "implicit text: $(head -3 "$T/ns-none.txt")"
grep -q "^    in the backward phase" "$T/ns-report.txt" || fail "report text: the peak's phase"

# A run without steps says so; a bad device is one line, exit 2.
python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/snaps" >/dev/null || fail "make_pickles"
"$MA" steps "$T/snaps/es-oom.pickle" >"$T/none.txt" || fail "steps without steps: exit $?"
grep -q "no steps" "$T/none.txt" || fail "steps without steps: $(cat "$T/none.txt")"
"$MA" steps "$T/spike.db" --device 5 >/dev/null 2>"$T/e1"; [ $? -eq 2 ] || fail "bad device: exit"
grep -q "no device 5" "$T/e1" || fail "bad device: $(cat "$T/e1")"

finish
