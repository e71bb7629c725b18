#!/usr/bin/env bash
# bench/run_torch_overhead.sh — recording overhead on samples/pytorch/train.py:
# steps/s without memrec, then under memrec in each mode (default stacks,
# --stacks python, --stacks mixed, --no-torch, --no-cupti). Needs PyTorch
# and a GPU; says so and exits 0 without them (never part of make test).
#
# usage: bench/run_torch_overhead.sh [BUILD_DIR] [train.py options...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
shift || true
memrec=$build/recorder/memrec
train=$here/samples/pytorch/train.py
python=${PYTHON:-python3}
if [ ! -x "$memrec" ]; then
  echo "run_torch_overhead: $memrec not built" >&2
  exit 1
fi
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "run_torch_overhead: skipped (needs PyTorch and a CUDA device)"
  exit 0
fi
args=(--steps 50 "$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

steps_per_s() { grep -o 'steps/s: [0-9.]*' | tail -1 | cut -d' ' -f2; }

base=$("$python" "$train" "${args[@]}" | steps_per_s)
printf '%-22s %10s %9s %10s\n' mode steps/s overhead trace
printf '%-22s %10s %9s %10s\n' "no memrec" "$base" "-" "-"
for mode in "" "--stacks python" "--stacks mixed" "--no-torch" "--no-cupti"; do
  trace=$tmp/t.zst
  rm -f "$trace"
  # shellcheck disable=SC2086 # $mode is zero or two words on purpose
  rate=$("$memrec" -q -o "$trace" $mode -- "$python" "$train" "${args[@]}" | steps_per_s)
  size=$(stat -c %s "$trace" 2>/dev/null || echo 0)
  over=$(awk -v b="$base" -v r="$rate" 'BEGIN { printf "%.1f%%", (b / r - 1) * 100 }')
  printf '%-22s %10s %9s %9.1fM\n' "memrec ${mode:-(default)}" "$rate" "$over" \
    "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')"
done
