#!/usr/bin/env python3
"""make_pickles.py — pickles written by Python's own pickler, for the tests.

The C tests hand-assemble most of their inputs; this script adds what only
the real pickler can vouch for: the same fixed values written with protocols
2 to 5 (test_pickle compares them field by field), and a large synthetic
snapshot shaped like a real one, to measure the reader against pickle.load.

    make_pickles.py --out DIR                 fixtures (values-pN.pickle, ...)
    make_pickles.py --big FILE [--entries N]  synthetic snapshot (default 1 M entries)

Standard library only; deterministic (fixed seed)."""
import argparse
import os
import pickle
import random
import sys


def fixed_values():
    """The value every protocol writes; test_pickle.c knows it by heart."""
    shared = [1, 2, 3]
    return {
        "none": None,
        "true": True,
        "false": False,
        "ints": [0, 1, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, -(2**31),
                 2**31, 2**62, 2**63 - 1, -(2**63), 2**63, 2**64 - 1],
        "float": 1.5,
        "negfloat": -2.25e-300,
        "str": "h\u00e9llo",
        "empty_str": "",
        "long_str": "x" * 300,
        "bytes": b"\x00\x01\xff",
        "bytearray": bytearray(b"ba"),
        "tuple0": (),
        "tuple1": (1,),
        "tuple2": (1, "a"),
        "tuple3": (1, 2, 3),
        "tuple4": (1, 2, 3, 4),
        "list": ["a", 1, None],
        "biglist": list(range(2500)),
        "dict": {"k": "v", 7: [8]},
        "set": {5},
        "frozenset": frozenset({6}),
        "shared_a": shared,
        "shared_b": shared,
    }


def write_fixtures(out):
    os.makedirs(out, exist_ok=True)
    v = fixed_values()
    for proto in (2, 3, 4, 5):
        value = dict(v)
        if proto < 4:  # sets need protocol 4 opcodes, else they are REDUCEd
            del value["set"], value["frozenset"]
        if proto < 3:  # bytes and bytearray are REDUCEd before protocol 3
            del value["bytes"], value["bytearray"]
        if proto < 5:  # bytearray is REDUCEd before protocol 5
            value.pop("bytearray", None)
        with open(os.path.join(out, "values-p%d.pickle" % proto), "wb") as f:
            pickle.dump(value, f, protocol=proto)
    # Refused content: a class instance (GLOBAL/STACK_GLOBAL + REDUCE/NEWOBJ).
    with open(os.path.join(out, "object.pickle"), "wb") as f:
        pickle.dump({"x": complex(1, 2)}, f, protocol=4)
    # A snapshot as Python writes one (protocol 4, memo-shared frame lists).
    with open(os.path.join(out, "snapshot-p4.pickle"), "wb") as f:
        pickle.dump(synthetic_snapshot(300, seed=7), f, protocol=4)
    with open(os.path.join(out, "snapshot-p2.pickle"), "wb") as f:
        pickle.dump(synthetic_snapshot(300, seed=7), f, protocol=2)


def synthetic_snapshot(entries, seed=1):
    """A snapshot shaped like torch.cuda.memory._snapshot(): frame dicts
    shared by many stacks, a fresh frames list per allocation (its frees
    reuse it, as PyTorch's symbolizer does), ~100-frame C++ + Python stacks,
    one device, some annotations, allocator settings."""
    rnd = random.Random(seed)
    files = ["/usr/lib/python3.11/site-packages/torch/nn/modules/module.py",
             "/home/user/train.py", "CUDACachingAllocator.cpp", "??", ""]
    frames = [{"name": "fn_%d(int, long)" % i, "filename": rnd.choice(files),
               "line": rnd.randrange(0, 3000)} for i in range(3000)]
    stacks = [rnd.sample(frames, rnd.randrange(20, 100)) for _ in range(400)]
    base = 0x7F0000000000
    trace = []
    live = []
    t = 1748474028636221
    while len(trace) < entries:
        t += rnd.randrange(1, 50)
        if live and rnd.random() < 0.5:
            addr, size, fl = live.pop(rnd.randrange(len(live)))
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                              "time_us": t, "frames": fl})
        else:
            addr = base + rnd.randrange(0, 1 << 36) * 512
            size = rnd.choice([512, 4096, 1 << 20, rnd.randrange(1, 1 << 30)])
            fl = list(rnd.choice(stacks))
            live.append((addr, size, fl))
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0,
                          "time_us": t, "frames": fl})
    del trace[entries:]
    segments = []
    for s in range(max(1, entries // 500)):
        addr = base + s * (1 << 26)
        sizes = [rnd.choice([512, 2 << 20, 1 << 22]) for _ in range(rnd.randrange(1, 6))]
        blocks = []
        a = addr
        for size in sizes:
            blocks.append({"address": a, "size": size, "requested_size": size,
                           "state": rnd.choice(["active_allocated", "inactive"]),
                           "frames": list(rnd.choice(stacks))})
            a += size
        total = sum(sizes)
        segments.append({"device": 0, "address": addr, "total_size": total,
                         "allocated_size": total, "active_size": total,
                         "requested_size": total, "stream": 0, "segment_type": "large",
                         "segment_pool_id": (0, 0), "is_expandable": False,
                         "frames": blocks[0]["frames"], "blocks": blocks})
    annotations = []
    for step in range(10):
        for stage in ("START", "END"):
            annotations.append({"stage": stage, "name": "ProfilerStep#%d" % step,
                                "device": 0, "time_us": t + step * 100 + (stage == "END")})
    return {"segments": segments, "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0,
                                   "expandable_segments": False,
                                   "roundup_power2_divisions": {"1": 0, "2": 0}},
            "external_annotations": annotations}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--big")
    ap.add_argument("--entries", type=int, default=1000000)
    args = ap.parse_args()
    if args.out:
        write_fixtures(args.out)
    if args.big:
        with open(args.big, "wb") as f:
            pickle.dump(synthetic_snapshot(args.entries), f, protocol=4)
    if not args.out and not args.big:
        ap.print_usage(sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
