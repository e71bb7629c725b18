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
  __init__         a class instantiated in a loop (specialised on 3.13 into a
                   call that pushes an incomplete shim frame under __init__):
                   each stack holds exactly __init__, its caller, <module> —
                   nothing else, whatever the file; attaching inside such an
                   __init__ takes the usual path without a warning, and a
                   thread held inside one at attach shows no made-up frame;
  resumed          a generator and a coroutine started before attach, and a
                   generator started while detached, are named when they
                   resume after it (PY_RESUME on 3.12+);
  stale            (profile hook: 3.9-3.11, 3.12+ with ids 3 and 4 taken)
                   after a detach, PyTorch's tracer setting and clearing every
                   thread's profile function, and an attach, another thread's
                   stack holds no frame from before it, and that thread's
                   finished frames (their locals) are not kept alive;
  fork             (3.12+) a forked child that does not record keeps memrec's
                   tool: a coverage tool's disabled lines stay disabled there;
                   an explicit detach still gives the id back;
  tool id          (3.12+) a program that frees memrec's tool id and takes it
                   keeps it, its events and callbacks through memrec's detach;
                   one freed and left free: memrec's callback, run once more
                   under it, takes itself off without DISABLE, says so once,
                   and the profile hook names the frames;
  many sites       1500 distinct leaf functions under one stack, twice round:
                   every stack's frames and lines are exact (the line cache's
                   evictions);
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
import sysconfig
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


INIT = """\
import ctypes, os, sys, threading
lib = ctypes.PyDLL(sys.argv[1])
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
""" + HOOK_PATH + """
hold, inside = threading.Event(), threading.Event()


class Buf:
    def __init__(self, addr, wait):  # called with exactly its arguments: specialised
        if wait:
            inside.set()
            hold.wait()
        api.memrec_region_alloc(addr, 64, 0)  # LINE init


class Block:
    def __init__(self, i):
        if i == 5 and sys.argv[3] == "in_init":  # CUDA starts inside a constructor
            print(lib.memrec_python_attach(), hook_path())


def worker():
    for i in range(10):
        Buf(0x100 + i, i == 9)  # LINE worker


def make(n):
    for i in range(n):
        Buf(0x1000 + i, False)  # LINE make


thread = threading.Thread(target=worker)
thread.start()
inside.wait()  # the worker is held inside its tenth __init__
if sys.argv[3] != "in_init":
    print(lib.memrec_python_attach(), hook_path())
blocks = [Block(i) for i in range(8)]
os.environ["MEMREC_OUTPUT"] = sys.argv[2]
print(api.InitializeInjection())
hold.set()
thread.join()
make(40)  # LINE m_make
"""


RESUMED = """\
import asyncio, ctypes, os, sys
lib = ctypes.PyDLL(sys.argv[1])
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def alloc(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE alloc


def batches():  # a data iterator, started before CUDA (memrec) is there
    i = 0
    while True:
        yield i
        alloc(0x100 + i)  # LINE batches
        i += 1


def chunks():  # one started while memrec is detached
    yield 0
    alloc(0x300)  # LINE chunks
    yield 1


async def waiter(future):
    await future  # suspended across the attach
    alloc(0x200)  # LINE waiter


it = batches()
next(it)
loop = asyncio.new_event_loop()
future = loop.create_future()
task = loop.create_task(waiter(future))
loop.run_until_complete(asyncio.sleep(0))  # the task has started and waits
print(lib.memrec_python_attach(), lib.memrec_python_detach())
parts = chunks()
next(parts)
print(lib.memrec_python_attach())
os.environ["MEMREC_OUTPUT"] = sys.argv[2]
print(api.InitializeInjection())
next(it)  # LINE m_batches
next(parts)  # LINE m_chunks
future.set_result(1)
loop.run_until_complete(task)  # LINE m_task
loop.close()
"""


