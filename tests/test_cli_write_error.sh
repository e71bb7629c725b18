#!/usr/bin/env bash
# test_cli_write_error.sh — output that cannot be written is an error (issue 28): every command
# whose output goes to a full disk (/dev/full: each write fails with ENOSPC) says
# "memanalyze CMD: write error: No space left on device" on stderr, one line, and exits 1 — not
# 0 with a cut file, as coreutils' close_stdout checks. A command's own error keeps its status.
# usage: test_cli_write_error.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_write_error
. "$(dirname "$0")/cli_lib.sh"

if ! [ -c /dev/full ]; then
    echo "$name: skipped: no /dev/full on this machine"
    exit 77
fi
"$SYNTH" -o "$T/run.zst" --steps 6 --leak 65536 --names 2>/dev/null || fail synth
"$MA" import "$T/run.zst" -o "$T/run.db" >/dev/null || fail import

check() { # check ARGS...: the command into /dev/full
    "$MA" "$@" >/dev/full 2>"$T/err"
    local rc=$?
    [ "$rc" -eq 1 ] || fail "$*: exit $rc into a full disk, not 1"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: not one line on stderr: $(cat "$T/err")"
    grep -qx "memanalyze $1: write error: No space left on device" "$T/err" ||
        fail "$*: said: $(cat "$T/err")"
    "$MA" "$@" >/dev/null 2>&1 || fail "$*: fails into /dev/null too"
}
check report "$T/run.db"
check report "$T/run.db" --json
check steps "$T/run.db"
check segments "$T/run.db" --json
check leaks "$T/run.db"
check tensors "$T/run.db"
check info "$T/run.zst"
check sql "$T/run.db" "SELECT * FROM allocations" --csv
check sql "$T/run.db" "SELECT * FROM allocations" --json
check report --help
# a command's own error keeps its status (2), whatever the disk
"$MA" steps "$T/missing.zst" >/dev/full 2>/dev/null
[ $? -eq 2 ] || fail "a missing input into a full disk: not exit 2"
finish
