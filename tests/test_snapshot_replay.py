#!/usr/bin/env python3
"""test_snapshot_replay.py — every shared PyTorch snapshot, imported and replayed by
memanalyze, ends exactly in the snapshot's own final state, and starts where walking
its history backwards says it must.

usage: test_snapshot_replay.py MEMANALYZE SHARED_DATA_DIR
Exit 0 pass, 1 fail, 77 skip (no shared data). The expectations are computed here, in
Python, independently of the C code: the pickles are read with a restricted Unpickler
that refuses every global (the files are data only), the database with sqlite3.
"""
import glob
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile


class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")


def load(path):
    with open(path, "rb") as f:
        return DataOnly(f).load()


def expected_final(snap, device):
    """Segments {address: size} and live blocks {address: (size, requested, pending)}."""
    segs, blocks = {}, {}
    for s in snap["segments"] if isinstance(snap, dict) else snap:
        if s.get("device", 0) != device:
            continue
        segs[s["address"]] = s["total_size"]
        addr = s["address"]
        for b in s["blocks"]:
            a = b.get("address", addr)
            addr = a + b["size"]
            if b["state"] in ("active_allocated", "active_pending_free", "active_awaiting_free"):
                blocks[a] = (b["size"], b.get("requested_size", b["size"]),
                             b["state"] != "active_allocated")
    return segs, blocks


def merge_ranges(rows):
    """Adjacent mapped ranges are one segment, as PyTorch shows an expandable one."""
    out = {}
    for addr, size, mapped in sorted(rows):
        last = max(out) if out else None
        if mapped and last is not None and last + out[last] == addr:
            out[last] += size
        else:
            out[addr] = size
    return out


def expected_start_reserved(snap, device):
    """Reserved before the first history entry: the final reserved bytes with every
    segment event undone, newest first."""
    segs, _ = expected_final(snap, device)
    reserved = sum(segs.values())
    traces = snap.get("device_traces", []) if isinstance(snap, dict) else []
    entries = traces[device] if device < len(traces) else []
    for e in reversed(entries):
        if e["action"] in ("segment_alloc", "segment_map"):
            reserved -= e["size"]
        elif e["action"] in ("segment_free", "segment_unmap"):
            reserved += e["size"]
    return reserved


def main():
    memanalyze, data = sys.argv[1], sys.argv[2]
    pickles = sorted(glob.glob(os.path.join(data, "*.pickle")))
    if not pickles:
        print(f"SKIP: no shared snapshots in {data}", file=sys.stderr)
        return 77
    failures = 0

    def check(cond, what):
        nonlocal failures
        if not cond:
            failures += 1
            print(f"FAIL: {what}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        for path in pickles:
            name = os.path.basename(path)
            db_path = os.path.join(tmp, name + ".db")
            run = subprocess.run([memanalyze, "import", path, "-o", db_path],
                                 capture_output=True, text=True)
            check(run.returncode == 0, f"{name}: import failed: {run.stderr.strip()}")
            if run.returncode != 0:
                continue
            snap = load(path)
            db = sqlite3.connect(db_path)
            devices = sorted({s.get("device", 0) for s in
                              (snap["segments"] if isinstance(snap, dict) else snap)})
            for dev in devices:
                segs, blocks = expected_final(snap, dev)
                rows = db.execute("SELECT addr, size, mapped FROM segments WHERE device = ? "
                                  "AND kind = 'device' AND free_event_id IS NULL",
                                  (dev,)).fetchall()
                got_segs = merge_ranges(rows)
                check(got_segs == segs,
                      f"{name} device {dev}: final segments differ: "
                      f"{len(got_segs)} vs {len(segs)} expected; "
                      f"missing {sorted(set(segs) - set(got_segs))[:3]}, "
                      f"extra {sorted(set(got_segs) - set(segs))[:3]}")
                got_blocks = {
                    a: (size, req, pending is not None)
                    for a, size, req, pending in db.execute(
                        "SELECT addr, size, requested_size, free_requested_ts_ns "
                        "FROM allocations WHERE device = ? AND kind = 'device' AND "
                        "free_event_id IS NULL AND segment_id IN "
                        "(SELECT segment_id FROM segments WHERE whole_block = 0)", (dev,))}
                diff = [a for a in set(blocks) | set(got_blocks)
                        if blocks.get(a) != got_blocks.get(a)]
                check(not diff, f"{name} device {dev}: {len(diff)} final blocks differ, e.g. "
                      + "; ".join(f"0x{a:x}: got {got_blocks.get(a)} want {blocks.get(a)}"
                                  for a in sorted(diff)[:3]))
                end = db.execute("SELECT allocated_bytes, reserved_bytes, requested_bytes FROM "
                                 "timeline WHERE device = ? ORDER BY event_id DESC LIMIT 1",
                                 (dev,)).fetchone()
                check(end == (sum(b[0] for b in blocks.values()), sum(segs.values()),
                              sum(b[1] for b in blocks.values())),
                      f"{name} device {dev}: end totals {end}")
                start = db.execute("SELECT reserved_bytes FROM events WHERE device = ? AND "
                                   "op = 'seed'", (dev,)).fetchone()
                check(start is not None and start[0] == expected_start_reserved(snap, dev),
                      f"{name} device {dev}: start reserved {start} want "
                      f"{expected_start_reserved(snap, dev)}")
            traces = snap.get("device_traces", []) if isinstance(snap, dict) else []
            n_entries = sum(len([e for e in t if e["action"] not in ("snapshot",)])
                            for t in traces)
            got = db.execute("SELECT count(*) FROM event_rows WHERE event_id > 0").fetchone()[0]
            check(got == n_entries, f"{name}: {got} events replayed, {n_entries} entries")
            warnings = db.execute("SELECT code, count(*) FROM warnings GROUP BY code").fetchall()
            check(not warnings, f"{name}: replay warnings {warnings}")
            db.close()
            print(f"{name}: {len(segs)} segments, {len(blocks)} live blocks, {got} events: "
                  f"{'ok' if not failures else 'checked'}")
    print(f"test_snapshot_replay: {'ok' if failures == 0 else f'{failures} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
