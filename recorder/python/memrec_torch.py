"""memrec_torch: PyTorch's caching-allocator blocks, live, into memrec's trace.

CUPTI sees only the segments PyTorch's caching allocator gets from the
driver; the tensors inside are PyTorch's business. PyTorch records them
itself when asked (torch.cuda.memory._record_memory_history): every block
alloc, free_requested, free_completed, segment_alloc/free/map/unmap and oom,
with its Python stack and a time_us. This module, started by memrec's
sitecustomize, turns that on and drains the new entries into the trace:

  - when: `import torch` is watched (a one-shot meta-path finder), and the
    history is enabled when CUDA initializes (torch.cuda._lazy_call), so a
    program that imports torch without using CUDA is left as it was;
  - drains: from Python threads only, never inside a CUDA callback, and
    never importing a module of torch's the program has not (LazyImportGuard): a
    daemon thread every MEMREC_TORCH_DRAIN_MS (default 1000), at every step
    boundary (torch.cuda.nvtx range_push/range_pop/mark/range_start/
    range_end of a name with "step" and a number: the drain runs before the
    marker, so each step's blocks lie inside it in the trace), and at exit;
  - exactly once: per device (and for the annotations), by content: the
    last entries taken are found again in ring order near the high-water
    mark (PyTorch re-fits its clock at every snapshot, so time_us moves);
    re-stamped duplicates and gaps are counted and reported at exit;
  - bounded cost: context="alloc", Python stacks, a ring sized once (a
    second _record_memory_history call clears it in older PyTorch); the
    interval shortens when a drain finds the ring over half full, and backs
    off while drains cost more than DRAIN_SHARE of wall time;
  - steps: a global optimizer step post-hook marks steps in a program that
    marks none (no NVTX step, no memrec.h, no ProfilerStep#N annotation);
  - annotations (global_record_annotations, or legacy user_defined entries)
    become range markers;
  - the allocator's settings as PyTorch reports them (the snapshot's
    allocator_settings, which include the program's own
    torch.cuda.memory._set_allocator_settings calls), marked when first seen
    and at each change (memrec_torch_allocator_settings);
  - interning: each distinct frame and stack crosses into libmemrec.so once
    (memrec_torch_define_frames/_stacks), entries then as flat uint64
    records (memrec_torch_emit; rec_torch.h describes both sides);
  - tensor names: at every optimizer step (whoever marks the steps) the
    model's parameters and buffers, their gradients and the stepping
    optimizer's state are named, a mark per storage (TensorNames below,
    TRACE_FORMAT.md "Tensor names"), after a drain so that the blocks they
    name precede them in the trace.

Environment (the memrec launcher sets the first ones): MEMREC_TORCH=0 off;
MEMREC_TORCH_STACKS=all asks PyTorch for its C++ frames too (much slower;
memrec's own --stacks does not change PyTorch's); MEMREC_STACK_DEPTH frames
kept per stack (innermost); MEMREC_TORCH_DRAIN_MS; MEMREC_TORCH_RING, the
ring's size (default 262144), set once; MEMREC_TENSOR_NAMES=0: no tensor
names.

Nothing here may harm the program: every failure is one memrec warning and
the program goes on unrecorded.
"""
import array
import atexit
import bisect
import ctypes
import functools
import gc
import importlib.util
import os
import re
import sys
import threading
import time
import weakref

# The history actions that become trace events, numbered as model/torch_history.h's
# gmt_torch_action (its table says what each becomes; tests/test_torch_history.c keeps the two
# in step). "snapshot" entries carry no memory and are not handed over.
ACTIONS = {"alloc": 0, "free_requested": 1, "free_completed": 2, "segment_alloc": 3,
           "segment_free": 4, "segment_map": 5, "segment_unmap": 6, "oom": 7}
FIELDS = 9  # uint64 per entry, in rec_torch.h's order
# Large enough that a busy loop rarely outgrows it between two drains: a
# resize calls _record_memory_history again, which in some PyTorch versions
# clears the ring (what was recorded since the last drain is then lost).
INITIAL_ENTRIES = 262144
# A tensor-name walk shorter than this never skips a step for the budget: small models name
# every step (their walks cost well under a millisecond).
WALK_FLOOR = 0.010
MAX_INTERVAL = 30.0
MASK64 = (1 << 64) - 1
STEP_WORD = re.compile(r"step", re.IGNORECASE)
NUMBER = re.compile(r"\d")

WARN_ENABLE, WARN_DRAIN, WARN_LOST, WARN_NO_TIME, WARN_DISABLED, WARN_CLOCK = 1, 2, 3, 4, 5, 6
WARN_NAMES, WARN_BLIND, WARN_PROFILER = 7, 8, 9
DRAINED, WAITED = "drained", "waited"  # what a tensor walk did (Drainer.name_tensors)


NON_SPLIT_ROUNDING = re.compile(r"max_non_split_rounding_mb\s*:\s*(\d+)")


def settings_conf(settings):
    """PyTorch's allocator_settings (the dict its snapshot carries: the
    values its allocator runs with) as PYTORCH_CUDA_ALLOC_CONF text that
    gives the same settings, or None when it is not such a dict. The dict's
    values are the current ones; its PYTORCH_CUDA_ALLOC_CONF is only the
    last text PyTorch parsed, which a run-time _set_allocator_settings call
    replaces while keeping earlier keys it does not name (expandable
    segments), so the text is built from the values. max_split_size is in
    bytes (-1: unlimited); roundup_power2_divisions maps each interval's
    start in MiB ("1", "2", "4", ...) to its divisions."""
    if not isinstance(settings, dict):
        return None
    parts = []

    def flag(key):
        value = settings.get(key)
        if isinstance(value, bool):
            parts.append("%s:%s" % (key, value))
    flag("expandable_segments")
    split = settings.get("max_split_size")
    if isinstance(split, int) and not isinstance(split, bool) and 0 < split < 1 << 62:
        parts.append("max_split_size_mb:%d" % (split >> 20))
    threshold = settings.get("garbage_collection_threshold")
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and \
            0 < threshold < 1:
        parts.append("garbage_collection_threshold:%r" % float(threshold))
    roundup = settings.get("roundup_power2_divisions")
    if isinstance(roundup, dict):
        entries = sorted((int(k), v) for k, v in roundup.items()
                         if isinstance(k, str) and k.isdigit() and isinstance(v, int))
        if any(v for _, v in entries):
            parts.append("roundup_power2_divisions:[%s]" %
                         ",".join("%d:%d" % (k, v) for k, v in entries))
    flag("release_lock_on_cudamalloc")
    flag("pinned_use_cuda_host_register")
    threads = settings.get("pinned_num_register_threads")
    if isinstance(threads, int) and not isinstance(threads, bool) and threads > 0:
        parts.append("pinned_num_register_threads:%d" % threads)
    text = settings.get("PYTORCH_CUDA_ALLOC_CONF")  # the one key the dict lacks a value for
    rounding = NON_SPLIT_ROUNDING.search(text) if isinstance(text, str) else None
    if rounding:
        parts.append("max_non_split_rounding_mb:%s" % rounding.group(1))
    return ",".join(parts)


def is_step_name(name):
    """The analyzer's default step rule: "step" and a number in the name."""
    return isinstance(name, str) and bool(STEP_WORD.search(name)) and bool(NUMBER.search(name))


