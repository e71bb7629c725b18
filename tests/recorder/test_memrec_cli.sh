#!/usr/bin/env bash
# test_memrec_cli.sh MEMREC PASSTHROUGH_PROG [MEMANALYZE] — the launcher as a
# user meets it: it must be invisible to the program it runs (exit status,
# stdout and stderr byte for byte, death by signal, signals sent to memrec),
# say one line when there is no driver, refuse bad options in one line, set
# the environment libmemrec.so reads (and no LD_PRELOAD: a process without
# CUDA gets nothing of the recorder), and turn a program's memrec.h calls
# into a symbolized trace (no GPU needed for that) that memanalyze reads.
set -u
memrec=$1
prog=$2
memanalyze=${3:-}
name=test_memrec_cli
here=$(cd "$(dirname "$0")" && pwd)
. "$here/shlib.sh"

# ---- memrec -- /bin/true: exit 0, exactly one line from memrec ---------------
"$memrec" -- /bin/true >out 2>err
rc=$?
[ "$rc" = 0 ] || fail "/bin/true under memrec exited $rc"
[ ! -s out ] || fail "/bin/true under memrec printed on stdout: $(cat out)"
[ "$(wc -l <err)" = 1 ] || fail "expected exactly one line on stderr, got: $(cat err)"
grep -q '^memrec: no CUDA driver/GPU found (.*): /bin/true runs unrecorded' err ||
    grep -q '^memrec: no trace written' err || fail "unexpected line: $(cat err)"
ls memrec-*.zst >/dev/null 2>&1 && fail "/bin/true left a trace"

# ---- exit status, stdout and stderr pass through byte for byte ---------------
"$prog" exit 3 >direct.out 2>direct.err
[ $? = 3 ] || fail "passthrough_prog itself did not exit 3"
for code in 0 3 77 255; do
    "$memrec" -q -- "$prog" exit "$code" >via.out 2>via.err
    rc=$?
    [ "$rc" = "$code" ] || fail "exit $code came back as $rc"
    cmp -s direct.out via.out || fail "stdout differs under memrec (exit $code)"
    cmp -s direct.err via.err || fail "stderr differs under memrec (exit $code): $(cat -v via.err)"
done
# Without -q memrec adds lines before (no driver) and after the run, never
# inside the program's bytes.
"$memrec" -- "$prog" exit 0 >via.out 2>via.err
cmp -s direct.out via.out || fail "stdout differs under memrec without -q"
if head -n 1 via.err | grep -aq '^memrec: no CUDA driver'; then
    tail -n +2 via.err >via.body
else
    cp via.err via.body
fi
head -c "$(wc -c <direct.err)" via.body | cmp -s - direct.err ||
    fail "stderr without -q does not carry the program's bytes"

# ---- death by signal: 128 + N, reported like a shell does -------------------
for sig in 9 11 15; do
    "$memrec" -q -- "$prog" signal "$sig" >via.out 2>via.err
    rc=$?
    [ "$rc" = $((128 + sig)) ] || fail "signal $sig came back as exit $rc"
    cmp -s direct.out via.out || fail "stdout differs when the program dies of signal $sig"
    grep -aq 'memrec: ' via.err && fail "-q printed a memrec line: $(grep '^memrec: ' via.err)"
done
"$memrec" -- "$prog" signal 11 >/dev/null 2>via.err
grep -aq "memrec: $prog: Segmentation fault$" via.err || fail "SIGSEGV not reported: $(cat via.err)"
# SIGINT: memrec dies of SIGINT itself (bash shows 130 either way; the report
# must stay quiet, as shells are about Ctrl-C).
"$memrec" -- "$prog" signal 2 >/dev/null 2>via.err
rc=$?
[ "$rc" = 130 ] || fail "SIGINT came back as $rc"
grep -aq 'Interrupt' via.err && fail "SIGINT was reported: $(cat via.err)"
if command -v python3 >/dev/null; then
    status=$(python3 -c 'import subprocess, sys; print(subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode)' \
        "$memrec" -q -- "$prog" signal 2 2>/dev/null | tail -n 1)
    [ "$status" = -2 ] || fail "memrec did not die of SIGINT itself (status $status)"
