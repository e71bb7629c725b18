#!/usr/bin/env bash
# run_recorder.sh [BUILD] — the recorder's hot path per event on this machine:
# the CUPTI handler (cuMemAlloc_v2 entry + exit) with 16 k distinct ~32-frame
# stacks and without stacks, on 1 and 2 threads, and the bare emit path
# (rec_stack_here + rec_emit_event); then the cost of Python frames.
# Not part of `make test`.
set -eu
B=${1:-build}
"$B/bench/bench_rec_hotpath" --stacks 16384 --events 200000 --threads 1,2
"$B/bench/bench_rec_hotpath" --stacks 16384 --events 200000 --threads 1 --direct
# Python frames (issue 6): per Python call of the profile hook, per event in
# each --stacks mode.
python3 "$(dirname "$0")/bench_rec_python.py" "$B/recorder/libmemrec.so"
