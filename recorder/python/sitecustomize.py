"""memrec's Python startup hook (sitecustomize).

The memrec launcher puts this folder first on PYTHONPATH, so every Python
process it starts (the script, torchrun's workers and agent, data loaders)
runs this at interpreter start, before the program's own code. It loads
nothing (libmemrec.so comes with CUDA: the driver loads it, and the library
itself then attaches the Python frame hook), costs next to nothing in a
process that never uses CUDA, and never harms the program: any failure
leaves the program running unrecorded. It does two things:

  1. os._exit: a process ending with it skips atexit (Python's
     multiprocessing workers do), so os._exit is wrapped to call
     libmemrec.so's memrec_before_exit first when the library is loaded
     here; the trace then ends complete;
  2. PyTorch's caching-allocator blocks: memrec_torch.install() waits for
     `import torch` and then records the allocator's history into the trace
     once CUDA starts (MEMREC_TORCH=0 turns this off).

Then it chains to the sitecustomize that this one hides, if any: the one the
interpreter would have run without memrec (a virtualenv's, a distribution's).
"""
import os
import sys


def _memrec_library():
    """libmemrec.so as already loaded in this process, or None. Never loads
    it (RTLD_NOLOAD), and imports nothing unless it is mapped here: a
    forked child may be exiting."""
    try:
        with open("/proc/self/maps") as maps:
            if "libmemrec" not in maps.read():
                return None
    except OSError:
        pass
    import ctypes
    mode = os.RTLD_NOLOAD | os.RTLD_LAZY
    for name in (os.environ.get("CUDA_INJECTION64_PATH", ""), "libmemrec.so"):
        if not name:
            continue
        try:
            return ctypes.CDLL(name, mode=mode)
        except OSError:
            continue
    return None


def _wrap_os_exit():
    real_exit = os._exit

    def _exit(status):
        try:
            lib = _memrec_library()
            before_exit = getattr(lib, "memrec_before_exit", None) if lib else None
            if before_exit is not None:
                before_exit.restype = None
                before_exit()
        except Exception:  # noqa: BLE001 - the exit must happen whatever happens
            pass
        real_exit(status)
    _exit.__doc__ = real_exit.__doc__
    _exit.__wrapped__ = real_exit
    os._exit = _exit


def _start_memrec():
    if not os.environ.get("MEMREC_OUTPUT"):
        return  # not under memrec (the folder was put on the path by hand)
    try:
        _wrap_os_exit()
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