fi

# ---- a signal sent to memrec reaches the program -----------------------------
"$memrec" -q -- sh -c 'trap "exit 42" TERM; touch ready; while :; do sleep 0.05; done' &
pid=$!
for _ in $(seq 200); do [ -e ready ] && break; sleep 0.05; done
[ -e ready ] || fail "the trap program never started"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 42 ] || fail "SIGTERM to memrec: expected the program's trap (42), got $rc"

# ---- options ------------------------------------------------------------------
expect_usage_error() {
    "$memrec" "$@" >out 2>err
    local rc=$?
    [ "$rc" = 2 ] || fail "memrec $* exited $rc, expected 2"
    [ "$(wc -l <err)" = 1 ] && grep -q '^memrec: ' err || fail "memrec $*: not one error line: $(cat err)"
    [ ! -s out ] || fail "memrec $* printed on stdout"
}
expect_usage_error --bogus -- /bin/true
expect_usage_error
expect_usage_error --stack-depth x -- /bin/true
expect_usage_error --stack-depth 5000 -- /bin/true
expect_usage_error --max-size 2Q -- /bin/true
expect_usage_error -o
expect_usage_error --lib "$tmp/no-such-lib.so" -- /bin/true
"$memrec" --help >out 2>err
[ $? = 0 ] && grep -q '^usage: memrec ' out && [ ! -s err ] || fail "--help"
"$memrec" --version >out 2>err
[ $? = 0 ] && grep -q '^memrec (gpumemtrace) [0-9]' out || fail "--version: $(cat out err)"
"$memrec" -q -- "$tmp/no-such-program" 2>err
rc=$?
[ "$rc" = 127 ] || fail "a missing program gave $rc, expected 127"
grep -q "cannot run $tmp/no-such-program" err || fail "missing program not named: $(cat err)"

