#!/usr/bin/env bash
# run_unwind_overhead.sh [BUILD] — what recording costs a C++ exception (issue 12).
# A C program starts CUDA (the tests' fake driver, which loads libmemrec.so in cuInit
# as the real driver does, with the stand-in CUPTI) and then dlopens a C++ library
# that throws and catches in a loop: pybind11's shape under Python, where every
# Python error raised through C++ is such a throw. Prints ns per throw/catch without
# memrec and under memrec, alternating runs, best of 5 each, and their ratio.
# Needs g++ and the test build's fake CUDA (tests/recorder/fake_cuda.cmake).
# Not part of `make test`.
set -eu
B=$(cd "${1:-build}" && pwd)
fake=$B/tests/recorder/fake_cuda
prog=$B/tests/recorder/fake_cuda_prog
memrec=$B/recorder/memrec
N=${THROWS:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -shared -fPIC -o "$tmp/libthrow.so" \
    "$(dirname "$0")/../tests/recorder/fake_cuda/throw_catch.cpp"
export LD_LIBRARY_PATH="$fake/driver13:$fake/cupti"
ns() { "$@" 2>&1 >/dev/null | awk '/^ns per throw:/ {print $4}'; }
best_direct="" best_memrec=""
for _ in 1 2 3 4 5; do
    d=$(ns "$prog" throw "$tmp/libthrow.so" "$N")
    m=$(ns "$memrec" -q --no-symbolize -o "$tmp/t-%p.zst" -- "$prog" throw "$tmp/libthrow.so" "$N")
    best_direct=$(printf '%s\n%s\n' "$d" "$best_direct" | grep . | sort -g | head -n 1)
    best_memrec=$(printf '%s\n%s\n' "$m" "$best_memrec" | grep . | sort -g | head -n 1)
    echo "run: without memrec $d ns, under memrec $m ns"
done
awk -v d="$best_direct" -v m="$best_memrec" 'BEGIN {
    printf "throw+catch, best of 5: without memrec %.0f ns, under memrec %.0f ns, ratio %.2f\n",
           d, m, m / d }'
