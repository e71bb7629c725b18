#!/usr/bin/env bash
# test_memrec_cupti.sh MEMREC FAKE_CUDA_PROG FAKE_CUDA [MEMANALYZE] — memrec on the
# CUDA the user has (issue 12), end to end on the fake driver and the stand-in
# CUPTI libraries of fake_cuda.cmake (no GPU, no real CUPTI):
#
#   - a 13.0 driver: libcupti.so.13 through cuptiSubscribe_v2; a 12.4 driver:
#     libcupti.so.12 through cuptiSubscribe; a libcupti.so.12 the program loaded
#     itself (PyTorch's) wins over the driver's match; memrec names the one
#     used, its version and the driver's in one line; the allocations are in
#     the trace;
#   - MEMREC_CUPTI missing, or a CUPTI that refuses to subscribe: one warning
#     (with a hint when the CUPTI is newer than the driver), the program's
#     output and exit status as without memrec, no other memrec line;
#   - libmemrec.so needs neither CUPTI nor libunwind (readelf -d), memrec sets
#     no LD_PRELOAD, and in a process that loads libmemrec.so (cuInit) a C++
#     throw/catch in a library it dlopens after (pybind11's shape) still binds
#     every _Unwind_* to libgcc_s (LD_DEBUG=bindings; g++ builds the library).
set -u
memrec=$1
prog=$2
fake=$3
memanalyze=${4:-}
name=test_memrec_cupti
here=$(cd "$(dirname "$0")" && pwd)
. "$here/shlib.sh"

[ -f "$fake/driver13/libcuda.so.1" ] && [ -f "$fake/cupti/libcupti.so.13" ] || {
    echo "SKIP: the fake CUDA libraries are not built" >&2
    exit 77
}
unset MEMREC_CUPTI CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH

# run DRIVER NAME [memrec options] -- ARGS: the program under memrec with the
# fake driver and the stand-ins on the search path; NAME.out, NAME.err, NAME.rc.
run() {
    local driver=$1 run_name=$2
    shift 2
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    LD_LIBRARY_PATH="$fake/$driver:$fake/cupti" "$memrec" -o "$tmp/$run_name.zst" --no-symbolize \
        "${opts[@]}" -- "$prog" "$@" >"$run_name.out" 2>"$run_name.err"
    echo $? >"$run_name.rc"
}

memrec_lines() { grep -a '^memrec: ' "$1.err" | grep -v '^memrec: trace written: '; }

events_in() {
    [ -n "$memanalyze" ] || { echo 2; return; }
    GMT_CACHE_DIR="$tmp/cache" "$memanalyze" sql "$tmp/$1.zst" \
        "SELECT count(*) FROM events WHERE source = 'cupti' AND event_id > 0" --csv | tail -n 1
}

# ---- the driver chooses ---------------------------------------------------------
run driver13 d13 -- alloc which
[ "$(cat d13.rc)" = 0 ] || fail "driver 13: exit $(cat d13.rc): $(cat d13.err)"
[ "$(cat d13.out)" = "$(printf 'alloc ok\nlibcupti.so.13: cuptiSubscribe_v2')" ] ||
    fail "driver 13: $(cat d13.out)"
[ "$(memrec_lines d13)" = "memrec: CUPTI $fake/cupti/libcupti.so.13 (API version 130001, matches the driver, cuptiSubscribe_v2), CUDA driver 13.0" ] ||
    fail "driver 13: the CUPTI line: $(memrec_lines d13)"
[ "$(events_in d13)" = 2 ] || fail "driver 13: the alloc and free are not in the trace"

run driver12 d12 -- alloc which
[ "$(cat d12.out)" = "$(printf 'alloc ok\nlibcupti.so.12: cuptiSubscribe')" ] ||
    fail "driver 12: $(cat d12.out) $(cat d12.err)"
[ "$(memrec_lines d12)" = "memrec: CUPTI $fake/cupti/libcupti.so.12 (API version 24, matches the driver, cuptiSubscribe), CUDA driver 12.4" ] ||
    fail "driver 12: the CUPTI line: $(memrec_lines d12)"
[ "$(events_in d12)" = 2 ] || fail "driver 12: the alloc and free are not in the trace"

# PyTorch's libcupti.so.12, loaded before CUDA starts, under a 13.0 driver.
run driver13 torch -- load libcupti.so.12 alloc which
[ "$(cat torch.out)" = "$(printf 'alloc ok\nlibcupti.so.12: cuptiSubscribe')" ] ||
    fail "a loaded CUPTI: $(cat torch.out) $(cat torch.err)"
