"""torch.nn.parameter of the fake torch: Parameter, a Tensor that a Module
registers when assigned as an attribute. Parameter(data) shares data's
storage (PyTorch: Tensor._make_subclass), so both have one data_ptr."""
from .._tensor import Tensor, empty


class Parameter(Tensor):
    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        super().__init__(data.untyped_storage(), data.shape, data.dtype, data.storage_offset(),
                         requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
