#!/usr/bin/env bash
# run_all.sh — everything that needs a GPU, in one go of at most --budget seconds (480), on a
# GPU machine lent for minutes with no network: from a package made here (tests/gpu/package.sh:
# the binaries, the libraries a GPU image may lack, these scripts) or from a build tree.
#
# THE DEVICE COMMAND (tests/gpu/README.md; first, here: tests/gpu/package.sh build-gpu build-gpu-pkg):
#   carry ["build-gpu-pkg"], timeout_s 600, command: bash build-gpu-pkg/tests/gpu/run_all.sh --package build-gpu-pkg "$OUT"
#
#   tests/gpu/run_all.sh [--steps N] [--budget S] [--pretend-no-gpu] --package PKG_DIR OUT_DIR
#   tests/gpu/run_all.sh [--steps N] [--budget S] [--pretend-no-gpu] BUILD_DIR OUT_DIR
#
# With --package everything it runs comes from PKG_DIR (binaries in bin/, scripts in tests/gpu/
# and samples/, as package.sh laid them out), and OUT_DIR receives ONE file,
# gpu_results.tar.gz (run_all/ inside), rewritten after each part so that a run stopped from
# outside still returns what it did; with BUILD_DIR the binaries come from the build tree, the
# scripts from this source tree, and OUT_DIR receives the run_all/ files themselves (the ctest
# gpu_run_all). Either way:
#   verdicts.txt (one line per check: PASS / FAIL / SKIP, also printed), figures.tsv (mode, bare
#   and memrec steps/s, overhead), fixtures/cupti/*.log (raw CUPTI callback streams, to review
#   and copy into tests/fixtures/cupti, see its README), traces/*.zst, logs/, machine.txt
#   (nvidia-smi, torch, glibc, the CUPTI memrec used), package.txt (what the package holds).
#
# 0. the package on this machine: its glibc is new enough, every library resolves, memanalyze
#    analyses a synth trace exactly, memrec starts;
# 1. the CUDA samples (samples/cuda, every scenario) under memrec, each checked event by event
#    (test_cuda_samples.py), their raw CUPTI callback logs saved as fixtures; and the CUPTI
#    memrec finds by itself (else one found on this machine is named for the samples, and the
#    miss is a FAIL);
# 2. samples/pytorch/train.py, bare and under memrec, in each mode: default, without NVTX ranges
#    (torch.cuda.nvtx made no-ops), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and on
#    two GPUs under torchrun (DDP, NCCL's cuMem buffers) when there are two: steps/s of each;
#    test_torch_train.py's scenarios (leak, fragment);
# 3. exact checks, each with a verdict:
#      the trace's PyTorch blocks over the steps' window = torch.cuda.memory_stats() over it
#        (allocs, requested bytes, free requests; train.py --stats, check_torch_window.py),
#        in the default and the expandable modes; the NVTX steps: exactly --steps;
#      runtime calls arrive as driver cbids (cudaMalloc -> cuMemAlloc_v2 in the callback log);
#      a pitched allocation is recorded as pitch x height (the malloc sample's check);
#      cuMem* reached through cuGetProcAddress/cudaGetDriverEntryPoint are still seen by CUPTI
#        (the vmm sample; expandable segments: CUPTI's mapped bytes = PyTorch's segment_map);
#      PyTorch's snapshot has the keys the recorder reads and its time_us is wall-clock time;
#      its _snapshot() imports torch._inductor (what fake_torch claims), and memrec's drains
#        import none of torch's lazy modules into a program that does not; train.py under
#        memrec ends with the modules it has without memrec, but memrec's hook's
#        (check_modules.py);
#      the optimizer step hook fires (torch.optim's global post-step hook, AdamW as train.py),
#        and makes exactly the steps of the run without NVTX (N steps, N begin and N-1 end marks);
#      on two GPUs, no rank's trace holds memory on the other rank's device.
# Each sub-run has its own timeout (`timeout`), cut to what is left of --budget; one that does
# not fit any more is a SKIP saying so. Exit 0: every check that ran passed; 1: some failed;
# 2: usage; 77: no GPU here or no binaries (the reason on stdout, "SKIP: …"; nothing is
# written then), or a GPU the driver cannot use (nothing but the package's checks could run;
# the results are written). --pretend-no-gpu takes the first way out (the ctests
# gpu_run_all_skip and gpu_package check it); --steps sets train.py's steps (30).
set -u
usage="usage: run_all.sh [--steps N] [--budget S] [--pretend-no-gpu] (--package PKG_DIR | BUILD_DIR) OUT_DIR"
steps=30
budget=480
no_gpu=0
pkg=""
while [ $# -gt 0 ]; do
    case $1 in
    --steps) steps=${2:?$usage} && shift 2 ;;
    --budget) budget=${2:?$usage} && shift 2 ;;
    --package) pkg=${2:?$usage} && shift 2 ;;
    --pretend-no-gpu) no_gpu=1 && shift ;;
    -*) echo "$usage" >&2 && exit 2 ;;
    *) break ;;
    esac
