#!/usr/bin/env bash
# test_cli_categories_snapshot.sh — categories of a PyTorch snapshot with known answers: three
# steps of a small model trained with Adam (tests/make_pickles.py --training), every block
# planted as parameter, gradient, optimizer_state, activation, temporary, input or other by
# what the loop does with it, with the frames PyTorch writes (Python and C++, the backward on
# autograd's own thread with C++ frames only). `memanalyze report --json` must give the bytes
# of each category live at the peak exactly as the simulated allocator holds them (block
# sizes), the peak itself, and `memanalyze steps --json` each step's peak and its phase. The
# second snapshot names one Adam state tensor through user_metadata
# ("optimizer_state layers.0.weight.exp_avg"): its tensor_names row binds to that block.
# The loop's variants (make_pickles.py --variant), shapes of real files: a forward that runs
# out of memory and unwinds (its activations stay activations, its batch input: the peak as if
# the run had gone on); a ring buffer that lost step 1's gradients' allocations (known by their
# frees in zero_grad: gradients); no history, and a one-entry history (every block unknown,
# "one moment" in the text and categories_one_moment in the JSON). And user rules that match
# only PyTorch's recording frames (torch::unwind::unwind, CapturedTraceback::gather, the
# caching allocator's) change nothing: those frames are in every stack.
# Skipped (77) without python3.
# usage: test_cli_categories_snapshot.sh MEMANALYZE
set -u
MA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
name=test_cli_categories_snapshot
. "$(dirname "$0")/cli_lib.sh"

if ! command -v python3 >/dev/null; then
    echo "SKIP: test_cli_categories_snapshot needs python3" >&2
    exit 77
fi
python3 "$HERE/make_pickles.py" --training "$T/training.pickle" || fail "make_pickles --training"
python3 "$HERE/make_pickles.py" --training "$T/named.pickle" --names ||
    fail "make_pickles --training --names"
for v in oom ring moment one-entry; do
    python3 "$HERE/make_pickles.py" --training "$T/$v.pickle" --variant $v ||
        fail "make_pickles --training --variant $v"
done
[ "$fails" -eq 0 ] || exit 1

for snap in training named; do
    "$MA" report --json "$T/$snap.pickle" >"$T/$snap.report.json" || fail "$snap: report --json"
    "$MA" steps --json "$T/$snap.pickle" >"$T/$snap.steps.json" || fail "$snap: steps --json"
done
[ "$fails" -eq 0 ] || exit 1

for snap in training named; do
    python3 - "$T/$snap.pickle.expected.json" "$T/$snap.report.json" "$T/$snap.steps.json" \
        <<'PY' || fail "$snap: categories"
import json, sys
want = json.load(open(sys.argv[1]))
dev = json.load(open(sys.argv[2]))["devices"][0]
steps = json.load(open(sys.argv[3]))["steps"]
keys = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "other"]
got = dev["categories_at_peak"]
assert list(got) == keys + ["unknown"], f"categories_at_peak has keys {list(got)}"
assert got["unknown"] == 0 and dev["categories_one_moment"] is False, dev
assert dev["peak_allocated_bytes"] == want["peak_allocated_bytes"], \
    (dev["peak_allocated_bytes"], want["peak_allocated_bytes"])
bad = [f"{k}: {got[k]} want {want['categories_at_peak'][k]} "
       f"({got[k] - want['categories_at_peak'][k]:+d})"
       for k in keys if got[k] != want["categories_at_peak"][k]]
assert not bad, "categories at the peak differ: " + "; ".join(bad) + \
    "; planted blocks live there: " + json.dumps(want["blocks_at_peak"])
assert sum(got.values()) == want["peak_allocated_bytes"], (sum(got.values()), want)
assert [(s["step"], s["peak_allocated_bytes"], s["peak_phase"]) for s in steps] == \
    [(s["step"], s["peak_allocated_bytes"], s["peak_phase"]) for s in want["steps"]], \
    (steps, want["steps"])
PY
done

# the OOM in step 2's forward: the peak is that forward's, categories as planted
"$MA" report --json "$T/oom.pickle" >"$T/oom.json" || fail "oom: report --json"
python3 - "$T/oom.pickle.expected.json" "$T/oom.json" <<'PY' || fail "oom: categories"
import json, sys
want = json.load(open(sys.argv[1]))
dev = json.load(open(sys.argv[2]))["devices"][0]
assert dev["peak_allocated_bytes"] == want["peak_allocated_bytes"], (dev, want)
got = {k: v for k, v in dev["categories_at_peak"].items() if k != "unknown"}
assert got == want["categories_at_peak"], \
    {k: (got[k], want["categories_at_peak"][k]) for k in got if got[k] != want["categories_at_peak"][k]}
PY

# the ring that lost step 1's gradients: the blocks it began with and freed are as planted
"$MA" sql --json "$T/ring.pickle" "SELECT category, sum(size) AS bytes FROM allocations WHERE \
alloc_id <= 0 AND free_event_id IS NOT NULL AND kind = 'device' GROUP BY category" \
    >"$T/ring.json" || fail "ring: sql"