def _env_int(name, default):
    try:
        return int(os.environ.get(name, "") or default)
    except ValueError:
        return default


# A drain may take at most this share of wall time: a drain holds the GIL
# and PyTorch's allocator lock for O(ring), stalling the training loop; 2%
# is below the step-to-step noise of a training loop, so it cannot be seen
# in throughput, and leaves 20 ms per second for a 1 s interval.
# MEMREC_TORCH_DRAIN_PERCENT changes it (tests on a loaded machine: a
# drain there costs tens of ms, and the budget would space them seconds apart).
DRAIN_SHARE = min(100, max(1, _env_int("MEMREC_TORCH_DRAIN_PERCENT", 2))) / 100.0


def injected_library_path():
    """The libmemrec.so memrec injects (CUDA_INJECTION64_PATH), or None when
    that variable names another tool's library."""
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    return path if os.path.basename(path).startswith("libmemrec") else None


def load_library(only_loaded=False):
    """libmemrec.so with its torch entry points typed; None when absent.
    Called once CUDA has started: the driver has loaded the library by then;
    if it has not (a driver that did not, a fake torch in the tests), it is
    loaded here, into a process that uses CUDA (not when only_loaded)."""
    lib = None
    path = injected_library_path()
    tries = [(path, os.RTLD_NOLOAD | os.RTLD_LAZY), ("libmemrec.so", os.RTLD_NOLOAD | os.RTLD_LAZY)]
    if not only_loaded:
        tries.append((path, os.RTLD_NOW))
    for name, mode in tries:
        if name:
            try:
                lib = ctypes.CDLL(name, mode=mode)
                break
            except OSError:
                continue
    if lib is None or not hasattr(lib, "memrec_torch_emit"):
        return None
    u32, u64, p = ctypes.c_uint32, ctypes.c_uint64, ctypes.POINTER
    lib.memrec_torch_recording.restype = ctypes.c_int
    lib.memrec_torch_recording.argtypes = []
    lib.memrec_torch_define_frames.restype = ctypes.c_int
    lib.memrec_torch_define_frames.argtypes = [u32, u32, p(ctypes.c_char_p),
                                               p(ctypes.c_char_p), p(u32)]
    lib.memrec_torch_define_stacks.restype = ctypes.c_int
    lib.memrec_torch_define_stacks.argtypes = [u32, u32, p(u32), p(u32)]
    lib.memrec_torch_emit.restype = u32
    lib.memrec_torch_emit.argtypes = [ctypes.c_void_p, u32]
    lib.memrec_torch_device.restype = None
    lib.memrec_torch_device.argtypes = [u32, u64, ctypes.c_char_p]
    lib.memrec_torch_history_on.restype = None
    lib.memrec_torch_history_on.argtypes = []
    lib.memrec_torch_history_off.restype = None
    lib.memrec_torch_history_off.argtypes = []
    lib.memrec_torch_drained.restype = None
    lib.memrec_torch_drained.argtypes = [u64]
    lib.memrec_torch_expect_drain.restype = None
    lib.memrec_torch_expect_drain.argtypes = [u64]
    lib.memrec_torch_warn.restype = None
    lib.memrec_torch_warn.argtypes = [u32, ctypes.c_char_p]
    lib.memrec_torch_optimizer_step.restype = ctypes.c_int
    lib.memrec_torch_optimizer_step.argtypes = [ctypes.c_int64, ctypes.c_int64]
    lib.memrec_torch_program_steps.restype = ctypes.c_int
    lib.memrec_torch_program_steps.argtypes = []
    lib.memrec_torch_report.restype = None
    lib.memrec_torch_report.argtypes = [ctypes.c_char_p]
    lib.memrec_torch_allocator_settings.restype = ctypes.c_int
    lib.memrec_torch_allocator_settings.argtypes = [ctypes.c_char_p]
    if hasattr(lib, "memrec_torch_tensor_names"):  # an older libmemrec.so names nothing
        lib.memrec_torch_tensor_names.restype = ctypes.c_int
        lib.memrec_torch_tensor_names.argtypes = [u32, p(u64), p(ctypes.c_char_p)]
    return lib


def _text(value):
    return str(value if value is not None else "").encode("utf-8", "replace")


def private_pools(segments):
    """The private pools of a snapshot's segments (segment_pool_id other than (0, 0): a CUDA
    graph's or a MemPool's), as a function (device, addr) -> pool number (a * 2^32 + b; 0 for
    the default pool), or None when there are none (the common case costs nothing per entry).
    The segment holding an address when the history is drained is, but for one freed and
    replaced since, the one its entries were made in."""
    ranges = []
    for seg in segments or ():
        pool = seg.get("segment_pool_id") or (0, 0)
        try:
            a, b = int(pool[0]), int(pool[1])
        except (TypeError, ValueError, IndexError):
            continue
        if a or b:
            start = seg.get("address") or 0
            ranges.append((seg.get("device") or 0, start, start + (seg.get("total_size") or 0),
                           (((a << 32) + b) & MASK64) or 1))
    if not ranges:
        return None
    ranges.sort()
    keys = [(r[0], r[1]) for r in ranges]

    def pool_of(device, addr):
        i = bisect.bisect_right(keys, (device, addr)) - 1
        if i >= 0 and ranges[i][0] == device and addr < ranges[i][2]:
            return ranges[i][3]
        return 0
    return pool_of


