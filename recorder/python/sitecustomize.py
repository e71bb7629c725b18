"""memrec's Python startup hook (sitecustomize).

The memrec launcher puts this folder first on PYTHONPATH, so every Python
process it starts (the script, torchrun's workers, data loaders) runs this at
interpreter start, before the program's own code. It does two things and
never harms the program: any failure leaves the program running unrecorded.

  1. Python frames in native stacks: when libmemrec.so (already loaded by
     LD_PRELOAD) exports memrec_python_attach, it is called through
     ctypes.PyDLL (the GIL held), unless MEMREC_STACKS=native.
  2. PyTorch's caching-allocator blocks: memrec_torch.install() waits for
     `import torch` and then records the allocator's history into the trace
     (MEMREC_TORCH=0 turns this off).

Then it chains to the sitecustomize that this one hides, if any: the one the
interpreter would have run without memrec (a virtualenv's, a distribution's).
"""
import os
import sys


def _memrec_library(loader):
    """libmemrec.so as already loaded in this process, or None. Never loads
    a second copy (RTLD_NOLOAD)."""
    import ctypes
    mode = os.RTLD_NOLOAD | os.RTLD_LAZY
    for name in ("libmemrec.so", os.environ.get("CUDA_INJECTION64_PATH", "")):
        if not name:
            continue
        try:
            return loader(name, mode=mode)
        except OSError:
            continue
    return None


def _attach_python_frames():
    if os.environ.get("MEMREC_STACKS", "") == "native":
        return
    import ctypes
    lib = _memrec_library(ctypes.PyDLL)
    attach = getattr(lib, "memrec_python_attach", None) if lib else None
    if attach is not None:
        attach.restype = ctypes.c_int
        attach.argtypes = []
        attach()
        detach = getattr(lib, "memrec_python_detach", None)
        if detach is not None:
            # A forked child records nothing (the recorder stops in it): the
            # hook would only slow it down (a DataLoader worker, say).
            detach.restype = ctypes.c_int
            detach.argtypes = []
            os.register_at_fork(after_in_child=detach)


def _start_memrec():
    if not os.environ.get("MEMREC_OUTPUT"):
        return  # not under memrec (the folder was put on the path by hand)
    try:
        _attach_python_frames()
    except Exception:  # noqa: BLE001 - the program must run whatever happens
        pass
    if os.environ.get("MEMREC_TORCH", "1") == "0":
        return
    try:
        import memrec_torch
        memrec_torch.install()
    except Exception:  # noqa: BLE001
        pass


def _chain_to_hidden_sitecustomize():
    """Imports the next sitecustomize on sys.path after this folder's."""
    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.get(__name__)
    saved_path = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path
                       if os.path.abspath(p or os.curdir) != here]
        del sys.modules[__name__]
        import importlib
        try:
            importlib.import_module("sitecustomize")
        except ImportError as e:
            if e.name != "sitecustomize":
                raise
    finally:
        sys.path[:] = saved_path
        hidden = sys.modules.get("sitecustomize")
        if hidden is None and ours is not None:
            sys.modules["sitecustomize"] = ours


_start_memrec()
_chain_to_hidden_sitecustomize()
