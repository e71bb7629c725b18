#!/usr/bin/env python3
"""test_layers.py — the dependency rules of DESIGN.md and analyzer/README.md, checked on the
includes of every C file.

Each folder below may include headers from the folders listed for it and from itself, nothing
else: a header's folder is where the file lives. CMake enforces most of it at compile time
(each library sees only the include directories of what it links); this test also covers what
CMake cannot see, e.g. a test or sample that adds include paths by hand, and it says the rule in
one readable table. It also holds cli/ and view/ to no sqlite3_ call (and view/ to no SQL text):
they print what query/ answers. Python 3 standard library only. argv[1]: the source tree (default: ..).
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))

# folder -> folders whose headers it may include (itself always)
ALLOWED = {
    "common": set(),
    "schema": {"common"},
    "model": {"schema", "common"},
    "render": set(),
    "recorder": {"schema", "common", "model"},
    "samples/synth": {"schema", "common", "model"},
    "samples/cuda": {"recorder"},
    "analyzer/base": {"schema", "common"},
    "analyzer/replay": {"analyzer/base", "schema", "common", "model"},
    "analyzer/input": {"analyzer/replay", "analyzer/base", "schema", "common", "model"},
    "analyzer/query": {"analyzer/base", "schema", "common", "model", "render"},
    "analyzer/view": {"analyzer/query", "analyzer/base", "schema", "common", "model"},
    "analyzer/cli": {"analyzer/input", "analyzer/query", "analyzer/view", "analyzer/base",
                     "schema", "common", "model", "render"},
}
# headers no other folder may include, even one allowed to use the folder's public ones
PRIVATE = {"analyzer/replay/replay_state.h": {"analyzer/replay"},
           "model/alloc_model_layout.h": {"model"}, "model/alloc_model_index.h": {"model"},
           "analyzer/input/pickle_internal.h": {"analyzer/input"}}


def folder_of(path):
    rel = os.path.relpath(path, ROOT)
    best = None
    for f in ALLOWED:
        if rel.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    return best


# The layers that print facts and make no query of their own: no sqlite3_ call, and in view/ no
# SQL text either (cli/'s help and hints name queries for the user).
SQL_CALL = re.compile(r"\bsqlite3_\w+\s*\(")
SQL_TEXT = re.compile(r'"[^"\n]*\b(SELECT|INSERT|UPDATE|DELETE|CREATE|PRAGMA)\s[^"\n]*"')


def no_sql(f, text):
    bad = []
    for dirpath, _, files in os.walk(os.path.join(ROOT, f)):
        for name in files:
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    if SQL_CALL.search(line) or (text and SQL_TEXT.search(line)):
                        bad.append("%s:%d: %s makes queries (query/ has them): %s" % (
                            os.path.relpath(path, ROOT), lineno, f, line.strip()))
    return bad


def main():
    headers = {}
    for f in ALLOWED:
        d = os.path.join(ROOT, f)
        for dirpath, _, files in os.walk(d):
            for name in files:
                if name.endswith(".h"):
                    headers.setdefault(name, []).append(os.path.join(dirpath, name))
    bad = []
    checked = 0
    for f in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, f)):
            for name in files:
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                here = folder_of(path)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if not m:
                            continue
                        checked += 1
                        target = os.path.basename(m.group(1))
                        for h in headers.get(target, []):
                            there = folder_of(h)
                            if there == here or there in ALLOWED[here]:
                                rel = os.path.relpath(h, ROOT)
                                if rel in PRIVATE and here not in PRIVATE[rel]:
                                    bad.append("%s:%d: %s is private to %s" % (
                                        os.path.relpath(path, ROOT), lineno, rel, ", ".join(PRIVATE[rel])))
                                break
                        else:
                            if target in headers:
                                bad.append("%s:%d: %s (%s) may not include %s" % (
                                    os.path.relpath(path, ROOT), lineno, here, m.group(1),
                                    ", ".join(os.path.relpath(h, ROOT) for h in headers[target])))
    bad += no_sql("analyzer/cli", text=False)  # its help and hints name SQL for the user
    bad += no_sql("analyzer/view", text=True)
    for b in bad:
        print("FAIL:", b, file=sys.stderr)
    if checked < 100:
        print("FAIL: only %d includes found under %s" % (checked, ROOT), file=sys.stderr)
        return 1
    if bad:
        return 1
    print("test_layers: %d includes follow the rules" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
