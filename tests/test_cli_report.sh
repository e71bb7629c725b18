#!/usr/bin/env bash
# test_cli_report.sh — `report` and `leaks` on synthetic runs with known
# answers: the planted leak is the first site and its rate is within 5 % of
# the truth; optimizer state made once in step 0 is not growth; OOMs on a
# small device are reported with their request; JSON carries the contract's
# keys and agrees with SQL on the same database; errors are one line, exit 2.
# usage: test_cli_report.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_report
. "$(dirname "$0")/cli_lib.sh"

LEAK=1000000
"$SYNTH" -o "$T/leak.zst" --steps 40 --leak $LEAK --fragment --seed 3 2>/dev/null || fail synth
"$MA" leaks "$T/leak.zst" --json >"$T/leaks.json" || fail "leaks exit $?"
python3 - "$T/leaks.json" $LEAK <<'PY' || fail "leaks: planted leak not first or rate off"
import json, sys
d = json.load(open(sys.argv[1])); truth = int(sys.argv[2])
first = d["sites"][0]
assert first["site"] == "train.py:88 train_step", first
assert abs(first["growth_bytes_per_step"] - truth) <= 0.05 * truth, first
assert first["never_freed_count"] == 40, first
# AdamW state (adamw.py:137) is allocated once in step 0: never freed, but no growth
adam = [s for s in d["sites"] if s["site"].startswith("adamw.py:137")]
assert adam and adam[0]["growth_bytes_per_step"] == 0, adam
assert d["growth_windows"] == 39, d["growth_windows"]
PY

"$MA" report "$T/leak.zst" --json >"$T/report.json" || fail "report --json exit $?"
"$MA" sql "$T/leak.zst" --csv "SELECT max(allocated_bytes), max(reserved_bytes), max(requested_bytes) FROM timeline" >"$T/peaks.csv"
python3 - "$T/report.json" "$T/peaks.csv" <<'PY' || fail "report --json keys or values"
import json, sys
r = json.load(open(sys.argv[1]))
peaks = [int(x) for x in open(sys.argv[2]).read().splitlines()[1].split(",")]
d = r["devices"][0]
for key in ("device", "peak_allocated_bytes", "peak_requested_bytes", "peak_reserved_bytes",
            "start_reserved_bytes", "end_reserved_bytes", "allocs", "frees",
            "never_freed_count", "never_freed_bytes", "fragmentation_at_peak"):
    assert key in d, key
assert [d["peak_allocated_bytes"], d["peak_reserved_bytes"], d["peak_requested_bytes"]] == peaks, (d, peaks)
assert d["start_reserved_bytes"] == 0
assert d["allocs"] - d["frees"] >= d["never_freed_count"] > 0
assert 0 <= d["fragmentation_at_peak"] < 1
assert d["leaks"][0]["site"] == "train.py:88 train_step"
PY
"$MA" report "$T/leak.zst" >"$T/report.txt" || fail "report exit $?"
grep -q "+977 KiB/step" "$T/report.txt" || fail "report does not name the leak rate"
grep -q "train.py:88 train_step" "$T/report.txt" || fail "report does not name the leak site"
grep -q "50 steps\|40 steps (step 0 .. 39)" "$T/report.txt" || fail "report steps line"

# A window: from step 10 to step 20 only
"$MA" report "$T/leak.zst" --from step:10 --to step:20 >"$T/window.txt" || fail "window exit"
grep -q "window: from" "$T/window.txt" || fail "window not stated"

# OOM on a small device: reported with the request and the verdict
"$SYNTH" -o "$T/oom.zst" --steps 6 --fragment --device-memory 2684354560 2>/dev/null
"$MA" report "$T/oom.zst" >"$T/oom.txt" || fail "oom report exit"
grep -q "OOM at event .* asking" "$T/oom.txt" || fail "OOM line missing"
grep -q "failed driver allocation" "$T/oom.txt" || fail "failed driver allocations not reported"

# Errors: one line, exit 2
"$MA" report "$T/leak.zst" --from step:999 >/dev/null 2>"$T/e1"; [ $? -eq 2 ] || fail "bad step: exit"
grep -q "no such step" "$T/e1" || fail "bad step message"
"$MA" report "$T/leak.zst" --to bogus >/dev/null 2>"$T/e2"; [ $? -eq 2 ] || fail "bad WHEN: exit"
[ "$(wc -l <"$T/e2")" -eq 1 ] || fail "bad WHEN: not one line"
"$MA" report "$T/leak.zst" --device 7 >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad device: exit"
echo "not a trace" >"$T/x.txt"
"$MA" report "$T/x.txt" >/dev/null 2>"$T/e3"; [ $? -eq 2 ] || fail "bad input: exit"
grep -q "not a gpumemtrace trace, a PyTorch memory snapshot or a memanalyze database" "$T/e3" || fail "bad input message"

