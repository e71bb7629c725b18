#!/usr/bin/env python3
"""make_pickles.py — pickles written by Python's own pickler, for the tests.

The C tests hand-assemble most of their inputs; this script adds what only
the real pickler can vouch for: the same fixed values written with protocols
2 to 5 (test_pickle compares them field by field), and a large synthetic
snapshot shaped like a real one, to measure the reader against pickle.load.

    make_pickles.py --out DIR                 fixtures (values-pN.pickle, ...)
    make_pickles.py --big FILE [--entries N]  synthetic snapshot (default 1 M entries)
    make_pickles.py --snapshots DIR           snapshots made by a simulated PyTorch allocator
                                              (expandable segments, OOM, settings), for
                                              test_snapshot_replay.py
    make_pickles.py --realistic FILE [--entries N] [--expandable]
                                              a training loop through the simulated allocator
                                              (a real layout: no replay warning), stacks shared
                                              as PyTorch's pickler shares them; for bench/
    make_pickles.py --sim-shapes DIR          shapes of recordings simulate must read right
                                              (release-and-retry and OOMs on a full device,
                                              settings the snapshot does not record, histories
                                              of one entry), for test_cli_simulate.sh
    make_pickles.py --training FILE [--names] three training steps with planted categories
                                              (parameters, gradients, Adam state, activations,
                                              temporaries, inputs, other) and real PyTorch
                                              frames; FILE.expected.json: the bytes per
                                              category at the peak, each step's peak, and with
                                              --names the tensor named by user_metadata;
                                              --windows: Windows paths in the frames.
                                              --snapshots writes both, as training*.pickle

Standard library only; deterministic (fixed seed)."""
import argparse
import json
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


# ---- a PyTorch caching allocator in Python, to build consistent snapshots ------------------
#
# DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp), followed rule for rule where a
# snapshot can show it: round_size with roundup_power2_divisions, small/large pools,
# get_free_block (max_split_size, expandable_size), should_split, cudaMalloc segments,
# expandable segments (one reserved range per stream and pool, 20 MiB / 2 MiB pages,
# find_expandable_block, map_block, unmap_block), release_available_cached_blocks,
# release_cached_blocks, free_requested / free_completed, the OOM entry, the ring buffer of
# trace entries and snapshot() (one segment per contiguous mapped range), private pools (a CUDA
# graph's or a MemPool's: their own free blocks and plain segments, left alone by
# release_cached_blocks while in use). Addresses come from a bump allocator. Written from
# PyTorch's source for the tests, apart from the C model.

MIB = 1 << 20
K_MIN_BLOCK = 512
K_SMALL_SIZE = MIB
K_SMALL_BUFFER = 2 * MIB
K_LARGE_BUFFER = 20 * MIB
K_MIN_LARGE_ALLOC = 10 * MIB
K_ROUND_LARGE = 2 * MIB


class OutOfMemory(Exception):
    pass


class Block:
    __slots__ = ("addr", "size", "stream", "small", "allocated", "mapped", "requested", "es",
                 "prev", "next", "pending", "frames", "seg_frames", "pool")

    def __init__(self, addr, size, stream, small, es=None, mapped=True, pool=(0, 0)):
        self.addr, self.size, self.stream, self.small = addr, size, stream, small
        self.pool = pool
        self.allocated, self.mapped, self.requested, self.es = False, mapped, 0, es
        self.prev = self.next = None
        self.pending = False
        self.frames = []
        self.seg_frames = []


class Expandable:
    def __init__(self, base, size, page):
        self.base, self.size, self.page = base, size, page


