"""Storages: the memory a tensor's array looks into, as torch's ``untyped_storage()`` shows it.

A tensor's array is a window (shape, strides, offset) on a block of memory that its views
share. In torch that block is the storage; here it is the array at the root of the array's
``.base`` chain (the array that owns the memory). Two tensors share a storage exactly when
their arrays share that root, so ``data_ptr()`` of a storage is the same for a tensor, its
views and a dual tensor made from it, whatever each one's own offset. The tensor methods at
the end (``storage``, ``untyped_storage``, ``storage_offset``) are installed by ``ops.methods``.
"""
from __future__ import annotations

import warnings

from reference import array_backend, dtypes
from reference.tensor import Tensor, device as _device

TYPED_STORAGE_DEPRECATED = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
    "storage class. This should only matter to you if you are using storages directly.  To access "
    "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()"
)
_warned = [False]


def root_of(array):
    """The array that owns the memory ``array`` looks into (itself when it owns it).

    numpy keeps ``.base`` pointing at the owner for ordinary views; ``as_strided`` results
    go through a helper object that is not an array, so the walk goes on past it."""
    root = array
    node = getattr(array, "base", None)
    while node is not None:
        if hasattr(node, "shape") and hasattr(node, "dtype") and hasattr(node, "strides"):
            root = node
        node = getattr(node, "base", None)
    return root


def address_of(array) -> int:
    """The address of an array's first element."""
    if array_backend.namespace_of(array) is array_backend.numpy:
        return array.__array_interface__["data"][0]
    return array.data.ptr


def storage_offset(array) -> int:
    """How many elements of its dtype ``array`` starts after its storage's start."""
    return (address_of(array) - address_of(root_of(array))) // array.dtype.itemsize


def window(root, offset: int, shape, strides):
    """An array over ``root``'s memory: ``shape`` and ``strides`` (in elements) from element
    ``offset`` on, refused as torch refuses a geometry that reaches past the storage."""
    shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
    if len(shape) != len(strides):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(strides)} strides, {len(shape)} sizes")
    if any(s < 0 for s in strides) or offset < 0:
        raise RuntimeError("as_strided: Negative strides and storage offsets are not supported")
    needed = 0 if 0 in shape else offset + 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))
    available = int(root.size)
    if needed > available:
        itemsize = root.dtype.itemsize
        raise RuntimeError(
            f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage offset {offset}, and itemsize "
            f"{itemsize} requiring a storage size of {needed * itemsize} are out of bounds for storage of size "
            f"{available * itemsize}")
    flat = root.reshape(-1, order="A")  # a view: the root owns its memory, which is contiguous
    start = flat[min(offset, available):]
    itemsize = root.dtype.itemsize
    xp = array_backend.namespace_of(root)
    return xp.lib.stride_tricks.as_strided(start, shape, tuple(s * itemsize for s in strides))


class UntypedStorage:
    """The bytes a tensor's array looks into. Equal to another when it is the same memory."""

    __slots__ = ("_root",)

    def __init__(self, root):
        self._root = root

    def data_ptr(self) -> int:
        return address_of(self._root)

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def device(self) -> _device:
        return _device(array_backend.device_type_of(self._root))

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def _bytes(self):
        """The storage's bytes, on the host, in memory order."""
        return array_backend.to_host(self._root).reshape(-1, order="A").view("uint8")

    def __getitem__(self, index):
        return self._bytes()[index].tolist()

    def tolist(self) -> list:
        return self._bytes().tolist()

    def __eq__(self, other):
        return isinstance(other, UntypedStorage) and self.data_ptr() == other.data_ptr() \
            and self.device == other.device

    def __hash__(self):
        return hash(self.data_ptr())

    def __reduce__(self):
        return (UntypedStorage, (self._root,))

    def __repr__(self) -> str:
        return f"reference.UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


class TypedStorage:
    """torch's deprecated ``tensor.storage()``: the storage's memory read as the tensor's dtype."""

    __slots__ = ("_untyped", "dtype")

    def __init__(self, untyped: UntypedStorage, dtype: dtypes.dtype):
        self._untyped = untyped
        self.dtype = dtype

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def size(self) -> int:
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    @property
    def device(self):
        return self._untyped.device

    def tolist(self) -> list:
        return self._untyped._bytes().view(self.dtype.numpy).tolist()

    def __getitem__(self, index):
        return self._untyped._bytes().view(self.dtype.numpy)[index].tolist()

    def __repr__(self) -> str:
        return f"reference.TypedStorage(dtype={self.dtype!r}, device={self.device}) of size {self.size()}"


def untyped_storage(self: Tensor) -> UntypedStorage:
    """``tensor.untyped_storage()``."""
    return UntypedStorage(root_of(self._array))


def storage(self: Tensor) -> TypedStorage:
    """``tensor.storage()``; warns once per process that TypedStorage is deprecated, as torch does."""
    if not _warned[0]:
        _warned[0] = True
        warnings.warn(TYPED_STORAGE_DEPRECATED, UserWarning, stacklevel=2)
    return TypedStorage(untyped_storage(self), self.dtype)


def tensor_storage_offset(self: Tensor) -> int:
    """``tensor.storage_offset()``: where the tensor starts in its storage, in elements."""
    return storage_offset(self._array)