# The replay's summary tables and the scans of event_rows give the same answers
"$MA" report "$T/leak.zst" --json >"$T/a.json"
GMT_NO_SUMMARIES=1 "$MA" report "$T/leak.zst" --json >"$T/b.json"
cmp -s "$T/a.json" "$T/b.json" || fail "report: summaries and scans disagree"
"$MA" leaks "$T/leak.zst" --json >"$T/c.json"
GMT_NO_SUMMARIES=1 "$MA" leaks "$T/leak.zst" --json >"$T/d.json"
cmp -s "$T/c.json" "$T/d.json" || fail "leaks: summaries and scans disagree"
"$MA" report "$T/oom.zst" >"$T/e.txt"
GMT_NO_SUMMARIES=1 "$MA" report "$T/oom.zst" >"$T/f.txt"
cmp -s "$T/e.txt" "$T/f.txt" || fail "report (OOM run): summaries and scans disagree"

# sql: table (bytes in binary units), --csv, --json, --raw; errors
"$MA" sql "$T/leak.zst" --csv "SELECT count(*) AS n FROM steps" >"$T/q.csv"
[ "$(cat "$T/q.csv")" = "$(printf 'n\n40')" ] || fail "sql --csv: $(cat "$T/q.csv")"
"$MA" sql "$T/leak.zst" --json "SELECT step, name FROM steps WHERE step < 2" >"$T/q.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d==[{'step':0,'name':'step 0'},{'step':1,'name':'step 1'}], d" "$T/q.json" || fail "sql --json"
"$MA" sql "$T/leak.zst" "SELECT 3221225472 AS peak_bytes, 7 AS steps" >"$T/q.txt"
grep -q "3.00 GiB" "$T/q.txt" || fail "sql table: bytes column not in binary units"
grep -q "(1 row)" "$T/q.txt" || fail "sql table: row count"
"$MA" sql "$T/leak.zst" --raw "SELECT 3221225472 AS peak_bytes" | grep -q 3221225472 || fail "sql --raw"
"$MA" sql "$T/leak.zst" "SELECT nope FROM nothing" >/dev/null 2>"$T/e4"; [ $? -eq 2 ] || fail "sql error: exit"
grep -q "SQL error" "$T/e4" || fail "sql error message"
# several statements: refused, never only the first run (issue 28); comments and ';' may follow
"$MA" sql "$T/leak.zst" --csv "SELECT 1 AS a; SELECT 2 AS b" >"$T/q2" 2>"$T/e6"
[ $? -eq 2 ] && grep -q "one statement at a time" "$T/e6" && [ ! -s "$T/q2" ] ||
    fail "sql with two statements: $(cat "$T/q2" "$T/e6")"
"$MA" sql "$T/leak.zst" --csv "SELECT 1 AS a; -- the end
  ; /* done */" >"$T/q3" || fail "sql: a comment after the statement"
[ "$(cat "$T/q3")" = "$(printf 'a\n1')" ] || fail "sql with a trailing comment: $(cat "$T/q3")"

# import: the database for any SQLite client; a database is not imported again
"$MA" import "$T/leak.zst" -o "$T/out.db" >/dev/null || fail "import exit"
python3 -c "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); assert db.execute('SELECT count(*) FROM steps').fetchone()[0]==40" "$T/out.db" || fail "import: steps"
"$MA" import "$T/out.db" -o "$T/again.db" >/dev/null 2>"$T/e5"; [ $? -eq 2 ] || fail "import of a database: exit"
grep -q "already a memanalyze database" "$T/e5" || fail "import of a database: message"
"$MA" report "$T/out.db" >/dev/null || fail "report on a database input"
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('CREATE TABLE t(x)')" "$T/other.db"
"$MA" report "$T/other.db" >/dev/null 2>"$T/e6"; [ $? -eq 2 ] || fail "foreign SQLite file: exit"
grep -q "not a memanalyze database" "$T/e6" || fail "foreign SQLite file: message"

