"""torch._dynamo of the fake torch: only its import, which is slow and imports
torch._inductor.utils while it runs, as PyTorch's does (torch/_dynamo/__init__.py ->
... -> torch/_dynamo/guards.py: `from torch._inductor.utils import IndentedBuffer`; its
import took about 3 s on the H200 machine of 2026-12-04, torch 2.11). torch._inductor.utils
imports from torch._dynamo at its top, so the two packages import each other: in one thread
that gets through (either first), in two at once it need not.

The slow part is the test script's: a callable named DURING_DYNAMO_IMPORT in __main__, if
any, runs here (test_rec_torch.py waits there until memrec has drained twice)."""
import sys

from . import config, device_interface  # noqa: F401

_pause = getattr(sys.modules.get("__main__"), "DURING_DYNAMO_IMPORT", None)
if _pause is not None:
    _pause()

from torch._inductor.utils import IndentedBuffer  # noqa: E402,F401
