#!/usr/bin/env python3
"""test_report_json.py — every fact `memanalyze report` prints as text is in `report --json`
(DESIGN.md "One set of facts for every output"; both print query/report.h's structs).

For each input (synth traces: a leak, two fragmenting devices, OOMs, a window; and the real
snapshots in ../shared/data/pytorch when present) the text and the JSON are made, and each line
of the text is checked against the JSON:
  - every number the line shows (bytes, durations, percentages, ratios, counts, event ids,
    steps) is one of the JSON's values as the text spells it, once the JSON's strings (sites,
    moments, the command line, ...) are taken out of the line;
  - the words that are verdicts are the JSON's: each OOM's verdict, the fragmentation and
    trapped ratings, the headroom risk, the recommendations word for word.

argv: synth memanalyze [shared_pytorch_dir]. Python 3 standard library only.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from text_facts import test_args, NUMBER, leaves, units_bytes, units_duration  # noqa: E402

def spellings(doc, dev):
    """Every way the text may spell a number of the run's and this device's JSON."""
    out = set()
    peak = dev["peak_allocated_bytes"] if dev else 0
    for path, v in list(leaves({k: x for k, x in doc.items() if k != "devices"})) + list(
            leaves(dev or {})):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        if isinstance(v, int) or float(v).is_integer():
            n = int(v)
            out.update({str(n), str(n + 1), str(n - 1), units_bytes(n), units_bytes(abs(n)),
                        units_duration(n)})  # +1: step ends of growth windows; -1: tensors
            if peak:
                out.add("%.1f" % (100.0 * n / peak))  # a share of the peak allocated
        for x in (float(v) * (1 - 1e-6), float(v), float(v) * (1 + 1e-6)):  # %.6g in the JSON
            out.update({"%.2f" % x, "%.1f" % (100 * x), "%.0f" % (100 * x)})
        if path.endswith("limit_seconds") and v >= 0:
            out.update({units_duration(v * 1e9), "%.3g s" % v})
        if path.endswith("growth_bytes_per_min"):
            out.add(units_bytes(int(v)))
    if dev and dev.get("total_bytes"):
        out.add("%.0f" % (100.0 * dev["peak_reserved_bytes"] / dev["total_bytes"]))
    return out


def strings(doc, dev):
    vals = [v for _, v in leaves({k: x for k, x in doc.items() if k != "devices"})]
    vals += [v for _, v in leaves(dev or {})]
    return sorted({v for v in vals if isinstance(v, str) and len(v) >= 3}, key=len, reverse=True)


# literal words of the text that hold digits, not facts
LITERALS = ['PyTorch <= 2.1', '"step 3"', "1 step in "]
VERDICTS = {"fragmentation": ": fragmentation", "device_full": "the device is full",
            "outside_allocator": "outside this allocator"}


TOKENS = [0]


def check_lines(lines, doc, dev, where, failures):
    known, texts = spellings(doc, dev), strings(doc, dev)
    for line in lines:
        rest = line
        for s in texts:
            rest = rest.replace(s, " ")
        for lit in LITERALS:
            rest = rest.replace(lit, " ")
        for tok in NUMBER.findall(rest):
            TOKENS[0] += 1
            if tok not in known:
                failures.append("%s: %r of the text is not in the JSON, in: %s" % (where, tok, line))
                break


def check_device(lines, doc, dev, where, failures):
    missing = [k for k in ("oom_events", "largest_allocations", "recommendations", "headroom")
               if k not in dev]
    if missing:
        failures.append("%s: the JSON lacks %s" % (where, ", ".join(missing)))
        return
    check_lines(lines, doc, dev, where, failures)
    ratings = {v for p, v in leaves(dev) if "rating" in p}
    for line in lines:
        for r in re.findall(r"\((good|moderate|serious|severe)\)", line):
            if r not in ratings:
                failures.append("%s: rating %s not in the JSON: %s" % (where, r, line))
        m = re.search(r"; risk (\w+)$", line)
        if m and m.group(1) != dev["headroom"]["risk"]:
            failures.append("%s: risk %s, JSON %s" % (where, m.group(1), dev["headroom"]["risk"]))
    if not any(re.search(r"; risk \w+$", l) for l in lines):
        failures.append("%s: the text does not state the headroom risk" % where)
    ooms = [l for l in lines if l.startswith("    OOM at ")]
    if len(ooms) != len(dev["oom_events"]):
        failures.append("%s: %d OOM lines, %d in the JSON" % (where, len(ooms), len(dev["oom_events"])))
    for line, o in zip(ooms, dev["oom_events"]):
        if not line.startswith("    OOM at %s " % o["when"]):
            failures.append("%s: OOM line for another event: %s / %s" % (where, line, o["when"]))
        said = [k for k, v in VERDICTS.items() if v in line]
        if said != ([o["verdict"]] if o["verdict"] else []):
            failures.append("%s: OOM verdict %s, JSON %s: %s" % (where, said, o["verdict"], line))
    recs = [l[4:] for l in lines if l.startswith("  - ")]
    if recs != [r["text"] for r in dev["recommendations"]]:
        failures.append("%s: recommendations differ: %s / %s" % (where, recs, dev["recommendations"]))
    if "  largest allocations:" in lines:
        i = lines.index("  largest allocations:") + 1
        n = 0
        while i + n < len(lines) and lines[i + n].startswith("    "):
            n += 1
        if n != len(dev["largest_allocations"]):
            failures.append("%s: %d largest allocations, %d in the JSON" % (where, n, len(dev["largest_allocations"])))


def check_input(ma, path, extra, failures):
    name = os.path.basename(path) + (" " + " ".join(extra) if extra else "")
    t = subprocess.run([ma, "report", path] + extra, capture_output=True, text=True)
    j = subprocess.run([ma, "report", path, "--json"] + extra, capture_output=True, text=True)
    if t.returncode or j.returncode:
        failures.append("%s: exit %d/%d: %s%s" % (name, t.returncode, j.returncode, t.stderr, j.stderr))
        return 0
    doc = json.loads(j.stdout)
    parts = re.split(r"^device (\d+)", t.stdout, flags=re.M)
    header = parts[0].splitlines()
    check_lines(header, doc, None, name + " (header)", failures)
    devices = {d["device"]: d for d in doc["devices"]}
    seen = []
    for k in range(1, len(parts), 2):
        dev_id = int(parts[k])
        seen.append(dev_id)
        body = ("device %d" % dev_id + parts[k + 1]).splitlines()
        body = [l for l in body if l != "no device memory events in this input"]
        if dev_id not in devices:
            failures.append("%s: device %d of the text is not in the JSON" % (name, dev_id))
            continue
        check_device(body, doc, devices[dev_id], "%s device %d" % (name, dev_id), failures)
    if sorted(seen) != sorted(devices):
        failures.append("%s: devices %s in the text, %s in the JSON" % (name, seen, sorted(devices)))
    return 1


def main():
    given = test_args(sys.argv, "test_report_json.py")
    if not given:
        return 2
    synth, ma, shared = given
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GMT_CACHE_DIR"] = os.path.join(tmp, "cache")
        traces = {"leak": ["--steps", "30", "--leak", "262144", "--names", "--seed", "1"],
                  "frag2": ["--steps", "12", "--fragment", "--devices", "2", "--seed", "7"],
                  "oom": ["--steps", "8", "--fragment", "--device-memory", "2300000000",
                          "--seed", "5"],
                  "short": ["--steps", "2", "--seed", "2"]}
        runs = []
        for name, args in traces.items():
            out = os.path.join(tmp, name + ".zst")
            subprocess.run([synth, "-o", out] + args, check=True, capture_output=True)
            runs.append((out, []))
        runs.append((os.path.join(tmp, "leak.zst"), ["--from", "step:3", "--to", "step:9"]))
        runs.append((os.path.join(tmp, "leak.zst"), ["--top", "12"]))
        if os.path.isdir(shared):
            for f in sorted(os.listdir(shared)):
                if f.endswith(".pickle"):
                    runs.append((os.path.join(shared, f), []))
        else:
            print("note: %s absent: the synth traces only" % shared)
        checked = sum(check_input(ma, p, extra, failures) for p, extra in runs)
    for f in failures:
        print("FAIL", f)
    print("%d reports checked (%d numbers of the text), %d failures" % (checked, TOKENS[0],
                                                                      len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
