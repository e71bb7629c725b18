"""torch.nn.Linear of the fake torch: weight (out_features, in_features) and
bias (out_features), or bias registered as None."""
from ... import _tensor
from ..parameter import Parameter
from .module import Module


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_tensor.empty((out_features, in_features), device=device,
                                              dtype=dtype))
        if bias:
            self.bias = Parameter(_tensor.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
