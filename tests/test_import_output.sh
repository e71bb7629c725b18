#!/usr/bin/env bash
# test_import_output.sh SYNTH MEMANALYZE — what `import -o PATH` may replace (issue 28): a
# regular file or nothing. A symbolic link (dangling or not), a FIFO, a directory, a device node
# (as root) or the input itself is refused with a one-line error (exit 2) and left as it was, and
# nothing is written beside it. An import killed at each point of its build (GMT_TEST_KILL_AT)
# leaves temporaries beside PATH; the next import to PATH removes those of dead processes and
# nothing else (a live process's, another output's).
set -u
SYNTH=${1:?SYNTH} MA=${2:?MEMANALYZE}
name=test_import_output
. "$(dirname "$0")/cli_lib.sh"
"$SYNTH" -o "$T/t.zst" --steps 4 --seed 2 2>/dev/null || fail "synth"
sum=$(cksum <"$T/t.zst")
mkdir "$T/out"

# refused WHAT PATH: import -o PATH fails in one line and writes nothing in its folder
refused() {
    local before after
    before=$(ls -lA --time-style=+%s.%N "$(dirname "$2")")
    "$MA" import "$T/t.zst" -o "$2" >"$T/stdout" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "-o $1: exit $rc, not 2"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "-o $1: not a one-line error: $(cat "$T/err")"
    [ -s "$T/stdout" ] && fail "-o $1: printed $(cat "$T/stdout")"
    after=$(ls -lA --time-style=+%s.%N "$(dirname "$2")")
    [ "$before" = "$after" ] || fail "-o $1: its folder changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
}

echo keep >"$T/target"
ln -s "$T/target" "$T/out/link"
refused "a symbolic link" "$T/out/link"
[ -L "$T/out/link" ] || fail "the symbolic link was replaced"
[ "$(cat "$T/target")" = keep ] || fail "the link's target was written"
ln -s "$T/nowhere" "$T/out/dangling"
refused "a dangling symbolic link" "$T/out/dangling"
[ -e "$T/nowhere" ] && fail "the dangling link's target was created"
mkfifo "$T/out/fifo"
refused "a FIFO" "$T/out/fifo"
[ -p "$T/out/fifo" ] || fail "the FIFO was replaced"
mkdir "$T/out/dir"
refused "a directory" "$T/out/dir"
[ -d "$T/out/dir" ] || fail "the directory was replaced"
if [ "$(id -u)" -eq 0 ]; then
    mknod "$T/out/full" c 1 7 # /dev/full's numbers, in the test's folder
    refused "a device node" "$T/out/full"
    [ -c "$T/out/full" ] || fail "the device node was replaced"
fi
cp "$T/t.zst" "$T/out/input.zst"
"$MA" import "$T/out/input.zst" -o "$T/out/input.zst" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "-o the input: not refused"
[ "$(cksum <"$T/out/input.zst")" = "$sum" ] || fail "-o the input: the input was replaced"
ln "$T/out/input.zst" "$T/out/hard-link.zst"
"$MA" import "$T/out/input.zst" -o "$T/out/hard-link.zst" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "-o a hard link to the input: not refused"
[ "$(cksum <"$T/out/input.zst")" = "$sum" ] || fail "-o a hard link to the input: it was replaced"

# what it may replace: nothing, or a regular file
"$MA" import "$T/t.zst" -o "$T/out/new.db" >/dev/null || fail "-o a new file"
echo old >"$T/out/old.db"
"$MA" import "$T/t.zst" -o "$T/out/old.db" >/dev/null || fail "-o a regular file"
[ "$(head -c 15 "$T/out/old.db")" = "SQLite format 3" ] || fail "-o a regular file: not replaced"

# killed imports, then one that finishes: no temporaries of dead processes left beside PATH
dead=$(($(cat /proc/sys/kernel/pid_max) + 1)) # never a process's
sleep 60 >/dev/null 2>&1 &
live=$!
: >"$T/out/new.db.tmp-$live"
: >"$T/out/other.db.tmp-$dead"
for point in build categories rename; do # each import removes what the one before left
    GMT_TEST_KILL_AT=$point "$MA" import "$T/t.zst" -o "$T/out/new.db" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 137 ] || fail "import with GMT_TEST_KILL_AT=$point: exit $rc, not killed (137)"
    n=$(ls "$T/out" | grep -c "^new\.db\.tmp-")
    [ "$point" = build ] && ! ls "$T/out" | grep -q "^new\.db\.tmp-[0-9]*\.staging$" &&
        fail "killed at build: no staging database left"
    [ "$n" -ge 2 ] || fail "killed at $point: nothing left beside -o (no test)"
    [ "$n" -le 3 ] || fail "killed at $point: earlier temporaries left: $(ls "$T/out" | tr '\n' ' ')"
done
"$MA" import "$T/t.zst" -o "$T/out/new.db" >/dev/null || fail "import after the killed ones"
left=$(cd "$T/out" && ls -A | grep '\.tmp-' | sort | tr '\n' ' ')
[ "$left" = "new.db.tmp-$live other.db.tmp-$dead " ] || fail "beside -o: '$left'"
got=$("$MA" sql "$T/out/new.db" --csv "SELECT count(*) FROM event_rows" 2>&1 | tail -1)
want=$("$MA" sql "$T/out/old.db" --csv "SELECT count(*) FROM event_rows" 2>&1 | tail -1)
[ "$got" = "$want" ] && [ "$got" -gt 0 ] 2>/dev/null || fail "the import after: $got events, want $want"
kill "$live"
wait 2>/dev/null

finish