memrec_lines torch | grep -q "^memrec: CUPTI $fake/cupti/libcupti.so.12 (API version 24, already loaded, cuptiSubscribe), CUDA driver 13.0$" ||
    fail "a loaded CUPTI: the CUPTI line: $(memrec_lines torch)"

# A CUPTI with nothing but the calls memrec needs (no version, no v2).
MEMREC_CUPTI="$fake/cupti-min/libcupti.so.12" run driver13 min -- alloc
memrec_lines min | grep -q "(API version unknown, MEMREC_CUPTI, cuptiSubscribe), CUDA driver 13.0$" ||
    fail "a minimal CUPTI: $(memrec_lines min)"
[ "$(events_in min)" = 2 ] || fail "a minimal CUPTI: the alloc and free are not in the trace"

# A CUPTI older than the headers memrec was built with refuses the newest cbids: calls
# it cannot report, not worth a warning on every run; refusing one it knows is.
MEMREC_CUPTI="$fake/cupti-older/libcupti.so.13" run driver13 older -- alloc
[ "$(cat older.out)" = "alloc ok" ] && [ "$(memrec_lines older | grep -c .)" = 1 ] &&
    memrec_lines older | grep -q "^memrec: CUPTI $fake/cupti-older/libcupti.so.13 (" ||
    fail "an older CUPTI: not just the CUPTI line: $(cat older.err)"
[ "$(events_in older)" = 2 ] || fail "an older CUPTI: the alloc and free are not in the trace"
MEMREC_CUPTI="$fake/cupti-refuses/libcupti.so.13" run driver13 refuses -- alloc
memrec_lines refuses | grep -q "^memrec: CUPTI refused 1 of [0-9]* memory callbacks: those calls are not recorded$" ||
    fail "a refused cbid: no warning: $(cat refuses.err)"

# ---- no usable CUPTI: one warning, the program untouched ---------------------------
LD_LIBRARY_PATH="$fake/driver13" "$prog" alloc >direct.out 2>direct.err
echo $? >direct.rc
MEMREC_CUPTI=/nonexistent/libcupti.so run driver13 missing -- alloc
[ "$(cat missing.rc)" = "$(cat direct.rc)" ] && cmp -s missing.out direct.out ||
    fail "missing CUPTI: the program changed: $(cat missing.rc) $(cat missing.out)"
[ "$(grep -c . missing.err)" = 1 ] &&
    grep -q '^memrec: no usable CUPTI (/nonexistent/libcupti.so: .*): CUDA allocations are not recorded, the program runs on$' missing.err ||
    fail "missing CUPTI: not one clear warning: $(cat missing.err)"

MEMREC_CUPTI="$fake/cupti-broken/libcupti.so.13" run driver12 broken -- alloc
[ "$(cat broken.rc)" = "$(cat direct.rc)" ] && cmp -s broken.out direct.out ||
    fail "refusing CUPTI: the program changed: $(cat broken.out)"
[ "$(grep -c . broken.err)" = 1 ] &&
    grep -q "^memrec: CUPTI subscription failed (cuptiSubscribe_v2: CUPTI_ERROR_UNKNOWN; $fake/cupti-broken/libcupti.so.13); this CUPTI is for CUDA 13, the driver is 12.4: put libcupti.so.12 on LD_LIBRARY_PATH or name it in MEMREC_CUPTI: CUDA allocations are not recorded, the program runs on$" broken.err ||
    fail "refusing CUPTI: not one clear warning: $(cat broken.err)"

