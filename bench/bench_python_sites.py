"""bench_python_sites.py — what one recorded event costs with many distinct call sites.

The per-event figure of bench_rec_python.py records one call site again and
again; a training step reaches hundreds. Here each child process builds LEAVES
small leaf functions (each a code object of its own, calling
memrec_region_alloc then memrec_region_free through ctypes: two events, two
call sites) under a stable stack DEPTH Python frames deep of long functions
(FILL statements each, so their line tables are long), calls every leaf once
per round, and times ROUNDS rounds after one warm-up round (ns per recorded
event, the median of the rounds). The stack's frames are read at every event:
a per-thread line cache (rec_python_monitor.c) that lets two frames of one
stack, or the leaves, evict each other pays a scan of a code object's line
table (PyCode_Addr2Line) per miss.

Paths: with the library's own choice ("auto": sys.monitoring on 3.12+, the
profile hook before) and, on 3.12+, "fallback" (tool ids 3 and 4 taken first,
so the profile hook is used there too). Each child loads libmemrec.so through
ctypes.PyDLL with MEMREC_OUTPUT set and calls memrec_python_attach(); "off" is
the same loop with the library loaded but recording nothing (ctypes' own
cost). The figure kept is the median over CHILDREN children; given several
libraries (a build before a change and one after) the children take them in
turn, so both come from the same minutes of a shared machine.

Not covered: the first call of each new code object (memrec enters it in its
code table: about +500 ns on 3.11-3.13, bench/README.md), which the warm-up
round pays.

Usage: bench_python_sites.py LIBMEMREC [LIBMEMREC...] [--modes mixed,python]
                             [--leaves 600] [--fill 400] [--depth 20]
                             [--children 5] [--rounds 7]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, statistics, sys, time
library, path, leaves, fill, depth, rounds = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
if path == "fallback":
    sys.monitoring.use_tool_id(3, "bench3")
    sys.monitoring.use_tool_id(4, "bench4")
lib = ctypes.PyDLL(library)
api = ctypes.CDLL(library)
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
api.memrec_region_free.argtypes = [ctypes.c_void_p]
src = []
for k in range(leaves):
    src += ["def leaf%d(a):" % k, "    al(a, 64, 0)", "    fr(a)"]
src += ["LEAVES = [%s]" % ", ".join("leaf%d" % k for k in range(leaves))]
src += ["def f0(a):"] + ["    x = %d" % i for i in range(fill)]
src += ["    for i, g in enumerate(LEAVES):", "        g(a + i)"]
for d in range(1, depth):
    src += ["def f%d(a):" % d] + ["    x = %d" % i for i in range(fill)] + ["    f%d(a)" % (d - 1)]
ns = {"al": api.memrec_region_alloc, "fr": api.memrec_region_free}
exec(compile("\n".join(src), "sites.py", "exec"), ns)
top = ns["f%d" % (depth - 1)]
rc = lib.memrec_python_attach() if path != "off" else 0
mon = getattr(sys, "monitoring", None)
used = "sys.monitoring" if mon and "memrec" in [mon.get_tool(t) for t in range(6)] else \
    "profile_hook" if sys.getprofile() is not None else "none"
top(1 << 20)  # warm-up: every code object's first call
times = []
for r in range(rounds):
    start = time.perf_counter()
    top((r + 2) << 20)
    times.append((time.perf_counter() - start) / (2 * leaves) * 1e9)
print(statistics.median(times), rc, used)
"""


def child(library, path, mode, args, env):
    run_env = dict(env, MEMREC_STACKS=mode)
    if path == "off":
        run_env.pop("MEMREC_OUTPUT")
    out = subprocess.run([sys.executable, "-c", CHILD, library, path, str(args.leaves),
                          str(args.fill), str(args.depth), str(args.rounds)],
                         env=run_env, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("child failed: %s" % out.stderr.strip())
    ns, rc, used = out.stdout.split()
    if rc != "0":
        raise RuntimeError("memrec_python_attach() returned %s" % rc)
    return float(ns), used.replace("_", " ")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("libraries", nargs="+")
    parser.add_argument("--modes", default="mixed,python")
    parser.add_argument("--leaves", type=int, default=600)
    parser.add_argument("--fill", type=int, default=400)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--children", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMREC_")}
    version = sys.version.split()[0]
    paths = ["auto", "fallback"] if sys.version_info >= (3, 12) else ["auto"]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(base, MEMREC_OUTPUT=os.path.join(tmp, "s-%p.zst"), MEMREC_NO_CUPTI="1",
                   MEMREC_QUIET="1", MEMREC_BUFFER_RECORDS="1000000")
        off = statistics.median(child(args.libraries[0], "off", "native", args, env)[0]
                                for _ in range(args.children))
        print("python %-7s %d leaves, %d frames deep, %d statements per frame: %.0f ns per "
              "event with recording off (ctypes)" % (version, args.leaves, args.depth + 2,
                                                     args.fill, off))
        for mode in args.modes.split(","):
            for path in paths:
                runs = {lib: [] for lib in args.libraries}
                for _ in range(args.children):
                    for lib in args.libraries:
                        runs[lib].append(child(lib, path, mode, args, env))
                for lib in args.libraries:
                    times = [r[0] for r in runs[lib]]
                    used = ", ".join(sorted(set(r[1] for r in runs[lib])))
                    print("python %-7s %-6s %-8s %7.0f ns per event (%+.0f over off)  [%s; %s; "
                          "per child: %s]" % (version, mode, path, statistics.median(times),
                                              statistics.median(times) - off, used, lib,
                                              " ".join("%.0f" % t for t in times)))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
