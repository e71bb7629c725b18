#!/usr/bin/env python3
"""test_schema_sql.py — checks schema/schema.sql, the SQLite contract of memanalyze.

Python 3 standard library only. Exit status 0 when every check holds, 1 otherwise.

It loads the schema the way the loader does (part 1, a tiny hand-made replay, then the index
part), and checks that the views answer right on it: a 2 MiB segment with two blocks, one freed;
the seed row; a 3-frame stack; steps; and the example queries written in the file's comments.
It also checks that every table, view and column carries a comment.
"""

import os
import re
import shutil
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "schema", "schema.sql")
INDEX_MARK = "-- @@ indexes"
EXAMPLES_MARK = "-- @@ examples"

MiB = 1 << 20
KiB = 1 << 10
BASE = 0x7F0000000000

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def check_eq(got, want, what):
    check(got == want, "%s: got %r, want %r" % (what, got, want))


def read_schema():
    """The text as memanalyze loads it: `{op:alloc}` words replaced by their codes."""
    with open(SCHEMA, encoding="utf-8") as f:
        return expand_words(f.read())


def expand_words(text):
    """Replaces each `{list:name}` by what the database stores for it, read from the lookup rows
    of the file itself (memanalyze takes them from schema/gmt_vocab.h; test_vocab checks that
    the two agree)."""
    codes = {}
    for table, word in (("ops", "op"), ("levels", "level"), ("memory_kinds", "kind"), ("sources", "source")):
        m = re.search(r"INSERT INTO %s \(\w+, name, description\) VALUES(.*?);\n" % table, text, re.S)
        check(m is not None, "lookup rows of %s" % table)
        for code, name in re.findall(r"^\s*\((\d+),\s*'(\w+)'", m.group(1) if m else "", re.M):
            codes[word, name] = code
    m = re.search(r"INSERT INTO warning_kinds \(code, description\) VALUES(.*?);\n", text, re.S)
    check(m is not None, "lookup rows of warning_kinds")
    for name in re.findall(r"^\s*\('(\w+)'", m.group(1) if m else "", re.M):
        codes["warning", name] = "'%s'" % name

    def code(m):
        key = (m.group(1), m.group(2))
        check(key in codes, "schema.sql names an unknown word {%s:%s}" % key)
        return codes.get(key, "NULL")
    return re.sub(r"\{(\w+):(\w+)\}", code, text)


def split_schema(text):
    """(part 1, index part) split where the loader splits: at the line starting with INDEX_MARK."""
    lines = text.splitlines(keepends=True)
    marks = [i for i, l in enumerate(lines) if l.startswith(INDEX_MARK)]
    check_eq(len(marks), 1, "number of '%s' lines" % INDEX_MARK)
    i = marks[0] if marks else len(lines)
    return "".join(lines[:i]), "".join(lines[i:])


def example_queries(text):
    """The example queries in the trailing comments: after EXAMPLES_MARK, a query is a run of comment
    lines indented by three spaces that starts with '--   WITH' or '--   SELECT' and ends at the
    line ending in ';'."""
    i = text.find(EXAMPLES_MARK)
    check(i >= 0, "the file has a '%s' section" % EXAMPLES_MARK)
    queries, cur = [], []
    for line in text[i:].splitlines():
        m = re.match(r"^--   (.*)$", line)
        if m and (cur or re.match(r"(WITH|SELECT)\b", m.group(1))):
            cur.append(m.group(1))
            if m.group(1).rstrip().endswith(";"):
                queries.append("\n".join(cur))
                cur = []
        elif cur:
            check(False, "example query not ended by ';': %s" % "\n".join(cur))
            cur = []
    return queries


# Columns of event_rows in order; the fixture rows below follow it.
EV_COLS = ("event_id ts_ns device op level kind source addr size requested_size stream pool tid "
           "stack_id segment_id alloc_event_id allocated_bytes requested_bytes reserved_bytes "
           "segments largest_free_bytes").split()

OP = {"alloc": 0, "free": 1, "free_requested": 2, "map": 3, "unmap": 4, "oom": 7, "seed": 12}
SEG, BLK = 0, 1
DEV = 0
CUPTI, TORCH = 0, 1


def ev(event_id, ts, op, level=None, kind=DEV, source=TORCH, addr=None, size=None, req=None,
       stack=None, seg=None, alloc_ev=None, totals=(0, 0, 0, 0, 0), device=0, stream=None, tid=None):
    return (event_id, ts, device, OP[op], level, kind if op != "seed" else None,
            source if op != "seed" else None, addr, size, req, stream, None, tid, stack, seg,
            alloc_ev) + tuple(totals)


