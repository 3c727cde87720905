"""Matrix multiplication (numpy's matmul semantics, batched and broadcast)."""
from __future__ import annotations

from reference.array_backend import namespace_of
from reference.autograd.graph import NodeBase
from reference.ops.recording import (
    add_tangents, attach, edges, has_tangent, needs_grad, propagate_tangent, save_input,
)
from reference.overrides import _state as _dispatch_state, dispatch
from reference.tensor import Tensor


class MmBackward0(NodeBase):
    __slots__ = ("_shapes",)
    saved_names = ("self", "mat2")

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        sa, sb = self._shapes
        as_tensor = ops.differentiable
        ga = gb = None
        a = self._unpack(0, as_tensor) if b_node is not None else None
        b = self._unpack(1, as_tensor) if a_node is not None else None
        # promote vectors to matrices so one formula serves every case
        if len(sa) == 1 and len(sb) == 1:
            if a_node is not None:
                ga = g * b
            if b_node is not None:
                gb = g * a
            return (ga, gb)
        if len(sa) == 1:
            g = ops.reshape(g, g.shape[:-1] + (1,) + g.shape[-1:])
            if a is not None:
                a = ops.reshape(a, (1,) + tuple(sa))
        if len(sb) == 1:
            g = ops.reshape(g, tuple(g.shape) + (1,))
            if b is not None:
                b = ops.reshape(b, tuple(sb) + (1,))
        if a_node is not None:
            ga = ops.matmul(g, ops.mT(b))
            ga = ops.reshape(ops.sum_to(ga, (1,) + tuple(sa)) if len(sa) == 1 else ops.sum_to(ga, sa), sa)
        if b_node is not None:
            gb = ops.matmul(ops.mT(a), g)
            gb = ops.reshape(ops.sum_to(gb, tuple(sb) + (1,)) if len(sb) == 1 else ops.sum_to(gb, sb), sb)
        return (ga, gb)


def matmul(self, other):
    if other.__class__ is not Tensor:
        if not isinstance(other, Tensor):
            return NotImplemented
        if not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
            return dispatch(matmul, (self, other))
    a, b = self._array, other._array
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    try:
        data = namespace_of(a).matmul(a, b)
    except ValueError:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the "
                f"same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
            ) from None
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape))} and "
            f"{'x'.join(map(str, b.shape))})"
        ) from None
    out = Tensor._wrap(data)
    if needs_grad(self, other):
        node = MmBackward0(edges(self, other))
        node._shapes = (a.shape, b.shape)
        attach(out, node)
        node._saved = (
            save_input(self) if other._requires_grad else None,
            save_input(other) if self._requires_grad else None,
        )
    if has_tangent(self, other):
        propagate_tangent(
            out, lambda ta, tb: add_tangents(None if ta is None else ta @ other, None if tb is None else self @ tb),
            self, other)
    return out


def rmatmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)
