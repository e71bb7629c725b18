"""torch.optim.AdamW of the fake torch: its state as PyTorch's _init_group
makes it at a parameter's first step (one with a gradient): "step" a 0-dim
float32 tensor, on the CPU unless capturable or fused (then on the
parameter's device), "exp_avg" and "exp_avg_sq" zeros_like(p)
(preserve_format), and "max_exp_avg_sq" with amsgrad. The update itself is
not modelled."""
from .. import _tensor
from .optimizer import Optimizer


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = (
                        _tensor.zeros((), dtype=_tensor.float32, device=p.device)
                        if group["capturable"] or group["fused"] else _tensor.tensor(0.0))
                    state["exp_avg"] = _tensor.zeros_like(
                        p, memory_format=_tensor.preserve_format)
                    state["exp_avg_sq"] = _tensor.zeros_like(
                        p, memory_format=_tensor.preserve_format)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _tensor.zeros_like(
                            p, memory_format=_tensor.preserve_format)
                state["step"].add_(1)
        return loss
