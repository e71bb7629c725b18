"""test_rec_torch.py — PyTorch's allocator history, recorded live by memrec's
startup hook, end to end without torch or a GPU: the fake torch in
fake_torch/ stands in for PyTorch (its ring, _snapshot, lazy CUDA start,
NVTX), memrec runs Python scripts as a user would, and memanalyze reads
the traces back.

  1. a training-like loop (6 NVTX steps, drains every 50 ms, at each step
     boundary and at exit, a ring sized once for the whole run): every
     block, free_requested, free and segment arrives exactly once, each step
     holds exactly its own events, the leaking line is named with its bytes
     per step, stacks carry the script's file and line, the block allocated
     just before exit is there, the analyzer raises no warning, and a
     sitecustomize the hook hides still runs;
  2. a ring too small for a burst: one warning, the program unharmed;
  3. --no-torch, and a script that imports torch but never starts CUDA:
     PyTorch's history is never turned on, and (torchrun's agent) nothing
     of the recorder is loaded into it;
  4. a process with four GPUs that uses the third: one device record, its;
  5. tensor names: a 3-step AdamW loop (two layers, a weight tied to the
     embedding, two buffers on one storage, a parameter in no module, a CPU
     buffer) names every CUDA storage at the first optimizer step, then only
     the gradients (new tensors: at the same addresses at the second step,
     at new ones at the third), each name bound to the block at its
     address, inside the step it was taken in; MEMREC_TENSOR_NAMES=0 names
     nothing; a walk that raises warns once and the program goes on;
  6. PyTorch's lazy modules: drains (whose _snapshot looks for
     torch._inductor, as PyTorch's C++ does) import nothing into a program
     that never imports torch._inductor, and a program importing
     torch._dynamo while drains run imports it unharmed.

Usage: test_rec_torch.py MEMREC MEMANALYZE (exit 77: skip).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
from rec_testlib import SKIP, Checks, clean_env, sql_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_TORCH = os.path.join(HERE, "fake_torch")

TRAIN = """\
import time
import torch
import memrec_torch
keep = []
for i in range(6):
    torch.cuda.nvtx.range_push(f"step {i}")
    time.sleep(0.0003)  # > the fake clock's 100 us resolution
    a = torch.cuda.fake_alloc(4096, stream=7)
    keep.append(torch.cuda.fake_alloc(1024))  # the leak: line 9
    for k in range(50):
        torch.cuda.fake_free(torch.cuda.fake_alloc(512))
    time.sleep(0.12)
    torch.cuda.fake_free(a, stream_use=True)
    torch.cuda.nvtx.range_pop()
last = torch.cuda.fake_alloc(8192)  # only the drain at exit sees it
print("rings", [s[3] for s in torch.cuda.memory.settings])
d = memrec_torch.drainer()
print("drains", d.drains if d else 0)
"""
LEAK_LINE = 9

BURST = """\
import torch
for k in range(200):
    torch.cuda.fake_free(torch.cuda.fake_alloc(512))
print("burst done")
"""

NO_CUDA = """\
import torch
maps = open("/proc/self/maps").read()
print("recorder", "loaded" if "libmemrec" in maps or "libzstd" in maps else "absent")
torch.cuda.nvtx.mark("step 0")
print("rings", [s[3] for s in torch.cuda.memory.settings])
"""

ONE_OF_FOUR = """\
import torch
torch.cuda.memory.fake_devices, torch.cuda.memory.fake_device = 4, 2
torch.cuda.fake_free(torch.cuda.fake_alloc(512))
"""

# Case 6: PyTorch's snapshot looks for torch._inductor (fake_torch/torch/cuda/memory.py), and
# torch's lazy __getattr__ would import it on memrec's drain thread. LAZY: a program that
# never imports it must not find it imported after drains; RACE: a program importing
# torch._dynamo (which imports torch._inductor.utils, which imports torch._dynamo) while
# memrec drains, as AdamW's first step does, must import it as without memrec.
WAIT_FOR_DRAINS = """\
import sys
import time
import torch
import memrec_torch


def drained(n, timeout=30):
    d, end = memrec_torch.drainer(), time.monotonic() + timeout
    first = d.drains if d else 0
    while time.monotonic() < end and memrec_torch.drainer().drains < first + n:
        time.sleep(0.005)
    return memrec_torch.drainer().drains - first


"""
LAZY = WAIT_FOR_DRAINS + """\
keep = torch.cuda.fake_alloc(4096)  # CUDA starts: the drains begin
print("drains", drained(2))
print("lazy modules imported", sorted(m for m in sys.modules
                                     if m.startswith(("torch._inductor", "torch._dynamo"))))
