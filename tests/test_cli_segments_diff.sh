#!/usr/bin/env bash
# test_cli_segments_diff.sh — `memanalyze segments` and `memanalyze diff` end
# to end on synthetic traces with known answers: layouts whose blocks tile
# every segment and agree with the timeline, the planted leak found by a
# diff of consecutive steps and by a diff of two runs, nothing in a diff of
# a point with itself, and one-line errors with exit status 2.
# usage: test_cli_segments_diff.sh MEMANALYZE SYNTH
set -u
MA=$1 SYNTH=$2
name=test_cli_segments_diff
. "$(dirname "$0")/cli_lib.sh"
expect_grep() { grep -qF -- "$2" "$1" || { fail "$3: '$2' not in output:"; cat "$1" >&2; }; }
MiB=1048576

"$SYNTH" -o "$T/frag.zst" --steps 20 --leak 1M --fragment 2>/dev/null || fail "synth --fragment"
"$SYNTH" -o "$T/l1.zst" --steps 20 --leak 1M 2>/dev/null || fail "synth --leak 1M"
"$SYNTH" -o "$T/l2.zst" --steps 20 --leak 2M 2>/dev/null || fail "synth --leak 2M"
"$SYNTH" -o "$T/l0.zst" --steps 20 2>/dev/null || fail "synth without a leak"

# ---- segments: blocks tile each segment; the sums are the timeline's ---------
whens="start event:1 event:100 step:0 step:5 step:19 peak time:0.5s end"
i=0
for when in $whens; do
  i=$((i + 1))
  "$MA" segments "$T/frag.zst" --at "$when" --json >"$T/seg$i.json" 2>"$T/seg.err" ||
    { fail "segments --at $when: exit $?"; cat "$T/seg.err" >&2; continue; }
  id=$(sed -n '1s/.*"event_id": \([0-9-]*\),.*/\1/p' "$T/seg$i.json")
  "$MA" sql "$T/frag.zst" --json "SELECT allocated_bytes, requested_bytes, reserved_bytes,
      segments, largest_free_bytes FROM timeline WHERE device = 0 AND event_id <= ${id:-0}
      ORDER BY event_id DESC LIMIT 1" >"$T/tl$i.json"
done
python3 - "$T" $whens <<'EOF' || fail "segments: layout checks"
import json, sys
ok = True
for i, when in enumerate(sys.argv[2:], 1):
    d = json.load(open("%s/seg%d.json" % (sys.argv[1], i)))
    tl = json.load(open("%s/tl%d.json" % (sys.argv[1], i)))[0]
    bad = []
    if d["device"] != 0 or d["when"] != when:
        bad.append("device/when %r %r" % (d["device"], d["when"]))
    alloc = req = res = 0
    largest = 0
    prev_end = 0
    for s in d["segments"]:
        if s["address"] < prev_end:
            bad.append("segments out of order or overlapping at %#x" % s["address"])
        prev_end = s["address"] + s["total_size"]
        a = s["address"]
        for b in s["blocks"]:
            if b["address"] != a:
                bad.append("gap or overlap at %#x in segment %#x" % (a, s["address"]))
            a += b["size"]
            if b["state"] not in ("active_allocated", "active_pending_free", "inactive"):
                bad.append("bad state " + b["state"])
            if b["state"] == "inactive":
                largest = max(largest, b["size"])
                if "frames" in b:
                    bad.append("frames on an inactive block")
            elif "frames" not in b or not b["frames"]:
                bad.append("live block without frames")
            elif set(b["frames"][0]) != {"name", "filename", "line"}:
                bad.append("frame keys " + str(sorted(b["frames"][0])))
        if a != s["address"] + s["total_size"]:
            bad.append("blocks of %#x sum to %d, not %d"
                       % (s["address"], a - s["address"], s["total_size"]))
        live = [b for b in s["blocks"] if b["state"] != "inactive"]
        if s["allocated_size"] != sum(b["size"] for b in live
                                      if b["state"] == "active_allocated"):
            bad.append("allocated_size of %#x" % s["address"])
        if s["active_size"] != sum(b["size"] for b in live):
            bad.append("active_size of %#x" % s["address"])
        if s["requested_size"] != sum(b["requested_size"] for b in live):
            bad.append("requested_size of %#x" % s["address"])
        want = "small" if s["total_size"] <= 2 << 20 else "large"
        if not s["is_expandable"] and s["segment_type"] != want:
            bad.append("segment_type of %#x" % s["address"])
        alloc += s["active_size"]  # the timeline's allocated: pending-free blocks included
        req += s["requested_size"]
        res += s["total_size"]
    for key, got, want in (("allocated", alloc, tl["allocated_bytes"]),
                           ("requested", req, tl["requested_bytes"]),
                           ("reserved", res, tl["reserved_bytes"]),
                           ("segments", len(d["segments"]), tl["segments"]),
                           ("largest free", largest, tl["largest_free_bytes"]),
                           ("allocated_bytes key", d["allocated_bytes"], tl["allocated_bytes"])):
        if got != want:
            bad.append("%s: layout %d, timeline %d" % (key, got, want))
    if d["outside_blocks"]:
        bad.append("blocks outside segments in a clean trace")
    if when == "start" and d["segments"]:
        bad.append("segments at the start")
    if when == "end" and not d["segments"]:
        bad.append("no segments at the end")
    if bad:
        ok = False
        print("segments --at " + when, *bad[:10], sep="\n  ", file=sys.stderr)
