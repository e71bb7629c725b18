# shlib.sh — what the recorder's shell tests share. Sourced once the test has set
# `name` (its name) and `memrec`: tests/cli_lib.sh (a temporary folder, here also $tmp, that
# the test then runs in, a private database cache, `fail MESSAGE`, `finish`), and ASan's
# options when memrec is a sanitizer build (the programs it runs load the uninstrumented
# libmemrec.so, and leak reports of those programs are not the test's business).
# shellcheck shell=bash
. "$(dirname "${BASH_SOURCE[0]}")/../cli_lib.sh"
tmp=$T

if ldd "$memrec" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
fi
cd "$tmp" || exit 1
