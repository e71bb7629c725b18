"""text_facts.py — how memanalyze's text spells the numbers of its JSON, for the tests that hold
a command's text to its JSON (test_report_json.py, test_text_json.py): both print one struct of
query/, so every number the text shows must be one of the JSON's values as the text spells it.

The spellings follow base/units.c (units_bytes, units_duration) and the printf formats the
printers use (%.2f ratios, %.1f percentages, 0x addresses). Python 3 standard library only.
"""
import os
import re

UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]

# A number of the text: durations, sizes with their unit, percentages, plain numbers, addresses.
NUMBER = re.compile(r"0x[0-9a-f]+|\d+h \d\dm|\d+m \d\ds"
                    r"|\d+(?:\.\d+)? (?:ns|us|ms|s|B|KiB|MiB|GiB|TiB|PiB)\b"
                    r"|\d+(?:\.\d+)?(?= ?%)|\d+(?:\.\d+)?")


def units_bytes(n):
    """base/units.c units_bytes."""
    n = max(int(n), 0)
    if n < 1024:
        return "%d B" % n
    v, u = float(n), 0
    while v >= 1024.0 and u + 1 < len(UNITS):
        v /= 1024.0
        u += 1
    return ("%.2f %s" if v < 10 else "%.1f %s" if v < 100 else "%.0f %s") % (v, UNITS[u])


def units_duration(ns):
    """base/units.c units_duration."""
    ns = max(int(ns), 0)
    if ns < 1000:
        return "%d ns" % ns
    if ns < 1000000:
        return "%.1f us" % (ns / 1e3)
    if ns < 1000000000:
        return "%.2f ms" % (ns / 1e6)
    if ns < 120000000000:
        return "%.3f s" % (ns / 1e9)
    s = ns // 1000000000
    if s < 3600:
        return "%dm %02ds" % (s // 60, s % 60)
    return "%dh %02dm" % (s // 3600, s // 60 % 60)


def leaves(value, path=""):
    """(path, value) of every leaf of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, path + "." + k)
    elif isinstance(value, list):
        for v in value:
            yield from leaves(v, path + "[]")
    else:
        yield path, value


def number_spellings(v):
    """The ways the text may print one number of the JSON."""
    out = set()
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return out
    if isinstance(v, int) or float(v).is_integer():
        n = int(v)
        out.update({str(n), str(abs(n)), units_bytes(n), units_bytes(abs(n)), units_duration(n)})
        if n >= 0:
            out.add("0x%x" % n)
        if n and n % (1 << 20) == 0:  # "a search to 2 MiB": a whole number of MiB
            out.add("%d MiB" % (n >> 20))
    # %.6g in the JSON: the text's rounding of the exact value may differ in the last digit
    for x in (float(v) * (1 - 1e-6), float(v), float(v) * (1 + 1e-6)):
        x = abs(x)
        out.update({"%.2f" % x, "%.1f" % x, "%.3f" % x, "%.1f" % (100 * x), "%.0f" % (100 * x),
                    "%.2f" % (100 * x)})
    return out


def json_strings(doc):
    """The JSON's strings (sites, moments, names), longest first: taken out of a text line before
    its numbers are read, so a site's line number is not a fact to find."""
    vals = [v for _, v in leaves(doc)]
    return sorted({v for v in vals if isinstance(v, str) and len(v) >= 3}, key=len, reverse=True)


def unmatched_numbers(line, known, strings, literals=()):
    """The numbers of a text line that are none of `known`'s spellings, once the JSON's strings
    and the command's literal words are taken out."""
    rest = line
    for lit in literals:  # first: a JSON string ("forward") may be part of an input's name
        rest = rest.replace(lit, " ")
    for s in strings:
        rest = rest.replace(s, " ")
    return [tok for tok in NUMBER.findall(rest) if tok not in known]


def test_args(argv, name):
    """(synth, memanalyze, shared snapshot folder) from a test's argv, or None after the usage
    line: argv is synth memanalyze [shared_pytorch_dir]."""
    if len(argv) < 3:
        print("usage: %s synth memanalyze [shared_pytorch_dir]" % name)
        return None
    shared = argv[3] if len(argv) > 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "pytorch")
    return argv[1], argv[2], shared
