#!/usr/bin/env bash
# test_cli_stages.sh — `memanalyze stages` (issue 16) on a synthetic run that names its phases
# as NVTX ranges (synth --stages: model_creation, then per step data_loading, forward, backward,
# optimizer). Known answers: model_creation leaves the parameters; data_loading leaves each
# step's input batch; the optimizer leaves AdamW's state in step 0 only and allocates it at
# adamw.py:137; every range is counted; the peak inside backward is the run's peak.
# usage: test_cli_stages.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_stages
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" -o "$T/run.zst" --steps 6 --stages 2>/dev/null || fail synth
"$MA" import "$T/run.zst" -o "$T/run.db" >/dev/null || fail import
"$MA" stages "$T/run.db" --json >"$T/stages.json" || fail "stages: exit $?"
"$MA" stages "$T/run.db" >"$T/stages.txt" || fail "stages text: exit $?"
python3 - "$T" <<'PY' || fail "stages' answers"
import json, os, sqlite3, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "stages.json")))
st = {s["name"]: s for s in d["stages"]}
db = sqlite3.connect(os.path.join(t, "run.db"))
def site_bytes(file, line, step_range=None):
    q = ("SELECT size FROM events e WHERE op = 'alloc' AND level = 'block' AND event_id > 0 AND "
         "(SELECT f.file || ':' || f.line FROM stack_frames f WHERE f.stack_id = e.stack_id AND "
         "f.file LIKE '%.py' ORDER BY f.depth LIMIT 1) = ? ORDER BY event_id")
    return [r[0] for r in db.execute(q, (f"{file}:{line}",))]
params = site_bytes("model.py", 21)
assert st["model_creation"]["count"] == 1 and st["model_creation"]["net_first_bytes"] == sum(params), \
    (st["model_creation"], sum(params))
inputs = site_bytes("data.py", 47)
dl = st["data_loading"]
assert dl["count"] == 6 and dl["net_first_bytes"] == inputs[0] and dl["allocs"] == 6, (dl, inputs[:2])
adam = site_bytes("adamw.py", 137)
opt = st["optimizer"]
assert opt["count"] == 6 and opt["net_first_bytes"] == sum(adam), (opt, sum(adam))
assert opt["net_total_bytes"] == opt["net_first_bytes"], opt  # the state is made once
assert opt["top_sites"][0]["site"] == "adamw.py:137 _init_group", opt["top_sites"]
assert opt["top_sites"][0]["allocated_bytes"] == sum(adam), opt["top_sites"]
assert st["forward"]["count"] == st["backward"]["count"] == 6
peak = db.execute("SELECT peak_allocated_bytes FROM devices WHERE device = 0").fetchone()[0]
assert st["backward"]["peak_allocated_bytes"] == peak, (st["backward"], peak)
assert d["stages"][0]["peak_allocated_bytes"] == peak  # sorted by their peak
PY
grep -q "^  optimizer  x6" "$T/stages.txt" || fail "stages text: optimizer"

# Ranges made by hand in copies of the database: names longer than a row's name are still one
# stage each; a name nested in itself counts an event once; a range between two events holds
# the state entering it; with two devices a range counts for the device whose events it holds.
python3 - "$T" <<'PY' || fail "made ranges"
import os, shutil, sqlite3, sys
t = sys.argv[1]
shutil.copy(os.path.join(t, "run.db"), os.path.join(t, "long.db"))
db = sqlite3.connect(os.path.join(t, "long.db"))
db.execute("UPDATE markers SET name = 'aten::addmm(" + "x" * 150 + ") ' || name WHERE name IS NOT NULL")
db.commit()
shutil.copy(os.path.join(t, "run.db"), os.path.join(t, "nested.db"))
db = sqlite3.connect(os.path.join(t, "nested.db"))
b, e = db.execute("SELECT begin_ts_ns, end_ts_ns FROM ranges WHERE name = 'step 0'").fetchone()
at = db.execute("SELECT ts_ns, allocated_bytes FROM timeline WHERE device = 0 AND event_id = "
                "(SELECT max(event_id) FROM timeline WHERE device = 0 AND ts_ns < ?)", (e,)).fetchone()
rows = [(b, 'push', 'outer'), (b, 'push', 'outer'), (e, 'pop', 'outer'), (e, 'pop', 'outer'),
        (at[0] + 1, 'start', 'empty'), (at[0] + 2, 'end', 'empty')]
first = db.execute("SELECT max(marker_id) FROM markers").fetchone()[0] + 1
for i, (ts, kind, name) in enumerate(rows):
    begin = None
    if kind == 'pop':
        begin = first + (1 if i == 2 else 0)
    if kind == 'end':
        begin = first + 4
    db.execute("INSERT INTO markers (marker_id, ts_ns, tid, kind, name, domain, begin_marker_id) "
               "VALUES (?, ?, 1, ?, ?, NULL, ?)", (first + i, ts, kind, name, begin))
