"""In-place ops: they change the array, bump the version counter, rewrite history.

After ``b.mul_(2)`` the tensor ``b`` is the same Python object with a new grad_fn whose
input is b's previous history; hooks registered on b before the op stay with the old
history (they are stored on the old node), ``retain_grad`` moves to the new one, and
every node that saved b will refuse to unpack it (version mismatch).
"""
from __future__ import annotations

import numpy

from reference import grad_mode
from reference.array_backend import device_type_of, namespace_of, to_device
from reference.autograd import forward_ad
from reference.autograd import graph as _graph
from reference.autograd.graph import NodeBase
from reference.creation import zeros_like
from reference.ops.pointwise import _FAST_OPERANDS, AddBackward0, DivBackward0, MulBackward0, clone
from reference.overrides import _state as _dispatch_state, dispatch
from reference.ops.recording import (
    attach, edge, edges, has_tangent, needs_grad, raw, rebase_history, save_input, save_output, shape_of,
)
from reference.ops import views
from reference.ops.views import (
    AsStridedBackward0, SqueezeBackward0, TBackward0, TransposeBackward0, UnsqueezeBackward0, _normalize_index,
    _shape_arg, refresh_views, regenerate_view,
)
from reference.storage import root_of, storage_offset as _storage_offset, window
from reference.tensor import Tensor

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
VIEW_INPLACE_UNSUPPORTED = (
    "the reference engine does not record in-place operations on this kind of view (the body of "
    "a dual tensor). Apply the op out of place, or modify the base tensor directly."
)
MULTI_VIEW_INPLACE = (
    "This view is the output of a function that returns multiple views. Such functions do not allow the "
    "output views to be modified inplace. You should replace the inplace operation by an out-of-place one."
)


def check_inplace(tensor: Tensor) -> None:
    """PyTorch's guards on modifying a tensor in place while grad mode is on."""
    if not grad_mode._state.enabled:
        return
    if tensor._node is None and tensor._requires_grad and tensor._base is None:
        # rule: engine.leaf-inplace-error
        raise RuntimeError(LEAF_INPLACE)
    base = tensor._base
    if base is not None and base._node is None and base._requires_grad:
        check_view_inplace(tensor, None)  # as in torch, a no_grad or multi-output view says so first
        raise RuntimeError(VIEW_OF_LEAF_INPLACE)  # rule: views.inplace-on-view-of-leaf-refused


def _no_grad_view_message(tensor, inference, of_view):
    if inference:
        mode, now, block = "inference mode", "in normal mode", "inference_mode"
    else:
        mode, now, block = "no_grad mode", "with grad mode enabled", "no_grad"
    if of_view:
        name = tensor._node.name().removesuffix("Backward0") if tensor._node is not None else "View"
        what = f"Output {tensor._output_nr} of {name} is a view of a view which was created in {mode} and is"
    else:
        what = f"A view was created in {mode} and is"
    return (f"{what} being modified inplace {now}. Given that this use case is ambiguous and error-prone, it is "
            "forbidden. You can clarify your code by moving both the view and the inplace either both inside the "
            f"{block} block (if you don't want the inplace to be tracked) or both outside (if you want the inplace "
            "to be tracked).")


def _custom_function_view_message(tensor):
    # torch 2.13 names the view's grad_fn when it has one, else says no_grad mode (a Function
    # that did not record ran its forward in no_grad)
    if tensor._node is not None:
        what = f"Output {tensor._output_nr} of {_graph._short_name(tensor._node)} is a view and is being modified inplace."
    else:
        what = "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
    return (f"{what} This view was created inside a custom Function (or because an input was returned as-is) "
            "and the autograd logic to handle view+inplace would override the custom backward associated with "
            "the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this "
            "by cloning the output of the custom Function.")


