"""torch.cuda of the fake torch (see torch/__init__.py)."""
import bisect
import sys

from . import memory, nvtx  # noqa: F401

_initialized = False
_queued = []


def is_initialized():
    return _initialized


def _lazy_call(callable, **kwargs):
    if _initialized:
        callable()
    else:
        _queued.append(callable)


def _lazy_init():
    global _initialized
    if _initialized:
        return
    _initialized = True
    for fn in _queued:
        fn()
    del _queued[:]


class _Properties:
    name = "Fake GPU"
    total_memory = 16 << 30


def get_device_properties(device):
    return _Properties()


def device_count():
    return memory.fake_devices


def _frames(skip):
    """The caller's Python stack, innermost first, as PyTorch lists it."""
    out, f = [], sys._getframe(skip)
    while f is not None:
        out.append(memory._frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return out


_next_address = 0x7f0000000000
_blocks = {}  # addr -> (requested, stream)


def _segment_size(requested):
    rounded = max(512, (requested + 511) // 512 * 512)
    if rounded <= (1 << 20):
        return 2 << 20
    if rounded < (10 << 20):
        return 20 << 20
    return (rounded + (2 << 20) - 1) // (2 << 20) * (2 << 20)


fake_pool = (0, 0)  # the pool new segments go to: (0, 0), or a private pool (a CUDA graph's)


def fake_alloc(requested, stream=0):
    """A block in a new segment; returns its address."""
    _lazy_init()
    return _new_segment_block(requested, stream, _frames(2))


def _new_segment_block(requested, stream, frames):
    global _next_address
    seg = _segment_size(requested)
    addr = _next_address
    _next_address += seg
    memory._record("segment_alloc", addr, seg, stream, frames)
    memory._segments.append({"device": memory.fake_device, "address": addr, "total_size": seg,
                             "stream": stream, "segment_pool_id": fake_pool,
                             "segment_type": "large" if seg > (2 << 20) else "small",
                             "is_expandable": False, "blocks": []})
    memory._record("alloc", addr, requested, stream, frames)
    _blocks[addr] = (requested, stream)
    return addr


def fake_free(addr, stream_use=False):
    """Frees a block (with free_requested first when another stream used it)."""
    requested, stream = _blocks.pop(addr)
    frames = _frames(2)
    if stream_use:
        memory._record("free_requested", addr, requested, stream, frames)
    memory._record("free_completed", addr, requested, stream, frames)


# The caching allocator's reuse, for tensors (torch.empty & co, _tensor.py): a freed
# tensor's block stays in its segment, cached, and the next request of the same rounded
# size takes the cached block of the lowest address (CUDACachingAllocator's BlockComparator
# orders free blocks by stream, size, then address), so a gradient freed by zero_grad and
# made again by the next backward gets its old address back. fake_alloc/fake_free above
# keep a segment per block, as the older tests expect.
_cached = {}  # rounded size -> ascending addresses of cached free blocks


def _rounded(requested):
    return max(512, (requested + 511) // 512 * 512)


def caching_alloc(requested, stream=0):
    """A tensor's block: a cached one of its rounded size, else one in a new segment."""
    _lazy_init()
    frames = _frames(2)
    free = _cached.get(_rounded(requested))
    if not free:
        return _new_segment_block(requested, stream, frames)
    addr = free.pop(0)
    memory._record("alloc", addr, requested, stream, frames)
    _blocks[addr] = (requested, stream)
    return addr


def caching_free(addr):
    """A tensor's storage died: its block is freed and cached for reuse."""
    requested, stream = _blocks.pop(addr)
    memory._record("free_completed", addr, requested, stream, _frames(2))
    bisect.insort(_cached.setdefault(_rounded(requested), []), addr)


def fake_oom(requested, device_free):
    memory._record("oom", 0, requested, 0, _frames(2), device_free=device_free)


def fake_range(name, stage):
    """A record_function range's START or END, as the allocator records it."""
    memory._annotate(stage, name)
