#!/usr/bin/env bash
# run_codec.sh [BUILD] — codec benchmark on 1 M and 10 M-event synthetic
# training traces (with stacks), pinned to one core. Not part of `make test`.
set -eu
B=${1:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for n in 1000000 10000000; do
  "$B/samples/synth/synth" -o "$T/t$n.zst" --events $n 2>/dev/null
  taskset -c 0 "$B/bench/bench_codec" "$T/t$n.zst" 3
done
"$B/samples/synth/synth" -o "$T/frag.zst" --events 1000000 --fragment --streams 3 2>/dev/null
taskset -c 0 "$B/bench/bench_codec" "$T/frag.zst" 3