def check_view_inplace(tensor: Tensor, other) -> None:
    """A view made under no_grad may not be modified in place in grad mode when the result
    would require grad (rule: views.inplace-on-no-grad-view-refused); nor, the same way, an
    output of unbind / split / chunk or a view of one (rule: views.inplace-on-multi-output-view),
    nor a view a custom Function returned (its backward would be bypassed)."""
    if not grad_mode._state.enabled or not (tensor._base._requires_grad or tensor._requires_grad
                                            or getattr(other, "_requires_grad", False)):
        return
    if getattr(tensor, "_view_custom_function", False):
        raise RuntimeError(_custom_function_view_message(tensor))
    made = getattr(tensor, "_view_no_grad", None)
    if made is not None:
        raise RuntimeError(_no_grad_view_message(tensor, *made))
    multi = getattr(tensor, "_multi_view", None)
    if multi is not None:
        # rule: views.inplace-on-multi-output-view -- torch names the tensor's own grad_fn (an output of
        # unbind, or a view of one), and says no_grad mode where the tensor has none
        node = tensor._node
        what = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled."
                if node is None else
                f"Output {tensor._output_nr} of {_graph._short_name(node)} is a view and is being "
                "modified inplace.")
        raise RuntimeError(f"{what} {MULTI_VIEW_INPLACE}")


def _check_overlap(tensor: Tensor, other) -> None:
    """PyTorch refuses an in-place op whose input partly overlaps what it writes (the
    result would depend on the order elements are written); the very same array is fine."""
    if not isinstance(other, Tensor) or other._array is tensor._array:
        return
    a, b = tensor._array, other._array
    if not namespace_of(a).may_share_memory(a, b):
        return
    if a.shape == b.shape and a.strides == b.strides and _address(a) == _address(b):
        return
    raise RuntimeError(
        "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
        "single memory location. Please clone() the tensor before performing the operation."
    )


def _address(array) -> int:
    interface = getattr(array, "__array_interface__", None)
    return interface["data"][0] if interface is not None else array.data.ptr


def bump_version(tensor: Tensor) -> None:
    tensor._version_counter[0] += 1


class CopySlices(NodeBase):
    """The base's history after an in-place op on one of its views.

    ``fn`` is the in-place op's own node (or a custom Function's ctx that marked a view
    dirty); its input ``self_index`` was the view. The base's gradient flows through
    unchanged except in the view's region, where ``fn`` maps the region's gradient to the
    gradient of the view's old values. Next functions: fn's, with the base's previous
    history in place of the view's. Saved tensors are fn's (released with this node).
    rule: views.inplace-on-view-rewrites-base
    """

    __slots__ = ("_fn", "_view_fn", "_self_index", "_fn_output_nr")

    def __init__(self, fn, next_functions, view_fn, self_index, fn_output_nr):
        self._fn = fn
        super().__init__(next_functions)
        self._view_fn = view_fn
        self._self_index = self_index
        self._fn_output_nr = fn_output_nr

    @property
    def _saved(self):  # rule: views.inplace-on-view-frees-saved (the engine releases fn's saved tensors)
        return self._fn._saved

    @_saved.setter
    def _saved(self, value):
        if value != ():
            self._fn._saved = value

    def name(self) -> str:
        return "CopySlices"

    def apply(self, ops, grads):
        grad = grads[0]
        fn = self._fn
        fn_grads_in = [None] * fn.num_outputs
        if ops.differentiable:  # rule: views.inplace-on-view-double-backward
            result = grad.clone()
            region = self._view_fn(result)
            fn_grads_in[self._fn_output_nr] = region.clone()
            fn_grads = list(fn.apply(ops, fn_grads_in))
            first = fn_grads[self._self_index]
            if first is None:
                region.zero_()
            else:
                region.copy_(first)
        else:
            result = namespace_of(grad).array(grad, copy=True)
            with grad_mode.no_grad():
                region = self._view_fn(Tensor._wrap(result))._array
            fn_grads_in[self._fn_output_nr] = region.copy()
            fn_grads = list(fn.apply(ops, fn_grads_in))
            first = fn_grads[self._self_index]
            region[...] = 0 if first is None else first
        fn_grads[self._self_index] = result
        return tuple(fn_grads)


def rebase_view_history(view: Tensor, fn, self_index: int = 0, fn_output_nr: int = 0) -> None:
    """After ``fn`` modified ``view`` in place: the base's history becomes CopySlices(fn),
    and every view of the base (this one first) gets a history replayed from it."""
    base = view._base
    next_functions = list(fn._next_functions)
    next_functions[self_index] = edge(base)
    next_functions = tuple(next_functions)
    fn._next_functions = next_functions
    # rule: views.inplace-on-view-rewrites-base
    rebase_history(base, CopySlices(fn, next_functions, view._view_fn, self_index, fn_output_nr))
    regenerate_view(view)
    refresh_views(base, skip=view)


