"""test_rec_python.py — Python frames in the recorder's stacks (issue 6).

A child python3 loads the built libmemrec.so with ctypes.PyDLL (MEMREC_OUTPUT
set, so the library arms a session and writes the trace at exit), calls
memrec_python_attach(), then calls memrec_region_alloc through ctypes.CDLL
(which releases the GIL, as PyTorch does) from Python functions at known
lines: a() -> b() -> c() on the main thread and on a threading.Thread, and
c() reached through a native call (map). memanalyze reads the stacks back:

  mixed (default)  c, b, a, <module> with this script's file and the exact
                   call lines, innermost first, in place of the eval loop's
                   native frame, native frames on both sides; the thread's
                   frames down to threading's; native frames between c and
                   the caller that reached it through map(); one stack id for
                   one repeated Python stack;
  python           Python frames only, nothing native;
  native           no Python frame at all;
  which hook       CPython 3.12+ takes the sys.monitoring path (memrec holds
                   tool id 3 and no profile hook is set, cProfile still runs);
                   before 3.12 the profile hook (sys.setprofile); with ids 3
                   and 4 taken, 3.12+ says so once and uses the profile hook;
  extra            a generator resumed by next(), coroutines resumed by
                   send() and suspended in between, exceptions unwinding
                   through frames (caught, and through a finally), a thread
                   started before attaching (its frames from 3.12 on), and a
                   detach/attach cycle before recording starts and one
                   while recording: each stack holds exactly the frames
                   running, with their lines;
  launcher         (when memrec is given) the symbolized stack holds no
                   _PyEval_EvalFrameDefault frame on the main thread, and
                   PyEval_EvalCode lies outside <module>; and a script that
                   only loads the library (as CUDA or memrec.h's snippet
                   would) and never attaches has its Python frames too: the
                   library asks the interpreter to attach when it arms.

Usage: test_rec_python.py LIBMEMREC MEMANALYZE [MEMREC] (exit 77: skip).
"""
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from rec_testlib import SKIP, Checks, clean_env, sql_lines  # noqa: E402

HOOK_PATH = """

def hook_path():
    '''How memrec's hook is attached: monitoring:ID, setprofile or none.'''
    mon = getattr(sys, "monitoring", None)
    tools = [t for t in range(6) if mon is not None and mon.get_tool(t) == "memrec"]
    thread_hook = getattr(threading, "getprofile", lambda: None)() is not None
    hooks = "+profile" if sys.getprofile() is not None else ""
    hooks += "+threading" if thread_hook else ""
    if tools:
        return "monitoring:%d%s" % (tools[0], hooks)
    return "setprofile" if hooks else "none"
"""


CHILD = """\
import ctypes, sys, threading
lib = ctypes.PyDLL(sys.argv[1])
lib.memrec_python_attach.restype = ctypes.c_int
print(lib.memrec_python_attach(), lib.memrec_python_attach())
""" + HOOK_PATH + """
print(hook_path())
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def c(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE c


def b(addr):
    c(addr)  # LINE b


def a(addr):
    b(addr)  # LINE a


def through_native(addr):
    list(map(c, [addr]))  # LINE through_native


a(0x1000)  # LINE module
worker = threading.Thread(target=a, args=(0x2000,))
worker.start()
worker.join()
through_native(0x3000)  # LINE module_native
for addr in (0x4000, 0x5000):
    a(addr)  # LINE module_loop
"""


AUTO = """\
import ctypes, os
api = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def inner(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE inner


def outer(addr):
    inner(addr)  # LINE outer


outer(0x1000)  # LINE top
"""


PIN = """\
import ctypes, gc, sys, weakref
lib = ctypes.PyDLL(sys.argv[1])
print("attached" if lib.memrec_python_attach() == 0 else "not attached")
class Activations:
    pass
ref = None
def step():
    global ref
    kept = Activations()
    ref = weakref.ref(kept)
    sys.setprofile(None)  # another profiler takes over
step()
gc.collect()
print("pinned" if ref() is not None else "released")
"""


