#!/usr/bin/env bash
# test_export_pytorch.sh — `memanalyze export --to pytorch` (issue 30) against known answers: a
# recording exported as the pickle torch.cuda.memory._dump_snapshot writes, then read back as an
# input (`report`, `segments`), says what the recording says. For synth runs (one device; two
# devices with --fragment; one that runs out of memory) and every shared snapshot in DATA: on
# each device the peaks (allocated, requested, reserved), the end state (reserved, allocated,
# the largest free block) and the segments at the end, block for block (address, size,
# requested size, state), are the original's, and so are the counts of allocations, frees and
# OOMs, each OOM's verdict and sizes, and the allocator settings. The file is read with an
# unpickler that refuses every class, holds only the opcodes MemoryViz's unpickler reads
# (pickletools; each one also found in the real snapshots), and has _dump_snapshot's keys. Bad
# options exit 2 with one line and no file; a failed write exits 1 and leaves none.
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
inputs=("$T/synth.zst" "$T/frag.zst" "$T/oom.zst")
if [ -n "$DATA" ] && [ -d "$DATA" ]; then
    for p in "$DATA"/*.pickle; do
        [ -e "$p" ] && inputs+=("$p")
    done
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
}

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
    facts "orig$n" "$in"
    facts "back$n" "$out"
    DATA=$DATA python3 - "$T" "$n" "$in" <<'PY' || fail "$in: the export's answers"
import glob, io, json, os, pickle, pickletools, sys
t, n, src = sys.argv[1], sys.argv[2], sys.argv[3]
raw = open(os.path.join(t, f"out{n}.pickle"), "rb").read()

# only the opcodes PyTorch's JavaScript unpickler (MemoryViz) reads
# (BINFLOAT and LONG_BINGET: in every real _dump_snapshot pickle, so MemoryViz reads them; the
# test asserts below that each opcode written is one the real snapshots in DATA hold)
allowed = {"PROTO", "FRAME", "EMPTY_DICT", "EMPTY_LIST", "MARK", "SETITEMS", "APPENDS",
           "SHORT_BINUNICODE", "BINUNICODE", "BININT", "LONG1", "BINFLOAT", "NEWTRUE", "NEWFALSE",
           "NONE", "MEMOIZE", "BINGET", "LONG_BINGET", "STOP"}
ops = [op for op, _, _ in pickletools.genops(raw)]
assert ops[0].name == "PROTO" and ops[-1].name == "STOP", src
bad = {op.name for op in ops} - allowed
assert not bad, (src, bad)
real = set()
for p in glob.glob(os.path.join(os.environ.get("DATA", ""), "*.pickle")):
    real |= {op.name for op, _, _ in pickletools.genops(open(p, "rb").read())}
assert not real or {op.name for op in ops} <= real, (src, {op.name for op in ops} - real)

class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"class {module}.{name} refused")

snap = Refuse(io.BytesIO(raw)).load()
assert set(snap) - {"allocator_settings"} == {"segments", "device_traces"}, (src, set(snap))
actions = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "oom", "snapshot"}
for trace in snap["device_traces"]:
    for e in trace:
        assert e["action"] in actions, e
        assert {"action", "addr", "size", "stream", "frames"} <= set(e), e
        assert ("time_us" in e) == ("no-timestamps" not in src), (src, e)
        assert ("device_free" in e) == (e["action"] == "oom"), e
        for f in e["frames"]:
            assert set(f) == {"filename", "line", "name"}, f
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
PY
done
[ "$n" -ge 3 ] || fail "no inputs"

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