# In-place arithmetic records its out-of-place twin's node, name included (torch 2.13 names
# ``x.mul_(y)``'s node MulBackward0, as ``x * y``'s: the ``*Backward1`` of older releases were
# the Scalar overloads): self has the output's shape, so undoing broadcasting leaves its
# gradient as is; only what is saved differs: ``self`` is a snapshot of the old values,
# taken when ``other`` needs a gradient.
class SubBackward0(AddBackward0):
    """self -= alpha * other: torch's name for ``sub_``, an add of ``-alpha`` underneath."""

    __slots__ = ()


class _UnaryInplaceBackward(NodeBase):
    """``x.f_()``: the gradient through ``f``, from the saved result (exp_, relu_: saved after the
    write, so a later write into ``x`` is caught by the version check) or from a snapshot of the
    old values (sin_, cos_: they are gone once written over)."""

    __slots__ = ("_shapes",)
    saved_names = ("result",)

    def apply(self, ops, grads):
        return (grads[0] * self.derivative(ops, self._unpack(0, ops.differentiable)),)


class ExpBackward0(_UnaryInplaceBackward):
    __slots__ = ()
    derivative = staticmethod(lambda ops, result: result)


class ReluBackward0(_UnaryInplaceBackward):
    __slots__ = ()
    derivative = staticmethod(lambda ops, result: ops.positive_mask(result))


class SinBackward0(_UnaryInplaceBackward):
    __slots__ = ()
    saved_names = ("self",)
    derivative = staticmethod(lambda ops, old: ops.cos(old))


class CosBackward0(_UnaryInplaceBackward):
    __slots__ = ()
    saved_names = ("self",)
    derivative = staticmethod(lambda ops, old: -ops.sin(old))


class FillBackward2(NodeBase):
    """fill_(number): the old values no longer matter; the only input is self."""

    __slots__ = ("_shapes",)

    def apply(self, ops, grads):
        return (grads[0] * 0,)


class ZeroBackward0(FillBackward2):
    __slots__ = ()


class FillBackward3(NodeBase):
    """fill_(0-d tensor): the value receives the sum of the gradient."""

    __slots__ = ("_shapes",)

    def apply(self, ops, grads):
        g = grads[0]
        (_, _), (b_node, _) = self._next_functions
        grad_value = None
        if b_node is not None:
            grad_value = ops.sum_to(g, self._shapes[1])
        return (g * 0, grad_value)


class CopyBackwards(NodeBase):
    __slots__ = ("_shapes", "_src_dtype", "_src_device")

    def apply(self, ops, grads):
        g = grads[0]
        (_, _), (b_node, _) = self._next_functions
        grad_src = None
        if b_node is not None:
            grad_src = ops.to_device(ops.to_dtype_of(ops.sum_to(g, self._shapes[1]), self._src_dtype), self._src_device)
        return (g * 0, grad_src)


class IndexPutBackward0(NodeBase):
    """self[index] = value"""

    __slots__ = ("_shapes", "_index")

    def apply(self, ops, grads):
        g = grads[0]
        (a_node, _), (b_node, _) = self._next_functions
        return (
            ops.zero_at_index(g, self._index) if a_node is not None else None,
            ops.sum_to(ops.index(g, self._index), self._shapes[1]) if b_node is not None else None,
        )


def _old_self(self):
    """A snapshot of self before it is overwritten, for backward formulas that need it; a
    differentiable clone when self has history, so that double backward reaches it."""
    if self._requires_grad and grad_mode._state.enabled:
        with forward_ad.suppress_propagation():
            return save_input(clone(self))
    return save_input(Tensor._wrap(self._array.copy()))


