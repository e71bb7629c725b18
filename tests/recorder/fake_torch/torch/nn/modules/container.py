"""torch.nn.ModuleList of the fake torch: children named "0", "1", ..."""
from .module import Module


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        for module in modules or ():
            self.append(module)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __getitem__(self, idx):
        return self._modules[str(idx % len(self._modules))]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())
