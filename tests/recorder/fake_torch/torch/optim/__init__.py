"""torch.optim of the fake torch: Optimizer, SGD, AdamW (see torch/__init__.py)."""
from . import optimizer  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .optimizer import SGD, Optimizer  # noqa: F401

# As torch/optim/__init__.py does: the module stays in sys.modules ("torch.optim.optimizer")
# but is no attribute of torch.optim, so the recorder must not look for it there.
del optimizer
