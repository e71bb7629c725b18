#!/usr/bin/env bash
# test_cli_export.sh — `memanalyze export --to folded` (issue 30) against known answers. On a
# synthetic run with a planted leak (256 KiB a step at train.py:88): the lines at the peak sum to
# report's peak allocated and each is one stack's live bytes there (the allocations view), its
# Python frames outermost first; at step:3 they sum to allocated at that step's end; `leaks`
# names the planted site with 262144 bytes a step; `allocated` sums to the bytes allocated in the
# window; a window's peak is report's. A frame holding ';', a newline and spaces stays one frame
# of a parseable line. Bad inputs (an unknown --to, -o a directory, a link or the input, a
# missing input, a bad --what or WHEN, no such device) exit 2 with one line and leave no file; a
# write that fails (a file size limit) exits 1 and leaves none. The real snapshots (when DATA
# has them) export, each summing to its report's peak.
# usage: test_cli_export.sh SYNTH MEMANALYZE [DATA]
set -u
SYNTH=$1 MA=$2 DATA=${3:-}
name=test_cli_export
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" --steps 12 --leak 262144 --seed 1 -o "$T/x.zst" 2>/dev/null || fail synth
"$MA" import "$T/x.zst" -o "$T/x.db" >/dev/null || fail import
"$MA" report "$T/x.db" --json >"$T/report.json" || fail "report: exit $?"
"$MA" report "$T/x.db" --from step:3 --to step:5 --json >"$T/report35.json" || fail "report window"
ex() { # ex NAME ARGS...: export x.db to $T/NAME.folded
    local out=$1
    shift
    "$MA" export "$T/x.db" --to folded -o "$T/$out.folded" "$@" >"$T/$out.out" 2>&1 ||
        fail "export $*: exit $? ($(cat "$T/$out.out"))"
}
ex peak
ex peak_at --what at:peak
ex step3 --what at:step:3
ex leaks --what leaks
ex allocated --what allocated
ex allocated35 --what allocated --from step:3 --until step:5
ex peak35 --from step:3 --until step:5
grep -q "^wrote $T/peak.folded: 10 lines, device 0, .* live at event " "$T/peak.out" ||
    fail "export's line: $(cat "$T/peak.out")"

python3 - "$T" <<'PY' || fail "export's answers"
import json, os, re, sqlite3, sys
t = sys.argv[1]
db = sqlite3.connect(os.path.join(t, "x.db"))

def folded(name):
    """The lines of a folded file as (frames, bytes), checked as a flame graph reads them."""
    rows = []
    for line in open(os.path.join(t, name + ".folded"), encoding="utf-8"):
        assert line.endswith("\n"), (name, line)
        stack, n = line[:-1].rsplit(" ", 1)
        assert re.fullmatch(r"[^ ]+( [^ ]+)*", stack) and re.fullmatch(r"[0-9]+", n), (name, line)
        frames = stack.split(";")
        assert all(frames), (name, line)
        assert int(n) > 0, (name, line)
        rows.append((frames, int(n)))
    assert len({";".join(f) for f, _ in rows}) == len(rows), (name, "a stack twice")
    return rows

rep = json.load(open(os.path.join(t, "report.json")))["devices"][0]
peak, peak_id = rep["peak_allocated_bytes"], rep["peak_allocated_event_id"]
lines = folded("peak")
assert sum(n for _, n in lines) == peak, (sum(n for _, n in lines), peak)
assert folded("peak_at") == lines

def live(event_id):
    """Each stack live at event_id: its bytes and its Python frames, outermost first."""
    out = []
    for stack, size in db.execute(
            "SELECT alloc_stack_id, sum(size) FROM allocations WHERE device = 0 AND kind = "
            "'device' AND alloc_id <= ?1 AND (free_event_id IS NULL OR free_event_id > ?1) "
            "GROUP BY alloc_stack_id", (event_id,)):
        py = [f"{f}:{l} {n}" for n, f, l in db.execute(
            "SELECT name, file, line FROM stack_frames WHERE stack_id = ? AND file LIKE '%.py' "
            "ORDER BY depth DESC", (stack,))]
        out.append((size, py))
    return out

def subsequence(small, big):
    it = iter(big)
    return all(x in it for x in small)

