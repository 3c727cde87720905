"""Reductions: sum, mean and var_mean over all or some dimensions, all / any (not differentiable), and sum_to_size."""
from __future__ import annotations

import builtins

from reference import array_backend
from reference.autograd.graph import NodeBase
from reference.ops.recording import attach, edges, has_tangent, needs_grad, propagate_tangent, save_input
from reference.tensor import Tensor


def _normalize_dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    out = []
    for d in dim:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got {d})"
            )
        out.append(d % ndim if ndim else 0)
    return tuple(sorted(set(out)))


class SumBackward0(NodeBase):
    """Sum over dims: the gradient is broadcast back over the reduced dims."""

    __slots__ = ("_shape", "_dims", "_keepdim")

    def apply(self, ops, grads):
        g = grads[0]
        if not self._keepdim and self._dims:
            g = ops.unsqueeze_dims(g, self._dims)
        return (ops.expand_to(g, self._shape),)


class MeanBackward0(SumBackward0):
    __slots__ = ("_count",)

    def apply(self, ops, grads):
        (g,) = SumBackward0.apply(self, ops, grads)
        return (g / self._count,)


def _reduce(node_cls, self, dim, keepdim, data):
    out = Tensor._wrap(data)
    if needs_grad(self):
        node = node_cls(edges(self))
        node._shape = self._array.shape
        node._dims = _normalize_dims(dim, self._array.ndim) if self._array.ndim else ()
        node._keepdim = keepdim
        attach(out, node)
    return out


def sum(self, dim=None, keepdim=False, dtype=None):
    data = self._array
    axes = None if dim is None else _normalize_dims(dim, data.ndim)
    if data.ndim == 0:
        axes = None
    result = data.sum(axis=axes, keepdims=keepdim)
    if data.dtype.kind == "b":
        result = result.astype("int64")
    out = _reduce(SumBackward0, self, dim, keepdim, result)
    if has_tangent(self):
        propagate_tangent(out, lambda t: None if t is None else sum(t, dim, keepdim), self)
    return out


def mean(self, dim=None, keepdim=False):
    data = self._array
    if not data.dtype.kind == "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
            f"Got: {self.dtype.name}"
        )
    axes = None if dim is None or data.ndim == 0 else _normalize_dims(dim, data.ndim)
    out = _reduce(MeanBackward0, self, dim, keepdim, data.mean(axis=axes, keepdims=keepdim))
    if out._node is not None:
        count = 1
        for d in (range(data.ndim) if axes is None else axes):
            count *= data.shape[d]
        out._node._count = count
    if has_tangent(self):
        propagate_tangent(out, lambda t: None if t is None else mean(t, dim, keepdim), self)
    return out


class VarMeanBackward0(NodeBase):
    """One node, two outputs (variance, mean); either may have received no gradient."""

    __slots__ = ("_shape", "_dims", "_keepdim", "_count", "_correction")
    saved_names = ("self",)
    _none_passes = False  # runs when only the mean's gradient arrived

    @property
    def num_outputs(self) -> int:
        return 2

    def _spread(self, ops, g):
        return g if self._keepdim or not self._dims else ops.unsqueeze_dims(g, self._dims)

    def apply(self, ops, grads):
        g_var, g_mean = grads
        total = None
        if g_mean is not None:
            total = ops.expand_to(self._spread(ops, g_mean), self._shape) / self._count
        if g_var is not None:
            x = self._unpack(0, ops.differentiable)
            centered = x - ops.sum_dims(x, self._dims, True) / self._count
            term = centered * (2.0 / builtins.max(self._count - self._correction, 0)) * self._spread(ops, g_var)
            total = term if total is None else total + term
        return (total,)


def var_mean(self, dim=None, *, correction=None, keepdim=False, unbiased=None):
    """``(variance, mean)`` over ``dim`` (all dims by default); one node, two outputs."""
    data = self._array
    if data.dtype.kind != "f":
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got {self.dtype.name}")
    correction = (1 if unbiased is None or unbiased else 0) if correction is None else correction
    axes = None if dim is None or data.ndim == 0 else _normalize_dims(dim, data.ndim)
    dims = tuple(range(data.ndim)) if axes is None else axes
    count = 1
    for d in dims:
        count *= data.shape[d]
    xp = array_backend.namespace_of(data)
    mean_data = data.mean(axis=axes, keepdims=keepdim)
    var_data = xp.asarray(data.var(axis=axes, keepdims=keepdim, ddof=correction) if count > correction
                          else xp.full(mean_data.shape, xp.nan, dtype=data.dtype)).astype(data.dtype, copy=False)
    var, mean = Tensor._wrap(xp.asarray(var_data)), Tensor._wrap(xp.asarray(mean_data).astype(data.dtype, copy=False))
    if has_tangent(self):
        raise NotImplementedError("Trying to use forward AD with var_mean that does not support it")
    if needs_grad(self):
        node = VarMeanBackward0(edges(self))
        node._shape, node._dims, node._keepdim = data.shape, dims, keepdim
        node._count, node._correction = count, correction
        node._saved = (save_input(self),)
        attach(var, node, 0)
        attach(mean, node, 1)
    return var, mean


