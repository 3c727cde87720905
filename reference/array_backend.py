"""The one place that decides which array library backs a tensor: numpy or cupy.

A tensor's device is fixed when it is created; every op then asks this module for the
array namespace of its inputs (``namespace_of``) instead of branching on the backend
itself. cupy is imported lazily, only when a CUDA tensor is first requested, so the
reference runs anywhere numpy does.
"""
from __future__ import annotations

import numpy

_cupy = None


class CudaUnavailable(RuntimeError):
    """Raised when a CUDA tensor is requested but cupy or a GPU is missing."""


def _load_cupy():
    global _cupy
    if _cupy is None:
        try:
            import cupy
        except ImportError as exc:
            raise CudaUnavailable(
                "device='cuda' needs cupy, which is not installed. Install it with "
                "`pip install autograd-conformance[cuda]` (or a cupy wheel matching your CUDA, "
                "e.g. `pip install cupy-cuda12x`), or use device='cpu'."
            ) from exc
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # cupy raises its own CUDARuntimeError
            raise CudaUnavailable(f"device='cuda' needs a GPU, but CUDA reports none: {exc}") from exc
        if count < 1:
            raise CudaUnavailable("device='cuda' needs a GPU, but CUDA reports none")
        _cupy = cupy
    return _cupy


def cuda_available() -> bool:
    try:
        _load_cupy()
    except CudaUnavailable:
        return False
    return True


def namespace_for_device(device_type: str):
    """The array namespace for a device type ('cpu' or 'cuda')."""
    if device_type == "cpu":
        return numpy
    if device_type == "cuda":
        return _load_cupy()
    raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {device_type}")


def namespace_of(array):
    """The array namespace an array belongs to (numpy unless it is a cupy array)."""
    if type(array) is numpy.ndarray or _cupy is None:
        return numpy
    return _cupy.get_array_module(array)


def device_type_of(array) -> str:
    return "cpu" if namespace_of(array) is numpy else "cuda"


def to_host(array):
    """A numpy view or copy of an array from either backend."""
    if namespace_of(array) is numpy:
        return array
    return _cupy.asnumpy(array)


def to_device(array, device_type: str):
    """Move an array to ``device_type``; a no-op when it is already there."""
    if device_type_of(array) == device_type:
        return array
    if device_type == "cpu":
        return _cupy.asnumpy(array)
    return namespace_for_device("cuda").asarray(array)


# -- array helpers shared by forward ops and plain-backward formulas ------------------------
def sum_to(grad, shape):
    """Reduce a broadcast gradient back to ``shape``."""
    if grad.shape == shape:
        return grad
    xp = namespace_of(grad)
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, size in enumerate(shape) if size == 1 and grad.shape[i + lead] != 1
    )
    out = xp.sum(grad, axis=axes, keepdims=True) if axes else grad
    if lead:
        out = out.reshape(out.shape[lead:])
    return out.reshape(shape)


def scatter_index(grad, shape, index):
    """A zero array of ``shape`` with ``grad`` added at ``index``."""
    xp = namespace_of(grad)
    out = xp.zeros(shape, dtype=grad.dtype)
    if _is_basic(index):
        out[index] += grad
    else:  # an advanced index may repeat a position (b[[1, 1]]): every occurrence adds
        xp.add.at(out, index, grad)  # (cupy has ufunc.at since version 13)
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(item is None or item is Ellipsis or isinstance(item, (int, slice)) for item in items)


def zero_at_index(grad, index):
    """A copy of ``grad`` with zeros at ``index``."""
    out = grad.copy()
    out[index] = 0
    return out