# ---- the environment libmemrec.so reads ---------------------------------------
env_of() { "$memrec" -q "${@:2}" -- "$prog" env "$1" 2>/dev/null; }
lib=$(env_of CUDA_INJECTION64_PATH)
case "$lib" in /*/libmemrec.so) ;; *) fail "CUDA_INJECTION64_PATH is '$lib'" ;; esac
[ -f "$lib" ] || fail "CUDA_INJECTION64_PATH names no file: $lib"
[ "$(env_of NVTX_INJECTION64_PATH)" = "$lib" ] || fail "NVTX_INJECTION64_PATH"
[ "$(env_of LD_PRELOAD)" = "(unset)" ] || fail "memrec sets LD_PRELOAD: $(env_of LD_PRELOAD)"
[ "$(LD_PRELOAD=libc.so.6 env_of LD_PRELOAD)" = "libc.so.6" ] ||
    fail "LD_PRELOAD is changed: $(LD_PRELOAD=libc.so.6 env_of LD_PRELOAD)"
# A process that never touches CUDA (a shell, a compiler, nvidia-smi) gets
# nothing of the recorder: no libmemrec.so, zstd, CUPTI or libunwind.
"$memrec" -q -- cat /proc/self/maps >maps.out 2>/dev/null
grep -Eq 'libmemrec|libzstd|libcupti|libunwind' maps.out &&
    fail "the recorder is loaded into a process without CUDA: $(grep -Eo '[^ ]*(libmemrec|libzstd|libcupti|libunwind)[^ ]*' maps.out | sort -u)"
[ "$(env_of MEMREC_OUTPUT)" = "$tmp/memrec-%h-%p.zst" ] || fail "default MEMREC_OUTPUT: $(env_of MEMREC_OUTPUT)"
[ "$(env_of MEMREC_OUTPUT -o run-%r.zst)" = "$tmp/run-%r.zst" ] || fail "relative -o is not made absolute"
[ "$(env_of MEMREC_OUTPUT -o /x/%p.zst)" = "/x/%p.zst" ] || fail "absolute -o"
[ "$(env_of MEMREC_STACK_DEPTH)" = 64 ] || fail "default stack depth"
[ "$(env_of MEMREC_STACK_DEPTH --stack-depth 8)" = 8 ] || fail "--stack-depth 8"
[ "$(env_of MEMREC_MAX_BYTES --max-size 2G)" = 2147483648 ] || fail "--max-size 2G"
[ "$(env_of MEMREC_MAX_BYTES)" = "(unset)" ] || fail "MEMREC_MAX_BYTES set without --max-size"
[ "$(env_of MEMREC_START_STEP --start-step 5)" = 5 ] || fail "--start-step 5"
[ "$(env_of MEMREC_START_STEP)" = "(unset)" ] || fail "MEMREC_START_STEP set without --start-step"
"$memrec" --start-step x -- true 2>err; [ $? = 2 ] && grep -q "start-step" err || fail "bad --start-step"
[ "$(env_of MEMREC_NO_CUPTI --no-cupti)" = 1 ] || fail "--no-cupti"
[ "$(env_of MEMREC_QUIET)" = 1 ] || fail "-q does not quiet the library"
case "$(env_of MEMREC_MANIFEST)" in /*) ;; *) fail "MEMREC_MANIFEST is not a path" ;; esac
[ "$(MEMREC_LIB=$lib "$memrec" -q -- "$prog" env CUDA_INJECTION64_PATH)" = "$lib" ] || fail "MEMREC_LIB"
ls "${TMPDIR:-/tmp}"/memrec-manifest-* 2>/dev/null | grep -q . &&
    echo "note: manifests from other runs exist in ${TMPDIR:-/tmp}" >&2

# ---- a trace from memrec.h calls, symbolized, read by memanalyze -------------
"$memrec" -o "$tmp/ann-%p.zst" -- "$prog" annotate >ann.out 2>ann.err
rc=$?
[ "$rc" = 0 ] || fail "annotate exited $rc: $(cat ann.err)"
traces=$(ls "$tmp"/ann-*.zst 2>/dev/null)
[ "$(echo "$traces" | grep -c .)" = 1 ] || fail "expected one trace, got: $traces"
grep -Eq "^memrec: trace written: ann-[0-9]*\.zst \(2 events, [0-9.]+ (B|KiB|MiB)\)$" ann.err ||
    fail "no 'trace written' line: $(cat ann.err)"
if [ -n "$memanalyze" ] && [ -f "$traces" ]; then
    line=$(cat ann.out)
    q="SELECT count(*) FROM frames WHERE name = 'main' AND line = $line AND file LIKE '%/passthrough_prog.c'"
    [ "$("$memanalyze" sql "$traces" "$q" --csv | tail -n 1)" = 1 ] ||
        fail "the trace has no symbolized frame main() at passthrough_prog.c:$line"
    "$memanalyze" symbolize "$traces" >sym.out 2>&1 || fail "memanalyze symbolize: $(cat sym.out)"
    grep -q ': [0-9]* native frames: 0 symbolized now, [1-9][0-9]* already' sym.out ||
        fail "memrec left frames to symbolize: $(cat sym.out)"
fi
# A trace still being written when the command ends (a background child left
# running) is not symbolized under its writer's feet, and ends complete.
"$memrec" -o "$tmp/linger-%p.zst" -- sh -c "\"$prog\" linger & sleep 0.7" >/dev/null 2>linger.err
grep -q "still being written by a process the command left running" linger.err ||
    fail "a trace still being written was not recognised: $(cat linger.err)"
sleep 3
if [ -n "$memanalyze" ]; then
    lt=$(ls "$tmp"/linger-*.zst 2>/dev/null | head -n 1)
    "$memanalyze" info "$lt" >linger.info 2>&1 || fail "lingering trace unreadable: $(cat linger.info)"
    grep -qi "clean" linger.info || fail "lingering trace did not end cleanly: $(cat linger.info)"
fi
# --start-step 2: steps 0 and 1 are not written, but what they left live
# (the 1 MiB region and two leaked 4 KiB ones) is the trace's seed.
if [ -n "$memanalyze" ]; then
    "$memrec" -q --start-step 2 -o "$tmp/win-%p.zst" -- "$prog" steps || fail "steps exited $?"
    wt=$(ls "$tmp"/win-*.zst 2>/dev/null | head -n 1)
    seed=$("$memanalyze" sql "$wt" "SELECT count(*) FROM events WHERE event_id < 0" --csv | tail -n 1)
    recorded=$("$memanalyze" sql "$wt" "SELECT count(*) FROM events WHERE event_id > 0" --csv | tail -n 1)
    steps=$("$memanalyze" sql "$wt" "SELECT group_concat(step) FROM steps" --csv | tail -n 1)
    [ "$seed" = 3 ] && [ "$recorded" = 9 ] && [ "$steps" = "\"2,3,4\"" ] ||
        fail "--start-step 2: seed $seed (want 3), events $recorded (want 9), steps $steps (want 2,3,4)"
fi
# A multiprocessing worker of a Python process that records nothing records
# on its own (it loads libmemrec.so through memrec.h's snippet), and its
# trace is complete although the worker ends with os._exit (no atexit):
# memrec's Python hook calls memrec_before_exit first.
if [ -n "$memanalyze" ] && command -v python3 >/dev/null; then
    cat >fork_exit.py <<'PY'
import ctypes, multiprocessing, os

def work():
    memrec = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
    memrec.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    for i in range(1000):
        memrec.memrec_region_alloc(0x10000 + i, 1, 0)

if __name__ == "__main__":
    worker = multiprocessing.get_context("fork").Process(target=work)
    worker.start()
    worker.join()
    raise SystemExit(worker.exitcode)
PY
    "$memrec" -q -o "$tmp/fx-%p.zst" -- python3 fork_exit.py || fail "fork_exit.py exited $?"
    fx=$(ls "$tmp"/fx-*.zst 2>/dev/null)
    [ "$(echo "$fx" | grep -c .)" = 1 ] || fail "fork-exit: expected the child's trace only: $fx"
    "$memanalyze" info "$fx" >fx.info 2>&1
    grep -q "end: clean shutdown, 1000 events written" fx.info ||
        fail "fork-exit: the child's trace is not complete: $(cat fx.info)"
fi
# A process ending with a raw _exit(2) (nothing of the recorder runs) leaves a
# readable trace holding what the writer wrote before (its rounds are 200 ms:
# the alloc 1.5 s before the exit is there), and memrec says it ended
# unclosed. The one made just before the exit may be missing.
if [ -n "$memanalyze" ]; then
    "$memrec" -o "$tmp/raw-%p.zst" -- "$prog" rawexit 1500 >/dev/null 2>raw.err
    rc=$?
    [ "$rc" = 5 ] || fail "rawexit exited $rc: $(cat raw.err)"
    grep -Eq "^memrec: trace written: raw-[0-9]*\.zst \([12] events, .*ended without closing it" raw.err ||
        fail "an unclosed trace is not reported as such: $(cat raw.err)"
    rt=$(ls "$tmp"/raw-*.zst 2>/dev/null | head -n 1)
    n=$("$memanalyze" sql "$rt" "SELECT count(*) FROM events WHERE op = 'alloc' AND addr IS NOT NULL" --csv 2>raw.sql | tail -n 1)
    case "$n" in 1 | 2) ;; *) fail "raw _exit: the trace holds $n allocs (want 1 or 2): $(cat raw.sql)" ;; esac
    # Exiting at once: the trace is still a readable one (it was a 0-byte file).
    "$memrec" -q -o "$tmp/rawnow-%p.zst" -- "$prog" rawexit 0 >/dev/null 2>&1
    "$memanalyze" info "$(ls "$tmp"/rawnow-*.zst | head -n 1)" >rawnow.info 2>&1 ||
        fail "a process that _exits at once leaves an unreadable trace: $(cat rawnow.info)"
fi
# A program that records nothing leaves no trace.
"$memrec" -o "$tmp/none-%p.zst" -- "$prog" exit 0 >/dev/null 2>&1
ls "$tmp"/none-*.zst >/dev/null 2>&1 && fail "a program without CUDA or memrec.h calls left a trace"

finish