python3 - "$T/ring.pickle.expected.json" "$T/ring.json" <<'PY' || fail "ring: categories"
import json, sys
want = {k: v for k, v in json.load(open(sys.argv[1]))["seeded_freed"].items() if v}
got = {r["category"]: r["bytes"] for r in json.load(open(sys.argv[2]))}
assert want == {"gradient": want.get("gradient", 0)} and want["gradient"] > 0, want
assert got == want, (got, want)
PY
# up to step 2's zero_grad: its gradients are live at the window's peak, known by that free
first=$("$MA" sql --raw "$T/ring.pickle" "SELECT min(event_id) FROM event_rows WHERE op = 2 AND \
alloc_event_id <= 0" | sed -n 3p | tr -d ' ')
"$MA" report --json --to "event:$((first - 1))" "$T/ring.pickle" >"$T/ring-window.json" ||
    fail "ring: report --to"
"$MA" report --to "event:$((first - 1))" "$T/ring.pickle" >"$T/ring-window.txt" ||
    fail "ring: report --to (text)"
python3 - "$T/ring.pickle.expected.json" "$T/ring-window.json" >"$T/freed_at" <<'PY' || fail ring
import json, sys
want = json.load(open(sys.argv[1]))["window_peak"]
dev = json.load(open(sys.argv[2]))["devices"][0]
assert dev["peak_allocated_bytes"] == want["peak_allocated_bytes"], (dev, want)
got = {k: v for k, v in dev["categories_at_peak"].items() if k != "unknown"}
assert got == want["categories_at_peak"], (got, want)
lost = [t for t in dev["top_stacks_at_peak"] if t["site"] == "alloc not recorded"]
assert len(lost) == 1 and lost[0]["bytes"] == got["gradient"], dev["top_stacks_at_peak"]
# the site of the free, the loop calling zero_grad: its stack holds the zero_grad frame
assert lost[0]["freed_at"] == "train.py:71 train", lost
print(lost[0]["freed_at_stack_id"])
PY
"$MA" sql --raw "$T/ring.pickle" "SELECT count(*) FROM stack_frames WHERE stack_id = \
$(cat "$T/freed_at") AND name = 'zero_grad'" | sed -n 3p | grep -qx ' *1' ||
    fail "ring: the free's stack has no zero_grad frame"
grep -q "alloc not recorded (freed at train.py:71 train)" "$T/ring-window.txt" ||
    fail "ring: no freed at in the text"

# one moment: segments only, and a one-entry history
for v in moment one-entry; do
    "$MA" report --json "$T/$v.pickle" >"$T/$v.json" || fail "$v: report --json"
    "$MA" report "$T/$v.pickle" >"$T/$v.txt" || fail "$v: report"
    python3 - "$T/$v.json" <<'PY' || fail "$v: unknown"
import json, sys
dev = json.load(open(sys.argv[1]))["devices"][0]
got = {k: v for k, v in dev["categories_at_peak"].items() if v}
assert got == {"unknown": dev["peak_allocated_bytes"]} and dev["peak_allocated_bytes"] > 0, got
assert dev["categories_one_moment"] is True, dev
PY
    grep -q "held at the peak by category (one moment" "$T/$v.txt" || fail "$v: no one moment"
done

# rules on PyTorch's recording frames only: nothing moves
printf '%s\n' '# in every stack PyTorch records' 'unwind temporary' 'CapturedTraceback temporary' \
    'gather_with_cpp temporary' 'CUDACachingAllocator temporary' >"$T/recording.rules"
"$MA" report --json --categories "$T/recording.rules" "$T/training.pickle" >"$T/rules.json" ||
    fail "report --categories"
python3 - "$T/training.pickle.expected.json" "$T/rules.json" <<'PY' || fail "recording rules"
import json, sys
want = json.load(open(sys.argv[1]))["categories_at_peak"]
got = {k: v for k, v in json.load(open(sys.argv[2]))["devices"][0]["categories_at_peak"].items()
       if k != "unknown"}
assert got == want, {k: (got[k], want[k]) for k in got if got[k] != want[k]}
PY

# the named Adam state: one tensor_names row, bound to the block user_metadata named
"$MA" import "$T/named.pickle" -o "$T/named.db" >/dev/null || fail "import named"
"$MA" import "$T/training.pickle" -o "$T/training.db" >/dev/null || fail "import training"
python3 - "$T/named.pickle.expected.json" "$T/named.db" "$T/training.db" <<'PY' || fail names
import json, sqlite3, sys
want = json.load(open(sys.argv[1]))["tensor_names"]
rows = sqlite3.connect(sys.argv[2]).execute(
    "SELECT a.addr, a.size, t.name, t.category, t.tensors FROM tensor_names t "
    "JOIN allocations a USING (alloc_id)").fetchall()
assert len(want) == 1 and rows == [(w["addr"], w["size"], w["name"], w["category"], 1)
                                   for w in want], (rows, want)
unnamed = sqlite3.connect(sys.argv[3]).execute("SELECT count(*) FROM tensor_names").fetchone()
assert unnamed == (0,), f"the snapshot without user_metadata has tensor names: {unnamed}"
PY

finish
