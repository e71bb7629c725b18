"""torch.optim of the fake torch: Optimizer, SGD, AdamW (see torch/__init__.py)."""
from . import optimizer  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .optimizer import SGD, Optimizer  # noqa: F401
