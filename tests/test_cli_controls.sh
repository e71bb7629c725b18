#!/usr/bin/env bash
# test_cli_controls.sh — control characters in an input never reach the terminal raw (issue 28):
# a host name (as any recorded string: commands, frames, stage and tensor names) holding ESC,
# BEL, CR and a C1 control (U+009B, a CSI in UTF-8 terminals) is printed quoted as git quotes
# (\033, \a, \r, \302\233) by every text output and every error line, while the JSON keeps the
# exact string (escaped) and `sql --csv` keeps it as data.
# usage: test_cli_controls.sh SYNTH MEMANALYZE
set -u
SYNTH=$1 MA=$2
name=test_cli_controls
. "$(dirname "$0")/cli_lib.sh"

host=$'evil\033]0;pwned\007\rX\302\233'
"$SYNTH" -o "$T/run.zst" --steps 3 --host "$host" 2>/dev/null || fail synth
"$SYNTH" -o "$T/two.zst" --steps 3 --seed 2 --host "$host" 2>/dev/null || fail synth

raw_controls() { # raw_controls FILE: whether FILE holds a control byte other than \n and \t
    python3 -c '
import re, sys
data = open(sys.argv[1], "rb").read()
sys.exit(0 if re.search(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", data) else 1)' "$1"
}
for args in "report $T/run.zst" "info $T/run.zst" "compare $T/run.zst $T/two.zst" \
    "ranks $T/run.zst $T/two.zst" "steps $T/run.zst" "leaks $T/run.zst"; do
    # shellcheck disable=SC2086
    "$MA" $args >"$T/out" 2>"$T/err" || fail "$args: exit $?"
    raw_controls "$T/out" && fail "$args: a raw control character in the text"
    raw_controls "$T/err" && fail "$args: a raw control character on stderr"
done
"$MA" report "$T/run.zst" | grep -qF 'evil\033]0;pwned\a\rX\302\233' ||
    fail "report: the host is not quoted as git quotes"
"$MA" report "$T/run.zst" --json | python3 -c '
import json, sys
assert json.load(sys.stdin)["run"]["host"] == sys.argv[1], "the JSON changed the host"' "$host" ||
    fail "report --json: the host"
"$MA" sql "$T/run.zst" --csv "SELECT value FROM meta WHERE key = 'host'" >"$T/csv" ||
    fail "sql --csv: exit $?"
grep -qF "$host" "$T/csv" || fail "sql --csv: the data was changed"
"$MA" report "$T/nope"$'\033[2J'".zst" 2>"$T/err" >/dev/null
raw_controls "$T/err" && fail "an error line printed a raw control character"
grep -qF 'nope\033[2J.zst' "$T/err" || fail "the error line: $(cat "$T/err")"
finish
