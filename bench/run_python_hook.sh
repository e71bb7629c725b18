#!/usr/bin/env bash
# run_python_hook.sh [BUILD [BASELINE_BUILD]] — ns per Python call that memrec's
# Python-frame hook adds (issue 26), on every CPython 3.9–3.13 found (pyenv's,
# else python3.X on PATH; a missing one is named and skipped), under the real
# attach path (memrec_python_attach from libmemrec.so through ctypes.PyDLL) with
# MEMREC_STACKS=mixed and python. With BASELINE_BUILD (e.g. a build of the
# commit before a change) both libraries are measured in turn in one run. See
# bench_python_hook.py for the method; CHILDREN, ROUNDS, CALLS and WORKLOADS
# (empty,builtin) override its defaults. Then, on 3.12+ where a C compiler and
# the interpreter's headers are there (FLOOR=0: not), bench_python_floor.py:
# the least any sys.monitoring hook costs (python_floor.c's empty callbacks).
# Then (SITES=0: not) bench_python_sites.py: ns per recorded event with many
# distinct call sites under one deep stack (LEAVES, FILL override its defaults).
# Not part of `make test`.
set -eu
libs=()
for b in "${1:-build}" ${2:+"$2"}; do
    [ -f "$b/recorder/libmemrec.so" ] || { echo "no $b/recorder/libmemrec.so: build first" >&2; exit 2; }
    libs+=("$b/recorder/libmemrec.so")
done
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for v in 3.9 3.10 3.11 3.12 3.13; do
    py=""
    for cand in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python3; do
        [ -x "$cand" ] && py=$cand
    done
    [ -n "$py" ] || py=$(command -v "python$v" || true)
    if [ -z "$py" ]; then
        echo "python $v: not installed, skipped"
        continue
    fi
    "$py" "$here/bench_python_hook.py" "${libs[@]}" --children "${CHILDREN:-5}" \
        --rounds "${ROUNDS:-7}" --calls "${CALLS:-1000000}" --workloads "${WORKLOADS:-empty,builtin}"
    if [ "${SITES:-1}" = 1 ]; then
        "$py" "$here/bench_python_sites.py" "${libs[@]}" --children "${CHILDREN:-5}" \
            --rounds "${ROUNDS:-7}" --leaves "${LEAVES:-600}" --fill "${FILL:-400}"
    fi
    case $v in 3.9|3.10|3.11) continue ;; esac
    [ "${FLOOR:-1}" = 1 ] || continue
    inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    if ! command -v "${CC:-cc}" >/dev/null || [ ! -f "$inc/Python.h" ]; then
        echo "python $v floor: no C compiler or no Python.h, skipped"
        continue
    fi
    mkdir -p "$tmp/$v"
    "${CC:-cc}" -O2 -shared -fPIC -I"$inc" -o "$tmp/$v/python_floor$ext" "$here/python_floor.c"
    "$py" "$here/bench_python_floor.py" "$tmp/$v" --children "${CHILDREN:-5}" \
        --rounds "${ROUNDS:-7}" --calls "${CALLS:-1000000}"
done
