"""Matrix multiplication (numpy's matmul semantics, batched and broadcast)."""
from __future__ import annotations

from reference.array_backend import namespace_of
from reference.autograd.graph import NodeBase
from reference.ops.recording import (
    add_tangents, attach, edge, edges, has_tangent, needs_grad, propagate_tangent, save_input,
)
from reference.overrides import _state as _dispatch_state, dispatch, has_subclass
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


class AddmmBackward0(NodeBase):
    """``input + mat1 @ mat2`` for 2-D ``mat1``, ``mat2`` (``input`` broadcast to the result):
    the node nn.Linear records, as torch's ``addmm``. ``mat1`` is saved when ``mat2`` needs a
    gradient and the other way round, as for ``mm``."""

    __slots__ = ("_input_shape",)
    saved_names = ("mat1", "mat2")

    def apply(self, ops, grads):
        g = grads[0]
        (input_node, _), (a_node, _), (b_node, _) = self._next_functions
        as_tensor = ops.differentiable
        g_input = ops.sum_to(g, self._input_shape) if input_node is not None else None
        g_a = ops.matmul(g, ops.mT(self._unpack(1, as_tensor))) if a_node is not None else None
        g_b = ops.matmul(ops.mT(self._unpack(0, as_tensor)), g) if b_node is not None else None
        return (g_input, g_a, g_b)


def addmm(input, mat1, mat2):  # noqa: A002 (torch's name)
    """``input + mat1 @ mat2``, one node (``AddmmBackward0``): nn.Linear's product and bias."""
    if not _dispatch_state.disabled and has_subclass((input, mat1, mat2)):
        return dispatch(addmm, (input, mat1, mat2))
    a, b = mat1._array, mat2._array
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"addmm: mat1 and mat2 must be matrices, got {a.ndim}-D and {b.ndim}-D")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} "
                           f"and {b.shape[0]}x{b.shape[1]})")
    xp = namespace_of(a)
    out = Tensor._wrap(input._array + xp.matmul(a, b))
    if needs_grad(input, mat1) or needs_grad(mat2):
        node = AddmmBackward0((edge(input), edge(mat1), edge(mat2)))
        node._input_shape = input._array.shape
        attach(out, node)
        node._saved = (
            save_input(mat1) if mat2._requires_grad else None,
            save_input(mat2) if mat1._requires_grad else None,
        )
    if has_tangent(input, mat1) or has_tangent(mat2):
        propagate_tangent(
            out, lambda ti, ta, tb: add_tangents(
                add_tangents(ti, None if ta is None else ta @ mat2), None if tb is None else mat1 @ tb),
            input, mat1, mat2)
    return out


def rmatmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)