def _apply_inplace(self, other, node_cls, mutate, configure=None, tangent_rule=None):
    """Run ``mutate`` on self's array, with autograd's bookkeeping around it.

    ``tangent_rule(t_self, t_other)`` updates self's tangent (forward AD) in place where
    it can and returns the tangent self carries afterwards. It runs before the primal is
    mutated, so it sees the old values (``x *= x`` differentiates as ``x * x``).
    """
    check_inplace(self)
    _check_overlap(self, other)
    base = self._base
    if base is not None:
        check_view_inplace(self, other)
        # rule: views.setitem-makes-nonleaf (a grad-requiring value makes a plain base require grad)
        record = grad_mode._state.enabled and (
            base._requires_grad or self._requires_grad or getattr(other, "_requires_grad", False))
    else:
        record = needs_grad(self, other)
    node = None
    if record:
        if base is not None and getattr(self, "_view_fn", None) is None:
            raise RuntimeError(VIEW_INPLACE_UNSUPPORTED)
        node = node_cls(edges(self) if other is None else edges(self, other))
        node._shapes = (shape_of(self), shape_of(other))
        if configure is not None:
            configure(node)
    # rules: forward_levels.inplace-updates-tangent, forward_levels.inplace-write-makes-dual, forward_levels.views-propagate-tangent
    if tangent_rule is not None and has_tangent(self, other):
        _update_tangent(self, other, tangent_rule)
    watch = _graph._mutation_watch
    if watch is not None:  # rule: saved_tensors.allow-mutation-keeps-saved-value
        watch.before_mutation(self)
    try:
        mutate(self._array)
    except ValueError:
        raise RuntimeError(
            f"output with shape {list(self._array.shape)} doesn't match the broadcast shape "
            f"{list(_broadcast_shape(self._array.shape, shape_of(other)))}"
        ) from None
    bump_version(self)
    if node is not None:
        if base is not None:
            rebase_view_history(self, node)
        else:
            rebase_history(self, node)
            if getattr(self, "_views", None):
                refresh_views(self)  # rule: views.view-history-follows-base
    return self


def _update_tangent(self, other, tangent_rule):
    t_self, t_other = forward_ad.tangents_of(self, other)
    base = self._base
    if t_self is None and t_other is not None and base is not None and getattr(self, "_view_fn", None):
        # writing a dual into a view of a plain tensor: the base gets a (zero) tangent,
        # and the view's tangent is the same view of it, so the write lands in the base's
        if forward_ad.get_tangent(base) is None:
            forward_ad.set_tangent(base, zeros_like(base, dtype=t_other.dtype))
        with forward_ad.suppress_propagation():
            t_self = self._view_fn(forward_ad.get_tangent(base))
        forward_ad.set_tangent(self, t_self)
    with forward_ad.suppress_propagation():
        tangent = tangent_rule(t_self, t_other)
    if tangent is not None and tangent is not t_self:
        forward_ad.set_tangent(self, tangent)


def _broadcast_shape(a, b):
    try:
        return numpy.broadcast_shapes(a, b)
    except ValueError:
        return b


def _fresh_tangent(self, value):
    """A new tangent for a tensor that had none: ``value`` broadcast to self's shape."""
    out = zeros_like(self, dtype=value.dtype)
    out.add_(value)
    return out


def sub_(self, other, alpha=1):
    if other.__class__ not in _FAST_OPERANDS and isinstance(other, Tensor) and not _dispatch_state.disabled:
        return dispatch(sub_, (self, other), {"alpha": alpha})  # rule: identity.subclass-op-results-are-subclass (an alias of self)
    return add_(self, other, -alpha, _node_cls=SubBackward0)


def add_(self, other, alpha=1, *, _node_cls=AddBackward0):
    """``self += alpha * other``, recorded as a ``_node_cls`` (``sub_``'s is SubBackward0)."""
    if other.__class__ not in _FAST_OPERANDS and isinstance(other, Tensor) and not _dispatch_state.disabled:
        return dispatch(add_, (self, other), {"alpha": alpha})  # rule: identity.subclass-op-results-are-subclass (an alias of self)
    value = raw(other) if alpha == 1 else raw(other) * alpha

    def mutate(data):
        data += value

    def tangent_rule(t_self, t_other):
        if t_other is None:
            return t_self
        step = t_other if alpha == 1 else t_other * alpha
        if t_self is None:
            return _fresh_tangent(self, step)
        return t_self.add_(step)

    return _apply_inplace(self, other, _node_cls, mutate, lambda n: setattr(n, "_alpha", alpha), tangent_rule)


