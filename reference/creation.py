"""Creating tensors: from data, filled, random, and like another tensor."""
from __future__ import annotations

import numbers

import numpy

from reference import array_backend, dtypes
from reference.tensor import Size, Tensor, _infer_dtype, _to_array, device as _device

_generator = numpy.random.default_rng()


def manual_seed(seed: int):
    """Reseed the generator behind ``randn`` (one process-wide generator)."""
    global _generator
    _generator = numpy.random.default_rng(int(seed))
    return _generator


def _device_type(device) -> str:
    return "cpu" if device is None else _device(device).type


def _resolve_dtype(dtype, default=dtypes.float32):
    if dtype is None:
        return default
    if not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"dtype must be a reference dtype such as reference.float32, got {dtype!r}")
    return dtype


def _leaf(data, requires_grad) -> Tensor:
    out = Tensor._wrap(data)
    if requires_grad:
        if not out.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        out.requires_grad_(True)
    return out


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (nested lists, numbers, arrays)."""
    return _leaf(_to_array(data, _resolve_dtype(dtype, None) if dtype is not None else None, _device_type(device)), requires_grad)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"size must contain only integers, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _filled(fill, size, dtype, device, requires_grad):
    dt = _resolve_dtype(dtype)
    xp = array_backend.namespace_for_device(_device_type(device))
    return _leaf(xp.full(_shape(size), fill, dtype=dt.numpy), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _filled(1, size, dtype, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _filled(0, size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = _resolve_dtype(dtype)
    xp = array_backend.namespace_for_device(_device_type(device))
    return _leaf(xp.empty(_shape(size), dtype=dt.numpy), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = _infer_dtype(fill_value)
    return _filled(fill_value, tuple(size), dtype, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    dt = _resolve_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f'"normal_kernel_cpu" not implemented for \'{dt.legacy_name}\'')
    host = (generator or _generator).standard_normal(_shape(size)).astype(dt.numpy)
    return _leaf(array_backend.to_device(host, _device_type(device)), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = _resolve_dtype(dtype)
    host = _generator.random(_shape(size)).astype(dt.numpy)
    return _leaf(array_backend.to_device(host, _device_type(device)), requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in [low, high), int64 by default."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    dt = _resolve_dtype(dtype, dtypes.int64)
    host = _generator.integers(low, high, size=_shape((size,))).astype(dt.numpy)
    return _leaf(array_backend.to_device(host, _device_type(device)), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    if end is None:  # arange(end)
        start, end = 0, start
        arguments = (("end", end, 1),)
    else:
        arguments = (("start", start, 1), ("end", end, 2), ("step", step, 3))
    for name, value, position in arguments:
        if not isinstance(value, numbers.Real):
            raise TypeError(f"arange(): argument '{name}' (position {position}) must be Number, "
                            f"not {type(value).__name__}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is not None and not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"arange() received an invalid combination of arguments - got "
                        f"({type(end).__name__}, dtype={type(dtype).__name__}), but expected one of:")
    if dtype is None:
        dtype = dtypes.float32 if any(isinstance(v, float) for v in (start, end, step)) else dtypes.int64
    xp = array_backend.namespace_for_device(_device_type(device))
    return _leaf(xp.arange(start, end, step, dtype=dtype.numpy), requires_grad)


def from_numpy(array) -> Tensor:
    """A tensor sharing memory with a numpy array (no copy)."""
    if not isinstance(array, numpy.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dtypes.from_numpy_dtype(array.dtype)
    return Tensor._wrap(array)


def _like(fill, other, dtype, device, requires_grad):
    dt = other.dtype if dtype is None else dtype
    dev = other.device if device is None else device
    return _filled(fill, tuple(other.shape), dt, dev, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return _like(1, input, dtype, device, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return _like(0, input, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return _like(0, input, dtype, device, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return rand(*input.shape, dtype=input.dtype if dtype is None else dtype,
                device=input.device if device is None else device, requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return randn(*input.shape, dtype=input.dtype if dtype is None else dtype,
                 device=input.device if device is None else device, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:  # noqa: A002
    return _like(fill_value, input, dtype, device, requires_grad)


def _legacy(dt, dev, args, name):
    xp = array_backend.namespace_for_device(dev)
    if not args:
        return _leaf(xp.empty((0,), dtype=dt.numpy), False)
    if len(args) == 1 and isinstance(args[0], Tensor):
        raise TypeError(f"{name}(): pass the data as a list; the reference does not alias a tensor through {name}()")
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args) or (
            len(args) == 1 and isinstance(args[0], Size)):
        return _leaf(xp.empty(_shape(args), dtype=dt.numpy), False)
    if len(args) == 1:
        return _leaf(_to_array(args[0], dt, dev), False)
    raise TypeError(f"{name}() received an invalid combination of arguments: {len(args)} positional arguments")


def new(self, *args, device=None):
    """The legacy ``Tensor.new``: a leaf of ``self``'s dtype, from sizes (``x.new(2, 3)``,
    ``x.new(torch.Size)``; uninitialized), from data (``x.new([1, 2])``), or empty (``x.new()``)."""
    return _legacy(self.dtype, self.device.type if device is None else _device_type(device), args, "new")


def _legacy_constructor(dt):
    def constructor(*args):
        return _legacy(dt, "cpu", args, dt.legacy_name)

    constructor.__name__ = constructor.__qualname__ = dt.legacy_name
    constructor.__doc__ = f"The legacy ``torch.{dt.legacy_name}(sizes or data)``: a CPU leaf of {dt.name}."
    return constructor


FloatTensor, DoubleTensor, LongTensor, BoolTensor = (
    _legacy_constructor(d) for d in (dtypes.float32, dtypes.float64, dtypes.int64, dtypes.bool_))