RESTORE = """\
import ctypes, sys
lib = ctypes.PyDLL(sys.argv[1])
print("attached" if lib.memrec_python_attach() == 0 else "not attached")
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def inner(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE inner


def outer(addr):
    inner(addr)  # LINE outer


def profiled():
    saved = sys.getprofile()  # what cProfile, coverage and IPython do
    sys.setprofile(lambda frame, event, arg: None)
    outer(0x6000)
    sys.setprofile(saved)


profiled()
outer(0x7000)  # LINE top
saved = sys.getprofile()
sys.setprofile(lambda frame, event, arg: None)
sys.setprofile(saved)
del saved  # the old hook object ends when the restored hook replaces it: frames stay
api.memrec_region_alloc(0x8000, 64, 0)  # LINE direct
mon = getattr(sys, "monitoring", None)
print("restored" if sys.getprofile() is not None else
      "monitoring" if mon is not None and "memrec" in [mon.get_tool(t) for t in range(6)] else
      "lost")
"""


EXTRA = """\
import ctypes, os, sys, threading
lib = ctypes.PyDLL(sys.argv[1])
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
""" + HOOK_PATH + """


def alloc(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE alloc


ready, go = threading.Event(), threading.Event()


def early_worker(addr):
    ready.set()
    go.wait()
    alloc(addr)  # LINE early


early = threading.Thread(target=early_worker, args=(0x100,))
early.start()
ready.wait()
# Not recording yet (no MEMREC_OUTPUT): detach really takes the hook off.
print(lib.memrec_python_attach(), hook_path())
print(lib.memrec_python_detach(), hook_path())
print(lib.memrec_python_attach(), hook_path())
os.environ["MEMREC_OUTPUT"] = sys.argv[2]
print(api.InitializeInjection())  # arms the session, as cuInit would
go.set()
early.join()


def gen(addr):
    yield 1
    alloc(addr)  # LINE gen
    yield 2


def drive_gen(addr):
    g = gen(addr)
    next(g)
    next(g)  # LINE drive_gen
    alloc(addr + 1)  # LINE after_gen


class Suspend:
    def __await__(self):
        yield


async def inner_coro(addr):
    await Suspend()
    alloc(addr)  # LINE inner_coro


async def outer_coro(addr):
    await inner_coro(addr)  # LINE outer_coro


def drive_coro(addr):
    c = outer_coro(addr)
    c.send(None)
    try:
        c.send(None)  # LINE drive_coro
    except StopIteration:
        pass
    alloc(addr + 1)  # LINE after_coro


def raiser(depth):
    if depth:
        raiser(depth - 1)
    raise ValueError(depth)


def catcher(addr):
    try:
        raiser(3)
    except ValueError:
        alloc(addr)  # LINE catcher
    alloc(addr + 1)  # LINE after_catch


def in_finally(addr):
    try:
        raiser(2)
    finally:
        alloc(addr)  # LINE in_finally


def unwound(addr):
    try:
        in_finally(addr)  # LINE unwound
    except ValueError:
        pass
    alloc(addr + 1)  # LINE after_unwound


drive_gen(0x200)  # LINE m_gen
drive_coro(0x300)  # LINE m_coro
catcher(0x400)  # LINE m_catch
unwound(0x500)  # LINE m_unwound
alloc(0x600)  # LINE m_last
print(lib.memrec_python_detach(), hook_path())  # while recording (memrec_torch.py's profiler guard)
alloc(0x900)  # native frames only
print(lib.memrec_python_attach(), hook_path())
alloc(0x901)  # LINE reattached
if sys.version_info >= (3, 12):  # cProfile takes PROFILER_ID: memrec must leave it free
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
    alloc(0x700)  # LINE profiled
    profile.disable()
    print("cProfile ran")
"""


TAKEN = """\
import ctypes, sys, threading
sys.monitoring.use_tool_id(3, "other3")
sys.monitoring.use_tool_id(4, "other4")
lib = ctypes.PyDLL(sys.argv[1])
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
""" + HOOK_PATH + """
print(lib.memrec_python_attach(), hook_path())


def inner(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE inner


def outer(addr):
    inner(addr)  # LINE outer


outer(0x800)  # LINE top
"""


