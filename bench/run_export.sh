#!/usr/bin/env bash
# run_export.sh — what `memanalyze export` costs (issue 30): a big synth trace, its database
# built first (`memanalyze sql`; `info` reads the trace itself) with every block's category
# (block_categories, which the first pytorch/perfetto/chrome-json export adds: timed apart),
# then `export --to FORMAT` timed
# for each FORMAT given (default: pytorch folded): wall time, peak RSS (/usr/bin/time -v), output
# bytes and bytes per event. For
# pytorch, CPython's baseline on a smaller trace (one Python can hold in memory): our export of
# it timed the same way, then bench_export_pickle.py reads that pickle back with a restricted
# Unpickler (untimed) and times pickle.dump(obj, f, protocol=4) of the same structure to a file
# (flushed and fsynced, as export's file is).
# usage: bench/run_export.sh [FORMAT...]
#   EVENTS (default 10000000): the big trace; BASE_EVENTS (default 1000000): the baseline's;
#   ROUNDS (default 2); BUILD (default build/). Figures: bench/README.md, "Export".
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
MA=$BUILD/analyzer/memanalyze SYNTH=$BUILD/samples/synth/synth
EVENTS=${EVENTS:-10000000} BASE_EVENTS=${BASE_EVENTS:-1000000} ROUNDS=${ROUNDS:-2}
[ $# -gt 0 ] || set -- pytorch folded
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GMT_CACHE_DIR=$T/cache

# measure NAME CMD...: one line, wall seconds, peak RSS (MiB)
measure() {
    local what=$1
    shift
    /usr/bin/time -v "$@" >/dev/null 2>"$T/time.txt" || { cat "$T/time.txt" >&2; exit 1; }
    local wall rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
        for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$T/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$T/time.txt")
    echo "$what: ${wall} s, ${rss} MiB peak RSS"
}

ext_of() {
    case $1 in
    pytorch) echo pickle ;;
    perfetto) echo pftrace ;;
    chrome-json) echo json ;;
    *) echo "$1" ;;
    esac
}

# trace NAME EVENTS: the trace and its database, once
trace() {
    local s e
    s=$(date +%s.%N)
    "$SYNTH" --events "$2" --seed 3 -o "$T/$1.zst" 2>/dev/null
    e=$(date +%s.%N)
    echo "$1: synth --events $2 in $(echo "$e - $s" | bc) s, $(stat -c %s "$T/$1.zst") bytes"
    measure "$1: the database (memanalyze sql)" "$MA" sql "$T/$1.zst" "SELECT count(*) FROM meta"
    # what the first pytorch, perfetto or chrome-json export adds to the cache (category_stream.h)
    measure "$1: every block's category into the cache (sql on allocations.category)" "$MA" sql \
        "$T/$1.zst" "SELECT category FROM allocations LIMIT 1"
}

trace big "$EVENTS"
for round in $(seq "$ROUNDS"); do
    for fmt in "$@"; do
        out=$T/big.$(ext_of "$fmt")
        if [ "$fmt" = folded ]; then
            measure "round $round: export --to folded" "$MA" export "$T/big.zst" --to folded -o "$out"
        else
            measure "round $round: export --to $fmt" "$MA" export "$T/big.zst" --to "$fmt" -o "$out"
        fi
        bytes=$(stat -c %s "$out")
        echo "  $bytes bytes, $(echo "scale=4; $bytes / $EVENTS" | bc) bytes/event"
        rm -f "$out"
    done
done

case " $* " in
*" pytorch "*)
    trace base "$BASE_EVENTS"
    for round in $(seq "$ROUNDS"); do
        measure "round $round: base: export --to pytorch" "$MA" export "$T/base.zst" --to pytorch \
            -o "$T/base.pickle"
        echo "  $(stat -c %s "$T/base.pickle") bytes"
        measure "round $round: base: export --to pytorch (JSON)" "$MA" export "$T/base.zst" \
            --to pytorch -o "$T/base.json"
        echo "  $(stat -c %s "$T/base.json") bytes"
        python3 "$ROOT/bench/bench_export_pickle.py" "$T/base.pickle" "$T/dump.pickle"
        rm -f "$T/dump.pickle" "$T/base.json"
    done
    ;;
esac
