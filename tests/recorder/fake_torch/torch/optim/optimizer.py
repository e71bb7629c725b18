"""torch.optim.optimizer of the fake torch, as PyTorch's (>= 2.0) where memrec
relies on it: register_optimizer_step_post_hook adds a global hook, called
as hook(optimizer, args, kwargs) after every Optimizer.step (the step
wrapper Optimizer.__init__ installs), after the optimizer's own hooks."""
from collections import OrderedDict

_global_optimizer_post_hooks = OrderedDict()
_next_handle = [0]


class RemovableHandle:
    def __init__(self, hooks, hid):
        self.hooks, self.id = hooks, hid

    def remove(self):
        self.hooks.pop(self.id, None)


def register_optimizer_step_post_hook(hook):
    _next_handle[0] += 1
    _global_optimizer_post_hooks[_next_handle[0]] = hook
    return RemovableHandle(_global_optimizer_post_hooks, _next_handle[0])


class Optimizer:
    def __init__(self, params=(), defaults=None):
        self._optimizer_step_post_hooks = OrderedDict()
        step = self.step

        def wrapper(*args, **kwargs):
            out = step(*args, **kwargs)
            for hook in list(self._optimizer_step_post_hooks.values()) + list(
                    _global_optimizer_post_hooks.values()):
                hook(self, args, kwargs)
            return out
        self.step = wrapper

    def step(self, closure=None):
        return None


class SGD(Optimizer):
    pass