def _scale_inplace(self, other, node_cls, mutate, scale_tangent, cross_term):
    """``self *= other`` and ``self /= other``: both save ``other`` (and a snapshot of the
    old self when ``other`` needs a gradient), and both scale self's tangent in place."""

    def configure(node):
        needs_other = getattr(other, "_requires_grad", False)
        node._saved = (_old_self(self) if needs_other else None, save_input(other))

    def tangent_rule(t_self, t_other):
        term = None if t_other is None else cross_term(t_other)  # first: t_other may be t_self
        if t_self is not None:
            scale_tangent(t_self)
        if term is None:
            return t_self
        return _fresh_tangent(self, term) if t_self is None else t_self.add_(term)

    return _apply_inplace(self, other, node_cls, mutate, configure, tangent_rule)


def mul_(self, other):
    if other.__class__ not in _FAST_OPERANDS and isinstance(other, Tensor) and not _dispatch_state.disabled:
        return dispatch(mul_, (self, other), None)  # rule: identity.subclass-op-results-are-subclass (an alias of self)
    value = raw(other)

    def mutate(data):
        data *= value

    return _scale_inplace(self, other, MulBackward0, mutate,
                          lambda t: t.mul_(other), lambda t_other: self * t_other)


def div_(self, other):
    if other.__class__ not in _FAST_OPERANDS and isinstance(other, Tensor) and not _dispatch_state.disabled:
        return dispatch(div_, (self, other), None)  # rule: identity.subclass-op-results-are-subclass (an alias of self)
    value = raw(other)

    def mutate(data):
        data /= value

    return _scale_inplace(self, other, DivBackward0, mutate,
                          lambda t: t.div_(other), lambda t_other: -(self * t_other) / (other * other))


def fill_(self, value, node_cls=FillBackward2):
    raw_value = raw(value)

    def mutate(data):
        data[...] = raw_value

    def tangent_rule(t_self, t_value):
        if t_value is None:
            return None if t_self is None else t_self.zero_()
        if t_self is None:
            return _fresh_tangent(self, t_value)
        return t_self.fill_(t_value)

    if isinstance(value, Tensor):
        return _apply_inplace(self, value, FillBackward3, mutate, tangent_rule=tangent_rule)
    return _apply_inplace(self, None, node_cls, mutate, tangent_rule=tangent_rule)


def zero_(self):
    return fill_(self, 0, ZeroBackward0)


def copy_(self, src, non_blocking=False):
    if src.__class__ not in _FAST_OPERANDS and isinstance(src, Tensor) and not _dispatch_state.disabled:
        return dispatch(copy_, (self, src), {"non_blocking": non_blocking})  # rule: identity.subclass-op-results-are-subclass (an alias of self)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' must be Tensor, not {type(src).__name__}")
    src_data = to_device(src._array, device_type_of(self._array))

    def configure(node):
        node._src_dtype = src.dtype
        node._src_device = src.device.type

    def mutate(data):
        data[...] = src_data

    def tangent_rule(t_self, t_src):
        if t_src is None:
            return None if t_self is None else t_self.zero_()
        if t_self is None:
            return _fresh_tangent(self, t_src)
        return t_self.copy_(t_src)

    return _apply_inplace(self, src, CopyBackwards, mutate, configure, tangent_rule)


def setitem(self, index, value):
    key, basic = _normalize_index(index)
    if basic:
        _setitem_basic(self, index, key, value)
        return
    raw_value = raw(value)

    def configure(node):
        node._index = key

    def mutate(data):
        data[key] = raw_value

    def tangent_rule(t_self, t_value):
        if t_value is None:
            if t_self is not None:
                t_self[index] = 0
            return t_self
        if t_self is None:
            t_self = zeros_like(self, dtype=t_value.dtype)
        t_self[index] = t_value
        return t_self

    _apply_inplace(self, value, IndexPutBackward0, mutate, configure, tangent_rule)


