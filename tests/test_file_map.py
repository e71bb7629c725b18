#!/usr/bin/env python3
"""test_file_map.py SOURCE_DIR — analyzer/README.md's file map is the analyzer's files.

  (a) every .c and .h under analyzer/ has a row in the map, under its own folder's heading
      ("### `cli/` — ..."), and no file has two;
  (b) every file a row names exists, in the folder of its heading;
  (c) the generated files of the map's last table ("Generated at build time") are made in
      analyzer/CMakeLists.txt;
  (d) README.md's recipe "Where does a change go" sends a new file of the analyzer to the map.

A row is `| `a.c`, `a.h` | what |`: the file names are the back-quoted names of its first
cell. Python 3 standard library only. Exit 0 pass, 1 fail.
"""
import os
import re
import sys

GENERATED = "Generated at build time"


def cells(row):
    """The cells of a Markdown table row (a `\\|` inside a cell is no border)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def file_map(text):
    """{folder: [(line, name)]} from the "## Files" section; folder GENERATED for the last."""
    rows, folder, inside = {}, None, False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("## "):
            inside = line.strip() == "## Files"
            continue
        if not inside:
            continue
        heading = re.match(r"### `([a-z_]+)/`", line)
        if heading:
            folder = heading.group(1)
            continue
        if line.startswith("### ") and GENERATED in line:
            folder = GENERATED
            continue
        if not line.startswith("|") or folder is None:
            continue
        first = cells(line)[0]
        if first in ("file", "") or set(first) <= set("-| "):
            continue
        for name in re.findall(r"`([^`]+)`", first):
            rows.setdefault(folder, []).append((number, name))
    return rows


def section(text, title):
    """The text of the Markdown section whose heading ends with `title`, up to the next heading
    of the same or a higher level; None when there is none."""
    m = re.search(r"^(#+) " + re.escape(title) + r"\s*$", text, re.M)
    if not m:
        return None
    level = len(m.group(1))
    end = re.compile(r"^#{1,%d} " % level, re.M).search(text, m.end())
    return text[m.end():end.start() if end else len(text)]


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    analyzer = os.path.join(src, "analyzer")
    failures = []
    rows = file_map(open(os.path.join(analyzer, "README.md")).read())

    on_disk = set()
    for d, dirs, files in os.walk(analyzer):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                on_disk.add(os.path.relpath(os.path.join(d, f), analyzer))
    if len(on_disk) < 50:
        failures.append(f"only {len(on_disk)} files under analyzer/: is the walk broken?")

    listed = {}
    for folder, names in sorted(rows.items()):
        if folder == GENERATED:
            continue
        for line, name in names:
            rel = os.path.join(folder, name)
            if rel in listed:
                failures.append(f"analyzer/README.md:{line}: {rel} has a row already "
                                f"(line {listed[rel]})")
            listed.setdefault(rel, line)
            if rel not in on_disk:
                failures.append(f"analyzer/README.md:{line}: {name} is in the map under "
                                f"`{folder}/` but analyzer/{rel} does not exist")
    for rel in sorted(on_disk - set(listed)):
        folder = os.path.dirname(rel)
        failures.append(f"analyzer/{rel} has no row in analyzer/README.md's file map "
                        + (f"(add one under `{folder}/`: what the file owns)" if folder else
                           "(a source belongs in a layer's folder)"))
    if len(listed) < 50:
        failures.append(f"only {len(listed)} files in the map: is the parser broken?")

    cmake = open(os.path.join(analyzer, "CMakeLists.txt")).read()
    generated = rows.get(GENERATED, [])
    if not generated:
        failures.append(f'analyzer/README.md: no table "{GENERATED}" in the file map')
    for line, name in generated:
        if not re.search(r"\$\{CMAKE_CURRENT_BINARY_DIR\}/" + re.escape(name) + r"\b", cmake):
            failures.append(f"analyzer/README.md:{line}: the generated {name} is not made in "
                            "analyzer/CMakeLists.txt")

    recipe = section(open(os.path.join(src, "README.md")).read(), "Where does a change go")
    if recipe is None:
        failures.append('README.md: no section "Where does a change go"')
    elif not re.search(r"file map", recipe) or "analyzer/README.md" not in recipe \
            or "tests/test_file_map.py" not in recipe:
        failures.append('README.md, "Where does a change go": a new file of analyzer/ needs its '
                        "row in analyzer/README.md's file map (say so, and that "
                        "tests/test_file_map.py checks it)")

    for f in failures:
        print("FAIL:", f)
    print(f"test_file_map: {len(listed)} files in the map, {len(on_disk)} on disk, "
          + ("ok" if not failures else f"{len(failures)} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