class Allocator:
    def __init__(self, device, capacity, expandable=False, max_split=None, roundup=None,
                 clock=None, frames_of=None):
        self.device, self.capacity = device, capacity
        self.expandable = expandable
        self.max_split = max_split if max_split is not None else (1 << 64) - 1
        self.roundup = roundup or [0] * 16
        self.reserved = 0
        self.free = {True: set(), False: set()}      # mapped free blocks per pool
        self.unmapped = {True: set(), False: set()}  # unmapped blocks per pool
        self.active = {}                             # addr -> allocated block
        self.pending = []                            # blocks waiting for their free to complete
        self.trace = []
        self.segments_va = 0x7f0000000000 + device * (1 << 40)
        self.es_va = 0x7a0000000000 + device * (1 << 40)
        self.clock = clock or (lambda: 0)
        self.frames_of = frames_of or (lambda what: [])
        self.pool = (0, 0)  # the pool requests go to: (0, 0), or a private pool's id

    # -- trace --
    def record(self, action, addr, size, stream, frames=None):
        e = {"action": action, "addr": addr, "size": size, "stream": stream,
             "time_us": self.clock(), "frames": frames if frames is not None else []}
        if action == "oom":
            e["device_free"] = e.pop("addr")
        self.trace.append(e)

    # -- sizes --
    def round_size(self, size):
        if size < K_MIN_BLOCK:
            return K_MIN_BLOCK
        index = max(0, min(size.bit_length() - 1 - 20, 15))
        divisions = self.roundup[index]
        if divisions > 1 and size > K_MIN_BLOCK * divisions:
            if size & (size - 1) == 0:
                return size
            floor = 1 << (size.bit_length() - 1)
            step = floor >> (divisions.bit_length() - 1)
            if step == 0:
                return floor << 1
            down = size & ~(step - 1)
            return size if down == size else down + step
        return (size + K_MIN_BLOCK - 1) // K_MIN_BLOCK * K_MIN_BLOCK

    @staticmethod
    def allocation_size(size):
        if size <= K_SMALL_SIZE:
            return K_SMALL_BUFFER
        if size < K_MIN_LARGE_ALLOC:
            return K_LARGE_BUFFER
        return (size + K_ROUND_LARGE - 1) // K_ROUND_LARGE * K_ROUND_LARGE

    def should_split(self, block, size):
        remaining = block.size - size
        if block.small or self.expandable:
            return remaining >= K_MIN_BLOCK
        return size < self.max_split and remaining > K_SMALL_SIZE

    # -- finding blocks --
    @staticmethod
    def key(b):
        return (b.stream, b.size, b.addr)

    @staticmethod
    def expandable_size(b):
        return b.size + (b.next.size if b.next is not None and not b.next.mapped else 0)

    def get_free_block(self, small, stream, size):
        blocks = sorted((b for b in self.free[small] if b.stream == stream and b.size >= size
                         and b.pool == self.pool), key=self.key)
        if not blocks:
            return None
        i = 0
        if blocks[0].es is not None:
            if self.expandable:
                while (blocks[i].es is not None and i + 1 < len(blocks) and
                       self.expandable_size(blocks[i + 1]) < self.expandable_size(blocks[i])):
                    i += 1
            else:
                i += 1
                while i < len(blocks) and blocks[i].es is not None:
                    i += 1
                if i == len(blocks):
                    return None
        b = blocks[i]
        if size < self.max_split and b.size >= self.max_split:
            return None
        if size >= self.max_split and b.size >= size + K_LARGE_BUFFER:
            return None
        self.free[small].discard(b)
        return b

    # -- plain segments --
    def cuda_malloc(self, small, stream, alloc_size, frames):
        if self.reserved + alloc_size > self.capacity:
            return None
        b = Block(self.segments_va, alloc_size, stream, small, pool=self.pool)
        self.segments_va += (alloc_size + K_ROUND_LARGE - 1) // K_ROUND_LARGE * K_ROUND_LARGE
        self.reserved += alloc_size
        b.seg_frames = frames
        self.record("segment_alloc", b.addr, alloc_size, stream, frames)
        return b

    def release_block(self, b):
        self.record("segment_free", b.addr, b.size, b.stream, b.seg_frames)
        self.reserved -= b.size
        self.free[b.small].discard(b)

    # -- expandable segments --
    def find_expandable_block(self, small, stream, size):
        def allocatable(b):
            return b is not None and not b.allocated and not b.pending

        def has_room(b):
            n = 0
            while n < size and allocatable(b):
                n += b.size
                b = b.next
            return n >= size

        for c in sorted((b for b in self.unmapped[small] if b.stream == stream),
                        key=lambda b: b.addr):
            if allocatable(c.prev):
                c = c.prev
            if has_room(c):
                return c
        page = K_SMALL_BUFFER if small else K_LARGE_BUFFER
        total = self.capacity + self.capacity // 8
        pages = (total + page - 1) // page
        es = Expandable(self.es_va, pages * page, page)
        self.es_va += pages * page + (64 << 20)  # a gap: reservations never touch
        c = Block(es.base, es.size, stream, small, es=es, mapped=False)
        self.unmapped[small].add(c)
        return c

    def map_block(self, b, size, frames):
        es = b.es
        begin = (b.addr - es.base) // es.page
        end = (b.addr + size - es.base + es.page - 1) // es.page
        mapped = (end - begin) * es.page
        if self.reserved + mapped > self.capacity:
            return False
        self.unmapped[b.small].discard(b)
        b.mapped = True
        if mapped < b.size:
            rest = Block(b.addr + mapped, b.size - mapped, b.stream, b.small, es=es, mapped=False)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
            b.size = mapped
            self.unmapped[b.small].add(rest)
        self.merge(b, b.prev)
        self.merge(b, b.next)
        self.free[b.small].add(b)
        self.reserved += mapped
        self.record("segment_map", es.base + begin * es.page, mapped, b.stream, frames)
        if b.prev is None or not b.prev.mapped:
            b.seg_frames = b.seg_frames or frames
        return True

    def try_allocate_expandable(self, small, stream, size, frames):
        c = self.find_expandable_block(small, stream, size)
        if not c.mapped and not self.map_block(c, min(c.size, size), frames):
            return None
        while c.size < size:
            nxt = c.next
            if not self.map_block(nxt, min(size - c.size, nxt.size), frames):
                return None
            c = nxt
        self.free[small].discard(c)
        return c

    def merge(self, dst, src):
        if (src is None or src.allocated or src.pending or dst.mapped != src.mapped):
            return
        if dst.prev is src:
            dst.addr = src.addr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
            dst.seg_frames = src.seg_frames or dst.seg_frames
        else:
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size
        (self.free if src.mapped else self.unmapped)[src.small].discard(src)

    def unmap_block(self, b):
        es = b.es
        begin = (b.addr - es.base + es.page - 1) // es.page
        end = (b.addr + b.size - es.base) // es.page
        if begin >= end:
            return
        ua, usize = es.base + begin * es.page, (end - begin) * es.page
        self.free[b.small].discard(b)
        if ua > b.addr:
            before = Block(b.addr, ua - b.addr, b.stream, b.small, es=es)
            before.prev, before.next = b.prev, b
            if b.prev is not None:
                b.prev.next = before
            b.prev = before
            before.seg_frames = b.seg_frames
            self.free[b.small].add(before)
        after_size = b.addr + b.size - (ua + usize)
        if after_size > 0:
            after = Block(ua + usize, after_size, b.stream, b.small, es=es)
            after.prev, after.next = b, b.next
            if b.next is not None:
                b.next.prev = after
            b.next = after
            self.free[b.small].add(after)
        b.addr, b.size, b.mapped = ua, usize, False
        self.merge(b, b.prev)
        self.merge(b, b.next)
        self.unmapped[b.small].add(b)
        self.reserved -= usize
        self.record("segment_unmap", ua, usize, b.stream, b.seg_frames)

    # -- releasing --
    def release_available_cached_blocks(self, small, stream, size):
        if self.max_split == (1 << 64) - 1:
            return False
        want = max(size, self.max_split)
        blocks = sorted((b for b in self.free[small] if b.es is None and b.pool == self.pool),
                        key=self.key)
        big = [b for b in blocks if b.stream == stream and b.size >= want]
        if big:
            if big[0].prev is None and big[0].next is None:
                self.release_block(big[0])
            return True
        released = 0
        for b in reversed([b for b in blocks if b.stream == stream]):
            if released >= want or b.size < self.max_split:
                break
            if b.prev is None and b.next is None:
                released += b.size
                self.release_block(b)
        return released >= want

    def synchronize(self):
        for b in list(self.pending):
            self.free_completed(b)

    def release_cached_blocks(self):
        self.synchronize()
        for small in (False, True):
            to_unmap = []
            for b in sorted(self.free[small], key=self.key):
                if b.pool != (0, 0):  # a private pool in use keeps its cache
                    continue
                if b.es is not None:
                    to_unmap.append(b)
                elif b.prev is None and b.next is None:
                    self.release_block(b)
            for b in to_unmap:
                self.unmap_block(b)
                if b.prev is None and b.next is None:
                    self.unmapped[small].discard(b)

    def empty_cache(self):
        self.release_cached_blocks()

    # -- malloc and free --
    def alloc_block(self, small, stream, size, frames):
        if self.expandable and self.pool == (0, 0):  # private pools: plain segments only
            return self.try_allocate_expandable(small, stream, size, frames)
        return self.cuda_malloc(small, stream, self.allocation_size(size), frames)

    def malloc(self, requested, stream=0, frames=None):
        frames = frames if frames is not None else self.frames_of("alloc")
        size = self.round_size(requested)
        small = size <= K_SMALL_SIZE
        b = self.get_free_block(small, stream, size)
        if b is None:
            b = self.alloc_block(small, stream, size, frames)
            if b is None and self.release_available_cached_blocks(small, stream, size):
                b = self.alloc_block(small, stream, size, frames)
            if b is None:
                self.release_cached_blocks()
                b = self.alloc_block(small, stream, size, frames)
            if b is None:
                self.record("oom", self.capacity - self.reserved, size, stream, frames)
                raise OutOfMemory()
        if self.should_split(b, size):
            rest = Block(b.addr + size, b.size - size, b.stream, b.small, es=b.es, pool=b.pool)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
            b.size = size
            self.free[small].add(rest)
        b.allocated, b.requested, b.frames, b.stream = True, requested, frames, stream
        self.active[b.addr] = b
        self.record("alloc", b.addr, requested, stream, frames)
        return b.addr

    def free_block(self, addr, delayed=False, frames=None):
        """frames: the freeing stack (PyTorch records it with context='all'); the allocation's
        stack when None (context='alloc')."""
        b = self.active.pop(addr)
        b.allocated = False
        self.record("free_requested", b.addr, b.requested, b.stream,
                    frames if frames is not None else b.frames)
        if delayed:  # used by another stream: the free completes later
            b.pending = True
            self.pending.append(b)
        else:
            self.free_completed(b, frames)

    def free_completed(self, b, frames=None):
        if b in self.pending:
            self.pending.remove(b)
        b.pending = False
        self.record("free_completed", b.addr, b.requested, b.stream,
                    frames if frames is not None else b.frames)
        self.merge(b, b.prev)
        self.merge(b, b.next)
        self.free[b.small].add(b)
        b.frames = []
        b.requested = 0

    # -- snapshot() --
    def blocks(self):
        seen = set()
        for b in list(self.active.values()) + self.pending + [
                x for p in (True, False) for x in self.free[p]]:
            while b.prev is not None and b.prev.mapped:
                b = b.prev
            if id(b) in seen:
                continue
            seen.add(id(b))
            yield b

    def segments(self):
        out = []
        for head in self.blocks():
            seg = {"device": self.device, "address": head.addr, "total_size": 0,
                   "allocated_size": 0, "active_size": 0, "requested_size": 0,
                   "stream": head.stream, "segment_type": "small" if head.small else "large",
                   "segment_pool_id": head.pool, "is_expandable": head.es is not None,
                   "frames": head.seg_frames, "blocks": []}
            b = head
            while b is not None and b.mapped:
                state = ("active_allocated" if b.allocated else
                         "active_pending_free" if b.pending else "inactive")
                seg["blocks"].append({"address": b.addr, "size": b.size,
                                      "requested_size": b.requested, "state": state,
                                      "frames": b.frames})
                seg["total_size"] += b.size
                if b.allocated or b.pending:
                    seg["allocated_size"] += b.size if b.allocated else 0
                    seg["active_size"] += b.size
                    seg["requested_size"] += b.requested
                b = b.next
            out.append(seg)
        return sorted(out, key=lambda s: s["address"])

