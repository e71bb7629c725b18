#!/usr/bin/env python3
"""test_alloc_failures.py SYNTH MEMANALYZE PRELOAD — running out of memory, one place at a time.

memanalyze imports a small trace (steps, stages, tensor names, native frames) while
tests/preload/fail_strdup.c makes one strdup fail, at each call in turn (every third, to stay
quick). Each run must end either in a clear one-line error (exit 2) with nothing left behind,
or in the very database a run without the failure writes: never a crash, never a database
silently short of a name (devices, modules, steps and rows each kept a NULL before). Then the
same for `report` (its cache made anew each run): a clear error or the very same report, never
one that names a site "unknown stack" because its label could not be made."""
import os
import sqlite3
import subprocess
import sys
import tempfile


def tables(path):
    db = sqlite3.connect(path)
    names = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
    out = {}
    for name in names:
        rows = db.execute(f'SELECT * FROM "{name}"').fetchall()
        if name == "meta":
            rows = [r for r in rows if r[0] not in ("input_path", "input_mtime_ns")]
        out[name] = sorted(rows, key=repr)
    db.close()
    return out


def main():
    synth, memanalyze, preload = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.zst")
        subprocess.run([synth, "-o", trace, "--steps", "3", "--layers", "2", "--stages",
                        "--names"], check=True, capture_output=True)
        env = dict(os.environ, GMT_NO_HUGEPAGES="1", LD_PRELOAD=preload,
                   FAIL_STRDUP_COUNT_TO=os.path.join(tmp, "count"))
        ref = os.path.join(tmp, "ref.db")
        subprocess.run([memanalyze, "import", trace, "-o", ref], check=True, env=env,
                       capture_output=True)
        calls = int(open(os.path.join(tmp, "count")).read())
        assert calls > 100, f"only {calls} strdup calls: is the library preloaded?"
        want = tables(ref)
        failures = 0
        errors = clean = 0
        for n in range(1, calls + 1, 3):
            out = os.path.join(tmp, "x.db")
            p = subprocess.run([memanalyze, "import", trace, "-o", out], text=True,
                               capture_output=True, env=dict(env, FAIL_STRDUP_AT=str(n)))
            left = sorted(f for f in os.listdir(tmp) if f.startswith("x.db"))
            if p.returncode == 2:
                lines = p.stderr.strip().splitlines()
                ok = len(lines) == 1 and lines[0].startswith("memanalyze: ") and not left
                errors += 1
            elif p.returncode == 0:
                ok = tables(out) == want
                clean += 1
            else:
                ok = False
            if not ok:
                failures += 1
                print(f"strdup #{n} failing: exit {p.returncode}, stderr {p.stderr.strip()!r}, "
                      f"files {left}", file=sys.stderr)
            for f in left:
                os.unlink(os.path.join(tmp, f))
        print(f"import: {calls} strdup calls; failing each third: {errors} clear errors, "
              f"{clean} complete databases, {failures} wrong")
        assert errors > 0 and failures == 0
        failures += report_runs(memanalyze, trace, tmp, env)
        assert failures == 0


def report_runs(memanalyze, trace, tmp, env):
    """report with one strdup failing, each third call in turn: the count of wrong runs."""
    def report(n, cache):
        return subprocess.run([memanalyze, "report", trace], text=True, capture_output=True,
                              env=dict(env, GMT_CACHE_DIR=os.path.join(tmp, cache),
                                       FAIL_STRDUP_AT=str(n)))
    want = report(0, "ref").stdout
    calls = int(open(os.path.join(tmp, "count")).read())
    failures = errors = same = 0
    for n in range(1, calls + 1, 3):
        p = report(n, f"c{n}")
        lines = p.stderr.strip().splitlines()
        if p.returncode == 2 and len(lines) == 1 and lines[0].startswith("memanalyze"):
            errors += 1
        elif p.returncode == 0 and p.stdout == want:
            same += 1
        else:
            failures += 1
            print(f"report, strdup #{n} failing: exit {p.returncode}, stderr "
                  f"{p.stderr.strip()!r}", file=sys.stderr)
    print(f"report: {calls} strdup calls; failing each third: {errors} clear errors, "
          f"{same} complete reports, {failures} wrong")
    return failures


if __name__ == "__main__":
    main()