print("the program's lookup", torch._dynamo.__name__)  # torch's __getattr__ still imports
"""
RACE = WAIT_FOR_DRAINS + """\
# (a drain that imports torch._inductor waits for this import, which waits for it: without
# the fix this wait ends at its timeout; with it, at the second drain however loaded the machine)
DURING_DYNAMO_IMPORT = lambda: print("drains during the import", drained(2))
keep = torch.cuda.fake_alloc(4096)
import torch._dynamo  # noqa: E402
print("dynamo imported")
"""

# A steady loop (issue 26): the caching allocator hands out the same addresses every step,
# so (action, addr, size, stream) repeats each iteration; record_function ranges repeat too
# (the annotations' ring). The ring holds 3 steps' entries and is drained at every step:
# it wraps between drains from the fourth step on. 40 steps x 10 blocks.
STEADY = """\
import time
import torch
import memrec_torch
torch.cuda._lazy_init()  # CUDA starts: the history is on before the first range
for i in range(40):
    torch.cuda.nvtx.range_push(f"step {i}")
    time.sleep(0.0003)  # > the fake clock's 100 us resolution
    torch.cuda.fake_range("Optimizer.step#AdamW.step", "START")
    blocks = [torch.cuda.caching_alloc(4096 * (k + 1)) for k in range(10)]
    time.sleep(0.0003)  # > the fake clock's 100 us resolution
    for b in blocks:
        torch.cuda.caching_free(b)
    torch.cuda.fake_range("Optimizer.step#AdamW.step", "END")
    time.sleep(0.0003)
    torch.cuda.nvtx.range_pop()
    memrec_torch.drainer().drain()
"""

# Drains 10 s apart (issue 26: the budget spaces them up to 30 s): the steps are marked
# straight through the library (memrec_mark, as NVTX does), so no step asks for a drain, and
# each step's block is drained seconds after the step's end was recorded.
SPACED = """\
import time
import torch
torch.cuda._lazy_init()
lib = torch.cuda.nvtx._library()
for i in range(11):
    lib.memrec_mark(b"step %d" % i)
    time.sleep(0.0003)  # > the fake clock's 100 us resolution
    torch.cuda.fake_free(torch.cuda.fake_alloc(4096 * (i + 1)))
    time.sleep(1.0)
lib.memrec_mark(b"step 11")
"""

# torch.profiler with Python stacks while memrec's frame hook is attached (issue 26): PyTorch's
# tracer fails at its stop when another profile hook was in place (fake_torch/torch/autograd/
# profiler.py says where that was seen). Both profilers, twice each; the hook is back after.
PROFILER = """\
import sys
import time
import torch
torch.cuda._lazy_init()
torch.cuda.fake_free(torch.cuda.fake_alloc(512))
time.sleep(0.01)  # the hook attaches at the interpreter's next pending call

def hooked():
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None and any(monitoring.get_tool(i) == "memrec" for i in range(6)):
        return True
    return sys.getprofile() is not None

print("hooked before", hooked())
for round in range(2):
    with torch.profiler.profile(with_stack=True):
        torch.cuda.fake_free(torch.cuda.fake_alloc(512))
    print("hooked after torch.profiler", hooked())
    with torch.autograd.profiler.profile(with_stack=True):
        torch.cuda.fake_free(torch.cuda.fake_alloc(512))
    print("hooked after autograd.profiler", hooked())
with torch.profiler.profile():  # without stacks: nothing to step aside for
    print("hooked in a profiler without stacks", hooked())
"""

# A plain loop: no NVTX, one optimizer; then a GAN's two optimizers.
PLAIN = """\
import time
import torch
opt = torch.optim.SGD()
d_opt, g_opt = torch.optim.SGD(), torch.optim.SGD()
keep = []
for i in range(4):
    a = torch.cuda.fake_alloc(4096)
    keep.append(torch.cuda.fake_alloc(1024))
    torch.cuda.fake_free(a)
    time.sleep(0.002)
    if GAN:
        d_opt.step()
        g_opt.step()
    else:
        opt.step()
    time.sleep(0.002)
"""

# A program that marks its steps itself: the optimizer hook stays silent.
MARKED = """\
import time
import torch
opt = torch.optim.SGD()
for i in range(3):
    torch.cuda.nvtx.range_push(f"step {i}")
    torch.cuda.fake_free(torch.cuda.fake_alloc(4096))
    opt.step()
    time.sleep(0.002)
    torch.cuda.nvtx.range_pop()
"""

# torch.profiler's ProfilerStep#N ranges, as the allocator records them.
PROFILED = """\
import time
import torch
torch.cuda.memory.fake_legacy_annotations = LEGACY
opt = torch.optim.SGD()
torch.cuda.fake_free(torch.cuda.fake_alloc(512))
time.sleep(0.0003)
for i in range(3):
    torch.cuda.fake_range(f"ProfilerStep#{i}", "START")
    time.sleep(0.0003)
    torch.cuda.fake_free(torch.cuda.fake_alloc(4096))
    opt.step()
    time.sleep(0.0003)
    torch.cuda.fake_range(f"ProfilerStep#{i}", "END")
    time.sleep(0.0003)
