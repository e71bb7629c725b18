# shlib.sh — what the recorder's shell tests share. Sourced once the test has set
# `name` (its name) and `memrec`: a temporary folder $tmp the test then runs in
# (removed at exit), `fail MESSAGE` (prints and counts), `finish` (the verdict and
# the exit status), and ASan's options when memrec is a sanitizer build (the
# programs it runs load the uninstrumented libmemrec.so, and leak reports of
# those programs are not the test's business).
# shellcheck shell=bash
tmp=$(mktemp -d "/tmp/gmt-$name-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GMT_CACHE_DIR="$tmp/cache" # tests never share a database cache
failures=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

finish() {
    if [ "$failures" -gt 0 ]; then
        echo "$name: $failures failure(s)" >&2
        exit 1
    fi
    echo "$name: ok"
    exit 0
}

if ldd "$memrec" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
fi
cd "$tmp" || exit 1
