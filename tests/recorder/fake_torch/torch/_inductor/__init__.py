"""torch._inductor of the fake torch: a lazy module of torch (torch/__init__.py's
__getattr__ imports it at the first `torch._inductor`), whose import reaches
torch._inductor.utils and, through it, torch._dynamo (see _dynamo/__init__.py). Its
codecache is what PyTorch's snapshot looks for (cuda/memory.py: _snapshot). Imported
before torch._dynamo it fails here (the cycle meets itself in one thread), where PyTorch's
own graph gets through: only a drain without LazyImportGuard imports it first."""
from . import codecache, utils  # noqa: F401
