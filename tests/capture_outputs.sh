#!/usr/bin/env bash
# capture_outputs.sh — every user-visible output of memanalyze, for checking a refactor.
#
#   tests/capture_outputs.sh BUILD_DIR OUT_DIR [SHARED_PYTORCH_DIR]
#
# Runs every command (text, JSON, pictures, the database's tables and the schema's example
# queries) on synth traces and on every real snapshot, and writes the outputs under OUT_DIR, one
# file each. Run it before and after a change that must not change behaviour, then
# `diff -r BEFORE AFTER`: an empty diff is the proof. Not part of `make test` (it takes ~1 min and
# compares two builds, not a build with a known answer).
set -u
build=${1:?BUILD_DIR}
out=${2:?OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
shared=${3:-$here/../../shared/data/pytorch}
ma=$build/analyzer/memanalyze
synth=$build/samples/synth/synth
export GMT_CACHE_DIR
GMT_CACHE_DIR=$(mktemp -d)
trap 'rm -rf "$GMT_CACHE_DIR"' EXIT
rm -rf "$out" && mkdir -p "$out/inputs"

# One output file per command; the exit status goes at its end.
run() { # run NAME CMD...
    local name=$1
    shift
    "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo "exit $?" >>"$out/$name.out"
}

"$synth" --steps 50 --leak 262144 --seed 1 -o "$out/inputs/demo.zst" >/dev/null
"$synth" --steps 12 --fragment --devices 2 --streams 2 --seed 7 -o "$out/inputs/frag2.zst" >/dev/null
inputs=("$out/inputs/demo.zst" "$out/inputs/frag2.zst")
for p in "$shared"/*.pickle; do [ -f "$p" ] && inputs+=("$p"); done

python_dump='
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN (\"table\",\"view\") ORDER BY name")]
names = [n for n in names if n not in ("event_chunks", "event_ends")]  # the event store: not the interface
for n in names:
    rows = db.execute("SELECT * FROM \"%s\"" % n).fetchall()
    rows = [r for r in rows if not (n == "meta" and r and r[0] in ("input_mtime_ns", "input_path"))]
    rows.sort(key=repr)
    print("## %s: %d rows" % (n, len(rows)))
    for r in rows:
        print(r)
text = open(sys.argv[2]).read()
i = text.find("-- @@ examples")
q = []
for line in text[i:].splitlines():
    if line.startswith("--   "):
        q.append(line[5:])
        if line.rstrip().endswith(";"):
            sql = "\n".join(q); q = []
            print("## example:", sql.splitlines()[0])
            try:
                for r in db.execute(sql):
                    print(r)
            except Exception as e:
                print("error", e)
'

for in in "${inputs[@]}"; do
    n=$(basename "$in")
    n=${n%.*}
    run "$n.info" "$ma" info "$in"
    run "$n.report" "$ma" report "$in"
    run "$n.report.json" "$ma" report "$in" --json
    run "$n.report.window" "$ma" report "$in" --from event:10 --to event:400
    run "$n.leaks" "$ma" leaks "$in"
    run "$n.leaks.json" "$ma" leaks "$in" --json
    run "$n.diff" "$ma" diff "$in" --from event:50 --to end
    run "$n.diff.json" "$ma" diff "$in" --from start --to peak --json
    run "$n.diff.self" "$ma" diff "$in" "$in"
    for at in start peak end event:100 step:3; do
        run "$n.segments.$at" "$ma" segments "$in" --at "$at" --blocks
        run "$n.segments.$at.json" "$ma" segments "$in" --at "$at" --json
    done
    run "$n.sql.steps" "$ma" sql "$in" "SELECT * FROM steps"
    run "$n.sql.warnings" "$ma" sql "$in" "SELECT * FROM warnings" --csv
    run "$n.import" "$ma" import "$in" -o "$out/$n.db"
    if [ -f "$out/$n.db" ]; then
        python3 -c "$python_dump" "$out/$n.db" "$here/../schema/schema.sql" >"$out/$n.db.dump" 2>&1
        rm -f "$out/$n.db"
    fi
    for pic in timeline heatmap fragmentation; do
        run "$n.$pic.png" "$ma" "$pic" "$in" -o "$out/$n.$pic.png"
        run "$n.$pic.svg" "$ma" "$pic" "$in" -o "$out/$n.$pic.svg"
    done
    run "$n.timeline.stream" "$ma" timeline "$in" --by stream -o "$out/$n.timeline-stream.png"
    run "$n.segpic" "$ma" segments "$in" --at peak -o "$out/$n.segments-peak.png"
    run "$n.plots" "$ma" report "$in" --plots "$out/$n.plots"
done
# Paths differ from run to run: keep them out of the comparison.
grep -rlI -e "$GMT_CACHE_DIR" -e "$out" "$out" 2>/dev/null |
    xargs -r sed -i -e "s#$GMT_CACHE_DIR#CACHE#g" -e "s#$out#OUT#g"
echo "outputs of ${#inputs[@]} inputs in $out"
