#!/usr/bin/env python3
"""test_text_json.py — for every command with --json but `report` (test_report_json.py holds that
one), every number the text prints is in the JSON (DESIGN.md "One set of facts for every
output": the text and the JSON print the same struct of query/, so the text can show no fact
the JSON lacks).

Each case runs one command twice, as text and with --json, on synth traces (a leak with tensor
names and NVTX stages, a second run of it, two fragmenting devices, OOMs, ranks) and on the real
snapshots in ../shared/data/pytorch when present; each line of the text must show only numbers
that are values of the JSON as the text spells them (text_facts.py), once the JSON's strings
(sites, moments, names) and the command's literal words are taken out.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_facts import test_args, json_strings, leaves, number_spellings, unmatched_numbers  # noqa: E402

# Words of a command's text that hold digits and are not facts (headings, option names, units).
LITERALS = {
    "leaks": [],
    "diff": [],
    "segments": [],
    "steps": [],
    "stages": [],
    "tensors": [],
    "compare": [],
    "ranks": [],
    "simulate": [],
}

TOKENS = [0]


def list_lengths(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from list_lengths(v, path + "." + k)
    elif isinstance(value, list):
        yield path, len(value)
        for v in value:
            yield from list_lengths(v, path + "[]")


def derived(cmd, doc):
    """Numbers the text prints that are a plain function of the JSON's (a share of a total the
    JSON states): the formula is the printer's formatting, not a fact of its own."""
    out = set()
    for path, v in list_lengths(doc):  # "16 steps", "3 runs": how many rows a list has
        out.add(str(v))
    if cmd == "segments" and doc.get("reserved_bytes"):  # "free 560 MiB (24.4 %)"
        out.add("%.1f" % (100.0 * doc["free_bytes"] / doc["reserved_bytes"]))
    if cmd == "tensors" and doc.get("peak_allocated_bytes"):
        peak = doc["peak_allocated_bytes"]
        for path, v in leaves(doc):
            if path.endswith("bytes") and isinstance(v, int):
                out.add("%.1f" % (100.0 * v / peak))
    return out


def check(ma, cmd, args, name, failures, drop=None):
    t = subprocess.run([ma, cmd] + args, capture_output=True, text=True)
    j = subprocess.run([ma, cmd] + args + ["--json"], capture_output=True, text=True)
    if t.returncode != j.returncode:
        failures.append("%s: exit %d as text, %d as JSON" % (name, t.returncode, j.returncode))
        return 0
    if t.returncode:
        failures.append("%s: exit %d: %s" % (name, t.returncode, t.stderr.strip()))
        return 0
    doc = json.loads(j.stdout)
    if drop:  # the control: the JSON less one of its facts must fail
        doc.pop(drop)
    known = set()
    for _, v in leaves(doc):
        known |= number_spellings(v)
    known |= derived(cmd, doc)
    # the inputs as given (the text names them; the JSON by label), longest first
    paths = [a for a in args if os.sep in a]
    literals = sorted(set(paths) | {os.path.basename(a) for a in paths}, key=len, reverse=True)
    literals += LITERALS.get(cmd, [])
    strings = json_strings(doc)
    if cmd in ("compare", "ranks"):  # a label cut to its column
        strings += sorted({x[:22] for x in strings if len(x) > 22}, key=len, reverse=True)
    for line in t.stdout.splitlines():
        bad = unmatched_numbers(line, known, strings, literals)
        TOKENS[0] += len(bad) + 1
        if bad:
            failures.append("%s: %r of the text is not in the JSON, in: %s" % (name, bad[0], line))
    return 1


def main():
    given = test_args(sys.argv, "test_text_json.py")
    if not given:
        return 2
    synth, ma, shared = given
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GMT_CACHE_DIR"] = os.path.join(tmp, "cache")
        traces = {"leak": ["--steps", "16", "--leak", "262144", "--names", "--stages", "--seed", "1"],
                  "leak2": ["--steps", "16", "--leak", "524288", "--names", "--seed", "2"],
                  "frag2": ["--steps", "10", "--fragment", "--devices", "2", "--seed", "7"],
                  "oom": ["--steps", "6", "--fragment", "--device-memory", "2300000000",
                          "--seed", "5"],
                  "rank0": ["--steps", "8", "--rank", "0", "--seed", "3"],
                  "rank1": ["--steps", "8", "--rank", "1", "--leak", "1048576", "--seed", "4"]}
        p = {}
        for name, args in traces.items():
            p[name] = os.path.join(tmp, name + ".zst")
            subprocess.run([synth, "-o", p[name]] + args, check=True, capture_output=True)
        cases = [("leaks", [p["leak"]]), ("leaks", [p["leak"], "--from", "step:3", "--to", "step:9"]),
                 ("leaks", [p["frag2"], "--device", "1"]),
                 ("diff", [p["leak"], "--from", "step:2", "--to", "step:9"]),
                 ("diff", [p["frag2"], "--from", "step:1", "--to", "peak", "--device", "1"]),
                 ("diff", [p["leak"], p["leak2"]]), ("diff", [p["leak"], p["leak2"], "--at", "peak"]),
                 ("segments", [p["leak"]]), ("segments", [p["frag2"], "--at", "peak", "--blocks"]),
                 ("steps", [p["leak"]]), ("steps", [p["oom"]]),
                 ("stages", [p["leak"]]), ("tensors", [p["leak"]]),
                 ("tensors", [p["leak"], "--group-by", "none"]),
                 ("compare", [p["leak"], p["leak2"], p["frag2"]]),
                 ("ranks", [p["rank0"], p["rank1"]]),
                 # devices of one process, a rank that ran out, ranks numbered in order
                 ("ranks", [p["frag2"], p["oom"], p["leak"]]),
                 ("simulate", [p["oom"], "--config", "expandable_segments:True"])]
        if os.path.isdir(shared):
            snaps = [os.path.join(shared, f) for f in sorted(os.listdir(shared))
                     if f.endswith(".pickle")]
            for s in snaps:
                cases += [("leaks", [s]), ("segments", [s]), ("steps", [s]), ("stages", [s]),
                          ("tensors", [s])]
            if len(snaps) >= 2:
                cases += [("compare", snaps[:4]), ("diff", snaps[:2])]
        else:
            print("note: %s absent: the synth traces only" % shared)
        # The control: steps' JSON without its rows lacks the facts of the text's table.
        control = []
        check(ma, "steps", [p["leak"]], "control", control, drop="steps")
        if not control:
            failures.append("control: steps' text passed against a JSON without its steps")
        checked = 0
        for cmd, args in cases:
            name = cmd + " " + " ".join(os.path.basename(a) for a in args)
            checked += check(ma, cmd, args, name, failures)
    for f in failures:
        print("FAIL", f)
    print("%d outputs checked (%d numbers of the text), %d failures" % (checked, TOKENS[0],
                                                                       len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