sys.exit(0 if ok else 1)
EOF

"$MA" segments "$T/frag.zst" --at step:5 >"$T/seg.txt" 2>&1 || fail "segments text: exit $?"
expect_grep "$T/seg.txt" "segments of device 0 at step:5 = event " "segments header"
expect_grep "$T/seg.txt" "largest free" "segments column header"
expect_grep "$T/seg.txt" "model.py:21 __init__" "segment site label"
grep -q "^total: [0-9]* segments, reserved .* allocated .* free .* largest free" "$T/seg.txt" ||
  fail "segments total line"
"$MA" segments "$T/frag.zst" --at step:5 --blocks >"$T/segb.txt" 2>&1 || fail "segments --blocks"
grep -q "^    0x[0-9a-f]* .* allocated  *req .* train.py:88 train_step" "$T/segb.txt" ||
  fail "segments --blocks: the leak block with its site"
grep -q "^    0x[0-9a-f]* .* free$" "$T/segb.txt" || fail "segments --blocks: free gaps"
[ "$(grep -c '^0x' "$T/segb.txt")" -eq "$(grep -c '^0x' "$T/seg.txt")" ] ||
  fail "segments --blocks lists other segments"

# ---- diff of two points: the leak, and nothing else ---------------------------
"$MA" diff "$T/l1.zst" --from step:5 --to step:6 --json >"$T/d.json" 2>"$T/d.err" ||
  { fail "diff step:5 step:6: exit $?"; cat "$T/d.err" >&2; }
python3 - "$T/d.json" $MiB <<'EOF' || fail "diff step:5 step:6 (no fragmentation): only the leak"
import json, sys
d = json.load(open(sys.argv[1])); leak = int(sys.argv[2])
st = d["stacks"]
assert len(st) == 1, [s["site"] for s in st]
s = st[0]
assert s["site"] == "train.py:88 train_step", s["site"]
assert (s["net_bytes"], s["net_count"], s["added_bytes"], s["added_count"], s["removed_count"]) == \
    (leak, 1, leak, 1, 0), s
