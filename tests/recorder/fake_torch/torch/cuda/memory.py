"""torch.cuda.memory of the fake torch: the allocator's history ring, and
its configuration as AllocatorConfig keeps it (c10/core/AllocatorConfig.cpp).

The rings behave as PyTorch's (c10's RingBuffer, CUDACachingAllocator.cpp,
read in PyTorch 2.x's source): a vector that grows to max_entries, then
overwrites its oldest entry, listed oldest first by _snapshot() (_RingBuffer);
the annotations (record_function ranges) have a ring of their own of the
same max_entries, which every _record_memory_history call clears (the older
PyTorch this fake follows clears the history ring too). Each snapshot
re-fits the TSC->wall clock, so the same entry's time_us moves by a few us
between snapshots (`_refits`)."""
import os
import time

_enabled = False
_max_entries = 1
_context = None  # what _record_memory_history's context was: None records no frames


class _RingBuffer:
    """c10's RingBuffer: insertEntries appends until max_entries, then
    overwrites the oldest (`next`); getEntries lists the oldest first."""

    def __init__(self):
        self.items, self.next = [], 0

    def insert(self, entry):
        if len(self.items) < _max_entries:
            self.items.append(entry)
        else:
            self.items[self.next] = entry
            self.next = (self.next + 1) % _max_entries

    def entries(self):
        return self.items[self.next:] + self.items[:self.next]


_rings = {}  # device -> its history's _RingBuffer
_frame_cache = {}
settings = []  # every _record_memory_history call, for the tests
fake_devices = 1  # how many GPUs the fake has; a script may raise it
fake_device = 0  # the one its history's entries are on


def _frame(filename, line, name):
    key = (filename, line, name)
    f = _frame_cache.get(key)
    if f is None:
        f = _frame_cache[key] = {"filename": filename, "line": line, "name": name}
    return f


_annotations = _RingBuffer()
_segments = []  # the segments made, never freed (a cache): snapshot()'s `segments`
_record_annotations = False
fake_legacy_annotations = False  # PyTorch 2.4-2.6: user_defined entries instead
_refits = (0, 3, -2, 1)  # us each snapshot's clock re-fit moves time_us by
_snapshots = 0


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=1 << 62,
                           device=None, clear_history=False, compile_context=False,
                           global_record_annotations=False, skip_actions=None):
    global _enabled, _max_entries, _record_annotations, _annotations, _context
    settings.append((enabled, context, stacks, max_entries))
    _enabled = enabled is not None and enabled is not False
    _record_annotations = bool(global_record_annotations)
    _context = context
    _max_entries = max(1, max_entries)
    _rings.clear()  # older PyTorch: a new call starts a new history
    _annotations = _RingBuffer()  # every PyTorch: annotation_buffer.clear()


def _annotate(stage, name):
    """A record_function range's START or END (torch.cuda.fake_range)."""
    if not _enabled:
        return
    if fake_legacy_annotations:
        _record("user_defined", 0, 0, 0, [{"name": stage, "filename": name, "line": 0}])
    elif _record_annotations:
        _annotations.insert({"device": fake_device, "stage": stage, "name": name,
                             "time_us": _time_us()})


def _time_us():
    """Unix time in us, rounded down to 100 us: many entries share a time (as
    fast allocations do in PyTorch's coarser clock, which never stamps an
    entry later than it happened). The test's program leaves more than that
    between a step marker and the next allocation, so rounding never moves
    an entry across a step boundary."""
    return time.time_ns() // 100000 * 100


def _record(action, addr, size, stream, frames, device_free=None):
    if not _enabled:
        return
    entry = {"action": action, "addr": addr, "size": size, "stream": stream,
             "time_us": _time_us(), "frames": frames}
    if device_free is not None:
        entry["device_free"] = device_free
    _insert(fake_device, entry)


def _insert(device, entry):
    _rings.setdefault(device, _RingBuffer()).insert(entry)


# ---- a real snapshot's history, played back as this process's (tests/recorder/
# test_rec_torch_snapshots.py): fake_replay() takes each device's entries (a real
# snapshot's device_traces, what was live before it began put first as entries of its own),
# fake_reveal(n) records the next n of each device into the rings as the allocator would
# have, with their own time_us moved so that the last of them lies before now.
_replay = {}  # device -> [entries, how many revealed]
_replay_shift = 0


