"""torch._inductor.utils of the fake torch: it imports from torch._dynamo at its top and
defines IndentedBuffer after that, which torch._dynamo imports from it (see
_dynamo/__init__.py). PyTorch's utils.py imports torch._dynamo's device_interface and utils
at its top. The second import here, `from torch._dynamo import ...`, waits while
torch._dynamo's own import runs in another thread (CPython's _lock_unlock_module): how a
second thread's import of this module and the program's import of torch._dynamo meet."""
from torch._dynamo.device_interface import get_interface_for_device  # noqa: F401
from torch._dynamo import device_interface  # noqa: F401,E402


class IndentedBuffer:
    pass