assert s["frames"][0]["name"] and any(f["filename"] == "train.py" and f["line"] == 88 for f in s["frames"])
assert d["change"]["allocated_bytes"] == leak and d["change"]["live_blocks"] == 1, d["change"]
assert d["from"]["when"] == "step:5" and d["to"]["when"] == "step:6"
assert d["from"]["event_id"] < d["to"]["event_id"]
assert d["segments"] == {"added_count": 0, "added_bytes": 0, "removed_count": 0, "removed_bytes": 0}
EOF
# with fragmentation other sites move too, but the leak site is exactly +1 MiB, +1 block
"$MA" diff "$T/frag.zst" --from step:5 --to step:6 --json >"$T/df.json" || fail "diff --fragment"
python3 - "$T/df.json" $MiB <<'EOF' || fail "diff step:5 step:6 (fragmented): the leak site"
import json, sys
d = json.load(open(sys.argv[1])); leak = int(sys.argv[2])
s = [s for s in d["stacks"] if s["site"] == "train.py:88 train_step"]
assert len(s) == 1 and s[0]["net_bytes"] == leak and s[0]["net_count"] == 1, s
assert d["change"]["requested_bytes"] == leak, d["change"]
EOF
"$MA" diff "$T/l1.zst" --from step:5 --to step:6 >"$T/d.txt" 2>&1 || fail "diff text: exit $?"
expect_grep "$T/d.txt" "from step:5 = event " "diff from line"
grep -q "^ *+1.00 MiB  *+1  *1.00 MiB  *1  *0 B  *0  train.py:88 train_step$" "$T/d.txt" ||
  { fail "diff text: the leak row"; cat "$T/d.txt" >&2; }
expect_grep "$T/d.txt" "replaced blocks without a change" "diff text: churn summary"
expect_grep "$T/d.txt" "segments: 0 added (0 B), 0 removed (0 B)" "diff text: segments"
# the other direction: the leak block is removed
"$MA" diff "$T/l1.zst" --from step:6 --to step:5 --json >"$T/dr.json" || fail "diff reversed"
python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stacks"]
assert len(s)==1 and s[0]["net_bytes"]==-int(sys.argv[2]) and s[0]["removed_count"]==1, s' \
  "$T/dr.json" $MiB || fail "diff step:6 step:5: the leak removed"
# --all lists the sites that only replaced blocks
"$MA" diff "$T/l1.zst" --from step:5 --to step:6 --all --json >"$T/da.json" || fail "diff --all"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert len(d["stacks"]) > 1 and d["stacks"][0]["site"] == "train.py:88 train_step", d["stacks"]
assert all(s["net_bytes"] == 0 and s["net_count"] == 0 for s in d["stacks"][1:])' "$T/da.json" ||
  fail "diff --all"

# a point against itself: empty
"$MA" diff "$T/frag.zst" --from step:7 --to step:7 --json >"$T/ds.json" || fail "diff same point"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["stacks"] == [] and d["stacks_replaced_only"] == 0
assert set(d["change"].values()) == {0} and set(d["segments"].values()) == {0}' "$T/ds.json" ||
  fail "diff of a step with itself is not empty"
"$MA" diff "$T/frag.zst" --from step:7 --to step:7 >"$T/ds.txt" || fail "diff same point text"
expect_grep "$T/ds.txt" "the same blocks are live at both points" "diff same point text"

# segments come and go: the start against the end
"$MA" diff "$T/frag.zst" --from start --to end --json >"$T/dse.json" || fail "diff start end"
"$MA" sql "$T/frag.zst" --csv "SELECT count(*), sum(size) FROM segments WHERE free_event_id IS NULL" |
  tail -1 >"$T/segs.csv"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); n,b=open(sys.argv[2]).read().strip().split(",")
assert d["segments"]["added_count"] == int(n) and d["segments"]["added_bytes"] == int(b), d["segments"]
assert sum(s["net_bytes"] for s in d["stacks"]) == d["change"]["allocated_bytes"]' "$T/dse.json" "$T/segs.csv" ||
  fail "diff start end: segments added / net bytes"

# ---- diff of two runs ----------------------------------------------------------
"$MA" diff "$T/l1.zst" "$T/l2.zst" --json >"$T/ab.json" 2>"$T/ab.err" ||
  { fail "diff A B: exit $?"; cat "$T/ab.err" >&2; }
