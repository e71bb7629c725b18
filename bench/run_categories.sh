#!/usr/bin/env bash
# run_categories.sh — what the categories cost (issue 16): a synth trace with memrec's tensor
# names (gradients named every step), imported, reported cold and warm, and the category
# commands on it. With OLD=path/to/an/older/memanalyze, the same runs with it alternate with
# the new one's, so the ratio comes from one sitting.
# usage: bench/run_categories.sh [EVENTS]   (default 4 M; build/ must hold the binaries)
set -eu
EVENTS=${1:-4000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
NEW=$BUILD/analyzer/memanalyze SYNTH=$BUILD/samples/synth/synth OLD=${OLD:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$SYNTH" -o "$T/t.zst" --events "$EVENTS" --fragment --names 2>/dev/null
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
for round in 1 2; do
  for which in ${OLD:+OLD} NEW; do
    MA=${!which}
    rm -rf "$T/cache" "$T/o.db"
    export GMT_CACHE_DIR=$T/cache
    cold=$(secs "$MA" report "$T/t.zst")
    warm=$(secs "$MA" report "$T/t.zst")
    imp=$(secs "$MA" import "$T/t.zst" -o "$T/o.db")
    line="$which round $round: report cold ${cold}s, warm ${warm}s; import -o ${imp}s, $(stat -c %s "$T/o.db") bytes"
    if [ "$which" = NEW ]; then
      line="$line; tensors $(secs "$MA" tensors "$T/t.zst")s"
      line="$line; timeline --by category $(secs "$MA" timeline "$T/t.zst" --by category -o "$T/t.png")s"
      line="$line; report --categories $(printf 'x\\.py other\n' >"$T/r"; secs "$MA" report "$T/t.zst" --categories "$T/r")s"
    fi
    echo "$line"
  done
done