"""

# The allocator's configuration changed by the program at run time, before
# CUDA starts (what PyTorch's own tests and many scripts do), then again later.
SETTINGS = """\
import time
import torch
torch.cuda.memory._set_allocator_settings("expandable_segments:True")
torch.cuda.fake_free(torch.cuda.fake_alloc(4096))
time.sleep(0.01)
torch.cuda.memory._set_allocator_settings("garbage_collection_threshold:0.5")
time.sleep(0.2)
torch.cuda.fake_free(torch.cuda.fake_alloc(4096))
"""

# A CUDA graph's private pool beside the default one: the snapshot's segments say which.
POOLS = """\
import time
import torch
torch.cuda.fake_free(torch.cuda.fake_alloc(4096))
torch.cuda.fake_pool = (1, 0)
graph_block = torch.cuda.fake_alloc(3 << 20)
torch.cuda.fake_pool = (0, 0)
torch.cuda.fake_free(torch.cuda.fake_alloc(8192))
time.sleep(0.01)
"""

# A training loop with AdamW, for tensor names. Every tensor here is 512 bytes once
# rounded, so freed gradients are handed back lowest address first: at step 1 each
# gradient gets its old block back; at step 2 `hold` takes the lowest one first, so each
# gradient lands elsewhere. The script prints what each name's storage address is.
NAMES = """\
import json
import time
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8, device="cuda")
        self.layers = nn.ModuleList([nn.Linear(8, 8, device="cuda") for _ in range(2)])
        self.head = nn.Linear(8, 16, bias=False, device="cuda")
        self.head.weight = self.embed.weight  # tied: one Parameter, two names
        rope = torch.empty(2, 4, device="cuda")
        self.register_buffer("rope_cos", rope[0])  # two buffers, one storage
        self.register_buffer("rope_sin", rope[1])
        self.register_buffer("table", torch.empty(4))  # on the CPU: never named
        self.broken = False

    def named_parameters(self, *args, **kwargs):
        if self.broken:
            raise RuntimeError("named_parameters broke")
        return super().named_parameters(*args, **kwargs)


model = Model()
temperature = nn.Parameter(torch.empty(1, device="cuda"))  # in no module
opt = torch.optim.AdamW([{"params": list(model.parameters())}, {"params": [temperature]}])
params = [p for _, p in model.named_parameters()] + [temperature]
names = [n for n, _ in model.named_parameters()] + ["param_groups.1.0"]
model.broken = BROKEN


def where(t):
    return t.untyped_storage().data_ptr()


for step in range(3):
    time.sleep(0.25)
    hold = torch.empty(8, 8, device="cuda") if step == 2 else None
    for p in params:  # backward: a new gradient for every parameter
        p.grad = torch.empty_like(p)
    opt.step()
    seen = {n + ".grad": where(p.grad) for n, p in zip(names, params)}
    if step == 0:
        seen.update((n, where(p)) for n, p in zip(names, params))
        seen.update((n, where(b)) for n, b in model.named_buffers())
        for n, p in zip(names, params):
            seen.update((n + "." + k, where(v)) for k, v in opt.state[p].items())
    print("where", step, json.dumps(seen))
    opt.zero_grad(set_to_none=True)
    del hold
