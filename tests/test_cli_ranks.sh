#!/usr/bin/env bash
# test_cli_ranks.sh — `memanalyze ranks` and `memanalyze compare` (issue 15) on synthetic runs
# with planted answers: eight ranks of one job, rank 3 heavier (a larger hidden size: more
# optimizer state and activations) and rank 5 leaking (30 MiB per step at train.py:88), and a
# broken rank file; three configurations of one run side by side.
# usage: test_cli_ranks.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_ranks
. "$(dirname "$0")/cli_lib.sh"

mkdir -p "$T/job"
for r in 0 1 2 3 4 5 6 7; do
    extra=""
    [ $r = 3 ] && extra="--hidden 1536"
    [ $r = 5 ] && extra="--leak 30MiB"
    # shellcheck disable=SC2086
    "$SYNTH" -o "$T/job/trace.$r.zst" --rank $r --host "node$((r / 4))" --steps 12 \
        --seed $((r + 1)) $extra 2>/dev/null || fail "synth rank $r"
done
echo "not a trace" >"$T/job/trace.8.zst"
# a pickle that would run code: recognized in the parent, refused by its import, in a child
python3 -c "import pickle, sys; open(sys.argv[1], 'wb').write(pickle.dumps({'x': print}))" \
    "$T/job/trace.9.pickle"
echo "a log line" >"$T/job/train.log" # not an input: skipped without a word

"$MA" ranks "$T/job" --json --db "$T/ranks.db" >"$T/ranks.json" || fail "ranks: exit $?"
# -j 1 from an empty cache (imports one at a time), from a parent that ignores SIGCHLD (the
# children would be reaped behind ranks' back: their answers must not be lost)
GMT_CACHE_DIR=$T/cache1 perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV' \
    "$MA" ranks "$T/job" -j 1 --json >"$T/ranks1.json" || fail "ranks -j 1: exit $?"
cmp -s "$T/ranks.json" "$T/ranks1.json" || fail "ranks -j 1 and -j N differ"
"$MA" ranks "$T/job" >"$T/ranks.txt" || fail "ranks text: exit $?"
for r in 0 3 5; do
    "$MA" sql "$T/job/trace.$r.zst" --csv \
        "SELECT peak_allocated_bytes FROM devices WHERE device = 0" | tail -1 >"$T/peak.$r"
done
python3 - "$T" <<'PY' || fail "ranks' answers"
import json, os, sqlite3, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "ranks.json")))
ranks = {r["rank"]: r for r in d["ranks"]}
assert sorted(ranks) == list(range(8)), sorted(ranks)
for r in (0, 3, 5):  # each rank's peak is its database's
    assert ranks[r]["peak_allocated_bytes"] == int(open(os.path.join(t, f"peak.{r}")).read()), r
assert ranks[3]["host"] == "node0" and ranks[5]["host"] == "node1", (ranks[3], ranks[5])
peaks = [r["peak_allocated_bytes"] for r in d["ranks"]]
assert abs(d["imbalance"] - max(peaks) / (sum(peaks) / len(peaks))) < 1e-4, d["imbalance"]
assert d["spread_bytes"] == max(peaks) - min(peaks), d["spread_bytes"]
# the planted heavier rank, and why: its optimizer state and activations above the median
assert d["bottleneck_rank"] == 3, d["bottleneck_rank"]
sites = [s["site"] for s in d["bottleneck_sites"]]
assert sites and sites[0] == "adamw.py:137 _init_group", sites
assert any(s.startswith("layers.py:") for s in sites), sites
assert all(s["bytes_over_median"] > 0 and s["bytes"] - s["median_bytes"] == s["bytes_over_median"]
           for s in d["bottleneck_sites"]), d["bottleneck_sites"]
