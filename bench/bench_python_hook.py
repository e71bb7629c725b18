"""bench_python_hook.py — what memrec's Python-frame hook costs per Python call (issue 26).

Runs with the interpreter that runs it (bench/run_python_hook.sh starts it
once per installed CPython). Each child process loads libmemrec.so through
ctypes.PyDLL, as a program does, with MEMREC_OUTPUT set (the library arms a
session, and then attaches by itself at the next Python instruction) and
MEMREC_STACKS=mode; it times ROUNDS rounds of CALLS calls of a trivial Python
function (a tight loop, 20 Python frames deep) before it loads the library,
then loads it, calls memrec_python_attach() and times ROUNDS more. The
function is empty (workload "empty"), or makes one call of a builtin
("builtin": a profile hook is also called for C functions). A child prints
the median of each half; the ratio of the two comes from one process. The
figure kept is the median over CHILDREN children.

Given several libraries (a build before a change and one after), the
children take them in turn, so the figures of each come from the same
minutes of a shared machine. Also printed: which path attach took
(sys.monitoring with memrec's tool id, or the profile hook of
sys.setprofile) so a figure is never attributed to the wrong one, and each
child's difference, to show the noise.

Usage: bench_python_hook.py LIBMEMREC [LIBMEMREC...] [--modes mixed,python]
                            [--workloads empty,builtin] [--children 5]
                            [--rounds 7] [--calls 1000000]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

# The timed loop, shared with bench_python_floor.py so both measure the same thing: `calls`
# calls of WORKLOAD, 20 Python frames deep, `rounds` rounds, ns per call (median). The child
# defines WORKLOAD, rounds and calls first.
TIMED_LOOP = r"""
def loop(n):
    f = WORKLOAD
    for _ in range(n):
        f()

def deep(k, n):
    return deep(k - 1, n) if k else loop(n)

def timed():
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        deep(20, calls)
        times.append((time.perf_counter() - start) / calls * 1e9)
    return statistics.median(times)
"""

CHILD = r"""
import ctypes, statistics, sys, time
rounds, calls, workload = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def empty():
    pass

def builtin(t=()):
    len(t)

WORKLOAD = empty if workload == "empty" else builtin
""" + TIMED_LOOP + r"""

def path():
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        for tool in range(6):
            if mon.get_tool(tool) == "memrec":
                return "sys.monitoring tool %d" % tool
    return "sys.setprofile" if sys.getprofile() is not None else "none"

deep(20, 1000)  # warm up
plain = timed()
lib = ctypes.PyDLL(sys.argv[1])  # arms a session: the library attaches by itself soon
rc = lib.memrec_python_attach()
hooked = timed()
print(plain, hooked, rc, path().replace(" ", "_"))
"""


def child(library, mode, workload, rounds, calls, env):
    out = subprocess.run([sys.executable, "-c", CHILD, library, str(rounds), str(calls), workload],
                         env=dict(env, MEMREC_STACKS=mode), capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError("child failed: %s" % out.stderr.strip())
    plain, hooked, rc, path = out.stdout.split()
    if rc != "0":
        raise RuntimeError("memrec_python_attach() returned %s" % rc)
    return float(plain), float(hooked), path.replace("_", " ")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("libraries", nargs="+")
    parser.add_argument("--modes", default="mixed,python")
    parser.add_argument("--workloads", default="empty")
    parser.add_argument("--children", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=1000000)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMREC_")}
    version = sys.version.split()[0]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(base, MEMREC_OUTPUT=os.path.join(tmp, "b-%p.zst"), MEMREC_NO_CUPTI="1",
                   MEMREC_QUIET="1")
        for workload, mode in [(w, m) for w in args.workloads.split(",")
                               for m in args.modes.split(",")]:
            runs = {lib: [] for lib in args.libraries}
            for _ in range(args.children):
                for lib in args.libraries:
                    runs[lib].append(child(lib, mode, workload, args.rounds, args.calls, env))
            for lib in args.libraries:
                plains = [r[0] for r in runs[lib]]
                hookeds = [r[1] for r in runs[lib]]
                deltas = [r[1] - r[0] for r in runs[lib]]
                paths = sorted(set(r[2] for r in runs[lib]))
                plain, hooked = statistics.median(plains), statistics.median(hookeds)
                delta = statistics.median(deltas)
                print("python %-7s %-7s %-6s %6.1f ns/call plain, %6.1f ns hooked: %+6.1f ns "
                      "(x%.2f)  [%s; %s; per child: %s]"
                      % (version, workload, mode, plain, hooked, delta, hooked / plain,
                         ", ".join(paths), lib, " ".join("%+.0f" % d for d in deltas)))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
