from .container import ModuleList  # noqa: F401
from .linear import Linear  # noqa: F401
from .module import Module  # noqa: F401
from .sparse import Embedding  # noqa: F401
