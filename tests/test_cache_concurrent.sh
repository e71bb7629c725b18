#!/usr/bin/env bash
# test_cache_concurrent.sh SYNTH MEMANALYZE — `sql` queries on allocations.category started at
# once on one cached database (each one's first use adds every block's category to it,
# analyzer/input/input.c, query/category_store.c): each one waits for the one adding them and
# answers right; none answers NULL (issue 28: one was right, the others printed NULL for every
# block and exited 0 after "database is locked"). A few rounds, each from a cache without the
# categories; the queries of a round start together and overlap on any machine, as the sweep
# takes far longer than starting a process.
set -u
SYNTH=${1:?SYNTH} MA=${2:?MEMANALYZE}
name=test_cache_concurrent
. "$(dirname "$0")/cli_lib.sh"
N=6
q="SELECT count(*) || ' ' || count(category) FROM allocations"

"$SYNTH" -o "$T/t.zst" --steps 400 --seed 9 2>/dev/null || fail "synth"
want=$(GMT_CACHE_DIR=$T/ref "$MA" sql "$T/t.zst" --csv "$q" | tail -1)
case "$want" in "0 0" | *" 0" | "") fail "the reference answer is '$want'" ;; esac
read -r blocks categorized <<<"$want"
[ "$blocks" = "$categorized" ] || fail "the reference has blocks without a category: $want"

for round in 1 2 3; do
    rm -rf "$GMT_CACHE_DIR"
    "$MA" report "$T/t.zst" >/dev/null || fail "report to fill the cache"
    pids=()
    for i in $(seq $N); do
        "$MA" sql "$T/t.zst" --csv "$q" >"$T/out.$i" 2>"$T/err.$i" &
        pids+=($!)
    done
    for i in $(seq $N); do
        wait "${pids[$((i - 1))]}"
        rc=$?
        got=$(tail -1 "$T/out.$i")
        [ $rc -eq 0 ] || fail "round $round, query $i: exit $rc ($(head -c 300 "$T/err.$i"))"
        [ "$got" = "$want" ] || fail "round $round, query $i: '$got', want '$want' ($(head -c 200 "$T/err.$i"))"
        [ -s "$T/err.$i" ] && fail "round $round, query $i: said $(head -c 300 "$T/err.$i")"
    done
    [ -z "$(ls -A "$GMT_CACHE_DIR" | grep -v '\.db$')" ] ||
        fail "round $round: left in the cache: $(ls -A "$GMT_CACHE_DIR" | tr '\n' ' ')"
    # and now it is there for good: a query after them answers at once, without writing
    "$MA" sql "$T/t.zst" --csv "$q" >"$T/out" 2>"$T/err" || fail "round $round: a query after"
    [ "$(tail -1 "$T/out")" = "$want" ] || fail "round $round: a query after answers $(tail -1 "$T/out")"
done

finish
