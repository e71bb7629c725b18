"""torch.cuda.memory of the fake torch: the allocator's history ring."""
import time

_enabled = False
_max_entries = 1
_ring = []
_next = 0
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


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=1 << 62,
                           device=None):
    global _enabled, _max_entries, _next
    settings.append((enabled, context, stacks, max_entries))
    _enabled = enabled is not None and enabled is not False
    _max_entries = max(1, max_entries)
    if not _enabled:
        del _ring[:]
        _next = 0


def _time_us():
    """Unix time in us, rounded down to 100 us: many entries share a time (as
    fast allocations do in PyTorch's coarser clock, which never stamps an
    entry later than it happened). The test's program leaves more than that
    between a step marker and the next allocation, so rounding never moves
    an entry across a step boundary."""
    return time.time_ns() // 100000 * 100


def _record(action, addr, size, stream, frames, device_free=None):
    global _next
    if not _enabled:
        return
    entry = {"action": action, "addr": addr, "size": size, "stream": stream,
             "time_us": _time_us(), "frames": frames}
    if device_free is not None:
        entry["device_free"] = device_free
    if len(_ring) < _max_entries:
        _ring.append(entry)
    else:
        _ring[_next] = entry
        _next = (_next + 1) % _max_entries


def _snapshot(device=None):
    if len(_ring) < _max_entries:
        trace = list(_ring)
    else:
        trace = _ring[_next:] + _ring[:_next]
    traces = [[] for _ in range(max(fake_devices, fake_device + 1))]
    traces[fake_device] = [dict(e) for e in trace]
    return {"segments": [], "device_traces": traces}