# each line is one stack's live bytes at the peak, its Python frames in order, outermost first
stacks = live(peak_id)
assert len(stacks) == len(lines), (len(stacks), len(lines))
unused = list(lines)
for size, py in stacks:
    match = [r for r in unused if r[1] == size and subsequence(py, r[0])]
    assert match, (size, py, unused)
    unused.remove(match[0])
for s in rep["top_stacks_at_peak"]:
    assert any(n == s["bytes"] and s["site"] in f for f, n in lines), s
assert all(f[0] == "train.py:131 <module>" for f, _ in lines if any(".py:" in x for x in f)), lines

# at step:3, the state at the end of step 3
end3 = db.execute("SELECT end_event_id FROM steps WHERE step = 3").fetchone()[0]
alloc3 = db.execute("SELECT allocated_bytes FROM timeline WHERE device = 0 AND event_id <= ? "
                    "ORDER BY event_id DESC LIMIT 1", (end3,)).fetchone()[0]
step3 = folded("step3")
assert sum(n for _, n in step3) == alloc3, (sum(n for _, n in step3), alloc3)
assert sorted(n for _, n in step3) == sorted(s for s, _ in live(end3)), step3

# leaks: the planted site, 256 KiB a step
leaks = folded("leaks")
assert [(f[-1], n) for f, n in leaks] == [("train.py:88 train_step", 262144)], leaks

# allocated: the bytes of every block allocated in the window
def allocated(lo, hi):
    return db.execute("SELECT coalesce(sum(size), 0) FROM allocations WHERE device = 0 AND kind = "
                      "'device' AND alloc_id > ? AND alloc_id <= ?", (lo, hi)).fetchone()[0]
last = db.execute("SELECT max(event_id) FROM events").fetchone()[0]
got = sum(n for _, n in folded("allocated"))
assert got == allocated(0, last), (got, allocated(0, last))
end5 = db.execute("SELECT end_event_id FROM steps WHERE step = 5").fetchone()[0]
got = sum(n for _, n in folded("allocated35"))
assert got == allocated(end3, end5) and got > 0, (got, allocated(end3, end5))

# a window's peak: report's for the same window
rep35 = json.load(open(os.path.join(t, "report35.json")))["devices"][0]
got = sum(n for _, n in folded("peak35"))
assert got == rep35["peak_allocated_bytes"], (got, rep35["peak_allocated_bytes"])

PY
# a frame with ';', a newline and spaces in it: one frame still, the line parseable
cp "$T/x.db" "$T/odd.db" || fail "copy"
python3 - "$T" <<'PY' || fail "the odd frames' database"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1] + "/odd.db")
db.execute("UPDATE frames SET name = 'load;batch\n  next ' WHERE name = 'load_batch'")
db.execute("UPDATE frames SET file = 'da ta.py' WHERE file = 'data.py'")
db.commit()
PY
"$MA" export "$T/odd.db" --to folded -o "$T/odd.folded" >/dev/null || fail "export odd: exit $?"
grep -qx 'train.py:131 <module>;train.py:120 main;train.py:79 train_step;da ta.py:47 load:batch next 32768' \
    "$T/odd.folded" || fail "a ';' and a newline in a frame: $(grep da "$T/odd.folded")"
[ "$(wc -l <"$T/odd.folded")" -eq "$(wc -l <"$T/peak.folded")" ] || fail "odd: a line more or less"

# --help: the formats there are
"$MA" export --help >"$T/help" || fail "export --help: exit $?"
grep -q "^  folded " "$T/help" && grep -q "^  pytorch " "$T/help" || fail "export --help"

