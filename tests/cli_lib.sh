# cli_lib.sh — what the project's shell tests share (recorder/shlib.sh adds the recorder's
# part). Sourced after `set -u` once the test has set `name` (its name): a temporary folder $T
# (removed at exit) holding the database cache (tests never share one), `fail MESSAGE` (prints
# and counts in $fails) and `finish` (the verdict and the exit status).
# shellcheck shell=bash
T=$(mktemp -d "/tmp/gmt-$name-XXXXXX")
trap 'rm -rf "$T"' EXIT
export GMT_CACHE_DIR=$T/cache
fails=0

fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}

finish() {
    if [ "$fails" -ne 0 ]; then
        echo "$name: $fails failure(s)" >&2
        exit 1
    fi
    echo "$name: ok"
    exit 0
}
