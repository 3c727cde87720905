"""Elementwise ops with broadcasting: arithmetic, unary math, comparisons, copies.

Each op computes its result on arrays, and only when the graph must be recorded does
it allocate a node that saves exactly what its backward needs (``x * y`` saves ``y``
only if ``x`` requires grad, and the reverse): keeping inputs "just in case" is what
makes some engines use several times the memory of the arithmetic itself.
"""
from __future__ import annotations

import math
import numbers

from reference import dtypes
from reference.array_backend import namespace_of, to_device as _move
from reference.autograd.graph import NodeBase, grad_accumulator
from reference.autograd import forward_ad
from reference.ops.recording import (
    add_tangents, attach, edge, edges, has_tangent, needs_grad, propagate_tangent, raw, save_input, save_output, shape_of,
)
from reference.overrides import _state as _dispatch_state, dispatch
from reference.tensor import Tensor, device


_FAST_OPERANDS = frozenset((Tensor, float, int, bool))


def broadcast_error(a, b) -> RuntimeError:
    """PyTorch's message for operands whose shapes do not broadcast."""
    sa, sb = shape_of(a), shape_of(b)
    ndim = max(len(sa), len(sb))
    for i in range(1, ndim + 1):
        da = sa[-i] if i <= len(sa) else 1
        db = sb[-i] if i <= len(sb) else 1
        if da != db and da != 1 and db != 1:
            return RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b ({db}) "
                                f"at non-singleton dimension {ndim - i}")
    return RuntimeError(f"shapes {list(sa)} and {list(sb)} cannot be broadcast together")


def _check_operand(value) -> bool:
    """Tensors and numbers are operands; anything else makes the operator return NotImplemented."""
    return type(value) in _FAST_OPERANDS or isinstance(value, (Tensor, numbers.Number))


class _Binary(NodeBase):
    """Base of two-input nodes: remembers the input shapes to undo broadcasting."""

    __slots__ = ("_shapes",)


class AddBackward0(_Binary):
    __slots__ = ("_alpha",)

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        sa, sb = self._shapes
        ga = ops.sum_to(g, sa) if a_node is not None else None
        gb = None
        if b_node is not None:
            gb = ops.sum_to(g if self._alpha == 1 else g * self._alpha, sb)
        return (ga, gb)


class SubBackward0(_Binary):
    __slots__ = ()

    @staticmethod
    def jvp(a, b, out, ta, tb):
        return _broadcast(add_tangents(ta, None if tb is None else -tb), out)

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        sa, sb = self._shapes
        return (
            ops.sum_to(g, sa) if a_node is not None else None,
            ops.sum_to(-g, sb) if b_node is not None else None,
        )


class MulBackward0(_Binary):
    __slots__ = ()
    saved_names = ("self", "other")

    @staticmethod
    def jvp(a, b, out, ta, tb):
        return _broadcast(add_tangents(None if ta is None else ta * b, None if tb is None else a * tb), out)

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        sa, sb = self._shapes
        as_tensor = ops.differentiable
        ga = gb = None
        if a_node is not None:
            ga = ops.sum_to(g * self._unpack(1, as_tensor), sa)
        if b_node is not None:
            gb = ops.sum_to(g * self._unpack(0, as_tensor), sb)
        return (ga, gb)


class DivBackward0(_Binary):
    __slots__ = ()
    saved_names = ("self", "other")

    @staticmethod
    def jvp(a, b, out, ta, tb):
        return _broadcast(add_tangents(None if ta is None else ta / b, None if tb is None else -tb * a / (b * b)), out)

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        sa, sb = self._shapes
        as_tensor = ops.differentiable
        other = self._unpack(1, as_tensor)
        ga = gb = None
        if a_node is not None:
            ga = ops.sum_to(g / other, sa)
        if b_node is not None:
            gb = ops.sum_to(-g * self._unpack(0, as_tensor) / (other * other), sb)
        return (ga, gb)