def fake_replay(traces, annotations=()):
    global _replay_shift, fake_devices
    _replay.clear()
    last = 0
    for device, entries in traces.items():
        _replay[device] = [entries, 0]
        last = max([last] + [e["time_us"] for e in entries[-1:] if "time_us" in e])
    fake_devices = max([fake_devices] + [d + 1 for d in traces])
    _replay_shift = time.time_ns() // 1000 - 1000000 - last  # all of it a second ago


def fake_reveal(n):
    """The next n entries of each device's history happen now; returns how many did."""
    done = 0
    for device, state in sorted(_replay.items()):
        entries, at = state
        for e in entries[at:at + n]:
            if _enabled:
                _insert(device, dict(e, time_us=e["time_us"] + _replay_shift) if "time_us" in e
                        else dict(e))
            done += 1
        state[1] = min(len(entries), at + n)
    return done


# AllocatorConfig: the values the allocator runs with. parseArgs (the
# environment at start, then every _set_allocator_settings call) first resets
# max_split_size, roundup_power2_divisions and garbage_collection_threshold to
# their defaults, keeps the rest (expandable_segments), then applies the keys
# the text names, and remembers the text as last_allocator_settings. The
# fake parses the keys its tests use.
_config = {"expandable_segments": False, "max_split_size": -1,
           "garbage_collection_threshold": 0.0, "roundup": [0] * 16, "last": ""}


def _parse_allocator_settings(text):
    _config.update(max_split_size=-1, garbage_collection_threshold=0.0, roundup=[0] * 16,
                   last=text)
    for item in filter(None, text.replace(" ", "").split(",")):
        key, _, value = item.partition(":")
        if key == "expandable_segments":
            _config["expandable_segments"] = value == "True"
        elif key == "max_split_size_mb":
            _config["max_split_size"] = int(value) << 20
        elif key == "garbage_collection_threshold":
            _config["garbage_collection_threshold"] = float(value)
        elif key == "roundup_power2_divisions":
            _config["roundup"] = [int(value)] * 16
        else:
            raise RuntimeError("Unrecognized key '%s' in CUDA allocator config." % key)


def _set_allocator_settings(env):
    _parse_allocator_settings(env)


_parse_allocator_settings(os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))


def _allocator_settings():
    """The snapshot's allocator_settings, keyed and typed as PyTorch's."""
    return {"PYTORCH_CUDA_ALLOC_CONF": _config["last"],
            "max_split_size": _config["max_split_size"],
            "garbage_collection_threshold": _config["garbage_collection_threshold"],
            "expandable_segments": _config["expandable_segments"],
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << i): d for i, d in enumerate(_config["roundup"])}}


def _symbolize_python_frames():
    """What PyTorch's C++ does before it turns the history's Python frames into dicts
    (torch/csrc/profiler/python/combined_traceback.cpp, PythonTraceback::appendSymbolized,
    read in PyTorch 2.x's source): py::hasattr(torch, "_inductor"), then
    hasattr(torch._inductor, "codecache"), to add the frames of inductor-generated code.
    torch's lazy __getattr__ imports torch._inductor on that lookup, on the thread that
    takes the snapshot (the H200 run of 2026-12-04, torch 2.11: memrec's drain thread
    imported it while the program imported torch._dynamo, and the program's import
    failed). py::hasattr is PyObject_HasAttr: any error is taken for False."""
    import torch
    try:
        inductor = torch._inductor if hasattr(torch, "_inductor") else None
        if inductor is not None and hasattr(inductor, "codecache"):
            inductor.codecache.PyCodeCache.stack_frames_for_code("", 0)
    except Exception:  # noqa: BLE001 - as PyObject_HasAttr
        pass


def _snapshot(device=None):
    global _snapshots
    if _context is not None and any(e.get("frames") for r in _rings.values()
                                    for e in r.entries()):
        _symbolize_python_frames()
    shift = _refits[_snapshots % len(_refits)]
    _snapshots += 1
    traces = [[] for _ in range(max([fake_devices, fake_device + 1] + [d + 1 for d in _rings]))]
    for device, ring in _rings.items():
        traces[device] = [dict(e, time_us=e["time_us"] + shift) if "time_us" in e else dict(e)
                          for e in ring.entries()]
    return {"segments": [dict(s) for s in _segments], "device_traces": traces, "allocator_settings": _allocator_settings(),
            "external_annotations": [dict(a, time_us=a["time_us"] + shift)
                                     for a in _annotations.entries()]}
