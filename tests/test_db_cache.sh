#!/usr/bin/env bash
# test_db_cache.sh SYNTH MEMANALYZE BUILT_KEY_HEADER — the database cache (analyzer/input/input.c):
# the database of a trace is built once and then reused as it is (same file, same inode, same
# modification time: not rebuilt) while nothing changed; it carries the build's cache key in
# meta.analyzer_version; a changed input or another step rule gets a database of its own; a
# database given as input is used in place.
set -u
SYNTH=${1:?SYNTH} MA=${2:?MEMANALYZE} header=${3:?BUILT_KEY_HEADER}
name=test_db_cache
. "$(dirname "$0")/cli_lib.sh"
dbs() { ls "$GMT_CACHE_DIR" | grep '\.db$'; }
identity() { stat -c '%i %y' "$GMT_CACHE_DIR/$1"; }

key=$(sed -n 's/^#define GMT_REPLAY_KEY "\(.*\)"$/\1/p' "$header")
[ -n "$key" ] || fail "no key in $header"
"$SYNTH" -o "$T/t.zst" --steps 4 --seed 3 2>/dev/null || fail "synth"

"$MA" report "$T/t.zst" >/dev/null || fail "report (first)"
[ "$(dbs | wc -l)" -eq 1 ] || fail "first use: $(dbs | wc -l) databases in the cache, not 1"
db=$(dbs | head -1)
case "$db" in t.zst-????????????????.db) ;; *) fail "cache file name $db" ;; esac
before=$(identity "$db")
sleep 0.05
"$MA" leaks "$T/t.zst" >/dev/null || fail "leaks (second use)"
"$MA" report "$T/t.zst" >/dev/null || fail "report (third use)"
[ "$(dbs)" = "$db" ] || fail "unchanged input: the cache now holds $(dbs | tr '\n' ' ')"
[ "$(identity "$db")" = "$before" ] || fail "unchanged input: the database was rebuilt"

got=$("$MA" sql "$T/t.zst" --csv "SELECT value FROM meta WHERE key = 'analyzer_version'" | tail -1)
[ "$got" = "$key" ] || fail "meta analyzer_version is '$got', the build's key is '$key'"

# The database itself as input: used in place, nothing new in the cache.
"$MA" report "$GMT_CACHE_DIR/$db" >/dev/null || fail "report on the cached database"
[ "$(dbs | wc -l)" -eq 1 ] || fail "a database input made a cache entry"

# Another step rule, then a changed input: a database each, the first one untouched.
"$MA" report "$T/t.zst" --step-rule phase >/dev/null || fail "report --step-rule phase"
[ "$(dbs | wc -l)" -eq 2 ] || fail "another step rule reused the database"
touch -d '2001-02-03 04:05:06' "$T/t.zst"
"$MA" report "$T/t.zst" >/dev/null || fail "report after touch"
[ "$(dbs | wc -l)" -eq 3 ] || fail "a changed input reused the database"
[ "$(identity "$db")" = "$before" ] || fail "the first database changed"
ls "$GMT_CACHE_DIR" | grep -v '\.db$' | grep -q . && fail "left in the cache: $(ls "$GMT_CACHE_DIR")"

# Rewritten with the same size and its mtime restored (issue 28: the key was path, size and
# mtime, and the old database answered for the new content): another run of the same length in
# its place, the times put back; the answer is the new run's.
"$SYNTH" -o "$T/a.zst" --steps 6 --leak 0 --seed 11 2>/dev/null || fail synth
"$SYNTH" -o "$T/b.zst" --steps 6 --leak 0 --seed 11 --host other-host 2>/dev/null || fail synth
python3 - "$T/a.zst" "$T/b.zst" <<'PY' || fail "two traces of one size"
import os, sys
a, b = sys.argv[1:]
n = max(os.path.getsize(a), os.path.getsize(b))
for f in (a, b):  # zero bytes after the last frame: the reader skips them, the size is one
    with open(f, "ab") as out:
        out.write(b"\0" * (n - os.path.getsize(f)))
PY
host() { "$MA" sql "$1" --csv "SELECT value FROM meta WHERE key = 'host'" | tail -1; }
[ "$(host "$T/a.zst")" = synth-host ] || fail "the first run's host"
cp --attributes-only --preserve=timestamps "$T/a.zst" "$T/stamp" 2>/dev/null || touch -r "$T/a.zst" "$T/stamp"
cat "$T/b.zst" >"$T/a.zst"
touch -r "$T/stamp" "$T/a.zst"
[ "$(host "$T/a.zst")" = other-host ] || fail "same size and mtime: the old database answered"

finish