print("done")
"""

USER_SITE = 'print("user sitecustomize ran")\n'


def main():
    if len(sys.argv) < 3:
        print("usage: test_rec_torch.py MEMREC MEMANALYZE", file=sys.stderr)
        return SKIP
    memrec, memanalyze = sys.argv[1:3]
    for tool in (memrec, memanalyze):
        if not os.access(tool, os.X_OK):
            print("SKIP: %s not built" % tool, file=sys.stderr)
            return SKIP
    try:
        subprocess.run([sys.executable, "-c", "import ctypes, array"], check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        print("SKIP: python3 is unusable here", file=sys.stderr)
        return SKIP
    check = Checks("test_rec_torch.py")
    hooks_case(check)

    with tempfile.TemporaryDirectory() as tmp:
        user_site = os.path.join(tmp, "site")
        os.mkdir(user_site)
        with open(os.path.join(user_site, "sitecustomize.py"), "w") as f:
            f.write(USER_SITE)
        env = clean_env(drop=("PYTHONPATH",))
        env["PYTHONPATH"] = FAKE_TORCH + os.pathsep + user_site

        def record(name, script, options=(), extra=None):
            path = os.path.join(tmp, name + ".py")
            with open(path, "w") as f:
                f.write(script)
            trace = os.path.join(tmp, name + ".zst")
            run_env = dict(env, **(extra or {}))
            out = subprocess.run([memrec, "-o", trace, "--no-symbolize", *options, "--",
                                  sys.executable, path], env=run_env, capture_output=True,
                                 text=True, timeout=120, cwd=tmp)
            return out, trace, path

        def sql(trace, query):
            return sql_json(memanalyze, trace, query)

        # ---- 1. the training-like loop ------------------------------------
        # The ring holds the whole run (~1 200 entries): on a loaded machine (ctest -j 16) the
        # drain thread may not run for seconds, and what this case checks (each entry taken
        # once across many drains, steps) must not depend on it; a ring too small is case 2.
        # Nor on the drains' budget: a drain costs tens of ms there, and at 2 % of the time
        # the next would wait seconds, past this 0.8 s run (MEMREC_TORCH_DRAIN_PERCENT).
        out, trace, script = record("train", TRAIN, extra={"MEMREC_TORCH_DRAIN_MS": "50",
                                                           "MEMREC_TORCH_RING": "4096",
                                                           "MEMREC_TORCH_DRAIN_PERCENT": "100"})
        check(out.returncode == 0, "train.py ran: %r" % out.stderr)
        check("user sitecustomize ran" in out.stdout, "the hidden sitecustomize still ran")
        quiet = [line for line in out.stderr.splitlines() if line.startswith("memrec: ") and
                 not line.startswith(("memrec: no CUDA", "memrec: trace written",
                                      "memrec: PyTorch history: "))]
        check(quiet == [], "no recorder warning: %r" % out.stderr)
        check("rings [4096]" in out.stdout, "the ring is sized once, never resized: %r"
              % out.stdout)
        report = [line for line in out.stderr.splitlines() if "PyTorch history: " in line]
        check(len(report) == 1 and " drains, " in report[0] and " ms at most" in report[0] and
              "0 gaps" in report[0], "drain cost reported at exit: %r" % report)
        check(bool(report) and " 938 entries taken," in report[0],
              "the entries taken are counted: %r" % report)
        drains = [int(line.split()[1]) for line in out.stdout.splitlines()
                  if line.startswith("drains ")]
        # (how many depends on the machine's load: at least the step boundaries' requests)
        check(drains and drains[0] >= 3, "several drains before exit: %r" % drains)
        if os.path.exists(trace):
            counts = {(r["op"], r["level"]): r["n"] for r in sql(
                trace, "SELECT op, level, count(*) AS n FROM events "
                       "WHERE source = 'torch' GROUP BY 1, 2")}
            check(counts == {("alloc", "block"): 313, ("alloc", "segment"): 313,
                             ("free", "block"): 306, ("free_requested", "block"): 6},
                  "every entry exactly once: %r" % counts)
            steps = sql(trace, "SELECT step, end_event_id - begin_event_id AS n FROM steps "
                               "ORDER BY step")
            check([(s["step"], s["n"]) for s in steps] ==
                  [(0, 156), (1, 156), (2, 156), (3, 156), (4, 156), (5, 158)],
                  "each step holds its own events: %r" % steps)
            warnings = sql(trace, "SELECT code, message FROM warnings")
            check(warnings == [], "no analyzer warning: %r" % warnings[:3])
            segments = sql(trace, "SELECT count(*) AS n FROM segments")
            check(segments == [{"n": 313}], "one segment per segment_alloc: %r" % segments)
            leak = sql(trace, "SELECT DISTINCT f.file, f.line, f.name FROM events e "
                              "JOIN stack_frames f ON f.stack_id = e.stack_id AND f.depth = 0 "
                              "WHERE e.op = 'alloc' AND e.level = 'block' "
                              "AND e.requested_size = 1024")
            check(leak == [{"file": script, "line": LEAK_LINE, "name": "<module>"}],
                  "the leaking allocation's frame: %r" % leak)
            last = sql(trace, "SELECT count(*) AS n FROM events WHERE op = 'alloc' "
                              "AND level = 'block' AND requested_size = 8192")
            check(last == [{"n": 1}], "the block allocated just before exit: %r" % last)
            leaks = subprocess.run([memanalyze, "leaks", trace, "--json"], capture_output=True,
                                   text=True, timeout=120)
            sites = json.loads(leaks.stdout)["sites"] if leaks.returncode == 0 else []
            check(bool(sites) and sites[0]["site"] == "train.py:%d <module>" % LEAK_LINE and
                  sites[0]["growth_bytes_per_step"] == 1024, "leaks names the line: %r" % sites)
        else:
            check(False, "train.py left a trace")

        # ---- 1a. a steady loop whose ring wraps between drains ------------------
        out, trace, _ = record("steady", STEADY, extra={"MEMREC_TORCH_RING": "64",
                                                        "MEMREC_TORCH_DRAIN_MS": "600000",
                                                        "MEMREC_TORCH_DRAIN_PERCENT": "100"})
        check(out.returncode == 0, "the steady loop ran: %r" % out.stderr)
        report = [line for line in out.stderr.splitlines() if "PyTorch history: " in line]
        check(len(report) == 1 and ", 0 gaps" in report[0] and
              " 0 drains of a full ring" not in report[0],
              "the full ring's drains found their place, no gap: %r" % report)
        if os.path.exists(trace):
            counts = {(r["op"], r["level"]): r["n"] for r in sql(
                trace, "SELECT op, level, count(*) AS n FROM events "
                       "WHERE source = 'torch' GROUP BY 1, 2")}
            check(counts == {("alloc", "block"): 400, ("alloc", "segment"): 10,
                             ("free", "block"): 400},
                  "steady loop: every entry exactly once: %r" % counts)
            steps = sql(trace, "SELECT step, end_event_id - begin_event_id AS n FROM steps "
                               "ORDER BY step")
            check([(s["step"], s["n"]) for s in steps] ==
                  [(0, 30)] + [(i, 20) for i in range(1, 40)],
                  "steady loop: each step holds its own 10 allocs and 10 frees: %r" % steps[:5])
            ranges = sql(trace, "SELECT kind, count(*) AS n FROM markers WHERE domain = 'torch' "
                                "GROUP BY kind ORDER BY kind")
            check([(r["kind"], r["n"]) for r in ranges] == [("end", 40),
                                                            ("start", 40)],
                  "steady loop: each annotation exactly once: %r" % ranges)
            warnings = sql(trace, "SELECT code, message FROM warnings")
            check(warnings == [], "steady loop: no analyzer warning: %r" % warnings[:3])
        else:
            check(False, "the steady loop left a trace")

        # ---- 1aa. drains 10 s apart: still in time order -----------------------
        out, trace, _ = record("spaced", SPACED, extra={"MEMREC_TORCH_DRAIN_MS": "10000"})
        check(out.returncode == 0, "the spaced drains' loop ran: %r" % out.stderr)
        if os.path.exists(trace):
            steps = sql(trace, "SELECT step, end_event_id - begin_event_id AS n FROM steps "
                               "ORDER BY step")
            check([(s["step"], s["n"]) for s in steps] == [(i, 3) for i in range(11)] + [(11, 0)],
                  "drains 10 s apart: each step holds its own segment, block and free: %r"
                  % steps)
            order = sql(trace, "SELECT count(*) AS n FROM events a JOIN events b "
                               "ON b.event_id = a.event_id + 1 WHERE b.ts_ns < a.ts_ns")
            check(order == [{"n": 0}], "drains 10 s apart: events in time order: %r" % order)
        else:
            check(False, "the spaced drains' loop left a trace")

        # ---- 1ab. a PyTorch profiler with Python stacks: memrec steps aside ------------
        out, trace, _ = record("profiler", PROFILER)
        check(out.returncode == 0, "the profiler with stacks ran under memrec: %r" % out.stderr)
        check(out.stdout.splitlines() == ["user sitecustomize ran", "hooked before True"] +
              ["hooked after torch.profiler True", "hooked after autograd.profiler True"] * 2 +
              ["hooked in a profiler without stacks True"],
              "memrec's hook steps aside for the profiler and comes back: %r" % out.stdout)
        said = [line for line in out.stderr.splitlines() if "step aside" in line]
        if sys.version_info >= (3, 12):  # a sys.monitoring tool: nothing to step aside for
            check(said == [], "3.12+: no stepping aside: %r" % out.stderr)
        else:
            check(len(said) == 1 and said[0].startswith(
                "memrec: a PyTorch profiler records Python stacks (with_stack=True)"),
                "stepping aside is said once: %r" % out.stderr)
        out, _, _ = record("profiler_native", PROFILER, options=("--stacks", "native"))
        check(out.returncode == 0 and "step aside" not in out.stderr,
              "--stacks native: no hook, nothing to step aside for: %r" % out.stderr)

        # ---- 1b. PyTorch's settings: alloc context, Python stacks, annotations
        out, trace, _ = record("settings", TRAIN.replace("print(\"rings\", [s[3]", "print(\"set\", [s[:3]").replace(
            "d = memrec_torch", "print('annot', torch.cuda.memory._record_annotations)\nd = memrec_torch"),
            options=("--stacks", "native"))
        check("set [('all', 'alloc', 'python')]" in out.stdout and "annot True" in out.stdout,
              "context=alloc, Python stacks even with --stacks native, annotations: %r"
              % out.stdout)

        # ---- 1c. steps from the optimizer: a plain loop, a GAN --------------
        for gan in (False, True):
            out, trace, _ = record("plain%d" % gan, "GAN = %r\n" % gan + PLAIN)
            check(out.returncode == 0, "plain loop ran: %r" % out.stderr)
            if os.path.exists(trace):
                steps = sql(trace, "SELECT step FROM steps ORDER BY step")
                check([r["step"] for r in steps] == [0, 1, 2, 3],
                      "optimizer steps (gan=%r): one step per iteration: %r" % (gan, steps))
        out, trace, _ = record("marked", MARKED)
        if os.path.exists(trace):
            names = sql(trace, "SELECT count(*) AS n FROM markers WHERE domain = "
                               "'memrec.optimizer'")
            check(names == [{"n": 0}], "NVTX steps win: the hook stays silent: %r" % names)
            steps = sql(trace, "SELECT step FROM steps ORDER BY step")
            check([r["step"] for r in steps] == [0, 1, 2], "NVTX steps: %r" % steps)

        # ---- 1d. ProfilerStep#N annotations, both forms ----------------------
        for legacy in (False, True):
            out, trace, _ = record("prof%d" % legacy, "LEGACY = %r\n" % legacy + PROFILED)
            check(out.returncode == 0, "profiled ran: %r" % out.stderr)
            if os.path.exists(trace):
                steps = sql(trace, "SELECT step, end_event_id - begin_event_id AS n FROM steps "
                                   "ORDER BY step")
                check([(r["step"], r["n"]) for r in steps] == [(0, 3), (1, 3), (2, 3)],
                      "ProfilerStep#N ranges are the steps (legacy=%r): %r" % (legacy, steps))
                hook = sql(trace, "SELECT count(*) AS n FROM markers WHERE domain = "
                                  "'memrec.optimizer'")
                check(hook == [{"n": 0}], "annotation steps win over the hook: %r" % hook)

        # ---- 1e. the allocator settings PyTorch runs with ---------------------
        # The environment says max_split_size_mb:256; the program then sets
        # expandable segments, which in PyTorch resets max_split_size: the
        # replay must model expandable segments without a split limit (the
        # environment alone says the opposite on both), and the later change
        # is marked too.
        out, trace, _ = record("settings_runtime", SETTINGS,
                               extra={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:256",
                                      "MEMREC_TORCH_DRAIN_MS": "50"})
        check(out.returncode == 0, "settings.py ran: %r" % out.stderr)
        if os.path.exists(trace):
            marks = [r["name"] for r in sql(trace, "SELECT name FROM markers WHERE domain = "
                                                   "'memrec.allocator' ORDER BY ts_ns")]
            check(marks[:2] == ["PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256",
                                "torch.allocator_settings=expandable_segments:True,"
                                "release_lock_on_cudamalloc:False,"
                                "pinned_use_cuda_host_register:False,"
                                "pinned_num_register_threads:1"] and len(marks) == 3 and
                  "garbage_collection_threshold:0.5" in marks[2],
                  "the environment's and PyTorch's settings, each change marked: %r" % marks)
            meta = {r["key"]: r["value"] for r in sql(
                trace, "SELECT key, value FROM meta WHERE key LIKE 'allocator_settings%'")}
            model = json.loads(meta.get("allocator_settings", "{}"))
            check(meta.get("allocator_settings_source") == "trace" and
                  model.get("expandable_segments") is True and
                  model.get("max_split_size") in (None, -1),
                  "the replay models the settings PyTorch reported first: %r" % meta)
        else:
            check(False, "settings.py left a trace")

        # ---- 1f. a private pool (segment_pool_id (1, 0)) ------------------------
        out, trace, _ = record("pools", POOLS)
        check(out.returncode == 0, "pools.py ran: %r" % out.stderr)
        if os.path.exists(trace):
            rows = sql(trace, "SELECT op, level, size, pool FROM events WHERE source = 'torch' "
                              "AND event_id > 0 ORDER BY event_id")
            pooled = [(r["op"], r["level"], r["pool"]) for r in rows if r["pool"] is not None]
            check(pooled == [("alloc", "segment", 1 << 32), ("alloc", "block", 1 << 32)] and
                  len(rows) == 8,
                  "the graph's segment and block, and only they, carry its pool: %r" % rows)
        else:
            check(False, "pools.py left a trace")

        # ---- 2. a burst larger than the ring --------------------------------
        out, trace, _ = record("burst", BURST, extra={"MEMREC_TORCH_RING": "32"})
        check(out.returncode == 0 and "burst done" in out.stdout, "the burst ran: %r" % out)
        check("history wrapped between two drains" in out.stderr,
              "lost entries are reported: %r" % out.stderr)

        # ---- 3. PyTorch's history left alone --------------------------------
        out, trace, _ = record("off", TRAIN, options=("--no-torch",))
        check(out.returncode == 0 and "rings []" in out.stdout,
              "--no-torch: history never turned on: %r" % out.stdout)
        out, trace, _ = record("nocuda", NO_CUDA)
        check(out.returncode == 0 and "rings []" in out.stdout,
              "torch without CUDA: history never turned on: %r %r" % (out.stdout, out.stderr))
        check("recorder absent" in out.stdout,
              "torch without CUDA (torchrun's agent): nothing of the recorder is loaded: %r"
              % out.stdout)
        if os.path.exists(trace):
            n = sql(trace, "SELECT count(*) AS n FROM events WHERE source = 'torch'")
            check(n == [{"n": 0}], "torch without CUDA: no events: %r" % n)

        # ---- 4. only the devices the process uses ----------------------------
        out, trace, _ = record("one_of_four", ONE_OF_FOUR)
        check(out.returncode == 0, "one_of_four.py ran: %r" % out.stderr)
        if os.path.exists(trace):
            devices = sql(trace, "SELECT device FROM devices ORDER BY device")
            check(devices == [{"device": 2}], "one device record, the used one: %r" % devices)
        else:
            check(False, "one_of_four.py left a trace")

        # ---- 5. tensor names ------------------------------------------------
        names_case(check, record, sql)

        # ---- 6. PyTorch's lazy modules stay the program's to import ----------------
        fast = {"MEMREC_TORCH_DRAIN_MS": "10", "MEMREC_TORCH_DRAIN_PERCENT": "100"}
        def counted(out, label):
            """The number printed after `label` (drained() reads the count once more after
            its wait: a third drain may have ended meanwhile)."""
            for line in out.stdout.splitlines():
                if line.startswith(label + " ") and line[len(label) + 1:].isdigit():
                    return int(line[len(label) + 1:])
            return -1

        out, _, _ = record("lazy", LAZY, extra=fast)
        check(out.returncode == 0 and counted(out, "drains") >= 2,
              "lazy.py ran and drained: %r %r" % (out.stdout, out.stderr))
        check("lazy modules imported []" in out.stdout,
              "drains import no module of torch's: %r" % out.stdout)
        check("the program's lookup torch._dynamo" in out.stdout,
              "the program's own lookup still imports: %r" % out.stderr[-2000:])
        out, _, _ = record("race", RACE, extra=fast)
        check(out.returncode == 0 and "dynamo imported" in out.stdout,
              "torch._dynamo imported while memrec drains: %r" % out.stderr[-2000:])
        check(counted(out, "drains during the import") >= 2,
              "drains ran during that import: %r" % out.stdout)

    return check.finish()


# What the first walk names: every CUDA storage once, by its first tensor's name, with
# the number of tensors sharing it (the tied weight is two names of one Parameter, so its
# gradient and its optimizer state have two names too); the CPU buffer and AdamW's CPU
# "step" scalars are not named.
FIRST_WALK = {
    ("embed.weight", "parameter", 2), ("layers.0.weight", "parameter", 1),
    ("layers.0.bias", "parameter", 1), ("layers.1.weight", "parameter", 1),
    ("layers.1.bias", "parameter", 1), ("rope_cos", "parameter", 2),
    ("param_groups.1.0", "parameter", 1),
    ("embed.weight.grad", "gradient", 2), ("layers.0.weight.grad", "gradient", 1),
    ("layers.0.bias.grad", "gradient", 1), ("layers.1.weight.grad", "gradient", 1),
    ("layers.1.bias.grad", "gradient", 1), ("param_groups.1.0.grad", "gradient", 1),
    ("embed.weight.exp_avg", "optimizer_state", 2),
    ("embed.weight.exp_avg_sq", "optimizer_state", 2),
    ("param_groups.1.0.exp_avg", "optimizer_state", 1),
    ("param_groups.1.0.exp_avg_sq", "optimizer_state", 1),
} | {("layers.%d.%s.%s" % (i, w, k), "optimizer_state", 1)
     for i in (0, 1) for w in ("weight", "bias") for k in ("exp_avg", "exp_avg_sq")}
GRADIENTS = {r for r in FIRST_WALK if r[1] == "gradient"}


def hooks_case(check):
    """Where the optimizer hooks are found, and when the hook stands aside: in-process, on the
    bridge's own functions. Real torch/optim/__init__.py ends with `del optimizer` (the fake
    too), so torch.optim.optimizer is found in sys.modules, never as an attribute; and while
    torch.compile traces the step, the hook does nothing (gc, ctypes, locks break its graph)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "recorder", "python"))
    sys.path.insert(0, FAKE_TORCH)
    try:
        import memrec_torch
        import torch
        module = memrec_torch.optimizer_module()
        check(not hasattr(torch.optim, "optimizer") and module is not None and
              hasattr(module, "register_optimizer_step_post_hook"),
              "the hooks' module is found without torch.optim.optimizer: %r" % module)

        class Compiler:
            def __init__(self, answer):
                self.answer = answer

            def is_compiling(self):
                return self.answer

        class Stub:
            pass
        tracing, eager, old = Stub(), Stub(), Stub()
        tracing.compiler, eager.compiler = Compiler(True), Compiler(False)
        check(memrec_torch.compiling(tracing) and not memrec_torch.compiling(eager) and
              not memrec_torch.compiling(old), "torch.compile's tracing is seen")
        # LazyImportGuard: while a thread is inside `with guard:`, the module's __getattr__
        # refuses "_inductor" on that thread only, and hands every other name to the module's
        # own (a stand-in for torch whose __getattr__ answers every name, importing nothing)
        import threading
        import types
        lazy = types.ModuleType("lazy_stand_in")
        lazy.__getattr__ = lambda name: "lazy " + name
        guard = memrec_torch.LazyImportGuard()
        guard.install(lazy)
        guard.install(lazy)  # once: a second install keeps the first wrapper
        wrapped = lazy.__dict__["__getattr__"]
        check(getattr(wrapped, "_memrec_lazy_guard", False) and
              not getattr(wrapped.__wrapped__, "_memrec_lazy_guard", False),
              "the guard wraps the module's __getattr__ once")
        seen = {}
        inside, done = threading.Event(), threading.Event()

        def other_thread():
            inside.wait(30)
            seen["other thread"] = getattr(lazy, "_inductor", None)
            done.set()
        t = threading.Thread(target=other_thread)
        t.start()
        with guard:
            with guard:  # nested: the outer one still guards after the inner ends
                pass
            seen["refused"] = getattr(lazy, "_inductor", None)
            seen["passed"] = getattr(lazy, "_dynamo", None)
            inside.set()
            done.wait(30)
        t.join(30)
        seen["after"] = getattr(lazy, "_inductor", None)
        check(seen == {"refused": None, "passed": "lazy _dynamo",
                       "other thread": "lazy _inductor", "after": "lazy _inductor"},
              "the guard refuses _inductor on its own thread only: %r" % seen)
        drainer = memrec_torch.Drainer(tracing, None)
        drainer.name_tensors = lambda optimizer: check(False, "no walk while compiling")
        drainer.optimizer_stepped(object(), (), {})
    finally:
        del sys.path[:2]
        for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
            del sys.modules[name]