class PowBackward0(NodeBase):
    """tensor ** number"""

    __slots__ = ()
    saved_names = ("self", "exponent")

    @staticmethod
    def jvp(x, exponent, out, t):
        if t is None:
            return None
        return t * 0 if exponent == 0 else t * exponent * x ** (exponent - 1)

    def apply(self, ops, grads):
        x = self._unpack(0, ops.differentiable)
        exponent = self._unpack(1, ops.differentiable)
        if exponent == 0:
            return (grads[0] * 0,)
        return (grads[0] * exponent * x ** (exponent - 1),)


class PowBackward1(_Binary):
    """tensor ** tensor (or number ** tensor)"""

    __slots__ = ()
    saved_names = ("self", "exponent", "result")

    @staticmethod
    def jvp(a, b, out, ta, tb):
        log_a = a.log() if isinstance(a, Tensor) else _log_scalar(a)
        return _broadcast(add_tangents(
            None if ta is None else ta * b * a ** (b - 1), None if tb is None else tb * out * log_a), out)

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        sa, sb = self._shapes
        as_tensor = ops.differentiable
        base = self._unpack(0, as_tensor)
        exponent = self._unpack(1, as_tensor)
        ga = gb = None
        if a_node is not None:
            ga = ops.sum_to(g * exponent * base ** (exponent - 1), sa)
        if b_node is not None:
            log_base = ops.log(base) if not isinstance(base, numbers.Number) else _log_scalar(base)
            gb = ops.sum_to(g * self._unpack(2, as_tensor) * log_base, sb)
        return (ga, gb)


class PowBackward2(PowBackward1):
    """number ** tensor: torch's name for the scalar-base overload (the same formula here)."""

    __slots__ = ()


def _log_scalar(value):
    return math.log(value) if value > 0 else float("nan")


def _binary(node_cls, a, b, out_data, save=None):
    """Wrap a two-input op's result; record ``node_cls`` (``save(out)`` gives its saved
    tuple) and propagate tangents (``node_cls.jvp``) when needed."""
    out = Tensor._wrap(out_data)
    if needs_grad(a, b):
        node = node_cls((edge(a), edge(b)))
        node._shapes = (shape_of(a), shape_of(b))
        attach(out, node)
        if save is not None:
            node._saved = save(a, b, out)
    if (getattr(a, "_fw_grads", None) or getattr(b, "_fw_grads", None)) and forward_ad.propagating():
        propagate_tangent(out, lambda ta, tb: node_cls.jvp(a, b, out, ta, tb), a, b)  # (has_tangent, inline)
    return out


def add(self, other, alpha=1):
    if other.__class__ not in _FAST_OPERANDS:
        if not _check_operand(other):
            return NotImplemented
        if isinstance(other, Tensor) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
            return dispatch(add, (self, other), {"alpha": alpha})
    try:
        other_data = getattr(other, "_array", other)  # (raw(), inline: the hot path)
        data = getattr(self, "_array", self) + (other_data if alpha == 1 else other_data * alpha)
    except ValueError:
        raise broadcast_error(self, other) from None
    out = Tensor._wrap(data)
    if needs_grad(self, other):
        node = AddBackward0((edge(self), edge(other)))
        node._shapes = (shape_of(self), shape_of(other))
        node._alpha = alpha
        attach(out, node)
    if has_tangent(self, other):
        propagate_tangent(out, lambda ta, tb: _broadcast(add_tangents(ta, None if tb is None else tb * alpha), out),
                          self, other)
    return out


def _broadcast(tangent, out):
    """A tangent with the output's shape (inputs may have broadcast)."""
    if tangent is None or tangent.shape == out.shape:
        return tangent
    return tangent.expand(*out.shape).clone()


def radd(self, other):
    if not _check_operand(other):
        return NotImplemented
    return add(self, other)


