#!/usr/bin/env bash
# run_watch.sh [BUILD] — `memanalyze watch` (issue 32): (a) the cost of a poll, as one poll of a
# finished trace of 1, 4 and 8 M events (`watch --once`: every frame new at once; synth, a steady
# training loop, no leak) with watch's peak RSS against the trace's length; (b) with
# bench/bench_watch.py, the latency of a refresh after the frame that changed it and watch's
# CPU, following one trace written at 50 k events/s (--interval 0.05), then (c) 8 ranks of a job
# written at 50 k events/s each into one directory, `watch DIR`. Not part of `make test`.
# Prints figures for bench/README.md.
set -eu
B=${1:-build}
MA=$B/analyzer/memanalyze
SY=$B/samples/synth/synth
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for n in 1000000 4000000 8000000; do
  "$SY" -o "$T/n$n.zst" --events "$n" >/dev/null
  /usr/bin/time -f "one poll of $n events: %e s, peak RSS %M KB" \
    "$MA" watch --once --json "$T/n$n.zst" >/dev/null
done
"$SY" -o "$T/paced.zst" --events 500000 --chunk-bytes 16384 >/dev/null
python3 "$SRC/bench/bench_watch.py" "$MA" "$T/paced.zst" 50000 0.05
python3 "$SRC/bench/bench_watch.py" "$MA" "$T/paced.zst" 50000 0.05 8
