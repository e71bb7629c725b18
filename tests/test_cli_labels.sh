#!/usr/bin/env bash
# test_cli_labels.sh — the labels of sites on a PyTorch snapshot (tests/make_pickles.py
# --training): one rule for every list and picture (stack_names.h).
#   - distinct stacks never print under one label: Adam's exp_avg and exp_avg_sq are made at
#     the same line of the loop (train.py:70, optimizer.step()); in report, leaks and diff (and
#     every list of --json with stack ids) each reads with the frame where the two differ
#   - a Windows recording of the same program (--windows: D:\mlp\train.py, C:\Python311\Lib\
#     site-packages\torch\...) reads like the Linux one: the same report, leaks and diff word
#     for word, library frames skipped, and compare/diff between the two match every site
# Skipped (77) without python3.
# usage: test_cli_labels.sh MEMANALYZE
set -u
MA=$1
HERE=$(cd "$(dirname "$0")" && pwd)
name=test_cli_labels
. "$(dirname "$0")/cli_lib.sh"

if ! command -v python3 >/dev/null; then
    echo "SKIP: test_cli_labels needs python3" >&2
    exit 77
fi
python3 "$HERE/make_pickles.py" --training "$T/lin.pickle" || fail "make_pickles --training"
python3 "$HERE/make_pickles.py" --training "$T/win.pickle" --windows ||
    fail "make_pickles --training --windows"
[ "$fails" -eq 0 ] || exit 1
cd "$T" || exit 1

# the same words for both recordings, the input's name aside: labels, and the categories too
# (query/phases.c reads a frame's directories with '\' as '/')
same() { sed -e 's/win\.pickle/lin.pickle/g'; }
for cmd in "report" "leaks" "diff --from start --to peak" "report --json" "leaks --json"; do
    # shellcheck disable=SC2086
    "$MA" $cmd lin.pickle 2>&1 | same >lin.out || fail "$cmd lin.pickle"
    # shellcheck disable=SC2086
    "$MA" $cmd win.pickle 2>&1 | same >win.out
    cmp -s lin.out win.out || {
        fail "$cmd: the Windows recording reads differently"
        diff lin.out win.out | head -6 >&2
    }
done
grep -q 'train.py:70 train via adam.py:168 _init_group' lin.out ||
    fail "leaks: exp_avg's site is not told by its frame"
"$MA" report win.pickle | grep -q 'site-packages\|\\' && fail "report: a Windows path is shown"

# no two stacks under one label, in any list of --json that names stack ids
for cmd in "report --json" "leaks --json" "diff --from start --to peak --json"; do
    # shellcheck disable=SC2086
    "$MA" $cmd lin.pickle >list.json || fail "$cmd"
    python3 - list.json "$cmd" <<'PY' || fail "$cmd: two stacks share a label"
import json, sys
labels = {}
def walk(v, where):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(x, where + "." + k)
    elif isinstance(v, list):
        for row in v:
            if isinstance(row, dict) and "stack_id" in row and ("label" in row or "site" in row):
                label = row.get("label", row.get("site"))
                labels.setdefault((where, label), set()).add(row["stack_id"])
            walk(row, where)
walk(json.load(open(sys.argv[1])), "")
bad = {k: v for k, v in labels.items() if len(v) > 1}
assert not bad, f"{sys.argv[2]}: " + "; ".join(f"{w} {l!r}: stacks {sorted(s)}"
                                              for (w, l), s in bad.items())
PY
done

# a Windows run against the Linux one: every site matched
"$MA" compare lin.pickle win.pickle --json >compare.json || fail "compare"
python3 -c '
import json, sys
d = json.load(open("compare.json"))
left = [s for r in d["site_differences"] for s in r["sites"]]
assert not left, left[:3]' || fail "compare: Windows and Linux sites differ"
"$MA" diff lin.pickle win.pickle --at peak --json >diff2.json || fail "diff A B"
python3 -c '
import json
d = json.load(open("diff2.json"))
assert d["stacks"] and not d["only_in_a"] and not d["only_in_b"], \
    (len(d["stacks"]), d["only_in_a"][:1], d["only_in_b"][:1])' ||
    fail "diff: Windows and Linux sites not matched"

# the pictures' legends: the same labels, the two Adam states apart (with Cairo only)
if "$MA" timeline lin.pickle -o lin.svg >/dev/null 2>&1; then
    "$MA" timeline win.pickle -o win.svg >/dev/null 2>&1 || fail "timeline win.pickle"
    grep -q 'adam.py:168 _init_group<' lin.svg && grep -q 'adam.py:172 _init_group<' lin.svg ||
        fail "timeline: the legend lumps the two Adam states"
    grep -q 'site-packages' win.svg && fail "timeline: a Windows path in the legend"
fi
finish
