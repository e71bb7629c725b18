"""torch._inductor.utils of the fake torch: it imports from torch._dynamo at its top and
defines IndentedBuffer, which torch._dynamo imports from it (see _dynamo/__init__.py).
PyTorch's utils.py imports torch._dynamo's device_interface and utils at its top; done as
`from torch._dynamo import ...`, as here, the import waits while torch._dynamo's own import
runs in another thread (CPython's _lock_unlock_module), which is how a second thread's
import of this module and the program's import of torch._dynamo meet."""
from torch._dynamo import device_interface  # noqa: F401


class IndentedBuffer:
    pass
