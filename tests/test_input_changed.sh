#!/usr/bin/env bash
# test_input_changed.sh — an input that changes while memanalyze reads it is refused (issue 28):
# the replay reads a trace twice, and a file rewritten (or still being recorded) between the
# passes gave a silent mix of two. The command stops after the replay (GMT_TEST_KILL_AT
# replayed:stop), the trace is appended to, the command goes on: exit 2, one line, no database
# kept; run again once the file is still, it is read whole.
# usage: test_input_changed.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_input_changed
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" -o "$T/run.zst" --steps 4 2>/dev/null || fail synth
GMT_TEST_KILL_AT=replayed:stop "$MA" report "$T/run.zst" >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 600); do # until it stops (bounded: 60 s)
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
    [ "$state" = T ] && break
    sleep 0.1
done
[ "$state" = T ] || fail "memanalyze did not stop after its replay (state ${state:-gone})"
printf '\0\0\0\0' >>"$T/run.zst" # what a recording still running does: it grows
kill -CONT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 2 ] || fail "a trace changed while read: exit $rc, want 2"
[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "changed while it was read" "$T/err" ||
    fail "said: $(cat "$T/err")"
ls "$GMT_CACHE_DIR"/*.db >/dev/null 2>&1 && fail "a database was kept: $(ls "$GMT_CACHE_DIR")"
"$MA" report "$T/run.zst" >/dev/null || fail "once still, the trace does not read: exit $?"
finish
