#!/usr/bin/env bash
# run_fuzz.sh FUZZER SYNTH SECONDS — a bounded libFuzzer run of the trace
# reader, seeded with small real traces from the synthetic generator (single-
# and multi-frame, several options), so the fuzzer starts from valid input.
set -eu
FUZZER=$1 SYNTH=$2 SECONDS_=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/corpus"
"$SYNTH" -o "$T/corpus/a.zst" --events 300 2>/dev/null
"$SYNTH" -o "$T/corpus/b.zst" --events 2000 --chunk-bytes 4096 --devices 2 --streams 3 2>/dev/null
"$SYNTH" -o "$T/corpus/c.zst" --events 500 --fragment --leak 4096 --level 3 2>/dev/null
"$FUZZER" -max_total_time="$SECONDS_" -rss_limit_mb=2048 -timeout=20 -seed=1 \
  -print_final_stats=1 "$T/corpus" 2>"$T/log" || { tail -50 "$T/log"; exit 1; }
tail -3 "$T/log"
