#!/usr/bin/env python3
"""test_snapshot_replay.py — PyTorch snapshots, imported and replayed by memanalyze, end exactly
in the snapshot's own final state, start where walking its history backwards says they must,
and reach the peaks the history says they reach.

usage: test_snapshot_replay.py MEMANALYZE SHARED_DATA_DIR
Every shared snapshot (skipped when the directory has none) and the snapshots
tests/make_pickles.py --snapshots makes with a simulated PyTorch allocator (expandable segments
on two devices, an OOM, no time_us, max_split_size with roundup_power2_divisions, settings only
in PYTORCH_CUDA_ALLOC_CONF, training loops with planted categories), and a hand-made one whose
entries carry user_metadata (the tensor_names rows it must give). Exit 0 pass, 1 fail. The
expectations are computed here, in Python, from the pickle alone, independently of the C code:
the pickles are read with a restricted Unpickler that refuses every global (the files are data
only), the database with sqlite3, the layout at the end with `memanalyze segments --at end
--json`.
"""
import glob
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20


class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")


def load(path):
    with open(path, "rb") as f:
        return DataOnly(f).load()


def segments_of(snap):
    return snap["segments"] if isinstance(snap, dict) else snap


def traces_of(snap):
    return snap.get("device_traces", []) if isinstance(snap, dict) else []


def entries_of(snap, device):
    traces = traces_of(snap)
    return traces[device] if device < len(traces) else []


def final_layout(snap, device):
    """The snapshot's segments of `device` as [(address, total_size, [(address, size, state)])],
    block addresses accumulated where the file has none (as PyTorch's viewer does)."""
    out = []
    for s in segments_of(snap):
        if s.get("device", 0) != device:
            continue
        addr, blocks = s["address"], []
        for b in s["blocks"]:
            a = b.get("address", addr)
            addr = a + b["size"]
            state = b["state"]
            if state == "active_awaiting_free":
                state = "active_pending_free"
            blocks.append((a, b["size"], state))
        out.append((s["address"], s["total_size"], blocks))
    return sorted(out)


def expected_final(snap, device):
    """Segments {address: size} and live blocks {address: (size, requested, pending)}."""
    segs, blocks = {}, {}
    for s in segments_of(snap):
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


def request(e):
    return e["size"] or 1  # a zero request counts as 1 (model/torch_history.h)


def expected_series(snap, device):
    """(start reserved, peak reserved, start requested, peak requested) from the history: the
    final totals with every entry undone newest first give the start; replaying the entries
    forward from there gives the peaks (the start included)."""
    segs, blocks = expected_final(snap, device)
    entries = entries_of(snap, device)
    reserved, requested = sum(segs.values()), sum(b[1] for b in blocks.values())
    for e in reversed(entries):
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            reserved -= e["size"]
        elif a in ("segment_free", "segment_unmap"):
            reserved += e["size"]
        elif a == "alloc":
            requested -= request(e)
        elif a == "free_completed":
            requested += request(e)
    start = (reserved, requested)
    peak_reserved, peak_requested = reserved, requested
    for e in entries:
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            reserved += e["size"]
        elif a in ("segment_free", "segment_unmap"):
            reserved -= e["size"]
        elif a == "alloc":
            requested += request(e)
        elif a == "free_completed":
            requested -= request(e)
        peak_reserved = max(peak_reserved, reserved)
        peak_requested = max(peak_requested, requested)
    return start[0], peak_reserved, start[1], peak_requested


def expected_events(snap):
    """Events the import writes: one per entry but snapshot markers, one per page of a
    segment_map (20 MiB pages in the large pool, 2 MiB ones in the small pool)."""
    n = 0
    for trace in traces_of(snap):
        for e in trace:
            if e["action"] == "snapshot":
                continue
            if e["action"] == "segment_map":
                page = 20 * MIB if e["size"] % (20 * MIB) == 0 else 2 * MIB
                n += (e["size"] + page - 1) // page
            else:
                n += 1
    return n