def _setitem_basic(self, index, key, value):
    """``x[basic index] = value`` as torch 2.13 does it: a write through the view ``x[index]``
    (``copy_``; a number is a 0-d tensor), so the graph records ``CopySlices`` over the
    base whether or not ``x`` required grad. A value of another shape is first viewed without
    its leading unit dimensions and expanded to the view's shape (``ViewBackward0``,
    ``ExpandBackward0``), as torch's ``copy_to``; ``x[...]`` writes ``x`` itself."""
    # rule: views.setitem-basic-index-records-copyslices
    items = key if isinstance(key, tuple) else (key,)
    target = self if all(item is Ellipsis for item in items) else views.getitem(self, index)
    if not isinstance(value, Tensor):  # a number is a 0-d tensor of x's dtype (an edge to nothing)
        value = Tensor._wrap(namespace_of(self._array).asarray(value, dtype=self._array.dtype))
    if value._array.shape != target._array.shape:
        shape = value._array.shape
        while shape and shape[0] == 1:
            shape = shape[1:]
        value = views.view(value, shape)
        if shape != target._array.shape:
            value = views.expand(value, *target._array.shape)
    copy_(target, value)


def _unary_inplace(self, node_cls, compute, tangent_factor):
    """``self = f(self)`` in place; ``tangent_factor(old self)`` scales a tangent (forward AD)."""
    created = []

    def configure(node):
        created.append(node)
        if node_cls.saved_names == ("self",):
            node._saved = (_old_self(self),)

    def tangent_rule(t_self, t_other):
        return None if t_self is None else t_self.mul_(tangent_factor(self))

    _apply_inplace(self, None, node_cls, lambda data: compute(namespace_of(data), data), configure, tangent_rule)
    if created and node_cls.saved_names == ("result",):
        created[0]._saved = (save_output(self),)  # after the write: the version it must still have
    return self


def exp_(self):
    return _unary_inplace(self, ExpBackward0, lambda xp, data: xp.exp(data, out=data), lambda old: old.exp())


def relu_(self):
    return _unary_inplace(self, ReluBackward0, lambda xp, data: xp.maximum(data, 0, out=data),
                          lambda old: (old > 0).to(old.dtype))


def sin_(self):
    return _unary_inplace(self, SinBackward0, lambda xp, data: xp.sin(data, out=data), lambda old: old.cos())


def cos_(self):
    return _unary_inplace(self, CosBackward0, lambda xp, data: xp.cos(data, out=data), lambda old: -old.sin())


RESIZE_REQUIRES_GRAD = "cannot resize variables that require grad"
RESIZE_FORWARD_GRAD = "cannot resize variables that has a forward grad"


