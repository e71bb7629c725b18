#!/usr/bin/env bash
# test_cli_info.sh — `synth` and `memanalyze info` end to end, as a user runs
# them: known counts, damage warnings, one-line errors with exit status 2,
# determinism by seed, and `zstd -t` on what the writer made.
# usage: test_cli_info.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_info
. "$(dirname "$0")/cli_lib.sh"
expect_grep() { grep -qF -- "$2" "$1" || { fail "$3: '$2' not in output:"; cat "$1" >&2; }; }

# A known trace: 20 steps, a leak.
"$SYNTH" -o "$T/a.zst" --steps 20 --leak 1M --seed 7 2>"$T/synth.err" || fail "synth failed"
events=$(sed -n 's/.*: \([0-9]*\) events,.*/\1/p' "$T/synth.err")
[ -n "$events" ] || fail "synth did not report its event count"
"$MA" info "$T/a.zst" >"$T/info.out" 2>"$T/info.err"; rc=$?
[ $rc -eq 0 ] || fail "info exit $rc"
expect_grep "$T/info.out" "steps: 20 (step 0 .. step 19)" "steps"
expect_grep "$T/info.out" "end: clean shutdown, $events events written, 0 dropped" "end record"
expect_grep "$T/info.out" "  event    $events" "event count"
expect_grep "$T/info.out" "device 0 (Simulated GPU, 80.0 GiB)" "device"
grep -q "^warning" "$T/info.out" && fail "warnings on an intact trace"

# Deterministic by seed; a different seed gives a different trace.
"$SYNTH" -o "$T/b.zst" --steps 20 --leak 1M --seed 7 2>/dev/null
cmp -s "$T/a.zst" "$T/b.zst" || fail "same seed, different bytes"
"$SYNTH" -o "$T/c.zst" --steps 20 --leak 1M --seed 8 2>/dev/null
cmp -s "$T/a.zst" "$T/c.zst" && fail "different seeds, same bytes"

if command -v zstd >/dev/null; then
  zstd -q -t "$T/a.zst" || fail "zstd -t rejects the trace"
  # the version check: a well-formed header of a future version
  printf 'GPUMEMTR\003\000\001\000\000\000' | zstd -q -c >"$T/v3.zst"
  "$MA" info "$T/v3.zst" >/dev/null 2>"$T/v3.err"; rc=$?
  [ $rc -eq 2 ] || fail "newer version: exit $rc, want 2"
  expect_grep "$T/v3.err" "version 3" "newer version message"

  # The calls a recorder counted instead of recording (TRACE_FORMAT.md's END record, version
  # 2): one line each, with the bytes they named. The bytes as the format spells them: header,
  # chunk (a time column of one ts, 6000), END (0 events, 5 dropped, clean | calls follow).
  python3 - "$T/counted.bin" "$T/v1.bin" <<'PY'
import sys
def varint(v):
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
def text(s):
    return varint(len(s)) + s.encode()
def trace(version, end):
    ts = varint(6000 * 2)  # zigzag
    return b"GPUMEMTR" + bytes([version, 0, 0x01, 0, 0]) + varint(len(ts)) + ts + b"\x0c" + end
calls = [(638, "cuGraphAddMemAllocNode", 3, 12 << 20), (567, "cuIpcOpenMemHandle_v2", 2, 0),
         (639, "cuGraphAddMemFreeNode", 1, 4096)]
end = bytes([0, 5, 1 | 2]) + varint(len(calls))
for cbid, name, n, nbytes in calls:
    end += varint(cbid) + text(name) + varint(n) + varint(nbytes)