class Cursor:
    """What of one of PyTorch's rings (a device's history, or the annotations)
    has been drained, so that every entry reaches the trace exactly once.

    PyTorch's ring (c10's RingBuffer in CUDACachingAllocator.cpp; the
    annotations have one of the same size) is a vector that grows to
    max_entries and then overwrites its oldest entry; a snapshot lists it
    oldest first. So:
      - while the ring is not full, what a drain has not taken is exactly
        entries[taken:], `taken` being the ring's length at the last drain
        (its last entry is checked to be the one taken: a program that
        restarts the history clears the ring);
      - once full, its length stays max_entries, and the last entry taken
        has moved back by the number of new entries, which nothing in a
        snapshot says. It is found by content: the keys of the last TAIL
        entries taken, in ring order. A steady loop repeats the same keys
        every step (the caching allocator hands out the same addresses), so
        the sequence occurs once per step: the occurrence whose times are
        nearest the times the tail had when it was taken is the one (PyTorch
        re-fits its TSC->wall clock at every snapshot, which moves an entry's
        time_us by microseconds; steps are milliseconds apart). Only entries
        within NEAR_US of the mark are looked at, found by bisection on time.
    A drain's own work is O(new entries + log ring); PyTorch's _snapshot()
    itself copies the whole ring (no API gives less).

    Without time_us (PyTorch before 2.2) a full ring cannot be anchored:
    `blind` is set and nothing more is taken from it (the drainer warns)."""

    TAIL = 16
    NEAR_US = 20000

    __slots__ = ("taken", "tail", "tail_times", "mark", "entries", "anchored", "gaps",
                 "restarts", "blind", "clock_went_back")

    def __init__(self):
        self.taken = None  # the ring's length at the last drain (None: none yet)
        self.tail = []  # keys of the last TAIL entries taken, oldest first
        self.tail_times = []  # their time_us (None without times) as they were taken
        self.mark = None  # the newest time_us taken
        self.entries = self.anchored = self.gaps = self.restarts = 0
        self.blind = self.clock_went_back = False

    @staticmethod
    def _time(e):
        return e.get("time_us")

    def _first_after(self, entries, t, strict):
        """Index of the first entry stamped after t (at or after: not strict)."""
        lo, hi = 0, len(entries)
        while lo < hi:
            mid = (lo + hi) // 2
            tm = self._time(entries[mid]) or 0
            if tm > t or (not strict and tm == t):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _continues(self, entries, at, key):
        """Whether entries[at - 1] is the last entry taken (nothing cleared)."""
        if at == 0:
            return not self.tail
        if not self.tail or at > len(entries):
            return False
        e = entries[at - 1]
        if key(e) != self.tail[-1]:
            return False
        then, now = self.tail_times[-1], self._time(e)
        return then is None or now is None or abs(now - then) <= self.NEAR_US

    def _anchor(self, entries, key):
        """Index just after the last entry taken, found by content near the
        mark; None when it is not in the ring any more. Candidates are tried
        outwards from the mark's place in time, and the search stops once
        they lie further from it than the best match's worst time difference
        (a match's score is at least its own distance from the mark): an
        exact match ends it within a few entries."""
        tail, t, n = self.tail, len(self.tail), len(entries)
        mark = self.mark
        centre = self._first_after(entries, mark, strict=False)
        best, best_score = None, self.NEAR_US + 1
        below, above = centre - 1, centre
        while below >= 0 or above < n:
            d_below = mark - (self._time(entries[below]) or 0) if below >= 0 else None
            d_above = (self._time(entries[above]) or 0) - mark if above < n else None
            if d_above is None or (d_below is not None and d_below <= d_above):
                q, distance = below, d_below
                below -= 1
            else:
                q, distance = above, d_above
                above += 1
            if abs(distance) > best_score:
                break
            if key(entries[q]) != tail[-1]:
                continue
            span = min(t, q + 1)  # a wrapped ring keeps only the tail's end
            if any(key(entries[q - j]) != tail[t - 1 - j] for j in range(1, span)):
                continue
            score = max(abs((self._time(entries[q - j]) or 0) - (self.tail_times[t - 1 - j] or 0))
                        for j in range(span))
            if score < best_score or (score == best_score and best is not None and q + 1 > best):
                best, best_score = q + 1, score  # ties: the later one
        return best

    def take(self, entries, ring_size, key):
        """The entries not drained yet, in ring order, and whether some were
        lost (the ring wrapped past what was taken)."""
        n = len(entries)
        if self.blind or n == 0:
            return [], False
        timed = self._time(entries[-1]) is not None
        lost = False
        if self.taken is None:
            start, lost = 0, n >= ring_size  # full at the first look: may have wrapped
        elif n < ring_size and n >= self.taken and self._continues(entries, self.taken, key):
            start = self.taken
        elif not timed or self.mark is None:
            if n < ring_size:  # cleared and refilled: all of it is new
                start = 0
                self.restarts += 1
            else:
                self.blind = True
                return [], True
        else:
            start = self._anchor(entries, key)
            if start is not None:
                self.anchored += 1
            elif n < ring_size:
                start = 0
                self.restarts += 1
            else:
                start = self._first_after(entries, self.mark, strict=True)
                self.gaps += 1
                lost = True
        self.taken = n
        if start >= n:
            return [], lost
        new = entries[start:]
        # The ring's last TAIL entries are the last ones taken, old or new; their times as
        # this snapshot stamps them (the next one re-fits from these).
        last = entries[max(0, n - self.TAIL):]
        self.tail = [key(e) for e in last]
        self.tail_times = [self._time(e) for e in last]
        if timed:
            newest = self._time(entries[-1])
            if self.mark is not None and newest < self.mark - 1000000:
                self.clock_went_back = True
            self.mark = newest if self.mark is None else max(self.mark, newest)
        self.entries += len(new)
        return new, lost


def entry_key(e):
    frames = e.get("frames") or ()
    first = frames[0] if e.get("action") == "user_defined" and frames else None
    return (e.get("action"), e.get("addr"), e.get("size"), e.get("stream"),
            first.get("name") if first else None, first.get("filename") if first else None)


def annotation_key(a):
    return (a.get("stage"), a.get("name"), a.get("device"))


class Interner:
    """Frames and stacks, each numbered once for the whole process; the new
    definitions wait in pending lists until flush()."""

    def __init__(self, depth):
        self.depth = depth
        self.frames = {}  # (name, file, line) -> id
        self.stacks = {}  # tuple of frame ids -> id
        self.new_frames, self.new_stacks = [], []
        self.flushed_frames = self.flushed_stacks = 0

    def stack_of(self, frames, by_object):
        if not frames or self.depth <= 0:
            return 0
        ids = []
        for f in frames[:self.depth]:
            fid = by_object.get(id(f))
            if fid is None:
                key = (f.get("name"), f.get("filename"), f.get("line"))
                fid = self.frames.get(key)
                if fid is None:
                    fid = self.frames[key] = len(self.frames) + 1
                    self.new_frames.append(key)
                by_object[id(f)] = fid
            ids.append(fid)
        key = tuple(ids)
        sid = self.stacks.get(key)
        if sid is None:
            sid = self.stacks[key] = len(self.stacks) + 1
            self.new_stacks.append(key)
        return sid

    def name_of(self, name):
        """A range name as a frame (name, "", 0): its id names the range."""
        key = (name, "", 0)
        fid = self.frames.get(key)
        if fid is None:
            fid = self.frames[key] = len(self.frames) + 1
            self.new_frames.append(key)
        return fid

    def flush(self, lib):
        n = len(self.new_frames)
        if n:
            names = (ctypes.c_char_p * n)(*[_text(k[0]) for k in self.new_frames])
            files = (ctypes.c_char_p * n)(*[_text(k[1]) for k in self.new_frames])
            lines = (ctypes.c_uint32 * n)(*[max(0, min(int(k[2] or 0), 0xFFFFFFFF))
                                             for k in self.new_frames])
            lib.memrec_torch_define_frames(self.flushed_frames + 1, n, names, files, lines)
            self.flushed_frames += n
            self.new_frames = []
        n = len(self.new_stacks)
        if n:
            depths = (ctypes.c_uint32 * n)(*[len(s) for s in self.new_stacks])
            flat = [fid for s in self.new_stacks for fid in s]
            ids = (ctypes.c_uint32 * max(1, len(flat)))(*flat)
            lib.memrec_torch_define_stacks(self.flushed_stacks + 1, n, depths, ids)
            self.flushed_stacks += n
            self.new_stacks = []


def _members(method):
    """A Module's named_parameters/named_buffers as a list, every name of a
    shared tensor included (remove_duplicate=False, PyTorch >= 2.0: tied
    weights are one Parameter under two names); older PyTorch yields each
    tensor once, under its first name."""
    try:
        return list(method(remove_duplicate=False))
    except TypeError:
        return list(method())


def _ref(obj):
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