def all(self, dim=None, keepdim=False):  # noqa: A001 - torch's name
    """Whether every element (along ``dim``) is nonzero: a bool tensor, never differentiable."""
    data = self._array
    axes = None if dim is None or data.ndim == 0 else _normalize_dims(dim, data.ndim)
    return Tensor._wrap(array_backend.namespace_of(data).asarray(data.astype(bool).all(axis=axes, keepdims=keepdim)))


def any(self, dim=None, keepdim=False):  # noqa: A001 - torch's name
    """Whether some element (along ``dim``) is nonzero: a bool tensor, never differentiable."""
    data = self._array
    axes = None if dim is None or data.ndim == 0 else _normalize_dims(dim, data.ndim)
    return Tensor._wrap(array_backend.namespace_of(data).asarray(data.astype(bool).any(axis=axes, keepdims=keepdim)))


class SumToSizeBackward0(NodeBase):
    __slots__ = ("_shape",)

    def apply(self, ops, grads):
        return (ops.expand_to(grads[0], self._shape),)


def sum_to_size(self, shape):
    """Sum a broadcast tensor back down to ``shape`` (differentiable)."""
    shape = tuple(shape)
    if self._array.shape == shape:
        return self
    out = Tensor._wrap(array_backend.sum_to(self._array, shape))
    if needs_grad(self):
        node = SumToSizeBackward0(edges(self))
        node._shape = self._array.shape
        attach(out, node)
    if has_tangent(self):
        propagate_tangent(out, lambda t: None if t is None else sum_to_size(t, shape), self)
    return out


class ProdBackward0(NodeBase):
    """Product over one dim: each element's gradient is the product of the others in its slice."""

    __slots__ = ("_dim", "_keepdim")
    saved_names = ("self",)

    def apply(self, ops, grads):
        x = self._unpack(0, ops.differentiable)
        d, g = self._dim, grads[0]
        if not self._keepdim:
            g = ops.unsqueeze_dims(g, (d,))
        if ops.differentiable:
            if not bool((x._array == 0).any()):
                return (g * prod(x, d, True) / x,)
            # with zeros, the product of the others, element by element along d (exact, differentiable)
            others = None
            for i in range(x.shape[d]):
                xp = array_backend.namespace_of(x._array)
                onehot = xp.zeros(x.shape[d], dtype=bool)
                onehot[i] = True
                onehot = Tensor._wrap(onehot.reshape([-1 if k == d else 1 for k in range(x.dim())]))
                term = prod(x.masked_fill(onehot, 1.0), d, True) * Tensor._wrap(onehot._array.astype(x._array.dtype))
                others = term if others is None else others + term
            return (g * others,)
        xp = array_backend.namespace_of(x)
        if not (x == 0).any():
            return (g * x.prod(axis=d, keepdims=True) / x,)
        moved = xp.moveaxis(x, d, -1)
        others = xp.empty_like(moved)
        for i in range(moved.shape[-1]):
            rest = moved.copy()
            rest[..., i] = 1
            others[..., i] = rest.prod(axis=-1)
        return (g * xp.moveaxis(others, -1, d),)


def prod(self, dim=None, keepdim=False, dtype=None):
    """Product of all elements, or over one dim (``keepdim`` keeps it with size 1)."""
    if dtype is not None and dtype is not self.dtype:
        self = self.to(dtype)
    if dim is None:
        return prod(self.reshape(-1), 0, False)
    if not isinstance(dim, int):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    data = self._array
    if data.ndim == 0:
        _normalize_dims(dim, 0)
        result, dim = data.copy(), None
    else:
        dim = _normalize_dims(dim, data.ndim)[0]
        result = data.prod(axis=dim, keepdims=keepdim)
        if data.dtype.kind == "b":
            result = result.astype("int64")
    out = Tensor._wrap(array_backend.namespace_of(data).asarray(result))
    if has_tangent(self):
        raise NotImplementedError("Trying to use forward AD with prod that does not support it")
    if needs_grad(self):
        if dim is None:  # 0-d: the identity
            return self.clone()
        node = ProdBackward0(edges(self))
        node._dim, node._keepdim = dim, keepdim
        node._saved = (save_input(self),)
        attach(out, node)
    return out
