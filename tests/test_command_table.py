#!/usr/bin/env python3
"""test_command_table.py SOURCE_DIR MEMANALYZE — README.md's command table is memanalyze's.

  (a) every command `memanalyze --help` lists has a row in the table of README.md's
      "Commands that exist" (a row whose first cell is `memanalyze COMMAND ...`), and every
      command of the table is one `memanalyze --help` lists;
  (b) every option a row shows (`--top N`, `-o FILE`, `--from/--to WHEN`) is one the text of
      `memanalyze COMMAND --help` names, and `COMMAND --help` exits 0;
  (c) README.md's recipe "Where does a change go" sends a new command to this table.

Python 3 standard library only. Exit 0 pass, 1 fail.
"""
import os
import re
import subprocess
import sys

OPTION = r"(?<![\w-])(--?[A-Za-z][\w-]*)"


def cells(row):
    """The cells of a Markdown table row (a `\\|` inside a cell is no border)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def section(text, title):
    """The Markdown section whose heading ends with `title`, up to the next heading of the same
    or a higher level, and the number of its first line; (None, 0) when there is none."""
    m = re.search(r"^(#+) " + re.escape(title) + r"\s*$", text, re.M)
    if not m:
        return None, 0
    level = len(m.group(1))
    end = re.compile(r"^#{1,%d} " % level, re.M).search(text, m.end())
    return text[m.end():end.start() if end else len(text)], text.count("\n", 0, m.end()) + 1


def run(memanalyze, *args):
    p = subprocess.run([memanalyze, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60)
    return p.returncode, p.stdout


def main():
    if len(sys.argv) != 3:
        print("usage: test_command_table.py SOURCE_DIR MEMANALYZE")
        return 1
    src, memanalyze = os.path.abspath(sys.argv[1]), sys.argv[2]
    failures = []

    rc, top = run(memanalyze, "--help")
    if rc != 0:
        failures.append(f"memanalyze --help exits {rc}")
    listed = re.findall(r"^  ([a-z][a-z-]*)\s", top, re.M)
    if len(listed) < 10:
        failures.append(f"memanalyze --help lists {len(listed)} commands: is the parser broken?")

    readme = open(os.path.join(src, "README.md")).read()
    commands, first_line = section(readme, "Commands that exist")
    rows = {}
    if commands is None:
        failures.append('README.md: no section "Commands that exist"')
        commands = ""
    in_table = False
    for number, line in enumerate(commands.split("\n"), first_line):
        if not line.startswith("|"):
            if in_table:
                break  # the first table of the section is the command table
            continue
        in_table = True
        first = cells(line)[0]
        m = re.match(r"`memanalyze ([a-z][a-z-]*)\b([^`]*)`", first)
        if m:
            rows.setdefault(m.group(1), []).append((number, m.group(2)))
        elif first not in ("", "command") and not set(first) <= set("-: "):
            failures.append(f"README.md:{number}: a row of the command table that names no "
                            f"`memanalyze COMMAND`: {first}")

    for name in listed:
        if name not in rows:
            failures.append(f"memanalyze {name} (in memanalyze --help) has no row in README.md's "
                            "command table")
    for name in sorted(rows):
        if name not in listed:
            failures.append(f"README.md:{rows[name][0][0]}: memanalyze {name} is in the command "
                            "table but not in memanalyze --help")
            continue
        rc, text = run(memanalyze, name, "--help")
        if rc != 0:
            failures.append(f"memanalyze {name} --help exits {rc}")
        known = set(re.findall(OPTION, text))
        for number, synopsis in rows[name]:
            for option in re.findall(OPTION, synopsis.replace("\\|", "|")):
                if option not in known:
                    failures.append(f"README.md:{number}: memanalyze {name} {option}: "
                                    f"{option} is not in memanalyze {name} --help")

    recipe, _ = section(readme, "Where does a change go")
    if recipe is None:
        failures.append('README.md: no section "Where does a change go"')
    elif "command table" not in recipe or "Commands that exist" not in recipe \
            or "tests/test_command_table.py" not in recipe:
        failures.append('README.md, "Where does a change go": a new command needs its row in '
                        'the command table of "Commands that exist" (say so, and that '
                        "tests/test_command_table.py checks it against --help)")

    for f in failures:
        print("FAIL:", f)
    print(f"test_command_table: {len(listed)} commands, {sum(map(len, rows.values()))} rows, "
          + ("ok" if not failures else f"{len(failures)} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
