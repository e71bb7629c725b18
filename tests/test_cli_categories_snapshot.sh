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
assert sorted(got) == sorted(keys), f"categories_at_peak has keys {sorted(got)}"
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
