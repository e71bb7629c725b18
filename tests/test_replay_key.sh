#!/usr/bin/env bash
# test_replay_key.sh CMAKE SOURCE_DIR BUILT_KEY_HEADER — the database cache key
# (cmake/replay_key.cmake) follows the sources: the build's key is the key of the source tree,
# does not depend on where the tree lies, changes when one byte of schema/schema.sql (or of the
# model, or a new replay file) changes, comes back when the byte does, and ignores files the
# database does not depend on (analyzer/query/).
set -u
cmake=${1:?CMAKE}
src=${2:?SOURCE_DIR}
header=${3:?BUILT_KEY_HEADER}
script=$src/cmake/replay_key.cmake
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}
key_of() { "$cmake" -DROOT="$1" -P "$script"; }

built=$(sed -n 's/^#define GMT_REPLAY_KEY "\(.*\)"$/\1/p' "$header")
case "$built" in replay-????????????????) ;; *) fail "no key in $header: '$built'" ;; esac
k0=$(key_of "$src")
[ "$k0" = "$built" ] || fail "the build's key $built is not the source tree's $k0 (stale replay_key.h?)"

# A copy of exactly the hashed files, elsewhere: the same key.
copy=$T/tree
"$cmake" -DROOT="$src" -DLIST=ON -P "$script" >"$T/files"
[ -s "$T/files" ] || fail "the key hashes no files"
grep -qx 'schema/schema.sql' "$T/files" || fail "schema/schema.sql is not hashed"
while read -r f; do
    mkdir -p "$copy/$(dirname "$f")" && cp "$src/$f" "$copy/$f"
done <"$T/files"
[ "$(key_of "$copy")" = "$k0" ] || fail "the key depends on where the tree lies"

# One changed byte of schema.sql: another key; the byte back: the same key.
sql=$copy/schema/schema.sql
cp "$sql" "$T/schema.sql"
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)' "$sql"
cmp -s "$sql" "$T/schema.sql" && fail "the byte was not changed"
k1=$(key_of "$copy")
[ -n "$k1" ] && [ "$k1" != "$k0" ] || fail "a changed byte of schema.sql keeps the key $k0"
cp "$T/schema.sql" "$sql"
[ "$(key_of "$copy")" = "$k0" ] || fail "schema.sql restored, the key differs"

# The model and a new replay file count too; a query file does not.
echo "/* x */" >>"$copy/model/alloc_model.c"
[ "$(key_of "$copy")" != "$k0" ] || fail "a change of model/alloc_model.c keeps the key"
cp "$src/model/alloc_model.c" "$copy/model/alloc_model.c"
echo "int x;" >"$copy/analyzer/replay/new_file.c"
[ "$(key_of "$copy")" != "$k0" ] || fail "a new file in analyzer/replay/ keeps the key"
rm "$copy/analyzer/replay/new_file.c"
mkdir -p "$copy/analyzer/query" && echo "int y;" >"$copy/analyzer/query/when.c"
[ "$(key_of "$copy")" = "$k0" ] || fail "a query/ file changes the key"

# The generated header: one line of key.
"$cmake" -DROOT="$copy" -DOUT="$T/key.h" -P "$script"
grep -qx "#define GMT_REPLAY_KEY \"$k0\"" "$T/key.h" || fail "OUT= does not write the key"

[ $fails -eq 0 ] && echo "test_replay_key: ok" || {
    echo "test_replay_key: $fails failure(s)"
    exit 1
}