def sub(self, other, alpha=1):
    if other.__class__ not in _FAST_OPERANDS:
        if not _check_operand(other):
            return NotImplemented
        if isinstance(other, Tensor) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
            return dispatch(sub, (self, other), {"alpha": alpha})
    if alpha != 1:
        return add(self, other, alpha=-alpha)
    try:
        data = raw(self) - raw(other)
    except ValueError:
        raise broadcast_error(self, other) from None
    return _binary(SubBackward0, self, other, data)


def rsub(self, other):
    if not _check_operand(other):
        return NotImplemented
    return _binary(SubBackward0, other, self, raw(other) - raw(self))  # other is a number


def _save_mul(a, b, out):
    """x * y saves y only if x requires grad, and x only if y does."""
    a_needs = getattr(a, "_requires_grad", False)
    b_needs = getattr(b, "_requires_grad", False)
    return (save_input(a) if b_needs else None, save_input(b) if a_needs else None)


def mul(self, other):
    if other.__class__ not in _FAST_OPERANDS:
        if not _check_operand(other):
            return NotImplemented
        if isinstance(other, Tensor) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
            return dispatch(mul, (self, other), None)
    try:
        data = getattr(self, "_array", self) * getattr(other, "_array", other)  # (raw(), inline)
    except ValueError:
        raise broadcast_error(self, other) from None
    return _binary(MulBackward0, self, other, data, _save_mul)


def rmul(self, other):
    if not _check_operand(other):
        return NotImplemented
    return mul(other, self)


def _save_div(a, b, out):
    return (save_input(a) if getattr(b, "_requires_grad", False) else None, save_input(b))


def div(self, other):
    if other.__class__ not in _FAST_OPERANDS:
        if not _check_operand(other):
            return NotImplemented
        if isinstance(other, Tensor) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
            return dispatch(div, (self, other), None)
    try:
        data = raw(self) / raw(other)
    except ValueError:
        raise broadcast_error(self, other) from None
    return _binary(DivBackward0, self, other, data, _save_div)


def rdiv(self, other):
    if not _check_operand(other):
        return NotImplemented
    return div(other, self)


def pow(self, exponent):
    if exponent.__class__ not in _FAST_OPERANDS:
        if not _check_operand(exponent):
            return NotImplemented
        if isinstance(exponent, Tensor) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
            return dispatch(pow, (self, exponent), None)
    if isinstance(exponent, numbers.Number):
        out = Tensor._wrap(raw(self) ** exponent)
        if needs_grad(self):
            node = PowBackward0(edges(self))
            attach(out, node)
            node._saved = (save_input(self), exponent)
        if has_tangent(self):
            propagate_tangent(out, lambda t: PowBackward0.jvp(self, exponent, out, t), self)
        return out
    try:
        data = raw(self) ** raw(exponent)
    except ValueError:
        raise broadcast_error(self, exponent) from None
    return _binary(PowBackward1, self, exponent, data, _save_pow)


def _save_pow(base, exponent, out):
    return (save_input(base), save_input(exponent), save_output(out))


def rpow(self, base):
    if not _check_operand(base):
        return NotImplemented
    node_cls = PowBackward1 if isinstance(base, Tensor) else PowBackward2
    return _binary(node_cls, base, self, raw(base) ** raw(self), _save_pow)


# -- unary ---------------------------------------------------------------------------
class NegBackward0(NodeBase):
    __slots__ = ()

    @staticmethod
    def jvp(x, out, t):
        return -t

    def apply(self, ops, grads):
        return (-grads[0],)


class ExpBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("result",)

    @staticmethod
    def jvp(x, out, t):
        return t * out

    def apply(self, ops, grads):
        return (grads[0] * self._unpack(0, ops.differentiable),)


class LogBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("self",)

    @staticmethod
    def jvp(x, out, t):
        return t / x

    def apply(self, ops, grads):
        return (grads[0] / self._unpack(0, ops.differentiable),)


class TanhBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("result",)

    @staticmethod
    def jvp(x, out, t):
        return t * (1 - out * out)

    def apply(self, ops, grads):
        y = self._unpack(0, ops.differentiable)
        return (grads[0] * (1 - y * y),)


class SigmoidBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("result",)

    @staticmethod
    def jvp(x, out, t):
        return t * (out * (1 - out))

    def apply(self, ops, grads):
        y = self._unpack(0, ops.differentiable)
        return (grads[0] * (y * (1 - y)),)


class ReluBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("result",)

    @staticmethod
    def jvp(x, out, t):
        return t * to_dtype(x > 0, x.dtype)

    def apply(self, ops, grads):
        return (grads[0] * ops.positive_mask(self._unpack(0, ops.differentiable)),)


class SinBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("self",)

    @staticmethod
    def jvp(x, out, t):
        return t * x.cos()

    def apply(self, ops, grads):
        return (grads[0] * ops.cos(self._unpack(0, ops.differentiable)),)


class CosBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("self",)

    @staticmethod
    def jvp(x, out, t):
        return -t * x.sin()

    def apply(self, ops, grads):
        return (-grads[0] * ops.sin(self._unpack(0, ops.differentiable)),)


class SqrtBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("result",)

    @staticmethod
    def jvp(x, out, t):
        return t / (2 * out)

    def apply(self, ops, grads):
        return (grads[0] / (2 * self._unpack(0, ops.differentiable)),)


class AbsBackward0(NodeBase):
    __slots__ = ()
    saved_names = ("self",)

    @staticmethod
    def jvp(x, out, t):
        return t * x.sign()

    def apply(self, ops, grads):
        return (grads[0] * ops.sign(self._unpack(0, ops.differentiable)),)


class SignBackward0(NodeBase):
    __slots__ = ()

    @staticmethod
    def jvp(x, out, t):
        return t * 0

    def apply(self, ops, grads):
        return (grads[0] * 0,)


class CloneBackward0(NodeBase):
    __slots__ = ()

    @staticmethod
    def jvp(x, out, t):
        return t.clone()

    def apply(self, ops, grads):
        return (grads[0],)


class ToCopyBackward0(NodeBase):
    __slots__ = ("_dtype", "_device")

    @staticmethod
    def jvp(x, out, t):
        return t.to(out.device).to(out.dtype)

    def apply(self, ops, grads):
        g = ops.to_dtype_of(grads[0], self._dtype)
        return (ops.to_device(g, self._device),)


def _unary(node_cls, x, data, saves=None):
    out = Tensor._wrap(data)
    if needs_grad(x):  # (needs_grad and attach stay calls: the one place every op decides and records)
        x_node = x._node  # recording.edge, inline (the hot path of every unary op)
        node = node_cls(((x_node, x._output_nr) if x_node is not None else (grad_accumulator(x), 0),))
        attach(out, node)
        if saves == "self":
            node._saved = (save_input(x),)
        elif saves == "result":
            node._saved = (save_output(out),)
    if x._fw_grads and forward_ad.propagating():
        propagate_tangent(out, lambda t: None if t is None else node_cls.jvp(x, out, t), x)
    return out


def neg(self):
    return _unary(NegBackward0, self, -self._array)


def exp(self):
    return _unary(ExpBackward0, self, namespace_of(self._array).exp(self._array), "result")


def log(self):
    return _unary(LogBackward0, self, namespace_of(self._array).log(self._array), "self")


def tanh(self):
    return _unary(TanhBackward0, self, namespace_of(self._array).tanh(self._array), "result")


def sigmoid(self):
    data = self._array
    xp = namespace_of(data)
    return _unary(SigmoidBackward0, self, 1 / (1 + xp.exp(-data)), "result")


def relu(self):
    data = self._array
    return _unary(ReluBackward0, self, namespace_of(data).maximum(data, 0).astype(data.dtype, copy=False), "result")


def sin(self):
    return _unary(SinBackward0, self, namespace_of(self._array).sin(self._array), "self")


