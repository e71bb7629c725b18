#!/usr/bin/env bash
# test_export_pytorch.sh — `memanalyze export --to pytorch` (issue 30) against known answers: a
# recording exported as the pickle torch.cuda.memory._dump_snapshot writes, then read back as an
# input (`report`, `segments`, `sql`), says what the recording says. For synth runs (one device;
# two devices with --fragment; one that runs out of memory; one with NVTX stage ranges), every
# shared snapshot in DATA and the shapes tests/make_pickles.py makes (--snapshots, --training):
# on each device the peaks (allocated, requested, reserved), the end state (reserved, allocated,
# the largest free block) and the segments at the end, block for block (address, size,
# requested size, state), are the original's, and so are the counts of allocations, frees and
# OOMs, each OOM's verdict and sizes, the allocator settings, the bytes of each category at the
# peak, the steps (number, name, first and last event) and the NVTX ranges. The file is read
# with an unpickler that refuses every class, holds only the opcodes MemoryViz's unpickler reads
# (pickletools; each one also found in the real snapshots), and has _dump_snapshot's keys. The
# annotations: a START and an END per range (synth: 2 per step, 2 per stage range; a snapshot:
# the START/END annotations it had), the same again as user_defined entries in each device's
# trace. Categories: on every entry or none; a synth run has them, each block's free says its
# alloc's, and one entry says "unknown". A native frame without a symbol is "??" in its module
# at ip - load_base. FILE.json: json.load gives what the pickle holds. Bad options exit 2 with
# one line and no file; a failed write exits 1 and leaves none.
# usage: test_export_pytorch.sh SYNTH MEMANALYZE [DATA]
set -u
SYNTH=$1 MA=$2 DATA=${3:-}
name=test_export_pytorch
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" --steps 8 --seed 1 -o "$T/synth.zst" 2>/dev/null || fail synth
"$SYNTH" --steps 8 --seed 1 --fragment --devices 2 -o "$T/frag.zst" 2>/dev/null || fail "synth 2"
# an OOM (PyTorch's release-and-retry, then its oom entry with the driver's free bytes)
"$SYNTH" --steps 6 --fragment --device-memory 2684354560 -o "$T/oom.zst" 2>/dev/null ||
    fail "synth oom"