def expected_facts(snap):
    """meta 'allocator_settings_source', 'timestamps', 'history' and whether expandable
    segments are on, from the pickle."""
    traces = traces_of(snap)
    entries = [e for t in traces for e in t]
    settings = snap.get("allocator_settings") if isinstance(snap, dict) else None
    mapped = any(e["action"] in ("segment_map", "segment_unmap") for e in entries) or any(
        s.get("is_expandable") for s in segments_of(snap))
    if settings is not None:
        source = "snapshot"
        expandable = settings.get("expandable_segments")
        if expandable is None:
            conf = settings.get("PYTORCH_CUDA_ALLOC_CONF") or ""
            expandable = "expandable_segments:True" in conf.replace(" ", "") or (
                None if "expandable_segments" not in conf else False)
        if expandable is None:
            expandable = mapped or None
    else:
        source = "inferred" if mapped else "none"
        expandable = True if mapped else None
    times = int(any("time_us" in e for e in entries))
    return source, times, int(bool(entries)), expandable


def named_snapshot():
    """A snapshot whose entries carry user_metadata as PyTorch >= 2.9 writes it (the text of
    torch.cuda.memory._set_memory_metadata(), "" when none is set, in every entry), plus what a
    reader must survive: an int, None, an unknown key; a block of the final state named the same
    way (no PyTorch writes that yet). Returns (snapshot, the tensor_names rows expected as
    {addr: (name, category, tensors)})."""
    base, base2 = 0x7F0000000000, 0x7F0002000000
    t = [1748474028000000]

    def entry(action, addr, size, meta="", **more):
        t[0] += 10
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t[0],
             "compile_context": "N/A", "user_metadata": meta, "frames": []}
        e.update(more)
        return e

    trace = [
        entry("alloc", base + 2 * MIB, 2 * MIB, "layers.0.weight"),
        entry("alloc", base + 4 * MIB, 2 * MIB, "optimizer_state layers.0.weight.exp_avg"),
        entry("alloc", base + 6 * MIB, 2 * MIB, ""),
        entry("alloc", base + 8 * MIB, 2 * MIB, 42),  # a hostile type: ignored
        entry("alloc", base + 10 * MIB, 2 * MIB, None, some_future_key={"x": [1]}),
        entry("free_requested", base + 10 * MIB, 2 * MIB, "during.free"),  # frees name nothing
        entry("free_completed", base + 10 * MIB, 2 * MIB, "during.free"),
        entry("alloc", base + 10 * MIB, 2 * MIB, "activation layers.1.out"),
        entry("segment_alloc", base2, 2 * MIB, "segment.meta"),  # names no block
        entry("alloc", base2, 2 * MIB, ""),
    ]

    def block(addr, size, state, **more):
        b = {"address": addr, "size": size, "requested_size": size if state != "inactive" else 0,
             "state": state, "frames": []}
        b.update(more)
        return b

    blocks = [block(base, 2 * MIB, "active_allocated", user_metadata="seed.buffer")]
    blocks += [block(base + k * MIB, 2 * MIB, "active_allocated") for k in (2, 4, 6, 8, 10)]
    blocks.append(block(base + 12 * MIB, 8 * MIB, "inactive"))

    def segment(addr, size, blocks):
        used = sum(b["size"] for b in blocks if b["state"] != "inactive")
        return {"device": 0, "address": addr, "total_size": size, "allocated_size": used,
                "active_size": used, "requested_size": used, "stream": 0,
                "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                "frames": [], "blocks": blocks}

    snap = {"segments": [segment(base, 20 * MIB, blocks),
                         segment(base2, 2 * MIB, [block(base2, 2 * MIB, "active_allocated")])],
            "device_traces": [trace], "allocator_settings": {"expandable_segments": False}}
    want = {base: ("seed.buffer", None, 1), base + 2 * MIB: ("layers.0.weight", None, 1),
            base + 4 * MIB: ("layers.0.weight.exp_avg", "optimizer_state", 1),
            base + 10 * MIB: ("layers.1.out", "activation", 1)}
    return snap, want


def check_names(memanalyze, tmp, env, check):
    """user_metadata becomes tensor_names rows bound to the blocks it names (TRACE_FORMAT.md,
    "Tensor names"): an alloc's names its block, a seed block's names it from the start; the
    text is passed on as written, the replay telling a category word from a name."""
    snap, want = named_snapshot()
    path, db_path = os.path.join(tmp, "named.pickle"), os.path.join(tmp, "named.db")
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    run = subprocess.run([memanalyze, "import", path, "-o", db_path], capture_output=True,
                         text=True, env=env)
    check(run.returncode == 0, f"named.pickle: import failed: {run.stderr.strip()}")
    if run.returncode != 0:
        return
    db = sqlite3.connect(db_path)
    rows = db.execute("SELECT a.addr, t.name, t.category, t.tensors, a.free_event_id IS NULL, "
                      "a.alloc_id <= 0 FROM tensor_names t JOIN allocations a "
                      "USING (alloc_id)").fetchall()
    got = {r[0]: r[1:4] for r in rows}
    check(got == want and len(rows) == len(want),
          f"named.pickle: tensor_names {sorted(rows)}, want {sorted(want.items())}")
    check(all(r[4] for r in rows), f"named.pickle: a name bound to a freed block: {rows}")
    seeded = [r[0] for r in rows if r[5]]
    check(seeded == [min(want)], f"named.pickle: seeded named blocks {seeded}")
    warnings = db.execute("SELECT code, count(*) FROM warnings GROUP BY code").fetchall()
    check(not warnings, f"named.pickle: replay warnings {warnings}")
    db.close()
    print(f"named.pickle: {len(rows)} tensor names: "
          f"{'ok' if got == want else 'checked'}")


def shadowed_seed_snapshot():
    """A hostile final state: two live blocks at one address (a 0-byte one first), after a block
    the history's last entry allocates, and a history long enough (frees of blocks the ring never
    saw allocated, then alloc/free rounds) that walking it back compacts the seed's blocks: the
    shadowed block then moves while the index names the other one."""
    base = 0x7F0000000000
    blocks = [{"address": base, "size": MIB, "state": "active_allocated", "requested_size": MIB},
              {"address": base + MIB, "size": 0, "state": "active_allocated",
               "requested_size": 0},
              {"address": base + MIB, "size": MIB, "state": "active_allocated",
               "requested_size": MIB},
              {"address": base + 2 * MIB, "size": 2 * MIB, "state": "inactive",
               "requested_size": 0}]
    segment = {"device": 0, "address": base, "total_size": 4 * MIB, "allocated_size": 2 * MIB,
               "active_size": 2 * MIB, "requested_size": 2 * MIB, "stream": 0,
               "segment_type": "large", "blocks": blocks}
    trace, t = [], 1000
    for i in range(400):
        trace.append({"action": "free_completed", "addr": base + 2 * MIB + 4096 * i,
                      "size": 512, "stream": 0, "time_us": t + i})
    t += 400
    for i in range(600):
        a = base + 2 * MIB + (i % 4) * 4096
        for action in ("alloc", "free_requested", "free_completed"):
            trace.append({"action": action, "addr": a, "size": 4096, "stream": 0, "time_us": t})
            t += 1
    trace.append({"action": "alloc", "addr": base, "size": MIB, "stream": 0, "time_us": t})
    return {"segments": [segment], "device_traces": [trace]}


def check_shadowed_seed(memanalyze, tmp, env, check):
    """The import of shadowed_seed_snapshot() completes (it once tripped an assertion) and keeps
    every history entry as an event."""
    snap = shadowed_seed_snapshot()
    path = os.path.join(tmp, "shadowed.pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    db_path = path + ".db"
    run = subprocess.run([memanalyze, "import", path, "-o", db_path], capture_output=True,
                         text=True, env=env)
    check(run.returncode == 0, f"shadowed seed block: import failed: {run.stderr.strip()}")
    if run.returncode == 0:
        db = sqlite3.connect(db_path)
        n = db.execute("SELECT count(*) FROM event_rows WHERE event_id > 0").fetchone()[0]
        check(n == expected_events(snap), f"shadowed seed block: {n} events, "
              f"want {expected_events(snap)}")
        db.close()


def check_far_devices(memanalyze, tmp, env, check):
    """Segments on devices far past any GPU count (3 000 000, 2**40): the import names the
    devices up to the last one it follows and no further, so it takes no time or memory for
    the numbers; the far segments' events are reported as ignored."""
    base = 0x7F0000000000
    def segment(device, addr):
        return {"device": device, "address": addr, "total_size": 2 * MIB, "allocated_size": 0,
                "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "small",
                "blocks": [{"address": addr, "size": 2 * MIB, "state": "inactive",
                            "requested_size": 0}]}
    snap = {"segments": [segment(0, base), segment(3000000, base + 8 * MIB),
                         segment(2 ** 40, base + 16 * MIB)],
            "device_traces": [[{"action": "alloc", "addr": base, "size": 512, "stream": 0,
                                "time_us": 1}]]}
    path = os.path.join(tmp, "far-devices.pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    db_path = path + ".db"
    run = subprocess.run([memanalyze, "import", path, "-o", db_path], capture_output=True,
                         text=True, env=env, timeout=60)
    check(run.returncode == 0, f"far devices: import failed: {run.stderr.strip()}")
    if run.returncode == 0:
        db = sqlite3.connect(db_path)
        devices = [r[0] for r in db.execute("SELECT device FROM devices ORDER BY device")]
        check(devices == [0], f"far devices: devices {devices[:5]}")
        far = db.execute("SELECT count(*) FROM warnings WHERE code = 'device_out_of_range'"
                         ).fetchone()[0]
        check(far >= 1, "far devices: the segment on device 3000000 is reported as ignored")
        db.close()


def main():
    memanalyze, data = sys.argv[1], sys.argv[2]
    failures = 0

    def check(cond, what):
        nonlocal failures
        if not cond:
            failures += 1
            print(f"FAIL: {what}", file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        made = os.path.join(tmp, "made")
        gen = subprocess.run([sys.executable, os.path.join(HERE, "make_pickles.py"),
                              "--snapshots", made], capture_output=True, text=True)
        check(gen.returncode == 0, f"make_pickles.py --snapshots: {gen.stderr.strip()}")
        pickles = sorted(glob.glob(os.path.join(data, "*.pickle")))
        if not pickles:
            print(f"note: no shared snapshots in {data}; the made ones only", file=sys.stderr)
        pickles += sorted(glob.glob(os.path.join(made, "*.pickle")))
        env = dict(os.environ, GMT_CACHE_DIR=os.path.join(tmp, "cache"))
        check_names(memanalyze, tmp, env, check)
        check_shadowed_seed(memanalyze, tmp, env, check)
        check_far_devices(memanalyze, tmp, env, check)
        for path in pickles:
            name = os.path.basename(path)
            db_path = os.path.join(tmp, name + ".db")
            run = subprocess.run([memanalyze, "import", path, "-o", db_path],
                                 capture_output=True, text=True, env=env)
            check(run.returncode == 0, f"{name}: import failed: {run.stderr.strip()}")
            if run.returncode != 0:
                continue
            snap = load(path)
            db = sqlite3.connect(db_path)
            devices = sorted({s.get("device", 0) for s in segments_of(snap)} |
                             {d for d, t in enumerate(traces_of(snap)) if t})
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
                start_res, peak_res, start_req, peak_req = expected_series(snap, dev)
                start = db.execute("SELECT reserved_bytes, requested_bytes FROM events WHERE "
                                   "device = ? AND op = 'seed'", (dev,)).fetchone()
                check(start == (start_res, start_req),
                      f"{name} device {dev}: start (reserved, requested) {start} want "
                      f"{(start_res, start_req)}")
                peaks = db.execute("SELECT peak_reserved_bytes, peak_requested_bytes FROM "
                                   "devices WHERE device = ?", (dev,)).fetchone()
                check(peaks == (peak_res, peak_req),
                      f"{name} device {dev}: peaks (reserved, requested) {peaks} want "
                      f"{(peak_res, peak_req)}")
                # the layout at the end is the snapshot's own segments, byte for byte
                seg_run = subprocess.run([memanalyze, "segments", db_path, "--at", "end",
                                          "--device", str(dev), "--json"],
                                         capture_output=True, text=True, env=env)
                check(seg_run.returncode == 0,
                      f"{name} device {dev}: segments --json: {seg_run.stderr.strip()}")
                if seg_run.returncode == 0:
                    got = json.loads(seg_run.stdout)
                    layout = sorted((s["address"], s["total_size"],
                                     [(b["address"], b["size"], b["state"]) for b in s["blocks"]])
                                    for s in got["segments"])
                    want = final_layout(snap, dev)
                    bad = [w for w, g in zip(want, layout) if w != g]
                    check(layout == want and not got["outside_blocks"] and
                          not got["rows_left_out"],
                          f"{name} device {dev}: layout at end: {len(layout)} segments vs "
                          f"{len(want)}, first difference "
                          f"{bad[0][:2] if bad else None}, outside "
                          f"{len(got['outside_blocks'])}, left out {got['rows_left_out']}")
                # every moment has a full layout: at a few events, the layout agrees with the
                # timeline and leaves nothing out (no live block drawn outside its segment)
                ids = [r[0] for r in db.execute(
                    "SELECT event_id FROM timeline WHERE device = ? AND event_id >= 0 "
                    "ORDER BY event_id", (dev,))]
                picks = sorted({ids[i * (len(ids) - 1) // 4] for i in range(5)} if ids else set())
                for at in picks:
                    seg_run = subprocess.run([memanalyze, "segments", db_path, "--at",
                                              f"event:{at}", "--device", str(dev), "--json"],
                                             capture_output=True, text=True, env=env)
                    if seg_run.returncode != 0:
                        check(False, f"{name} device {dev} event {at}: {seg_run.stderr.strip()}")
                        continue
                    got = json.loads(seg_run.stdout)
                    row = db.execute("SELECT reserved_bytes, allocated_bytes FROM timeline WHERE "
                                     "device = ? AND event_id <= ? ORDER BY event_id DESC LIMIT 1",
                                     (dev, at)).fetchone()
                    check((got["reserved_bytes"], got["allocated_bytes"]) == row and
                          not got["outside_blocks"] and not got["rows_left_out"],
                          f"{name} device {dev} event {at}: layout reserved/allocated "
                          f"{got['reserved_bytes']}/{got['allocated_bytes']}, timeline {row}, "
                          f"outside {len(got['outside_blocks'])}, left out "
                          f"{got['rows_left_out']}")
                # each step's end state the replay keeps (step_ends) is the timeline's
                bad_ends = db.execute(
                    "SELECT s.step FROM steps s LEFT JOIN step_ends m ON m.device = ?1 AND "
                    "m.end_event_id = s.end_event_id WHERE m.event_id IS NOT (SELECT max(r.event_id) "
                    "FROM timeline r WHERE r.device = ?1 AND r.event_id <= s.end_event_id) OR "
                    "(m.event_id IS NOT NULL AND "
                    "(m.allocated_bytes, m.requested_bytes, m.reserved_bytes, m.ts_ns) IS NOT "
                    "(SELECT allocated_bytes, requested_bytes, reserved_bytes, ts_ns FROM "
                    "event_rows WHERE event_id = m.event_id))", (dev,)).fetchall()
                check(not bad_ends, f"{name} device {dev}: step_ends differ from the timeline at "
                      f"steps {[r[0] for r in bad_ends[:5]]}")
                # the free split the replay keeps (free_splits: step ends, the peak, the end)
                # is the layout's at that moment, releasable and trapped byte for byte
                splits = db.execute("SELECT event_id, releasable_bytes, trapped_bytes FROM "
                                    "free_splits WHERE device = ? ORDER BY event_id",
                                    (dev,)).fetchall()
                check(bool(splits), f"{name} device {dev}: no free_splits rows")
                for at, releasable, trapped in splits[:: max(1, len(splits) // 6)] + splits[-1:]:
                    seg_run = subprocess.run([memanalyze, "segments", db_path, "--at",
                                              f"event:{at}", "--device", str(dev), "--json"],
                                             capture_output=True, text=True, env=env)
                    got = json.loads(seg_run.stdout) if seg_run.returncode == 0 else {}
                    check((got.get("releasable_bytes"), got.get("trapped_bytes")) ==
                          (releasable, trapped),
                          f"{name} device {dev} event {at}: free_splits releasable/trapped "
                          f"{releasable}/{trapped}, layout {got.get('releasable_bytes')}/"
                          f"{got.get('trapped_bytes')} {seg_run.stderr.strip()}")
            # simulate: the run's own settings reproduce the recording, request for request
            # (every real snapshot here, and every made one: rings that started mid-run,
            # expandable ranges of several streams and devices, blocks PyTorch did not split)
            # (a history of one entry, or without an allocation, has nothing to replay: simulate
            # says so and stops)
            must_reproduce = True
            for dev in devices:
                entries, asks = db.execute(
                    "SELECT count(*), count(CASE WHEN level = 'block' AND op IN ('alloc', 'oom') "
                    "THEN 1 END) FROM events WHERE device = ? AND event_id > 0 AND source = "
                    "'torch' AND kind = 'device'", (dev,)).fetchone()
                if not must_reproduce or entries < 2 or not asks:
                    if entries and (entries < 2 or not asks):
                        sim = subprocess.run([memanalyze, "simulate", db_path, "--device",
                                              str(dev)], capture_output=True, text=True, env=env)
                        check(sim.returncode == 2 and "nothing to " in sim.stderr,
                              f"{name} device {dev}: a history of {entries} entries, {asks} "
                              f"allocations, simulated: {sim.returncode} {sim.stderr.strip()}")
                    continue
                sim = subprocess.run([memanalyze, "simulate", db_path, "--device", str(dev),
                                      "--json"], capture_output=True, text=True, env=env)
                own = json.loads(sim.stdout)["configs"][0] if sim.returncode == 0 else {}
                rep = own.get("reproduction") or {}
                check(rep.get("differing") == 0 and
                      own.get("peak_reserved_bytes") == rep.get("recorded_peak_reserved_bytes"),
                      f"{name} device {dev}: simulate's own configuration does not reproduce "
                      f"the recording: {rep} {sim.stderr.strip()}")
            got = db.execute("SELECT count(*) FROM event_rows WHERE event_id > 0").fetchone()[0]
            check(got == expected_events(snap),
                  f"{name}: {got} events replayed, {expected_events(snap)} expected")
            warnings = db.execute("SELECT code, count(*) FROM warnings GROUP BY code").fetchall()
            check(not warnings, f"{name}: replay warnings {warnings}")
            bad = db.execute("SELECT d.device FROM devices d WHERE d.peak_segments IS NOT (SELECT "
                             "max(e.segments) FROM events e WHERE e.device = d.device AND "
                             "(e.event_id > 0 OR e.op = 'seed'))").fetchall()
            check(not bad, f"{name}: devices.peak_segments is not the timeline's most segments "
                  f"on devices {bad}")
            meta = dict(db.execute("SELECT key, value FROM meta"))
            scanned = db.execute("SELECT count(*), coalesce(max(ts_ns), 0) FROM event_rows "
                                 "WHERE event_id > 0").fetchone()
            check((meta.get("recorded_events"), meta.get("last_ts_ns")) == scanned,
                  f"{name}: meta recorded_events/last_ts_ns {meta.get('recorded_events')}/"
                  f"{meta.get('last_ts_ns')}, the events say {scanned}")
            # private pools (segment_pool_id other than (0, 0)): the final segments of each
            # keep its number, a * 2^32 + b, in segments.pool; the default pool's have none
            if isinstance(snap, dict):
                want = sorted((s["device"], s["address"], (s["segment_pool_id"][0] << 32) +
                               s["segment_pool_id"][1])
                              for s in snap.get("segments", [])
                              if tuple(s.get("segment_pool_id", (0, 0))) != (0, 0))
                got_pools = sorted(db.execute(
                    "SELECT device, min(addr), pool FROM segments WHERE free_event_id IS NULL "
                    "AND pool IS NOT NULL GROUP BY device, pool, addr").fetchall())
                check(got_pools == want, f"{name}: private pools {got_pools[:4]}, the snapshot "
                      f"says {want[:4]}")
            # with expandable segments on, PyTorch splits any remainder of 512 bytes or more:
            # every block is its rounded request, seed blocks known only by their free too
            snap_settings = snap.get("allocator_settings") if isinstance(snap, dict) else None
            if (snap_settings or {}).get("expandable_segments") and not any(
                    (snap_settings.get("roundup_power2_divisions") or {}).values()):
                wide = db.execute(
                    "SELECT event_id, size, requested_size FROM events WHERE level = 'block' "
                    "AND op = 'alloc' AND size != (max(requested_size, 1) + 511) / 512 * 512 "
                    "LIMIT 3").fetchall()
                check(not wide, f"{name}: blocks larger than their rounded request with "
                      f"expandable segments on: {wide}")
            source, times, history, expandable = expected_facts(snap)
            check((meta.get("allocator_settings_source"), meta.get("timestamps"),
                   meta.get("history")) == (source, times, history),
                  f"{name}: meta source/timestamps/history "
                  f"{meta.get('allocator_settings_source')}/{meta.get('timestamps')}/"
                  f"{meta.get('history')}, want {source}/{times}/{history}")
            settings = json.loads(meta.get("allocator_settings", "null")) or {}
            check(isinstance(settings, dict) and
                  settings.get("expandable_segments") == expandable,
                  f"{name}: meta allocator_settings {settings}: expandable_segments should be "
                  f"{expandable}")
            snap_settings = snap.get("allocator_settings") if isinstance(snap, dict) else None
            for key, value in (snap_settings or {}).items():
                check(settings.get(key) == value,
                      f"{name}: allocator_settings[{key!r}] = {settings.get(key)!r}, "
                      f"the snapshot says {value!r}")
            db.close()
            print(f"{name}: {len(devices)} device(s), {got} events: "
                  f"{'ok' if not failures else 'checked'}")
    print(f"test_snapshot_replay: {'ok' if failures == 0 else f'{failures} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
