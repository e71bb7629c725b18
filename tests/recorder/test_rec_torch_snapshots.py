"""test_rec_torch_snapshots.py — every entry of PyTorch's ring reaches the trace exactly
once, proven on real histories (issue 26).

Each real snapshot in ../shared/data/pytorch/ is played back as the history of a process
recorded by memrec: the fake torch's rings (which behave as c10's RingBuffer: grow to
max_entries, then overwrite the oldest, listed oldest first; each snapshot re-fits the
clock by a few us) are fed the snapshot's device_traces — what was live before its history
began put first, as entries of its own (memanalyze's layout at event:0) — in windows of
varying size, each followed by a drain, for several schedules:

  - a ring larger than the history, windows of 1, 7, 100, ... entries, and drains that
    find nothing new (the same window twice);
  - a ring smaller than the history, so that it wraps between drains (windows up to 3/4 of
    the ring);
  - a ring that wraps by exactly its size less the tail memrec anchors by.

A steady loop repeats the same (action, address, size, stream) every step, which is what
these histories do (lm-small-forward: 8 507 entries, 343 distinct keys). For each run the
recorded trace must hold the events of every entry, in order, exactly once — the same
sequence memanalyze makes of the snapshot itself — and `memanalyze report --json` of the
trace must agree with the report of the snapshot on every device's peaks and end state.
A history without time_us (PyTorch 2.1) is exact while its ring does not wrap; once it
wraps memrec says it can follow it no further, and stops.

Usage: test_rec_torch_snapshots.py MEMREC MEMANALYZE [SNAPSHOT_DIR] (exit 77: skip).
"""
import json
import os
import pickle
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
from rec_testlib import SKIP, Checks, clean_env, sql_lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_TORCH = os.path.join(HERE, "fake_torch")
DEFAULT_DIR = os.path.join(HERE, "..", "..", "..", "shared", "data", "pytorch")

# The child: the snapshot's history as this process's, revealed in windows, a drain after each.
PLAYBACK = """\
import json, pickle, sys
import torch
import memrec_torch

class Data(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("not data: %s.%s" % (module, name))

snap = Data(open(sys.argv[1], "rb")).load()
seeds = json.load(open(sys.argv[2]))
windows = json.loads(sys.argv[3])
traces = {}
for device, entries in enumerate(snap.get("device_traces") or []):
    if entries or seeds.get(str(device)):
        traces[device] = seeds.get(str(device), []) + list(entries)
torch.cuda.memory.fake_replay(traces)
torch.cuda._lazy_init()  # CUDA starts: memrec turns the history on
d = memrec_torch.drainer()
for w in windows:
    torch.cuda.memory.fake_reveal(w)
    d.drain()
torch.cuda.memory.fake_reveal(1 << 40)  # the rest: the drain at exit takes it
print("played", sum(len(e) for e in traces.values()))
"""

# What memanalyze's reports must agree on, per device.
AGREE = ("peak_allocated_bytes", "peak_reserved_bytes", "end_allocated_bytes",
         "end_reserved_bytes", "fragmentation_at_end")