# The layout at the end from the replay's live_at_end list equals the one a pass over the
# events builds (the pass is what a database without the list gets)
cp "$T/out.db" "$T/nolist.db"
python3 -c "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); db.execute('DROP TABLE live_at_end'); db.commit()" "$T/nolist.db"
"$MA" segments "$T/out.db" --json --blocks >"$T/end1.json" || fail "segments at end (list)"
"$MA" segments "$T/nolist.db" --json --blocks >"$T/end2.json" || fail "segments at end (pass)"
cmp -s "$T/end1.json" "$T/end2.json" || fail "layout at end: live_at_end and the pass disagree"
# and a late moment, rebuilt backwards from the end, equals the forward pass
last=$("$MA" sql "$T/out.db" --csv "SELECT max(event_id) FROM event_rows" | tail -1)
for at in "event:$((last * 2 / 3))" "event:$((last - 5))" step:33; do
  "$MA" segments "$T/out.db" --at "$at" --json --blocks >"$T/late1.json" || fail "segments at $at"
  "$MA" segments "$T/nolist.db" --at "$at" --json --blocks >"$T/late2.json" || fail "segments at $at (pass)"
  cmp -s "$T/late1.json" "$T/late2.json" || fail "layout at $at: backwards and forwards disagree"
done

# The database is built once and reused
n1=$(ls "$GMT_CACHE_DIR" | wc -l)
"$MA" report "$T/leak.zst" >/dev/null
[ "$(ls "$GMT_CACHE_DIR" | wc -l)" -eq "$n1" ] || fail "database rebuilt for an unchanged input"

# The timeline's stacked sites reach the allocated envelope at the peak: the bucket of the peak
# holds every site's bytes at that moment (site_buckets.peak_live_bytes), which sum to the peak.
"$SYNTH" --steps 30 --fragment --seed 3 -o "$T/spike.zst" >/dev/null
"$MA" import "$T/spike.zst" -o "$T/spike.db" >/dev/null || fail "import spike.zst"
python3 - "$T/spike.db" <<'EOF' || fail "the sites at the peak's bucket do not sum to the peak"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
checked = 0
for dev, peak, peak_id in db.execute("SELECT device, peak_allocated_bytes, peak_allocated_event_id "
                                     "FROM devices WHERE peak_allocated_bytes IS NOT NULL"):
    for (ns,) in db.execute("SELECT DISTINCT bucket_ns FROM site_buckets WHERE device = ?", (dev,)):
        b = db.execute("SELECT bucket FROM timeline_buckets WHERE device = ? AND bucket_ns = ? AND "
                       "first_event_id <= ? AND last_event_id >= ?", (dev, ns, peak_id, peak_id)).fetchone()
        if not b:
            continue
        before, at = {}, {}
        for bucket, stack, live, at_max in db.execute(
                "SELECT bucket, stack_id, live_bytes, peak_live_bytes FROM site_buckets "
                "WHERE device = ? AND bucket_ns = ? ORDER BY bucket", (dev, ns)):
            if bucket < b[0]:
                before[stack] = live
            elif bucket == b[0]:
                at[stack] = at_max
        total = sum(at.get(s, before.get(s, 0)) for s in set(before) | set(at))
        assert total == peak, (dev, ns, total, peak)
        checked += 1
assert checked, "no bucket holds the peak"
EOF

# An input without timestamps (meta timestamps = 0, as for a PyTorch <= 2.1 snapshot): times are
# the events' order, and nothing says "ms".
cp "$T/spike.db" "$T/untimed.db"
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1])
db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", ("timestamps", "0")); db.commit()' \
  "$T/untimed.db"
"$MA" report "$T/untimed.db" >"$T/untimed.txt" || fail "report of an untimed input"
grep -q "no timestamps" "$T/untimed.txt" || fail "report does not say the input has no timestamps"
grep -q "peak allocated .* at event [0-9]* (step [0-9]*)$" "$T/untimed.txt" ||
  fail "untimed: the peak is not an event and a step"
if "$MA" timeline "$T/untimed.db" -o "$T/untimed.svg" >/dev/null 2>&1; then
  grep -q "events, in order (no timestamps)" "$T/untimed.svg" || fail "untimed timeline axis"
  grep -q "over [0-9]* events" "$T/untimed.svg" || fail "untimed timeline subtitle"
  grep -q " ms\b\|[0-9] s<" "$T/untimed.svg" && fail "untimed timeline shows times"
  "$MA" heatmap "$T/untimed.db" -o "$T/untimed-heat.svg" >/dev/null 2>&1 &&
    grep -q "events, in order (no timestamps)" "$T/untimed-heat.svg" || fail "untimed heatmap axis"
fi

# A database given as input may hold anything in meta: report --json stays JSON.
cp "$T/spike.db" "$T/badmeta.db"
python3 -c 'import sqlite3,sys; db=sqlite3.connect(sys.argv[1])
db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
           ("allocator_settings", "{\"expandable_segments\": true, \"x\": {\"1\": 4")); db.commit()' \
  "$T/badmeta.db"