done
if [ -n "$pkg" ]; then
    [ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }
    out=$1
else
    [ $# -eq 2 ] || { echo "$usage" >&2; exit 2; }
    build=$1
    out=$2
fi
case $steps$budget in *[!0-9]*) echo "$usage" >&2 && exit 2 ;; esac
started=$(date +%s)
deadline=$((started + budget))
py=${PYTHON:-python3}

skip() {
    echo "SKIP: $*"
    exit 77
}

if [ -n "$pkg" ]; then
    [ -d "$pkg" ] || skip "no package folder $pkg (make it with tests/gpu/package.sh BUILD_DIR $pkg)"
    pkg=$(cd "$pkg" && pwd)
    bin=$pkg/bin
    memrec=$bin/memrec
    memanalyze=$bin/memanalyze
    sample=$bin/cuda_sample
    synth=$bin/synth
    scripts=$pkg/tests/gpu
    train=$pkg/samples/pytorch/train.py
    source_dir=$pkg
    where="package $pkg"
else
    [ -d "$build" ] || skip "no build folder $build"
    build=$(cd "$build" && pwd)
    here=$(cd "$(dirname "$0")" && pwd)
    memrec=$build/recorder/memrec
    memanalyze=$build/analyzer/memanalyze
    sample=$build/samples/cuda/cuda_sample
    synth=$build/samples/synth/synth
    scripts=$here
    source_dir=$(cd "$here/../.." && pwd)
    train=$source_dir/samples/pytorch/train.py
    where="build $build"
fi

# ---- is there a GPU? --------------------------------------------------------------------------
[ "$no_gpu" = 1 ] && skip "--pretend-no-gpu: as if there were no GPU"
if ! command -v nvidia-smi >/dev/null 2>&1 && [ -x /usr/local/nvidia/bin/nvidia-smi ]; then
    PATH=$PATH:/usr/local/nvidia/bin
fi
command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: no NVIDIA driver on this machine"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -ge 1 ] || skip "nvidia-smi lists no GPU ($(nvidia-smi -L 2>&1 | head -1))"
[ -x "$memrec" ] && [ -x "$memanalyze" ] || skip "no memrec/memanalyze in the $where (build first)"

# ---- where the results go ---------------------------------------------------------------------
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gmt_gpu.XXXXXX") || exit 1
export GMT_CACHE_DIR=$scratch/cache # memanalyze's databases: not results, not in $HOME
if [ -n "$pkg" ]; then
    mkdir -p "$out" || exit 1
    results=$(cd "$out" && pwd)
    out=$scratch/run_all
else
    results=""
fi
mkdir -p "$out"/fixtures/cupti "$out"/traces "$out"/logs || exit 1
out=$(cd "$out" && pwd)
verdicts=$out/verdicts.txt
figures=$out/figures.tsv
: >"$verdicts"
printf 'mode\tbare_steps_per_s\tmemrec_steps_per_s\toverhead_pct\n' >"$figures"
[ -n "$pkg" ] && [ -f "$pkg/package.txt" ] && cp "$pkg/package.txt" "$out/package.txt"
failed=0
verdict() { # verdict PASS|FAIL|SKIP CHECK [DETAIL]
    printf '%-4s %s%s\n' "$1" "$2" "${3:+: $3}" | tee -a "$verdicts"
    [ "$1" = FAIL ] && failed=1
    return 0
}

# The tarball (package mode): at most 15 MiB (the device tool brings back files of up to
# 16 MiB); the largest traces are left out until it fits, and left_out.txt says which.
pack() {
    [ -n "$results" ] || return 0
    local tgz=$scratch/gpu_results.tar.gz left=$scratch/left_out
    : >"$left"
    rm -f "$out/left_out.txt"
    echo "elapsed: $(($(date +%s) - started)) s of a budget of $budget s" >"$out/elapsed.txt"
    while :; do
        tar -C "$scratch" --exclude-from="$left" -czf "$tgz" run_all 2>/dev/null
        [ "$(stat -c %s "$tgz")" -le $((15 << 20)) ] && break
        local big="" _size path
        while read -r _size path; do
            grep -qxF "$path" "$left" || { big=$path && break; }
        done < <(cd "$scratch" && find run_all/traces run_all/fixtures -type f -printf '%s %p\n' | sort -rn)
        [ -n "$big" ] || break
        echo "$big" >>"$left"
        cp "$left" "$out/left_out.txt" # the tarball's own list of what it lacks
    done
    mv -f "$tgz" "$results/gpu_results.tar.gz"
}
trap 'pack; rm -rf "$scratch"' EXIT

