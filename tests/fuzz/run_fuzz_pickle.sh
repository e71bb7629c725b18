#!/usr/bin/env bash
# run_fuzz_pickle.sh FUZZER SOURCE_DIR SECONDS — a bounded libFuzzer run of the
# pickle reader and snapshot parser, seeded with pickles Python writes
# (tests/make_pickles.py) and, when ../shared exists, its smallest snapshot.
set -eu
FUZZER=$1 SRC=$2 SECONDS_=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/corpus"
if command -v python3 >/dev/null; then
  python3 "$SRC/tests/make_pickles.py" --out "$T/corpus" >/dev/null
fi
[ -f "$SRC/../shared/data/pytorch/legacy-format.pickle" ] &&
  cp "$SRC/../shared/data/pytorch/legacy-format.pickle" "$T/corpus/"
"$FUZZER" -max_total_time="$SECONDS_" -rss_limit_mb=2048 -timeout=20 -seed=1 \
  -max_len=65536 -print_final_stats=1 "$T/corpus" 2>"$T/log" || { tail -50 "$T/log"; exit 1; }
tail -3 "$T/log"
