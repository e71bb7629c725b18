"""real_cuda_prog.py — the Python program of the real-driver tier
(test_real_driver.sh): loads libcuda.so.1 through ctypes (as PyTorch's
runtime does, through the loader's search path: fetch.sh's R535, never an
installed driver), calls cuInit(0) twice and cuDriverGetVersion, prints the
results, then does some Python work. Issue 26: the real driver dlclosed
libmemrec.so after InitializeInjection returned 0 while the Python frame
hook it had armed (Py_AddPendingCall) was still pending, so this work after
cuInit crashed the interpreter. Exits with the status given (default 0)."""
import ctypes
import sys

cuda = ctypes.CDLL("libcuda.so.1")
for _ in range(2):
    print("cuInit:", cuda.cuInit(0))
version = ctypes.c_int(0)
print("cuDriverGetVersion:", cuda.cuDriverGetVersion(ctypes.byref(version)), version.value)
sys.stdout.flush()


def work(n):
    """Python calls, allocations and a little recursion: every pending call
    and profile hook the recorder may have armed gets its chance to run."""
    if n == 0:
        return 0
    return n + work(n - 1)


total = 0
for i in range(2000):
    total += work(20) + len({str(j): j for j in range(10)})
print("work:", total)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