STALE = """\
import ctypes, gc, sys, threading, weakref
if sys.version_info >= (3, 12):  # the profile hook there too
    sys.monitoring.use_tool_id(3, "other3")
    sys.monitoring.use_tool_id(4, "other4")
lib = ctypes.PyDLL(sys.argv[1])
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
P = ctypes.pythonapi
for name in ("PyInterpreterState_Head", "PyInterpreterState_ThreadHead", "PyThreadState_Next",
             "PyThreadState_Swap", "PyThreadState_Get"):
    getattr(P, name).restype = ctypes.c_void_p
P.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
P.PyThreadState_Next.argtypes = [ctypes.c_void_p]
P.PyThreadState_Swap.argtypes = [ctypes.c_void_p]
P.PyEval_SetProfile.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


class Activations:
    pass


refs = []
inside, out_of_it = threading.Event(), threading.Event()
step, again = threading.Lock(), threading.Lock()
step.acquire()
again.acquire()


def alloc(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE alloc


def held():
    kept = Activations()  # a tensor in a frame's locals
    refs.append(weakref.ref(kept))
    inside.set()
    step.acquire()  # a C call: no profile event


def worker():
    held()  # returns while this thread has no hook
    out_of_it.set()
    again.acquire()
    api.memrec_region_alloc(0x100, 64, 0)  # no profile event since the attach
    alloc(0x101)  # LINE worker


print(lib.memrec_python_attach())
thread = threading.Thread(target=worker)
thread.start()
inside.wait()
print(lib.memrec_python_detach())  # memrec_torch.py's guard, before the profiler starts
# PyTorch's tracer: sets, then clears, the profile function of every thread
me = P.PyThreadState_Get()
ts = P.PyInterpreterState_ThreadHead(P.PyInterpreterState_Head())
while ts:
    if ts != me:
        P.PyThreadState_Swap(ts)
        P.PyEval_SetProfile(None, None)
        P.PyThreadState_Swap(me)
    ts = P.PyThreadState_Next(ts)
P.PyEval_SetProfile(None, None)
step.release()
out_of_it.wait()
print(lib.memrec_python_attach())  # the guard, after the profiler
again.release()
thread.join()
gc.collect()
print("pinned" if refs[0]() is not None else "released")
"""


FORK = """\
import ctypes, os, sys
lib = ctypes.PyDLL(sys.argv[1])
M = sys.monitoring
hits = []
M.use_tool_id(M.COVERAGE_ID, "coverage")


def on_line(code, line):
    if code.co_name == "covered":
        hits.append(line)
    return M.DISABLE  # each line once, as coverage.py does


M.register_callback(M.COVERAGE_ID, M.events.LINE, on_line)
M.set_events(M.COVERAGE_ID, M.events.LINE)


def covered():
    x = 1
    return x


covered()
print(lib.memrec_python_attach(), len(hits))
seen = len(hits)
pid = os.fork()
if pid == 0:  # a DataLoader worker: records nothing
    covered()
    print("child", len(hits) - seen, M.get_tool(3), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
covered()
print("parent", len(hits) - seen)
print(lib.memrec_python_detach(), M.get_tool(3))  # an explicit detach gives the id back
"""


TOOL = """\
import ctypes, sys, threading
lib = ctypes.PyDLL(sys.argv[1])
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
""" + HOOK_PATH + """
M = sys.monitoring
starts, calls = [], []


def first():
    pass


def later():
    pass


def inner(addr):
    api.memrec_region_alloc(addr, 64, 0)  # LINE inner


def outer(addr):
    inner(addr)  # LINE outer


print(lib.memrec_python_attach(), hook_path())
try:
    M.use_tool_id(3, "mine")
    print("took 3")
except ValueError:
    print("3 is memrec's")
M.free_tool_id(3)  # the program takes it all the same
if sys.argv[2] == "take":  # at once, with events of its own
    M.use_tool_id(3, "mine")
    M.register_callback(3, M.events.CALL, lambda *args: calls.append(1))
    M.set_events(3, M.events.CALL)
    print(hook_path())
else:  # later: a code object starts first, memrec's callback runs under the free id
    first()
    print(hook_path())
    M.use_tool_id(3, "mine")
    M.register_callback(3, M.events.PY_START, lambda code, offset: starts.append(code.co_name))
    M.set_events(3, M.events.PY_START)
    first()  # memrec's DISABLE under that id would have taken this from "mine"
    print("mine sees first:", "first" in starts)
outer(0x100)  # LINE top
mine = M.events.CALL if sys.argv[2] == "take" else M.events.PY_START
print(lib.memrec_python_detach(), M.get_tool(3), M.get_events(3) == mine)
before = len(calls) + len(starts)
later()
print("mine called:", len(calls) + len(starts) > before)
"""