"$MA" report "$T/badmeta.db" --json >"$T/badmeta.json" || fail "report --json of a database with bad meta"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["allocator_settings"] == {}, d' \
  "$T/badmeta.json" || fail "report --json with a malformed allocator_settings is not JSON"
"$MA" report "$T/badmeta.db" >/dev/null || fail "report of a database with bad meta"

# The headroom forecast and the cache at work (issue 16). Risk by the documented rule from the
# report's own numbers; the step and time the trend reaches the device; cache misses are the
# block allocations right after new driver memory, counted here from the events themselves.
"$SYNTH" -o "$T/steady.zst" --steps 12 --seed 5 2>/dev/null || fail synth
"$SYNTH" -o "$T/slow.zst" --steps 12 --leak 30MiB 2>/dev/null || fail synth
"$SYNTH" -o "$T/tight.zst" --steps 12 --leak 100MiB --device-memory 3GiB 2>/dev/null || fail synth
"$SYNTH" -o "$T/fast.zst" --steps 12 --leak 100MiB 2>/dev/null || fail synth
"$SYNTH" -o "$T/faster.zst" --steps 12 --leak 1GiB 2>/dev/null || fail synth
for r in steady slow tight fast faster; do
  "$MA" report "$T/$r.zst" --json >"$T/$r.json" || fail "report $r: exit $?"
  "$MA" sql "$T/$r.zst" --csv "SELECT count(*) FROM (SELECT op, level, lag(op) OVER w AS p_op,
      lag(level) OVER w AS p_level FROM events WHERE device = 0 AND source = 'torch' AND
      kind = 'device' AND event_id > 0 WINDOW w AS (ORDER BY event_id)) WHERE op = 'alloc' AND
      level = 'block' AND p_level = 'segment' AND p_op IN ('alloc', 'map')" | tail -1 >"$T/$r.misses"
  "$MA" sql "$T/$r.zst" --csv "SELECT max(step), max(end_ts_ns) FROM steps" | tail -1 >"$T/$r.last"
done
python3 - "$T" <<'PY' || fail "headroom forecast / cache"
import json, os, sys
t = sys.argv[1]
risks = {}
for r in ("steady", "slow", "tight", "fast", "faster"):
    dev = json.load(open(os.path.join(t, r + ".json")))["devices"][0]
    h = dev["headroom"]
    used = dev["peak_reserved_bytes"] / dev["total_bytes"]
    last_step, last_ts = (int(v) for v in open(os.path.join(t, r + ".last")).read().split(","))
    left = h["limit_step"] - last_step if h["limit_step"] is not None else None
    want = ("critical" if dev["ooms"] or used >= 0.95 or (left is not None and left <= 100) else
            "high" if used >= 0.85 or (left is not None and left <= 1000) else
            "medium" if used >= 0.70 or left is not None else "low")
    assert h["risk"] == want, (r, h, used, left)
    risks[r] = h["risk"]
    if h["limit_step"] is not None:  # past the last step end, at the median step's pace
        assert h["limit_seconds"] * 1e9 > last_ts, (r, h, last_ts)
    misses = int(open(os.path.join(t, r + ".misses")).read())
    assert dev["cache_misses"] == misses > 0, (r, dev["cache_misses"], misses)
    assert dev["cache_allocations"] == dev["allocs"], dev
    assert abs(dev["cache_hit_rate"] - (1 - misses / dev["allocs"])) < 1e-5, dev
    assert dev["active_bytes_at_peak"] == dev["peak_allocated_bytes"], dev
# low, medium, high (some 780 steps left), critical without an OOM (some 70 left), with one
assert risks == {"steady": "low", "slow": "medium", "tight": "critical", "fast": "high",
                 "faster": "critical"}, risks
PY
# a snapshot whose device size is unknown, without an OOM: the risk cannot be told
python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/snaps" >/dev/null || fail "make_pickles"
"$MA" report "$T/snaps/es-no-time.pickle" --json >"$T/notime.json" || fail "report es-no-time"
python3 - "$T/notime.json" <<'PY' || fail "risk unknown"
import json, sys
dev = json.load(open(sys.argv[1]))["devices"][0]
assert dev["total_bytes"] is None and dev["ooms"] == 0 and dev["headroom"]["risk"] == "unknown", dev
PY
"$MA" report "$T/slow.zst" | grep -q "headroom: allocated grows .*; risk medium" ||
  fail "report text: headroom risk"
"$MA" report "$T/slow.zst" | grep -q "the cache: .* allocations served without new driver" ||
  fail "report text: the cache"

finish
