#!/usr/bin/env bash
# run_all.sh — everything that needs a GPU, in one go of a few minutes, from a build made
# elsewhere (copy the build folder and the source tree to the GPU machine, then run this).
#
#   tests/gpu/run_all.sh [--steps N] [--pretend-no-gpu] BUILD_DIR OUT_DIR
#
# 1. the CUDA samples (samples/cuda, every scenario) under memrec, each checked event by event
#    (tests/gpu/test_cuda_samples.py), their raw CUPTI callback logs saved as fixtures;
# 2. samples/pytorch/train.py, bare and under memrec, in each mode: default, without NVTX ranges
#    (torch.cuda.nvtx made no-ops), PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and on
#    two GPUs under torchrun (DDP, NCCL's cuMem buffers) when there are two: steps/s of each;
# 3. the beliefs the recorder is built on, each with a verdict (PASS / FAIL / SKIP):
#      runtime calls arrive as driver cbids (cudaMalloc -> cuMemAlloc_v2 in the callback log);
#      a pitched allocation is recorded as pitch x height (the malloc sample's check);
#      cuMem* reached through cuGetProcAddress/cudaGetDriverEntryPoint are still seen by CUPTI
#        (the vmm sample; PyTorch's expandable segments map with them: map events in the trace);
#      PyTorch's snapshot has the keys the recorder reads and its time_us is wall-clock time;
#      the optimizer step hook fires (torch.optim's global post-step hook, AdamW as train.py),
#      and makes the steps of the run without NVTX;
#      annotations are captured (train.py's NVTX "step N" ranges become the trace's steps);
#      on two GPUs, no rank's trace holds memory on the other rank's device.
#
# OUT_DIR receives: verdicts.txt (one line per check), figures.tsv (mode, bare and memrec
# steps/s, overhead), fixtures/cupti/*.log (to review and copy into tests/fixtures/cupti, see its
# README), traces/ and logs/. Exit 0: every check that ran passed; 1: some failed; 77: no GPU
# here, or none the driver can use (the reason on stdout), nothing checked. --pretend-no-gpu
# takes the first way out (the ctest that checks the skip); --steps sets train.py's steps (30).
set -u
usage="usage: run_all.sh [--steps N] [--pretend-no-gpu] BUILD_DIR OUT_DIR"
steps=30
no_gpu=0
while [ $# -gt 0 ]; do
    case $1 in
    --steps) steps=${2:?$usage} && shift 2 ;;
    --pretend-no-gpu) no_gpu=1 && shift ;;
    -*) echo "$usage" >&2 && exit 2 ;;
    *) break ;;
    esac
done
build=${1:?$usage}
out=${2:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$build" && pwd)
memrec=$build/recorder/memrec
memanalyze=$build/analyzer/memanalyze
sample=$build/samples/cuda/cuda_sample
train=$src/samples/pytorch/train.py
py=${PYTHON:-python3}

skip() {
    echo "SKIP: $*"
    exit 77
}

# ---- is there a GPU? --------------------------------------------------------------------------
[ "$no_gpu" = 1 ] && skip "--pretend-no-gpu: as if there were no GPU"
command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: no NVIDIA driver on this machine"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -ge 1 ] || skip "nvidia-smi lists no GPU ($(nvidia-smi -L 2>&1 | head -1))"
[ -x "$memrec" ] && [ -x "$memanalyze" ] || skip "no memrec/memanalyze in $build (build first)"

mkdir -p "$out"/fixtures/cupti "$out"/traces "$out"/logs
out=$(cd "$out" && pwd)
verdicts=$out/verdicts.txt
figures=$out/figures.tsv
: >"$verdicts"
printf 'mode\tbare_steps_per_s\tmemrec_steps_per_s\toverhead_pct\n' >"$figures"
failed=0
verdict() { # verdict PASS|FAIL|SKIP CHECK [DETAIL]
    printf '%-4s %s%s\n' "$1" "$2" "${3:+: $3}" | tee -a "$verdicts"
    [ "$1" = FAIL ] && failed=1
    return 0
}
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)
echo "GPUs: $ngpu ($gpu_name); build $build; output $out" | tee "$out/machine.txt"
nvidia-smi >>"$out/machine.txt" 2>&1