def names_case(check, record, sql):
    """Case 5: the tensor names of a 3-step loop, read back with memanalyze."""
    # drains at the steps only (no timer drain); and a walk at every step whatever it costs:
    # the fake model's walk takes ~1 ms, but on a loaded machine (ctest -j 16) it took 14.6 ms,
    # past WALK_FLOOR and 2 % of this short run, and the budget then skipped the next steps
    extra = {"MEMREC_TORCH_DRAIN_MS": "60000", "MEMREC_TORCH_DRAIN_PERCENT": "100"}
    out, trace, _ = record("names", "BROKEN = False\n" + NAMES, extra=extra)
    check(out.returncode == 0 and "done" in out.stdout, "names.py ran: %r" % out.stderr)
    where = {}
    for line in out.stdout.splitlines():
        if line.startswith("where "):
            _, step, seen = line.split(" ", 2)
            where[int(step)] = json.loads(seen)
    check(sorted(where) == [0, 1, 2], "names.py printed its addresses: %r" % out.stdout)
    if sorted(where) == [0, 1, 2]:
        grads = [{k: v for k, v in where[s].items() if k.endswith(".grad")} for s in range(3)]
        check(grads[1] == grads[0] and all(grads[2][k] != grads[0][k] for k in grads[0]),
              "the fake's gradients: same blocks at step 1, others at step 2: %r" % grads)
    report = [line for line in out.stderr.splitlines() if "PyTorch history: " in line]
    check(len(report) == 1 and "; tensor names: 3 walks, " in report[0] and
          " ms at most, %d names" % (len(FIRST_WALK) + 2 * len(GRADIENTS)) in report[0] and
          "waited" not in report[0], "the walks and their cost are reported: %r" % report)
    if report:
        print("walk cost (fake model): " + report[0].split("; tensor names: ")[-1])
    warned = [line for line in out.stderr.splitlines() if line.startswith("memrec: ") and
              not line.startswith(("memrec: no CUDA", "memrec: trace written",
                                   "memrec: PyTorch history: "))]
    check(warned == [], "no recorder warning: %r" % warned)
    if not os.path.exists(trace) or sorted(where) != [0, 1, 2]:
        check(False, "names.py left a trace")
        return
    rows = sql(trace, "SELECT t.name, t.category, t.tensors, t.ts_ns, a.addr, a.alloc_id "
                      "FROM tensor_names t JOIN allocations a USING (alloc_id) "
                      "ORDER BY t.ts_ns, t.alloc_id")
    walks = {}
    for r in rows:  # one walk's names share one time
        walks.setdefault(r["ts_ns"], []).append(r)
    walks = [walks[ts] for ts in sorted(walks)]
    got = [{(r["name"], r["category"], r["tensors"]) for r in w} for w in walks]
    check(len(walks) == 3 and [len(w) for w in walks] == [len(FIRST_WALK), 6, 6] and
          got == [FIRST_WALK, GRADIENTS, GRADIENTS],
          "all names at the first walk, then only the gradients: %r" % got)
    for step, w in enumerate(walks[:3]):
        wrong = [(r["name"], r["addr"], where[step].get(r["name"])) for r in w
                 if r["addr"] != where[step].get(r["name"])]
        check(wrong == [], "step %d: each name bound to the block at its storage: %r"
              % (step, wrong))
    if len(walks) == 3:
        ids = [{r["name"]: r["alloc_id"] for r in w} for w in walks]
        check(all(len({ids[s][g[0]] for s in range(3)}) == 3 for g in GRADIENTS),
              "each step's gradients are new blocks, each named: %r" % ids)
        steps = sql(trace, "SELECT step, begin_ts_ns, end_ts_ns FROM steps ORDER BY step")
        spans = [(s["begin_ts_ns"], s["end_ts_ns"] if s["end_ts_ns"] is not None else 1 << 62)
                 for s in steps]
        ts = [w[0]["ts_ns"] for w in walks]
        check(len(spans) == 3 and ts[0] < spans[0][0] and
              spans[0][0] <= ts[1] < spans[0][1] and spans[1][0] <= ts[2] < spans[1][1],
              "names taken before the optimizer hook's step marker: %r %r" % (ts, spans))
    markers = sql(trace, "SELECT count(*) AS n FROM markers WHERE domain = 'memrec.tensor'")
    check(markers == [{"n": 0}], "names make no markers rows: %r" % markers)

    # MEMREC_TENSOR_NAMES=0: no walk, no name
    out, trace, _ = record("names_off", "BROKEN = False\n" + NAMES,
                           extra=dict(extra, MEMREC_TENSOR_NAMES="0"))
    check(out.returncode == 0 and "done" in out.stdout, "names_off.py ran: %r" % out.stderr)
    check("tensor names" not in out.stderr, "MEMREC_TENSOR_NAMES=0: no walk: %r" % out.stderr)
    if os.path.exists(trace):
        n = sql(trace, "SELECT count(*) AS n FROM tensor_names")
        check(n == [{"n": 0}], "MEMREC_TENSOR_NAMES=0: no names: %r" % n)
        steps = sql(trace, "SELECT step FROM steps ORDER BY step")
        check([r["step"] for r in steps] == [0, 1, 2], "the steps still: %r" % steps)
    else:
        check(False, "names_off.py left a trace")

    # a walk that raises: one warning, no names, the program and its steps go on
    out, trace, _ = record("names_broken", "BROKEN = True\n" + NAMES, extra=extra)
    check(out.returncode == 0 and "done" in out.stdout, "names_broken.py ran: %r" % out.stderr)
    failed = [line for line in out.stderr.splitlines() if "naming the model's tensors" in line]
    check(failed == ["memrec: naming the model's tensors failed (RuntimeError: "
                     "named_parameters broke): no more tensor names are recorded"],
          "one warning: %r" % out.stderr)
    check("; tensor names: 1 walks, " in out.stderr and ", 0 names" in out.stderr,
          "no walk after the failure: %r" % out.stderr)
    if os.path.exists(trace):
        n = sql(trace, "SELECT count(*) AS n FROM tensor_names")
        check(n == [{"n": 0}], "the walk that raised named nothing: %r" % n)
        steps = sql(trace, "SELECT step FROM steps ORDER BY step")
        check([r["step"] for r in steps] == [0, 1, 2], "the steps still: %r" % steps)
    else:
        check(False, "names_broken.py left a trace")


if __name__ == "__main__":
    sys.exit(main())