SITES = """\
import ctypes, sys
lib = ctypes.PyDLL(sys.argv[1])
print(lib.memrec_python_attach())
api = ctypes.CDLL(sys.argv[1])
api.memrec_region_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
LEAVES = int(sys.argv[2])
source = "\\n".join("def leaf%d(addr):\\n    x = %d\\n    alloc(addr, 64, 0)" % (k, k)
                    for k in range(LEAVES))  # leaf k calls on line 3k + 3
leaves = {"alloc": api.memrec_region_alloc}
exec(compile(source, "leaves.py", "exec"), leaves)


def caller(leaf, addr):
    leaf(addr)  # LINE caller


for r in (1, 2):
    for k in range(LEAVES):
        caller(leaves["leaf%d" % k], (r << 20) + k)  # LINE loop
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
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        print("SKIP: a free-threaded CPython (libmemrec.so refuses it)", file=sys.stderr)
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

        def run(name, source, args=(), mode="python", arm_later=False):
            """Runs `source` as NAME.py with this Python, recording (MEMREC_OUTPUT set
            at start, or given as argv[2] when `arm_later`: the script arms). Returns
            the completed process, its stacks by address and the script's path."""
            path = os.path.join(tmp, name + ".py")
            with open(path, "w") as f:
                f.write(source)
            trace = os.path.join(tmp, "%s-%s.zst" % (name, mode))
            run_env = dict(env, MEMREC_NO_CUPTI="1", MEMREC_STACKS=mode)
            argv = [sys.executable, path, library] + ([trace] if arm_later else []) + list(args)
            if not arm_later:
                run_env["MEMREC_OUTPUT"] = trace
            out = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
            stacks = stacks_by_addr(memanalyze, trace, analyze_env) \
                if os.path.exists(trace) else {}
            return out, stacks, path

        def whole(frames, script):
            """Every frame of a stack as (name, line or None, in `script`)."""
            return [(f[0], int(f[2]) if f[1] == script else None, f[1] == script)
                    for f in frames]

        # A class instantiated in a loop: on 3.13 the call is specialised into
        # one that pushes a shim frame (code _Py_InitCleanup, incomplete) under
        # __init__, which CPython skips and so must memrec: every stack is
        # exactly __init__, its caller, <module>, all of this script. Attaching
        # inside such an __init__, and a thread held inside one at attach.
        il = lines_of(INIT)
        for where in ("plain", "in_init"):
            out, stacks, init = run("init", INIT, [where], arm_later=True)
            check(out.returncode == 0 and
                  out.stdout.split("\n")[:2] == ["0 " + expected_path, "1"] and
                  "does not lay out" not in out.stderr,
                  "__init__ %s: attach: %r %r" % (where, out.stdout, out.stderr))
            made = list(range(0x1000, 0x1000 + 40))
            check(all(whole(stacks.get(a, (0, []))[1], init) ==
                      [(qual("Buf.__init__"), il["init"], True), ("make", il["make"], True),
                       ("<module>", il["m_make"], True)] for a in made),
                  "__init__ %s: exactly __init__, make, <module>: %r" %
                  (where, [whole(stacks.get(a, (0, []))[1], init) for a in made[:3]]))
            held = [(n, ln) for n, ln, _ in whole(stacks.get(0x109, (0, []))[1], init)]
            if monitoring:
                check(held == [(qual("Buf.__init__"), il["init"]), ("worker", il["worker"])] +
                      threading_tail,
                      "__init__ %s: a thread held inside one at attach: %r" % (where, held))
            else:  # a thread started before attach has no Python frames before 3.12
                check(held == [], "__init__ %s: a thread started before attach: %r"
                      % (where, held))

        # Generators and coroutines started before attach, or while detached,
        # are named when they resume after it.
        out, stacks, resumed = run("resumed", RESUMED, arm_later=True)
        rl = lines_of(RESUMED)
        check(out.returncode == 0 and out.stdout.split("\n")[:3] == ["0 0", "0", "1"],
              "resumed: attach, detach, attach, arm: %r %r" % (out.stdout, out.stderr))
        want_resumed = {
            0x100: [("alloc", rl["alloc"]), ("batches", rl["batches"]),
                    ("<module>", rl["m_batches"])],
            0x300: [("alloc", rl["alloc"]), ("chunks", rl["chunks"]),
                    ("<module>", rl["m_chunks"])],
            0x200: [("alloc", rl["alloc"]), ("waiter", rl["waiter"]), ("<module>", rl["m_task"])],
        }
        for addr, want_frames in sorted(want_resumed.items()):
            frames = stacks.get(addr, (0, []))[1]
            check(named(frames, resumed) == want_frames and
                  all(f[0] != "<python>" for f in frames),
                  "resumed 0x%x: %r, not %r" % (addr, [f[:3] for f in frames], want_frames))

        # The profile hook: a detach, PyTorch's tracer clearing every thread's
        # profile function, an attach. The other thread's shadow stack from
        # before must not be spliced in, nor keep its frames alive.
        out, stacks, stale = run("stale", STALE)
        sl = lines_of(STALE)
        check(out.returncode == 0 and out.stdout.split() == ["0", "0", "0", "released"],
              "stale: a thread's frames from before the detach are let go: %r %r"
              % (out.stdout, out.stderr))
        got = named(stacks.get(0x100, (0, []))[1], stale)
        check(got == [], "stale: no frame from before the profiler: %r" % got)
        got = named(stacks.get(0x101, (0, []))[1], stale)
        if monitoring:  # 3.12+ puts the hook back on every running thread
            check(got == [("alloc", sl["alloc"]), ("worker", sl["worker"])] + threading_tail,
                  "stale: the thread's next call takes its frames again: %r" % got)
        else:  # before 3.12 the thread has lost its hook for good: no Python frames
            check(got == [], "stale: the thread's hook is gone: %r" % got)

        if monitoring:
            # A forked child that does not record keeps the tool: a detach there
            # would restart every tool's disabled events (coverage's lines).
            out, _, _ = run("fork", FORK)
            check(out.returncode == 0 and out.stdout.split("\n")[:4] ==
                  ["0 2", "child 0 memrec", "parent 0", "0 None"],
                  "fork: the child keeps the tool, the parent's detach frees it: %r %r"
                  % (out.stdout, out.stderr))

            # A program that frees memrec's tool id and takes it.
            tl = lines_of(TOOL)
            out, _, _ = run("tool", TOOL, ["take"])
            said = [w for w in out.stderr.splitlines() if 'freed and taken by "mine"' in w]
            check(out.returncode == 0 and out.stdout.split("\n")[:5] ==
                  ["0 " + expected_path, "3 is memrec's", "none", "0 mine True",
                   "mine called: True"] and len(said) == 1,
                  "tool id taken by the program: memrec's detach leaves it its id, events and "
                  "callback: %r %r" % (out.stdout, out.stderr))
            out, stacks, tool = run("tool", TOOL, ["free"])
            lost = [w for w in out.stderr.splitlines() if "no longer memrec's (freed)" in w]
            check(out.returncode == 0 and out.stdout.split("\n")[:6] ==
                  ["0 " + expected_path, "3 is memrec's", "setprofile", "mine sees first: True",
                   "0 mine True", "mine called: True"] and len(lost) == 1,
                  "tool id freed, then taken: memrec's callback lets it go: %r %r"
                  % (out.stdout, out.stderr))
            check(named(stacks.get(0x100, (0, []))[1], tool) ==
                  [("inner", tl["inner"]), ("outer", tl["outer"]), ("<module>", tl["top"])],
                  "tool id freed: the profile hook names the frames: %r" % (stacks.get(0x100),))

        # Many distinct call sites under one stack (the line cache's evictions).
        leaves = 1500
        out, stacks, sites = run("sites", SITES, [str(leaves)])
        pl = lines_of(SITES)
        wrong = [(hex(addr), whole(stacks.get(addr, (0, []))[1], sites))
                 for addr in [(r << 20) + k for r in (1, 2) for k in range(leaves)]
                 if [(f[0], int(f[2])) for f in stacks.get(addr, (0, []))[1]] !=
                 [("leaf%d" % (addr & 0xfffff), 3 * (addr & 0xfffff) + 3),
                  ("caller", pl["caller"]), ("<module>", pl["loop"])]]
        check(out.returncode == 0 and not wrong,
              "many sites: %d of %d stacks wrong: %r %r" % (len(wrong), 2 * leaves, wrong[:3],
                                                            out.stderr))

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