db.commit()
open(os.path.join(t, "empty.allocated"), "w").write(str(at[1]))
PY
"$MA" stages "$T/run.db" --json >"$T/plain.json" || fail "stages: exit $?"
"$MA" stages "$T/long.db" --json >"$T/long.json" || fail "stages long names: exit $?"
"$MA" stages "$T/nested.db" --json >"$T/nested.json" || fail "stages nested: exit $?"
"$SYNTH" -o "$T/two.zst" --steps 3 --devices 2 --stages 2>/dev/null || fail synth
"$MA" stages "$T/two.zst" --device 1 --json >"$T/two.json" || fail "stages two devices: exit $?"
"$MA" sql "$T/two.zst" --csv "SELECT sum(size) FROM events e WHERE device = 1 AND op = 'alloc' AND \
    level = 'block' AND (SELECT f.file || ':' || f.line FROM stack_frames f WHERE f.stack_id = \
    e.stack_id AND f.file LIKE '%.py' ORDER BY f.depth LIMIT 1) = 'adamw.py:137'" | tail -1 \
    >"$T/two.adam"
python3 - "$T" <<'PY' || fail "stages of made ranges"
import json, os, sys
t = sys.argv[1]
load = lambda n: {s["name"]: s for s in json.load(open(os.path.join(t, n + ".json")))["stages"]}
plain, long_, nested, two = load("plain"), load("long"), load("nested"), load("two")
assert len(long_) == len(plain), (len(long_), len(plain))  # whole names: none merged, none split
assert sorted(n.split(") ", 1)[1] for n in long_) == sorted(plain), sorted(long_)[:2]
assert all(long_[n]["count"] == plain[n.split(") ", 1)[1]]["count"] for n in long_)
assert nested["outer"]["count"] == 2, nested["outer"]
assert (nested["outer"]["allocs"], nested["outer"]["allocated_bytes"]) == \
    (plain["step 0"]["allocs"], plain["step 0"]["allocated_bytes"]), (nested["outer"], plain["step 0"])
empty = int(open(os.path.join(t, "empty.allocated")).read())
assert nested["empty"]["count"] == 1 and nested["empty"]["peak_allocated_bytes"] == empty, nested["empty"]
assert nested["empty"]["net_first_bytes"] == 0, nested["empty"]
adam = int(open(os.path.join(t, "two.adam")).read())
assert two["optimizer"]["count"] == 3 and two["optimizer"]["net_first_bytes"] == adam, (two["optimizer"], adam)
PY

# Numbered ranges of one kind are one stage; ranges that hold none of a device's events are said
# so, not "none"; a history that begins mid-run (make_pickles.py --mid-run: steps 0..3 before
# it, step 4 straddling its first event, a second device busy after the last step) counts no
# range that ended before it and no net for the one that straddles it.
python3 "$(dirname "$0")/make_pickles.py" --mid-run "$T/mid.pickle" >/dev/null || fail "make_pickles --mid-run"
"$MA" stages "$T/mid.pickle" --json >"$T/mid.json" || fail "stages mid-run: exit $?"
"$MA" stages "$T/mid.pickle" >"$T/mid.txt" || fail "stages mid-run text: exit $?"
"$MA" stages "$T/mid.pickle" --device 1 >"$T/mid1.txt" || fail "stages device 1: exit $?"
"$MA" stages "$T/mid.pickle" --device 1 --json >"$T/mid1.json" || fail "stages device 1 json: exit $?"
"$MA" steps "$T/mid.pickle" --json >"$T/midsteps.json" || fail "steps mid-run: exit $?"
python3 - "$T" <<'PY' || fail "stages of a history that begins mid-run"
import json, os, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "mid.json")))
steps = json.load(open(os.path.join(t, "midsteps.json")))["steps"]
assert len(d["stages"]) == 1, [s["name"] for s in d["stages"]]
s = d["stages"][0]
assert s["name"] == "ProfilerStep#4..#11" and s["numbers"] == {"first": 4, "last": 11}, s
assert s["count"] == 8 and s["net_unknown"] == 1, s
assert d["ranges"] == 12 and d["ranges_elsewhere"] == 4, d
assert s["net_first_bytes"] == steps[1]["growth_bytes"], (s, steps[1])
assert s["net_total_bytes"] == sum(r["growth_bytes"] for r in steps[1:]), s
assert s["peak_allocated_bytes"] == max(r["peak_allocated_bytes"] for r in steps), s
d1 = json.load(open(os.path.join(t, "mid1.json")))
assert d1["stages"] == [] and d1["ranges"] == 12 and d1["ranges_elsewhere"] == 12, d1
PY
grep -q "^  ProfilerStep#4..#11  x8" "$T/mid.txt" || fail "stages mid-run text: $(cat "$T/mid.txt")"
grep -q "12 of 12 named ranges hold none of this device's memory events" "$T/mid1.txt" \
    || fail "stages device 1: $(cat "$T/mid1.txt")"
grep -q "no named ranges" "$T/mid1.txt" && fail "stages device 1 says none"

# A snapshot without annotations has no stages, and says so.
python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/snaps" >/dev/null || fail "make_pickles"
"$MA" stages "$T/snaps/es-oom.pickle" >"$T/none.txt" || fail "stages without ranges: exit $?"
grep -q "no named ranges" "$T/none.txt" || fail "stages without ranges: $(cat "$T/none.txt")"

finish
