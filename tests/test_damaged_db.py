#!/usr/bin/env python3
"""test_damaged_db.py SYNTH MEMANALYZE — a database damaged where a report reads it.

A database given as input (or a cache left by a crash, a full disk) may have a damaged page.
The report's one-value queries took a failed read for an empty answer, printed wrong facts
("3 steps (step 0 .. 0)", "unknown stack") and exited 0. Now SQLite's logged failures fail the
command at its end: exit 2 and one line saying so, whatever it printed. Each table the report
reads gets its root page's type byte broken, one at a time; the undamaged database reports
cleanly."""
import os
import sqlite3
import subprocess
import sys
import tempfile

TABLES = ["steps", "frames", "stacks", "site_stats", "free_splits", "counters",
          "largest_allocations"]


def damage(path, table):
    db = sqlite3.connect(path)
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    db.close()
    assert root > 1
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xff")  # no b-tree page has this type


def main():
    synth, memanalyze = sys.argv[1:3]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.zst")
        subprocess.run([synth, "-o", trace, "--steps", "3", "--layers", "2"], check=True,
                       capture_output=True)
        whole = os.path.join(tmp, "whole.db")
        subprocess.run([memanalyze, "import", trace, "-o", whole], check=True,
                       capture_output=True)
        env = dict(os.environ, GMT_NO_HUGEPAGES="1")
        p = subprocess.run([memanalyze, "report", whole], capture_output=True, text=True,
                           env=env)
        if p.returncode != 0 or p.stderr:
            failures += 1
            print(f"undamaged: exit {p.returncode}, {p.stderr!r}", file=sys.stderr)
        for table in TABLES:
            for args in (["report"], ["report", "--json"]):
                db = os.path.join(tmp, f"{table}.db")
                with open(whole, "rb") as src, open(db, "wb") as dst:
                    dst.write(src.read())
                damage(db, table)
                p = subprocess.run([memanalyze, *args, db], capture_output=True, text=True,
                                   env=env)
                lines = p.stderr.strip().splitlines()
                ok = (p.returncode == 2 and len(lines) == 1 and
                      lines[0].startswith("memanalyze") and "malformed" in lines[0])
                if not ok:
                    failures += 1
                    print(f"{table} damaged, {' '.join(args)}: exit {p.returncode}, "
                          f"stderr {p.stderr.strip()!r}", file=sys.stderr)
    print(f"test_damaged_db: {len(TABLES)} tables, {failures} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
