"""torch.autograd.profiler of the fake torch: profile, as PyTorch 2.x has it
(torch/autograd/profiler.py): __enter__ runs _prepare_trace then _start_trace,
which enables the profiler; __exit__ disables it. torch.profiler.profile
drives the same object (_start_trace, then __exit__ at its stop).

With with_stack=True PyTorch's Python tracer (profiler_python.cpp) installs
a profile function of its own on every thread and clears them all when it
stops; when another profile hook was in place it fails at the stop, replaying
its events: "RuntimeError: !stack.empty() INTERNAL ASSERT FAILED at
../torch/csrc/autograd/profiler_python.cpp:969 ... Python replay stack is
empty" (reported as pytorch/pytorch#101632 and vllm-project/vllm#8560;
issue 26 met it with memrec's frame hook). The fake does the same: a
profile function (sys.getprofile) or, from CPython 3.12, a sys.monitoring
profiler tool in place when the trace starts makes its __exit__ raise that
error, and it ends with no profile function on this thread."""
import sys

active = []  # profiles running now, for the tests


def _other_hook():
    if sys.getprofile() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and monitoring.get_tool(monitoring.PROFILER_ID) is not None


def _tracer(frame, event, arg):
    return None


class profile:
    def __init__(self, enabled=True, with_stack=False, **kwargs):
        self.enabled = enabled
        self.with_stack = with_stack
        self.entered = False
        self.other_hook = False

    def _prepare_trace(self):
        self.entered = True

    def _start_trace(self):
        self.entered = True
        self.other_hook = self.with_stack and _other_hook()
        if self.with_stack:
            sys.setprofile(_tracer)
        active.append(self)

    def __enter__(self):
        if not self.enabled:
            return self
        self._prepare_trace()
        self._start_trace()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return
        if self in active:
            active.remove(self)
        if self.with_stack:
            sys.setprofile(None)  # PyTorch clears every thread's profile function
            if self.other_hook:
                raise RuntimeError("!stack.empty() INTERNAL ASSERT FAILED at "
                                   "\"../torch/csrc/autograd/profiler_python.cpp\":969, please "
                                   "report a bug to PyTorch. Python replay stack is empty")