def lines_of(source):
    """'# LINE name' comments -> {name: line number}."""
    found = {}
    for number, text in enumerate(source.split("\n"), 1):
        if "# LINE " in text:
            found[text.split("# LINE ")[1].strip()] = number
    return found


def sql(memanalyze, trace, query, env):
    return [row.split(",") for row in sql_lines(memanalyze, trace, query, env) if row]


def stacks_by_addr(memanalyze, trace, env):
    """{addr: (stack_id, [(name, file, line, ip)] innermost first)}; name is ''
    for an unsymbolized native frame."""
    rows = sql(memanalyze, trace,
               "SELECT e.addr, e.stack_id, f.name, f.file, f.line, fr.ip "
               "FROM events e JOIN stack_frames f ON f.stack_id = e.stack_id "
               "LEFT JOIN frames fr ON fr.frame_id = f.frame_id "
               "WHERE e.op = 'alloc' ORDER BY e.event_id, f.depth", env)
    stacks = {}
    for addr, stack_id, name, file, line, ip in rows:
        stacks.setdefault(int(addr), (stack_id, []))[1].append((name, file, line, ip))
    return stacks


def python_part(frames, script):
    """The script's and threading's frames as (name, line), innermost first,
    with the index each had in the whole stack."""
    return [(i, f[0], int(f[2])) for i, f in enumerate(frames)
            if f[1] == script or f[1].endswith("threading.py")]


