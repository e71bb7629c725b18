"""torch._inductor of the fake torch: a lazy module of torch (torch/__init__.py's
__getattr__ imports it at the first `torch._inductor`). Its config comes first (and with it
torch._dynamo, when nobody imports that yet), then codecache, which PyTorch's snapshot looks
for (cuda/memory.py: _snapshot), and utils, which imports from torch._dynamo (see
_dynamo/__init__.py)."""
from . import config  # noqa: F401
from . import codecache, utils  # noqa: F401,E402
