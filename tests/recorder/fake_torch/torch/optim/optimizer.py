"""torch.optim.optimizer of the fake torch, as PyTorch's (>= 2.0) where memrec
relies on it:

  - register_optimizer_step_post_hook adds a global hook, called as
    hook(optimizer, args, kwargs) after every Optimizer.step (the step
    wrapper Optimizer.__init__ installs), after the optimizer's own hooks;
  - param_groups: a list of dicts, each with "params" (a list of tensors)
    and the defaults it does not set; Optimizer(params) takes tensors (one
    group) or dicts (a group each);
  - state: a defaultdict(dict) keyed by parameter (the tensor itself), the
    per-parameter state a subclass makes at its first step (AdamW: "step",
    "exp_avg", "exp_avg_sq");
  - zero_grad(set_to_none=True): drops each parameter's .grad (frees it).

Unlike PyTorch's, an empty parameter list is allowed (the older tests'
torch.optim.SGD() steps nothing)."""
from collections import OrderedDict, defaultdict

from .._tensor import Tensor

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
        self.defaults = dict(defaults or {})
        self._optimizer_step_post_hooks = OrderedDict()
        self.state = defaultdict(dict)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable "
                            "of Tensors or dicts, but got " + type(params).__name__)
        groups = list(params)
        if groups and not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)
        step = self.step

        def wrapper(*args, **kwargs):
            out = step(*args, **kwargs)
            for hook in list(self._optimizer_step_post_hooks.values()) + list(
                    _global_optimizer_post_hooks.values()):
                hook(self, args, kwargs)
            return out
        self.step = wrapper

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad.zero_()

    def step(self, closure=None):
        return None


class SGD(Optimizer):
    pass
