#!/usr/bin/env bash
# test_cli_categories.sh — what the memory is (issue 16), on synthetic runs whose every block
# was planted with its category (synth --truth: the bytes of each category live at the peak):
#   - with memrec's tensor names (--names), and without any: the names, and the phases and
#     lifetimes alone (PyTorch's frames: module.py forward, autograd's engine thread, adamw.py),
#     both give the planted bytes exactly, on one device and three, with fragmentation and a leak;
#   - without steps (the database's steps removed): iterations found from the phases give the
#     same answer;
#   - a custom optimizer's state is optimizer state inside the profiler's Optimizer.step# ranges;
#   - `--categories FILE` moves what the rules left as other (the leak) and nothing else, and a
#     bad rules file is a one-line error;
#   - the names bind to the planted blocks (tensor_names), and report lists the largest;
#   - on real snapshots (DATA, when present) every block at the peak has exactly one category.
# usage: test_cli_categories.sh SYNTH MEMANALYZE [DATA]
set -u
SYNTH=$1 MA=$2 DATA=${3:-}
name=test_cli_categories
. "$(dirname "$0")/cli_lib.sh"

# compare TRUTH.json INPUT [RULES]: report --json's categories_at_peak against the planted ones
compare() {
    local args=()
    [ $# -ge 3 ] && args=(--categories "$3")
    "$MA" report --json "${args[@]}" "$2" >"$T/report.json" || { fail "report $2: exit $?"; return; }
    python3 - "$1" "$T/report.json" "${4:-}" <<'PY' || fail "categories of $2 ${3:-}"
import json, sys
truth = json.load(open(sys.argv[1]))["devices"]
report = json.load(open(sys.argv[2]))["devices"]
moved = sys.argv[3]  # "other:activation": the rules move other's bytes there
assert len(truth) == len(report), (len(truth), len(report))
for t, r in zip(truth, report):
    want = dict(t["categories_at_peak"])
    if moved:
        src, dst = moved.split(":")
        want[dst] += want[src]
        want[src] = 0
    got = r["categories_at_peak"]
    assert list(got) == ["parameter", "gradient", "optimizer_state", "activation", "temporary",
                         "input", "other", "unknown"], list(got)
    assert r["peak_allocated_bytes"] == t["peak_allocated_bytes"], (r["peak_allocated_bytes"], t)
    assert got == want, (t["device"], {k: (want[k], got[k]) for k in want if want[k] != got[k]})
    assert sum(got.values()) == r["peak_allocated_bytes"]
PY
}

"$SYNTH" -o "$T/leak.zst" --steps 6 --layers 3 --leak 3MiB --truth "$T/leak.json" 2>/dev/null ||
    fail synth
compare "$T/leak.json" "$T/leak.zst"
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['devices'][0]['categories_at_peak']; \
assert all(c[k] > 0 for k in ('parameter','gradient','optimizer_state','activation','temporary','input','other')), c" \
    "$T/leak.json" || fail "the leak run plants every category"
"$SYNTH" -o "$T/named.zst" --steps 6 --layers 3 --leak 3MiB --names --truth "$T/named.json" \
    2>/dev/null || fail "synth --names"
compare "$T/named.json" "$T/named.zst"
"$SYNTH" -o "$T/multi.zst" --steps 5 --layers 2 --devices 3 --fragment --seed 7 \
    --truth "$T/multi.json" 2>/dev/null || fail "synth 3 devices"
compare "$T/multi.json" "$T/multi.zst"

# without steps: the phases cut the iterations
"$MA" import "$T/leak.zst" -o "$T/nosteps.db" >/dev/null || fail import
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM steps'); \
c.execute('DELETE FROM category_peaks'); c.execute(\"DELETE FROM meta WHERE key = \
'category_peaks'\"); c.commit()" "$T/nosteps.db" || fail "dropping the steps"
compare "$T/leak.json" "$T/nosteps.db"

# a custom optimizer (no torch/optim/ frame): its state is other, until the profiler's
# "Optimizer.step#MyOpt.step" ranges (which torch.optim.Optimizer opens around any subclass's
# step) say when it steps; then it is optimizer state again, to the byte
"$SYNTH" -o "$T/stages.zst" --steps 5 --layers 2 --stages --truth "$T/stages.json" 2>/dev/null ||
    fail "synth --stages"
"$MA" import "$T/stages.zst" -o "$T/custom.db" >/dev/null || fail "import stages"
python3 - "$T/custom.db" <<'PY' || fail "making the optimizer custom"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE frames SET file = 'my_optim.py' WHERE file LIKE '%adamw.py'")
db.execute("DELETE FROM category_peaks")
db.execute("DELETE FROM meta WHERE key = 'category_peaks'")
db.commit()
PY
"$MA" report --json "$T/custom.db" | python3 -c "import json,sys; t=json.load(open(sys.argv[1])); \
c=json.load(sys.stdin)['devices'][0]['categories_at_peak']; w=t['devices'][0]['categories_at_peak']; \
assert c['optimizer_state'] == 0 and c['other'] == w['other'] + w['optimizer_state'], (c, w)" \
    "$T/stages.json" || fail "a custom optimizer's state without ranges"
python3 - "$T/custom.db" <<'PY' || fail "adding Optimizer.step# ranges"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
next_id = db.execute("SELECT max(marker_id) FROM markers").fetchone()[0] + 1
def add_range(name, begin, end):
    global next_id
    db.execute("INSERT INTO markers VALUES (?, ?, NULL, 'start', ?, NULL, NULL)",
               (next_id, begin, name))
    db.execute("INSERT INTO markers VALUES (?, ?, NULL, 'end', ?, NULL, ?)",
               (next_id + 1, end, name, next_id))
    next_id += 2
# a wrapper (ZeroRedundancyOptimizer) steps an inner optimizer: a short range nested at the
# start of each outer one must not end the outer one
for begin, end in db.execute("SELECT begin_ts_ns, end_ts_ns FROM ranges WHERE name = "
                             "'optimizer'").fetchall():
    add_range("Optimizer.step#Wrapper.step", begin, end)
    add_range("Optimizer.step#MyOpt.step", begin, begin + 1)
db.commit()
PY
compare "$T/stages.json" "$T/custom.db"

# a batch copied in between one step's end and the next one's begin is the next step's input
"$MA" import "$T/leak.zst" -o "$T/gaps.db" >/dev/null || fail "import gaps"
python3 - "$T/gaps.db" <<'PY' || fail "opening gaps between the steps"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
# each step begins at its first forward allocation instead (the data loading before is a gap)
for step, begin in db.execute("SELECT step, begin_event_id FROM steps WHERE step > 0").fetchall():
    first = db.execute("SELECT min(e.event_id) FROM events e JOIN stack_frames f ON "
                       "f.stack_id = e.stack_id WHERE e.event_id > ? AND e.op = 'alloc' AND "
                       "f.name = '_call_impl'", (begin,)).fetchone()[0]
    db.execute("UPDATE steps SET begin_event_id = ? WHERE step = ?", (first - 1, step))
db.execute("DELETE FROM category_peaks")
db.execute("DELETE FROM meta WHERE key = 'category_peaks'")
db.commit()
PY
compare "$T/leak.json" "$T/gaps.db"

# user rules: the leak (train.py:88, left as other) becomes what the rule says; nothing else moves
cat >"$T/rules" <<'RULES'
# my KV cache, kept across steps
kv_cache\.py temporary

train_step train\.py:88    activation
RULES
compare "$T/leak.json" "$T/leak.zst" "$T/rules" other:activation
printf 'forward\n' >"$T/bad1"
printf '([ temporary\n' >"$T/bad2"
for bad in "$T/bad1" "$T/bad2" "$T/missing"; do
    out=$("$MA" report --categories "$bad" "$T/leak.zst" 2>&1 >/dev/null)
    rc=$?
    [ $rc -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
        printf '%s' "$out" | grep -q "${bad##*/}" || fail "rules $bad: rc $rc, '$out'"
done

# the names bind to the planted blocks; the report lists the largest at the peak
"$MA" import "$T/named.zst" -o "$T/named.db" >/dev/null || fail "import named"
python3 - "$T/named.db" <<'PY' || fail "tensor_names"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
h, layers, steps = 1024, 3, 6
sizes = [3 * h * h * 2, h * h * 2, 4 * h * h * 2, 4 * h * h * 2, h * 2, h * 2]
rows = db.execute("SELECT t.name, t.category, t.tensors, a.size FROM tensor_names t "
                  "JOIN allocations a ON a.alloc_id = t.alloc_id").fetchall()
by = {}
for name, cat, tensors, size in rows:
    by.setdefault(cat, []).append((name, size))
    assert tensors == 1
assert sorted(by) == ["gradient", "optimizer_state", "parameter"], sorted(by)
assert len(by["parameter"]) == 6 * layers and len(by["optimizer_state"]) == 12 * layers
assert len(by["gradient"]) == 6 * layers * steps, len(by["gradient"])  # new blocks every step
assert sum(s for _, s in by["parameter"]) == layers * sum(sizes)
assert sum(s for _, s in by["optimizer_state"]) == 2 * 2 * layers * sum(sizes)
assert ("layers.2.attn.qkv.weight.exp_avg_sq", 2 * sizes[0]) in by["optimizer_state"]
assert ("layers.0.norm2.weight.grad", sizes[5]) in by["gradient"]
PY
# the largest named tensors at the peak: kept by the database (tensor_peaks) = found by a sweep
# (a rule that matches nothing makes report sweep)
printf 'no_such_frame_anywhere other\n' >"$T/none"
"$MA" report --json --top 50 "$T/named.zst" >"$T/stored.json" || fail "report stored"
"$MA" report --json --top 50 --categories "$T/none" "$T/named.zst" >"$T/swept.json" ||
    fail "report swept"
python3 -c "import json,sys; a,b=[json.load(open(f))['devices'][0]['named_tensors_at_peak'] \
for f in sys.argv[1:]]; assert a == b and len(a) == 50, (len(a), len(b))" "$T/stored.json" \
    "$T/swept.json" || fail "named tensors at the peak: stored and swept differ"
"$MA" report "$T/named.zst" >"$T/report.txt" || fail "report text"
grep -q "held at the peak by category:" "$T/report.txt" || fail "no category lines"
grep -Eq "optimizer_state +layers\.[0-9]\.mlp\.(up|down)\.weight\.exp_avg" "$T/report.txt" ||
    fail "largest named tensors: $(grep -A3 'named tensors' "$T/report.txt")"

# tensors: at a step's end every parameter has its gradient and AdamW's two states beside it
"$MA" tensors "$T/named.zst" --at step:2 --json >"$T/tensors.json" || fail "tensors: exit $?"
"$MA" tensors "$T/named.zst" --at step:2 --group-by module --json >"$T/modules.json" ||
    fail "tensors --group-by module"
python3 - "$T/tensors.json" "$T/modules.json" <<'PY' || fail "tensors' answers"
import json, sys
h, layers = 1024, 3
sizes = [3 * h * h * 2, h * h * 2, 4 * h * h * 2, 4 * h * h * 2, h * 2, h * 2]
t = json.load(open(sys.argv[1]))
assert len(t["tensors"]) == 4 * 6 * layers, len(t["tensors"])
cats, grads = {}, {}
for x in t["tensors"]:
    cats[x["category"]] = cats.get(x["category"], 0) + x["bytes"]
    if x["category"] == "gradient":
        grads[x["name"]] = x["bytes"]
# bytes are blocks as the allocator accounts them: a gradient may get a block up to 1 MiB
# larger than its request (the large pool splits only remainders above 1 MiB)
weights = ["attn.qkv", "attn.out_proj", "mlp.up", "mlp.down", "norm1", "norm2"]
want = {"layers.%d.%s.weight.grad" % (l, w): sizes[k] for l in range(layers)
        for k, w in enumerate(weights)}
assert sorted(grads) == sorted(want), sorted(grads)
assert all(want[n] <= b <= want[n] + (1 << 20) for n, b in grads.items()), grads
assert cats["parameter"] == layers * sum(sizes) and \
    cats["optimizer_state"] == 4 * layers * sum(sizes), cats
assert [g["group"] for g in t["groups"]] == ["layers.%d" % i for i in range(layers)], t["groups"]
for i, g in enumerate(t["groups"]):
    mine = sum(b for n, b in grads.items() if n.startswith("layers.%d." % i))
    assert (g["parameter_bytes"], g["gradient_bytes"], g["optimizer_state_bytes"]) == \
        (sum(sizes), mine, 4 * sum(sizes)), g
    assert abs(g["share_of_peak"] - (5 * sum(sizes) + mine) / t["peak_allocated_bytes"]) < 1e-4
m = json.load(open(sys.argv[2]))["groups"]
assert [g["group"] for g in m[:3]] == ["layers.0.attn.qkv", "layers.0.attn.out_proj",
                                       "layers.0.mlp.up"], [g["group"] for g in m[:3]]
assert m[0]["optimizer_state_bytes"] == 4 * sizes[0] and m[0]["parameter_bytes"] == sizes[0], m[0]
PY
"$MA" tensors "$T/named.zst" --at step:2 >"$T/tensors.txt" || fail "tensors text"
grep -Eq "^    layers\.2\.mlp\.up\.weight +8\.00 MiB +8\.00 MiB +32\.0 MiB" "$T/tensors.txt" ||
    fail "tensors text: $(head -5 "$T/tensors.txt")"
"$MA" tensors "$T/leak.zst" | grep -q "no named tensors" || fail "tensors without names"
"$MA" tensors "$T/named.zst" --group-by rank 2>/dev/null && fail "tensors --group-by rank"

# timeline --by category: the profiler's colours, an area and a legend entry each
if "$MA" timeline "$T/named.zst" --by category -o "$T/tl.svg" 2>"$T/tl.err"; then
    python3 - "$T/tl.svg" <<'PY' || fail "timeline --by category colours"
import sys
svg = open(sys.argv[1]).read()
def pct(v):
    s = "%f" % (v * 100 / 255)
    return s.rstrip("0").rstrip(".") + "%"
colours = {"parameter": 0x006400, "gradient": 0x0000CD, "optimizer_state": 0xDAA520,
           "activation": 0xFF0000, "temporary": 0x9370DB, "input": 0x000000}
for name, c in colours.items():
    fill = "fill:rgb(%s,%s,%s)" % (pct(c >> 16), pct((c >> 8) & 255), pct(c & 255))
    assert svg.count(fill) >= 2, (name, fill, svg.count(fill))
PY
elif ! grep -q "pictures are off" "$T/tl.err"; then
    fail "timeline --by category: $(cat "$T/tl.err")"
fi

# the database: import -o keeps every block's category (allocations.category) and the sums at the
# peak; sql on a trace fills its cached database's on first use; both agree with report
python3 - "$T/named.db" "$T/named.json" <<'PY' || fail "block_categories"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
truth = json.load(open(sys.argv[2]))["devices"][0]["categories_at_peak"]
peak = db.execute("SELECT peak_allocated_event_id FROM devices WHERE device = 0").fetchone()[0]
live = dict(db.execute(
    "SELECT category, sum(size) FROM allocations WHERE device = 0 AND kind = 'device' AND "
    "alloc_id <= ?1 AND (free_event_id IS NULL OR free_event_id > ?1) GROUP BY category",
    (peak,)).fetchall())
assert live == {k: v for k, v in truth.items() if v}, (live, truth)
assert dict(db.execute("SELECT category, bytes FROM category_peaks WHERE device = 0")) == live
unnamed = db.execute("SELECT count(*) FROM allocations WHERE category IS NULL").fetchone()[0]
assert unnamed == 0, unnamed
assert db.execute("SELECT count(*) FROM allocations WHERE tensor_name IS NOT NULL").fetchone()[0] \
    == db.execute("SELECT count(*) FROM tensor_names").fetchone()[0]
PY
"$MA" sql --csv "$T/named.zst" "SELECT category, count(*) FROM allocations GROUP BY category \
    ORDER BY category" >"$T/sql.csv" || fail "sql categories"
python3 -c "import sqlite3,sys; rows=sqlite3.connect(sys.argv[1]).execute('SELECT category, \
count(*) FROM allocations GROUP BY category ORDER BY category').fetchall(); \
want='category,count(*)\n'+''.join('%s,%d\n' % r for r in rows); got=open(sys.argv[2]).read(); \
assert got == want, (got, want)" "$T/named.db" "$T/sql.csv" || fail "sql's categories differ"

# real snapshots: the categories at the peak add up to the peak, each block counted once
for snap in "${DATA:-/nonexistent}"/*.pickle; do
    [ -f "$snap" ] || continue
    "$MA" report --json "$snap" >"$T/real.json" 2>/dev/null || { fail "report $snap"; continue; }
    python3 -c "import json,sys; [sys.exit('%s: %s' % (sys.argv[2], d)) for d in \
json.load(open(sys.argv[1]))['devices'] if sum(d['categories_at_peak'].values()) != \
d['peak_allocated_bytes']]" "$T/real.json" "${snap##*/}" || fail "categories of ${snap##*/}"
done

finish
