#!/usr/bin/env bash
# test_cache_dir.sh SYNTH MEMANALYZE — the database cache's folder is the user's alone (issue 28,
# analyzer/input/input.c):
#   - the folders memanalyze makes are 0700 and the databases in them 0600, at every level it
#     makes ($GMT_CACHE_DIR with its parents, $XDG_CACHE_HOME/gpumemtrace), also after `sql`
#     has added the categories;
#   - without HOME and XDG_CACHE_HOME the cache is $TMPDIR/gpumemtrace-UID (TMPDIR else /tmp),
#     a folder anyone could have made first: one that is not a directory of the user's own
#     (a symbolic link, a file, another user's) or that others may use (not 0700) is refused
#     with a one-line error (exit 2) and nothing is written in it, as tmux does with its socket
#     folder.
set -u
SYNTH=${1:?SYNTH} MA=${2:?MEMANALYZE}
name=test_cache_dir
. "$(dirname "$0")/cli_lib.sh"
q="SELECT count(category) FROM allocations"
"$SYNTH" -o "$T/t.zst" --steps 3 --seed 4 2>/dev/null || fail "synth"
umask 022 # what users have: the modes below are the code's, not the umask's
mode() { stat -c %a "$1"; }

# private FOLDER...: each folder is 0700, each file in the last one 0600, no temporaries left
private() {
    local d f
    for d in "$@"; do
        [ "$(mode "$d")" = 700 ] || fail "folder $d is $(mode "$d"), not 700"
    done
    for f in "$d"/*; do
        [ "$(mode "$f")" = 600 ] || fail "$f is $(mode "$f"), not 600"
        case "$f" in *.db) ;; *) fail "left in the cache: $f" ;; esac
    done
    [ -n "$(ls "$d")" ] || fail "nothing in $d"
}

GMT_CACHE_DIR=$T/a/b/cache "$MA" sql "$T/t.zst" "$q" >/dev/null || fail "GMT_CACHE_DIR"
private "$T/a" "$T/a/b" "$T/a/b/cache"
env -u GMT_CACHE_DIR XDG_CACHE_HOME="$T/xdg" "$MA" sql "$T/t.zst" "$q" >/dev/null || fail "XDG_CACHE_HOME"
private "$T/xdg" "$T/xdg/gpumemtrace"

# The fallback in TMPDIR.
mkdir -m 1777 "$T/tmp"
fallback=$T/tmp/gpumemtrace-$(id -u)
noenv() { env -u GMT_CACHE_DIR -u XDG_CACHE_HOME -u HOME TMPDIR="$T/tmp" "$MA" "$@"; }
noenv sql "$T/t.zst" "$q" >/dev/null || fail "the fallback cache"
private "$fallback"
noenv report "$T/t.zst" >/dev/null || fail "the fallback cache, again"

# refused WHAT: the command fails in one line, naming the folder; nothing is written in it
refused() {
    local before after
    before=$(ls -lA "$T/tmp" "$fallback/" 2>/dev/null)
    noenv report "$T/t.zst" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$1: exit $rc, not 2"
    [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "$fallback" "$T/err" ||
        fail "$1: not a one-line error naming the folder: $(cat "$T/err")"
    [ -s "$T/out" ] && fail "$1: printed $(head -c 200 "$T/out")"
    after=$(ls -lA "$T/tmp" "$fallback/" 2>/dev/null)
    [ "$before" = "$after" ] || fail "$1: written: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
}
rm -rf "$fallback"
mkdir -m 755 "$fallback"
refused "a fallback folder others may read"
chmod 770 "$fallback"
refused "a fallback folder its group may write"
rm -rf "$fallback"
mkdir -m 700 "$T/mine"
ln -s "$T/mine" "$fallback"
refused "a symbolic link to a folder of the user's"
rm "$fallback"
: >"$fallback"
refused "a file"
rm "$fallback"
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
    mkdir -m 700 "$fallback" && chown nobody "$fallback"
    refused "another user's folder"
    rm -rf "$fallback"
fi
noenv report "$T/t.zst" >/dev/null || fail "the fallback cache, made again"
private "$fallback"

finish