class TensorNames:
    """Names for the blocks the model's tensors live in, walked at each
    optimizer step (Drainer.name_tensors) and written as marks of domain
    memrec.tensor (TRACE_FORMAT.md, "Tensor names"; rec_torch.h,
    memrec_torch_tensor_names): "<category> <name>[ <count>]" at the
    address of the storage.

    What is named, CUDA tensors only: the root modules' named_parameters and
    named_buffers (category parameter), each parameter's .grad (gradient,
    "<name>.grad") and the stepping optimizer's state[p] tensors
    (optimizer_state, "<name>.<key>": exp_avg, exp_avg_sq; the CPU "step"
    scalar is not on the GPU). Tensors that share a storage (tied weights,
    a DDP bucket's gradient views) make one name, the first one met, with
    their number.

    The root modules: the nn.Modules that own a parameter of an optimizer
    and are no other module's child, found once by a gc walk (the program
    never tells which model it trains) and kept as weak references; found
    again only when an optimizer has a parameter no known module names and
    that no search has found yet (it is then "param_groups.<g>.<i>").

    At an optimizer's first walk every storage is named; later, only those
    whose address is new or whose first tensor is another object than at
    that optimizer's last walk: a gradient that zero_grad(set_to_none=True)
    dropped is a new tensor, often at the same address (the caching
    allocator hands the block back), and a new block to name."""

    def __init__(self, torch):
        self.torch = torch
        self.roots = []  # weak references to the root modules, in the order found
        self.nameless = {}  # id(param) -> weak reference: in no module a search saw
        self.last = weakref.WeakKeyDictionary()  # optimizer -> {address: (ref, text)}
        self.lock = threading.Lock()
        self.broken = False
        self.walks = self.written = self.waited = self.searches = 0
        self.drained_once = False  # the first walk drains whatever the budget says
        # the walks' own budget (DRAIN_SHARE of the time, as the drains'): a walk that cost more
        # than that share of the time since the last one ended (and over WALK_FLOOR) skips
        # this step
        self.last_cost = self.last_end = 0.0
        self.skipped = 0
        self.total = self.longest = 0.0
        nn = getattr(torch, "nn", None)
        self.module_type = getattr(nn, "Module", None)
        self.plain = {t for t in (getattr(torch, "Tensor", None),
                                  getattr(nn, "Parameter", None)) if t is not None}

    # ---- the root modules ----------------------------------------------

    def search(self, wanted):
        """Adds the root modules of the parameters whose ids are in `wanted`."""
        self.searches += 1
        module_type = self.module_type
        if module_type is None:
            return
        # type(), not isinstance(): a proxy's __class__ could run its code
        modules = [o for o in gc.get_objects() if issubclass(type(o), module_type)]
        parents, owners = {}, []
        for m in modules:
            members = getattr(m, "__dict__", None) or {}
            params, children = members.get("_parameters"), members.get("_modules")
            if isinstance(params, dict) and any(id(p) in wanted for p in params.values()):
                owners.append(m)
            if isinstance(children, dict):
                for child in children.values():
                    if child is not None:
                        parents.setdefault(id(child), []).append(m)
        known = {id(r()) for r in self.roots if r() is not None}
        seen, stack = set(), owners[::-1]
        while stack:
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            ups = parents.get(id(m))
            if ups:
                stack.extend(ups)
            elif id(m) not in known:
                ref = _ref(m)
                if ref is not None:
                    self.roots.append(ref)
                    known.add(id(m))

    def walk_modules(self, entries, names, params):
        """Every root's parameters and buffers into entries; names: id(param)
        -> its names; params: (name, param) for the gradients."""
        self.roots = [r for r in self.roots if r() is not None]
        for ref in self.roots:
            root = ref()
            if root is None:
                continue
            for name, p in _members(root.named_parameters):
                entries.append(("parameter", name, p))
                names.setdefault(id(p), []).append(name)
                params.append((name, p))
            for name, b in _members(root.named_buffers):
                entries.append(("parameter", name, b))

    # ---- one walk -------------------------------------------------------

    def address(self, t):
        """The address of a CUDA tensor's storage; 0 for any other (or one
        whose storage cannot be read: a sparse tensor's)."""
        try:
            if type(t) not in self.plain:
                local = getattr(t, "_local_tensor", None)  # a DTensor: this rank's shard
                if local is not None:
                    t = local
            if not t.is_cuda:
                return 0
            return t.untyped_storage().data_ptr() & MASK64
        except Exception:  # noqa: BLE001 - one tensor less, not the walk
            return 0

    def walk(self, optimizer):
        """The names to write now [(address, text)], and what this walk saw
        (for commit once they are written)."""
        tensor_type = self.torch.Tensor
        groups = [list(g["params"]) for g in optimizer.param_groups]
        entries, names, params = [], {}, []
        self.walk_modules(entries, names, params)
        missing = []
        parameter_type = getattr(getattr(self.torch, "nn", None), "Parameter", None)
        for group in groups:
            for p in group:
                if id(p) not in names:
                    # only a Parameter can be a module's (a plain tensor optimized directly,
                    # an input or an adversarial delta, never is): no gc search for it
                    if parameter_type is not None and not isinstance(p, parameter_type):
                        continue
                    known = self.nameless.get(id(p), False)
                    if known is False or (known is not None and known() is not p):
                        missing.append(p)
        if missing:
            self.search({id(p) for p in missing})
            entries, names, params = [], {}, []
            self.walk_modules(entries, names, params)
            for p in missing:
                if id(p) not in names:  # None: no weak reference, known by id only
                    self.nameless[id(p)] = _ref(p)
            self.nameless = {k: r for k, r in self.nameless.items()
                             if r is None or r() is not None}
        for g, group in enumerate(groups):
            for i, p in enumerate(group):
                if id(p) not in names:
                    name = "param_groups.%d.%d" % (g, i)
                    names[id(p)] = [name]
                    entries.append(("parameter", name, p))
                    params.append((name, p))
        for name, p in params:
            try:  # one odd parameter (uninitialized, a subclass) costs its name only
                grad = p.grad
            except Exception:  # noqa: BLE001
                continue
            if grad is not None:
                entries.append(("gradient", name + ".grad", grad))
        state = optimizer.state
        getter = getattr(state, "get", None)
        for group in groups:
            for p in group:
                try:
                    per_param = getter(p) if getter is not None else None
                    # a dict (never truth-test a tensor: that is an .item(), a CUDA sync)
                    if not isinstance(per_param, dict):
                        continue
                    for key, value in per_param.items():
                        if isinstance(value, tensor_type):
                            for name in names[id(p)]:
                                entries.append(("optimizer_state", "%s.%s" % (name, key),
                                                value))
                except Exception:  # noqa: BLE001 - one parameter's state less
                    continue
        # one name per storage: the first tensor's, with their number
        storages = {}  # address -> [category, name, count, first tensor]
        for category, name, t in entries:
            address = self.address(t)
            if not address:
                continue
            s = storages.get(address)
            if s is None:
                storages[address] = [category, name, 1, t]
            else:
                s[2] += 1
        last = self.last.get(optimizer, {})
        changes, seen = [], {}
        for address, (category, name, count, t) in storages.items():
            text = ("%s %s %d" % (category, name, count) if count > 1
                    else "%s %s" % (category, name))
            ref = _ref(t)
            seen[address] = (ref, text)
            before = last.get(address)
            if before is None or before[1] != text or before[0] is None or ref is None or \
                    before[0]() is not t:
                changes.append((address, text))
        return changes, seen

    def commit(self, optimizer, seen):
        try:
            self.last[optimizer] = seen
        except TypeError:  # an optimizer without weak references: every walk names all
            pass

    def write(self, lib, changes):
        """The names through one call; how many were written."""
        n = len(changes)
        addresses = (ctypes.c_uint64 * n)(*[a for a, _ in changes])
        texts = (ctypes.c_char_p * n)(*[t.encode("utf-8", "replace") for _, t in changes])
        return lib.memrec_torch_tensor_names(n, addresses, texts)

    def account(self, cost):
        self.walks += 1
        self.total += cost
        self.last_cost = cost
        self.longest = max(self.longest, cost)