open(sys.argv[1], "wb").write(trace(2, end))
open(sys.argv[2], "wb").write(trace(1, bytes([0, 5, 1])))  # a version 1 recorder's END
PY
  zstd -q -c "$T/counted.bin" >"$T/counted.zst" && zstd -q -c "$T/v1.bin" >"$T/v1.zst"
  "$MA" info "$T/counted.zst" >"$T/counted.out" 2>&1; rc=$?
  [ $rc -eq 0 ] || fail "counted calls: exit $rc"
  [ "$(grep '^not recorded' "$T/counted.out")" = "not recorded: cuGraphAddMemAllocNode 3 calls, 12.0 MiB
not recorded: cuIpcOpenMemHandle_v2 2 calls
not recorded: cuGraphAddMemFreeNode 1 call, 4.00 KiB" ] || {
    fail "counted calls: the 'not recorded' lines"; cat "$T/counted.out" >&2; }
  expect_grep "$T/counted.out" "format v2" "counted calls: version"
  expect_grep "$T/counted.out" "end: clean shutdown, 0 events written, 5 dropped" "counted: end"
  grep -q "^warning" "$T/counted.out" && fail "counted calls: warnings"
  # a version 1 trace reads as before: no counts
  "$MA" info "$T/v1.zst" >"$T/v1.out" 2>&1; rc=$?
  [ $rc -eq 0 ] || fail "version 1 trace: exit $rc"
  expect_grep "$T/v1.out" "format v1" "version 1 trace: version"
  expect_grep "$T/v1.out" "end: clean shutdown, 0 events written, 5 dropped" "version 1: end"
  grep -q "^not recorded\|^warning" "$T/v1.out" && fail "version 1 trace: counts or warnings"
  # the replay keeps them: the unrecorded_calls table
  "$MA" sql "$T/counted.zst" --csv \
    "SELECT call_id, name, calls, bytes FROM unrecorded_calls ORDER BY call_id" \
    >"$T/counted.csv" 2>"$T/counted.err" || fail "sql on the counted calls"
  [ "$(tr -d '\r' <"$T/counted.csv")" = "call_id,name,calls,bytes
567,cuIpcOpenMemHandle_v2,2,0
638,cuGraphAddMemAllocNode,3,12582912
639,cuGraphAddMemFreeNode,1,4096" ] || {
    fail "unrecorded_calls rows"; cat "$T/counted.csv" "$T/counted.err" >&2; }
  "$MA" sql "$T/v1.zst" --csv "SELECT count(*) AS n FROM unrecorded_calls" \
    >"$T/v1.csv" 2>&1
  [ "$(tr -d '\r' <"$T/v1.csv")" = "n
0" ] || { fail "version 1: unrecorded_calls"; cat "$T/v1.csv" >&2; }
fi

# A multi-frame trace cut in the middle: a prefix and the warning.
"$SYNTH" -o "$T/m.zst" --events 20000 --chunk-bytes 8192 2>/dev/null
size=$(stat -c %s "$T/m.zst")
head -c $((size / 2)) "$T/m.zst" >"$T/cut.zst"
"$MA" info "$T/cut.zst" >"$T/cut.out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "truncated trace: exit $rc, want 0"
expect_grep "$T/cut.out" "warning: truncated after" "truncation warning"
expect_grep "$T/cut.out" "end: no end record" "missing end record"

# A recording killed between two frames: whole frames, no end record. info says so, and so do
# report's header and JSON (issue 28: it read as complete). The last frame, which holds the end
# record, is cut off at its zstd magic.
python3 - "$T/m.zst" "$T/killed.zst" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d[:d.rfind(b"\x28\xb5\x2f\xfd")])
PY
"$MA" info "$T/killed.zst" >"$T/killed.out" 2>&1 || fail "killed trace: info exit $?"
expect_grep "$T/killed.out" "end: no end record" "killed: no end record"
"$MA" report "$T/killed.zst" >"$T/killed.txt" 2>&1 || fail "killed trace: report exit $?"
expect_grep "$T/killed.txt" "the recording did not end (no end record" "killed: report's header"
"$MA" report "$T/killed.zst" --json | python3 -c '
import json, sys
run = json.load(sys.stdin)["run"]
assert run["ended"] is False and run["truncated"] is False, run' || fail "killed: report --json"
"$MA" report "$T/m.zst" --json | python3 -c '
import json, sys
assert json.load(sys.stdin)["run"]["ended"] is True' || fail "whole trace: ended"
"$MA" report "$T/m.zst" | grep -q "did not end" && fail "whole trace: said it did not end"

# One corrupted byte in the middle: the frame's offset, and the rest read.
cp "$T/m.zst" "$T/bad.zst"
printf '\377\377\377\377' | dd of="$T/bad.zst" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
"$MA" info "$T/bad.zst" >"$T/bad.out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "corrupt trace: exit $rc, want 0"
expect_grep "$T/bad.out" "warning: corrupt data at byte offset" "corruption warning"
expect_grep "$T/bad.out" "end: clean shutdown" "frames after the damage are read"
grep -q "^lost: [1-9]" "$T/bad.out" || fail "lost events not counted"

# Bad inputs: one line on stderr, exit 2.
check_error() { # file, expected text
  "$MA" info "$1" >"$T/e.out" 2>"$T/e.err"; rc=$?
  [ $rc -eq 2 ] || fail "$1: exit $rc, want 2"
  [ "$(wc -l <"$T/e.err")" -eq 1 ] || fail "$1: error is not one line"
  expect_grep "$T/e.err" "$2" "$1 error"
}
: >"$T/empty"
check_error "$T/empty" "is empty"
echo "hello" >"$T/text"
check_error "$T/text" "not a gpumemtrace trace"
check_error "$T/missing.zst" "cannot open"

"$MA" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments: want exit 2"
"$MA" frobnicate x >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown command: want exit 2"
"$MA" --help | grep -q "info" || fail "--help lists info"
"$MA" info --help | grep -q "usage: memanalyze info" || fail "info --help"
"$SYNTH" -o "$T/x.zst" --layers nope >/dev/null 2>&1; [ $? -eq 2 ] || fail "synth bad number"
"$SYNTH" -o /nonexistent/dir/x.zst >/dev/null 2>"$T/s.err"; [ $? -eq 2 ] || fail "synth bad path"
expect_grep "$T/s.err" "cannot create" "synth bad path message"

# info reads traces; a snapshot is named for what it is, with the command that reads it
python3 -c 'import pickle,sys; pickle.dump({"segments": [], "device_traces": [[]]},
  open(sys.argv[1], "wb"), protocol=2)' "$T/snap.pickle"
"$MA" info "$T/snap.pickle" >/dev/null 2>"$T/p.err"; [ $? -eq 2 ] || fail "info of a snapshot: exit"
[ "$(wc -l <"$T/p.err")" -eq 1 ] || fail "info of a snapshot: not one line"
expect_grep "$T/p.err" "is a PyTorch memory snapshot: \`memanalyze report" "info of a snapshot"

finish
