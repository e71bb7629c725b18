#!/usr/bin/env python3
"""test_cuda_samples.py — one samples/cuda scenario run under memrec on a real GPU, its trace
checked event by event against what the sample says it did.

    test_cuda_samples.py [--keep DIR] MEMREC MEMANALYZE CUDA_SAMPLE SCENARIO

The sample prints the events the trace must hold, in order, with the addresses and sizes the
CUDA calls returned ("event OP KIND ADDR SIZE", ADDR "-" for none) and its NVTX ranges
("marker KIND NAME"). This script runs it under memrec, reads the trace back with
`memanalyze sql ... --csv`, and requires: exactly those CUPTI events (op, kind, address, size;
all segment level), exactly those markers, a step per "step N" range, the device named as the
sample saw it, and no analyzer warning.

Exit 0 pass, 1 fail, 77 skip: no GPU usable here (the sample itself exits 77 and says why).
GMT_SAVE_CALLBACK_LOGS=DIR also saves the raw CUPTI callback stream as
DIR/<gpu>_cuda_<scenario>.log (see tests/fixtures/cupti/README.md); --keep DIR keeps the trace
as DIR/cuda_<scenario>.zst (run_all.sh brings both back from the GPU machine).
"""
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def sql(memanalyze, trace, query):
    """Rows of a query as lists of strings ('' for NULL)."""
    r = subprocess.run([memanalyze, "sql", trace, query, "--csv"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        fail(f"memanalyze sql {query!r}: exit {r.returncode}: {r.stderr.strip()}")
    rows = list(csv.reader(io.StringIO(r.stdout)))
    return rows[1:]  # the header


def parse_sample_output(text):
    """(device name, [(op, kind, addr, size)], [(kind, name)]) from the sample's stdout."""
    device, events, markers = None, [], []
    for line in text.splitlines():
        words = line.split(" ")
        if words[0] == "device" and len(words) >= 3:
            device = " ".join(words[2:])
        elif words[0] == "event" and len(words) == 5:
            op, kind, addr, size = words[1:]
            events.append((op, kind, None if addr == "-" else int(addr, 16), int(size)))
        elif words[0] == "marker" and len(words) >= 3:
            markers.append((words[1], " ".join(words[2:])))
        else:
            fail(f"the sample printed a line this test does not know: {line!r}")
    return device, events, markers


def fmt_event(e):
    op, kind, addr, size = e
    return f"{op} {kind} {'-' if addr is None else hex(addr)} {size}"


def check_events(memanalyze, trace, expected):
    rows = sql(memanalyze, trace,
               "SELECT op, level, kind, source, addr, size FROM events WHERE event_id > 0 "
               "ORDER BY event_id")
    got = []
    for op, level, kind, source, addr, size in rows:
        if source != "cupti" or level != "segment":
            fail(f"event {op} {kind} {addr}: level {level}, source {source} "
                 "(expected segment events from cupti only)")
        got.append((op, kind, int(addr) if addr else None, int(size) if size else 0))
    print("trace events:")
    for e in got:
        print("  " + fmt_event(e))
    if got != expected:
        print("expected:", file=sys.stderr)
        for e in expected:
            print("  " + fmt_event(e), file=sys.stderr)
        for i, (g, w) in enumerate(zip(got, expected)):
            if g != w:
                fail(f"event {i + 1}: got {fmt_event(g)}, expected {fmt_event(w)}")
        fail(f"{len(got)} events, expected {len(expected)}")


def check_markers(memanalyze, trace, expected):
    got = [tuple(r) for r in sql(memanalyze, trace,
                                 "SELECT kind, name FROM markers ORDER BY marker_id")]
    if got != expected:
        fail(f"markers {got}, expected {expected}")
    steps = [tuple(r) for r in sql(memanalyze, trace, "SELECT step, name FROM steps ORDER BY step")]
    want_steps = [(m.group(1), name) for kind, name in expected if kind == "push"
                  for m in [re.fullmatch(r"step (\d+)", name)] if m]
    if steps != want_steps:
        fail(f"steps {steps}, expected {want_steps}")


def main():
    args = sys.argv[1:]
    keep = None
    if args[:1] == ["--keep"] and len(args) > 1:
        keep, args = args[1], args[2:]
    if len(args) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    memrec, memanalyze, sample, scenario = args
    env = dict(os.environ)
    # An ASan-built sample (build-asan): the CUDA driver needs the shadow gap left open,
    # memrec's LD_PRELOAD puts libmemrec.so before libasan, and the driver's caches are
    # not leaks of ours.
    env["ASAN_OPTIONS"] = ("protect_shadow_gap=0:verify_asan_link_order=0:detect_leaks=0:"
                           + env.get("ASAN_OPTIONS", ""))

    bare = subprocess.run([sample, scenario], capture_output=True, text=True, env=env,
                          timeout=300)
    if bare.returncode == SKIP:
        why = bare.stderr.strip()
        if not shutil.which("nvidia-smi"):
            why += " (no nvidia-smi either)"
        print(f"SKIP: no GPU usable here: {why}")
        return SKIP
    if bare.returncode != 0:
        fail(f"{scenario} without memrec: exit {bare.returncode}: {bare.stderr.strip()}")

    work = tempfile.mkdtemp(prefix=f"gpu_cuda_{scenario}.")
    trace = os.path.join(work, "trace.zst")
    device, _, _ = parse_sample_output(bare.stdout)
    save_dir = os.environ.get("GMT_SAVE_CALLBACK_LOGS")
    if save_dir:
        gpu = re.sub(r"[^a-z0-9]+", "_", (device or "gpu").lower()).strip("_")
        env["MEMREC_CALLBACK_LOG"] = os.path.join(save_dir, f"{gpu}_cuda_{scenario}.log")
        print(f"saving the callback log as {env['MEMREC_CALLBACK_LOG']}")
    run = subprocess.run([memrec, "-o", trace, "--", sample, scenario], capture_output=True,
                         text=True, env=env, timeout=300)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        fail(f"{scenario} under memrec: exit {run.returncode}")
    if not os.path.exists(trace):
        fail(f"memrec wrote no trace at {trace}")
    if keep:
        shutil.copyfile(trace, os.path.join(keep, f"cuda_{scenario}.zst"))
    device, events, markers = parse_sample_output(run.stdout)

    check_events(memanalyze, trace, events)
    check_markers(memanalyze, trace, markers)
    names = sql(memanalyze, trace, "SELECT name FROM devices WHERE device = 0")
    if [r[0] for r in names] != [device]:
        fail(f"device 0 in the trace: {names}, the sample saw {device!r}")
    warnings = sql(memanalyze, trace, "SELECT code, message FROM warnings")
    if warnings:
        fail(f"the analyzer warned: {warnings}")
    report = subprocess.run([memanalyze, "report", trace], capture_output=True, text=True,
                            timeout=300)
    if report.returncode != 0:
        fail(f"memanalyze report: exit {report.returncode}: {report.stderr.strip()}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"gpu_cuda_{scenario}: ok ({len(events)} events, {len(markers)} markers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