"$SYNTH" --steps 3 --stages --seed 2 -o "$T/stages.zst" 2>/dev/null || fail "synth stages"
inputs=("$T/synth.zst" "$T/frag.zst" "$T/oom.zst" "$T/stages.zst")
if [ -n "$DATA" ] && [ -d "$DATA" ]; then
    for p in "$DATA"/*.pickle; do
        [ -e "$p" ] && inputs+=("$p")
    done
else
    echo "$name: no shared snapshots ($DATA): the real files are skipped"
fi
mkdir -p "$T/mp"
if python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/mp" >/dev/null &&
    python3 "$(dirname "$0")/make_pickles.py" --training "$T/mp/named.pickle" --names >/dev/null; then
    for p in "$T"/mp/*.pickle; do
        inputs+=("$p")
    done
else
    fail "make_pickles.py"
fi

# facts NAME INPUT: report --json and segments --json at the end of each device into $T/NAME.*
facts() {
    local tag=$1 in=$2 d
    "$MA" report "$in" --json >"$T/$tag.report.json" || fail "$tag: report: exit $?"
    for d in $(python3 -c 'import json,sys
print(" ".join(str(x["device"]) for x in json.load(open(sys.argv[1]))["devices"]))' \
        "$T/$tag.report.json"); do
        "$MA" segments "$in" --device "$d" --json >"$T/$tag.seg$d.json" ||
            fail "$tag: segments --device $d: exit $?"
    done
    "$MA" sql "$in" "SELECT step, name, begin_event_id, end_event_id FROM steps ORDER BY step" \
        >"$T/$tag.steps.txt" || fail "$tag: sql steps"
    "$MA" sql "$in" "SELECT name, count(*), count(end_ts_ns) FROM ranges GROUP BY name" \
        >"$T/$tag.ranges.txt" || fail "$tag: sql ranges"
}

# the opcodes the real snapshots hold, once
python3 - "$DATA" >"$T/real_ops.json" <<'PY' || fail "the real snapshots' opcodes"
import glob, json, os, pickletools, sys
real = set()
for p in glob.glob(os.path.join(sys.argv[1], "*.pickle")) if sys.argv[1] else []:
    real |= {op.name for op, _, _ in pickletools.genops(open(p, "rb").read())}
json.dump(sorted(real), sys.stdout)
PY

n=0
for in in "${inputs[@]}"; do
    n=$((n + 1))
    out=$T/out$n.pickle
    if ! "$MA" export "$in" --to pytorch -o "$out" >"$T/out$n.txt" 2>&1; then
        fail "export $in: $(cat "$T/out$n.txt")"
        continue
    fi
    grep -q "^wrote $out: a PyTorch memory snapshot of [0-9]* devices\?, " "$T/out$n.txt" ||
        fail "export's line: $(cat "$T/out$n.txt")"
    "$MA" export "$in" --to pytorch -o "$T/out$n.json" >"$T/out$n.json.txt" 2>&1 ||
        fail "export $in to .json: $(cat "$T/out$n.json.txt")"
    grep -q ", as JSON$" "$T/out$n.json.txt" || fail "export's line: $(cat "$T/out$n.json.txt")"
    facts "orig$n" "$in"
    facts "back$n" "$out"
    DATA=$DATA python3 - "$T" "$n" "$in" <<'PY' || fail "$in: the export's answers"
import collections, glob, io, json, os, pickle, pickletools, re, sys
t, n, src = sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(os.path.join(t, f"out{n}.pickle"), "rb").read()

# only the opcodes PyTorch's JavaScript unpickler (MemoryViz) reads
# (BINFLOAT and LONG_BINGET: in every real _dump_snapshot pickle, so MemoryViz reads them; the
# test asserts below that each opcode written is one the real snapshots in DATA hold)
allowed = {"PROTO", "FRAME", "EMPTY_DICT", "EMPTY_LIST", "MARK", "SETITEMS", "APPENDS",
           "SHORT_BINUNICODE", "BINUNICODE", "BININT", "LONG1", "BINFLOAT", "NEWTRUE", "NEWFALSE",
           "NONE", "MEMOIZE", "BINGET", "LONG_BINGET", "TUPLE2", "STOP"}
ops = [op for op, _, _ in pickletools.genops(raw)]
assert ops[0].name == "PROTO" and ops[-1].name == "STOP", src
bad = {op.name for op in ops} - allowed
assert not bad, (src, bad)
# (NEWTRUE: is_expandable of an expandable segment; MemoryViz.js's unpickle reads it too)
real = set(json.load(open(os.path.join(t, "real_ops.json")))) | {"NEWTRUE"}
assert len(real) == 1 or {op.name for op in ops} <= real, (src, {op.name for op in ops} - real)

class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"class {module}.{name} refused")

snap = Refuse(io.BytesIO(raw)).load()
timed = "no-timestamps" not in src and "no-time" not in src
entries = [e for trace in snap["device_traces"] for e in trace]
keys = {"segments", "device_traces"} | ({"external_annotations"} if timed else set())
assert set(snap) - {"allocator_settings"} == keys or \
    (not entries and set(snap) - {"allocator_settings", "external_annotations"} ==
     {"segments", "device_traces"}), \
    (src, set(snap))  # a history without entries: its times unknown
# the JSON file: the same structure (json.load of it is what the pickle holds), type for type
def same(a, b):
    if type(b) is tuple and type(a) is list:  # JSON has no tuple: segment_pool_id's list
        b = list(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
assert same(json.load(open(os.path.join(t, f"out{n}.json"))), snap), (src, "the .json differs")

# annotations: a START and an END per range, as the input had them
ann = snap.get("external_annotations", [])
for a in ann:
    assert set(a) == {"name", "stage", "device", "time_us"} and a["stage"] in ("START", "END"), a
assert [a["time_us"] for a in ann] == sorted(a["time_us"] for a in ann), src
m = re.search(r"/(synth|frag|oom|stages)\.zst$", src)
if m:
    steps = {"synth": 8, "frag": 8, "oom": 6, "stages": 3}[m.group(1)]
    per_step = 5 if m.group(1) == "stages" else 1  # step + data_loading/forward/backward/optimizer
    want = 2 * (per_step * steps + (m.group(1) == "stages"))  # + model_creation
    if m.group(1) == "oom":  # the run ends at its OOM: the steps it reached
        want = len(ann)
        assert want >= 2, src
    assert len(ann) == want, (src, len(ann), want)
else:
    orig = Refuse(open(src, "rb")).load()
    had = [a for a in (orig.get("external_annotations") or []) if isinstance(orig, dict)
           and a.get("stage") in ("START", "END")]
    if isinstance(orig, dict) and not had:
        had = [e for tr in orig.get("device_traces") or [] for e in tr
               if e.get("action") == "user_defined" and e.get("frames") and
               e["frames"][0].get("name") in ("START", "END")]
    assert len(ann) == (len(had) if timed else 0), (src, len(ann), len(had))
    # each segment's pool as the input had it: a 2-tuple, as PyTorch writes it (segments
    # at the end: an input's whose history ends where its segments are)
    if isinstance(orig, dict):
        pools = {s["address"]: tuple(s["segment_pool_id"]) for s in orig.get("segments", [])
                 if isinstance(s.get("segment_pool_id"), (tuple, list))}
        for s in snap["segments"]:
            if s["address"] in pools:
                assert s["segment_pool_id"] == pools[s["address"]], (src, s["address"])
for s in snap["segments"]:
    assert type(s["segment_pool_id"]) is tuple and len(s["segment_pool_id"]) == 2 and \
        all(type(v) is int for v in s["segment_pool_id"]), (src, s["segment_pool_id"])
for trace in snap["device_traces"]:  # the same as user_defined entries, in each device's trace
    ud = [(e["frames"][0]["filename"], e["frames"][0]["name"], e["time_us"])
          for e in trace if e["action"] == "user_defined"]
    assert ud == [(a["name"], a["stage"], a["time_us"]) for a in ann], src

actions = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom", "snapshot", "user_defined"}
entries = [e for trace in snap["device_traces"] for e in trace]
with_cat = [e for e in entries if "category" in e]
assert not with_cat or len(with_cat) == len(entries), (src, "category on some entries only")
if m:  # synth: phases, so categories, and blocks of several kinds
    assert with_cat and len({e["category"] for e in with_cat}) >= 4, (src, "no categories")
if with_cat:
    assert "unknown" in {e["category"] for e in with_cat}, (src, "no entry says unknown")
for trace in snap["device_traces"]:
    live = {}
    for e in trace:
        assert e["action"] in actions, e
        assert {"action", "addr", "size", "stream", "frames"} <= set(e), e
        assert ("time_us" in e) == timed, (src, e)
        assert ("device_free" in e) == (e["action"] == "oom"), e
        for f in e["frames"]:
            assert set(f) == {"filename", "line", "name"}, f
        if with_cat and e["action"] == "alloc":
            live[e["addr"]] = e["category"]
        elif with_cat and e["action"] == "free_completed" and e["addr"] in live:
            assert live.pop(e["addr"]) == e["category"], (src, "a free's category", e)
        elif with_cat and e["action"].startswith("segment_"):
            assert e["category"] == "unknown", e
for s in snap["segments"]:
    assert s["segment_type"] in ("large", "small"), s
    assert sum(b["size"] for b in s["blocks"]) == s["total_size"], s
    for b in s["blocks"]:
        assert b["state"] in ("active_allocated", "active_pending_free", "inactive"), b

def load(name):
    return json.load(open(os.path.join(t, name)))

orig, back = load(f"orig{n}.report.json"), load(f"back{n}.report.json")
od = {d["device"]: d for d in orig["devices"]}
bd = {d["device"]: d for d in back["devices"]}
assert set(od) == set(bd), (src, set(od), set(bd))
assert orig["run"]["allocator_settings_line"] == back["run"]["allocator_settings_line"], src
for dev, o in od.items():
    b = bd[dev]
    for k in ("peak_allocated_bytes", "peak_reserved_bytes", "end_reserved_bytes",
              "end_allocated_bytes", "peak_requested_bytes", "allocs", "frees", "never_freed_bytes",
              "largest_free_at_end_bytes", "ooms"):
        assert o[k] == b[k], (src, dev, k, o[k], b[k])
    # the events keep their numbers unless some had no action (a driver's failed allocation)
    if not o.get("alloc_failed"):
        assert o["peak_allocated_event_id"] == b["peak_allocated_event_id"], (src, dev)
    oom_keys = ("size_bytes", "reserved_unallocated_bytes", "largest_free_bytes",
                "driver_free_bytes", "verdict")
    assert [[x[k] for k in oom_keys] for x in o["oom_events"]] == \
        [[x[k] for k in oom_keys] for x in b["oom_events"]], (src, dev)
    assert o["categories_at_peak"] == b["categories_at_peak"], \
        (src, dev, o["categories_at_peak"], b["categories_at_peak"])
    so, sb = load(f"orig{n}.seg{dev}.json"), load(f"back{n}.seg{dev}.json")
    for k in ("reserved_bytes", "allocated_bytes", "pending_free_bytes", "live_blocks"):
        assert so[k] == sb[k], (src, dev, k, so[k], sb[k])
    seg_keys = ("address", "total_size", "allocated_size", "active_size", "requested_size",
                "stream", "segment_type", "is_expandable")
    blk_keys = ("address", "size", "requested_size", "state")
    assert len(so["segments"]) == len(sb["segments"]), (src, dev)
    for x, y in zip(so["segments"], sb["segments"]):
        assert [x[k] for k in seg_keys] == [y[k] for k in seg_keys], (src, dev, x, y)
        assert [[c[k] for k in blk_keys] for c in x["blocks"]] == \
            [[c[k] for k in blk_keys] for c in y["blocks"]], (src, dev, x["address"])
dropped = any(d.get("alloc_failed") for d in orig["devices"])
for kind in ("steps", "ranges"):  # the steps and ranges come back
    o, b = ([line.split()[:2] if dropped and kind == "steps" else line.split()
             for line in open(os.path.join(t, f"{w}{n}.{kind}.txt"))] for w in ("orig", "back"))
    # (steps: their first and last events too, unless events without an action were left out)
    assert o == b, (src, kind, o, b)
PY
done
[ "$n" -ge 12 ] || fail "inputs: $n"

# a native frame without a symbol: "??" in its module, at its offset (ip - load_base)
"$MA" import "$T/synth.zst" -o "$T/nosym.db" >/dev/null || fail "import nosym"
python3 - "$T/nosym.db" <<'PY' || fail "unsymbolize"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE frames SET name = NULL, file = NULL, line = NULL WHERE module IS NOT NULL")
db.commit()
PY
"$MA" export "$T/nosym.db" --to pytorch -o "$T/nosym.pickle" >/dev/null || fail "export nosym"
python3 - "$T/nosym.db" "$T/nosym.pickle" <<'PY' || fail "?? frames"
import pickle, sqlite3, sys
class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"class {module}.{name} refused")
db = sqlite3.connect(sys.argv[1])
want = {f"{p}+0x{ip - base:x}" for p, ip, base in db.execute(
    "SELECT f.module, f.ip, m.load_base FROM frames f JOIN modules m ON m.path = f.module")}
assert want, "no native frames"
snap = Refuse(open(sys.argv[2], "rb")).load()
seen = {f["filename"] for tr in snap["device_traces"] for e in tr for f in e["frames"]
        if f["name"] == "??"}
assert seen and seen <= want, (sorted(seen)[:3], sorted(want)[:3])
named = [f for tr in snap["device_traces"] for e in tr for f in e["frames"] if f["name"] != "??"]
modules = {p for p, in db.execute("SELECT path FROM modules")}
assert named and not [f for f in named if f["filename"].split("+0x")[0] in modules], named[:3]
assert all(f["line"] == 0 for tr in snap["device_traces"] for e in tr for f in e["frames"]
           if f["name"] == "??")
PY

# bad options: one line, exit 2, no file
"$MA" import "$T/synth.zst" -o "$T/s.db" >/dev/null || fail import
for args in "--what leaks" "--from step:1" "--until step:2"; do
    # shellcheck disable=SC2086
    "$MA" export "$T/s.db" --to pytorch -o "$T/bad.pickle" $args >"$T/bad.out" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/bad.out")" -eq 1 ] && [ ! -e "$T/bad.pickle" ] ||
        fail "export --to pytorch $args: exit $rc, $(cat "$T/bad.out")"
done
"$MA" export "$T/s.db" --to nosuch -o "$T/bad.pickle" >"$T/bad.out" 2>&1
[ $? -eq 2 ] && grep -q "folded, pytorch" "$T/bad.out" || fail "unknown --to: $(cat "$T/bad.out")"
# a write that fails (a file size limit) exits 1 and leaves nothing
(
    ulimit -f 8
    trap '' XFSZ
    "$MA" export "$T/s.db" --to pytorch -o "$T/big.pickle" >"$T/big.out" 2>&1
    echo $? >"$T/big.rc"
)
[ "$(cat "$T/big.rc")" = 1 ] && ! ls "$T"/big.pickle* >/dev/null 2>&1 ||
    fail "a failed write: exit $(cat "$T/big.rc"), $(cat "$T/big.out")"
finish
