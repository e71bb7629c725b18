"""A stand-in for PyTorch, for memrec's tests on machines without torch or a
GPU (tests/recorder/test_rec_torch.py). It has only the surface
recorder/python/memrec_torch.py uses, with PyTorch's semantics where they
matter to it:

  - torch.cuda: is_initialized, _lazy_call (queued until CUDA "initializes"
    at the first allocation, as torch.cuda._lazy_init runs them),
    get_device_properties, nvtx (range_push/range_pop/mark; a step name
    reaches the recorder as memrec_mark, as NVTX would);
  - torch.cuda.memory: _record_memory_history(enabled, context, stacks,
    max_entries) keeping a ring exactly as the caching allocator's
    alloc_trace (append until full, then overwrite; resizing keeps the
    vector, so its order breaks as PyTorch's does), and _snapshot() with
    device_traces entries (action, addr, size, stream, time_us, frames
    innermost first, frame dicts shared between entries as PyTorch's are);
  - a fake allocator the test scripts call (torch.cuda.fake_alloc/free,
    fake_oom) that makes PyTorch's entries: a new segment per block,
    sized as the caching allocator would (2 MiB small, 20 MiB large).
time_us is rounded up to 100 us here, so many entries share a time.
"""
from . import cuda  # noqa: F401