class Drainer:
    """PyTorch's history -> the trace, for one process."""

    def __init__(self, torch, lib):
        self.torch, self.lib = torch, lib
        # PyTorch's own C++ frames only when asked for (MEMREC_TORCH_STACKS=all):
        # its most expensive mode; memrec's native stacks (--stacks) are its own.
        self.stacks = "all" if os.environ.get("MEMREC_TORCH_STACKS") == "all" else "python"
        self.interval = self.base_interval = max(
            0.01, _env_int("MEMREC_TORCH_DRAIN_MS", 1000) / 1000.0)
        self.ring = max(16, _env_int("MEMREC_TORCH_RING", INITIAL_ENTRIES))
        self.interner = Interner(_env_int("MEMREC_STACK_DEPTH", 64))
        self.cursors = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.thread = None
        self.enabled = self.broken = False
        self.devices_described = set()
        self.last_drain = 0.0
        self.drains = 0
        self.emitted = 0
        self.drain_total = self.drain_max = self.drain_last = 0.0
        self.backoffs = 0
        self.floor_us = 0  # the last drain's instant: nothing later is stamped before it
        self.annotation_steps = False  # ProfilerStep#N (or another step name) seen
        self.opt_stepped = set()  # optimizers that stepped in the current step
        self.opt_step = -1  # the optimizer hook's current step (-1: none yet)
        self.settings_marked = None  # the allocator settings last marked
        self.drain_cpu = 0.0  # the last drain's CPU time (a walk's drain waits on it)
        self.names = (None if os.environ.get("MEMREC_TENSOR_NAMES", "").strip() == "0"
                      else TensorNames(torch))

    def warn(self, code, message):
        """One memrec warning, also before CUDA starts when the library is in the process
        already (NVTX's injection loaded it): a warning is never lost for want of it."""
        try:
            lib = self.lib if self.lib is not None else load_library(only_loaded=True)
            if lib is not None:
                lib.memrec_torch_warn(code, message.encode("utf-8", "replace"))
        except Exception:  # noqa: BLE001
            pass

    # ---- turning PyTorch's history on ------------------------------------

    def record(self):
        """Once: calling _record_memory_history again clears the ring in some
        PyTorch versions, so the ring is never resized while it records."""
        kwargs = dict(enabled="all", context="alloc", stacks=self.stacks,
                      max_entries=self.ring)
        try:  # PyTorch >= 2.7 records record_function ranges for every thread
            self.torch.cuda.memory._record_memory_history(global_record_annotations=True,
                                                          **kwargs)
        except TypeError:
            self.torch.cuda.memory._record_memory_history(**kwargs)

    def enable(self):
        """Runs when CUDA initializes (inside torch.cuda._lazy_init: it must
        never raise, or the program's CUDA start would fail)."""
        try:
            if self.enabled or self.broken:
                return
            if self.lib is None:  # CUDA starts now: libmemrec.so is (or may be) here
                self.lib = load_library()
                if self.lib is None:
                    self.broken = True
                    return
            self.record()
            # Nothing PyTorch records from now on is older than now: a clock re-fit never
            # moves an entry before the history began.
            self.floor_us = time.time_ns() // 1000
            self.lib.memrec_torch_history_on()
            self.announce_next_drain(0.0)
            self.enabled = True
            self.thread = threading.Thread(target=self.loop, name="memrec-torch", daemon=True)
            self.thread.start()
        except Exception as e:  # noqa: BLE001
            self.broken = True
            self.warn(WARN_ENABLE, "PyTorch's allocator history could not be turned on "
                      "(%s: %s): its blocks are not recorded" % (type(e).__name__, e))

    def loop(self):
        # Drains every interval, and soon after a step boundary asks for one
        # (request_drain), but never sooner after the last drain than its cost
        # allows (DRAIN_SHARE): a drain holds the GIL and PyTorch's allocator
        # lock, so a fast loop's step boundaries must not each pay for one.
        while not self.stop.is_set():
            self.wake.wait(self.interval)
            self.wake.clear()
            if self.stop.is_set():
                break
            rest = self.last_drain + self.drain_last / DRAIN_SHARE - time.monotonic()
            if rest > 0 and self.stop.wait(min(rest, self.interval)):
                break
            self.drain()

    def request_drain(self):
        self.wake.set()

    # ---- draining ----------------------------------------------------------

    def drain(self):
        """Takes what PyTorch recorded since the last drain into the trace."""
        if not self.enabled or self.broken:
            return
        with self.lock:
            began = time.monotonic()
            cpu = time.thread_time()
            try:
                if not self.lib.memrec_torch_recording():
                    return
                # Everything before this instant is in the snapshot: once it
                # is emitted the writer may write up to here (late lane).
                taken_us = time.time_ns() // 1000
                with _lazy_guard:
                    snapshot = self.torch.cuda.memory._snapshot()
                self.drain_snapshot(snapshot, taken_us)
                self.floor_us = taken_us
                self.lib.memrec_torch_drained(taken_us)
            except Exception as e:  # noqa: BLE001
                self.broken = True
                self.lib.memrec_torch_history_off()  # stop holding the writer back
                self.warn(WARN_DRAIN, "draining PyTorch's allocator history failed (%s: %s): "
                          "its blocks are recorded no further" % (type(e).__name__, e))
            finally:
                self.drain_cpu = time.thread_time() - cpu
                self.account(began, time.monotonic())

    def account(self, began, ended):
        """Drain cost: counted, and the interval backed off while draining
        costs more than DRAIN_SHARE of the wall time between drains."""
        cost = ended - began
        since = ended - self.last_drain if self.last_drain else self.interval
        self.last_drain = ended
        self.drain_last = cost
        self.drain_total += cost
        self.drain_max = max(self.drain_max, cost)
        if cost > DRAIN_SHARE * max(since, 1e-6) and self.interval < MAX_INTERVAL:
            self.interval = min(MAX_INTERVAL, max(self.interval * 2, cost / DRAIN_SHARE))
            self.backoffs += 1
        self.announce_next_drain(cost)

    def announce_next_drain(self, cost):
        """The writer holds newer records back until the next drain is in: tells it when that
        is (the loop's wait, or the budget's after a drain of `cost` s, then the drain itself
        and a second to spare), so entries drained 10 or 30 s apart still land in time order."""
        try:
            if self.lib is not None:
                wait = max(self.interval, cost / DRAIN_SHARE)
                self.lib.memrec_torch_expect_drain(int((wait + cost + 1.0) * 1000))
        except Exception:  # noqa: BLE001
            pass

    def describe_device(self, device):
        """A device's record, the first time this process's history has
        entries on it: a rank that uses one GPU of eight describes one."""
        self.devices_described.add(device)
        try:
            props = self.torch.cuda.get_device_properties(device)
            self.lib.memrec_torch_device(device, int(props.total_memory), _text(props.name))
        except Exception:  # noqa: BLE001 - CUPTI may name the device instead
            pass

    def range_fields(self, t, stage, name, device):
        if is_step_name(name):
            self.annotation_steps = True
        action = {"START": 0x100, "END": 0x101}.get(stage)
        if action is None or not isinstance(name, str):
            return None
        return (t, action, 0, 0, 0, device, self.interner.name_of(name), 0, 0)

    def mark_settings(self, settings):
        """Marks PyTorch's allocator settings when they differ from the last
        ones marked (the first time, and after a run-time change)."""
        conf = settings_conf(settings)
        if conf is None or conf == self.settings_marked:
            return
        if self.lib.memrec_torch_allocator_settings(conf.encode("utf-8", "replace")):
            self.settings_marked = conf

    def drain_snapshot(self, snapshot, now_us=0):
        """now_us: the drain's instant, the time of entries that have none."""
        self.mark_settings(snapshot.get("allocator_settings"))
        pool_of = private_pools(snapshot.get("segments"))
        traces = snapshot.get("device_traces") or []
        merged, most_new = [], 0
        for device, entries in enumerate(traces):
            if not entries:
                continue
            if device not in self.devices_described:
                self.describe_device(device)
            if "time_us" not in entries[-1]:
                self.warn(WARN_NO_TIME, "this PyTorch's history has no time_us: its block "
                          "events carry the time of the drain that took them")
            cursor = self.cursors.setdefault(device, Cursor())
            new, lost = cursor.take(entries, self.ring, entry_key)
            if cursor.blind:
                self.warn(WARN_BLIND, "this PyTorch's history has no time_us and its ring "
                          "is full: its block events are recorded no further (set "
                          "MEMREC_TORCH_RING higher)")
                lost = False
            if cursor.clock_went_back:
                self.warn(WARN_CLOCK, "the wall clock went back while recording: PyTorch's "
                          "history is stamped with it, so some of its block events may be "
                          "missing or misplaced")
            if lost:
                self.warn(WARN_LOST, "PyTorch's history wrapped between two drains: some "
                          "block events are missing (set MEMREC_TORCH_DRAIN_MS lower or "
                          "MEMREC_TORCH_RING higher)")
            most_new = max(most_new, len(new))
            merged.extend((e.get("time_us", now_us), device, i, e) for i, e in enumerate(new))
        annotations = snapshot.get("external_annotations") or []
        if annotations:
            # A ring of the history's size too (recordHistory sets both and clears this one).
            cursor = self.cursors.setdefault("annotations", Cursor())
            new, _ = cursor.take(annotations, self.ring, annotation_key)
            merged.extend((a.get("time_us", now_us), -1, i, a) for i, a in enumerate(new))
        merged.sort(key=lambda item: (item[0], item[1], item[2]))
        fields = array.array("Q")
        by_object = {}  # id(frame dict) -> frame id, valid while `snapshot` lives
        stack_of = self.interner.stack_of
        floor = self.floor_us
        for t, device, _, e in merged:
            t = max(t, floor)  # a re-fit clock never moves an entry before the last drain
            if device < 0:
                row = self.range_fields(t, e.get("stage"), e.get("name"),
                                        max(0, e.get("device") or 0))
            elif e.get("action") == "user_defined":
                frames = e.get("frames") or [{}]
                row = self.range_fields(t, frames[0].get("name"), frames[0].get("filename"),
                                        device)
            else:
                action = ACTIONS.get(e.get("action"))
                addr = (e.get("addr") or 0) & MASK64
                row = None if action is None else (
                    t & MASK64, action, addr,
                    (e.get("size") or 0) & MASK64, (e.get("stream") or 0) & MASK64,
                    device, stack_of(e.get("frames"), by_object),
                    (e.get("device_free") or 0) & MASK64,
                    pool_of(device, addr) if pool_of else 0)
            if row is not None:
                fields.extend(row)
        self.interner.flush(self.lib)
        count = len(fields) // FIELDS
        if count:
            address, _ = fields.buffer_info()
            self.emitted += self.lib.memrec_torch_emit(address, count)
        self.drains += 1
        # The ring is never resized: the interval follows the observed rate
        # instead, so a drain finds the ring at most half full.
        if most_new * 2 > self.ring and self.interval > 0.01:
            self.interval = max(0.01, self.interval / 2)

    # ---- steps from the optimizer ----------------------------------------

    def optimizer_stepped(self, optimizer, args, kwargs):
        """torch.optim's global step post-hook: first the tensor names (at
        every step, whoever marks the steps), then the steps: an iteration
        ends when an optimizer that already stepped in the current step
        steps again (a GAN's two optimizers make one step). Silent for the
        whole run once the program marks steps itself (NVTX, memrec.h: the
        library knows) or PyTorch's annotations carry them (ProfilerStep#N)."""
        if compiling(self.torch):
            return  # inside torch.compile's tracing: gc, ctypes and locks would break its graph
        walked = self.name_tensors(optimizer)
        try:
            if not self.enabled or self.broken or self.annotation_steps:
                return
            key = id(optimizer)
            if self.opt_step < 0:
                # The first step: one drain here (the names' may have been it), so a
                # profiler's ProfilerStep#0 (drained, not seen live) takes precedence
                # from the start.
                if walked != DRAINED:
                    self.drain()
                if self.annotation_steps or self.lib.memrec_torch_program_steps():
                    return
                if self.lib.memrec_torch_optimizer_step(-1, 0):
                    self.opt_step, self.opt_stepped = 0, {key}
                return
            if key not in self.opt_stepped:
                self.opt_stepped.add(key)
                return
            if self.lib.memrec_torch_optimizer_step(self.opt_step, self.opt_step + 1):
                self.opt_step += 1
                self.opt_stepped = {key}
                # The names' drain just took everything before the marker; names that
                # wait for the drains' budget get the next drain the budget allows.
                if walked is None:
                    self.request_drain()
        except Exception:  # noqa: BLE001 - never break the training loop
            pass

    def name_tensors(self, optimizer):
        """The tensor walk at an optimizer step (TensorNames): when it has
        names to write, PyTorch's history is drained first, so the blocks
        they name are in the trace before them (the marks are stamped now,
        after the drain's entries). That drain waits while drains cost more
        than DRAIN_SHARE (the last one's CPU time against the time since):
        the names then wait for a later walk, which finds them again. Any
        failure: one warning, and no more names. Returns DRAINED when it
        drained, WAITED when its names wait for the budget, else None."""
        names = self.names
        if names is None or names.broken or not self.enabled or self.broken or \
                self.lib is None or not hasattr(self.lib, "memrec_torch_tensor_names"):
            return None
        try:
            if not self.lib.memrec_torch_recording():
                return None
        except Exception:  # noqa: BLE001
            return None
        now = time.monotonic()
        if names.walks and names.last_cost > max(WALK_FLOOR, DRAIN_SHARE * (now - names.last_end)):
            names.skipped += 1  # walks cost too much of the time: this step's names later
            return None
        if not names.lock.acquire(blocking=False):  # another thread's optimizer walks
            return None
        began = time.perf_counter()
        outcome, drain_cost = None, 0.0
        try:
            changes, seen = names.walk(optimizer)
            if not changes:
                names.commit(optimizer, seen)
            elif not names.drained_once or \
                    self.drain_cpu <= DRAIN_SHARE * (time.monotonic() - self.last_drain):
                start = time.perf_counter()
                self.drain()
                drain_cost, outcome = time.perf_counter() - start, DRAINED
                names.drained_once = True
                if not self.broken:  # else its late lane is closed: nothing to bind to
                    names.written += names.write(self.lib, changes)
                    names.commit(optimizer, seen)
            else:
                names.waited += 1
                outcome = WAITED
        except Exception as e:  # noqa: BLE001 - never break the training loop
            names.broken = True
            self.warn(WARN_NAMES, "naming the model's tensors failed (%s: %s): no more tensor "
                      "names are recorded" % (type(e).__name__, e))
        finally:
            names.account(time.perf_counter() - began - drain_cost)
            names.last_end = time.monotonic()
            names.lock.release()
        return outcome

    def report(self):
        if not self.drains or self.lib is None:
            return
        cursors = self.cursors.values()
        text = ("PyTorch history: %d drains, %.1f ms in all, %.1f ms at most; %d entries taken, "
                "%d drains of a full ring found their place by content, %d gaps"
                % (self.drains, self.drain_total * 1e3, self.drain_max * 1e3,
                   sum(c.entries for c in cursors), sum(c.anchored for c in cursors),
                   sum(c.gaps for c in cursors)))
        restarts = sum(c.restarts for c in cursors)
        if restarts:
            text += "; the history restarted %d times" % restarts
        if self.backoffs:
            text += "; drains cost over %d%% of the time: interval backed off to %d ms" % (
                round(DRAIN_SHARE * 100), round(self.interval * 1000))
        names = self.names
        if names is not None and names.walks:
            text += ("; tensor names: %d walks, %.1f ms in all, %.1f ms at most, %d names"
                     % (names.walks, names.total * 1e3, names.longest * 1e3, names.written))
            if names.waited:
                text += ", %d walks waited for a drain" % names.waited
            if names.skipped:
                text += ", %d steps skipped (walks over %d%% of the time)" % (
                    names.skipped, round(DRAIN_SHARE * 100))
        try:
            self.lib.memrec_torch_report(text.encode())
        except Exception:  # noqa: BLE001
            pass

    # ---- steps, exit, fork --------------------------------------------------

    def patch_nvtx(self, nvtx):
        """Asks for a drain at every step boundary the program marks with NVTX
        (the late lane keeps the trace in time order whenever it happens)."""
        drain, local = self.request_drain, threading.local()
        open_ranges = {}

        def wrap(name, before):
            original = getattr(nvtx, name, None)
            if original is None:
                return

            @functools.wraps(original)
            def wrapper(*args, **kwargs):
                try:
                    if before(args, kwargs):
                        drain()
                except Exception:  # noqa: BLE001
                    pass
                result = original(*args, **kwargs)
                if name == "range_start" and args and is_step_name(args[0]):
                    open_ranges[result] = True
                return result
            setattr(nvtx, name, wrapper)

        def push(args, kwargs):
            msg = args[0] if args else kwargs.get("msg")
            local.__dict__.setdefault("names", []).append(msg)
            return is_step_name(msg)

        def pop(args, kwargs):
            names = local.__dict__.get("names")
            return bool(names) and is_step_name(names.pop())

        wrap("range_push", push)
        wrap("range_pop", pop)
        wrap("mark", lambda a, k: is_step_name(a[0] if a else k.get("msg")))
        wrap("range_start", lambda a, k: is_step_name(a[0] if a else k.get("msg")))
        wrap("range_end", lambda a, k: bool(a) and open_ranges.pop(a[0], False))

    def watch_history_switch(self, memory):
        """Warns when the program itself turns PyTorch's history off."""
        original = getattr(memory, "_record_memory_history", None)
        if original is None:
            return

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            enabled = args[0] if args else kwargs.get("enabled", "all")
            if self.enabled and enabled in (None, False):
                self.drain()
                self.lib.memrec_torch_history_off()  # stop holding the writer back
                self.warn(WARN_DISABLED, "the program turned PyTorch's allocator history off: "
                          "its blocks are recorded no further")
            elif self.enabled:
                # The program restarts the history (its own snapshot code, say): what was
                # recorded so far is taken first, as the call may clear the ring, and the
                # cursors then know the ring's new size.
                self.drain()
                size = args[3] if len(args) > 3 else kwargs.get("max_entries")
                if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                    self.ring = size
            return original(*args, **kwargs)
        memory._record_memory_history = wrapper

    def watch_settings(self, memory):
        """A run-time _set_allocator_settings call: a drain soon after marks
        the settings it leaves in force."""
        original = getattr(memory, "_set_allocator_settings", None)
        if original is None:
            return

        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            result = original(*args, **kwargs)
            self.request_drain()
            return result
        memory._set_allocator_settings = wrapper

    def at_exit(self):
        self.stop.set()
        self.wake.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=10)
        self.drain()
        self.report()

    def after_fork_in_child(self):
        """The child records nothing of ours (libmemrec stops there too)."""
        self.lock = threading.Lock()
        self.thread = None
        self.enabled = False


