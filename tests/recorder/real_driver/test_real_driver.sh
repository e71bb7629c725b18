#!/usr/bin/env bash
# test_real_driver.sh FETCH_DIR MEMREC PROG PROBE PROBE_NODELETE FAKE_PROG PYTHON TOOLKIT_CUPTI
#   TOOLKIT_MAJOR — the real-driver tier (issue 26): memrec and libmemrec.so on NVIDIA's real
# R535 user-space driver (Debian's libcuda1, fetched by fetch.sh into FETCH_DIR, never
# installed: LD_LIBRARY_PATH points at it) and Debian's CUPTI 11.8 and 12.4, on a machine
# without a GPU. What the fake driver (tests/recorder/fake_cuda/fake_libcuda.c) models is
# checked here on the real one, and memrec is run on it end to end:
#
#   - the driver's own behaviour, with PROBE (probe_injection.c, plain and -z nodelete):
#     inside every cuInit it opens the injection RTLD_LOCAL and calls InitializeInjection,
#     then returns CUDA_ERROR_NO_DEVICE; returning 0 gets the library dlclosed at once and
#     called again at the next cuInit; returning 1 keeps it, never called again;
#   - PROG (real_cuda_prog.c: dlopen libcuda.so.1, cuInit twice, exit 5) and a Python
#     program (real_cuda_prog.py through ctypes, then Python work: where the crash of
#     issue 26 came) and FAKE_PROG (linked against libcuda.so.1, run on the real one) under
#     memrec: exit status and stdout as without it, exactly the launcher's one line, and
#     proof that the driver did load libmemrec.so and call it, once (LD_DEBUG: the library
#     "dynamically loaded by libcuda.so.1", one InitializeInjection lookup, a CUPTI loaded by
#     libmemrec.so — which only InitializeInjection does);
#   - --no-cupti, MEMREC_CUPTI=/nonexistent, CUDA_VISIBLE_DEVICES="": the same, no trace file;
#   - the CUPTI choice with the library armed directly (MEMREC_OUTPUT + CUDA_INJECTION64_PATH,
#     no launcher, so the subscription warning is not silenced by MEMREC_NO_DEVICE):
#     MEMREC_CUPTI=libcupti.so.11.8 (no cuptiSubscribe_v2), libcupti.so.12 found on the
#     search path for the 12.2 driver, else the toolkit's CUPTI (TOOLKIT_CUPTI, CUDA
#     TOOLKIT_MAJOR): the exact warning each gives.
#
# Seen (Debian bookworm libcuda1 535.261.03-1, CUDA 12.2; libcupti11.8 11.8.87; trixie
# libcupti12 12.4.127; the toolkit's CUPTI 13 at /usr/local/cuda; no GPU; 2026-12-01):
#   cuInit(0) = 100 (CUDA_ERROR_NO_DEVICE) every time, cuDriverGetVersion = 0, 12020;
#   the driver dlopens CUDA_INJECTION64_PATH with RTLD_NOW (flags 0x2: local), calls
#   InitializeInjection, and on 0 dlcloses it before cuInit returns (each cuInit: load, call,
#   unload); on 1 it keeps it and calls it no more (plain or -z nodelete alike); a -z nodelete
#   library that returns 0 stays mapped and is called at every cuInit. No other NVIDIA
#   library is opened (libnvidia-ptxjitcompiler1 is not needed for this). CUPTI cannot
#   subscribe: CUPTI 11.8 cuptiSubscribe = CUPTI_ERROR_NOT_INITIALIZED, CUPTI 12.4
#   cuptiSubscribe = CUPTI_ERROR_NOT_INITIALIZED, CUPTI 13 cuptiSubscribe_v2 =
#   CUPTI_ERROR_UNKNOWN. Under memrec: the launcher's probe says "no CUDA device" and the
#   library adds nothing (MEMREC_NO_DEVICE), not even for a MEMREC_CUPTI that cannot be
#   opened (no GPU: nothing would be recorded either way). What no machine here can show: a subscription that
#   works, i.e. any recorded allocation (that needs a GPU: tests/gpu/).
set -u
fetch_dir=$1
memrec=$2
prog=$3
probe=$4
probe_nodelete=$5
fake_prog=$6
python=$7
toolkit_cupti=$8
toolkit_major=$9
name=test_real_driver
here=$(cd "$(dirname "$0")" && pwd)

