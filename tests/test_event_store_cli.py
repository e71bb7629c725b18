#!/usr/bin/env python3
"""test_event_store_cli.py — the cache's event store answers SQL exactly as a plain table does.

Usage: test_event_store_cli.py SYNTH MEMANALYZE

memanalyze's cache keeps event_rows as a virtual table over compressed chunks
(analyzer/base/event_store.h); `memanalyze import -o` writes the plain table. The schema is a
public interface, so every query must answer the same on both: here schema.sql's example
queries and queries on the views and on event_rows itself (ranges, lookups, joins, the
directions of ORDER BY) run through `memanalyze sql` on a synthetic run (two devices,
fragmentation, a leak, tensor names) read both ways, and must print the same bytes. Then: the
cache is the store and is smaller; import -o's file, whose event_rows memanalyze writes as
pages, passes SQLite's integrity check and leaves nothing beside it, even when it fails; a damaged chunk gives a one-line error, not a
crash or a wrong answer. And the timeline drawn from the bucket ends the replay keeps is the
one drawn from the events (as for a database of an older memanalyze).
"""

import glob
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_schema_sql  # noqa: E402  (its example queries)

QUERIES = [
    # every block's category: INSERTed into the cache by `sql`, written as pages by import -o
    "SELECT category, count(*), sum(alloc_id), min(alloc_id), max(alloc_id) FROM block_categories"
    " GROUP BY category ORDER BY category",
    "SELECT * FROM block_categories WHERE alloc_id IN (SELECT alloc_id FROM allocations"
    " ORDER BY size DESC LIMIT 50) ORDER BY alloc_id",
    "SELECT count(*), sum(size), total(addr), max(event_id), min(event_id) FROM event_rows",
    "SELECT * FROM event_rows WHERE event_id BETWEEN 1000 AND 1400",
    "SELECT * FROM event_rows WHERE event_id <= 0",
    "SELECT event_id, op, size FROM event_rows WHERE event_id > 20000 ORDER BY event_id DESC",
    "SELECT event_id FROM event_rows WHERE event_id IN (5, 4096, 4097, 8191, 99999999)",
    "SELECT e.event_id, a.event_id, a.size FROM event_rows e JOIN event_rows a"
    " ON a.event_id = e.alloc_event_id WHERE e.event_id % 97 = 0 ORDER BY e.event_id",
    "SELECT * FROM events WHERE op = 'free' AND event_id % 101 = 0",
    "SELECT * FROM allocations WHERE alloc_id % 53 = 0",
    "SELECT count(*), sum(size), count(free_event_id), count(category) FROM allocations",
    "SELECT category, count(*), sum(size) FROM allocations GROUP BY category ORDER BY category",
    "SELECT * FROM timeline WHERE event_id % 211 = 0",
    "SELECT device, max(allocated_bytes), max(reserved_bytes) FROM timeline GROUP BY device",
    "SELECT s.step, max(t.allocated_bytes) FROM steps s JOIN timeline t"
    " ON t.event_id BETWEEN s.begin_event_id AND s.end_event_id GROUP BY s.step",
    "SELECT (SELECT r.allocated_bytes FROM event_rows r WHERE r.event_id <= s.end_event_id"
    " AND r.device = 1 ORDER BY r.event_id DESC LIMIT 1) FROM steps s",
]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    synth, ma = sys.argv[1], sys.argv[2]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what, file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
        trace, plain = os.path.join(tmp, "t.zst"), os.path.join(tmp, "plain.db")
        p = run([synth, "-o", trace, "--events", "40000", "--devices", "2", "--fragment",
                 "--leak", "4096", "--names"], env=env)
        check(p.returncode == 0, "synth: %s" % p.stderr)
        p = run([ma, "import", trace, "-o", plain], env=env)
        check(p.returncode == 0, "import -o: %s" % p.stderr)
        examples = test_schema_sql.example_queries(open(test_schema_sql.SCHEMA).read())
        check(len(examples) >= 5, "schema.sql has its example queries")
        for q in QUERIES + examples:
            a = run([ma, "sql", trace, "--csv", q], env=env)
            b = run([ma, "sql", plain, "--csv", q], env=env)
            check(a.returncode == 0 and b.returncode == 0, "%s: %s %s" % (q, a.stderr, b.stderr))
            check(a.stdout == b.stdout, "the store and the table differ on: %s" % q)
            check(len(a.stdout.splitlines()) >= 1, "an answer to: %s" % q)

        caches = glob.glob(os.path.join(tmp, "cache", "*.db"))
        check(len(caches) == 1, "one cached database")
        if len(caches) == 1:
            db = sqlite3.connect(caches[0])
            sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'event_rows'").fetchone()
            check(sql and "USING gmt_event_rows" in sql[0], "the cache's event_rows is the store")
            db.close()
            db = sqlite3.connect(plain)
            sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'event_rows'").fetchone()
            check(sql and sql[0].startswith("CREATE TABLE"), "import -o's event_rows is a table")
            n = db.execute("SELECT count(*) FROM event_rows").fetchone()[0]
            check(n > 40000, "any SQLite client reads import -o's events (%d rows)" % n)
            # its event_rows and index are pages written by memanalyze (btree_write.c): SQLite
            # must find every page, cell and index entry sound
            ok = db.execute("PRAGMA integrity_check").fetchall()
            check(ok == [("ok",)], "import -o's database is sound: %r" % ok[:5])
            plan = db.execute("EXPLAIN QUERY PLAN SELECT * FROM event_rows WHERE alloc_event_id = 7"
                              ).fetchall()
            check("event_rows_alloc_event" in repr(plan), "the index serves lookups: %r" % plan)
            db.close()
            left = sorted(f for f in os.listdir(tmp) if f not in ("t.zst", "plain.db", "cache"))
            check(not left, "import -o leaves nothing beside its database: %r" % left)
            small, big = os.path.getsize(caches[0]), os.path.getsize(plain)
            # (pages of 64 KiB: at this size the fixed part weighs; at 10 M events 65 vs 780 MB)
            check(big - small > 40 * n, "the cache saves 40 B/event at least (%d vs %d)" % (small, big))

            # A damaged chunk: one line saying so, an error status, no crash.
            db = sqlite3.connect(caches[0])
            db.execute("UPDATE event_chunks SET data = x'28b52ffd0000' WHERE chunk = 2")
            db.commit()
            db.close()
            p = run([ma, "sql", trace, "SELECT sum(size) FROM event_rows"], env=env)
            check(p.returncode not in (0,) and p.returncode < 128, "damaged: status %d" % p.returncode)
            check("damaged" in p.stderr and len(p.stderr.strip().splitlines()) == 1,
                  "damaged: one line: %r" % p.stderr)
            p = run([ma, "sql", trace, "SELECT count(*) FROM steps"], env=env)
            check(p.returncode == 0, "what needs no event still answers: %s" % p.stderr)

        # import -o where no file can be made: one line, an error status, nothing left behind.
        p = run([ma, "import", trace, "-o", os.path.join(trace, "x.db")], env=env)
        check(p.returncode not in (0,) and p.returncode < 128, "unwritable: status %d" % p.returncode)
        check(len(p.stderr.strip().splitlines()) == 1, "unwritable: one line: %r" % p.stderr)
        left = sorted(f for f in os.listdir(tmp) if f not in ("t.zst", "plain.db", "cache"))
        check(not left, "a failed import -o leaves nothing: %r" % left)
        # A cut trace imports what it holds (as after a crash): sound, nothing beside it.
        cut, out = os.path.join(tmp, "cut", "t.zst"), os.path.join(tmp, "cut", "o.db")
        os.mkdir(os.path.dirname(cut))
        with open(trace, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        p = run([ma, "import", cut, "-o", out], env=env)
        check(p.returncode == 0, "cut: %s" % p.stderr)
        if p.returncode == 0:
            db = sqlite3.connect(out)
            ok = db.execute("PRAGMA integrity_check").fetchall()
            check(ok == [("ok",)], "a cut trace's database is sound: %r" % ok[:5])
            db.close()
        left = sorted(os.listdir(os.path.dirname(cut)))
        check(left == ["o.db", "t.zst"], "a cut trace's import -o leaves nothing else: %r" % left)

        # The timeline reads each bucket's end state from timeline_buckets; a database of an
        # older memanalyze has no such columns, and the picture must come out the same from
        # the events themselves.
        os.mkdir(os.path.join(tmp, "older"))
        older = os.path.join(tmp, "older", os.path.basename(plain))  # the same title
        shutil.copy(plain, older)
        db = sqlite3.connect(older)
        db.execute("ALTER TABLE timeline_buckets DROP COLUMN end_allocated_bytes")
        db.execute("ALTER TABLE timeline_buckets DROP COLUMN end_reserved_bytes")
        db.commit()
        db.close()
        for by in ("site", "category"):
            pics = []
            for db_path in (plain, older):
                out = os.path.join(tmp, "t-%s-%d.svg" % (by, len(pics)))
                p = run([ma, "timeline", db_path, "--by", by, "-o", out], env=env)
                check(p.returncode == 0, "timeline --by %s: %s" % (by, p.stderr))
                pics.append(open(out, "rb").read() if p.returncode == 0 else b"")
            check(pics[0] == pics[1] and pics[0], "timeline --by %s: the same from bucket ends "
                  "and from the events" % by)

    if failures:
        print("test_event_store_cli: %d failure(s)" % len(failures), file=sys.stderr)
        return 1
    print("test_event_store_cli: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