# the planted leak: rank 5 alone, and it is the one whose trend reaches the device first
assert d["leaking_ranks"] == [5], d["leaking_ranks"]
assert d["median_growth_bytes_per_step"] == 0, d["median_growth_bytes_per_step"]  # the text's "median rank"
assert d["first_to_run_out"] == 5 and ranks[5]["growth_bytes_per_step"] == 30 << 20, ranks[5]
assert ranks[5]["top_growth"]["site"] == "train.py:88 train_step", ranks[5]["top_growth"]
assert all(not ranks[r]["leaking"] for r in ranks if r != 5)
# the broken rank files: reported, the rest summarized without them
failed = {os.path.basename(f["input"]): f["error"] for f in d["failed"]}
assert sorted(failed) == ["trace.8.zst", "trace.9.pickle"], failed
assert "not a gpumemtrace trace" in failed["trace.8.zst"], failed
assert "GLOBAL" in failed["trace.9.pickle"], failed
assert d["duplicate_ranks"] == [], d["duplicate_ranks"]
# --db: the summaries with a rank column, no events
db = sqlite3.connect(os.path.join(t, "ranks.db"))
rows = dict(db.execute("SELECT rank, peak_allocated_bytes FROM ranks"))
assert rows == {r: ranks[r]["peak_allocated_bytes"] for r in ranks}, rows
assert db.execute("SELECT rank FROM ranks WHERE bottleneck").fetchall() == [(3,)]
assert db.execute("SELECT rank FROM ranks WHERE leaking").fetchall() == [(5,)]
assert db.execute("SELECT count(*) FROM rank_steps WHERE rank = 5").fetchone()[0] == 12
assert db.execute("SELECT count(*) FROM failed").fetchone()[0] == 2
PY
grep -q "^  bottleneck: rank 3" "$T/ranks.txt" || fail "text: bottleneck"
grep -q "leaking alone: rank 5 .*train.py:88 train_step" "$T/ranks.txt" || fail "text: leak"
grep -q "could not read .*trace.8.zst" "$T/ranks.txt" || fail "text: the broken rank"

# -o: the pictures (when this build draws them).
png() { python3 -c "import sys; d=open(sys.argv[1],'rb').read(8); sys.exit(d != b'\x89PNG\r\n\x1a\n')" "$1"; }
if "$MA" ranks "$T/job" -o "$T/ranks.png" >/dev/null 2>"$T/o.err"; then
    png "$T/ranks.png" || fail "ranks -o wrote no PNG"
    "$MA" compare "$T/job/trace.0.zst" "$T/job/trace.3.zst" -o "$T/cmp.svg" >/dev/null ||
        fail "compare -o: exit $?"
    grep -q "<svg" "$T/cmp.svg" || fail "compare -o wrote no SVG"
else
    grep -q "pictures are off in this build" "$T/o.err" || fail "ranks -o: $(cat "$T/o.err")"
fi

# The rank from the file name when the trace has none: the number after "rank", else the
# last one. Two files that say the same rank are both kept, reported, and --db writes both;
# a file named twice (itself and its directory) is read once.
mkdir -p "$T/named"
"$SYNTH" -o "$T/named/run.11.zst" --steps 4 2>/dev/null || fail synth
cp "$T/named/run.11.zst" "$T/named/rank0_step500.zst"
cp "$T/named/run.11.zst" "$T/named/rank-1.step500.zst"
cp "$T/named/run.11.zst" "$T/named/again.11.zst"
"$MA" ranks "$T/named" "$T/named/run.11.zst" --json --db "$T/named.db" >"$T/named.json" ||
    fail "named: exit $?"
python3 - "$T" <<'PY' || fail "ranks from file names"
import json, os, sqlite3, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "named.json")))
assert [r["rank"] for r in d["ranks"]] == [0, 1, 11, 11], [r["rank"] for r in d["ranks"]]
assert d["duplicate_ranks"] == [11], d["duplicate_ranks"]
rows = sqlite3.connect(os.path.join(t, "named.db")).execute("SELECT count(*) FROM ranks")
assert rows.fetchone()[0] == 4
PY