bash "$here/fetch.sh" "$fetch_dir"
rc=$?
[ "$rc" = 0 ] || exit "$rc" # 77: fetch.sh said why
# shellcheck source=/dev/null
. "$fetch_dir/real_driver.env"
. "$here/../shlib.sh"
unset MEMREC_CUPTI MEMREC_OUTPUT CUDA_INJECTION64_PATH NVTX_INJECTION64_PATH CUDA_VISIBLE_DEVICES \
    MEMREC_NO_DEVICE MEMREC_NO_CUPTI MEMREC_QUIET LD_PRELOAD LD_DEBUG LD_DEBUG_OUTPUT
export TMPDIR=$tmp # memrec's manifest
driver=$RD_DRIVER_DIR
lib="$(cd "$(dirname "$memrec")" && pwd)/libmemrec.so"
[ -f "$lib" ] || { echo "SKIP: no libmemrec.so beside $memrec" >&2; exit 77; }
mkdir -p out ld
start=$(date +%s)

# run NAME CMD...: CMD with the real driver first on the search path (and whatever
# LD_LIBRARY_PATH the caller adds: EXTRA_LIBS); NAME.out, NAME.err, NAME.rc, and the
# loader's log of every process under ld/NAME.* when LD_LOG=1.
run() {
    local run_name=$1
    shift
    if [ "${LD_LOG:-0}" = 1 ]; then
        LD_DEBUG=files,bindings LD_DEBUG_OUTPUT="$tmp/ld/$run_name" \
            LD_LIBRARY_PATH="$driver${EXTRA_LIBS:+:$EXTRA_LIBS}" "$@" >"$run_name.out" 2>"$run_name.err"
    else
        LD_LIBRARY_PATH="$driver${EXTRA_LIBS:+:$EXTRA_LIBS}" "$@" >"$run_name.out" 2>"$run_name.err"
    fi
    echo $? >"$run_name.rc"
}
memrec_run() { # NAME [memrec options] -- CMD...
    local run_name=$1
    shift
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    run "$run_name" "$memrec" -o "$tmp/out/$run_name-%p.zst" "${opts[@]}" -- "$@"
}
no_device() { echo "memrec: no CUDA driver/GPU found (no CUDA device): $1 runs unrecorded except NVTX/memrec.h annotations"; }
# same_as REF NAME: NAME's exit status and stdout are REF's.
same_as() {
    [ "$(cat "$2.rc")" = "$(cat "$1.rc")" ] && cmp -s "$1.out" "$2.out" ||
        fail "$2: the program changed under memrec: exit $(cat "$2.rc") (not $(cat "$1.rc")), stdout: $(cat "$2.out")"
}
# stderr_is NAME LINES: NAME's stderr is exactly LINES.
stderr_is() {
    [ "$(cat "$1.err")" = "$2" ] || fail "$1: stderr is not what the real driver gives: $(cat "$1.err")"
}
# loaded NAME: the loader's log of run NAME (all its processes).
loaded() { cat "$tmp/ld/$1".* 2>/dev/null; }
# injected NAME: the real driver loaded libmemrec.so and looked InitializeInjection up once.
injected() {
    local log
    log=$(loaded "$1")
    grep -qF "file=$lib [0];  dynamically loaded by $driver/libcuda.so.1 [0]" <<<"$log" ||
        fail "$1: libmemrec.so was not loaded by the real libcuda.so.1 (the test proves nothing)"
    [ "$(grep -c "calling init: $lib\$" <<<"$log")" = 1 ] ||
        fail "$1: libmemrec.so initialized $(grep -c "calling init: $lib\$" <<<"$log") times, not once"
    [ "$(grep -c "normal symbol \`InitializeInjection'" <<<"$log")" = 1 ] ||
        fail "$1: the driver looked InitializeInjection up $(grep -c "normal symbol \`InitializeInjection'" <<<"$log") times, not once (returned 1: kept)"
}
# cupti_loaded NAME PATH: libmemrec.so's attach (InitializeInjection) opened that CUPTI.
cupti_loaded() {
    loaded "$1" | grep -qF "calling init: $2" ||
        fail "$1: $2 was not loaded: $(loaded "$1" | grep -o 'calling init: [^ ]*cupti[^ ]*' | sort -u)"
}
expected_out=$(printf 'cuInit: 100\ncuInit: 100\ncuDriverGetVersion: 0 12020\nwork: 96280')

# ---- the driver itself -----------------------------------------------------------------
run plain "$prog" 2 5
[ "$(cat plain.rc)" = 5 ] && [ "$(cat plain.out)" = "$expected_out" ] ||
    fail "the real driver: exit $(cat plain.rc), stdout: $(cat plain.out) $(cat plain.err)"
[ -s plain.err ] && fail "the real driver wrote on stderr: $(cat plain.err)"

probe_case() { # NAME LIB RETURN EXPECTED-STDERR
    CUDA_INJECTION64_PATH=$2 PROBE_RETURN=$3 run "$1" "$prog" 2 5
    same_as plain "$1"
    stderr_is "$1" "$4"
}
p_load='probe: loaded'
p_init='probe: InitializeInjection (local)'
p_gone='probe: unloaded'
probe_case probe0 "$probe" 0 "$(printf '%s\n' "$p_load" "$p_init" "$p_gone" "$p_load" "$p_init" "$p_gone")"
probe_case probe1 "$probe" 1 "$(printf '%s\n' "$p_load" "$p_init" "$p_gone")"
probe_case probe_nd0 "$probe_nodelete" 0 "$(printf '%s\n' "$p_load" "$p_init" "$p_init" "$p_gone")"
probe_case probe_nd1 "$probe_nodelete" 1 "$(printf '%s\n' "$p_load" "$p_init" "$p_gone")"

# ---- memrec on the real driver ----------------------------------------------------------
memrec_run c -- "$prog" 2 5
same_as plain c
stderr_is c "$(no_device "$prog")"
LD_LOG=1 memrec_run c_ld -- "$prog" 2 5
same_as plain c_ld
injected c_ld
loaded c_ld | grep -q "calling init: [^ ]*libcupti" ||
    fail "c_ld: libmemrec.so loaded no CUPTI: InitializeInjection did not run"

run py_plain "$python" "$here/real_cuda_prog.py" 6
[ "$(cat py_plain.rc)" = 6 ] &&
    [ "$(cat py_plain.out)" = "$(printf 'cuInit: 100\ncuInit: 100\ncuDriverGetVersion: 0 12020\nwork: 440000')" ] ||
    fail "python on the real driver: exit $(cat py_plain.rc): $(cat py_plain.out) $(cat py_plain.err)"
memrec_run py -- "$python" "$here/real_cuda_prog.py" 6
same_as py_plain py
stderr_is py "$(no_device "$python")"
LD_LOG=1 memrec_run py_ld -- "$python" "$here/real_cuda_prog.py" 6
same_as py_plain py_ld
injected py_ld

# The DT_NEEDED shape: a program linked against libcuda.so.1 (the fake's, SKIP_BUILD_RPATH).
if [ -x "$fake_prog" ]; then
    run fake_plain "$fake_prog" alloc
    [ "$(cat fake_plain.rc)" = 1 ] && [ ! -s fake_plain.out ] ||
        fail "fake_cuda_prog on the real driver: exit $(cat fake_plain.rc): $(cat fake_plain.out)"
    LD_LOG=1 memrec_run fake -- "$fake_prog" alloc
    same_as fake_plain fake
    stderr_is fake "$(no_device "$fake_prog")"
    injected fake
fi

# ---- no CUPTI asked for, none to be had, no GPU visible ------------------------------------
LD_LOG=1 memrec_run nocupti --no-cupti -- "$prog" 2 5
same_as plain nocupti
stderr_is nocupti "$(no_device "$prog")"
injected nocupti
loaded nocupti | grep -q "calling init: [^ ]*libcupti" &&
    fail "--no-cupti: a CUPTI was loaded: $(loaded nocupti | grep -o 'calling init: [^ ]*libcupti[^ ]*')"

MEMREC_CUPTI=/nonexistent memrec_run missing -- "$prog" 2 5
same_as plain missing
stderr_is missing "$(no_device "$prog")"  # no GPU: the launcher's line says all

CUDA_VISIBLE_DEVICES="" LD_LOG=1 memrec_run hidden -- "$prog" 2 5
same_as plain hidden
stderr_is hidden "$(no_device "$prog")"
injected hidden

# ---- which CUPTI ------------------------------------------------------------------------
# Under the launcher: CUPTI 11.8 named; its failed subscription stays silent (no GPU said).
MEMREC_CUPTI=$RD_CUPTI11 LD_LOG=1 memrec_run c118 -- "$prog" 2 5
same_as plain c118
stderr_is c118 "$(no_device "$prog")"
injected c118
cupti_loaded c118 "$RD_CUPTI11"

# Armed directly, as docs/ENVIRONMENT.md describes: the library's own warning.
direct() { # NAME CMD...: libmemrec.so injected without the launcher
    local run_name=$1
    shift
    MEMREC_OUTPUT="$tmp/out/$run_name-%p.zst" CUDA_INJECTION64_PATH=$lib run "$run_name" "$@"
}
failed() { # SUBSCRIBE ERROR PATH HINT
    echo "memrec: CUPTI subscription failed ($1: $2; $3)$4: CUDA allocations are not recorded, the program runs on"
}
gpu_hint="; is a GPU visible to the process? else name a CUPTI for CUDA 12 in MEMREC_CUPTI"
MEMREC_CUPTI=$RD_CUPTI11 direct d118 "$prog" 2 5
same_as plain d118
stderr_is d118 "$(failed cuptiSubscribe CUPTI_ERROR_NOT_INITIALIZED "$RD_CUPTI11" "$gpu_hint")"
MEMREC_CUPTI=$RD_CUPTI11 direct d118py "$python" "$here/real_cuda_prog.py" 6
same_as py_plain d118py
stderr_is d118py "$(failed cuptiSubscribe CUPTI_ERROR_NOT_INITIALIZED "$RD_CUPTI11" "$gpu_hint")"
MEMREC_CUPTI=$RD_CUPTI11 CUDA_VISIBLE_DEVICES="" direct d118hidden "$prog" 2 5
same_as plain d118hidden
stderr_is d118hidden "$(failed cuptiSubscribe CUPTI_ERROR_NOT_INITIALIZED "$RD_CUPTI11" \
    "; CUDA_VISIBLE_DEVICES is empty, so no GPU is visible")"

if ldconfig -p 2>/dev/null | grep -q 'libcupti\.so\.12 '; then
    echo "note: this machine has a libcupti.so.12 on the loader's path: the search is not checked" >&2
else
    if [ -n "$RD_CUPTI12_DIR" ]; then
        # The driver is 12.2: libcupti.so.12 from the search path (trixie's 12.4).
        EXTRA_LIBS=$RD_CUPTI12_DIR direct d12 "$prog" 2 5
        same_as plain d12
        stderr_is d12 "$(failed cuptiSubscribe CUPTI_ERROR_NOT_INITIALIZED "$RD_CUPTI12_DIR/libcupti.so.12" "; is a GPU visible to the process?")"
    else
        echo "note: no CUPTI 12 ($RD_NO12): the libcupti.so.12 search is not checked" >&2
    fi
    # None on the path: the toolkit's, here CUPTI 13, newer than the driver.
    direct dtk "$prog" 2 5
    same_as plain dtk
    if [ "$toolkit_major" = 13 ]; then
        stderr_is dtk "$(failed cuptiSubscribe_v2 CUPTI_ERROR_UNKNOWN "$toolkit_cupti" \
            "; this CUPTI is for CUDA 13, the driver is 12.2: put libcupti.so.12 on LD_LIBRARY_PATH or name it in MEMREC_CUPTI")"
    else
        grep -qF "; $toolkit_cupti)" dtk.err && [ "$(grep -c . dtk.err)" = 1 ] ||
            fail "the toolkit's CUPTI (CUDA $toolkit_major): not one warning naming it: $(cat dtk.err)"
    fi
fi

# ---- nothing recorded, nothing left --------------------------------------------------------
left=$(ls -A out; ls memrec-*.zst 2>/dev/null)
[ -z "$left" ] || fail "trace files left where nothing was recorded: $left"

echo "$name: $(($(date +%s) - start)) s; driver ${RD_PACKAGES11%%;*}"
finish
