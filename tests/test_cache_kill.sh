#!/usr/bin/env bash
# test_cache_kill.sh SYNTH MEMANALYZE — a command killed while it builds or changes the database
# cache (analyzer/input/input.c) takes nothing down with it (issue 28):
#   - killed at each point of a build (GMT_TEST_KILL_AT: the rows loaded, the categories written,
#     the file complete under its temporary name), and while `sql` adds every block's category to
#     a cached database: the next command answers as on a cache never killed, and once it has run
#     the cache folder holds databases only, no temporaries of the dead processes;
#   - on a full disk meanwhile, sql fails in one line (exit 2) and the cache stays as it was;
#   - a cached database that fails its checks (a hot journal beside it that SQLite cannot roll
#     back read-only, a truncated or foreign file, a symbolic link) is built again, saying so in
#     one line on stderr;
#   - temporaries that are not a dead process's are left alone: a live process's (its pid
#     alive), one a process holds locked (another pid namespace, another host), another user's.
set -u
SYNTH=${1:?SYNTH} MA=${2:?MEMANALYZE}
name=test_cache_kill
. "$(dirname "$0")/cli_lib.sh"
q="SELECT category, count(*), sum(size) FROM allocations GROUP BY category ORDER BY category"
others() { ls -A "$GMT_CACHE_DIR" | grep -v '\.db$'; }

# t: small; big: enough block categories that SQLite's cache spills them into the file before
# the commit (with a journal in place, that made the hot journal of issue 28)
"$SYNTH" -o "$T/t.zst" --steps 30 --seed 5 2>/dev/null || fail "synth"
"$SYNTH" -o "$T/big.zst" --steps 600 --seed 6 2>/dev/null || fail "synth (big)"
for in in t big; do
    GMT_CACHE_DIR=$T/ref "$MA" sql "$T/$in.zst" "$q" >"$T/$in.want" || fail "sql $in on a fresh cache"
    grep -q activation "$T/$in.want" || fail "no categories in the reference: $(cat "$T/$in.want")"
    GMT_CACHE_DIR=$T/ref "$MA" report "$T/$in.zst" >"$T/$in.want_report" || fail "report $in"
done

# answers DESCRIPTION [INPUT]: the next commands answer as on a fresh cache, and leave no
# temporaries
answers() {
    local in=${2:-t}
    "$MA" sql "$T/$in.zst" "$q" >"$T/got" 2>"$T/err" || fail "$1: sql then: exit $? ($(head -c 300 "$T/err"))"
    cmp -s "$T/got" "$T/$in.want" || fail "$1: sql then answers $(head -c 300 "$T/got")"
    "$MA" report "$T/$in.zst" >"$T/got" 2>"$T/err" || fail "$1: report then: exit $? ($(head -c 300 "$T/err"))"
    cmp -s "$T/got" "$T/$in.want_report" || fail "$1: report then differs"
    [ -z "$(others)" ] || fail "$1: left in the cache: $(others | tr '\n' ' ')"
}

# Killed during a build (through sql, whose categories a build then writes too), at each point.
for point in build categories rename; do
    export GMT_CACHE_DIR=$T/cache-$point
    GMT_TEST_KILL_AT=$point "$MA" sql "$T/t.zst" "$q" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 137 ] || fail "GMT_TEST_KILL_AT=$point: exit $rc, not killed (137)"
    [ -n "$(others)" ] || fail "GMT_TEST_KILL_AT=$point: the kill left nothing to clean up"
    answers "killed at $point of a build"
done

# Killed while sql adds every block's category to a database already cached: the cache stays as
# it was (no hot journal a read-only open cannot roll back), again and again.
export GMT_CACHE_DIR=$T/cache-sql
"$MA" report "$T/big.zst" >/dev/null || fail "report to fill the cache"
for i in 1 2; do
    GMT_TEST_KILL_AT=categories "$MA" sql "$T/big.zst" "$q" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 137 ] || fail "sql with GMT_TEST_KILL_AT=categories ($i): exit $rc, not killed"
    "$MA" report "$T/big.zst" >"$T/got" 2>"$T/err" || fail "report after a killed sql ($i): $(cat "$T/err")"