# Nothing readable: one line, exit 2.
"$MA" ranks "$T/job/trace.8.zst" >/dev/null 2>"$T/e1"; [ $? -eq 2 ] || fail "all broken: exit"
grep -q "no rank could be read" "$T/e1" || fail "all broken: $(cat "$T/e1")"

# compare: three configurations of one run, exact peaks, the baseline first.
"$SYNTH" -o "$T/c1.zst" --steps 10 2>/dev/null || fail synth
"$SYNTH" -o "$T/c2.zst" --steps 10 --hidden 1536 2>/dev/null || fail synth
"$SYNTH" -o "$T/c3.zst" --steps 10 --leak 50MiB --fragment 2>/dev/null || fail synth
"$MA" compare "$T/c1.zst" "$T/c2.zst" "$T/c3.zst" --label base --label wide --json \
    >"$T/compare.json" || fail "compare: exit $?"
"$MA" compare "$T/c1.zst" "$T/c2.zst" "$T/c3.zst" >"$T/compare.txt" || fail "compare text"
for c in c1 c2 c3; do
    "$MA" sql "$T/$c.zst" --csv "SELECT peak_allocated_bytes, peak_reserved_bytes, \
        peak_requested_bytes, ooms FROM devices WHERE device = 0" | tail -1 >"$T/$c.peaks"
done
python3 - "$T" <<'PY' || fail "compare's answers"
import json, os, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "compare.json")))
assert d["baseline"] == "base", d["baseline"]
assert [r["label"] for r in d["runs"]] == ["base", "wide", "c3.zst"], [r["label"] for r in d["runs"]]
for run, name in zip(d["runs"], ("c1", "c2", "c3")):
    want = [int(v) for v in open(os.path.join(t, name + ".peaks")).read().strip().split(",")]
    got = [run["peak_allocated_bytes"], run["peak_reserved_bytes"], run["peak_requested_bytes"],
           run["ooms"]]
    assert got == want, (name, got, want)
    assert run["steps"] == 10 and run["settings"] == "expandable_segments:False", run
    assert 0 <= run["trapped_ratio_mean"] <= run["trapped_ratio_max"] <= 1, run
    assert 0 <= run["fragmentation_mean"] <= run["fragmentation_max"] <= 1, run
    assert run["segments_max"] > 0, run
wide = d["site_differences"][0]
assert wide["run"] == "wide" and wide["sites"][0]["site"] == "adamw.py:137 _init_group", wide
leak = d["site_differences"][1]["sites"]
top = [s for s in leak if s["site"] == "train.py:88 train_step"]
assert top and top[0]["baseline_bytes"] == 0 and top[0]["difference_bytes"] > 0, leak
assert d["runs"][2]["top_growth"]["site"] == "train.py:88 train_step", d["runs"][2]
PY
grep -q "^  c2.zst against c1.zst" "$T/compare.txt" || fail "compare text: sites"

# compare on snapshots: one without steps has no step-end fragmentation (the replay's row at
# the end of the trace is not a step's end); the most segments count an expandable segment's
# mapped range once, as event_rows.segments does, not a row per page
python3 "$(dirname "$0")/make_pickles.py" --snapshots "$T/snaps" >/dev/null || fail "make_pickles"
"$MA" compare "$T/snaps/es-oom.pickle" "$T/snaps/es-training.pickle" --json \
    >"$T/snaps.json" || fail "compare snapshots: exit $?"
for p in es-oom es-training; do
    "$MA" sql "$T/snaps/$p.pickle" --csv "SELECT max(segments) FROM event_rows WHERE device = 0" |
        tail -1 >"$T/$p.segments"
done
python3 - "$T" <<'PY' || fail "compare on snapshots"
import json, os, sys
t = sys.argv[1]
oom, training = json.load(open(os.path.join(t, "snaps.json")))["runs"]
assert oom["steps"] == 0, oom
assert (oom["fragmentation_mean"], oom["fragmentation_max"], oom["trapped_ratio_mean"],
        oom["trapped_ratio_max"]) == (None, None, None, None), oom  # no step ends to take them over
