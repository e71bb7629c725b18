"""samples/pytorch/train.py — a small transformer training loop with known
memory behaviour, for memrec's end-to-end tests and benchmarks.

Each step is an NVTX range "step N" (torch.cuda.nvtx.range_push), which
memrec turns into steps. Flags plant what memanalyze must find:
  --leak       keeps one tensor per step alive in a list (LEAK_BYTES per
               step, allocated on the line marked LEAK below)
  --fragment   variable sequence lengths plus long-lived odd-sized tensors
               kept between steps, which fragment the large pool
  --snapshot P at the end, writes torch.cuda.memory._snapshot()'s segments
               as JSON to P (address, total_size), to compare with the trace
  --stats P    writes torch.cuda.memory_stats() at the start of step 0 and at
               the end of the last step as JSON {"start": {...}, "end": {...}}
               to P: the counts PyTorch itself keeps over the window the NVTX
               steps span (tests/gpu/check_torch_window.py compares them with
               the trace). The window is set apart by WINDOW_GAP s of no
               allocation before it, so a clock fit error of less than that
               cannot move an allocation across its start; nothing allocates
               after the last step.
  --modules P  writes the sorted names in sys.modules at the end as JSON to P
               (tests/gpu/check_modules.py: under memrec, the same as without it)
Prints one line at the end: "steps/s: X" over the steps after the first.
"""
import argparse
import json
import sys
import time

import torch
from torch import nn

LEAK_BYTES = 1 << 20  # 256 K float32 per step
WINDOW_GAP = 0.25  # s without allocations before the --stats window (only with --stats)


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--leak", action="store_true")
    p.add_argument("--fragment", action="store_true")
    p.add_argument("--snapshot", default="")
    p.add_argument("--stats", default="")
    p.add_argument("--modules", default="")
    return p.parse_args()


def main():
    args = parse()
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 77
    torch.manual_seed(0)
    device = torch.device("cuda")
    layer = nn.TransformerEncoderLayer(args.hidden, nhead=8, dim_feedforward=4 * args.hidden,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=args.layers).to(device)
    head = nn.Linear(args.hidden, 1).to(device)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    # what memrec's tensor names must add up to (tests/gpu/test_torch_train.py)
    print("parameters: %d tensors, %d bytes"
          % (len(params), sum(p.numel() * p.element_size() for p in params)))
    kept, held = [], []
    start = None
    if args.stats:
        torch.cuda.synchronize()
        time.sleep(WINDOW_GAP)
        stats_start = torch.cuda.memory_stats()
    for step in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {step}")
        seq = args.seq
        if args.fragment:
            seq = args.seq // 2 + (step * 37) % args.seq
            held.append(torch.empty(1000003 + 4099 * step, device=device))
            if len(held) > 4:
                held.pop(0)
        x = torch.randn(args.batch, seq, args.hidden, device=device)
        loss = head(model(x)).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.leak:
            kept.append(torch.empty(LEAK_BYTES // 4, device=device))  # LEAK
        torch.cuda.nvtx.range_pop()
        if step == 0:
            torch.cuda.synchronize()
            start = time.perf_counter()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start if start else 0.0
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"start": stats_start, "end": torch.cuda.memory_stats()}, f)
    if args.snapshot:
        segs = [{"device": s["device"], "address": s["address"], "total_size": s["total_size"]}
                for s in torch.cuda.memory._snapshot()["segments"]]
        with open(args.snapshot, "w") as f:
            json.dump(segs, f)
    if args.modules:
        with open(args.modules, "w") as f:
            json.dump(sorted(list(sys.modules)), f)  # list(): one step, whatever other threads do
    if elapsed > 0 and args.steps > 1:
        print("steps/s: %.2f" % ((args.steps - 1) / elapsed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
