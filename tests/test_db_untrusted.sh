#!/usr/bin/env bash
# test_db_untrusted.sh — a database the user gives is untrusted input (issue 28): one that
# memanalyze did not make, word for word, in the views that run its queries, is refused with one
# line and exit 2 before anything reads it: a view named like ours with an endless recursive
# query (it hung `report` for ever), a trigger, a virtual table of another module. The database
# itself is never written. One memanalyze made still reads.
# usage: test_db_untrusted.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_db_untrusted
. "$(dirname "$0")/cli_lib.sh"

"$SYNTH" -o "$T/run.zst" --steps 4 2>/dev/null || fail synth
"$MA" import "$T/run.zst" -o "$T/run.db" >/dev/null || fail import
"$MA" report "$T/run.db" >/dev/null || fail "our own database: report exit $?"

plant() { # plant NAME SQL: a copy of run.db with SQL run on it
    cp "$T/run.db" "$T/$1.db"
    python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.executescript(sys.argv[2])
db.commit()' "$T/$1.db" "$2" || fail "$1: planting"
}
refused() { # refused NAME WHAT ARGS...: the command on NAME.db exits 2, one line naming WHAT
    local db=$1 what=$2
    shift 2
    local sum
    sum=$(md5sum <"$T/$db.db")
    timeout 60 "$MA" "$@" "$T/$db.db" >"$T/out" 2>"$T/err"
    local rc=$?
    [ "$rc" -eq 2 ] || fail "$db: $* exit $rc, want 2 (124: it hung)"
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "not a database this memanalyze made: its $what" "$T/err" ||
        fail "$db: $*: said: $(cat "$T/err")"
    [ "$(md5sum <"$T/$db.db")" = "$sum" ] || fail "$db: $*: the database was written"
}

plant endless "DROP VIEW allocations; CREATE VIEW allocations AS
  WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS alloc_id FROM c;"
refused endless "view 'allocations'" report
refused endless "view 'allocations'" leaks
plant trigger "CREATE TRIGGER t AFTER INSERT ON meta BEGIN DELETE FROM meta; END;"
refused trigger "trigger 't'" report
plant vtab "CREATE VIRTUAL TABLE notes USING fts4(body);"
refused vtab "virtual table 'notes'" steps
# sql takes its SQL after the input: refused the same way
timeout 60 "$MA" sql "$T/endless.db" "SELECT 1" >/dev/null 2>"$T/err"
[ $? -eq 2 ] || fail "sql on a planted database: not refused"
# a table of one's own, no view or trigger: still ours to read
plant extra "CREATE TABLE my_notes (x); INSERT INTO my_notes VALUES (1);"
"$MA" report "$T/extra.db" >/dev/null || fail "a database with a table added: report exit $?"
finish