python3 - "$T/ab.json" $MiB <<'EOF' || fail "diff A B (1M vs 2M leak)"
import json, sys
d = json.load(open(sys.argv[1])); m = int(sys.argv[2])
assert d["at"] == "end"
s = d["stacks"][0]
assert s["site"] == "train.py:88 train_step", s
assert (s["a_bytes"], s["a_count"], s["b_bytes"], s["b_count"], s["diff_bytes"], s["diff_count"]) == \
    (20 * m, 20, 40 * m, 20, 20 * m, 0), s
assert all(x["diff_bytes"] == 0 for x in d["stacks"][1:]), d["stacks"]
assert d["only_in_a"] == [] and d["only_in_b"] == []
assert d["change"]["allocated_bytes"] == 20 * m
EOF
"$MA" diff "$T/l0.zst" "$T/l2.zst" --at step:3 --json >"$T/ab0.json" || fail "diff A B --at"
python3 - "$T/ab0.json" $MiB <<'EOF' || fail "diff A B (no leak vs 2M leak, step:3)"
import json, sys
d = json.load(open(sys.argv[1])); m = int(sys.argv[2])
assert d["only_in_a"] == [], d["only_in_a"]
assert [(s["site"], s["bytes"], s["count"]) for s in d["only_in_b"]] == \
    [("train.py:88 train_step", 8 * m, 4)], d["only_in_b"]
assert all(x["diff_bytes"] == 0 for x in d["stacks"])
assert d["a"]["when"] == "step:3" and d["b"]["input"].endswith("l2.zst")
EOF
"$MA" diff "$T/l0.zst" "$T/l2.zst" >"$T/ab.txt" 2>&1 || fail "diff A B text"
expect_grep "$T/ab.txt" "diff of two runs at end" "diff A B header"
expect_grep "$T/ab.txt" "sites only in B:" "diff A B only-in-B section"
grep -q "^ *40.0 MiB  *20  train.py:88 train_step$" "$T/ab.txt" || fail "diff A B text: leak row"
# a database made earlier is an input too
"$MA" import "$T/l1.zst" -o "$T/l1.db" >/dev/null 2>&1 || fail "import"
"$MA" diff "$T/l1.db" "$T/l1.zst" --json >"$T/same.json" || fail "diff db trace"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["stacks"] and all(s["diff_bytes"] == 0 and s["diff_count"] == 0 for s in d["stacks"])
assert d["only_in_a"] == [] == d["only_in_b"]' "$T/same.json" || fail "diff of a run with itself"