assert 0 < oom["fragmentation_at_end"] <= 1 and 0 <= oom["trapped_ratio_at_end"] <= 1, oom
for run, name in ((oom, "es-oom"), (training, "es-training")):
    want = int(open(os.path.join(t, name + ".segments")).read())
    assert run["segments_max"] == want, (name, run["segments_max"], want)
assert training["steps"] > 0 and training["fragmentation_max"] > 0, training
PY
"$MA" compare "$T/c1.zst" >/dev/null 2>&1; [ $? -eq 2 ] || fail "compare one input: exit"

# Issue 29: the rank of an input from its trace, else only from an explicit rank in its file name
# (rank_2, trace.%r.zst), never from any digits (m512 is not rank 512, pt20 not rank 20, the pid
# of memrec's default memrec-%h-%p.zst not a rank); the others numbered in the order given, and
# said to be so; the text names each row's input.
mkdir -p "$T/noranks"
for f in m512 pt20 memrec-node7-4242 rank_2; do
    cp "$T/named/run.11.zst" "$T/noranks/$f.zst"
done
"$MA" ranks "$T/noranks/m512.zst" "$T/noranks/pt20.zst" "$T/noranks/memrec-node7-4242.zst" \
    "$T/noranks/rank_2.zst" --json >"$T/noranks.json" || fail "no ranks: exit $?"
"$MA" ranks "$T/noranks/m512.zst" "$T/noranks/pt20.zst" "$T/noranks/memrec-node7-4242.zst" \
    "$T/noranks/rank_2.zst" >"$T/noranks.txt" || fail "no ranks text: exit $?"
python3 - "$T" <<'PY' || fail "ranks of inputs whose names give none"
import json, os, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "noranks.json")))
got = {os.path.basename(r["input"]): (r["rank"], r["rank_from"]) for r in d["ranks"]}
# rank_2 from its name; the rest after it, in the order given
assert got == {"rank_2.zst": (2, "file name"), "m512.zst": (3, "order"), "pt20.zst": (4, "order"),
               "memrec-node7-4242.zst": (5, "order")}, got
assert d["numbered_in_order"] == 3 and d["duplicate_ranks"] == [], d
PY
grep -q "^    (3) .* m512.zst$" "$T/noranks.txt" || fail "text: the row's input"
grep -q "^      2 .* rank_2.zst$" "$T/noranks.txt" || fail "text: a rank from the name"
grep -q "(N): 3 inputs without a rank .*numbered in the order given" "$T/noranks.txt" ||
    fail "text: numbered in order"

# Issue 29: every rank that ran out (an OOM in its input) is said, first by time, before the
# forecasts of growth: rank 1 runs out first, rank 2 later, rank 3 only leaks (a forecast).
mkdir -p "$T/oomjob"
"$SYNTH" -o "$T/oomjob/trace.0.zst" --rank 0 --steps 8 --seed 1 2>/dev/null || fail synth
"$SYNTH" -o "$T/oomjob/trace.1.zst" --rank 1 --steps 8 --seed 2 --fragment \
    --device-memory 2300000000 2>/dev/null || fail synth
"$SYNTH" -o "$T/oomjob/trace.2.zst" --rank 2 --steps 8 --seed 3 --leak 200MiB \
    --device-memory 3000000000 2>/dev/null || fail synth
"$SYNTH" -o "$T/oomjob/trace.3.zst" --rank 3 --steps 8 --seed 4 --leak 30MiB 2>/dev/null ||
    fail synth
"$MA" ranks "$T/oomjob" --json --db "$T/oomjob.db" >"$T/oomjob.json" || fail "oom job: exit $?"
"$MA" ranks "$T/oomjob" >"$T/oomjob.txt" || fail "oom job text: exit $?"
for r in 1 2; do
    "$MA" sql "$T/oomjob/trace.$r.zst" --csv \
        "SELECT min(event_id) FROM events WHERE device = 0 AND op = 'oom'" | tail -1 \
        >"$T/oom.$r"
