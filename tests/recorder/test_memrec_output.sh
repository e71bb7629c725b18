#!/usr/bin/env bash
# test_memrec_output.sh MEMREC PASSTHROUGH_PROG [MEMANALYZE] — where a trace may be written
# (issue 28): a trace is never written through a symbolic link (one to a file, a dangling one)
# and never outside the folder -o names, whatever RANK / OMPI_COMM_WORLD_RANK / SLURM_PROCID or
# the host name hold (%r takes digits only, %h a plain name); an existing regular file at the
# name is replaced, by rename, so its other names keep what they held. In every case the program
# behaves as it does without memrec (its exit status, its output) and a refusal is one line.
# The traces come from memrec.h calls (passthrough_prog annotate): no GPU needed.
set -u
memrec=$1
prog=$2
memanalyze=${3:-}
name=test_memrec_output
here=$(cd "$(dirname "$0")" && pwd)
. "$here/shlib.sh"
unset RANK OMPI_COMM_WORLD_RANK SLURM_PROCID

"$prog" annotate >direct.out 2>/dev/null || fail "passthrough_prog annotate itself failed"

# rec [VAR=VALUE...] -o PATH -- MODE...: memrec runs passthrough_prog MODE; its status in $rc,
# stdout in out, memrec's lines but the no-driver one in lines.
rec() {
    env "$@" >out 2>err
    rc=$?
    grep -av '^memrec: no CUDA driver/GPU found' err >lines
}
is_trace() { [ -f "$1" ] && [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' ')" = 28b52ffd ]; }
one_line() { # one_line WHAT REGEX: memrec said exactly one thing, matching REGEX
    [ "$(wc -l <lines)" = 1 ] && grep -Eq "$2" lines || fail "$1: not one line matching '$2': $(cat lines)"
}

# ---- a symbolic link at the -o path: refused, its target untouched ----------
printf 'not a trace\n' >victim
ln -s victim link.zst
rec "$memrec" -o link.zst -- "$prog" annotate
[ "$rc" = 0 ] || fail "symlink: the program's exit 0 came back as $rc"
cmp -s direct.out out || fail "symlink: stdout differs from the program's own"
[ "$(cat victim)" = "not a trace" ] || fail "symlink: its target was written: $(od -c victim | head -n 2)"
[ -L link.zst ] && [ "$(readlink link.zst)" = victim ] || fail "symlink: the link was replaced"
one_line "symlink" "^memrec: .*/link\.zst is a symbolic link: .*the program runs unrecorded$"
# The same with a program that fails: its own status, not memrec's.
rec "$memrec" -o link.zst -- "$prog" rawexit 0
[ "$rc" = 5 ] || fail "symlink: the program's exit 5 came back as $rc"
[ "$(cat victim)" = "not a trace" ] || fail "symlink: its target was written by rawexit"
one_line "symlink, rawexit" "symbolic link"

# ---- a dangling symbolic link: its target is not created --------------------
ln -s nowhere.zst dangling.zst
rec "$memrec" -o dangling.zst -- "$prog" annotate
[ "$rc" = 0 ] || fail "dangling symlink: exit $rc"
[ ! -e nowhere.zst ] || fail "dangling symlink: its target was created"
[ -L dangling.zst ] || fail "dangling symlink: the link is gone"
one_line "dangling symlink" "dangling\.zst is a symbolic link"

# ---- a symbolic link to a folder above the trace is the user's: followed ----
mkdir real
ln -s real dirlink
rec "$memrec" -o dirlink/t.zst -- "$prog" annotate
[ "$rc" = 0 ] && is_trace real/t.zst || fail "a symlinked folder: no trace in it ($rc): $(cat lines)"

# ---- an existing regular file: replaced by rename, its other names kept -----
printf 'an earlier trace\n' >old.zst
ln old.zst old-hardlink
rec "$memrec" -o old.zst -- "$prog" annotate
[ "$rc" = 0 ] || fail "existing file: exit $rc"
is_trace old.zst || fail "existing file: old.zst is not a trace now"
[ "$(cat old-hardlink)" = "an earlier trace" ] || fail "existing file: its hard link was written"
one_line "existing file" "^memrec: trace written: old\.zst \(2 events"
[ -n "$memanalyze" ] && { "$memanalyze" info old.zst >info 2>&1 || fail "existing file: unreadable: $(cat info)"; }
# and again: a trace over a trace
rec "$memrec" -o old.zst -- "$prog" annotate
[ "$rc" = 0 ] && is_trace old.zst || fail "a trace over a trace: $rc $(cat lines)"
left=$(find . -name '.memrec-*')
[ -z "$left" ] || fail "a temporary file was left: $left"
# a folder at the name: one line, the program unharmed
mkdir adir.zst
rec "$memrec" -o adir.zst -- "$prog" rawexit 0
[ "$rc" = 5 ] || fail "a folder at -o: exit $rc"
one_line "a folder at -o" "^memrec: cannot create the trace .*adir\.zst: .*the program runs unrecorded$"

# ---- %r takes digits only ------------------------------------------------------
mkdir -p a/b/out
rec RANK=7 "$memrec" -o a/b/out/r%r.zst -- "$prog" annotate
is_trace a/b/out/r7.zst || fail "RANK=7: no r7.zst: $(ls a/b/out) $(cat lines)"
one_line "RANK=7" "^memrec: trace written: a/b/out/r7\.zst"
rm -f a/b/out/*
check_rank() { # check_rank VAR VALUE: not a number: a warning, the trace under a safe name in out/
    rec "$1=$2" "$memrec" -o a/b/out/%r.zst -- "$prog" annotate
    [ "$rc" = 0 ] || fail "$1=$2: exit $rc"
    local outside
    outside=$(find a -name '*.zst' ! -path 'a/b/out/*')
    [ -z "$outside" ] || fail "$1=$2: a trace outside the -o folder: $outside"
    [ "$(ls a/b/out)" = unknown.zst ] && is_trace a/b/out/unknown.zst ||
        fail "$1=$2: expected out/unknown.zst, got: $(ls -R a)"
    [ "$(wc -l <lines)" = 2 ] && grep -q "^memrec: $1=\"$2\" is not a rank number: %r is \"unknown\"" lines &&
        grep -q '^memrec: trace written: a/b/out/unknown\.zst' lines ||
        fail "$1=$2: expected the warning and the trace: $(cat lines)"
    rm -rf a/b/out/* a/x.zst a/b/x.zst
}
check_rank RANK ../../x
check_rank RANK 1/2
check_rank RANK abc
check_rank RANK -1
check_rank RANK ..
check_rank OMPI_COMM_WORLD_RANK ../x
check_rank SLURM_PROCID 3/..

# ---- %h: a host name that is no plain name (one set in a UTS namespace) --------
if command -v unshare >/dev/null && command -v python3 >/dev/null &&
    unshare -r -u true 2>/dev/null; then
    mkdir -p h/out/host
    rec unshare -r -u python3 -c 'import os, socket, sys
socket.sethostname("../..")
os.execv(sys.argv[1], sys.argv[1:])' "$memrec" -o h/out/%h/t.zst -- "$prog" annotate
    [ "$rc" = 0 ] || fail "host ../..: exit $rc"
    [ ! -e t.zst ] || fail "host ../..: the trace was written outside h/out"
    is_trace h/out/host/t.zst || fail "host ../..: expected h/out/host/t.zst: $(ls -R h) $(cat lines)"
    grep -q '^memrec: the host name "\.\./\.\." is not a plain name: %h is "host"' lines ||
        fail "host ../..: no warning: $(cat lines)"
else
    echo "note: no user namespaces here: the host-name case is not run" >&2
fi

finish
