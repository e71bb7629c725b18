#!/usr/bin/env python3
"""test_env_vars.py SOURCE_DIR — the project's environment variables are named once and
documented once.

  (a) every variable of common/gmt_env.h has a row in docs/ENVIRONMENT.md and every
      GMT_* / MEMREC_* row of that page is in the header; each macro is GMT_ENV_ + the name
      without a leading GMT_;
  (b) no C source or header but common/gmt_env.h spells a "GMT_..." or "MEMREC_..." string
      literal: C code uses the macros (GMT_ENV_MEMREC_OUTPUT " is too long" for a message);
  (c) every GMT_* / MEMREC_* variable that a Python or shell file (recorder/, tests/, bench/,
      samples/, the Makefile) uses is in the header: every such name in them is taken for a
      variable but a GMT_ENV_ macro, a Python constant (NAME = …) and a C macro of the tree
      (#define NAME, also in a CMake script that writes a header); in CMake files, the names
      of $ENV{NAME} and of NAME=… on an ENVIRONMENT or `env` line;
  (d) every variable of the header is used somewhere (a C macro use, or a script), so the list
      does not outlive the code.

Exit 0 pass, 1 fail.
"""
import os
import re
import sys

SKIP_DIRS = {".git", "__pycache__"}
NAME = r"(?:GMT|MEMREC)_[A-Z][A-Z0-9_]*"


def walk(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for f in sorted(files):
            yield os.path.join(d, f)


def c_literals(text):
    """The string literals of C source text (comments and character constants skipped)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                out.append((text.count("\n", 0, i) + 1, text[i + 1:j]))
            i = j + 1
        else:
            i += 1
    return out


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    failures = []
    header_path = os.path.join(src, "common", "gmt_env.h")
    header = open(header_path).read()

    # (a) the header and the page
    defines = re.findall(r'^#define\s+(GMT_ENV_\w+)\s+"([^"]*)"', header, re.M)
    names = {}
    for macro, name in defines:
        if name in names:
            failures.append(f"gmt_env.h: {name} is defined twice")
        names[name] = macro
        want = "GMT_ENV_" + (name[4:] if name.startswith("GMT_") else name)
        if macro != want:
            failures.append(f"gmt_env.h: {name} is {macro}, should be {want}")
        if not re.fullmatch(NAME, name):
            failures.append(f"gmt_env.h: {name} is not a GMT_ or MEMREC_ name")
    if len(names) < 10:
        failures.append(f"gmt_env.h: only {len(names)} variables found: is the parser broken?")
    doc = open(os.path.join(src, "docs", "ENVIRONMENT.md")).read()
    documented = set(re.findall(r"^\|\s*`(" + NAME + r")`\s*\|", doc, re.M))
    for name in sorted(set(names) - documented):
        failures.append(f"{name} is in common/gmt_env.h but has no row in docs/ENVIRONMENT.md")
    for name in sorted(documented - set(names)):
        failures.append(f"{name} has a row in docs/ENVIRONMENT.md but is not in common/gmt_env.h")

    c_macros = set()
    for path in walk(src):
        if path.endswith((".c", ".h", ".cmake")):
            c_macros.update(re.findall(r"#define\s+(" + NAME + ")", open(path, errors="replace").read()))

    used = set()
    for path in walk(src):
        rel = os.path.relpath(path, src)
        base = os.path.basename(path)
        # (b) C: no literal spelling, and which macros are used
        if base.endswith((".c", ".h")):
            if rel == os.path.join("common", "gmt_env.h"):
                continue
            text = open(path, errors="replace").read()
            for line, body in c_literals(text):
                for name in re.findall(r"(?<![A-Za-z0-9_])" + NAME, body):
                    failures.append(f'{rel}:{line}: the string literal "{body}" spells {name}: '
                                    f"use {names.get(name, 'a GMT_ENV_ macro of common/gmt_env.h')}")
            for macro in re.findall(r"\bGMT_ENV_\w+", text):
                used.add(macro)
            continue
        # (c) scripts: every GMT_/MEMREC_ name they use is a variable of the header
        found = []
        if base.endswith((".py", ".sh")) or rel in ("Makefile", os.path.join(".ci", "run")):
            if not rel.startswith(("recorder", "tests", "bench", "samples")) and "/" in rel:
                continue
            text = open(path, errors="replace").read()
            skip = set(c_macros)
            if base.endswith(".py"):
                skip.update(re.findall(r"^(" + NAME + r")\s+=\s", text, re.M))
            for m in re.finditer(r"(?<![A-Za-z0-9_])(?<!-D)(" + NAME + ")", text):
                if m.group(1) not in skip and not m.group(1).startswith("GMT_ENV_"):
                    found.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
        elif base.endswith(".cmake") or base == "CMakeLists.txt":
            text = open(path, errors="replace").read()
            for number, line in enumerate(text.split("\n"), 1):
                found += [(number, n) for n in re.findall(r"\$ENV\{(" + NAME + r")\}", line)]
                if re.search(r"\bENVIRONMENT\b|\benv\b", line):
                    found += [(number, n) for n in
                              re.findall(r"(?<![A-Za-z0-9_-])(" + NAME + r")=", line)]
        for line, name in found:
            used.add(names.get(name, ""))
            if name not in names:
                failures.append(f"{rel}:{line}: {name} is not in common/gmt_env.h "
                                "(add it there and to docs/ENVIRONMENT.md)")

    # (d) nothing stale in the header
    for name, macro in sorted(names.items()):
        if macro not in used:
            failures.append(f"{name} ({macro}) is in common/gmt_env.h but nothing uses it")

    for f in failures:
        print("FAIL:", f)
    print(f"test_env_vars: {len(names)} variables, "
          + ("ok" if not failures else f"{len(failures)} failure(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