def main():
    if len(sys.argv) < 3:
        print("usage: test_rec_python.py LIBMEMREC MEMANALYZE [MEMREC]", file=sys.stderr)
        return SKIP
    library, memanalyze = sys.argv[1:3]
    launcher = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else None
    if not os.path.exists(library) or not os.path.exists(memanalyze):
        print("SKIP: libmemrec.so or memanalyze not built", file=sys.stderr)
        return SKIP
    try:
        import ctypes  # noqa: F401  (the child needs it)
    except ImportError:
        print("SKIP: no ctypes", file=sys.stderr)
        return SKIP
    if sys.implementation.name != "cpython" or sys.version_info < (3, 9):
        print("SKIP: needs CPython >= 3.9", file=sys.stderr)
        return SKIP
    check = Checks("test_rec_python")

    line = lines_of(CHILD)
    version = sys.version_info[:2]
    # Which C eval call runs which frame is known for these: from 3.11 a
    # Python-to-Python call does not recurse in C; from 3.12 neither does
    # Thread.run's self._target(*args) (CALL_FUNCTION_EX: memrec's symbolized
    # stack of the thread shows no _PyEval_Vector between a and Thread.run).
    exact_eval = version in ((3, 11), (3, 12), (3, 13))
    monitoring = version >= (3, 12)  # the sys.monitoring path, tool id 3
    expected_path = "monitoring:3" if monitoring else "setprofile"
    qual = (lambda name: name) if version >= (3, 11) else (lambda name: name.split(".")[-1])
    env = clean_env()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "child.py")
        with open(script, "w") as f:
            f.write(CHILD)
        analyze_env = dict(env, GMT_CACHE_DIR=os.path.join(tmp, "cache"))

        def record(mode):
            trace = os.path.join(tmp, mode + ".zst")
            run_env = dict(env, MEMREC_OUTPUT=trace, MEMREC_NO_CUPTI="1", MEMREC_QUIET="1",
                           MEMREC_STACKS=mode)
            out = subprocess.run([sys.executable, script, library], env=run_env,
                                 capture_output=True, text=True, timeout=60)
            check(out.returncode == 0 and out.stdout.split("\n")[:1] == ["0 0"],
                  "%s: attach twice returns 0 0: %r %r" % (mode, out.stdout, out.stderr))
            check(out.stdout.split("\n")[1:2] == [expected_path if mode != "native" else "none"],
                  "%s: attached through %s: %r" % (mode, expected_path, out.stdout))
            check(os.path.exists(trace), "%s: the trace was written" % mode)
            return stacks_by_addr(memanalyze, trace, analyze_env) if os.path.exists(trace) else {}

        # mixed: Python frames in place of the eval loop, native frames around.
        stacks = record("mixed")
        check(sorted(stacks) == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000],
              "mixed: five allocs: %r" % sorted(stacks))
        main_expected = [("c", line["c"]), ("b", line["b"]), ("a", line["a"]),
                         ("<module>", line["module"])]
        if 0x1000 in stacks:
            frames = stacks[0x1000][1]
            py = python_part(frames, script)
            check([(n, l) for _, n, l in py] == main_expected, "mixed main: %r" % py)
            if py:
                first, last = py[0][0], py[-1][0]
                check(first > 0 and all(not f[0] and f[3] for f in frames[:first]),
                      "mixed main: native frames inside c (ctypes): %r" % frames[:first])
                check(last + 1 < len(frames) and frames[last + 1][3],
                      "mixed main: native frames outside <module>: %r" % frames[last:])
                if exact_eval:
                    check(last - first == 3, "mixed main: one C eval call runs c..<module>")
        if 0x2000 in stacks:
            py = python_part(stacks[0x2000][1], script)
            names = [n for _, n, _ in py]
            check(names == ["c", "b", "a"] + [qual(n) for n in (
                "Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap")],
                  "mixed thread: %r" % py)
            check([(n, l) for _, n, l in py[:3]] == main_expected[:3],
                  "mixed thread lines: %r" % py)
            if exact_eval and len(py) == 6:
                gaps = [py[k + 1][0] - py[k][0] for k in range(5)]
                if version == (3, 11):
                    check(gaps == [1, 1, 2, 1, 1] or gaps == [1, 1, 3, 1, 1],
                          "mixed thread: run's C eval call calls a's: %r" % py)
                else:
                    check(gaps == [1, 1, 1, 1, 1],
                          "mixed thread: one C eval call runs c..Thread._bootstrap: %r" % py)
        if 0x3000 in stacks:
            frames = stacks[0x3000][1]
            py = python_part(frames, script)
            check([(n, l) for _, n, l in py] ==
                  [("c", line["c"]), ("through_native", line["through_native"]),
                   ("<module>", line["module_native"])], "mixed through map(): %r" % py)
            if len(py) == 3:
                between = frames[py[0][0] + 1:py[1][0]]
                check(len(between) >= 2 and all(not f[0] and f[3] for f in between),
                      "mixed through map(): native frames between c and its caller: %r" %
                      between)
        if 0x4000 in stacks and 0x5000 in stacks:
            check(stacks[0x4000][0] == stacks[0x5000][0],
                  "mixed: a repeated stack is one id: %r %r" % (stacks[0x4000], stacks[0x5000]))
            py = python_part(stacks[0x4000][1], script)
            check([(n, l) for _, n, l in py] == main_expected[:3] +
                  [("<module>", line["module_loop"])], "mixed loop: %r" % py)

        # python: nothing but Python frames.
        stacks = record("python")
        if 0x1000 in stacks:
            frames = stacks[0x1000][1]
            check([(f[0], int(f[2])) for f in frames] == main_expected and
                  all(f[1] == script and not f[3] for f in frames), "python main: %r" % frames)
        else:
            check(False, "python: the alloc was recorded")
        if 0x3000 in stacks:
            check([f[0] for f in stacks[0x3000][1]] == ["c", "through_native", "<module>"],
                  "python through map(): %r" % stacks[0x3000][1])

        # native: no Python frame.
        stacks = record("native")
        check(len(stacks) == 5 and
              all(f[3] and not f[0] for _, frames in stacks.values() for f in frames),
              "native: only native frames: %r" % (stacks.get(0x1000),))

        # When something else takes over the profile hook (sys.setprofile,
        # cProfile, torch.profiler), the shadow stack must give its frames
        # back: their locals (CUDA tensors) would otherwise live for ever.
        pin = os.path.join(tmp, "pin.py")
        with open(pin, "w") as f:
            f.write(PIN)
        out = subprocess.run([sys.executable, pin, library],
                             env=dict(env, MEMREC_OUTPUT=os.path.join(tmp, "pin.zst"),
                                      MEMREC_NO_CUPTI="1", MEMREC_QUIET="1"),
                             capture_output=True, text=True, timeout=60)
        check(out.stdout.split() == ["attached", "released"],
              "a replaced hook keeps frames alive: %r %r" % (out.stdout, out.stderr))
        check(out.returncode == 0, "pin.py failed: %r" % out.stderr)

        # Code that saves the profile hook and restores it later hands our
        # hook object back to sys.setprofile: Python then calls it as a
        # profile function, and it must put the hook back (it raised
        # TypeError at every call when it was a capsule).
        restore = os.path.join(tmp, "restore.py")
        with open(restore, "w") as f:
            f.write(RESTORE)
        trace = os.path.join(tmp, "restore.zst")
        out = subprocess.run([sys.executable, restore, library],
                             env=dict(env, MEMREC_OUTPUT=trace, MEMREC_NO_CUPTI="1",
                                      MEMREC_QUIET="1", MEMREC_STACKS="python"),
                             capture_output=True, text=True, timeout=60)
        check(out.returncode == 0 and
              out.stdout.split() == ["attached", "monitoring" if monitoring else "restored"],
              "a saved and restored hook: %r %r" % (out.stdout, out.stderr))
        stacks = stacks_by_addr(memanalyze, trace, analyze_env) if out.returncode == 0 else {}
        restore_line = lines_of(RESTORE)
        check([(f[0], int(f[2])) for f in stacks.get(0x7000, (0, []))[1]] ==
              [("inner", restore_line["inner"]), ("outer", restore_line["outer"]),
               ("<module>", restore_line["top"])],
              "a restored hook records Python frames again: %r" % (stacks.get(0x7000),))
        check([(f[0], int(f[2])) for f in stacks.get(0x8000, (0, []))[1]] ==
              [("<module>", restore_line["direct"])],
              "the saved hook object's end keeps the frames: %r" % (stacks.get(0x8000),))

        # Generators, coroutines, exceptions, a thread started before
        # attaching, and a detach/attach cycle (before the session starts, so
        # detach really takes the hook off).
        extra = os.path.join(tmp, "extra.py")
        with open(extra, "w") as f:
            f.write(EXTRA)
        el = lines_of(EXTRA)
        alloc = ("alloc", el["alloc"])
        want = {
            0x200: [alloc, ("gen", el["gen"]), ("drive_gen", el["drive_gen"]),
                    ("<module>", el["m_gen"])],
            0x201: [alloc, ("drive_gen", el["after_gen"]), ("<module>", el["m_gen"])],
            0x300: [alloc, ("inner_coro", el["inner_coro"]), ("outer_coro", el["outer_coro"]),
                    ("drive_coro", el["drive_coro"]), ("<module>", el["m_coro"])],
            0x301: [alloc, ("drive_coro", el["after_coro"]), ("<module>", el["m_coro"])],
            0x400: [alloc, ("catcher", el["catcher"]), ("<module>", el["m_catch"])],
            0x401: [alloc, ("catcher", el["after_catch"]), ("<module>", el["m_catch"])],
            0x500: [alloc, ("in_finally", el["in_finally"]), ("unwound", el["unwound"]),
                    ("<module>", el["m_unwound"])],
            0x501: [alloc, ("unwound", el["after_unwound"]), ("<module>", el["m_unwound"])],
            0x600: [alloc, ("<module>", el["m_last"])],
            0x900: [],
            0x901: [alloc, ("<module>", el["reattached"])],
        }
        threading_tail = [(qual(n), None) for n in (
            "Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap")]
        if monitoring:
            want[0x700] = [alloc, ("<module>", el["profiled"])]
            want[0x100] = [alloc, ("early_worker", el["early"])] + threading_tail
        else:
            want[0x100] = []  # before 3.12 a thread started earlier has no Python frames

        def named(frames, script):
            return [(f[0], int(f[2]) if f[1] == script else None) for f in frames
                    if f[1] == script or f[1].endswith("threading.py")]

        for mode in ("python", "mixed"):
            trace = os.path.join(tmp, "extra-%s.zst" % mode)
            out = subprocess.run([sys.executable, extra, library, trace],
                                 env=dict(env, MEMREC_NO_CUPTI="1", MEMREC_QUIET="1",
                                          MEMREC_STACKS=mode),
                                 capture_output=True, text=True, timeout=60)
            lines = ["0 " + expected_path, "0 none", "0 " + expected_path, "1",
                     "0 none", "0 " + expected_path]
            check(out.returncode == 0 and out.stdout.split("\n")[:6] == lines,
                  "extra %s: attach, detach, attach, arm, detach, attach: %r %r"
                  % (mode, out.stdout, out.stderr))
            check(not monitoring or "cProfile ran" in out.stdout,
                  "extra %s: cProfile runs beside memrec: %r" % (mode, out.stderr))
            stacks = stacks_by_addr(memanalyze, trace, analyze_env) \
                if os.path.exists(trace) else {}
            for addr in sorted(want):
                frames = stacks.get(addr, (0, []))[1]
                check(named(frames, extra) == want[addr],
                      "extra %s 0x%x: %r, not %r" % (mode, addr, named(frames, extra), want[addr]))
                if mode == "python" and addr != 0x900:  # detached: native frames
                    check(all(not f[3] for f in frames),
                          "extra python 0x%x: Python frames only: %r" % (addr, frames))

        # 3.12+ with both tool ids taken: one warning, the profile hook instead.
        if monitoring:
            taken = os.path.join(tmp, "taken.py")
            with open(taken, "w") as f:
                f.write(TAKEN)
            trace = os.path.join(tmp, "taken.zst")
            out = subprocess.run([sys.executable, taken, library],
                                 env=dict(env, MEMREC_OUTPUT=trace, MEMREC_NO_CUPTI="1",
                                          MEMREC_STACKS="python"),
                                 capture_output=True, text=True, timeout=60)
            warned = [w for w in out.stderr.splitlines() if "tool ids 3 and 4 are taken" in w]
            check(out.returncode == 0 and out.stdout.split("\n")[:1] == ["0 setprofile"] and
                  len(warned) == 1 and '"other3" and "other4"' in warned[0],
                  "tool ids taken: %r %r" % (out.stdout, out.stderr))
            stacks = stacks_by_addr(memanalyze, trace, analyze_env) \
                if os.path.exists(trace) else {}
            tl = lines_of(TAKEN)
            check([(f[0], int(f[2])) for f in stacks.get(0x800, (0, []))[1]] ==
                  [("inner", tl["inner"]), ("outer", tl["outer"]), ("<module>", tl["top"])],
                  "tool ids taken: frames from the profile hook: %r" % (stacks.get(0x800),))

        if launcher and os.path.exists(launcher):
            trace = os.path.join(tmp, "launched.zst")
            out = subprocess.run([launcher, "-o", trace, "--no-cupti", "--", sys.executable,
                                  script, library], env=env, capture_output=True, text=True,
                                 timeout=120)
            check(out.returncode == 0, "launcher: %r" % out.stderr)
            stacks = stacks_by_addr(memanalyze, trace, analyze_env) if out.returncode == 0 else {}
            frames = stacks.get(0x1000, (0, []))[1]
            names = [f[0] for f in frames]
            if "PyEval_EvalCode" in names:  # a Python with symbols
                check("_PyEval_EvalFrameDefault" not in names,
                      "launcher: the eval loop's frame was replaced: %r" % names)
                check("<module>" in names and
                      names.index("<module>") < names.index("PyEval_EvalCode"),
                      "launcher: PyEval_EvalCode outside <module>: %r" % names)
            else:
                print("note: python3 has no symbols; launcher names not checked")

            auto = os.path.join(tmp, "auto.py")
            with open(auto, "w") as f:
                f.write(AUTO)
            auto_line = lines_of(AUTO)
            trace = os.path.join(tmp, "auto.zst")
            out = subprocess.run([launcher, "-o", trace, "--no-cupti", "--", sys.executable, auto],
                                 env=env, capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "launcher, no attach: %r" % out.stderr)
            stacks = stacks_by_addr(memanalyze, trace, analyze_env) if out.returncode == 0 else {}
            py = python_part(stacks.get(0x1000, (0, []))[1], auto)
            check([(n, l) for _, n, l in py] == [("inner", auto_line["inner"]),
                                                 ("outer", auto_line["outer"]),
                                                 ("<module>", auto_line["top"])],
                  "launcher, no attach: the library attached by itself: %r" % py)

    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