class Data(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("not data: %s.%s" % (module, name))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def seed_entries(memanalyze, snapshot, device, first_time, env):
    """What was live before the snapshot's history began on `device`, as history entries:
    a segment_alloc per segment, an alloc per block in use (and free_requested for one
    whose free waits on a stream), stamped just before the first entry."""
    out = run([memanalyze, "segments", snapshot, "--at", "event:0", "--device", str(device),
               "--json"], env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    layout = json.loads(out.stdout)
    assert layout.get("rows_left_out", 0) == 0, "the seed layout was cut short"
    stamp = {} if first_time is None else {"time_us": first_time - 1}
    entries = []
    for seg in layout["segments"]:
        stream = seg.get("stream") or 0
        entries.append(dict(stamp, action="segment_alloc", addr=seg["address"],
                            size=seg["total_size"], stream=stream, frames=[]))
        for b in seg["blocks"]:
            # The block's own size as the request: a seeded block's bytes are what the
            # snapshot says it holds (its rounding may have kept an unsplit remainder).
            if b["state"] in ("active_allocated", "active_pending_free"):
                entries.append(dict(stamp, action="alloc", addr=b["address"], size=b["size"],
                                    stream=stream, frames=[]))
            if b["state"] == "active_pending_free":
                entries.append(dict(stamp, action="free_requested", addr=b["address"],
                                    size=b["size"], stream=stream, frames=[]))
    return entries


def events_of(memanalyze, db_input, env):
    """Each device's memory events, in order: {device: [(op, level, addr, size)]}."""
    out = {}
    for line in sql_lines(memanalyze, db_input, "SELECT device, op, level, addr, size "
                          "FROM events WHERE event_id > 0 ORDER BY event_id", env=env):
        if line:
            device, *event = line.split(",")
            out.setdefault(int(device), []).append(tuple(event))
    return out


def report_of(memanalyze, trace, env):
    out = run([memanalyze, "report", trace, "--json"], env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return {d["device"]: {k: d.get(k) for k in AGREE} for d in json.loads(out.stdout)["devices"]}


def schedules(n):
    """(name, ring size, windows) for a history of n entries (seeds included)."""
    cycle = [1, 7, 100, 0, 3, 1000, 0, 0, 31, 16, 17, 250]
    windows, left = [], n
    while left > 0:
        w = cycle[len(windows) % len(cycle)]
        windows.append(w)
        left -= w
    out = [("ring larger than the history", max(64, n + 64), windows)]
    if n >= 128:
        ring = max(64, n // 5)
        wrap = [ring * 3 // 4, 0, ring // 2, 1, ring - 40, 5, ring // 3, 0]
        windows, left = [], n
        while left > 0:
            w = wrap[len(windows) % len(wrap)]
            windows.append(w)
            left -= w
        out.append(("ring of %d, wrapping between drains" % ring, ring, windows))
        # Wraps by just under the ring: what is left of the previous drain is its tail.
        tight = max(64, n // 9)
        out.append(("ring of %d, windows of ring - 16" % tight, tight,
                    [tight - 16] * (n // (tight - 16) + 1)))
    return out


def main():
    if len(sys.argv) < 3:
        print("usage: test_rec_torch_snapshots.py MEMREC MEMANALYZE [DIR]", file=sys.stderr)
        return SKIP
    memrec, memanalyze = sys.argv[1:3]
    folder = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_DIR
    if not os.path.isdir(folder):
        print("SKIP: no real snapshots here (%s: ../shared is absent)" % folder)
        return SKIP
    snapshots = sorted(f for f in os.listdir(folder) if f.endswith(".pickle"))
    check = Checks("test_rec_torch_snapshots.py")
    with tempfile.TemporaryDirectory() as tmp:
        env = clean_env(drop=("PYTHONPATH",))
        env["GMT_CACHE_DIR"] = os.path.join(tmp, "cache")
        env["PYTHONPATH"] = FAKE_TORCH
        script = os.path.join(tmp, "playback.py")
        with open(script, "w") as f:
            f.write(PLAYBACK)
        for name in snapshots:
            path = os.path.join(folder, name)
            snap = Data(open(path, "rb")).load()
            if not isinstance(snap, dict):
                continue
            traces = snap.get("device_traces") or []
            timed = all("time_us" in t[0] for t in traces if t)
            seeds = {}
            for device, entries in enumerate(traces):
                if entries:
                    first = entries[0].get("time_us") if timed else None
                    seeds[str(device)] = seed_entries(memanalyze, path, device, first, env)
            n = max([len(seeds.get(str(d), [])) + len(t) for d, t in enumerate(traces)] + [0])
            if n == 0:
                continue
            seeds_path = os.path.join(tmp, name + ".seeds.json")
            with open(seeds_path, "w") as f:
                json.dump(seeds, f)
            expected = events_of(memanalyze, path, env)
            expected_report = report_of(memanalyze, path, env)
            for label, ring, windows in schedules(n):
                what = "%s, %s" % (name, label)
                trace = os.path.join(tmp, "%s.%d.zst" % (name, ring))
                out = run([memrec, "-o", trace, "--no-symbolize", "--", sys.executable, script,
                           path, seeds_path, json.dumps(windows)],
                          env=dict(env, MEMREC_TORCH_RING=str(ring),
                                   MEMREC_TORCH_DRAIN_MS="600000",
                                   MEMREC_TORCH_DRAIN_PERCENT="100"), cwd=tmp)
                check(out.returncode == 0, "%s: the program ran: %s" % (what, out.stderr))
                warnings = [line for line in out.stderr.splitlines()
                            if line.startswith("memrec: ") and not line.startswith(
                                ("memrec: no CUDA", "memrec: trace written",
                                 "memrec: PyTorch history: "))]
                wraps = ring < n
                if not timed:
                    check(any("has no time_us: its block events carry the time" in w
                              for w in warnings), "%s: the missing time_us is said" % what)
                    if wraps:
                        check(any("its ring is full: its block events are recorded no "
                                  "further" in w for w in warnings),
                              "%s: a full ring without times is said: %r" % (what, warnings))
                        continue
                    warnings = [w for w in warnings if "has no time_us" not in w]
                check(warnings == [], "%s: no warning: %r" % (what, warnings))
                if not os.path.exists(trace):
                    check(False, "%s: no trace" % what)
                    continue
                recorded = events_of(memanalyze, trace, env)
                for device in sorted(set(recorded) | set(expected)):
                    # The seed's entries come first (the snapshot has them as its seed).
                    got = recorded.get(device, [])[len(seeds.get(str(device), [])):]
                    want = expected.get(device, [])
                    if got != want:
                        at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                                  min(len(got), len(want)))
                        check(False, "%s, device %d: %d events recorded, %d in the snapshot; "
                              "first difference at %d: %r against %r" % (
                                  what, device, len(got), len(want), at, got[at:at + 3],
                                  want[at:at + 3]))
                report = report_of(memanalyze, trace, env)
                check(report == expected_report, "%s: the reports differ: %r against %r"
                      % (what, report, expected_report))
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
