"""bench_rec_python.py — what Python frames cost (issue 6).

  per Python call   a loop of 1 M calls of an empty function, with and
                    without memrec_python_attach() (the profile hook pushes
                    and pops the shadow stack);
  per event         memrec_region_alloc through ctypes at 20 Python frames
                    deep, the same address each time (no table growth), in
                    each MEMREC_STACKS mode, minus the same call with
                    recording off (ctypes' own cost).

Each figure is the best of 5 runs in a fresh child Python.
Usage: bench_rec_python.py LIBMEMREC
"""
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, sys, time
lib = ctypes.PyDLL(sys.argv[1])
what, attach = sys.argv[2], sys.argv[3] == "1"
if attach:
    assert lib.memrec_python_attach() == 0
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

def empty():
    pass

def calls(n):
    for _ in range(n):
        empty()

def events(n):
    alloc = api.memrec_region_alloc
    for _ in range(n):
        alloc(0x1000, 64, 0)

def deep(k, fn, n):
    return deep(k - 1, fn, n) if k else fn(n)

n = 1000000 if what == "calls" else 100000
start = time.perf_counter()
deep(20, calls if what == "calls" else events, n)
print((time.perf_counter() - start) / n * 1e9)
"""


def best(library, what, attach, env, runs=5):
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", CHILD, library, what, attach], env=env,
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip())
        results.append(float(out.stdout))
    return min(results)


def main():
    if len(sys.argv) != 2:
        print("usage: bench_rec_python.py LIBMEMREC", file=sys.stderr)
        return 2
    library = sys.argv[1]
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMREC_")}
    print("python %s" % sys.version.split()[0])
    with tempfile.TemporaryDirectory() as tmp:
        rec = dict(base, MEMREC_OUTPUT=os.path.join(tmp, "b-%p.zst"), MEMREC_NO_CUPTI="1",
                   MEMREC_QUIET="1", MEMREC_BUFFER_RECORDS="1000000")
        plain = best(library, "calls", "0", rec)
        hooked = best(library, "calls", "1", rec)
        print("per Python call: %.1f ns without the hook, %.1f ns with it: +%.1f ns"
              % (plain, hooked, hooked - plain))
        off = best(library, "events", "0", base)
        print("ctypes call with recording off: %.0f ns" % off)
        for mode, attach in (("native", "0"), ("mixed", "1"), ("python", "1")):
            t = best(library, "events", attach, dict(rec, MEMREC_STACKS=mode))
            print("per event, %-6s stacks (20 Python frames deep): %.0f ns" % (mode, t - off))
    return 0


if __name__ == "__main__":
    sys.exit(main())
