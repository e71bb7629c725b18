"""bench_python_floor.py — the least a sys.monitoring hook costs per Python call
(issue 26), CPython 3.12+, with python_floor.c's C callbacks on a free tool id.

  PY_START+PY_RETURN, empty       what any hook that keeps a shadow stack from
                                  events pays before doing anything
  the same, PyEval_GetFrame()     ... when it takes the frame object each time
  PY_START, empty                 one event per call
  PY_START, DISABLE               memrec's callback: the event goes off after a
                                  code object's first call

Also checks that in PY_START and PY_RESUME the current frame is the callee's.
The loop of bench_python_hook.py (TIMED_LOOP: CALLS calls of an empty function, 20
frames deep, ROUNDS rounds, median), every variant in one process, the
figure the difference to the same loop without a tool, median of CHILDREN
processes.

Usage: bench_python_floor.py DIR_WITH_python_floor_SO [--children 5]
                             [--rounds 7] [--calls 1000000]
"""
import argparse
import statistics
import subprocess
import sys

from bench_python_hook import TIMED_LOOP  # the same loop, so the figures compare

CHILD = r"""
import statistics, sys, time
sys.path.insert(0, sys.argv[1])
import python_floor as floor
rounds, calls = int(sys.argv[2]), int(sys.argv[3])
M, E = sys.monitoring, sys.monitoring.events

def empty():
    pass

WORKLOAD = empty
""" + TIMED_LOOP + r"""

tool = next(t for t in (3, 4, 5) if M.get_tool(t) is None)
M.use_tool_id(tool, "floor")
deep(20, 1000)
base = timed()
out = []
for name, events in (("empty", E.PY_START | E.PY_RETURN), ("getframe", E.PY_START | E.PY_RETURN),
                     ("empty", E.PY_START), ("disable", E.PY_START)):
    callback = getattr(floor, name)
    M.register_callback(tool, E.PY_START, callback)
    M.register_callback(tool, E.PY_RETURN, callback if events & E.PY_RETURN else None)
    M.set_events(tool, events)
    out.append(timed() - base)
    M.set_events(tool, 0)
    M.restart_events()

def gen():
    yield 1
    yield 2

M.register_callback(tool, E.PY_START, floor.checks)
M.register_callback(tool, E.PY_RESUME, floor.checks)
M.set_events(tool, E.PY_START | E.PY_RESUME)
for _ in gen():
    empty()
M.set_events(tool, 0)
same, different = floor.checks()
print(base, *out, same, different)
"""

VARIANTS = ("PY_START+PY_RETURN, empty", "PY_START+PY_RETURN, PyEval_GetFrame()",
            "PY_START, empty", "PY_START, returns DISABLE")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("module_dir")
    parser.add_argument("--children", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=1000000)
    args = parser.parse_args()
    if sys.version_info < (3, 12):
        print("python %s: no sys.monitoring" % sys.version.split()[0])
        return 0
    rows = []
    for _ in range(args.children):
        out = subprocess.run([sys.executable, "-c", CHILD, args.module_dir, str(args.rounds),
                              str(args.calls)], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip())
        rows.append([float(x) for x in out.stdout.split()])
    version = sys.version.split()[0]
    print("python %-7s floor: %.1f ns/call without a tool" % (
        version, statistics.median(r[0] for r in rows)))
    for i, name in enumerate(VARIANTS, 1):
        print("python %-7s floor: %-38s %+6.1f ns/call  [per child: %s]" % (
            version, name, statistics.median(r[i] for r in rows),
            " ".join("%+.0f" % r[i] for r in rows)))
    same, different = rows[0][-2], rows[0][-1]
    print("python %-7s floor: in PY_START/PY_RESUME PyEval_GetFrame() is the callee's frame: "
          "%d of %d" % (version, same, same + different))
    return 0


if __name__ == "__main__":
    sys.exit(main())