# The end: 77 when no check could run at all (a GPU the driver cannot use), else 0 or 1.
finish() {
    if ! grep -q '^PASS\|^FAIL' "$verdicts"; then
        echo "SKIP: nothing could run on this GPU (see $verdicts)"
        exit 77
    fi
    echo
    column -t -s "$(printf '\t')" "$figures" 2>/dev/null || cat "$figures"
    echo "verdicts: $verdicts; fixtures to review: $out/fixtures/cupti (copy into tests/fixtures/cupti)"
    exit $failed
}

sqlv() { # sqlv TRACE QUERY: the first column of the first row
    "$memanalyze" sql "$1" "$2" --csv 2>/dev/null | sed -n 2p | cut -d, -f1
}

# ---- 1. the CUDA samples ----------------------------------------------------------------------
if [ -x "$sample" ]; then
    for s in malloc async managed pinned vmm fail nvtx; do
        GMT_SAVE_CALLBACK_LOGS=$out/fixtures/cupti timeout 300 "$py" \
            "$here/test_cuda_samples.py" "$memrec" "$memanalyze" "$sample" "$s" \
            >"$out/logs/cuda_$s.txt" 2>&1
        case $? in
        0) verdict PASS "cuda sample $s under memrec" ;;
        77) verdict SKIP "cuda sample $s under memrec" "$(grep -m1 SKIP "$out/logs/cuda_$s.txt")" ;;
        *) verdict FAIL "cuda sample $s under memrec" "see logs/cuda_$s.txt" ;;
        esac
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

# ---- 2. PyTorch -------------------------------------------------------------------------------
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    verdict SKIP "pytorch" "no PyTorch with CUDA for $py"
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