def insert_events(db, rows):
    db.executemany("INSERT INTO event_rows (%s) VALUES (%s)" % (",".join(EV_COLS), ",".join("?" * len(EV_COLS))), rows)


def load_fixture(db):
    """A tiny replay of one device: a 2 MiB segment, blocks of 512 KiB (freed) and 1 MiB (live)."""
    db.execute("INSERT INTO devices (device, name, total_bytes) VALUES (0, 'Test GPU', ?)", (80 << 30,))
    db.executemany("INSERT INTO frames (frame_id, name, file, line) VALUES (?,?,?,?)",
                   [(1, "main", "train.py", 10), (2, "forward", "model.py", 20), (3, "empty", "alloc.cpp", 30)])
    # trie: 1 = main; 2 = main > forward; 3 = main > forward > empty
    db.executemany("INSERT INTO stacks (stack_id, parent_id, frame_id) VALUES (?,?,?)",
                   [(1, None, 1), (2, 1, 2), (3, 2, 3)])
    #                  allocated, requested, reserved, segments, largest_free
    insert_events(db, [
        ev(0, 0, "seed", totals=(0, 0, 0, 0, 0)),
        ev(1, 0, "alloc", SEG, source=CUPTI, addr=BASE, size=2 * MiB, req=2 * MiB, stack=2, seg=1,
           totals=(0, 0, 2 * MiB, 1, 2 * MiB)),
        ev(2, 1000, "alloc", BLK, addr=BASE, size=512 * KiB, req=500000, stack=3, seg=1, stream=0,
           totals=(512 * KiB, 500000, 2 * MiB, 1, 1536 * KiB)),
        ev(3, 1200, "alloc", BLK, addr=BASE + 512 * KiB, size=MiB, req=MiB, stack=2, seg=1, stream=0,
           totals=(1536 * KiB, 500000 + MiB, 2 * MiB, 1, 512 * KiB)),
        ev(4, 1400, "free_requested", BLK, addr=BASE, size=512 * KiB, stack=3, seg=1, alloc_ev=2,
           totals=(1536 * KiB, 500000 + MiB, 2 * MiB, 1, 512 * KiB)),
        ev(5, 1600, "free", BLK, addr=BASE, size=512 * KiB, stack=1, seg=1, alloc_ev=2,
           totals=(MiB, MiB, 2 * MiB, 1, 512 * KiB)),
        ev(6, 1700, "oom", BLK, size=4 << 30, stack=3,
           totals=(MiB, MiB, 2 * MiB, 1, 512 * KiB)),
    ])
    db.execute("INSERT INTO segments (segment_id, device, kind, addr, size, stream, alloc_ts_ns, stack_id)"
               " VALUES (1, 0, 'device', ?, ?, 0, 0, 2)", (BASE, 2 * MiB))
    db.executemany("INSERT INTO steps (step, name, begin_ts_ns, end_ts_ns, begin_event_id, end_event_id)"
                   " VALUES (?,?,?,?,?,?)",
                   [(0, "step 0", 0, 1500, 0, 4), (1, "step 1", 1500, None, 4, 6)])
    db.executemany("INSERT INTO markers (marker_id, ts_ns, tid, kind, name, begin_marker_id) VALUES (?,?,?,?,?,?)",
                   [(1, -10, 7, "push", "step 0", None), (2, 1500, 7, "pop", "step 0", 1),
                    (3, 1500, 7, "push", "step 1", None)])
    # driver says 80 GiB - 2 MiB - 500 MiB free: 500 MiB untracked
    db.execute("INSERT INTO counters (ts_ns, event_id, device, kind, pool, value) "
               "VALUES (1650, 5, 0, 'driver_free', NULL, ?)",
               ((80 << 30) - 2 * MiB - 500 * MiB,))
    db.execute("INSERT INTO warnings (event_id, code, message) VALUES (6, 'test', 'a test warning')")


def rows(db, sql, *args):
    return db.execute(sql, args).fetchall()


