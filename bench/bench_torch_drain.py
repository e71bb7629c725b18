"""bench_torch_drain.py — the Python side of one PyTorch history drain (issue 26).

A drain asks PyTorch for a snapshot (its cost is PyTorch's: `_snapshot()` copies the whole
ring, and no API gives less) and then finds and emits the entries it has not taken yet: this
bench times that second part, `Drainer.drain_snapshot`, on a full ring of RING entries (a steady
loop: the same 64 addresses allocated and freed again and again, Python stacks of 8 frames), for
drains that find N new entries, N = 0 .. 100 000. The library is a stub that takes the emitted
records and does nothing (the C side is measured by the recorder's own benches).

  python3 bench/bench_torch_drain.py [FILE.py ...]

Each argument is a memrec_torch.py to time (default: recorder/python/memrec_torch.py); give the
old one and the new one to compare them in one run (git show REV:recorder/python/memrec_torch.py
> /tmp/old_memrec_torch.py). Prints, per file and N, the median of 5 drains in ms.
"""
import importlib.util
import os
import statistics
import sys
import time

RING = 262144
NEW = (0, 100, 1000, 10000, 100000)
HERE = os.path.dirname(os.path.abspath(__file__))


class StubLib:
    """What drain_snapshot calls of libmemrec.so, doing nothing."""

    def memrec_torch_emit(self, address, count):
        return count

    def memrec_torch_allocator_settings(self, text):
        return 1

    def memrec_torch_device(self, *args):
        pass

    def memrec_torch_define_frames(self, *args):
        pass

    def memrec_torch_define_stacks(self, *args):
        pass

    def memrec_torch_warn(self, *args):
        pass


class StubTorch:
    class cuda:
        @staticmethod
        def get_device_properties(device):
            raise RuntimeError("no device")


def history(count, start_us):
    """A steady loop's history: 64 blocks at the same addresses, alloc and free in turn,
    one entry per us."""
    frames = [[{"filename": "train.py", "line": 10 + (k + d) % 7, "name": "f%d" % d}
               for d in range(8)] for k in range(16)]
    out = []
    for i in range(count):
        block = i // 2 % 64
        out.append({"action": "alloc" if i % 2 == 0 else "free_completed",
                    "addr": 0x7f0000000000 + block * 0x100000, "size": 4096 * (block + 1),
                    "stream": 0, "time_us": start_us + i, "frames": frames[block % 16]})
    return out


def load(path, tag):
    spec = importlib.util.spec_from_file_location("memrec_torch_" + tag, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench(module):
    results = {}
    everything = history(RING + max(NEW) * 6, 1_000_000_000)
    for n in NEW:
        times = []
        d = module.Drainer(StubTorch, StubLib())
        d.ring = RING
        d.names = None
        # The ring as a first drain found it, then five drains that find n new entries each.
        at = RING
        d.drain_snapshot({"device_traces": [everything[at - RING:at]]})
        for _ in range(5):
            at += n
            snapshot = {"device_traces": [everything[at - RING:at]]}
            began = time.perf_counter()
            d.drain_snapshot(snapshot)
            times.append(time.perf_counter() - began)
        results[n] = statistics.median(times) * 1e3
    return results


def main():
    paths = sys.argv[1:] or [os.path.join(HERE, "..", "recorder", "python", "memrec_torch.py")]
    print("ring %d entries; ms per drain (median of 5) by new entries found" % RING)
    print("%-40s %s" % ("memrec_torch.py", " ".join("%9d" % n for n in NEW)))
    for i, path in enumerate(paths):
        results = bench(load(path, str(i)))
        print("%-40s %s" % (os.path.relpath(path)[-40:],
                            " ".join("%9.2f" % results[n] for n in NEW)))


if __name__ == "__main__":
    main()
