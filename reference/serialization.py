"""Saving tensors: pickling, ``torch.save`` and ``torch.load``.

A tensor pickles (and copies) as its storage and its window on it (offset, shape, strides), with
``requires_grad`` and its ``__dict__``; never its history, ``.grad`` or hooks, as in torch.
Tensors saved together that share a storage share one again when loaded. A loaded tensor
is a leaf, requiring grad if the saved one did (a non-leaf included).

``save`` writes one pickle stream in which every storage is a persistent record (its bytes,
written once); ``load`` reads it back, by default (``weights_only=True``, torch's default
since 2.6) refusing every global but tensors and plain data, so that loading a file runs no
code of the file's choosing.
"""
from __future__ import annotations

import copy
import os
import pickle
import warnings

import numpy

from reference import array_backend, dtypes
from reference.storage import UntypedStorage, root_of, storage_offset, window
from reference.tensor import Tensor, instance_of

MAGIC = b"reference.save\x01"
WEIGHTS_ONLY_FAILED = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps "
    "only if you trust the source of the checkpoint. (1) Re-running `torch.load` with `weights_only` set to "
    "`False` will likely succeed, but it can result in arbitrary code execution. (2) Alternatively, load with "
    "`weights_only=True` only files holding tensors and plain data."
)

#: the globals a weights-only load may name: tensors, their classes and plain data (torch's list,
#: as far as the reference has the types)
_SAFE_GLOBALS = {
    ("reference.serialization", "_rebuild_tensor"),
    ("reference.storage", "UntypedStorage"),
    ("reference.tensor", "Tensor"), ("reference.tensor", "Size"), ("reference.tensor", "device"),
    ("reference.tensor", "strided"), ("reference.dtypes", "_by_name"),
    ("reference.nn.parameter", "Parameter"),
    ("collections", "OrderedDict"), ("collections", "Counter"),
    ("builtins", "set"), ("builtins", "complex"), ("builtins", "bytearray"),
    ("_codecs", "encode"), ("builtins", "bytes"),  # how protocol 2 writes bytes (empty ones: bytes())
}


def _rebuild_tensor(cls, storage, offset, shape, strides, requires_grad, state):
    """A leaf tensor of class ``cls`` over ``storage``'s memory (the unpickling side)."""
    tensor = instance_of(cls, window(storage._root, offset, shape, strides))
    tensor._version_counter[0] = 1  # torch sets the storage on a new tensor, which counts as a write
    tensor._requires_grad = requires_grad
    if state:
        tensor.__dict__.update(state)
    return tensor


def reduce_tensor(self: Tensor, protocol=2):
    """``Tensor.__reduce_ex__`` (installed by ``ops.methods``)."""
    hooks = self._leaf_hooks
    if hooks:
        for hook in list(hooks.values()):
            if not getattr(hook, "__torch_unserializable__", False):
                warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, "
                              "you can decorate the function with @torch.utils.hooks.unserializable_hook to "
                              "suppress this warning", UserWarning, stacklevel=2)
    data = self._array
    state = dict(self.__dict__) or None
    return (_rebuild_tensor, (type(self), UntypedStorage(root_of(data)), storage_offset(data), tuple(data.shape),
                              self.stride(), self._requires_grad, state))


DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  "
    "If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, "
    "see https://github.com/pytorch/pytorch/pull/103001"
)


def deepcopy_tensor(self: Tensor, memo):
    """``Tensor.__deepcopy__`` (installed by ``ops.methods``): a leaf only, as in torch; the copy
    gets a copy of the storage (one per storage in a deepcopy), ``requires_grad``, a deep copy
    of ``.grad`` and of ``__dict__``."""
    if self._node is not None:
        raise RuntimeError(DEEPCOPY_NON_LEAF)
    if id(self) in memo:
        return memo[id(self)]
    data = self._array
    root = root_of(data)
    root_copy = memo.get(id(root))
    if root_copy is None:
        root_copy = memo[id(root)] = root.copy(order="A")
        memo.setdefault(id(memo), []).append(root)  # keep the id valid for the whole deepcopy
    new = instance_of(type(self), window(root_copy, storage_offset(data), data.shape, self.stride()))
    new._version_counter[0] = 1  # as torch, which sets the copied storage on a new tensor
    memo[id(self)] = new
    new._requires_grad = self._requires_grad
    if self._grad is not None:
        new._grad = copy.deepcopy(self._grad, memo)
    if self.__dict__:
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return new


class _Pickler(pickle.Pickler):
    """Writes each storage once, as a persistent record: (key, dtype, device, bytes)."""

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self._keys = {}
        self._keep = []  # the roots seen, alive until the dump ends (their ids stay theirs)

    def persistent_id(self, obj):
        if type(obj) is not UntypedStorage:
            return None
        root = obj._root
        key = self._keys.get(id(root))
        if key is not None:
            return ("storage", key, None, None, None)
        key = self._keys[id(root)] = len(self._keys)
        self._keep.append(root)
        host = array_backend.to_host(root).reshape(-1, order="A")
        return ("storage", key, host.dtype.str, array_backend.device_type_of(root), host.tobytes())


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, weights_only, map_location, **kwargs):
        super().__init__(file, **kwargs)
        self._weights_only = weights_only
        self._map_location = map_location
        self._storages = {}

    def find_class(self, module, name):
        if module == "__builtin__":  # protocol 2 names Python 3's builtins as Python 2 did
            module = "builtins"
        if self._weights_only and (module, name) not in _SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"{WEIGHTS_ONLY_FAILED} Unsupported global: GLOBAL {module}.{name}")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        kind, key, dtype, device, payload = pid
        if kind != "storage":
            raise pickle.UnpicklingError(f"unknown persistent record {kind!r}")
        if payload is None:
            return self._storages[key]
        host = numpy.frombuffer(bytearray(payload), dtype=numpy.dtype(dtype))
        dtypes.from_numpy_dtype(host.dtype)  # a dtype the reference has, or refused here
        target = device if self._map_location is None else self._map_location
        storage = self._storages[key] = UntypedStorage(array_backend.to_device(host, target))
        return storage


def _open(f, mode):
    if isinstance(f, (str, os.PathLike)):
        return open(f, mode), True
    return f, False


def save(obj, f, pickle_module=pickle, pickle_protocol=2) -> None:
    """Write ``obj`` (tensors, containers of them, any picklable object) to a path or binary file."""
    if pickle_module is not pickle:
        raise TypeError("the reference's save writes with the standard pickle module only")
    file, owned = _open(f, "wb")
    try:
        file.write(MAGIC)
        _Pickler(file, pickle_protocol).dump(obj)
    finally:
        if owned:
            file.close()


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Read back what ``save`` wrote. ``weights_only`` (default True) allows only tensors and
    plain data; ``map_location`` ('cpu', 'cuda' or a device) moves every storage there."""
    if pickle_module is not None and pickle_module is not pickle:
        raise TypeError("the reference's load reads with the standard pickle module only")
    if mmap:
        raise TypeError("the reference's load does not memory-map files (mmap=True)")
    if map_location is not None:
        if callable(map_location) or isinstance(map_location, dict):
            raise TypeError("the reference's load takes map_location as a device or a device string only")
        map_location = str(map_location).partition(":")[0]
    weights_only = True if weights_only is None else weights_only
    file, owned = _open(f, "rb")
    try:
        if file.read(len(MAGIC)) != MAGIC:
            raise RuntimeError("Invalid magic number; corrupt file? (not written by the reference's save)")
        return _Unpickler(file, weights_only, map_location, **pickle_load_args).load()
    finally:
        if owned:
            file.close()