done
# A full disk meanwhile: writes past RLIMIT_FSIZE fail (EFBIG, SIGXFSZ ignored) as they would on
# a full disk, at a size chosen: room for a copy of the database but not for the categories,
# then not even for the copy. A one-line error (exit 2), never NULL for every block; the cache
# as it was, nothing left; with room again, the right answer (answers).
kb=$(($(stat -c %s "$(ls "$GMT_CACHE_DIR"/*.db)") / 1024))
for limit in $((kb + 64)) $((kb / 2)); do
    (
        trap '' XFSZ
        ulimit -f $limit
        exec "$MA" sql "$T/big.zst" "$q"
    ) >"$T/got" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "sql on a full disk ($limit KiB a file): exit $rc, not 2 ($(head -c 300 "$T/got"))"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "sql on a full disk: not one line: $(cat "$T/err")"
    [ -z "$(others)" ] || fail "sql on a full disk: left in the cache: $(others | tr '\n' ' ')"
done
answers "sql killed while it adds the categories, then on a full disk" big
rm "$GMT_CACHE_DIR"/*

# A cached database that fails its checks is built again, with one line on stderr.
"$MA" sql "$T/t.zst" "$q" >/dev/null || fail "sql to fill the cache"
db=$(ls "$GMT_CACHE_DIR"/*.db)
damage() { # DESCRIPTION: the database damaged, then the next commands
    "$MA" sql "$T/t.zst" "$q" >"$T/got" 2>"$T/err" || fail "$1: exit $? ($(head -c 300 "$T/err"))"
    cmp -s "$T/got" "$T/t.want" || fail "$1: answers $(head -c 300 "$T/got")"
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "building it again" "$T/err" ||
        fail "$1: not one line saying it builds the database again: $(cat "$T/err")"
    answers "$1"
}
printf 'not a journal' >"$db-journal"
damage "a hot journal beside the cached database"
head -c 8192 "$db" >"$T/head" && cat "$T/head" >"$db"
damage "a truncated cached database"
echo "hello" >"$db"
damage "a cached database that is not one"
rm -f "$db" && ln -s "$T/t.zst" "$db"
damage "a cached database that is a symbolic link"
[ -L "$db" ] && fail "the symbolic link is still there"

# Temporaries that are not a dead process's stay: a live pid's, a locked one's, another user's.
# A pid above pid_max is never a process's.
dead=$(($(cat /proc/sys/kernel/pid_max) + 1))
sleep 60 >/dev/null 2>&1 &
live=$!
base=$(basename "$db")
: >"$GMT_CACHE_DIR/$base.tmp-$live"
: >"$GMT_CACHE_DIR/$base.tmp-$dead"
: >"$GMT_CACHE_DIR/$base.tmp-$dead.staging"
: >"$GMT_CACHE_DIR/other.zst-0123456789abcdef.db.tmp-$dead-journal"
: >"$GMT_CACHE_DIR/notes.tmp-$dead.txt" # not a name of ours
locked=
if command -v flock >/dev/null; then # this shell holds it locked (fd 9), as a live builder
    locked="$GMT_CACHE_DIR/locked.zst-0123456789abcdef.db.tmp-$dead"
    : >"$locked" && exec 9<"$locked" && flock -n 9 || fail "flock"
fi
foreign=
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
    foreign="$GMT_CACHE_DIR/foreign.zst-0123456789abcdef.db.tmp-$dead"
    : >"$foreign" && chown nobody "$foreign"
fi
rm -f "$db" # the next command builds, and cleans up first
"$MA" report "$T/t.zst" >/dev/null 2>"$T/err" || fail "report with temporaries about: $(cat "$T/err")"
left=$(others | sort | tr '\n' ' ')
want_left=$({
    echo "$base.tmp-$live"
    echo "notes.tmp-$dead.txt"
    [ -n "$locked" ] && echo "locked.zst-0123456789abcdef.db.tmp-$dead"
    [ -n "$foreign" ] && echo "foreign.zst-0123456789abcdef.db.tmp-$dead"
} | sort | tr '\n' ' ')
[ "$left" = "$want_left" ] || fail "temporaries left: '$left', want '$want_left'"
exec 9<&-
kill "$live"
wait 2>/dev/null

finish
