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
  - torch.optim: Optimizer, SGD, register_optimizer_step_post_hook;
  - annotations (record_function ranges): external_annotations entries
    {device, stage START|END, name, time_us} when the history records them
    (global_record_annotations), or, with memory.fake_legacy_annotations,
    PyTorch 2.4-2.6's user_defined history entries (one frame: name
    START|END, filename the range name, line 0);
  - the clock re-fit: each _snapshot re-fits PyTorch's TSC->wall clock, so
    every time_us of a snapshot moves by a few microseconds (a cycle here);
  - a second _record_memory_history call clears the ring (older PyTorch).
time_us is rounded up to 100 us here, so many entries share a time.
"""
from . import cuda, optim  # noqa: F401