done
python3 - "$T" <<'PY' || fail "ranks that ran out"
import json, os, sqlite3, sys
t = sys.argv[1]
d = json.load(open(os.path.join(t, "oomjob.json")))
ranks = {r["rank"]: r for r in d["ranks"]}
assert d["ran_out"] == [1, 2] and d["first_to_run_out"] == 1, (d["ran_out"], d["first_to_run_out"])
assert d["ran_out_order"] == "wall clock", d["ran_out_order"]
for r in (1, 2):
    assert ranks[r]["ooms"] > 0 and ranks[r]["first_oom"]["event_id"] == int(
        open(os.path.join(t, "oom.%d" % r)).read()), ranks[r]["first_oom"]
assert ranks[0]["first_oom"] is None and ranks[3]["first_oom"] is None
assert [f["rank"] for f in d["forecast"]][:1] == [3], d["forecast"]
assert all(f["rank"] not in (1, 2) for f in d["forecast"]), d["forecast"]
db = sqlite3.connect(os.path.join(t, "oomjob.db"))
assert db.execute("SELECT rank FROM ranks WHERE ran_out ORDER BY rank").fetchall() == [(1,), (2,)]
assert db.execute("SELECT rank FROM ranks WHERE first_to_run_out").fetchall() == [(1,)]
PY
grep -q "^  first to run out: rank 1 (trace.1.zst), out of memory at step" "$T/oomjob.txt" ||
    fail "text: first to run out"
grep -q "^  then ran out: rank 2 (trace.2.zst), out of memory" "$T/oomjob.txt" ||
    fail "text: then ran out"
grep -q "^  growth forecast: rank 3 (trace.3.zst)" "$T/oomjob.txt" || fail "text: the forecast"

# Issue 29: the devices of one process (pipeline stages, DataParallel) compared like ranks:
# device 1 of this snapshot holds twice device 0's; report and ranks say the imbalance and the
# bottleneck device. The snapshot has no steps: compare says fragmentation at the end and the
# peak, never "0.00 / 0.00", and draws no empty per-step picture.
python3 - "$T/stages.pickle" "$(dirname "$0")" <<'PY' || fail "make the two-stage snapshot"
import pickle, random, sys
sys.path.insert(0, sys.argv[2])
import make_pickles as mp
rnd, clock = random.Random(3), mp.Clock()
allocs = [mp.Allocator(d, 8 << 30, clock=clock) for d in (0, 1)]
mp.workload(allocs[0], rnd, 20, mp.SIZES, live_cap=30)
mp.workload(allocs[1], rnd, 20, [s * 2 for s in mp.SIZES], live_cap=60)
with open(sys.argv[1], "wb") as f:
    pickle.dump(mp.snapshot_of(allocs, 1.0, mp.settings_dict()), f, protocol=4)
PY
"$MA" report "$T/stages.pickle" --json >"$T/stages.report.json" || fail "report stages: exit $?"
"$MA" report "$T/stages.pickle" >"$T/stages.report.txt" || fail "report stages text: exit $?"
"$MA" report "$T/stages.pickle" --device 0 >"$T/stages.dev0.txt" || fail "report --device: exit"
"$MA" ranks "$T/stages.pickle" --json >"$T/stages.ranks.json" || fail "ranks stages: exit $?"
"$MA" ranks "$T/stages.pickle" >"$T/stages.ranks.txt" || fail "ranks stages text: exit $?"
"$MA" compare "$T/stages.pickle" "$T/snaps/es-oom.pickle" >"$T/stages.compare.txt" ||
    fail "compare stages: exit $?"
"$MA" report "$T/job/trace.0.zst" >"$T/one.report.txt" || fail "report one device: exit $?"
"$MA" sql "$T/stages.pickle" --csv "SELECT peak_allocated_bytes FROM devices ORDER BY device" |
    tail -n +2 >"$T/stages.peaks"