def cos(self):
    return _unary(CosBackward0, self, namespace_of(self._array).cos(self._array), "self")


def sqrt(self):
    return _unary(SqrtBackward0, self, namespace_of(self._array).sqrt(self._array), "result")


def abs(self):
    return _unary(AbsBackward0, self, namespace_of(self._array).abs(self._array), "self")


def sign(self):
    return _unary(SignBackward0, self, namespace_of(self._array).sign(self._array))


def clone(self):
    return _unary(CloneBackward0, self, self._array.copy())


def to_dtype(self, dtype):
    out = _unary(ToCopyBackward0, self, self._array.astype(dtypes.to_numpy_dtype(dtype)))
    if out._node is not None:
        if not dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        out._node._dtype = self.dtype
        out._node._device = self.device.type
    return out


def to_device(self, device_type):
    out = _unary(ToCopyBackward0, self, _move(self._array, device_type))
    if out._node is not None:
        out._node._dtype = self.dtype
        out._node._device = self.device.type
    return out


def type_as(self, other):
    """``self.to(other.dtype)``; a subclass instance as ``other`` makes the result its class, as
    in torch, whose dispatch considers every tensor argument."""
    if other.__class__ is not Tensor and isinstance(other, Tensor) and not _dispatch_state.disabled:
        return dispatch(type_as, (self, other), None)  # rule: identity.subclass-op-results-are-subclass
    return to(self, other.dtype)


def to(self, target=None, dtype=None, copy=False):
    """``Tensor.to``: a copy in another dtype and/or on another device (self when nothing changes)."""
    if isinstance(target, dtypes.dtype):
        target, dtype = None, target
    out = self
    if dtype is not None and dtype is not self.dtype:
        out = to_dtype(out, dtype)
    if target is not None and device(target) != self.device:
        out = to_device(out, device(target).type)
    if copy and out is self:
        out = self.clone()
    return out


# -- comparisons: results never require grad ------------------------------------------
def _compare(op):
    def compare(self, other):
        if other.__class__ not in _FAST_OPERANDS:
            if not _check_operand(other):
                return NotImplemented
            if isinstance(other, Tensor) and not _dispatch_state.disabled:
                return dispatch(compare, (self, other))
        try:
            return Tensor._wrap(op(raw(self), raw(other)))
        except ValueError:
            raise broadcast_error(self, other) from None

    return compare


eq = _compare(lambda a, b: a == b)
ne = _compare(lambda a, b: a != b)
lt = _compare(lambda a, b: a < b)
le = _compare(lambda a, b: a <= b)
gt = _compare(lambda a, b: a > b)
ge = _compare(lambda a, b: a >= b)


class MaskedFillBackward0(NodeBase):
    """``x.masked_fill(mask, value)``: the gradient flows to ``x`` where ``mask`` is False."""

    __slots__ = ("_keep",)

    def apply(self, ops, grads):
        keep = self._keep
        return (grads[0] * (Tensor._wrap(keep) if ops.differentiable else keep),)


def masked_fill(self, mask, value):
    """A copy of ``self`` with ``value`` where the boolean ``mask`` (broadcast to self) is True."""
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_fill only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        if value.requires_grad:
            raise NotImplementedError("the reference's masked_fill takes no gradient for a value tensor")
        value = value._array
    xp = namespace_of(self._array)
    try:
        m = xp.broadcast_to(mask._array, self._array.shape)
    except ValueError:
        raise broadcast_error(self, mask) from None
    data = xp.where(m, xp.asarray(value, dtype=self._array.dtype), self._array)
    keep = (~m).astype(self._array.dtype)
    out = Tensor._wrap(data)
    if needs_grad(self):
        node = MaskedFillBackward0(edges(self))
        node._keep = keep
        attach(out, node)
    if self._fw_grads and forward_ad.propagating():
        propagate_tangent(out, lambda t: None if t is None else t * Tensor._wrap(keep), self)
    return out