def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes``, contiguous, from its storage offset on: the elements
    are the storage's next ones in memory order (uninitialized past its end, zeros here).
    The same shape is a no-op; a new one bumps the version. Refused for a tensor that
    requires grad or has a tangent, as in torch.

    Where the storage is too small torch enlarges it in place, so that every view of it sees
    the new memory; numpy cannot grow an array in place, so here ``self`` moves to a new,
    larger storage holding a copy of the old one, and views made before keep the old one."""
    if memory_format is not None:
        raise TypeError("the reference's resize_ has one memory format (contiguous): pass no memory_format")
    shape = _shape_arg(sizes)
    if any(size < 0 for size in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if self._requires_grad:
        raise RuntimeError(RESIZE_REQUIRES_GRAD)
    if self._fw_grads:
        raise RuntimeError(RESIZE_FORWARD_GRAD)
    data = self._array
    if tuple(data.shape) == shape:
        return self
    root, offset = root_of(data), _storage_offset(data)
    numel = 1
    for size in shape:
        numel *= size
    if offset + numel > root.size:
        grown = namespace_of(root).zeros(offset + numel, dtype=root.dtype)
        grown[:root.size] = root.reshape(-1, order="A")
        root = grown
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    self._array = window(root, offset, shape, tuple(reversed(strides)))
    bump_version(self)
    return self


def resize_as_(self, other, memory_format=None):
    """``self.resize_(other.shape)``."""
    return resize_(self, tuple(other.shape), memory_format=memory_format)


# -- in-place view ops: the tensor itself takes the view's geometry ----------------------
# Each one's node is its out-of-place twin's (the same formula), as torch's ``*Backward1``.
class TransposeBackward1(TransposeBackward0):
    __slots__ = ()


class TBackward1(TBackward0):
    """``t_()``; on fewer than 2 dimensions (``_dims`` None) the gradient passes unchanged."""

    __slots__ = ()

    def apply(self, ops, grads):
        return (ops.swapaxes(grads[0], *self._dims) if self._dims else grads[0],)


class SqueezeBackward3(SqueezeBackward0):
    """``squeeze_()``"""

    __slots__ = ()


class SqueezeBackward4(SqueezeBackward0):
    """``squeeze_(dim)``"""

    __slots__ = ()


class SqueezeBackward5(SqueezeBackward0):
    """``squeeze_(dims)`` with a tuple of dimensions"""

    __slots__ = ()


class UnsqueezeBackward1(UnsqueezeBackward0):
    __slots__ = ()


class AsStridedBackward1(AsStridedBackward0):
    __slots__ = ()


def _inplace_view(self, view_op, undo, node_cls, configure):
    """Give ``self`` the geometry of ``view_op(self)``, in place: what a view made by
    ``view_op`` would be, in the same object. It is checked as an in-place op (a leaf that
    requires grad, a view made under no_grad or by unbind are refused in grad mode), bumps the
    version, and in grad mode gets ``node_cls`` (the view's formula) after its old history.
    A view stays a view of the same base, its replay on the base extended by ``view_op``; views
    of ``self`` itself replay through ``undo`` (back to the old geometry) first. Made in no_grad
    mode, it does not become a no_grad view (torch keeps the view's creation mode)."""
    check_inplace(self)
    if self._base is not None:
        check_view_inplace(self, None)
    with grad_mode.no_grad(), forward_ad.suppress_propagation():
        made = view_op(self)  # validates the arguments; its geometry is what self takes
    node = None
    if needs_grad(self):
        node = node_cls(edges(self))
        configure(node)  # the formula's arguments, from the old geometry
    self._array = made._array
    bump_version(self)
    if node is not None:
        rebase_history(self, node)
    view_fn = getattr(self, "_view_fn", None)
    if self._base is not None and view_fn is not None:
        self._view_fn = lambda t: view_op(view_fn(t))
    for ref in getattr(self, "_views", None) or ():
        view = ref()
        if view is not None and getattr(view, "_view_fn", None) is not None:
            view._view_fn = _after(undo, view._view_fn)
    grads = self._fw_grads
    if grads:
        with forward_ad.suppress_propagation():
            for level, tangent in list(grads.items()):
                forward_ad.set_tangent(self, view_op(tangent), level)
    return self


def _after(first, then):
    return lambda t: then(first(t))


def transpose_(self, dim0, dim1):
    def configure(node):
        node._dims = (dim0, dim1)

    return _inplace_view(self, lambda t: views.transpose(t, dim0, dim1), lambda t: views.transpose(t, dim0, dim1),
                         TransposeBackward1, configure)


def t_(self):
    ndim = self._array.ndim

    def configure(node):
        node._dims = (0, 1) if ndim == 2 else None

    return _inplace_view(self, views.t, views.t, TBackward1, configure)


def squeeze_(self, dim=None):
    old = tuple(self._array.shape)

    def configure(node):
        node._shape = old

    return _inplace_view(self, lambda t: views.squeeze(t, dim), lambda t: views.view(t, *old),
                         SqueezeBackward3 if dim is None
                         else SqueezeBackward5 if isinstance(dim, (tuple, list)) else SqueezeBackward4, configure)


def unsqueeze_(self, dim):
    old = tuple(self._array.shape)

    def configure(node):
        node._shape = old

    return _inplace_view(self, lambda t: views.unsqueeze(t, dim), lambda t: views.view(t, *old),
                         UnsqueezeBackward1, configure)


def as_strided_(self, size, stride, storage_offset=None):
    """``self`` takes the geometry ``as_strided(size, stride, storage_offset)`` gives."""
    data = self._array
    old = (tuple(data.shape), self.stride(), _storage_offset(data))
    new_offset = old[2] if storage_offset is None else int(storage_offset)
    new = (tuple(int(s) for s in size), tuple(int(s) for s in stride), new_offset)

    def configure(node):
        node._geometries = (old, new)

    def undo(t):  # back to the old geometry, relative to t's own offset
        return views.as_strided(t, old[0], old[1], old[2] - new[2] + _storage_offset(t._array))

    return _inplace_view(self, lambda t: views.as_strided(t, new[0], new[1], new[2] - old[2] + _storage_offset(t._array)),
                         undo, AsStridedBackward1, configure)