# ---- real PyTorch snapshots: the layout at the end is their own `segments` --------
# (DESIGN.md: replaying a snapshot reproduces its final segments; skipped without ../shared)
DATA="$(cd "$(dirname "$0")" && pwd)/../../shared/data/pytorch"
# and the snapshots a simulated PyTorch allocator makes (expandable segments, two devices, OOM)
mkdir -p "$T/made"
python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/made" >/dev/null || fail "make_pickles --snapshots"
for f in "$DATA"/*.pickle "$T"/made/*.pickle; do
  [ -f "$f" ] || continue
  python3 - "$f" "$MA" <<'EOF' || fail "segments of $f differ from its final segments"
import json, pickle, subprocess, sys

class DataOnly(pickle.Unpickler):  # these files hold data only: refuse anything else
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refusing global %s.%s" % (module, name))

with open(sys.argv[1], "rb") as fh:
    snap = DataOnly(fh).load()
everything = snap["segments"] if isinstance(snap, dict) else snap
bad = []
for device in sorted({s.get("device", 0) for s in everything}) or [0]:
  theirs = [s for s in everything if s.get("device", 0) == device]
  out = subprocess.run([sys.argv[2], "segments", sys.argv[1], "--at", "end", "--json",
                        "--device", str(device)], capture_output=True, text=True)
  if out.returncode:
    bad.append("device %d: exit %d %s" % (device, out.returncode, out.stderr.strip()))
    continue
  mine = {s["address"]: s for s in json.loads(out.stdout)["segments"]}
  if set(mine) != {s["address"] for s in theirs}:
    bad.append("device %d: segment addresses differ" % device)
  for s in theirs:
    m = mine.get(s["address"])
    if not m:
        continue
    a, want = s["address"], []
    for b in s["blocks"]:
        want.append((b.get("address", a), b["size"], b["state"]))
        a += b["size"]
    got = [(b["address"], b["size"], b["state"]) for b in m["blocks"]]
    keys = ("total_size", "allocated_size", "active_size", "requested_size", "stream",
            "segment_type")
    differ = [k for k in keys if k in s and m[k] != s[k]]
    if got != want or differ:
        bad.append("device %d: segment %#x %s" % (device, s["address"], differ or "blocks"))
  # the replay's seed ids (<= 0) never reach users: a block or segment from before the
  # recording has null ids and says its allocation was not recorded
  for m in mine.values():
    if m["segment_id"] is not None and m["segment_id"] <= 0:
        bad.append("segment %#x shows the internal id %d" % (m["address"], m["segment_id"]))
    for b in m["blocks"]:
        if b["state"] != "inactive" and b["alloc_event_id"] is None and b.get("alloc_recorded") is not False:
            bad.append("block %#x: no alloc id but not marked alloc_recorded: false" % b["address"])
        if b.get("alloc_event_id") is not None and b["alloc_event_id"] <= 0:
            bad.append("block %#x shows the internal id %d" % (b["address"], b["alloc_event_id"]))
if bad:
    print(sys.argv[1], *bad[:5], sep="\n  ", file=sys.stderr)
    sys.exit(1)
EOF
done

# ---- an input with nothing in it: every command answers, exit 0 ---------------------
# (as PyTorch writes it when history was on but nothing was allocated)
python3 -c 'import pickle,sys; pickle.dump({"segments": [], "device_traces": [[]],
  "allocator_settings": {"expandable_segments": False}, "external_annotations": []},
  open(sys.argv[1], "wb"), protocol=2)' "$T/empty.pickle"
for args in "segments --json" "segments --at peak --json" "segments --at start --blocks" \
  "diff --from start --to end --json" "report --json" "leaks --json"; do
  # shellcheck disable=SC2086
  "$MA" ${args%% *} "$T/empty.pickle" ${args#* } >"$T/empty.out" 2>"$T/empty.err" ||
    { fail "empty input: $args: exit $?"; cat "$T/empty.err" >&2; }
done
"$MA" segments "$T/empty.pickle" --json >"$T/empty.json" || fail "empty input: segments --json"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["segments"] == [] and d["reserved_bytes"] == 0 and d["event_id"] == 0, d' "$T/empty.json" ||
  fail "empty input: segments --json is not an empty layout"
"$MA" diff "$T/empty.pickle" "$T/empty.pickle" --json >"$T/empty-ab.json" || fail "empty input: diff A B"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
assert d["stacks"] == [] and d["change"]["reserved_bytes"] == 0, d' "$T/empty-ab.json" ||
  fail "empty input: diff A B is not empty"
if "$MA" segments "$T/empty.pickle" -o "$T/empty.png" >/dev/null 2>"$T/empty.err"; then
  [ -s "$T/empty.png" ] || fail "empty input: segments -o wrote no picture"
  "$MA" report "$T/empty.pickle" --plots "$T/empty-plots" >/dev/null 2>&1 || fail "empty input: --plots"
  [ "$(ls "$T/empty-plots" | wc -l)" -eq 4 ] || fail "empty input: --plots drew $(ls "$T/empty-plots")"
fi
# a snapshot without history (its final segments only): one moment, said so, not drawn over time
python3 -c 'import pickle,sys; pickle.dump({"segments": [{"device": 0, "address": 1 << 40,
  "total_size": 2 << 20, "allocated_size": 1 << 20, "active_size": 1 << 20,
  "requested_size": 1 << 20, "stream": 0, "segment_type": "small", "blocks": [
  {"address": 1 << 40, "size": 1 << 20, "requested_size": 1 << 20, "state": "active_allocated"},
  {"address": (1 << 40) + (1 << 20), "size": 1 << 20, "requested_size": 0, "state": "inactive"}]}],
  "device_traces": [[]]}, open(sys.argv[1], "wb"), protocol=2)' "$T/nohist.pickle"
"$MA" report "$T/nohist.pickle" >"$T/nohist.txt" || fail "report of a snapshot without history"
expect_grep "$T/nohist.txt" "no history" "report of a snapshot without history"
if "$MA" timeline "$T/nohist.pickle" -o "$T/nohist.svg" >/dev/null 2>&1; then
  grep -q "no history: the snapshot holds one moment" "$T/nohist.svg" ||
    fail "timeline of a snapshot without history does not say so"
fi
# a device that does not exist in an input that has others is still an error (below)

# ---- snapshots: trapped and releasable at the end, computed from the pickle ----------------
# (DESIGN.md: releasable = whole free segments and whole free pages of expandable segments,
# 20 MiB in the large pool and 2 MiB in the small one; trapped = the rest of the free bytes)
# The real ones, and those a simulated PyTorch allocator makes (expandable segments, two devices).
for f in "$DATA"/*.pickle "$T"/made/*.pickle; do
  [ -f "$f" ] || continue
  "$MA" report "$f" --json >"$T/rj.json" 2>"$T/rj.err" || { fail "report --json $f"; continue; }
  python3 - "$f" "$T/rj.json" <<'EOF' || fail "trapped/releasable of $f differ from the pickle's"
import json, pickle, sys

class DataOnly(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refusing global %s.%s" % (module, name))

snap = DataOnly(open(sys.argv[1], "rb")).load()
segs = snap["segments"] if isinstance(snap, dict) else snap
want = {}
for s in segs:
    live = [b for b in s["blocks"] if b["state"] != "inactive"]
    free = s["total_size"] - sum(b["size"] for b in live)
    if not live:
        rel = s["total_size"]
    elif s.get("is_expandable"):
        page = (2 << 20) if s.get("segment_type") == "small" else (20 << 20)
        rel, a = 0, s["address"]
        for b in s["blocks"]:
            if b["state"] == "inactive":
                lo = (a - s["address"] + page - 1) // page
                hi = (a + b["size"] - s["address"]) // page
                rel += max(0, hi - lo) * page
            a += b["size"]
    else:
        rel = 0
    d = want.setdefault(s.get("device", 0), [0, 0])
    d[0] += rel
    d[1] += free - rel
got = {d["device"]: d for d in json.load(open(sys.argv[2]))["devices"]}
bad = []
for dev, (rel, trapped) in want.items():
    g = got.get(dev)
    if g is None or (g["end_releasable_bytes"], g["end_trapped_bytes"]) != (rel, trapped):
        bad.append("device %d: want releasable %d trapped %d, got %s" % (
            dev, rel, trapped, g and (g["end_releasable_bytes"], g["end_trapped_bytes"])))
if bad:
    print(sys.argv[1], *bad, sep="\n  ", file=sys.stderr)
    sys.exit(1)
EOF
done

# ---- a block allocated before the history began: "alloc not recorded" -------------------
# Its only stack in the snapshot is the stack of its free; it is not named after that code.
python3 - "$T/notrec.pickle" <<'EOF'
import pickle, sys
MiB = 1 << 20
base = 0x7f0000000000
free_frames = [{"name": "step", "filename": "/proj/optimizer.py", "line": 73}]
alloc_frames = [{"name": "forward", "filename": "/proj/model.py", "line": 12}]
snap = {
    "segments": [{"device": 0, "address": base, "total_size": 2 * MiB, "allocated_size": MiB,
                  "active_size": MiB, "requested_size": MiB, "stream": 0, "segment_type": "small",
                  "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                  "blocks": [{"address": base, "size": MiB, "requested_size": MiB,
                              "state": "inactive", "frames": []},
                             {"address": base + MiB, "size": MiB, "requested_size": MiB,
                              "state": "active_allocated", "frames": alloc_frames}]}],
    "device_traces": [[
        {"action": "free_requested", "addr": base, "size": MiB, "stream": 0, "time_us": 10,
         "frames": free_frames},
        {"action": "free_completed", "addr": base, "size": MiB, "stream": 0, "time_us": 11,
         "frames": free_frames},
        {"action": "alloc", "addr": base + MiB, "size": MiB, "stream": 0, "time_us": 12,
         "frames": alloc_frames},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 13, "frames": []}]],
}
pickle.dump(snap, open(sys.argv[1], "wb"), protocol=4)
EOF
"$MA" report "$T/notrec.pickle" --json >"$T/notrec.json" || fail "report --json notrec.pickle"
"$MA" sql "$T/notrec.pickle" --csv "SELECT f.name FROM events e JOIN stack_frames f USING (stack_id)
  WHERE e.op = 'free' AND f.depth = 0" >"$T/notrec-free.csv" || fail "sql notrec.pickle"
python3 - "$T/notrec.json" "$T/notrec-free.csv" <<'EOF' || fail "a block from before the history: not 'alloc not recorded'"
import json, sys
d = json.load(open(sys.argv[1]))["devices"][0]
sites = {s["site"]: s["bytes"] for s in d["top_stacks_at_peak"]}
assert sites.get("alloc not recorded") == 1 << 20, sites   # the seeded block, at the start
assert not any("optimizer.py" in s for s in sites), sites    # not named after its free
assert "step" in open(sys.argv[2]).read()                    # the free keeps its own stack
EOF
[ "$("$MA" sql "$T/notrec.pickle" --raw --csv \
  "SELECT count(*) FROM markers WHERE kind = 'mark' AND name = 'torch.cuda.memory snapshot'" |
  tail -1)" = 1 ] || fail "PyTorch's snapshot entry is not a mark"

# ---- legacy record_function annotations: `user_defined` entries (PyTorch 2.4-2.6) -------
# Their one frame holds the stage as its name and the range's name as its filename.
python3 - "$T/ud.pickle" <<'EOF'
import pickle, sys
MiB, base = 1 << 20, 0x7f0000000000
def ud(stage, name, t):
    return {"action": "user_defined", "addr": 0, "size": 0, "stream": 0, "time_us": t,
            "frames": [{"name": stage, "filename": name, "line": 0}]}
def ev(action, t):
    return {"action": action, "addr": base, "size": MiB, "stream": 0, "time_us": t, "frames": []}
snap = {"segments": [{"device": 0, "address": base, "total_size": 2 * MiB, "allocated_size": 0,
                      "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "small",
                      "blocks": [{"address": base, "size": 2 * MiB, "requested_size": 0,
                                  "state": "inactive", "frames": []}], "frames": []}],
        "device_traces": [[ud("START", "ProfilerStep#0", 1),
                           dict(ev("segment_alloc", 2), size=2 * MiB), ev("alloc", 3),
                           ud("END", "ProfilerStep#0", 4), ud("START", "ProfilerStep#1", 5),
                           ev("free_requested", 6), ev("free_completed", 7),
                           ud("END", "ProfilerStep#1", 8)]]}
pickle.dump(snap, open(sys.argv[1], "wb"), protocol=4)
EOF
"$MA" sql "$T/ud.pickle" --csv --raw "SELECT step, name, end_event_id FROM steps ORDER BY step" \
  >"$T/ud.csv" || fail "sql ud.pickle"
[ "$(tail -n +2 "$T/ud.csv" | tr '\n' ' ')" = "0,ProfilerStep#0,2 1,ProfilerStep#1,4 " ] ||
  { fail "user_defined annotations are not steps: $(cat "$T/ud.csv")"; }

# ---- errors: one line on stderr, exit 2 -----------------------------------------
check_error() { # expected text, command...
  local want=$1
  shift
  "$@" >"$T/e.out" 2>"$T/e.err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc, want 2"
  [ "$(wc -l <"$T/e.err")" -eq 1 ] || { fail "$*: error is not one line"; cat "$T/e.err" >&2; }
  expect_grep "$T/e.err" "$want" "$*"
}
check_error "bad WHEN 'later'" "$MA" segments "$T/l1.zst" --at later
check_error "no such step" "$MA" segments "$T/l1.zst" --at step:99
check_error "the trace has events 0.." "$MA" segments "$T/l1.zst" --at event:99999999
check_error "device 3 has no events" "$MA" segments "$T/l1.zst" --device 3
check_error "bad --device" "$MA" segments "$T/l1.zst" --device x
# a picture: drawn with Cairo, else one line saying why not
if "$MA" segments "$T/l1.zst" -o "$T/x.png" >/dev/null 2>"$T/png.err"; then
  [ -s "$T/x.png" ] || fail "segments -o x.png wrote no picture"
  "$MA" segments "$T/l1.zst" --at peak -o "$T/small.png" --width 640 --height 360 >/dev/null ||
    fail "segments -o --width/--height"
  python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24)
assert struct.unpack(">II", d[16:24]) == (640, 360), struct.unpack(">II", d[16:24])' "$T/small.png" ||
    fail "segments -o --width 640 --height 360: wrong picture size"
  # more sites than the legend lists: the rest are drawn and listed as "other"
  big="$(cd "$(dirname "$0")" && pwd)/../../shared/data/pytorch/train-step-m512.pickle"
  if [ -f "$big" ]; then
    "$MA" segments "$big" --at peak -o "$T/many.svg" >/dev/null || fail "segments -o many.svg"
    grep -q "other ([0-9]* sites)" "$T/many.svg" || fail "segments picture: no 'other' legend entry"
  fi
else
  grep -q "pictures are off in this build" "$T/png.err" || fail "segments -o x.png: $(cat "$T/png.err")"
fi
check_error "cannot open" "$MA" segments "$T/missing.zst"
check_error "bad WHEN 'step:x'" "$MA" diff "$T/l1.zst" --from step:x --to step:2
check_error "needs --from WHEN and --to WHEN" "$MA" diff "$T/l1.zst" --from step:1
check_error "--at is for two inputs" "$MA" diff "$T/l1.zst" --at end
check_error "not --from/--to" "$MA" diff "$T/l1.zst" "$T/l2.zst" --from step:1 --to step:2
check_error "l1.zst: step:99: no such step" "$MA" diff "$T/l1.zst" "$T/l2.zst" --at step:99
check_error "l1.zst: device 2 has no events" "$MA" diff "$T/l1.zst" "$T/l0.zst" --device 2
check_error "bad --top" "$MA" diff "$T/l1.zst" --from step:1 --to step:2 --top -3
check_error "cannot open" "$MA" diff "$T/l1.zst" "$T/missing.zst"
echo "hello" >"$T/text"
check_error "not a gpumemtrace trace" "$MA" diff "$T/text" --from end --to end
"$MA" diff >/dev/null 2>&1; [ $? -eq 2 ] || fail "diff without arguments: want exit 2"
"$MA" segments >/dev/null 2>&1; [ $? -eq 2 ] || fail "segments without arguments: want exit 2"
"$MA" diff --help | grep -q "usage: memanalyze diff" || fail "diff --help"
"$MA" segments --help | grep -q "usage: memanalyze segments" || fail "segments --help"
# -o with a text file works
"$MA" segments "$T/l1.zst" --at step:2 -o "$T/out.txt" >/dev/null 2>&1 || fail "segments -o file"
expect_grep "$T/out.txt" "segments of device 0 at step:2" "segments -o file"

finish
