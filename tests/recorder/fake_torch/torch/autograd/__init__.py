"""torch.autograd of the fake torch: only its profiler (see profiler.py)."""
from . import profiler  # noqa: F401