# bad inputs: exit 2, one line, nothing left beside -o
mkdir -p "$T/bad/adir"
echo keep >"$T/bad/target"
ln -s target "$T/bad/alink"
echo old >"$T/bad/kept"
bad() { # bad WHAT PATTERN ARGS...: exit 2, one line matching PATTERN, the folder as it was
    local what=$1 pattern=$2
    shift 2
    local before
    before=$(ls -A "$T/bad" | tr '\n' ' ')
    "$MA" export "$@" >"$T/bad.out" 2>"$T/bad.err"
    local rc=$?
    [ "$rc" -eq 2 ] || fail "$what: exit $rc, not 2"
    [ "$(wc -l <"$T/bad.err")" -eq 1 ] && grep -q -e "$pattern" "$T/bad.err" ||
        fail "$what: $(cat "$T/bad.err")"
    [ "$(ls -A "$T/bad" | tr '\n' ' ')" = "$before" ] || fail "$what: left $(ls -A "$T/bad")"
    [ "$(cat "$T/bad/kept")" = old ] && [ "$(cat "$T/bad/target")" = keep ] ||
        fail "$what: a file changed"
}
bad "unknown --to" "unknown --to 'svg' (the formats: folded, pytorch, perfetto, chrome-json)" "$T/x.db" --to svg -o "$T/bad/o"
bad "no --to" "needs --to FORMAT" "$T/x.db" -o "$T/bad/o"
bad "no -o" "needs -o FILE" "$T/x.db" --to folded
bad "-o a directory" "is a directory" "$T/x.db" --to folded -o "$T/bad/adir"
bad "-o a link" "is a symbolic link" "$T/x.db" --to folded -o "$T/bad/alink"
bad "-o the input" "is the input" "$T/bad/kept" --to folded -o "$T/bad/kept"
bad "a missing input" "missing.zst" "$T/missing.zst" --to folded -o "$T/bad/o"
bad "a bad --what" "bad --what 'nope'" "$T/x.db" --to folded -o "$T/bad/o" --what nope
bad "no such step" "no such step" "$T/x.db" --to folded -o "$T/bad/kept" --what at:step:99
bad "no such device" "no device 5" "$T/x.db" --to folded -o "$T/bad/o" --device 5
bad "a window backwards" "--from is after --until" "$T/x.db" --to folded -o "$T/bad/o" --from step:5 --until step:2
bad "at: with a window" "one moment" "$T/x.db" --to folded -o "$T/bad/o" --what at:end --from step:2

# a regular file is replaced
"$MA" export "$T/x.db" --to folded -o "$T/bad/kept" >/dev/null || fail "replacing a file"
cmp -s "$T/bad/kept" "$T/peak.folded" || fail "the replaced file is not the export"

# a write that fails (the file size limit: as a full disk would): exit 1, one line, no file
mkdir -p "$T/full"
(
    trap '' XFSZ
    ulimit -f 1
    "$MA" export "$T/x.db" --to folded -o "$T/full/o" --what allocated >/dev/null 2>"$T/full.err"
)
rc=$?
[ "$rc" -eq 1 ] || fail "a failed write: exit $rc, not 1"
[ "$(wc -l <"$T/full.err")" -eq 1 ] && grep -q "write error" "$T/full.err" ||
    fail "a failed write: $(cat "$T/full.err")"
[ -z "$(ls -A "$T/full")" ] || fail "a failed write left $(ls -A "$T/full")"

# the real snapshots: each exports, its lines summing to its report's peak
if [ -n "$DATA" ] && ls "$DATA"/*.pickle >/dev/null 2>&1; then
    for p in "$DATA"/*.pickle; do
        b=$(basename "$p" .pickle)
        "$MA" export "$p" --to folded -o "$T/$b.folded" >/dev/null || fail "$b: exit $?"
        "$MA" report "$p" --json >"$T/$b.json" || fail "$b: report exit $?"
        python3 - "$T/$b.folded" "$T/$b.json" <<'PY' || fail "$b: the sum is not the peak"
import json, re, sys
total = 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    assert re.fullmatch(r"[^ ]+( [^ ]+)*", stack) and re.fullmatch(r"[0-9]+", n), line
    total += int(n)
devices = json.load(open(sys.argv[2]))["devices"]
peak = max((d["peak_allocated_bytes"] for d in devices), default=0)
assert total == peak, (sys.argv[1], total, peak)
PY
    done
else
    echo "$name: no snapshots in '$DATA': the real inputs not checked"
fi

if command -v flamegraph.pl >/dev/null; then
    flamegraph.pl "$T/peak.folded" >"$T/peak.svg" && grep -q "<svg" "$T/peak.svg" ||
        fail "flamegraph.pl"
else
    echo "$name: flamegraph.pl is not installed: not drawn"
fi
finish