_drainer = None


def drainer():
    """The process's Drainer (None until torch was imported under memrec)."""
    return _drainer


class LazyImportGuard:
    """Keeps PyTorch's snapshot from importing torch's lazy modules.

    _snapshot() turns the history's Python frames into dicts in C++, and looks for
    torch._inductor there (py::hasattr(torch, "_inductor"), then its codecache: the frames
    of inductor-generated code; torch/csrc/profiler/python/combined_traceback.cpp,
    appendSymbolized). torch's module __getattr__ imports its lazy modules (_dynamo,
    _inductor, ...: torch/__init__.py's _lazy_modules) at such a lookup. So a drain
    imported torch._inductor, and with it torch._dynamo, into programs that never import
    them, on the drain's thread, and while the program's own thread was importing
    torch._dynamo (AdamW's first call does) the two imports met in the middle: CPython's
    import locks handed the program a torch._inductor.utils that the drain's import had
    given up, and the program died ("cannot import name 'IndentedBuffer' from
    'torch._inductor.utils'"; every torch run on the H200 machine of 2026-12-04, torch
    2.11, with the first drain taking 3.3 s).

    While a drain takes its snapshot (`with guard:`), torch's __getattr__ refuses that one
    name on that thread (AttributeError, as for a name torch lacks) and hands every other to
    torch's own (a finalizer the collector runs meanwhile may look up torch._dynamo). A
    torch._inductor not imported yet has run no code, so no frame of its could be missed;
    once imported it is an attribute of torch and __getattr__ is not asked. Other threads,
    and the drain's thread outside the snapshot, are unaffected. A drain runs on whichever
    thread asks for it (memrec's, or the program's at a step boundary or an optimizer step)."""

    REFUSED = "_inductor"  # what PyTorch's C++ looks up (appendSymbolized)

    def __init__(self):
        self.local = threading.local()

    def install(self, torch):
        """Wraps torch's module __getattr__ (where it has one: PyTorch >= 2.0)."""
        original = getattr(torch, "__dict__", {}).get("__getattr__")
        if not callable(original) or getattr(original, "_memrec_lazy_guard", False):
            return
        local = self.local

        refused = self.REFUSED

        @functools.wraps(original)
        def __getattr__(name):
            if name == refused and getattr(local, "depth", 0) > 0:
                raise AttributeError("module 'torch' has no attribute %r" % (name,))
            return original(name)
        __getattr__._memrec_lazy_guard = True
        torch.__getattr__ = __getattr__

    def __enter__(self):
        self.local.depth = getattr(self.local, "depth", 0) + 1

    def __exit__(self, *exc):
        self.local.depth -= 1