# tmo OWN CMD…: CMD under `timeout`, its limit OWN seconds or what the budget has left (20 s
# kept for the end); 125 without running it when less than 15 s would be left. $limit: the
# limit used. 124 or 137: timed out.
limit=0
tmo() {
    local own=$1
    shift
    limit=$((deadline - $(date +%s) - 20))
    [ "$limit" -gt "$own" ] && limit=$own
    [ "$limit" -ge 15 ] || return 125
    timeout -k 10 "$limit" "$@"
}
# verdict_rc RC CHECK LOG: the verdict of a sub-run that either passes (0) or not
verdict_rc() {
    case $1 in
    0) verdict PASS "$2" ;;
    77) verdict SKIP "$2" "$(grep -m1 SKIP "$3" 2>/dev/null | sed 's/^SKIP: //')" ;;
    124 | 137) verdict FAIL "$2" "timed out after ${limit} s, see ${3#$out/}" ;;
    125) verdict SKIP "$2" "out of time (--budget $budget s)" ;;
    *) verdict FAIL "$2" "exit $1, see ${3#$out/}" ;;
    esac
}

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)
{
    echo "GPUs: $ngpu ($gpu_name); $where; output $out"
    echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null); kernel: $(uname -r); $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "python: $(command -v "$py") ($("$py" --version 2>&1))"
    nvidia-smi 2>&1
} >"$out/machine.txt"
head -1 "$out/machine.txt"

# The end: 1 when a check failed; 77 when none but the package's could run (a GPU the driver
# cannot use), else 0.
finish() {
    if [ $failed = 0 ] && ! grep -v '^PASS package: ' "$verdicts" | grep -q '^PASS'; then
        echo "SKIP: nothing could run on this GPU (see ${results:-$out}: verdicts.txt)"
        exit 77
    fi
    echo
    column -t -s "$(printf '\t')" "$figures" 2>/dev/null || cat "$figures"
    echo "$(grep -c '^PASS' "$verdicts") passed, $(grep -c '^FAIL' "$verdicts") failed," \
        "$(grep -c '^SKIP' "$verdicts") skipped in $(($(date +%s) - started)) s"
    if [ -n "$results" ]; then
        echo "results: $results/gpu_results.tar.gz (run_all/: verdicts.txt, figures.tsv, fixtures/cupti, traces, logs)"
    else
        echo "verdicts: $verdicts; fixtures to review: $out/fixtures/cupti (copy into tests/fixtures/cupti)"
    fi
    exit $failed
}

sqlv() { # sqlv TRACE QUERY: the first column of the first row
    timeout 120 "$memanalyze" sql "$1" "$2" --csv 2>/dev/null | sed -n 2p | cut -d, -f1
}
sqlrows() { # sqlrows TRACE QUERY: every row, columns joined by ':', rows by ' '
    timeout 120 "$memanalyze" sql "$1" "$2" --csv 2>/dev/null | sed 1d | tr ',' ':' | tr '\n' ' ' | sed 's/ $//'
}

# ---- 0. the package on this machine -----------------------------------------------------------
need=$(sed -n 's/^glibc_needed: //p' "$out/package.txt" 2>/dev/null)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [ -n "$need" ]; then
    if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ]; then
        verdict PASS "package: glibc here is new enough" "$have >= $need"
    else
        verdict FAIL "package: glibc here is new enough" "${have:-unknown} < $need: rebuild on an older system"
    fi
fi
unresolved=""
for f in "$memrec" "$(dirname "$memrec")/libmemrec.so" "$memanalyze" "$sample" "$synth"; do
    [ -e "$f" ] || continue
    nf=$(ldd "$f" 2>&1 | grep 'not found' | awk '{print $1}' | tr '\n' ' ')
    [ -n "$nf" ] && unresolved="$unresolved $(basename "$f"): $nf"
done
ldd "$memanalyze" >"$out/logs/ldd_memanalyze.txt" 2>&1
[ -z "$unresolved" ] && verdict PASS "package: every library resolves here" ||
    verdict FAIL "package: every library resolves here" "not found:$unresolved"
if ! "$memanalyze" --help >"$out/logs/memanalyze_help.txt" 2>&1; then
    verdict FAIL "package: memanalyze runs here" "see logs/memanalyze_help.txt"
    finish