python3 - "$T" <<'PY' || fail "devices compared like ranks"
import json, os, sys
t = sys.argv[1]
peaks = [int(x) for x in open(os.path.join(t, "stages.peaks")).read().split()]
assert len(peaks) == 2 and peaks[1] > peaks[0], peaks
b = json.load(open(os.path.join(t, "stages.report.json")))["run"]["device_balance"]
assert b["count"] == 2 and b["bottleneck_device"] == 1, b
assert abs(b["imbalance"] - max(peaks) / (sum(peaks) / 2)) < 1e-4, b
assert [p["bytes"] for p in b["peak_allocated"]] == peaks, b
r = json.load(open(os.path.join(t, "stages.ranks.json")))["ranks"][0]
assert r["devices"] == b, (r["devices"], b)
assert r["steps"] == 0 and r["fragmentation_mean"] is None, r
PY
grep -q "^  devices of this process, compared like ranks: 2 devices, imbalance: .*bottleneck: device 1" \
    "$T/stages.report.txt" || fail "report text: the devices' imbalance"
grep -q "compared like ranks" "$T/stages.dev0.txt" && fail "report --device 0: a device alone"
grep -q "compared like ranks" "$T/one.report.txt" && fail "report: one device compared"
grep -q "^  rank 0 (stages.pickle): 2 devices, .*bottleneck: device 1" "$T/stages.ranks.txt" ||
    fail "ranks text: the devices' imbalance"
grep -q "frag end/peak" "$T/stages.compare.txt" || fail "compare text: end / peak heading"
grep -q "0.00 / 0.00" "$T/stages.compare.txt" && fail "compare text: 0.00 / 0.00 without steps"
# An OOM on a device other than the one summarized (the highest peak) is still the rank's: it
# ran out.
python3 - "$T/stage-oom.pickle" "$(dirname "$0")" <<'PY' || fail "make the stage-oom snapshot"
import pickle, random, sys
sys.path.insert(0, sys.argv[2])
import make_pickles as mp
rnd, clock = random.Random(4), mp.Clock()
a0, a1 = mp.Allocator(0, 8 << 30, clock=clock), mp.Allocator(1, 1 << 30, clock=clock)
mp.workload(a0, rnd, 20, [s * 2 for s in mp.SIZES], live_cap=60)
live, oom = mp.workload(a1, rnd, 400, mp.SIZES + [120 << 20], live_cap=1000, empty_every=0)
assert oom
with open(sys.argv[1], "wb") as f:
    pickle.dump(mp.snapshot_of([a0, a1], 1.0, mp.settings_dict()), f, protocol=4)
PY
"$MA" ranks "$T/stage-oom.pickle" "$T/job/trace.0.zst" --json >"$T/stage-oom.json" ||
    fail "ranks stage-oom: exit $?"
"$MA" ranks "$T/stage-oom.pickle" "$T/job/trace.0.zst" >"$T/stage-oom.txt" ||
    fail "ranks stage-oom text: exit $?"
python3 - "$T" <<'PY' || fail "an OOM on another device"
import json, os, sys
d = json.load(open(os.path.join(sys.argv[1], "stage-oom.json")))
r = [r for r in d["ranks"] if r["input"].endswith("stage-oom.pickle")][0]
assert r["device"] == 0 and r["ooms"] == 0, r  # the summary's device has none
assert r["first_oom"]["device"] == 1 and r["first_oom"]["ooms"] >= 1, r["first_oom"]
assert d["ran_out"] == [r["rank"]] and d["first_to_run_out"] == r["rank"], d
PY
grep -q "^  first to run out: rank [0-9]* (stage-oom.pickle), out of memory on device 1, " \
    "$T/stage-oom.txt" || fail "text: out of memory on device 1"
"$MA" compare "$T/stages.pickle" "$T/snaps/es-oom.pickle" -o "$T/nosteps.svg" >/dev/null \
    2>"$T/nosteps.err"
[ ! -e "$T/nosteps.svg" ] || fail "compare -o: an empty per-step picture"
grep -q -E "no run has steps|pictures are off" "$T/nosteps.err" || fail "compare -o: $(cat "$T/nosteps.err")"

finish