# run_mode NAME ENV... -- SCRIPT ARGS: bare, then under memrec; figures, trace, checks.
run_mode() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    local trace=$out/traces/torch_$name.zst
    env "${envs[@]}" timeout 600 "$py" "$@" --steps "$steps" >"$out/logs/torch_${name}_bare.txt" 2>&1
    env "${envs[@]}" MEMREC_CALLBACK_LOG="$out/fixtures/cupti/${gpu_tag}_torch_$name.log" \
        timeout 600 "$memrec" -o "$trace" -- "$py" "$@" --steps "$steps" \
        >"$out/logs/torch_${name}_memrec.txt" 2>&1
    local rc=$? bare rec
    bare=$(rate "$out/logs/torch_${name}_bare.txt")
    rec=$(rate "$out/logs/torch_${name}_memrec.txt")
    local over=""
    [ -n "$bare" ] && [ -n "$rec" ] && over=$(awk -v b="$bare" -v r="$rec" 'BEGIN{printf "%.1f", (b/r-1)*100}')
    printf '%s\t%s\t%s\t%s\n' "$name" "${bare:-?}" "${rec:-?}" "${over:-?}" >>"$figures"
    if [ $rc -ne 0 ] || [ ! -s "$trace" ]; then
        verdict FAIL "torch $name under memrec" "exit $rc, see logs/torch_${name}_memrec.txt"
        return 1
    fi
    local warn
    warn=$(sqlv "$trace" "SELECT count(*) FROM warnings")
    [ "$warn" = 0 ] && verdict PASS "torch $name: replayed without warnings" ||
        verdict FAIL "torch $name: replayed without warnings" "$warn warnings"
    return 0
}
gpu_tag=$(echo "${gpu_name:-gpu}" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/_/g; s/^_//; s/_$//')

if run_mode default -- "$train"; then
    n=$(sqlv "$out/traces/torch_default.zst" "SELECT count(*) FROM steps")
    [ "$n" = "$steps" ] && verdict PASS "annotations captured" "$n NVTX steps" ||
        verdict FAIL "annotations captured" "$n steps in the trace, $steps ranges pushed"
    n=$(sqlv "$out/traces/torch_default.zst" "SELECT count(*) FROM events WHERE source = 'torch'")
    [ "${n:-0}" -gt 0 ] && verdict PASS "PyTorch's history drained into the trace" "$n events" ||
        verdict FAIL "PyTorch's history drained into the trace" "no torch events"
fi
if run_mode no_nvtx -- "$out/logs/train_no_nvtx.py" "$train"; then
    # without NVTX the recorder's optimizer step hook makes the steps: one per iteration from
    # the first optimizer step on (the last one still open at exit)
    n=$(sqlv "$out/traces/torch_no_nvtx.zst" "SELECT count(*) FROM steps")
    m=$(sqlv "$out/traces/torch_no_nvtx.zst" \
        "SELECT count(*) FROM markers WHERE domain = 'memrec.optimizer'")
    [ "${n:-0}" -ge $((steps - 1)) ] && [ "${m:-0}" -gt 0 ] &&
        verdict PASS "no NVTX: the optimizer hook makes the steps" "$n steps" ||
        verdict FAIL "no NVTX: the optimizer hook makes the steps" "$n steps, $m hook markers"
fi
if run_mode expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- "$train"; then
    n=$(sqlv "$out/traces/torch_expandable.zst" \
        "SELECT count(*) FROM events WHERE op = 'map' AND source = 'cupti'")
    [ "${n:-0}" -gt 0 ] &&
        verdict PASS "cuMem* through cuGetProcAddress seen by CUPTI" "$n cuMemMap in expandable segments" ||
        verdict FAIL "cuMem* through cuGetProcAddress seen by CUPTI" "no map event from CUPTI"
fi

# The beliefs about PyTorch itself, asked of PyTorch directly.
"$py" - >"$out/logs/torch_beliefs.txt" 2>&1 <<'EOF'
import time, torch
torch.cuda.memory._record_memory_history(max_entries=1000)
before = time.time() * 1e6
x = torch.empty(1 << 20, device="cuda")
del x
s = torch.cuda.memory._snapshot()
after = time.time() * 1e6
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
h = torch.optim.optimizer.register_optimizer_step_post_hook(lambda opt, a, k: fired.append(1))
p = torch.nn.Parameter(torch.randn(16, device="cuda"))
opt = torch.optim.AdamW([p], lr=1e-3)
for _ in range(2):
    p.grad = torch.ones_like(p)
    opt.step()
h.remove()
print("HOOK", "ok" if len(fired) == 2 else "fired %d times for 2 steps" % len(fired))
print("TORCH", torch.__version__)
EOF
for b in KEYS:"PyTorch's snapshot has the keys the recorder reads" \
    CLOCK:"PyTorch's time_us is wall-clock time" HOOK:"the optimizer step hook fires"; do
    tag=${b%%:*}
    line=$(sed -n "s/^$tag //p" "$out/logs/torch_beliefs.txt")
    [ "$line" = ok ] && verdict PASS "${b#*:}" || verdict FAIL "${b#*:}" "${line:-see logs/torch_beliefs.txt}"
done

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
    timeout 600 "${trun[@]}" "$out/logs/train_ddp.py" --steps "$steps" >"$out/logs/torch_ddp_bare.txt" 2>&1
    timeout 600 "$memrec" -o "$out/traces/torch_ddp_rank%r.zst" -- "${trun[@]}" \
        "$out/logs/train_ddp.py" --steps "$steps" >"$out/logs/torch_ddp_memrec.txt" 2>&1
    rc=$?
    bare=$(rate "$out/logs/torch_ddp_bare.txt")
    rec=$(rate "$out/logs/torch_ddp_memrec.txt")
    printf 'ddp_2gpu\t%s\t%s\t%s\n' "${bare:-?}" "${rec:-?}" \
        "$([ -n "$bare" ] && [ -n "$rec" ] && awk -v b="$bare" -v r="$rec" 'BEGIN{printf "%.1f", (b/r-1)*100}' || echo '?')" >>"$figures"
    for r in 0 1; do
        t=$out/traces/torch_ddp_rank$r.zst
        if [ $rc -ne 0 ] || [ ! -s "$t" ]; then
            verdict FAIL "ddp rank $r under memrec" "exit $rc, see logs/torch_ddp_memrec.txt"
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