fi
if [ -x "$synth" ]; then
    "$synth" --steps 12 --seed 1 -o "$out/traces/synth.zst" >"$out/logs/synth.txt" 2>&1
    n=$(sqlv "$out/traces/synth.zst" "SELECT count(*) FROM steps")
    [ "$n" = 12 ] && verdict PASS "package: memanalyze reads a synth trace here" "12 steps" ||
        verdict FAIL "package: memanalyze reads a synth trace here" "${n:-no} steps for 12"
    rm -f "$out/traces/synth.zst"
fi
"$memrec" --help >"$out/logs/memrec_help.txt" 2>&1 && verdict PASS "package: memrec runs here" || {
    verdict FAIL "package: memrec runs here" "see logs/memrec_help.txt"
    finish
}
pack

# ---- 1. the CUDA samples ----------------------------------------------------------------------
# Which CUPTI memrec finds by itself, on one sample run; when it finds none, a CUPTI of this
# machine is named for the samples (PyTorch's processes have their own loaded).
cupti_for_samples=""
find_cupti() { # a libcupti.so* on this machine: the toolkit's, else PyTorch's wheel's
    local dirs="/usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64 /usr/local/cuda/lib"
    dirs="$dirs $(ls -d /usr/local/cuda*/targets/*/lib 2>/dev/null | tr '\n' ' ')"
    dirs="$dirs $("$py" -c 'import nvidia, sys; print(" ".join(nvidia.__path__))' 2>/dev/null)"
    for d in $dirs; do
        [ -d "$d" ] && find "$d" -maxdepth 3 -name 'libcupti.so*' 2>/dev/null
    done | sort -V | tail -1
}
# The sample's libcudart is this machine's toolkit's (its RUNPATH: /usr/local/cuda/lib64 and
# lib); where that has none of its version, one of PyTorch's wheels is used, and said so.
sample_env=()
if [ -x "$sample" ]; then
    cudart=$(ldd "$sample" 2>/dev/null | awk '/libcudart.*not found/ {print $1; exit}')
    if [ -n "$cudart" ]; then
        dirs="$("$py" -c 'import nvidia, sys; print(" ".join(nvidia.__path__))' 2>/dev/null) /usr/local /opt"
        found=$(for d in $dirs; do [ -d "$d" ] && timeout 20 find "$d" -maxdepth 5 -name "$cudart" 2>/dev/null; done | head -1)
        if [ -n "$found" ]; then
            sample_env=(LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
            echo "cuda_sample: $cudart from $found (LD_LIBRARY_PATH)" >>"$out/machine.txt"
        fi
        [ -n "$found" ] && verdict PASS "cuda_sample's $cudart found" "not on the loader's path: $found" ||
            verdict FAIL "cuda_sample's $cudart found" "not on this machine: the samples cannot run"
    fi
fi
if [ -x "$sample" ]; then
    tmo 60 env ${sample_env[@]+"${sample_env[@]}"} "$memrec" -o "$out/traces/cupti_probe.zst" -- "$sample" malloc \
        >"$out/logs/cupti_probe.txt" 2>&1
    rc=$?
    line=$(grep -m1 '^memrec: CUPTI ' "$out/logs/cupti_probe.txt")
    if [ $rc -eq 125 ]; then
        verdict_rc $rc "memrec finds a CUPTI by itself" "$out/logs/cupti_probe.txt"
    elif [ -n "$line" ]; then
        verdict PASS "memrec finds a CUPTI by itself" "${line#memrec: }"
        echo "$line" >>"$out/machine.txt"
    elif grep -q 'no usable CUPTI' "$out/logs/cupti_probe.txt"; then
        cupti_for_samples=$(find_cupti)
        verdict FAIL "memrec finds a CUPTI by itself" "$(grep -m1 -o 'no usable CUPTI.*' "$out/logs/cupti_probe.txt" | cut -c1-300); samples run with MEMREC_CUPTI=${cupti_for_samples:-none found}"
    else
        verdict SKIP "memrec finds a CUPTI by itself" "the probe run said neither (exit $rc, see logs/cupti_probe.txt)"
    fi
    for s in malloc async managed pinned vmm fail nvtx; do
        tmo 90 env GMT_SAVE_CALLBACK_LOGS="$out/fixtures/cupti" ${sample_env[@]+"${sample_env[@]}"} \
            ${cupti_for_samples:+MEMREC_CUPTI="$cupti_for_samples"} \
            "$py" "$scripts/test_cuda_samples.py" --keep "$out/traces" \
            "$memrec" "$memanalyze" "$sample" "$s" >"$out/logs/cuda_$s.txt" 2>&1
        verdict_rc $? "cuda sample $s under memrec" "$out/logs/cuda_$s.txt"
    done
    mlog=$(ls "$out"/fixtures/cupti/*_cuda_malloc.log 2>/dev/null | head -1)
    vlog=$(ls "$out"/fixtures/cupti/*_cuda_vmm.log 2>/dev/null | head -1)
    ran() { grep -q "^PASS cuda sample $1\|^FAIL cuda sample $1" "$verdicts"; }
    if ! ran malloc; then
        verdict SKIP "runtime calls arrive as driver cbids" "the malloc sample did not run"
    elif [ -n "$mlog" ] && grep -q '^exit cuMemAlloc_v2 ' "$mlog"; then
        verdict PASS "runtime calls arrive as driver cbids" "cudaMalloc -> cuMemAlloc_v2"
    else
        verdict FAIL "runtime calls arrive as driver cbids" "no cuMemAlloc_v2 exit in ${mlog:-the malloc log}"
    fi
    if ! ran malloc; then
        verdict SKIP "pitched allocation recorded as pitch x height" "the malloc sample did not run"
    elif [ -n "$mlog" ] && grep -q '^exit cuMemAllocPitch_v2 ' "$mlog" &&
        grep -q '^PASS cuda sample malloc' "$verdicts"; then
        verdict PASS "pitched allocation recorded as pitch x height"
    else
        verdict FAIL "pitched allocation recorded as pitch x height" "see logs/cuda_malloc.txt"
    fi
    if ! ran vmm; then
        verdict SKIP "cuMem* through the driver entry point seen by CUPTI" "the vmm sample did not run"
    elif [ -n "$vlog" ] && grep -q '^exit cuMemMap ' "$vlog" && grep -q '^exit cuMemCreate ' "$vlog"; then
        verdict PASS "cuMem* through the driver entry point seen by CUPTI" "vmm sample"
    else
        verdict FAIL "cuMem* through the driver entry point seen by CUPTI" "vmm sample's log"
    fi
else
    verdict SKIP "cuda samples" "no $sample (built without the CUDA compiler)"
fi
pack

# ---- 2. PyTorch -------------------------------------------------------------------------------
tmo 120 "$py" -c 'import sys, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
sys.exit(0 if torch.cuda.is_available() else 1)' >"$out/logs/torch_probe.txt" 2>&1
rc=$?
cat "$out/logs/torch_probe.txt" >>"$out/machine.txt"
if [ $rc -ne 0 ]; then
    verdict SKIP "pytorch" "no PyTorch with CUDA for $py (exit $rc: $(tail -1 "$out/logs/torch_probe.txt"))"
    finish
fi

# train.py with torch.cuda.nvtx's push/pop made no-ops: the run without annotations.
cat >"$out/logs/train_no_nvtx.py" <<'EOF'
import runpy, sys
import torch.cuda.nvtx as nvtx
nvtx.range_push = lambda *a, **k: 0
nvtx.range_pop = lambda *a, **k: 0
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
EOF

rate() { sed -n 's/^steps\/s: //p' "$1" | tail -1; }
gpu_tag=$(echo "${gpu_name:-gpu}" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/_/g; s/^_//; s/_$//')

# run_mode NAME ENV... -- SCRIPT ARGS: bare, then under memrec (train.py writing its
# memory_stats at the window's ends into logs/torch_NAME_stats.json); figures, trace, checks.
# Returns 1 when there is no trace to check.
run_mode() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    local trace=$out/traces/torch_$name.zst log=$out/logs/torch_${name}_memrec.txt
    local mods=$out/logs/torch_${name}_modules
    tmo 150 env "${envs[@]}" "$py" "$@" --steps "$steps" --modules "${mods}_bare.json" \
        >"$out/logs/torch_${name}_bare.txt" 2>&1
    local brc=$?
    [ $brc -eq 0 ] || verdict_rc $brc "torch $name bare" "$out/logs/torch_${name}_bare.txt"
    tmo 240 env "${envs[@]}" MEMREC_CALLBACK_LOG="$out/fixtures/cupti/${gpu_tag}_torch_$name.log" \
        "$memrec" -o "$trace" -- "$py" "$@" --steps "$steps" --stats "$out/logs/torch_${name}_stats.json" \
        --modules "${mods}_memrec.json" >"$log" 2>&1
    local rc=$? bare rec over=""
    bare=$(rate "$out/logs/torch_${name}_bare.txt")
    rec=$(rate "$log")
    [ -n "$bare" ] && [ -n "$rec" ] && over=$(awk -v b="$bare" -v r="$rec" 'BEGIN{printf "%.1f", (b/r-1)*100}')
    printf '%s\t%s\t%s\t%s\n' "$name" "${bare:-?}" "${rec:-?}" "${over:-?}" >>"$figures"
    if [ $rc -ne 0 ] || [ ! -s "$trace" ]; then
        [ $rc -eq 0 ] && rc=1
        verdict_rc $rc "torch $name under memrec" "$log"
        return 1
    fi
    verdict PASS "torch $name under memrec"
    # what it imported: as without memrec, but for memrec's hook (check_modules.py)
    if [ -s "${mods}_bare.json" ] && [ -s "${mods}_memrec.json" ]; then
        local same
        same=$(tmo 90 "$py" "$scripts/check_modules.py" "${mods}_bare.json" "${mods}_memrec.json" \
            "$(dirname "$memrec")/python" 2>&1 | tail -1)
        case $same in
        PASS:*) verdict PASS "torch $name: the modules imported as without memrec" "${same#PASS: }" ;;
        *) verdict FAIL "torch $name: the modules imported as without memrec" "${same#FAIL: }" ;;
        esac
    fi
    local cupti
    cupti=$(grep -m1 '^memrec: CUPTI ' "$log")
    [ -n "$cupti" ] && verdict PASS "torch $name: memrec subscribed to CUPTI" "${cupti#memrec: }" ||
        verdict FAIL "torch $name: memrec subscribed to CUPTI" \
            "$(grep -m1 -i 'cupti' "$log" | cut -c1-300)"
    local warn
    warn=$(sqlv "$trace" "SELECT count(*) FROM warnings")
    [ "$warn" = 0 ] && verdict PASS "torch $name: replayed without warnings" ||
        verdict FAIL "torch $name: replayed without warnings" \
            "${warn:-?} warnings: $(sqlrows "$trace" "SELECT code, count(*) FROM warnings GROUP BY 1")"
    return 0
}
# window_checks NAME: the trace's PyTorch blocks against train.py's memory_stats, exactly
window_checks() {
    local stats=$out/logs/torch_$1_stats.json
    if [ ! -s "$stats" ]; then
        verdict FAIL "torch $1: memory_stats over the window" "train.py wrote no logs/torch_$1_stats.json"
        return
    fi
    tmo 120 "$py" "$scripts/check_torch_window.py" "$memanalyze" "$out/traces/torch_$1.zst" \
        "$stats" "$steps" >"$out/logs/torch_$1_window.txt" 2>&1
    local rc=$? v check
    while read -r v check; do
        check=${check#torch window: }
        case $v in PASS | FAIL) verdict "$v" "torch $1 window: ${check%%: *}" "${check#*: }" ;; esac
    done <"$out/logs/torch_$1_window.txt"
    case $rc in 0 | 1) ;; *) verdict_rc $rc "torch $1: memory_stats over the window" "$out/logs/torch_$1_window.txt" ;; esac
}
# torch_test SCENARIO: test_torch_train.py (its ok:/FAILED: lines in the log)
torch_test() {
    local log=$out/logs/torch_test_$1.txt
    tmo 300 "$py" "$scripts/test_torch_train.py" --keep "$out/traces" "$memrec" "$memanalyze" \
        "$source_dir" "$1" >"$log" 2>&1
    local rc=$?
    local ok bad
    ok=$(grep -c '^ok: ' "$log")
    bad=$(grep -m1 '^FAILED: ' "$log" | cut -c9-300)
    case $rc in
    0) verdict PASS "test_torch_train.py $1" "$ok checks" ;;
    1) verdict FAIL "test_torch_train.py $1" "$(grep -c '^FAILED: ' "$log") of $((ok + $(grep -c '^FAILED: ' "$log"))) checks failed, first: $bad" ;;
    *) verdict_rc $rc "test_torch_train.py $1" "$log" ;;
    esac
}

if run_mode default -- "$train"; then
    window_checks default
fi
pack

# The beliefs about PyTorch itself, asked of PyTorch directly.
tmo 120 "$py" - >"$out/logs/torch_beliefs.txt" 2>&1 <<'EOF'
import sys, time, torch
lazy = lambda: sorted(m for m in sys.modules if m.startswith(("torch._inductor", "torch._dynamo")))
imported_before = lazy()
torch.cuda.memory._record_memory_history(max_entries=1000)
before = time.time() * 1e6
x = torch.empty(1 << 20, device="cuda")
del x
s = torch.cuda.memory._snapshot()
after = time.time() * 1e6
# what fake_torch's _snapshot claims (cuda/memory.py): with frames recorded it looks for
# torch._inductor, which torch's lazy __getattr__ imports
print("LAZY", "ok" if not imported_before and "torch._inductor" in lazy() else
      "lazy modules before %s, after _snapshot() %s" % (imported_before[:3], lazy()[:3]))
keys = {"segments", "device_traces"} - set(s)
seg = s["segments"][0] if s["segments"] else {}
seg_keys = {"address", "total_size", "device", "stream", "segment_type", "blocks"} - set(seg)
entries = [e for t in s["device_traces"] for e in t]
entry_keys = {"action", "addr", "size", "stream", "frames"} - set(entries[-1] if entries else {})
times = [e.get("time_us") for e in entries]
print("KEYS", "ok" if not (keys or seg_keys or entry_keys) else
      "missing %s" % sorted(keys | seg_keys | entry_keys))
if not times or None in times:
    print("CLOCK no time_us")
else:
    print("CLOCK", "ok" if before - 5e6 <= min(times) and max(times) <= after + 5e6 else
          "time_us %d..%d outside wall clock %d..%d" % (min(times), max(times), before, after))
fired = []
# torch/optim/__init__.py ends with `del optimizer`: the module is only in sys.modules
from torch.optim.optimizer import register_optimizer_step_post_hook
h = register_optimizer_step_post_hook(lambda opt, a, k: fired.append(1))
p = torch.nn.Parameter(torch.randn(16, device="cuda"))
opt = torch.optim.AdamW([p], lr=1e-3)
for _ in range(2):
    p.grad = torch.ones_like(p)
    opt.step()
h.remove()
print("HOOK", "ok" if len(fired) == 2 else "fired %d times for 2 steps" % len(fired))
print("TORCH", torch.__version__)
EOF
rc=$?
for b in KEYS:"PyTorch's snapshot has the keys the recorder reads" \
    CLOCK:"PyTorch's time_us is wall-clock time" HOOK:"the optimizer step hook fires" \
    LAZY:"PyTorch's _snapshot() imports torch._inductor (as fake_torch's does)"; do
    tag=${b%%:*}
    line=$(sed -n "s/^$tag //p" "$out/logs/torch_beliefs.txt")
    if [ "$line" = ok ]; then
        verdict PASS "${b#*:}"
    elif [ -z "$line" ] && [ $rc -ne 0 ]; then
        verdict_rc $rc "${b#*:}" "$out/logs/torch_beliefs.txt"
    else
        verdict FAIL "${b#*:}" "${line:-see logs/torch_beliefs.txt}"
    fi
done

# memrec's drains take PyTorch's snapshot: they must import none of torch's lazy modules
# (memrec_torch.py, LazyImportGuard): the modules a program has after three drains at 0.2 s
# are those it has without memrec
cat >"$out/logs/lazy_modules.py" <<'EOF'
import sys, time, torch
x = torch.empty(1 << 20, device="cuda")
time.sleep(0.7)
print("LAZY", sorted(m for m in sys.modules if m.startswith(("torch._inductor", "torch._dynamo"))))
EOF
tmo 120 "$py" "$out/logs/lazy_modules.py" >"$out/logs/lazy_modules_bare.txt" 2>&1
brc=$?
tmo 120 env MEMREC_TORCH_DRAIN_MS=200 MEMREC_TORCH_DRAIN_PERCENT=100 "$memrec" \
    -o "$out/traces/lazy_modules.zst" -- "$py" "$out/logs/lazy_modules.py" \
    >"$out/logs/lazy_modules.txt" 2>&1
rc=$?
bare=$(sed -n 's/^LAZY //p' "$out/logs/lazy_modules_bare.txt")
line=$(sed -n 's/^LAZY //p' "$out/logs/lazy_modules.txt")
drains=$(sed -n 's/.*PyTorch history: \([0-9]*\) drains.*/\1/p' "$out/logs/lazy_modules.txt")
check="memrec's drains import none of torch's lazy modules"
if [ $brc -ne 0 ]; then
    verdict_rc $brc "$check" "$out/logs/lazy_modules_bare.txt"
elif [ $rc -ne 0 ]; then
    verdict_rc $rc "$check" "$out/logs/lazy_modules.txt"
elif [ "$line" = "$bare" ] && [ "${drains:-0}" -ge 2 ]; then
    verdict PASS "$check" "$drains drains; ${bare:0:100}"
else
    verdict FAIL "$check" "under memrec ${line:0:150} after ${drains:-?} drains; bare ${bare:0:150}"
fi

torch_test leak
pack

if run_mode no_nvtx -- "$out/logs/train_no_nvtx.py" "$train"; then
    # without NVTX the recorder's optimizer step hook makes the steps: one per iteration from
    # the first optimizer step on, the last one still open at exit: N steps, N begin marks and
    # N - 1 end marks
    n=$(sqlv "$out/traces/torch_no_nvtx.zst" "SELECT count(*) FROM steps")
    m=$(sqlrows "$out/traces/torch_no_nvtx.zst" \
        "SELECT kind, count(*) FROM markers WHERE domain = 'memrec.optimizer' GROUP BY 1 ORDER BY 1")
    [ "$n" = "$steps" ] && [ "$m" = "step_begin:$steps step_end:$((steps - 1))" ] &&
        verdict PASS "no NVTX: the optimizer hook makes the steps" "$n steps; marks $m" ||
        verdict FAIL "no NVTX: the optimizer hook makes the steps" \
            "${n:-?} steps for $steps iterations; marks ${m:-none} (want step_begin:$steps step_end:$((steps - 1)))"
fi
pack

if run_mode expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- "$train"; then
    window_checks expandable
    # every page PyTorch maps, CUPTI saw mapped: the same bytes from both sources
    t=$out/traces/torch_expandable.zst
    c=$(sqlrows "$t" "SELECT count(*), coalesce(sum(size), 0) FROM events WHERE op = 'map' AND source = 'cupti' AND kind = 'device'")
    p=$(sqlrows "$t" "SELECT count(*), coalesce(sum(size), 0) FROM events WHERE op = 'map' AND source = 'torch'")
    [ "${c%%:*}" -gt 0 ] 2>/dev/null && [ "${c#*:}" = "${p#*:}" ] &&
        verdict PASS "cuMem* through cuGetProcAddress seen by CUPTI" \
            "expandable segments: CUPTI ${c%%:*} maps, PyTorch ${p%%:*}, ${c#*:} bytes each" ||
        verdict FAIL "cuMem* through cuGetProcAddress seen by CUPTI" \
            "expandable segments: CUPTI maps:bytes ${c:-?}, PyTorch segment_map ${p:-?}"
fi
pack

torch_test fragment
pack

# ---- two GPUs: DDP under torchrun, NCCL's cuMem buffers ---------------------------------------
if [ "$ngpu" -ge 2 ]; then
    cat >"$out/logs/train_ddp.py" <<'EOF'
import os, sys, time, torch, torch.distributed as dist
from torch import nn
steps = int(sys.argv[sys.argv.index("--steps") + 1])
rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda(), device_ids=[rank])
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
start = None
for step in range(steps):
    torch.cuda.nvtx.range_push(f"step {step}")
    model(torch.randn(64, 1024, device="cuda")).pow(2).mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()
    if step == 0:
        torch.cuda.synchronize()
        start = time.perf_counter()
torch.cuda.synchronize()
if rank == 0:
    print("steps/s: %.2f" % ((steps - 1) / (time.perf_counter() - start)))
dist.destroy_process_group()
EOF
    trun=("$py" -m torch.distributed.run --standalone --nproc_per_node=2)
    tmo 180 "${trun[@]}" "$out/logs/train_ddp.py" --steps "$steps" >"$out/logs/torch_ddp_bare.txt" 2>&1
    tmo 240 "$memrec" -o "$out/traces/torch_ddp_rank%r.zst" -- "${trun[@]}" \
        "$out/logs/train_ddp.py" --steps "$steps" >"$out/logs/torch_ddp_memrec.txt" 2>&1
    rc=$?
    bare=$(rate "$out/logs/torch_ddp_bare.txt")
    rec=$(rate "$out/logs/torch_ddp_memrec.txt")
    printf 'ddp_2gpu\t%s\t%s\t%s\n' "${bare:-?}" "${rec:-?}" \
        "$([ -n "$bare" ] && [ -n "$rec" ] && awk -v b="$bare" -v r="$rec" 'BEGIN{printf "%.1f", (b/r-1)*100}' || echo '?')" >>"$figures"
    for r in 0 1; do
        t=$out/traces/torch_ddp_rank$r.zst
        if [ $rc -ne 0 ] || [ ! -s "$t" ]; then
            verdict_rc $((rc ? rc : 1)) "ddp rank $r under memrec" "$out/logs/torch_ddp_memrec.txt"
            continue
        fi
        other=$((1 - r))
        n=$(sqlv "$t" "SELECT count(*) FROM events WHERE device = $other AND kind = 'device'")
        [ "$n" = 0 ] && verdict PASS "ddp rank $r: no memory on device $other (NCCL peers' buffers)" ||
            verdict FAIL "ddp rank $r: no memory on device $other (NCCL peers' buffers)" "$n events"
        n=$(sqlv "$t" "SELECT count(*) FROM warnings")
        [ "$n" = 0 ] && verdict PASS "ddp rank $r: replayed without warnings" ||
            verdict FAIL "ddp rank $r: replayed without warnings" "$n warnings"
    done
else
    verdict SKIP "two GPUs under torchrun" "one GPU here"
fi

finish
