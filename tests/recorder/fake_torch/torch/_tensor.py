"""torch.Tensor of the fake torch, as PyTorch's where memrec_torch.py's
tensor walk relies on it (torch/_tensor.py, torch/storage.py, c10's
StorageImpl): a tensor is a view (shape, dtype, storage offset) of a
storage; untyped_storage().data_ptr() is the storage's start, where the
caching allocator's block begins, and is the same for every view of it (a
DDP bucket's gradients, tied weights); data_ptr() is the view's own start.
A CUDA storage takes its block from the fake caching allocator
(torch.cuda.caching_alloc: PyTorch's history records it) and frees it when
the storage dies, as c10 does when its last tensor goes; a CPU storage has
a host address and no history. .grad, .requires_grad, .is_cuda, .device,
.shape/.size(), .numel(), .element_size(), .storage_offset(); indexing a
first dimension is a view; in-place ops the tests need (zero_, add_) do
nothing to the fake's memory."""
import itertools
import weakref


class dtype:
    def __init__(self, name, itemsize, is_floating_point):
        self.name, self.itemsize, self.is_floating_point = name, itemsize, is_floating_point

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", 4, True)
float16 = dtype("float16", 2, True)
bfloat16 = dtype("bfloat16", 2, True)
int64 = dtype("int64", 8, False)
float = float32  # noqa: A001 - torch.float, as PyTorch spells it
long = int64


class memory_format:
    def __init__(self, name):
        self.name = name


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")


class device:
    """torch.device("cuda"), ("cuda:1"), ("cuda", 1), ("cpu")."""

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's names
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, _, i = type.partition(":")
            index = int(i)
        self.type, self.index = type, index

    def __eq__(self, other):
        other = device(other) if isinstance(other, str) else other
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return "device(type=%r%s)" % (self.type, "" if self.index is None else
                                      ", index=%d" % self.index)


_host_addresses = itertools.count(0x560000000000, 4096)


class UntypedStorage:
    """torch.UntypedStorage: the bytes; data_ptr() is where they begin."""

    def __init__(self, nbytes, device=None):  # noqa: F811 - the argument shadows the class
        from . import cuda
        self.device = _device_of(device)
        self._nbytes = nbytes
        if self.device.type == "cuda" and nbytes:
            self._ptr = cuda.caching_alloc(nbytes)
            done = weakref.finalize(self, cuda.caching_free, self._ptr)
            done.atexit = False  # PyTorch's blocks outlive the last drain
        else:
            self._ptr = next(_host_addresses) if nbytes else 0

    def data_ptr(self):
        return self._ptr

    def nbytes(self):
        return self._nbytes

    def size(self):
        return self._nbytes

    @property
    def is_cuda(self):
        return self.device.type == "cuda"


def _device_of(d):
    if d is None:
        return device("cpu")
    if isinstance(d, int):
        return device("cuda", d)
    return device(d)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


class Tensor:
    """A strided view of a storage (contiguous here)."""

    def __init__(self, storage, shape, dtype, offset=0, requires_grad=False):  # noqa: F811
        self._storage, self._shape, self.dtype = storage, tuple(shape), dtype
        self._offset = offset
        self.requires_grad = requires_grad
        self.grad = None

    # where it lives
    def untyped_storage(self):
        return self._storage

    def data_ptr(self):
        return self._storage.data_ptr() + self._offset * self.dtype.itemsize

    def storage_offset(self):
        return self._offset

    @property
    def device(self):
        return self._storage.device

    @property
    def is_cuda(self):
        return self._storage.device.type == "cuda"

    # what it is
    @property
    def shape(self):
        return self._shape

    def size(self, dim=None):
        return self._shape if dim is None else self._shape[dim]

    def dim(self):
        return len(self._shape)

    def numel(self):
        n = 1
        for s in self._shape:
            n *= s
        return n

    def element_size(self):
        return self.dtype.itemsize

    @property
    def is_leaf(self):
        return True

    def __getitem__(self, index):
        """t[i]: the i-th slice of the first dimension, a view of the same storage."""
        if not isinstance(index, int) or not self._shape:
            raise TypeError("the fake torch indexes one int along the first dimension")
        if index < 0:
            index += self._shape[0]
        inner = Tensor(self._storage, self._shape[1:], self.dtype)
        return Tensor(self._storage, self._shape[1:], self.dtype,
                      self._offset + index * inner.numel())

    def __len__(self):
        return self._shape[0]

    # in-place ops: the values are not modelled
    def zero_(self):
        return self

    def add_(self, *args, **kwargs):
        return self

    def mul_(self, *args, **kwargs):
        return self

    def detach(self):
        return Tensor(self._storage, self._shape, self.dtype, self._offset)

    def __repr__(self):
        return "tensor(shape=%s, dtype=%r, device=%r)" % (list(self._shape), self.dtype,
                                                         self.device)


def empty(*size, dtype=None, device=None, requires_grad=False, **kwargs):  # noqa: F811
    shape = _shape(size)
    dt = dtype or float32
    n = 1
    for s in shape:
        n *= s
    return Tensor(UntypedStorage(n * dt.itemsize, device), shape, dt,
                  requires_grad=requires_grad)


zeros = ones = randn = empty


def empty_like(t, *, dtype=None, device=None, memory_format=None, requires_grad=False):
    return empty(t.shape, dtype=dtype or t.dtype, device=device or t.device,
                 requires_grad=requires_grad)


zeros_like = ones_like = randn_like = empty_like


def tensor(data, dtype=None, device=None, requires_grad=False):  # noqa: F811
    """torch.tensor of a number (a 0-dim tensor) or a flat list."""
    shape = (len(data),) if isinstance(data, (list, tuple)) else ()
    if dtype is None:
        whole = all(isinstance(x, int) for x in (data if shape else [data]))
        dtype = int64 if whole else float32
    return empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


def arange(end, dtype=None, device=None):
    return empty((int(end),), dtype=dtype or int64, device=device)
