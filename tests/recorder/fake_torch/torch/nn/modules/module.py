"""torch.nn.modules.module of the fake torch: Module, as PyTorch's where
memrec_torch.py relies on it (torch/nn/modules/module.py):

  - its state lives in three ordered dicts, _parameters, _buffers and
    _modules (a None entry: declared, absent); assigning a Parameter or a
    Module as an attribute registers it there (__setattr__), reading the
    attribute finds it there (__getattr__), and assigning a Tensor or None
    to a registered buffer's name replaces the buffer;
  - named_modules(memo, prefix, remove_duplicate) walks depth first, the
    module itself first, children in registration order, each child's
    prefix "<prefix>.<name>"; a module met twice (shared) is yielded once
    unless remove_duplicate=False;
  - named_parameters/named_buffers(prefix, recurse, remove_duplicate) go
    through _named_members: the members of every module of named_modules,
    None skipped, and a tensor met twice (tied weights: one Parameter under
    two names) yielded once, under its first name, unless
    remove_duplicate=False (PyTorch >= 2.0);
  - parameters, buffers, children, named_children, modules, zero_grad
    (set_to_none=True by default since 2.0), __call__ -> forward.
"""
from collections import OrderedDict

from ..._tensor import Tensor
from ..parameter import Parameter


class Module:
    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- registration ----------------------------------------------------

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError("cannot assign '%s' object to parameter '%s' (torch.nn.Parameter "
                            "or None required)" % (type(param).__name__, name))
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError("cannot assign '%s' object to buffer '%s' (torch Tensor or None "
                            "required)" % (type(tensor).__name__, name))
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError("%s is not a Module subclass" % type(module).__name__)
        if "." in name or name == "":
            raise KeyError('module name can\'t contain ".", got: %s' % name)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            for d in (self.__dict__, self._buffers, self._modules):
                d.pop(name, None)
            self._non_persistent_buffers_set.discard(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError("cannot assign '%s' as parameter '%s' (torch.nn.Parameter or "
                                "None expected)" % (type(value).__name__, name))
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            for d in (self.__dict__, self._parameters, self._buffers):
                d.pop(name, None)
            self._non_persistent_buffers_set.discard(name)
            self._modules[name] = value
        elif self.__dict__.get("_modules") is not None and name in self._modules:
            if value is not None:
                raise TypeError("cannot assign '%s' as child module '%s' (torch.nn.Module or "
                                "None expected)" % (type(value).__name__, name))
            self._modules[name] = value
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError("cannot assign '%s' as buffer '%s' (torch.Tensor or None "
                                "expected)" % (type(value).__name__, name))
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        for where in ("_parameters", "_buffers", "_modules"):
            members = d.get(where)
            if members is not None and name in members:
                return members[name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for where in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[where]:
                del self.__dict__[where][name]
                return
        object.__delattr__(self, name)

    # ---- walking ---------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            members = get_members_fn(module)
            for k, v in members:
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                name = module_prefix + ("." if module_prefix else "") + k
                yield name, v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda module: module._parameters.items(),
                                       prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda module: module._buffers.items(),
                                       prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def train(self, mode=True):
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)
