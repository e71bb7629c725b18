"""torch.nn of the fake torch: Module (modules/module.py), Parameter, and the
few layers the tests build models from (Linear, Embedding, ModuleList)."""
from . import modules  # noqa: F401
from .modules import Embedding, Linear, Module, ModuleList  # noqa: F401
from .parameter import Parameter  # noqa: F401