def test_fixture(text):
    part1, part2 = split_schema(text)
    db = sqlite3.connect(":memory:")
    db.executescript(part1)
    check_eq(rows(db, "SELECT value FROM meta WHERE key = 'schema_version'"), [(1,)], "meta schema_version")
    check_eq(rows(db, "PRAGMA user_version"), [(1,)], "user_version")
    check_eq(rows(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"), [(0,)],
             "part 1 creates no index")
    load_fixture(db)
    db.executescript(part2)
    check(rows(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")[0][0] >= 3,
          "index part creates the indexes")

    # allocations: two block lifetimes, the 512 KiB one freed at 1600, the 1 MiB one live
    al = rows(db, "SELECT alloc_id, device, kind, addr, size, requested_size, segment_id, alloc_ts_ns,"
                  " free_requested_ts_ns, free_ts_ns, free_event_id, alloc_stack_id, free_stack_id,"
                  " alloc_step, free_step FROM allocations ORDER BY alloc_id")
    check_eq(len(al), 2, "allocations rows")
    if len(al) == 2:
        check_eq(al[0], (2, 0, "device", BASE, 512 * KiB, 500000, 1, 1000, 1400, 1600, 5, 3, 1, 0, 1),
                 "freed allocation")
        check_eq(al[1], (3, 0, "device", BASE + 512 * KiB, MiB, MiB, 1, 1200, None, None, None, 2, None, 0, None),
                 "live allocation")

    check_eq(rows(db, "SELECT segment_id, size, free_ts_ns FROM segments"), [(1, 2 * MiB, None)], "segments")

    tl = rows(db, "SELECT event_id, allocated_bytes, requested_bytes, reserved_bytes, segments,"
                  " largest_free_bytes FROM timeline ORDER BY event_id")
    check_eq([r[0] for r in tl], [0, 1, 2, 3, 4, 5, 6], "timeline event ids")
    check_eq(tl[0], (0, 0, 0, 0, 0, 0), "timeline starts with the seeded state, event_id 0")
    check_eq(tl[3], (3, 1536 * KiB, 500000 + MiB, 2 * MiB, 1, 512 * KiB), "timeline at the peak")
    check_eq(rows(db, "SELECT fragmentation FROM timeline WHERE event_id = 5"), [(0.5,)], "fragmentation")
    check_eq(rows(db, "SELECT fragmentation FROM timeline WHERE event_id = 0"), [(None,)],
             "fragmentation with nothing reserved")
    check_eq(rows(db, "SELECT op FROM events WHERE event_id = 0"), [("seed",)], "seed row op")

    sf = rows(db, "SELECT depth, frame_id, name, file, line FROM stack_frames WHERE stack_id = 3 ORDER BY depth")
    check_eq(sf, [(0, 3, "empty", "alloc.cpp", 30), (1, 2, "forward", "model.py", 20), (2, 1, "main", "train.py", 10)],
             "stack_frames innermost first")
    check_eq(rows(db, "SELECT count(*) FROM stack_frames"), [(6,)], "stack_frames rows for all stacks")
    check_eq(rows(db, "SELECT stack_id, depth, name FROM stack_frames WHERE stack_id = 1"), [(1, 0, "main")],
             "one-frame stack")

    check_eq(rows(db, "SELECT count(*) FROM events WHERE op = 'alloc'"), [(3,)], "events WHERE op = 'alloc'")
    check_eq(rows(db, "SELECT count(*) FROM events WHERE op = 'alloc' AND level = 'block'"), [(2,)],
             "block allocs")
    check_eq(rows(db, "SELECT source, kind FROM events WHERE event_id = 1"), [("cupti", "device")], "names")
    check_eq(rows(db, "SELECT marker_id, name, begin_ts_ns, end_ts_ns FROM ranges ORDER BY marker_id"),
             [(1, "step 0", -10, 1500), (3, "step 1", 1500, None)], "ranges")

    # the example queries: all run, and a few answers are checked
    qs = example_queries(text)
    check(5 <= len(qs) <= 8, "5 to 8 example queries (found %d)" % len(qs))
    results = []
    for n, q in enumerate(qs, 1):
        try:
            results.append(db.execute(q).fetchall())
        except sqlite3.Error as e:
            check(False, "example query %d fails: %s\n%s" % (n, e, q))
            results.append(None)
    if len(results) >= 8 and None not in results:
        check_eq(results[0][:2], [(2, 1, MiB, "forward <- main"), (3, 1, 512 * KiB, "empty <- forward <- main")],
                 "example 1: top stacks at the peak")
        check_eq(results[1][0][0], 3, "example 2: largest allocation")
        check_eq(results[2], [(2, 1, MiB, 0, 0, "forward")], "example 3: never freed")
        check_eq([(r[0], r[1], r[2], r[3]) for r in results[3]],
                 [(0, 0, 1536 * KiB, 2 * MiB), (1, 0, 1536 * KiB, 2 * MiB)], "example 4: per-step peak")
        check_eq(len(results[4]), 1, "example 5: one second of trace")
        check_eq(results[6], [(6, 1.7e-06, 0, "oom", 4 << 30, MiB, 2 * MiB, 512 * KiB, 3)], "example 7: OOM")
        check_eq([r[4] for r in results[7]], [500 * MiB], "example 8: untracked")

    # plans: the allocations join uses the partial index; one stack is walked alone
    plan = " ".join(r[3] for r in rows(db, "EXPLAIN QUERY PLAN SELECT free_ts_ns FROM allocations"))
    check("event_rows_alloc_event" in plan, "allocations joins through event_rows_alloc_event: " + plan)
    plan = " ".join(r[3] for r in rows(db, "EXPLAIN QUERY PLAN SELECT * FROM stack_frames WHERE stack_id = 3"))
    check("SEARCH s USING INTEGER PRIMARY KEY" in plan, "stack_frames walks only the stack asked for: " + plan)
    plan = " ".join(r[3] for r in rows(db, "EXPLAIN QUERY PLAN SELECT * FROM timeline WHERE "
                                           "event_id BETWEEN 2 AND 5"))
    check("INTEGER PRIMARY KEY" in plan, "timeline event windows use the primary key: " + plan)
    db.close()


def test_codes_and_seed(text):
    """The CASE expressions of the views agree with the lookup tables; several devices, a seeded
    block and a whole-block segment (a plain cudaMalloc) come out right."""
    db = sqlite3.connect(":memory:")
    db.executescript(text)
    ops = dict(rows(db, "SELECT op, name FROM ops"))
    check_eq(sorted(ops.values()), sorted("alloc free free_requested map unmap pool_trim alloc_failed oom "
                                          "phys_create phys_release va_reserve va_free seed".split()), "op names")
    levels = dict(rows(db, "SELECT level, name FROM levels"))
    kinds = dict(rows(db, "SELECT kind, name FROM memory_kinds"))
    sources = dict(rows(db, "SELECT source, name FROM sources"))
    check_eq(sorted(levels.values()), ["block", "segment"], "level names")
    check_eq(sorted(kinds.values()), ["device", "managed", "pinned_host"], "kind names")
    eid = 1000
    for op in ops:
        for level in levels:
            for kind in kinds:
                for source in sources:
                    eid += 1
                    db.execute("INSERT INTO event_rows (event_id, ts_ns, device, op, level, kind, source,"
                               " allocated_bytes, requested_bytes, reserved_bytes, segments)"
                               " VALUES (?,0,0,?,?,?,?,0,0,0,0)", (eid, op, level, kind, source))
    bad = rows(db, "SELECT count(*) FROM events AS v JOIN event_rows AS r USING (event_id)"
                   " JOIN ops AS o ON o.op = r.op JOIN levels AS l ON l.level = r.level"
                   " JOIN memory_kinds AS k ON k.kind = r.kind JOIN sources AS s ON s.source = r.source"
                   " WHERE v.op IS NOT o.name OR v.level IS NOT l.name OR v.kind IS NOT k.name"
                   " OR v.source IS NOT s.name")
    check_eq(bad, [(0,)], "events view names agree with the lookup tables")
    bad = rows(db, "SELECT count(*) FROM allocations AS a JOIN event_rows AS r ON r.event_id = a.alloc_id"
                   " JOIN memory_kinds AS k ON k.kind = r.kind WHERE a.kind IS NOT k.name")
    check_eq(bad, [(0,)], "allocations kind names agree with memory_kinds")
    db.execute("DELETE FROM event_rows")

    # two devices: a seeded block on device 0 (-3), seed rows -1 (device 0) and 0 (device 1);
    # device 1 runs a plain cudaMalloc/cudaFree (a whole-block segment) and a second one left live.
    insert_events(db, [
        ev(-3, 0, "alloc", BLK, addr=BASE, size=MiB, seg=-2, totals=(MiB, MiB, 2 * MiB, 1, MiB)),
        ev(-1, 0, "seed", totals=(MiB, MiB, 2 * MiB, 1, MiB)),
        ev(0, 0, "seed", device=1),
        ev(1, 10, "alloc", SEG, source=CUPTI, addr=BASE, size=4 * MiB, req=4 * MiB - 1, seg=1, device=1,
           totals=(4 * MiB, 4 * MiB - 1, 4 * MiB, 1, 0)),
        ev(2, 20, "free", SEG, source=CUPTI, addr=BASE, size=4 * MiB, seg=1, alloc_ev=1, device=1),
        ev(3, 30, "free", BLK, addr=BASE, size=MiB, seg=-2, alloc_ev=-3, totals=(0, 0, 2 * MiB, 1, 2 * MiB)),
        ev(4, 40, "alloc", SEG, source=CUPTI, addr=BASE, size=MiB, seg=4, device=1,
           totals=(MiB, MiB, MiB, 1, 0)),
    ])
    # the seeded segment (-2 holds the seeded block), and device 1's whole-block segments
    db.executemany("INSERT INTO segments (segment_id, device, kind, addr, size, whole_block, alloc_ts_ns,"
                   " free_ts_ns, free_event_id) VALUES (?,?,?,?,?,?,?,?,?)",
                   [(-2, 0, "device", BASE, 2 * MiB, 0, 0, None, None),
                    (1, 1, "device", BASE, 4 * MiB, 1, 10, 20, 2),
                    (4, 1, "device", BASE, MiB, 1, 40, None, None)])
    check_eq(rows(db, "SELECT alloc_id, device, size, requested_size, free_ts_ns, free_event_id"
                      " FROM allocations ORDER BY alloc_id"),
             [(-3, 0, MiB, None, 30, 3), (1, 1, 4 * MiB, 4 * MiB - 1, 20, 2), (4, 1, MiB, None, None, None)],
             "seeded block and whole-block segments in allocations")
    check_eq(rows(db, "SELECT event_id, device, allocated_bytes FROM timeline WHERE event_id <= 0 ORDER BY event_id"),
             [(-1, 0, MiB), (0, 1, 0)], "one seed row per device in timeline")
    # state of device 0 at event:2 = its row with the greatest event_id <= 2
    check_eq(rows(db, "SELECT event_id, allocated_bytes FROM timeline WHERE device = 0 AND event_id <= 2"
                      " ORDER BY event_id DESC LIMIT 1"), [(-1, MiB)], "state of device 0 at event:2")
    for n, q in enumerate(example_queries(text), 1):
        try:
            db.execute(q).fetchall()
        except sqlite3.Error as e:
            check(False, "example query %d fails on the two-device fixture: %s" % (n, e))
    db.close()


def statements(text):
    """(kind, name, text with its preceding comment lines) for each CREATE TABLE/VIEW in part 1."""
    part1, _ = split_schema(text)
    out = []
    for m in re.finditer(r"^CREATE (TABLE|VIEW) (\w+)", part1, re.M):
        end = part1.find(";\n", m.start())
        body = part1[m.start():end + 1]
        before = part1[:m.start()].rstrip("\n").splitlines()
        out.append((m.group(1), m.group(2), body, before[-1] if before else ""))
    return out


def test_comments(text):
    db = sqlite3.connect(":memory:")
    db.executescript(text)
    objs = statements(text)
    names = {n for _, n, _, _ in objs}
    want = {r[0] for r in rows(db, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    check_eq(names, want, "every table and view is created by a CREATE at the start of a line")
    required = {"meta", "devices", "frames", "stacks", "stack_frames", "events", "allocations", "segments",
                "steps", "markers", "counters", "timeline", "warnings", "ops"}
    check(required <= want, "required tables/views present, missing: %s" % sorted(required - want))
    for kind, name, body, before in objs:
        check(re.match(r"^--\s*\S", before) is not None, "%s %s has a comment just above it" % (kind, name))
        cols = [r[1] for r in rows(db, "PRAGMA table_info(%s)" % name)]
        check(cols, "%s has columns" % name)
        for col in cols:
            if kind == "TABLE":
                pat = re.compile(r"^\s*%s\b" % re.escape(col))
            else:
                pat = re.compile(r"\bAS %s\b" % re.escape(col))
            lines = [l for l in body.splitlines() if pat.search(l)]
            ok = any(re.search(r"--\s*\S", l) for l in lines)
            check(ok, "column %s.%s has a comment on its defining line" % (name, col))
    db.close()


def test_cli(text):
    """The whole file loads in the sqlite3 shell, when one is installed."""
    exe = shutil.which("sqlite3")
    if not exe:
        print("note: no sqlite3 shell, skipping the CLI load")
        return
    p = subprocess.run([exe, ":memory:"], input=text, capture_output=True, text=True)
    check(p.returncode == 0 and not p.stderr, "sqlite3 :memory: < schema.sql: rc %d %s" % (p.returncode, p.stderr))


def main():
    text = read_schema()
    test_fixture(text)
    test_codes_and_seed(text)
    test_comments(text)
    test_cli(text)
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("test_schema_sql: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
