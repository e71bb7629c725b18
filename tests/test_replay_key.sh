#!/usr/bin/env bash
# test_replay_key.sh CMAKE SOURCE_DIR BUILT_KEY_HEADER — the database cache key
# (cmake/replay_key.cmake) follows the sources: the build's key is the key of the source tree,
# does not depend on where the tree lies, and changes when any one file of the code that builds a
# database changes. That code is found here without the key's own list, from what the build made
# (BUILT_KEY_HEADER lies in BUILD/analyzer/): every object of the libraries memanalyze links that
# the linker reaches from input_database and category_store_file (what cli/ hands input/ as its
# `finish`), following undefined symbols with nm, and for each such object the in-tree files its
# compiler dependency output (.o.d) names: the sources and every header they include. Each is
# edited in a copy of the tree, and the key must change; schema.sql's byte flipped and flipped
# back gives the key back; the commands (cli/) are not hashed.
set -u
cmake=${1:?CMAKE}
src=${2:?SOURCE_DIR}
header=${3:?BUILT_KEY_HEADER}
script=$src/cmake/replay_key.cmake
list=$(dirname "$header")/replay_key_files.txt
build=$(dirname "$(dirname "$header")")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() {
    echo "FAIL: $*" >&2
    fails=$((fails + 1))
}
key_of() { "$cmake" -DROOT="$1" -DFILES="$list" -P "$script"; }

built=$(sed -n 's/^#define GMT_REPLAY_KEY "\(.*\)"$/\1/p' "$header")
case "$built" in replay-????????????????) ;; *) fail "no key in $header: '$built'" ;; esac
[ -s "$list" ] || fail "the build wrote no list of the key's files ($list)"
k0=$(key_of "$src")
[ "$k0" = "$built" ] || fail "the build's key $built is not the source tree's $k0 (stale replay_key.h?)"

# A copy of exactly the hashed files, elsewhere: the same key.
copy=$T/tree
"$cmake" -DROOT="$src" -DFILES="$list" -DLIST=ON -P "$script" >"$T/files"
[ -s "$T/files" ] || fail "the key hashes no files"
grep -qx 'schema/schema.sql' "$T/files" || fail "schema/schema.sql is not hashed"
mkdir -p "$copy" && (cd "$src" && xargs -d '\n' cp --parents -t "$copy") <"$T/files"
[ "$(key_of "$copy")" = "$k0" ] || fail "the key depends on where the tree lies"

# The code that builds a database, from the objects and their dependency files.
python3 - "$src" "$build" >"$T/linked" <<'EOF' || fail "cannot follow the objects of $build"
import os, subprocess, sys
src, build = (os.path.realpath(p) for p in sys.argv[1:3])
adir = os.path.join(build, "analyzer")
objs = []
for tok in open(os.path.join(adir, "CMakeFiles/memanalyze.dir/link.txt")).read().split():
    if tok.endswith(".a"):  # libNAME.a, its objects under CMakeFiles/NAME.dir
        lib = os.path.normpath(os.path.join(adir, tok))
        tdir = os.path.join(os.path.dirname(lib), "CMakeFiles", os.path.basename(lib)[3:-2] + ".dir")
        objs += [os.path.join(r, f) for r, _, fs in os.walk(tdir) for f in fs if f.endswith(".o")]
nm = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True, check=True).stdout
defs, undefs = {}, {o: set() for o in objs}
for line in nm.splitlines():
    obj, _, rest = line.partition(":")
    sym = rest.split()
    if len(sym) == 2 and sym[0] == "U":
        undefs[obj].add(sym[1])
    elif len(sym) == 3 and sym[1] in "TDBRCWV":
        defs.setdefault(sym[2], []).append(obj)
roots = ["input_database", "input_build_database", "category_store_file"]
missing = [r for r in roots if r not in defs]
if missing:
    sys.exit(f"no object defines {missing}")
todo, seen = [o for r in roots for o in defs[r]], set()
while todo:
    o = todo.pop()
    if o not in seen:
        seen.add(o)
        todo += [d for s in undefs[o] for d in defs.get(s, [])]
files = set()
for o in seen:
    deps = open(o + ".d").read().replace("\\\n", " ").split(":", 1)[1].split()
    for p in map(os.path.realpath, deps):
        if p.startswith(src + "/") and not p.startswith(build + "/"):  # generated: schema_sql.c
            files.add(os.path.relpath(p, src))
print("\n".join(sorted(files)))
EOF
n=$(wc -l <"$T/linked")
[ "$n" -gt 50 ] || fail "only $n files found linked into the database-building code"
for f in analyzer/input/input.c analyzer/replay/replay.c analyzer/query/category_store.c \
    analyzer/query/block_sweep.c model/alloc_model.c; do
    grep -qx "$f" "$T/linked" || fail "$f is not among the files that build a database"
done

# Each of them, edited in the copy: another key.
(cd "$src" && xargs -d '\n' cp --parents -n -t "$copy") <"$T/linked" # the ones not hashed, too
kc=$(key_of "$copy")
while read -r f; do
    size=$(stat -c %s "$copy/$f")
    echo "/* edited */" >>"$copy/$f"
    [ "$(key_of "$copy")" != "$kc" ] ||
        fail "editing $f (linked into the code that builds a database) keeps the key"
    truncate -s "$size" "$copy/$f"
done <"$T/linked"
[ "$(key_of "$copy")" = "$kc" ] || fail "every file restored, the key differs"

# One changed byte of schema.sql (made into the binary, not compiled): another key; the byte
# back: the same key.
sql=$copy/schema/schema.sql
cp "$sql" "$T/schema.sql"
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)' "$sql"
cmp -s "$sql" "$T/schema.sql" && fail "the byte was not changed"
k1=$(key_of "$copy")
[ -n "$k1" ] && [ "$k1" != "$kc" ] || fail "a changed byte of schema.sql keeps the key $kc"
cp "$T/schema.sql" "$sql"
[ "$(key_of "$copy")" = "$kc" ] || fail "schema.sql restored, the key differs"

# The commands never build a database: none of cli/ is hashed.
grep -q '^analyzer/cli/' "$T/files" && fail "cli/ files are hashed: $(grep '^analyzer/cli/' "$T/files" | head -3)"

# The generated header: one line of key.
"$cmake" -DROOT="$src" -DFILES="$list" -DOUT="$T/key.h" -P "$script"
grep -qx "#define GMT_REPLAY_KEY \"$k0\"" "$T/key.h" || fail "OUT= does not write the key"

[ $fails -eq 0 ] && echo "test_replay_key: ok ($n files linked into the database-building code, each edited)" || {
    echo "test_replay_key: $fails failure(s)"
    exit 1
}
