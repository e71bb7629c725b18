"""torch.profiler of the fake torch: profile (start/stop, a context manager)
over torch.autograd.profiler.profile, as PyTorch's _KinetoProfile drives it:
start() prepares and starts its trace, stop() calls its __exit__."""
from ..autograd import profiler as _autograd_profiler


class profile:
    def __init__(self, with_stack=False, **kwargs):
        self.with_stack = with_stack
        self.profiler = None

    def start(self):
        self.profiler = _autograd_profiler.profile(with_stack=self.with_stack)
        self.profiler._prepare_trace()
        self.profiler._start_trace()

    def stop(self):
        if self.profiler is not None:
            self.profiler.__exit__(None, None, None)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
