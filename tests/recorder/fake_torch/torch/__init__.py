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
  - torch.optim: Optimizer (param_groups, state, zero_grad), SGD, AdamW
    (its state at the first step), register_optimizer_step_post_hook;
  - tensors (_tensor.py: Tensor, UntypedStorage, device, dtypes, empty &
    co): a CUDA tensor's storage takes a block from a caching allocator
    (torch.cuda.caching_alloc: the lowest cached free block of its rounded
    size, else a new segment; freed and cached when the storage dies), so a
    gradient set to None and made again gets its old address back, as in
    PyTorch;
  - torch.nn: Module (_parameters/_buffers/_modules, named_modules,
    named_parameters/named_buffers with prefixes and remove_duplicate),
    Parameter, Linear, Embedding, ModuleList;
  - annotations (record_function ranges): external_annotations entries
    {device, stage START|END, name, time_us} when the history records them
    (global_record_annotations), or, with memory.fake_legacy_annotations,
    PyTorch 2.4-2.6's user_defined history entries (one frame: name
    START|END, filename the range name, line 0);
  - the clock re-fit: each _snapshot re-fits PyTorch's TSC->wall clock, so
    every time_us of a snapshot moves by a few microseconds (a cycle here);
  - a second _record_memory_history call clears the ring (older PyTorch);
  - lazy modules: torch._dynamo and torch._inductor are imported by torch's module
    __getattr__ at their first lookup (torch/__init__.py's _lazy_modules, PyTorch 2.x), and
    import each other (_dynamo/__init__.py); _snapshot() looks for torch._inductor as
    PyTorch's C++ does (cuda/memory.py says where seen);
  - torch.profiler.profile / torch.autograd.profiler.profile: with
    with_stack=True they fail while another profile hook is attached, as
    PyTorch's Python tracer does (autograd/profiler.py says where seen).
time_us is rounded up to 100 us here, so many entries share a time.
"""
from . import _tensor, cuda  # noqa: F401
from ._tensor import (Tensor, UntypedStorage, arange, bfloat16, contiguous_format,  # noqa: F401
                      device, dtype, empty, empty_like, float16, float32, int64, ones,
                      ones_like, preserve_format, randn, randn_like, tensor, zeros,
                      zeros_like)
from . import autograd, nn, optim, profiler  # noqa: F401,E402

import importlib as _importlib  # noqa: E402

# As torch/__init__.py does (PyTorch 2.x): these submodules are imported at their first
# lookup as attributes of torch, `hasattr(torch, "_inductor")` included.
_lazy_modules = {"_dynamo", "_inductor"}


def __getattr__(name):
    if name in _lazy_modules:
        return _importlib.import_module("." + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