_lazy_guard = LazyImportGuard()


def compiling(torch):
    """Whether torch.compile (Dynamo) is tracing the code that calls us. torch.compiler
    .is_compiling (2.3+), else torch._dynamo's, only if Dynamo was ever imported (touching
    torch._dynamo would import it)."""
    check = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if check is None:
        check = getattr(sys.modules.get("torch._dynamo"), "is_compiling", None)
    try:
        return bool(check()) if check is not None else False
    except Exception:  # noqa: BLE001
        return False


def optimizer_module():
    """torch.optim.optimizer, where the global step hooks live. Not an attribute of
    torch.optim: its __init__.py ends with `del optimizer`, so the module is found in
    sys.modules (torch imports it with torch.optim)."""
    module = sys.modules.get("torch.optim.optimizer")
    if module is None:
        try:
            module = importlib.import_module("torch.optim.optimizer")
        except Exception:  # noqa: BLE001 - no optimizer hooks, nothing else lost
            return None
    return module


class ProfilerGuard:
    """PyTorch's profiler with Python stacks (torch.profiler.profile or
    torch.autograd.profiler.profile with with_stack=True) installs a Python
    tracer of its own that fails with PyTorch's internal assert when another
    profile function was attached ("Python replay stack is empty": its known
    bug with any profile hook; pytorch/pytorch#101632), and clears every
    thread's profile function when it stops. Where memrec's Python frames
    come from a profile function (before CPython 3.12, or a 3.12+ fallback;
    rec_python.h), its hook steps aside while such a profiler runs: detached
    before the profiler's trace starts, attached again after it ends (on
    this thread and those started later: threads already running stay
    without Python frames), and a warning says so once. Events recorded
    meanwhile have native stacks. From 3.12 memrec holds a sys.monitoring
    tool instead and reads frames itself: nothing to step aside for.

    Both profilers start their trace in torch.autograd.profiler.profile
    (_start_trace, or __enter__ in older PyTorch) and end it in its
    __exit__, so those two methods are wrapped."""

    def __init__(self):
        self.aside = 0  # profilers with stacks running now
        self.lib = None

    def hook_library(self):
        """libmemrec.so's attach/detach, called with the GIL held (PyDLL)."""
        if self.lib is None:
            path = injected_library_path()
            try:
                lib = ctypes.PyDLL(path or "libmemrec.so", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
                lib.memrec_python_detach.restype = ctypes.c_int
                lib.memrec_python_attach.restype = ctypes.c_int
                self.lib = lib
            except (OSError, AttributeError):
                return None
        return self.lib

    @staticmethod
    def hook_is_profile_function():
        """Whether memrec's frames come from a profile function, which is what PyTorch's
        tracer fails with: before CPython 3.12 always; from 3.12 memrec holds a
        sys.monitoring tool instead (rec_python_monitor.c), unless it fell back."""
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is None:
            return True
        return not any(monitoring.get_tool(i) == "memrec" for i in range(6))

    def starting(self, prof, warn):
        if not getattr(prof, "with_stack", False) or getattr(prof, "enabled", True) is False:
            return
        if not self.aside and not self.hook_is_profile_function():
            return
        lib = self.hook_library()
        if lib is None or getattr(prof, "_memrec_aside", False):
            return
        if self.aside or lib.memrec_python_detach() == 0:
            self.aside += 1
            prof._memrec_aside = True
            warn(WARN_PROFILER, "a PyTorch profiler records Python stacks (with_stack=True): "
                 "memrec's Python frames step aside while it runs (PyTorch's profiler fails "
                 "with another profile hook); memrec's events then have native stacks")

    def ended(self, prof):
        if not getattr(prof, "_memrec_aside", False):
            return
        prof._memrec_aside = False
        self.aside -= 1
        if self.aside == 0 and self.lib is not None:
            self.lib.memrec_python_attach()

    def watch(self, warn):
        profiler = sys.modules.get("torch.autograd.profiler")
        cls = getattr(profiler, "profile", None)
        if cls is None:
            return
        start_name = "_start_trace" if hasattr(cls, "_start_trace") else "__enter__"
        start, end = getattr(cls, start_name, None), getattr(cls, "__exit__", None)
        if start is None or end is None:
            return
        guard = self

        @functools.wraps(start)
        def start_wrapper(prof, *args, **kwargs):
            try:
                guard.starting(prof, warn)
            except Exception:  # noqa: BLE001 - never in the program's way
                pass
            return start(prof, *args, **kwargs)

        @functools.wraps(end)
        def end_wrapper(prof, *args, **kwargs):
            try:
                return end(prof, *args, **kwargs)
            finally:
                try:
                    guard.ended(prof)
                except Exception:  # noqa: BLE001
                    pass
        setattr(cls, start_name, start_wrapper)
        cls.__exit__ = end_wrapper


def torch_imported(torch):
    """Sets everything up once torch is imported."""
    global _drainer
    if _drainer is not None:
        return
    d = _drainer = Drainer(torch, None)  # the library comes with CUDA (enable)
    _lazy_guard.install(torch)
    cuda = torch.cuda
    d.patch_nvtx(cuda.nvtx)
    d.watch_history_switch(cuda.memory)
    d.watch_settings(cuda.memory)
    ProfilerGuard().watch(d.warn)
    register = getattr(optimizer_module(), "register_optimizer_step_post_hook", None)
    if register is not None:  # torch >= 2.0
        register(d.optimizer_stepped)
    atexit.register(d.at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=d.after_fork_in_child)
    if cuda.is_initialized():
        d.enable()
    else:
        cuda._lazy_call(d.enable)


class TorchImportWatcher:
    """A one-shot meta-path finder: lets the real finders find torch, then
    runs torch_imported right after torch's own module code."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = importlib.util.find_spec("torch")
        loader = getattr(spec, "loader", None)
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec

        def exec_module(module):
            original(module)
            try:
                torch_imported(module)
            except Exception:  # noqa: BLE001 - never break `import torch`
                pass
        loader.exec_module = exec_module
        return spec


def install():
    """Called by memrec's sitecustomize at interpreter start."""
    if "torch" in sys.modules:
        torch_imported(sys.modules["torch"])
    elif not any(isinstance(f, TorchImportWatcher) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchImportWatcher())


def step_begin(step):
    """For programs that mark steps with memrec.h from Python: drains, then
    memrec_step_begin(step)."""
    d = _drainer
    if d is not None and d.lib is not None:
        d.drain()
        d.lib.memrec_step_begin(ctypes.c_int64(step))