# ---- snapshots with known answers, made by the simulated allocator ---------------------------


class Clock:
    def __init__(self, start=1748474028000000):
        self.t = start

    def __call__(self):
        self.t += 7
        return self.t


def sim_frames(rnd):
    return [{"name": "fn_%d" % rnd.randrange(40), "filename": "/home/user/train.py",
             "line": rnd.randrange(1, 500)}]


def workload(alloc, rnd, steps, sizes, streams=(0,), empty_every=5, delay=0.05, live_cap=60):
    """Steps of allocations and frees; empty_cache now and then, some frees that wait for a
    stream. Returns the live addresses."""
    live = []
    for step in range(steps):
        for _ in range(rnd.randrange(4, 12)):
            size = rnd.choice(sizes)
            size = max(1, size + rnd.randrange(-size // 8 - 1, size // 8 + 1))
            try:
                live.append(alloc.malloc(size, rnd.choice(streams), sim_frames(rnd)))
            except OutOfMemory:
                return live, True
        while len(live) > live_cap or (live and rnd.random() < 0.45):
            addr = live.pop(rnd.randrange(len(live)))
            alloc.free_block(addr, delayed=rnd.random() < delay)
        if rnd.random() < 0.3 and alloc.pending:
            alloc.free_completed(alloc.pending[0])
        if empty_every and step % empty_every == empty_every - 1:
            alloc.empty_cache()
    return live, False


def snapshot_of(allocs, keep, settings=None, times=True):
    """torch.cuda.memory._snapshot(): the segments of every device, and per device the newest
    `keep` (a fraction) of its trace entries: the ring buffer started mid-run."""
    traces = []
    for a in allocs:
        entries = a.trace[-int(len(a.trace) * keep):] if keep else []
        if not times:
            entries = [{k: v for k, v in e.items() if k != "time_us"} for e in entries]
        traces.append(entries)
    snap = {"segments": [s for a in allocs for s in a.segments()], "device_traces": traces}
    if settings is not None:
        snap["allocator_settings"] = settings
    return snap


def settings_dict(conf="", expandable=False, max_split=-1, roundup=None, gc=0.0):
    d = {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": max_split,
         "garbage_collection_threshold": gc, "expandable_segments": expandable,
         "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
         "pinned_use_cuda_host_register": False}
    d["roundup_power2_divisions"] = {str(1 << i): (roundup or [0] * 16)[i] for i in range(16)}
    return d


SIZES = [700, 4096, 200 * 1024, 1 << 20, 3 << 20, 9 << 20, 24 << 20, 45 << 20, 70 << 20]


def es_two_devices():
    """Expandable segments on two devices and two streams; the ring buffer starts mid-run, so
    maps and unmaps of the history span the final segments and the unmapped ranges alike."""
    rnd = random.Random(11)
    clock = Clock()
    allocs = [Allocator(d, 3 << 30, expandable=True, clock=clock) for d in (0, 1)]
    for a in allocs:
        workload(a, rnd, 30, SIZES, streams=(0, 0, 0, 5))
    for a in allocs:  # the history: a map over pages unmapped later, around live blocks
        first = a.malloc(4 << 20, 0)
        big = a.malloc(100 << 20, 0)
        last = a.malloc(4 << 20, 0)
        a.free_block(big)
        a.empty_cache()
        workload(a, rnd, 25, SIZES, streams=(0, 0, 5))
        a.free_block(first)
        a.free_block(last)
    return snapshot_of(allocs, 0.6, settings_dict("expandable_segments:True", True))


def es_oom():
    """Expandable segments until the device is full: the history ends with the unmaps of the
    retry and PyTorch's oom entry."""
    rnd = random.Random(5)
    a = Allocator(0, 1 << 30, expandable=True, clock=Clock())
    workload(a, rnd, 40, SIZES, streams=(0, 3), live_cap=25, empty_every=6)
    live, oom = workload(a, rnd, 400, SIZES + [120 << 20], live_cap=1000, empty_every=0)
    assert oom and a.trace[-1]["action"] == "oom"
    return snapshot_of([a], 0.5, settings_dict("expandable_segments:True", True))


def es_no_time():
    """PyTorch 2.1's format: no time_us, no allocator_settings; expandable segments show only
    in the segments and the history (the settings are inferred)."""
    rnd = random.Random(3)
    a = Allocator(0, 2 << 30, expandable=True, clock=Clock())
    workload(a, rnd, 40, SIZES)
    return snapshot_of([a], 0.5, None, times=False)


def split_roundup():
    """Plain segments with max_split_size 64 MiB and roundup_power2_divisions: block sizes
    follow the rounding, oversized blocks are never split."""
    rnd = random.Random(9)
    roundup = [4] * 8 + [2] * 8
    a = Allocator(0, 4 << 30, max_split=64 << 20, roundup=roundup, clock=Clock())
    workload(a, rnd, 40, SIZES + [90 << 20, 150 << 20], empty_every=9)
    conf = "max_split_size_mb:64,roundup_power2_divisions:[128:4,>:2]"
    return snapshot_of([a], 0.5, settings_dict(conf, False, 64 << 20, roundup))


def graph_pool():
    """A private pool (a CUDA graph's, id (1, 0)) beside the default one, mid-run: its blocks
    are reused only by its own requests and empty_cache() leaves its cached segments alone,
    while the default pool's go back to the driver; with expandable segments on, the private
    pool still uses plain segments."""
    rnd = random.Random(21)
    a = Allocator(0, 4 << 30, expandable=True, clock=Clock())
    a.pool = (1, 0)  # an early graph block, freed at the end: the ring keeps its free only;
    early = a.malloc((39 << 20) // 2, 0)  # 19.5 MiB of a 20 MiB plain segment, split (expandable)
    a.pool = (0, 0)
    workload(a, rnd, 12, SIZES, empty_every=0)
    a.pool = (1, 0)  # capture: the graph's allocations
    graph = [a.malloc(size, 0) for size in (3 << 20, 30 << 20, 8 << 20, 600, 45 << 20)]
    for addr in graph[1::2]:
        a.free_block(addr)
    a.pool = (0, 0)
    workload(a, rnd, 10, SIZES, empty_every=3)
    a.pool = (1, 0)  # a second capture into the same pool reuses its free blocks
    graph += [a.malloc(size, 0) for size in (20 << 20, 500)]
    a.pool = (0, 0)
    workload(a, rnd, 10, SIZES, empty_every=4)
    a.free_block(early)
    return snapshot_of([a], 0.7, settings_dict("expandable_segments:True", True))


def es_conf_only():
    """An allocator_settings dict that lacks expandable_segments (as older PyTorch wrote it):
    only its PYTORCH_CUDA_ALLOC_CONF string says so."""
    rnd = random.Random(4)
    a = Allocator(0, 2 << 30, expandable=True, clock=Clock())
    workload(a, rnd, 30, SIZES)
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1}
    return snapshot_of([a], 0.7, settings)



# ---- simulate's shapes (test_cli_simulate.sh): the recording's facts simulate must read right ---


def retry_oom():
    """A full device that PyTorch's own release-and-retry keeps going, then two OOMs the program
    survives; one empty_cache() call at the end. The device's limit is not a whole number of
    MiB: what the OOMs leave free (2.9 MB short of the last request's segment) is part of it, so
    the limit is an OOM's reserved + the free its entry records, not the most ever reserved.
    The cached segments freed right before a retried cudaMalloc (the first request that does not
    fit) and right before each OOM are the allocator's, not the program's."""
    cap = 10240 * MIB - 2900000
    a = Allocator(0, cap, clock=Clock())
    x, y = a.malloc(3000 * MIB), a.malloc(3000 * MIB)
    a.free_block(x)
    z = a.malloc(4000 * MIB)  # 10000 MiB reserved: the peak
    a.free_block(z)
    d = a.malloc(5000 * MIB)  # does not fit: x's and z's segments released, then allocated
    e = a.malloc(1500 * MIB)
    a.free_block(e)
    try:  # its segment needs 2240 MiB, 2.9 MB more than e's release leaves
        a.malloc(2240 * MIB)
    except OutOfMemory:
        pass
    a.free_block(y)
    g = a.malloc(2500 * MIB)  # in y's cached segment
    i = a.malloc(1000 * MIB)
    a.free_block(i)
    try:  # i's segment released for it, in vain
        a.malloc(6000 * MIB)
    except OutOfMemory:
        pass
    j = a.malloc(700 * MIB)
    a.free_block(j)
    a.empty_cache()  # the program's: j's segment back to the driver
    k = a.malloc(10 * MIB)
    del d, g, k
    return snapshot_of([a], 1.0, settings_dict())


def settings_unrecorded():
    """A run with max_split_size_mb:64 whose snapshot does not say so (the settings it records
    are the defaults): the run's own configuration, as recorded, departs from the history at
    the 30 MiB request, which the default splits off the cached 100 MiB block and PyTorch,
    under max_split_size, gave a segment of its own."""
    a = Allocator(0, 4 << 30, max_split=64 * MIB, clock=Clock())
    big = a.malloc(100 * MIB)
    a.free_block(big)
    b = a.malloc(30 * MIB)  # reserved 130 MiB recorded, 100 MiB by default
    c = a.malloc(50 * MIB)  # 180 MiB recorded, still 100 MiB by default
    a.free_block(b)
    a.free_block(c)
    return snapshot_of([a], 1.0, settings_dict())


def one_entry(frees_only=False):
    """A ring that kept one entry (a block's free), or the two of one free (requested and
    completed): the history asks the allocator nothing."""
    a = Allocator(0, 1 << 30, clock=Clock())
    keep = a.malloc(4 * MIB)
    gone = a.malloc(4 * MIB)
    a.free_block(gone)
    del keep
    snap = snapshot_of([a], 0)
    snap["device_traces"] = [a.trace[-2:] if frees_only else a.trace[-1:]]
    return snap


SIM_SHAPES = {"retry-oom": retry_oom, "settings-unrecorded": settings_unrecorded,
              "one-entry": one_entry, "frees-only": lambda: one_entry(True)}


def realistic_snapshot(entries, seed=5, expandable=False):
    """A transformer's training loop, as PyTorch's allocator history records it: parameters
    made once, per step the forward's activations (kept) and temporaries (freed at once), the
    backward's gradient temporaries and, under zero_grad(set_to_none=True), fresh gradients,
    the optimizer's states at its first step; sequence lengths vary from step to step, so the
    cache fragments as real runs do. Every block goes through the simulated caching allocator,
    so the segments and the history agree (a replay raises no warning). Frames: one dict per
    distinct frame, shared by every entry whose stack holds it, in a list per entry, as the
    snapshot's pickler writes them (frame dicts memoized, lists not). Runs until `entries`
    history entries exist."""
    rnd = random.Random(seed)
    clock = Clock()
    frames = {}

    def frame(name, filename, line):
        key = (name, filename, line)
        if key not in frames:
            frames[key] = {"name": name, "filename": filename, "line": line}
        return frames[key]

    torch_dir = "/opt/conda/lib/python3.11/site-packages/torch/"
    outer = [frame("train_epoch", "/home/user/train.py", 131),  # innermost first
             frame("main", "/home/user/train.py", 188),
             frame("<module>", "/home/user/train.py", 212)]

    def site(kind, layer, line):
        inner = {"forward": [frame("forward", "/home/user/model.py", line),
                             frame("_call_impl", torch_dir + "nn/modules/module.py", 1562),
                             frame("forward", "/home/user/model.py", 88 + layer % 4)],
                 "backward": [frame("backward", torch_dir + "autograd/__init__.py", 347),
                              frame("backward", torch_dir + "_tensor.py", 581)],
                 "step": [frame("_multi_tensor_adamw", torch_dir + "optim/adamw.py", line),
                          frame("step", torch_dir + "optim/adamw.py", 209),
                          frame("wrapper", torch_dir + "optim/optimizer.py", 487)],
                 "init": [frame("__init__", torch_dir + "nn/modules/linear.py", 105),
                          frame("__init__", "/home/user/model.py", 40 + layer % 4)]}[kind]
        return inner + outer

    def stack(kind, layer, line):
        return list(site_frames[(kind, layer % 4, line)])

    site_frames = {}
    for kind, lines in (("forward", (61, 62, 70, 71, 75)), ("backward", (0,)),
                        ("step", (512, 530, 601)), ("init", (0,))):
        for layer in range(4):
            for line in lines:
                site_frames[(kind, layer, line)] = site(kind, layer, line)

    alloc = Allocator(0, 80 << 30, expandable=expandable, clock=clock)
    layers, hidden = 24, 2048
    params = [alloc.malloc(size, 0, stack("init", i, 0)) for i in range(layers)
              for size in (hidden * hidden * 2, 3 * hidden * hidden * 2, hidden * 8,
                           4 * hidden * hidden * 2)]
    param_sizes = [(hidden * hidden * 2, 3 * hidden * hidden * 2, hidden * 8,
                    4 * hidden * hidden * 2)[k % 4] for k in range(len(params))]
    states, grads, annotations = [], [], []
    while len(alloc.trace) < entries:
        step = len(annotations) // 2
        annotations.append({"device": 0, "stage": "START", "name": "ProfilerStep#%d" % step,
                            "time_us": clock()})
        seq = rnd.choice((384, 448, 512, 512, 512, 576))
        tokens = 8 * seq
        acts = []
        for layer in range(layers):  # forward
            acts.append(alloc.malloc(tokens * hidden * 2, 0, stack("forward", layer, 61)))
            scores = alloc.malloc(8 * 16 * seq * seq * 2, 0, stack("forward", layer, 62))
            acts.append(alloc.malloc(tokens * hidden * 2, 0, stack("forward", layer, 70)))
            alloc.free_block(scores)
            acts.append(alloc.malloc(tokens * 4 * hidden * 2, 0, stack("forward", layer, 71)))
            small = alloc.malloc(tokens * 4, 0, stack("forward", layer, 75))
            alloc.free_block(small)
        for layer in reversed(range(layers)):  # backward
            tmp = alloc.malloc(tokens * 4 * hidden * 2, 0, stack("backward", layer, 0))
            for k in range(4):
                grads.append(alloc.malloc(param_sizes[layer * 4 + k], 0,
                                          stack("backward", layer, 0)))
            alloc.free_block(tmp)
            for _ in range(3):
                alloc.free_block(acts.pop())
        if not states:  # the optimizer's first step: exp_avg and exp_avg_sq, kept
            for k, size in enumerate(param_sizes):
                states.append(alloc.malloc(size, 0, stack("step", k, 512)))
                states.append(alloc.malloc(size, 0, stack("step", k, 530)))
        for k in range(0, len(param_sizes), 8):  # foreach temporaries
            tmp = alloc.malloc(param_sizes[k], 0, stack("step", k, 601))
            alloc.free_block(tmp, delayed=rnd.random() < 0.1)
        if alloc.pending:
            alloc.free_completed(alloc.pending[0])
        while grads:  # zero_grad(set_to_none=True)
            alloc.free_block(grads.pop())
        annotations.append({"device": 0, "stage": "END", "name": "ProfilerStep#%d" % step,
                            "time_us": clock()})
    del params, states
    snap = snapshot_of([alloc], 1.0, settings=settings_dict(expandable=expandable))
    snap["external_annotations"] = annotations
    return snap


# ---- a training loop with planted categories, for the category classifier's known answers ----
#
# torch.cuda.memory._snapshot() of a small model trained for three steps under torch.profiler
# (ProfilerStep#0..#2), recorded with _record_memory_history(stacks="all"): Python and C++
# frames, as PyTorch >= 2.9 writes them (compile_context "N/A" and user_metadata "" in every
# entry). Every block is planted with the category torch.profiler gives it by what the loop does
# with it, never by its stack, and goes through the simulated caching allocator, so the expected
# bytes per category are the allocator's block sizes (a block may exceed its request: a large
# free block is not split for a remainder of 1 MiB or less). Per step, B rows (512, 704, 576):
#   setup      parameter        layers.0 (1024 -> 1536) and layers.1 (1536 -> 1280) weights and
#                               biases (nn/modules/linear.py __init__), kept
#   prelude    input            x [B, 1024] fp32 and y [B] int64 from data.py get_batch, freed
#                               by train.py after backward (x is saved for layers.0's backward)
#              gradient freed   optimizer.py zero_grad (set_to_none) frees last step's
#   forward    activation       h0 = layers.0(x), the dropout mask and output, the softmax
#                               probabilities [2, B, B], the mixed rows, log_softmax, the loss
#                               and nll_loss's total_weight: freed in backward (the engine's
#                               release_variables), the loss on the main thread in
#                               torch/autograd/__init__.py backward
#              temporary        gelu's output (dropout keeps its own), the scores [2, B, B],
#                               the logits: freed in forward
#              other            cuBLAS's workspace (8519680 bytes), made by step 0's first
#                               matmul and kept
#   backward   temporary        the gradients of the activations, on autograd's thread (C++
#                               frames only), and the seed gradient (ones_like) on the main one
#              gradient         the parameters' .grad (AccumulateGrad), kept until the next
#                               step's zero_grad; the last step's are live at the end
#   optimizer  optimizer_state  Adam's exp_avg and exp_avg_sq (adam.py _init_group), step 0,
#                               kept
#              temporary        _multi_tensor_adam's _foreach_sqrt results, freed in the step
# The run's peak is one moment, in step 1's backward, with every category live.
#
# Variants of the same loop (training_snapshot's `variant`), each a shape seen in real files:
#   oom        step 2 has 4096 rows and its forward runs out of memory at the scores: PyTorch's
#              oom entry, then the exception unwinds and frees the forward's activations and
#              the batch (no later allocation, step 2 never ends). The peak is that forward's,
#              its blocks planted as the run going on would make them (activation, input).
#   ring       recorded with stacks="python" (no C++ frames: autograd's thread has none), the
#              ring buffer holding step 2 only: step 1's gradients are known by their frees in
#              zero_grad alone. `seeded_freed` is what the blocks live when the ring began and
#              freed in it are, by category; `window_peak` the peak up to that zero_grad (its
#              batch loaded, the gradients still live).
#   moment     no history: segments only (a snapshot taken with history off)
#   one-entry  a history of one entry (the last free)

CATEGORIES = ("parameter", "gradient", "optimizer_state", "activation", "temporary", "input",
              "other")
TRAINING_BATCHES = (512, 704, 576)  # rows per step: step 1 holds the run's one peak


class TorchFrames:
    """Stacks as PyTorch's symbolizer writes them, innermost first: one dict per distinct frame,
    shared by every stack that holds it."""
    TORCH = "/opt/conda/lib/python3.11/site-packages/torch/"
    USER = "/home/user/mlp/"

    def __init__(self):
        self.frames = {}

    def f(self, name, filename="??", line=0):
        key = (name, filename, line)
        if key not in self.frames:
            self.frames[key] = {"name": name, "filename": filename, "line": line}
        return self.frames[key]

    def alloc_prefix(self):
        return [self.f("torch::unwind::unwind()"),
                self.f("torch::CapturedTraceback::gather(bool, bool, bool)"),
                self.f("torch::cuda::(anonymous namespace)::gather_with_cpp()",
                       "memory_snapshot.cpp"),
                self.f("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc("
                       "unsigned long, CUstream_st*)", "CUDACachingAllocator.cpp"),
                self.f("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc("
                       "void**, signed char, unsigned long, CUstream_st*)", ""),
                self.f("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::"
                       "allocate(unsigned long)", "")]

    def free_prefix(self):
        return [self.f("torch::unwind::unwind()"),
                self.f("torch::CapturedTraceback::gather(bool, bool, bool)"),
                self.f("torch::cuda::(anonymous namespace)::gather_with_cpp()",
                       "memory_snapshot.cpp"),
                self.f("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free("
                       "c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::Block*)",
                       "CUDACachingAllocator.cpp"),
                self.f("c10::intrusive_ptr<c10::StorageImpl, c10::detail::intrusive_target_"
                       "default_null_type<c10::StorageImpl> >::reset_not_null_()", ""),
                self.f("c10::TensorImpl::~TensorImpl() [clone .localalias]", "TensorImpl.cpp")]

    def op(self, name, binding):
        """An aten op's C++ frames up to its Python binding: empty_cuda, the op's CUDA wrapper,
        its dispatcher call, the THPVariable_* binding."""
        return [self.f("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"),
                self.f("at::(anonymous namespace)::create_out(c10::ArrayRef<long>, "
                       "c10::ArrayRef<long>, c10::TensorOptions const&)", "RegisterCUDA_0.cpp"),
                self.f("at::(anonymous namespace)::wrapper_CUDA_%s(at::Tensor const&)" % name,
                       "RegisterCUDA_0.cpp"),
                self.f("at::_ops::%s::call(at::Tensor const&)" % name),
                self.f("torch::autograd::%s(_object*, _object*, _object*)" % binding,
                       "python_variable_methods.cpp")]

    def python(self, *frames):
        """Python frames (name, file, line), innermost first, with the interpreter's C frames
        between them as a C++ unwinder sees them."""
        out = []
        for name, filename, line in frames:
            out.append(self.f(name, filename, line))
            out.append(self.f("_PyEval_EvalFrameDefault"))
        return out

    def main_thread(self):
        return self.python(("train", self.USER + "train.py", 71),
                           ("main", self.USER + "train.py", 118),
                           ("<module>", self.USER + "train.py", 122)) + [
            self.f("Py_RunMain"), self.f("__libc_start_main"), self.f("_start")]

    def module_call(self):
        t = self.TORCH + "nn/modules/module.py"
        return self.python(("_call_impl", t, 1790), ("_wrapped_call_impl", t, 1779))

    def engine(self, node):
        """The C++-only stack of autograd's device thread running `node`."""
        return [self.f("torch::autograd::generated::%s::apply(std::vector<at::Tensor, "
                       "std::allocator<at::Tensor> >&&)" % node),
                self.f("torch::autograd::Node::operator()(std::vector<at::Tensor, "
                       "std::allocator<at::Tensor> >&&)", ""),
                self.f("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::"
                       "autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::"
                       "InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
                self.f("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::"
                       "GraphTask> const&)"),
                self.f("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::"
                       "autograd::ReadyQueue> const&, bool)"),
                self.f("torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<"
                       "torch::autograd::ReadyQueue> const&, bool)", ""),
                self.f("start_thread"), self.f("__clone")]

    def engine_release(self, node):
        """The engine freeing a node's saved tensors once it ran."""
        return [self.f("torch::autograd::SavedVariable::reset_data()"),
                self.f("torch::autograd::generated::%s::release_variables()" % node, "")] + \
            self.engine(node)[2:]

    def engine_drop(self, node):
        """The engine dropping a gradient it passed on (the node's input buffer)."""
        return [self.f("std::vector<at::Tensor, std::allocator<at::Tensor> >::~vector()", "")] + \
            self.engine(node)[2:]


def training_snapshot(names=False, variant=None):
    """(snapshot, expected): the loop above; with names, layers.0.weight's exp_avg is named by
    user_metadata "optimizer_state layers.0.weight.exp_avg" (torch.cuda.memory.
    _set_memory_metadata around its allocation); variant: one of the variants above."""
    fr = TorchFrames()
    T, U = TorchFrames.TORCH, TorchFrames.USER
    clock = Clock()
    alloc = Allocator(0, 16 << 30, clock=clock)
    live = {}        # addr -> (category, block size, requested size)
    samples = []     # (trace index of an alloc, allocated bytes, {category: bytes}, phase)
    named = []       # tensor names planted in user_metadata
    phase = ["other"]  # the phase of the loop (phases.h's names), for each step's peak
    batches = TRAINING_BATCHES[:2] + (4096,) if variant == "oom" else TRAINING_BATCHES
    ring_from = None   # ring: the first trace entry the snapshot keeps
    seeded = {}        # ring: addr -> (category, size) of the blocks live when it begins
    seeded_freed = dict.fromkeys(CATEGORIES, 0)
    window_peak = None  # ring: the peak up to step 2's zero_grad (the seed's gradients live)

    def malloc(category, size, frames, name=None):
        addr = alloc.malloc(size, 0, frames)
        live[addr] = (category, alloc.active[addr].size, size)
        if name:
            alloc.trace[-1]["user_metadata"] = name
            named.append({"addr": addr, "size": live[addr][1], "metadata": name})
        by = dict.fromkeys(CATEGORIES, 0)
        for c, s, _ in live.values():
            by[c] += s
        samples.append((len(alloc.trace) - 1, sum(by.values()), by, phase[0],
                        sorted((c, s, r) for c, s, r in live.values())))
        return addr

    def free(addr, frames):
        alloc.free_block(addr, frames=frames)
        del live[addr]
        if addr in seeded:
            c, size = seeded.pop(addr)
            seeded_freed[c] += size

    def py_free(*python):  # a tensor whose last Python reference goes away there
        return fr.free_prefix() + [fr.f("THPVariable_clear(THPVariable*)", "python_variable.cpp"),
                                   fr.f("THPVariable_dealloc(_object*)", "python_variable.cpp")] + \
            fr.python(*python)

    main = fr.main_thread()
    model_py = U + "model.py"
    # -- setup: the model (parameters)
    params = []
    for layer, (n_in, n_out) in enumerate(((1024, 1536), (1536, 1280))):
        for what, size, line in (("weight", n_out * n_in * 4, 106), ("bias", n_out * 4, 110)):
            frames = fr.alloc_prefix() + [
                fr.f("at::detail::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>,"
                     " std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<"
                     "bool>, std::optional<c10::MemoryFormat>)"),
                fr.f("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::"
                     "optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::"
                     "Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)"),
                fr.f("torch::autograd::THPVariable_empty(_object*, _object*, _object*)",
                     "python_torch_functions_0.cpp")] + fr.python(
                ("__init__", T + "nn/modules/linear.py", line),
                ("__init__", model_py, 14 + layer),
                ("main", U + "train.py", 97)) + main[-5:]
            params.append((malloc("parameter", size, frames), size, "layers.%d.%s" % (layer, what)))
    annotations, grads, states = [], [], []
    steps = []
    for step, rows in enumerate(batches):
        if variant == "ring" and step == 2:
            ring_from = len(alloc.trace)
            seeded = {a: (c, size) for a, (c, size, _) in live.items()}
        annotations.append({"stage": "START", "name": "ProfilerStep#%d" % step, "device": 0,
                            "time_us": clock()})
        first_sample = len(samples)
        phase[0] = "other"
        # the batch, from the data pipeline (before any forward frame)
        load = fr.alloc_prefix() + fr.op("_to_copy", "THPVariable_to") + fr.python(
            ("get_batch", U + "data.py", 41)) + main
        x = malloc("input", rows * 1024 * 4, load)
        y = malloc("input", rows * 8, load)
        if ring_from is not None and window_peak is None:  # before zero_grad frees the seed's
            window_peak = {"peak_allocated_bytes": samples[-1][1],
                           "categories_at_peak": samples[-1][2]}
        # optimizer.zero_grad(): last step's gradients (set_to_none)
        zero = fr.free_prefix() + [
            fr.f("torch::autograd::THPVariable_set_grad(THPVariable*, _object*, void*)",
                 "python_variable.cpp")] + fr.python(
            ("zero_grad", T + "optim/optimizer.py", 1004),
            ("_fn", T + "_dynamo/eval_frame.py", 929)) + main
        while grads:
            free(grads.pop(), zero)
        # forward, under the model's module calls
        phase[0] = "forward"
        fwd = fr.module_call() + fr.python(("train", U + "train.py", 66)) + main[2:]

        def in_forward(line, op, binding, inner=()):
            return fr.alloc_prefix() + fr.op(op, binding) + fr.python(*inner) + fr.python(
                ("forward", model_py, line)) + fwd

        linear_py = (("forward", T + "nn/modules/linear.py", 125),)
        linear_mod = fr.module_call()
        h0 = malloc("activation", rows * 1536 * 4,  # saved by gelu
                    fr.alloc_prefix() + fr.op("addmm", "THPVariable_linear") +
                    fr.python(*linear_py) + linear_mod + fr.python(("forward", model_py, 30)) +
                    fwd)
        if step == 0:  # cuBLAS's workspace, made by the first matmul and kept: other
            malloc("other", 4096 * 1024 * 2 + 16 * 1024 * 8, fr.alloc_prefix() + [
                fr.f("at::cuda::(anonymous namespace)::getNewWorkspace()",
                     "CublasHandlePool.cpp"),
                fr.f("at::cuda::getCUDABlasLtWorkspace()", "CublasHandlePool.cpp"),
                fr.f("void at::cuda::blas::gemm_and_bias<float>(bool, bool, long, long, long, "
                     "at::opmath_type<float>, float const*, long, float const*, long, float "
                     "const*, float*, long, at::cuda::blas::GEMMAndBiasActivationEpilogue)",
                     "CUDABlas.cpp"),
                fr.f("at::native::(anonymous namespace)::addmm_out_cuda_impl(at::Tensor&, "
                     "at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar "
                     "const&, c10::Scalar const&, at::native::(anonymous namespace)::Activation)",
                     "Blas.cpp")] + fr.op("addmm", "THPVariable_linear")[2:] +
                fr.python(*linear_py) + linear_mod + fr.python(("forward", model_py, 30)) + fwd)
        a0 = malloc("temporary", rows * 1536 * 4, in_forward(31, "gelu", "THPVariable_gelu"))
        dropout = (("dropout", T + "nn/functional.py", 1425),)
        mask = malloc("activation", rows * 1536,  # bool, saved by dropout
                      in_forward(32, "native_dropout", "THPVariable_dropout", dropout))
        d0 = malloc("activation", rows * 1536 * 4,  # saved by both bmm
                    in_forward(32, "native_dropout", "THPVariable_dropout", dropout))
        free(a0, py_free(("forward", model_py, 32)) + fwd)
        if variant == "oom" and step == 2:  # the scores do not fit: the forward unwinds
            try:
                malloc("temporary", 64 << 30, in_forward(33, "bmm", "THPVariable_matmul"))
                raise AssertionError("64 GiB fitted")
            except OutOfMemory:
                pass
            for t in (d0, mask, h0):
                free(t, py_free(("forward", model_py, 33)) + fwd)
            for t in (y, x):
                free(t, py_free(("train", U + "train.py", 66)) + main[2:])
            mine = samples[first_sample:]
            top = max(mine, key=lambda s: s[1])
            steps.append({"step": step, "name": "ProfilerStep#%d" % step, "rows": rows,
                          "peak_allocated_bytes": top[1], "peak_phase": top[3]})
            break
        scores = malloc("temporary", 2 * rows * rows * 4,
                        in_forward(33, "bmm", "THPVariable_matmul"))
        probs = malloc("activation", 2 * rows * rows * 4,  # saved by softmax and bmm
                       in_forward(34, "_softmax", "THPVariable_softmax"))
        free(scores, py_free(("forward", model_py, 34)) + fwd)
        mixed = malloc("activation", rows * 1536 * 4,  # saved by layers.1
                       in_forward(35, "bmm", "THPVariable_matmul"))
        logits = malloc("temporary", rows * 1280 * 4,
                        fr.alloc_prefix() + fr.op("addmm", "THPVariable_linear") +
                        fr.python(*linear_py) + linear_mod +
                        fr.python(("forward", model_py, 36)) + fwd)
        ce = fr.python(("cross_entropy", T + "nn/functional.py", 3494),
                       ("train", U + "train.py", 67)) + main[2:]
        logp = malloc("activation", rows * 1280 * 4,  # saved by log_softmax and nll_loss
                      fr.alloc_prefix() + fr.op("_log_softmax", "THPVariable_cross_entropy_loss") +
                      ce)
        nll = fr.alloc_prefix() + fr.op("nll_loss_forward", "THPVariable_cross_entropy_loss") + ce
        loss = malloc("activation", 4, nll)
        total_weight = malloc("activation", 4, nll)  # saved by nll_loss
        free(logits, py_free(("train", U + "train.py", 67)) + main[2:])
        # loss.backward(): the seed gradient on the main thread, the rest on autograd's thread
        phase[0] = "backward"
        bwd_py = (("backward", T + "autograd/__init__.py", 353),
                  ("backward", T + "_tensor.py", 648),
                  ("train", U + "train.py", 68))
        seed = malloc("temporary", 4,
                      fr.alloc_prefix() + fr.op("ones_like", "THPVariable_ones_like") +
                      fr.python(("_make_grads", T + "autograd/__init__.py", 220), *bwd_py) +
                      main[2:])

        def eng(node, op):
            return fr.alloc_prefix() + [
                fr.f("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"),
                fr.f("at::_ops::%s::call(at::Tensor const&, at::Tensor const&)" % op)] + \
                fr.engine(node)

        def grad_of(k, node):  # param.grad: AccumulateGrad's copy of the node's output
            return malloc("gradient", params[k][1], fr.alloc_prefix() + [
                fr.f("at::_ops::new_empty_strided::call(at::Tensor const&, c10::ArrayRef<c10::"
                     "SymInt>, c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, "
                     "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<"
                     "bool>)"),
                fr.f("torch::autograd::utils::clone_obey_contract(at::Tensor const&, "
                     "at::Tensor const&)", ""),
                fr.f("void torch::autograd::AccumulateGrad::accumulateGrad<std::function<void "
                     "(at::Tensor&&)> >(at::Tensor const&, at::Tensor&, at::Tensor const&, "
                     "long, std::function<void (at::Tensor&&)> const&)", ""),
                fr.f("torch::autograd::(anonymous namespace)::AccumulateGrad_apply_impl(std::"
                     "vector<at::Tensor, std::allocator<at::Tensor> >&&, torch::autograd::"
                     "AccumulateGrad&)", "accumulate_grad.cpp"),
                fr.f("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::"
                     "allocator<at::Tensor> >&&)")] + fr.engine(node)[1:])

        g_logp = malloc("temporary", rows * 1280 * 4, eng("NllLossBackward0", "nll_loss_backward"))
        free(total_weight, fr.engine_release("NllLossBackward0"))
        g_logits = malloc("temporary", rows * 1280 * 4,
                          eng("LogSoftmaxBackward0", "_log_softmax_backward_data"))
        free(logp, fr.engine_release("LogSoftmaxBackward0"))
        free(g_logp, fr.engine_drop("LogSoftmaxBackward0"))
        grads.append(grad_of(2, "AddmmBackward0"))
        grads.append(grad_of(3, "AddmmBackward0"))
        g_mixed = malloc("temporary", rows * 1536 * 4, eng("AddmmBackward0", "mm"))
        free(mixed, fr.engine_release("AddmmBackward0"))
        free(g_logits, fr.engine_drop("AddmmBackward0"))
        g_probs = malloc("temporary", 2 * rows * rows * 4, eng("BmmBackward0", "bmm"))
        g_d0 = malloc("temporary", rows * 1536 * 4, eng("BmmBackward0", "bmm"))
        free(g_mixed, fr.engine_drop("BmmBackward0"))
        g_scores = malloc("temporary", 2 * rows * rows * 4,
                          eng("SoftmaxBackward0", "_softmax_backward_data"))
        free(probs, fr.engine_release("SoftmaxBackward0"))
        free(g_probs, fr.engine_drop("SoftmaxBackward0"))
        g_d0b = malloc("temporary", rows * 1536 * 4, eng("BmmBackward0", "bmm"))
        free(d0, fr.engine_release("BmmBackward0"))
        free(g_scores, fr.engine_drop("BmmBackward0"))
        free(g_d0b, [fr.f("torch::autograd::InputBuffer::add(unsigned long, at::Tensor&&, "
                          "std::optional<c10::Stream> const&, std::optional<c10::Stream> "
                          "const&)", "input_buffer.cpp")] + fr.engine("BmmBackward0")[2:])
        g_a0 = malloc("temporary", rows * 1536 * 4,
                      eng("NativeDropoutBackward0", "native_dropout_backward"))
        free(mask, fr.engine_release("NativeDropoutBackward0"))
        free(g_d0, fr.engine_drop("NativeDropoutBackward0"))
        g_h0 = malloc("temporary", rows * 1536 * 4, eng("GeluBackward0", "gelu_backward"))
        free(h0, fr.engine_release("GeluBackward0"))
        free(g_a0, fr.engine_drop("GeluBackward0"))
        grads.insert(0, grad_of(1, "AddmmBackward0"))
        grads.insert(0, grad_of(0, "AddmmBackward0"))
        free(g_h0, fr.engine_drop("AddmmBackward0"))
        bwd_free = py_free(*bwd_py) + main[2:]
        free(seed, bwd_free)
        free(loss, bwd_free)
        free(y, py_free(("train", U + "train.py", 69)) + main[2:])
        free(x, py_free(("train", U + "train.py", 69)) + main[2:])
        # optimizer.step(): Adam's state at its first step, the foreach temporaries every step
        phase[0] = "optimizer"
        opt = fr.python(("_use_grad", T + "optim/optimizer.py", 79),
                        ("wrapper", T + "optim/optimizer.py", 485),
                        ("train", U + "train.py", 70)) + main[2:]
        adam = T + "optim/adam.py"
        if not states:
            for k, (_, size, pname) in enumerate(params):
                for what, line in (("exp_avg", 168), ("exp_avg_sq", 172)):
                    frames = fr.alloc_prefix() + fr.op("zeros_like", "THPVariable_zeros_like") + \
                        fr.python(("_init_group", adam, line), ("step", adam, 237)) + opt
                    name = ("optimizer_state %s.%s" % (pname, what)
                            if names and k == 0 and what == "exp_avg" else None)
                    states.append(malloc("optimizer_state", size, frames, name))
        sqrt = fr.alloc_prefix() + fr.op("_foreach_sqrt", "THPVariable__foreach_sqrt") + fr.python(
            ("_multi_tensor_adam", adam, 766), ("adam", adam, 1016), ("step", adam, 248)) + opt
        tmp = [malloc("temporary", size, sqrt) for _, size, _ in params]
        done = py_free(("_multi_tensor_adam", adam, 775), ("adam", adam, 1016),
                       ("step", adam, 248)) + opt
        for t in tmp:
            free(t, done)
        annotations.append({"stage": "END", "name": "ProfilerStep#%d" % step, "device": 0,
                            "time_us": clock()})
        mine = samples[first_sample:]
        top = max(mine, key=lambda s: s[1])  # the first sample at the step's peak
        steps.append({"step": step, "name": "ProfilerStep#%d" % step, "rows": rows,
                      "peak_allocated_bytes": top[1], "peak_phase": top[3]})

    for e in alloc.trace:  # PyTorch >= 2.9 writes both keys in every entry
        e.setdefault("compile_context", "N/A")
        e.setdefault("user_metadata", "")
    snap = snapshot_of([alloc], 1.0, settings=settings_dict())
    if variant == "ring":
        def python_only(frames):
            return [f for f in frames if f["filename"].endswith(".py")]
        snap["device_traces"][0] = [dict(e, frames=python_only(e["frames"]))
                                    for e in alloc.trace[ring_from:]]
        for seg in snap["segments"]:
            for b in seg["blocks"]:
                b["frames"] = python_only(b["frames"])
    elif variant == "moment":
        snap["device_traces"] = [[]]
    elif variant == "one-entry":
        snap["device_traces"][0] = alloc.trace[-1:]
    snap["external_annotations"] = annotations
    peak = max(s[1] for s in samples)
    at_peak = [s for s in samples if s[1] == peak]
    assert len(at_peak) == 1, "the peak must be one moment"
    index, _, by, _, blocks = at_peak[0]
    peak_step = [i for i, st in enumerate(steps) if st["peak_allocated_bytes"] == peak]
    expected = {
        "device": 0,
        "peak_allocated_bytes": peak,
        "peak_entry": index,  # device_traces[0][peak_entry]: the alloc that reaches the peak
        "peak_time_us": alloc.trace[index]["time_us"],
        "peak_step": peak_step[0] if peak_step else None,
        "categories_at_peak": by,
        # what makes them up: each live block's category, size and request
        "blocks_at_peak": [{"category": c, "size": s, "requested": r} for c, s, r in blocks],
        "steps": steps,
        "seeded_freed": seeded_freed,
        "window_peak": window_peak,
        "tensor_names": [{"addr": n["addr"], "size": n["size"],
                          "name": n["metadata"].split(" ", 1)[1],
                          "category": n["metadata"].split(" ", 1)[0]} for n in named],
    }
    return snap, expected


def windows_paths(snap):
    """The snapshot as the same program recorded on Windows writes it: every frame's filename
    a Windows path ("D:\\mlp\\train.py", "C:\\Python311\\Lib\\site-packages\\torch\\..."); the
    frames and everything else unchanged."""
    seen = set()

    def win(path):
        for unix, windows in ((TorchFrames.USER, "D:\\mlp\\"),
                              ("/opt/conda/lib/python3.11/", "C:\\Python311\\Lib\\")):
            if path.startswith(unix):
                return windows + path[len(unix):].replace("/", "\\")
        return path.replace("/", "\\")

    def walk(v):
        if isinstance(v, dict):
            if "filename" in v and id(v) not in seen:
                seen.add(id(v))
                v["filename"] = win(v["filename"])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(snap)
    return snap


def write_training(path, names=False, variant=None, windows=False):
    snap, expected = training_snapshot(names, variant)
    if windows:
        windows_paths(snap)
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    with open(path + ".expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    return expected


SNAPSHOTS = {"es-two-devices": es_two_devices, "es-oom": es_oom, "es-no-time": es_no_time,
             "graph-pool": graph_pool,
             "split-roundup": split_roundup, "es-conf-only": es_conf_only,
             # a training loop: 24 layers, ProfilerStep annotations, expandable segments
             "es-training": lambda: realistic_snapshot(12000, seed=7, expandable=True)}


# training loops with planted categories (and FILE.expected.json beside them); the second one
# names an Adam state tensor through user_metadata
TRAINING = {"training": False, "training-names": True}


def mid_run_snapshot():
    """A history that begins mid-run: realistic_snapshot()'s training loop (ProfilerStep#0..#N)
    whose ring had dropped its oldest entries, the first ones left being halfway through step 4,
    while the annotations (a ring of their own, far from full) still hold every step. Beside it
    a second device that allocates only after the last step ended, so no range holds its
    events. Returns (snapshot, expected): the first step the history reaches."""
    snap = realistic_snapshot(9000, seed=3)
    ann = snap["external_annotations"]
    start = {a["name"]: a["time_us"] for a in ann if a["stage"] == "START"}
    end = {a["name"]: a["time_us"] for a in ann if a["stage"] == "END"}
    mid = (start["ProfilerStep#4"] + end["ProfilerStep#4"]) // 2
    entries = snap["device_traces"][0]
    snap["device_traces"][0] = [e for e in entries if e["time_us"] > mid]
    other = Allocator(1, 1 << 30, clock=Clock(max(end.values()) + 1000))
    rnd = random.Random(4)
    workload(other, rnd, 3, SIZES[:5], empty_every=0)
    snap["segments"] += other.segments()
    snap["device_traces"].append(other.trace)
    steps = sorted(int(n.split("#")[1]) for n in start)
    return snap, {"first_step": 4, "steps": steps, "lost_steps": [0, 1, 2, 3]}


def write_no_steps(out):
    """training_snapshot()'s loop without step markers, as most real snapshots are: in
    DIR/optimizer-ranges.pickle its ProfilerStep#N annotations became the
    "Optimizer.step#Adam.step" ranges torch.profiler puts around each optimizer step (each
    ending where its step did), in DIR/no-annotations.pickle there are none; DIR/expected.json
    is training_snapshot()'s. Steps' answers (peak, its phase) stay the marked steps'."""
    os.makedirs(out, exist_ok=True)
    snap, expected = training_snapshot(False)
    ends = [a["time_us"] for a in snap["external_annotations"] if a["stage"] == "END"]
    snap["external_annotations"] = [
        a for t in ends for a in ({"stage": "START", "name": "Optimizer.step#Adam.step",
                                   "device": 0, "time_us": t - 1},
                                  {"stage": "END", "name": "Optimizer.step#Adam.step",
                                   "device": 0, "time_us": t})]
    with open(os.path.join(out, "optimizer-ranges.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)
    snap["external_annotations"] = []
    with open(os.path.join(out, "no-annotations.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


def write_snapshots(out):
    os.makedirs(out, exist_ok=True)
    for name, make in SNAPSHOTS.items():
        with open(os.path.join(out, name + ".pickle"), "wb") as f:
            pickle.dump(make(), f, protocol=4)
    for name, names in TRAINING.items():
        write_training(os.path.join(out, name + ".pickle"), names)


def write_sim_shapes(out):
    os.makedirs(out, exist_ok=True)
    for name, make in SIM_SHAPES.items():
        with open(os.path.join(out, name + ".pickle"), "wb") as f:
            pickle.dump(make(), f, protocol=4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--big")
    ap.add_argument("--entries", type=int, default=1000000)
    ap.add_argument("--snapshots")
    ap.add_argument("--realistic")
    ap.add_argument("--sim-shapes")
    ap.add_argument("--expandable", action="store_true", help="--realistic with expandable segments")
    ap.add_argument("--training")
    ap.add_argument("--no-steps", help="DIR: a training loop without step markers")
    ap.add_argument("--mid-run", help="a history that begins mid-run (and PATH.expected.json)")
    ap.add_argument("--names", action="store_true",
                    help="--training: name layers.0.weight's exp_avg through user_metadata")
    ap.add_argument("--variant", choices=("oom", "ring", "moment", "one-entry"),
                    help="--training: a variant of the loop (see training_snapshot)")
    ap.add_argument("--windows", action="store_true",
                    help="--training: every frame's filename a Windows path (D:\\mlp\\...)")
    args = ap.parse_args()
    if args.out:
        write_fixtures(args.out)
    if args.snapshots:
        write_snapshots(args.snapshots)
    if args.big:
        with open(args.big, "wb") as f:
            pickle.dump(synthetic_snapshot(args.entries), f, protocol=4)
    if args.realistic:
        with open(args.realistic, "wb") as f:
            pickle.dump(realistic_snapshot(args.entries, expandable=args.expandable), f,
                        protocol=4)
    if args.training:
        write_training(args.training, args.names, args.variant, args.windows)
    if args.no_steps:
        write_no_steps(args.no_steps)
    if args.mid_run:
        snap, expected = mid_run_snapshot()
        with open(args.mid_run, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        with open(args.mid_run + ".expected.json", "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.sim_shapes:
        write_sim_shapes(args.sim_shapes)
    if not (args.out or args.big or args.snapshots or args.realistic or args.training or
            args.mid_run or args.no_steps or args.sim_shapes):
        ap.print_usage(sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