# ---- a Python program whose CUPTI cannot subscribe (issue 26) ---------------------
# The fake driver dlcloses the library when InitializeInjection returns 0 and calls it
# again at the next cuInit, as NVIDIA's R535 does (fake_libcuda.c). The library armed
# first and queued its Python hook's attach in the interpreter: were it unloaded, that
# pending call would jump into unmapped code (SIGSEGV right after cuInit, before the fix).
if command -v python3 >/dev/null; then
    cat >cuinit.py <<'PY'
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
print("cuInit", cuda.cuInit(0))
total = sum(i * i for i in range(20000))  # Python runs on after the driver's first call
print("cuInit", cuda.cuInit(0))
print("done", total)
PY
    pyrun() { # NAME ENV...: cuinit.py bare (NAME.direct.*) and under memrec (NAME.*)
        local run_name=$1
        shift
        env "$@" LD_LIBRARY_PATH="$fake/driver13:$fake/cupti" python3 cuinit.py \
            >"$run_name.direct.out" 2>"$run_name.direct.err"
        echo $? >"$run_name.direct.rc"
        env "$@" LD_LIBRARY_PATH="$fake/driver13:$fake/cupti" "$memrec" -o "$tmp/$run_name.zst" \
            --no-symbolize -- python3 cuinit.py >"$run_name.out" 2>"$run_name.err"
        echo $? >"$run_name.rc"
        [ "$(cat "$run_name.rc")" = "$(cat "$run_name.direct.rc")" ] &&
            cmp -s "$run_name.out" "$run_name.direct.out" ||
            fail "python, $run_name: the program changed: exit $(cat "$run_name.rc") (bare: $(cat "$run_name.direct.rc")), $(cat "$run_name.out") $(cat "$run_name.err")"
        [ "$(grep -c . "$run_name.err")" = 1 ] ||
            fail "python, $run_name: not one warning: $(cat "$run_name.err")"
        [ ! -e "$tmp/$run_name.zst" ] || fail "python, $run_name: a trace was left, with nothing recorded"
    }
    pyrun pymissing MEMREC_CUPTI=/nonexistent/libcupti.so
    grep -q '^memrec: no usable CUPTI (/nonexistent/libcupti.so: ' pymissing.err ||
        fail "python, missing CUPTI: $(cat pymissing.err)"
    [ "$(head -n 1 pymissing.out)" = "cuInit 0" ] || fail "python: cuInit failed: $(cat pymissing.out)"
    pyrun pybroken MEMREC_CUPTI="$fake/cupti-broken/libcupti.so.13"
    grep -q "^memrec: CUPTI subscription failed (cuptiSubscribe_v2: CUPTI_ERROR_UNKNOWN; $fake/cupti-broken/libcupti.so.13); is a GPU visible to the process?: " pybroken.err ||
        fail "python, refusing CUPTI: $(cat pybroken.err)"
    # No device: cuInit fails (100) after the injection ran; the launcher says so once and
    # the library's failed subscription adds nothing.
    pyrun pynodevice FAKECUDA_NO_DEVICE=1
    [ "$(head -n 1 pynodevice.out)" = "cuInit 100" ] || fail "python, no device: $(cat pynodevice.out)"
    grep -q '^memrec: no CUDA driver/GPU found (no CUDA device): python3 runs unrecorded' pynodevice.err ||
        fail "python, no device: $(cat pynodevice.err)"
    pyrun pyinvisible CUDA_VISIBLE_DEVICES=
    grep -q '^memrec: no CUDA driver/GPU found' pyinvisible.err || fail "python, CUDA_VISIBLE_DEVICES='': $(cat pyinvisible.err)"
else
    echo "note: no python3: the Python program whose CUPTI fails is not run" >&2
fi

# ---- nothing interposed ------------------------------------------------------------
lib="$(dirname "$memrec")/libmemrec.so"
if command -v readelf >/dev/null && [ -f "$lib" ]; then
    readelf -d "$lib" | grep NEEDED | grep -Eq 'cupti|unwind' &&
        fail "libmemrec.so links CUPTI or libunwind: $(readelf -d "$lib" | grep NEEDED)"
    # Never unmapped once loaded (the driver dlcloses it when InitializeInjection says 0).
    readelf -d "$lib" | grep FLAGS_1 | grep -q NODELETE ||
        fail "libmemrec.so is not linked -z nodelete: $(readelf -d "$lib" | grep FLAGS)"
fi
"$memrec" -q -- env >env.out 2>&1
grep -q '^LD_PRELOAD=' env.out && fail "memrec sets LD_PRELOAD: $(grep '^LD_PRELOAD=' env.out)"

if command -v g++ >/dev/null; then
    if g++ -O2 -shared -fPIC -o libthrow.so "$here/fake_cuda/throw_catch.cpp"; then
        LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/bind" run driver13 throw -- throw "$tmp/libthrow.so" 100
        [ "$(cat throw.out)" = "throws: 100" ] || fail "throw: $(cat throw.out) $(cat throw.err)"
        cat "$tmp"/bind.* >bindings.txt 2>/dev/null
        grep -q "binding file [^ ]*/libmemrec.so " bindings.txt ||
            fail "throw: libmemrec.so was not loaded into the program (the test proves nothing)"
        grep -q "binding file [^ ]*libstdc++[^ ]* .* to [^ ]*libgcc_s[^ ]* .*_Unwind_RaiseException" bindings.txt ||
            fail "throw: libstdc++'s _Unwind_RaiseException binding is not to libgcc_s"
        bad=$(grep "symbol \`_Unwind_" bindings.txt | grep -v "binding file [^ ]*libunwind" |
            grep -v " to [^ ]*libgcc_s")
        [ -z "$bad" ] || fail "throw: _Unwind_* bound to something but libgcc_s: $(echo "$bad" | head -n 3)"
    else
        echo "note: g++ cannot build the C++ library: the bindings are not checked" >&2
    fi
else
    echo "note: no g++: the bindings are not checked" >&2
fi

finish
