"""View ops: results share their input's array and version counter.

A view remembers its base (``_base``) so that in-place ops can refuse to modify a
view of a leaf that requires grad, as PyTorch does. Indexing with integers and slices
gives a view; indexing with tensors or lists gives a copy.
"""
from __future__ import annotations

import builtins

import weakref

from reference import array_backend, grad_mode
from reference.array_backend import namespace_of
from reference.autograd import forward_ad
from reference.autograd.graph import NodeBase, SavedTensor
from reference.ops.pointwise import clone
from reference.ops.recording import attach, edge, edges, has_tangent, needs_grad, propagate_tangent, rebase_history
from reference.storage import root_of, storage_offset as _storage_offset, window
from reference.overrides import _state as _dispatch_state, dispatch, has_subclass
from reference.tensor import Tensor, instance_of

VIEW_INCOMPATIBLE = (
    "view size is not compatible with input tensor's size and stride (at least one dimension "
    "spans across two contiguous subspaces). Use .reshape(...) instead."
)


class ViewBackward0(NodeBase):
    __slots__ = ("_shape",)

    def apply(self, ops, grads):
        return (ops.reshape(grads[0], self._shape),)


class TransposeBackward0(NodeBase):
    __slots__ = ("_dims",)

    def apply(self, ops, grads):
        return (ops.swapaxes(grads[0], *self._dims),)


class ExpandBackward0(NodeBase):
    __slots__ = ("_shape",)

    def apply(self, ops, grads):
        return (ops.sum_to(grads[0], self._shape),)


class _IndexNode(NodeBase):
    __slots__ = ("_shape", "_index")

    def apply(self, ops, grads):
        return (ops.scatter_index(grads[0], self._shape, self._index),)


class SelectBackward0(_IndexNode):
    __slots__ = ()


class SliceBackward0(_IndexNode):
    __slots__ = ()


class IndexBackward0(NodeBase):
    """Indexing with tensors or lists: the indices are saved (and freed by backward without
    retain_graph, as PyTorch's saved ``indices``)."""

    __slots__ = ("_shape",)

    def apply(self, ops, grads):
        return (ops.scatter_index(grads[0], self._shape, self._unpack(0, False)),)


class AliasBackward0(NodeBase):
    __slots__ = ()

    def apply(self, ops, grads):
        return (grads[0],)


def _make_view(self, data, node_cls=None, configure=None, cls=Tensor, view_fn=None):
    """A view of ``self`` over ``data``; ``view_fn`` redoes the view on another tensor
    (the tangent of a dual gets the same view of its tangent)."""
    out = Tensor._wrap(data) if cls is Tensor else instance_of(cls, data)
    # rules: views.view-shares-version-counter, views.saved-view-version-checked (one counter for all aliases)
    out._version_counter = self._version_counter
    # rule: views.is-view-and-base; rule: views.view-keeps-base-object -- the view holds the base's
    # Python object itself (its attributes, weak references), and nothing holds the view back
    out._base = self._base if self._base is not None else self
    if self._inference:  # a view of an inference tensor is one, and (as in torch) not tracked as a view
        out._inference, out._base = True, None
    elif out._inference:  # a view of a normal tensor made inside inference_mode stays normal
        out._inference = False
    if node_cls is not None and needs_grad(self):
        node = node_cls(edges(self))
        if configure is not None:
            configure(node)
        attach(out, node)
    multi = getattr(self, "_multi_view", None)
    if multi is not None:  # a view of an output of unbind / split: the same restriction
        out._multi_view = multi
    if view_fn is not None:
        parent_fn = getattr(self, "_view_fn", None) if self._base is not None else None
        out._view_fn = view_fn if parent_fn is None else (lambda t: view_fn(parent_fn(t)))
        if _grad_state.enabled:
            if not _replaying and out._base is not None:
                _register_view(out._base, out)
            parent = getattr(self, "_view_no_grad", None) if self._base is not None else None
            if parent is not None:  # rule: views.inplace-on-view-of-no-grad-view-refused
                out._view_no_grad = (parent[0], True)
            if getattr(self, "_view_custom_function", False):  # what torch's creation meta passes on
                out._view_custom_function = True
        else:
            # rule: views.inplace-on-no-grad-view-refused -- (made in inference mode?, a view of such a view?)
            out._view_no_grad = (_grad_state.inference, False)
        if has_tangent(self):
            propagate_tangent(out, lambda t: None if t is None else view_fn(t), self)
    return out


_grad_state = grad_mode._state
_replaying = False


def _register_view(base, view):
    """The base remembers its views weakly (a list of weakrefs, no callbacks: no cycle),
    so that an in-place op on the base or on any view can renew their histories."""
    try:
        views = base._views
    except AttributeError:
        views = base._views = []
    if len(views) >= 8 and not len(views) & (len(views) - 1):  # at each power of two, drop the dead
        views[:] = [ref for ref in views if ref() is not None]
    views.append(weakref.ref(view))  # rule: views.inplace-on-view-graph-freed (weak: no cycle)


def regenerate_view(view):
    """Give ``view`` a fresh history from its base's current one: one ``AsStridedBackward0``
    over the base's history, with the view's geometry in the base's storage, whatever op made
    the view (as torch 2.13, which regenerates every view's grad_fn unless original view
    tracking is forced; a multi-output view keeps the replay of its op, as below).
    rule: views.view-history-follows-base"""
    base = view._base  # rule: views.view-history-follows-base
    if getattr(view, "_multi_view", None) is not None or not base._requires_grad:
        return _replay_view(view, base)
    node = AsStridedBackward0(edges(base))
    base_data, data = base._array, view._array
    node._geometries = ((tuple(base_data.shape), base.stride(), _storage_offset(base_data)),
                        (tuple(data.shape), view.stride(), _storage_offset(data)))
    rebase_history(view, node)
    view._output_nr = 0


def _replay_view(view, base):
    """The view's own op replayed on its base, for the views ``regenerate_view`` leaves to it."""
    global _replaying
    _replaying = True
    try:
        with grad_mode.enable_grad(), forward_ad.suppress_propagation():
            replay = view._view_fn(base)
    finally:
        _replaying = False
    node = replay._node
    if node is not None:
        rebase_history(view, node)
        view._output_nr = replay._output_nr


def refresh_views(base, skip=None):
    """Renew the history of every live view of ``base`` made in grad mode (but ``skip``)."""
    views = getattr(base, "_views", None)
    if not views:
        return
    live = []
    for ref in views:
        view = ref()
        if view is None:
            continue
        live.append(ref)
        if view is not skip:
            regenerate_view(view)
    views[:] = live


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer(shape, numel):
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if shape.count(-1) > 1 or known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    total = 1
    for s in shape:
        total *= s
    if total != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _set_shape(node, shape):
    node._shape = shape


def view(self, *shape):
    shape = _infer(_shape_arg(shape), self._array.size)
    data = self._array.view()
    try:
        data.shape = shape
    except AttributeError:
        raise RuntimeError(VIEW_INCOMPATIBLE) from None
    old = self._array.shape
    return _make_view(self, data, ViewBackward0, lambda n: _set_shape(n, old), view_fn=lambda t: view(t, *shape))


def view_as(self, other):
    return view(self, *other.shape)


def reshape(self, *shape):
    shape = _infer(_shape_arg(shape), self._array.size)
    try:
        return view(self, *shape)
    except RuntimeError:
        pass
    return view(clone(self), *shape)


def reshape_as(self, other):
    return reshape(self, *other.shape)


def flatten(self):
    return reshape(self, -1)


def transpose(self, dim0, dim1):
    ndim = max(self._array.ndim, 1)
    for d in (dim0, dim1):
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
    if self._array.ndim == 0:
        return _make_view(self, self._array.view(), TransposeBackward0, lambda n: setattr(n, "_dims", (0, 0)),
                          view_fn=lambda t: transpose(t, dim0, dim1))
    data = namespace_of(self._array).swapaxes(self._array, dim0, dim1)

    def configure(node):
        node._dims = (dim0, dim1)

    return _make_view(self, data, TransposeBackward0, configure, view_fn=lambda t: transpose(t, dim0, dim1))


class TBackward0(TransposeBackward0):
    __slots__ = ()


def t(self):
    if self._array.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self._array.ndim}D")
    if self._array.ndim < 2:
        return _make_view(self, self._array.view(), AliasBackward0, view_fn=t)

    def configure(node):
        node._dims = (0, 1)

    return _make_view(self, self._array.T, TBackward0, configure, view_fn=t)


def mT(self):
    return transpose(self, -2, -1)


def expand(self, *sizes):
    sizes = _shape_arg(sizes)
    data = self._array
    if len(sizes) < data.ndim:
        raise RuntimeError(
            f"expand(reference.{self.dtype.legacy_name}{{{list(data.shape)}}}, size={list(sizes)}): the number of sizes "
            f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the tensor ({data.ndim})"
        )
    lead = len(sizes) - data.ndim
    target = tuple(
        (data.shape[i - lead] if s == -1 else s) if i >= lead else s for i, s in enumerate(sizes)
    )
    try:
        out_data = namespace_of(data).broadcast_to(data, target)
    except ValueError:
        raise RuntimeError(
            f"The expanded size of the tensor must match the existing size at non-singleton dimensions. "
            f"Target sizes: {list(sizes)}.  Tensor sizes: {list(data.shape)}"
        ) from None
    old = data.shape
    return _make_view(self, out_data, ExpandBackward0, lambda n: _set_shape(n, old),
                      view_fn=lambda t: expand(t, *sizes))


def expand_as(self, other):
    return expand(self, *other.shape)


class SqueezeBackward0(ViewBackward0):
    """``squeeze()``: every dimension of size 1."""

    __slots__ = ()


class SqueezeBackward1(SqueezeBackward0):
    """``squeeze(dim)``, named as torch 2.13 names its overload."""

    __slots__ = ()


class SqueezeBackward2(SqueezeBackward0):
    """``squeeze(dims)`` with a tuple of dimensions."""

    __slots__ = ()


class UnsqueezeBackward0(ViewBackward0):
    __slots__ = ()


def squeeze(self, dim=None):
    data = self._array
    if dim is None:
        new_shape = tuple(s for s in data.shape if s != 1)
        node_class = SqueezeBackward0
    else:
        ndim = max(data.ndim, 1)
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        for d in dims:
            if not -ndim <= d < ndim:
                raise IndexError(
                    f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
        drop = {d % ndim for d in dims if data.ndim and data.shape[d % ndim] == 1}
        new_shape = tuple(s for i, s in enumerate(data.shape) if i not in drop)
        node_class = SqueezeBackward2 if isinstance(dim, (tuple, list)) else SqueezeBackward1
    old = data.shape
    return _make_view(self, data.reshape(new_shape), node_class, lambda n: _set_shape(n, old),
                      view_fn=lambda t: squeeze(t, dim))


def unsqueeze(self, dim):
    data = self._array
    ndim = data.ndim + 1
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    d = dim % ndim
    old = data.shape
    return _make_view(self, data.reshape(old[:d] + (1,) + old[d:]), UnsqueezeBackward0, lambda n: _set_shape(n, old),
                      view_fn=lambda t: unsqueeze(t, dim))


def _normalize_index(index):
    """Tensors inside an index become arrays; reports whether the result is a view."""
    items = index if isinstance(index, tuple) else (index,)
    basic = True
    converted = []
    for item in items:
        if isinstance(item, Tensor):
            basic = False
            converted.append(item._array)
        elif isinstance(item, (list, bool, array_backend.numpy.bool_)):
            basic = False  # a boolean scalar is a mask (a copy with a new dimension), as in torch and numpy
            converted.append(item)
        else:
            converted.append(item)
    key = tuple(converted) if isinstance(index, tuple) else converted[0]
    return key, basic


def _index_step(self, dim, item):
    """One item of a basic index applied at ``dim``, as torch 2.13 applies them one by one: an
    integer selects (``SelectBackward0``), a slice narrows (``SliceBackward0``), None inserts a
    dimension (``UnsqueezeBackward0``); each step a view of the one before, so ``b[None, 0]``
    is a select over an unsqueeze, as in torch."""
    if item is None:
        return unsqueeze(self, dim)
    key = (slice(None),) * dim + (item, Ellipsis)  # Ellipsis: a 0-d result stays an array view
    try:
        data = self._array[key]
    except IndexError as exc:
        raise IndexError(str(exc)) from None
    shape = self._array.shape

    def configure(node):
        node._shape = shape
        node._index = key

    node_cls = SliceBackward0 if isinstance(item, slice) else SelectBackward0
    return _make_view(self, data, node_cls, configure, view_fn=lambda t: _index_step(t, dim, item))


def _basic_index(self, key):
    """``x[key]`` for a basic key (integers, slices, None, ``...``): the items applied one by
    one (:func:`_index_step`). Inside a tuple a slice over a whole dimension is skipped, and
    an index that applies nothing (``x[...]``, ``x[:, :]``) is an alias (``AliasBackward0``);
    a lone slice is always a slice, as in torch."""
    if not isinstance(key, tuple):
        return alias(self) if key is Ellipsis else _index_step(self, 0, key)
    ndim = self._array.ndim
    consuming = sum(1 for item in key if item is not None and item is not Ellipsis)
    if consuming > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out, dim = self, 0
    for item in key:
        if item is Ellipsis:
            dim += ndim - consuming
        elif isinstance(item, slice) and item.indices(out._array.shape[dim]) == \
                (0, out._array.shape[dim], 1):
            dim += 1  # the whole dimension: nothing to do
        else:
            out = _index_step(out, dim, item)
            if item is None or isinstance(item, slice):
                dim += 1  # an integer removes its dimension; a slice or None leaves one here
    return alias(self) if out is self else out


def getitem(self, index):
    key, basic = _normalize_index(index)
    if basic:
        return _basic_index(self, key)
    try:
        data = self._array[key]
    except IndexError as exc:
        raise IndexError(str(exc)) from None
    shape = self._array.shape
    out = Tensor._wrap(data)
    if needs_grad(self):
        node = IndexBackward0(edges(self))
        node._shape = shape
        node._saved = (key,)  # rule: engine.second-backward-error
        attach(out, node)
    if has_tangent(self):
        propagate_tangent(out, lambda t: None if t is None else getitem(t, index), self)
    return out



class AsStridedBackward0(NodeBase):
    """``x.as_strided(size, stride, offset)``: the output's gradient is added onto the storage
    positions it covers, and each element of ``x`` takes its position's sum, divided by how
    many elements of ``x`` share that position when ``x`` overlaps itself (as torch does)."""

    __slots__ = ("_geometries",)  # ((shape, strides, offset) of the input, of the output)

    def apply(self, ops, grads):
        grad = grads[0]
        xp = namespace_of(ops.raw(grad))
        (in_pos, out_pos), extent = _positions(xp, self._geometries)
        share = None
        if in_pos.size:
            counts = xp.bincount(in_pos.reshape(-1), minlength=extent)
            if int(counts.max()) > 1:
                share = (1.0 / counts[in_pos]).astype(ops.raw(grad).dtype)
        storage = ops.scatter_index(grad, (extent,), out_pos)
        result = ops.index(storage, Tensor._wrap(in_pos) if ops.differentiable else in_pos)
        if share is not None:
            result = result * (Tensor._wrap(share) if ops.differentiable else share)
        return (result,)


def _positions(xp, geometries):
    """The storage position of every element of each (shape, strides, offset), shifted so that
    the lowest is 0, and how many positions that spans."""
    positions = []
    for shape, strides, offset in geometries:
        pos = xp.full(shape, offset, dtype=xp.int64)
        for d, (size, stride) in enumerate(zip(shape, strides)):
            pos = pos + (xp.arange(size, dtype=xp.int64) * stride).reshape((size,) + (1,) * (len(shape) - d - 1))
        positions.append(pos)
    nonempty = [p for p in positions if p.size]
    low = min(int(p.min()) for p in nonempty) if nonempty else 0
    extent = max(int(p.max()) for p in nonempty) - low + 1 if nonempty else 0
    return tuple(p - low for p in positions), extent


def as_strided(self, size, stride, storage_offset=None):
    """A view of ``self``'s storage with the given sizes and strides (in elements) from
    ``storage_offset`` (default: ``self``'s own) on: the geometry counts from the start of the
    storage, not of ``self``. Replayed on another tensor (a tangent, a gradient shaped like
    the base), the offset is kept relative to that tensor's own offset."""
    data = self._array
    own = _storage_offset(data)
    offset = own if storage_offset is None else int(storage_offset)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    out_data = window(root_of(data), offset, size, stride)
    geometries = ((tuple(data.shape), self.stride(), own), (size, stride, offset))

    def configure(node):
        node._geometries = geometries

    relative = offset - own
    return _make_view(self, out_data, AsStridedBackward0, configure,
                      view_fn=lambda t: as_strided(t, size, stride, relative + _storage_offset(t._array)))



def _dim(self, dim: int) -> int:
    ndim = self._array.ndim
    if ndim == 0 or not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], "
                         f"but got {dim})")
    return dim % ndim


def narrow(self, dim, start, length):
    """``x.narrow(dim, start, length)``: the view ``x[..., start:start + length, ...]`` along ``dim``."""
    d = _dim(self, dim)
    size = self._array.shape[d]
    start = int(start.item()) if isinstance(start, Tensor) else start
    start = start + size if start < 0 else start
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _index_step(self, d, slice(start, start + length))  # a slice even when it is whole


def select(self, dim, index):
    """``x.select(dim, index)``: the view ``x[..., index, ...]``, ``dim`` removed."""
    d = _dim(self, dim)
    size = self._array.shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self._array.shape)} "
                         f"at dimension {dim}")
    return _index_step(self, d, index % size)


class _JoinBackward(NodeBase):
    """One node for all the outputs of one unbind / split / chunk call, as torch's
    UnbindBackward0, SplitBackward0, ...: the input's gradient is the outputs' gradients joined
    back along ``dim``, zeros standing for those that received none. A backward through one
    output therefore runs the node, and the tensor hooks of the others see None."""

    __slots__ = ("_dim", "_shapes", "_stacked")  # per output its shape in the input (dim kept); unbind's lost dim
    _none_passes = False  # runs when any output, not only the first, received a gradient

    @property
    def num_outputs(self) -> int:
        return len(self._shapes)

    def apply(self, ops, grads):
        like = next((g for g in grads if g is not None), None)
        if like is None:
            return (None,)
        d = self._dim
        parts = [ops.zeros(shape, like) if g is None else ops.unsqueeze_dims(g, (d,)) if self._stacked else g
                 for g, shape in zip(grads, self._shapes)]
        return (ops.cat(parts, d),)


class UnbindBackward0(_JoinBackward):
    __slots__ = ()


class SplitBackward0(_JoinBackward):
    __slots__ = ()


class SplitWithSizesBackward0(_JoinBackward):
    __slots__ = ()


class UnsafeSplitBackward0(_JoinBackward):
    __slots__ = ()


class UnsafeSplitWithSizesBackward0(_JoinBackward):
    __slots__ = ()


def _parts(self, d, sizes, node_cls, views=True, stacked=False):
    """The outputs of one multi-output call: along dim ``d``, consecutive parts of ``sizes``
    (index ``i`` itself where ``stacked``: unbind), all the outputs of one ``node_cls`` node.
    As views (``views``), they share the input's version counter and in grad mode may not be
    modified in place (rule: views.inplace-on-multi-output-view); otherwise (unsafe_split,
    unsafe_chunk) they are new tensors on the same memory, each with a version counter of its
    own, as in torch: a write into one neither invalidates what was saved from another nor
    enters the input's history."""
    lead, starts = (slice(None),) * d, [builtins.sum(sizes[:i]) for i in range(len(sizes))]
    keys = [lead + ((i,) if stacked else (slice(start, start + size),)) for i, (start, size) in
            enumerate(zip(starts, sizes))]
    outs = []
    for index, key in enumerate(keys):
        data = self._array[key + (Ellipsis,)]
        if views:
            out = _make_view(self, data, view_fn=lambda t, key=key: getitem(t, key))
            out._multi_view = (index, node_cls.__name__.removesuffix("Backward0"))
        else:
            out = Tensor._wrap(data)
            if has_tangent(self):
                propagate_tangent(out, lambda t, key=key: None if t is None else getitem(t, key), self)
        outs.append(out)
    if keys and needs_grad(self):
        node = node_cls(edges(self))
        shape = self._array.shape
        node._dim, node._stacked = d, stacked
        node._shapes = tuple(shape[:d] + (1 if stacked else size,) + shape[d + 1:] for size in sizes)
        for index, out in enumerate(outs):
            attach(out, node, index)
    return tuple(outs)


def created_in_custom_function(view, index, name, multiple) -> None:
    """A view a custom Function returned (torch's creation meta IN_CUSTOM_FUNCTION, or
    MULTI_OUTPUT_NODE when the Function has several differentiable outputs): it replaces
    whatever the view was made with inside forward (no_grad, unbind / split)."""
    view._view_no_grad = None
    view.__dict__.pop("_multi_view", None)
    if multiple:
        view._multi_view = (index, name)
    else:
        view._view_custom_function = True


def unbind(self, dim=0):
    """``x.unbind(dim)``: the slices along ``dim``, each a view of ``x``."""
    d = _dim(self, dim)
    return _parts(self, d, [1] * self._array.shape[d], UnbindBackward0, stacked=True)


def _sections(self, sizes, dim, node_cls, views=True):
    d = _dim(self, dim)
    if builtins.sum(sizes) != self._array.shape[d] or builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {self._array.shape[d]} "
                           f"(input tensor's size at dimension {dim}), but got split_sizes={list(sizes)}")
    return _parts(self, d, sizes, node_cls, views)


def _split_sizes(self, split_size, dim):
    if split_size <= 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of "
                           f"{self._array.shape[_dim(self, dim)]}")
    size = self._array.shape[_dim(self, dim)]
    return [min(split_size, size - start) for start in range(0, size, split_size)] or [0]


def split(self, split_size_or_sections, dim=0):
    """``x.split(size or sizes, dim)``: consecutive views along ``dim``."""
    if not isinstance(split_size_or_sections, int):
        return split_with_sizes(self, split_size_or_sections, dim)
    return _sections(self, _split_sizes(self, split_size_or_sections, dim), dim, SplitBackward0)


def split_with_sizes(self, split_sizes, dim=0):
    return _sections(self, list(split_sizes), dim, SplitWithSizesBackward0)


def _chunk_size(self, chunks, dim):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    return max(-(-self._array.shape[_dim(self, dim)] // chunks), 1)


def chunk(self, chunks, dim=0):
    """``x.chunk(n, dim)``: at most ``n`` views of equal size (the last may be smaller)."""
    return split(self, _chunk_size(self, chunks, dim), dim)


def unsafe_split(self, split_size, dim=0):
    """``split`` whose outputs are no views (the caller vouches that writing one is harmless)."""
    return _sections(self, _split_sizes(self, split_size, dim), dim, UnsafeSplitBackward0, views=False)


def unsafe_split_with_sizes(self, split_sizes, dim=0):
    return _sections(self, list(split_sizes), dim, UnsafeSplitWithSizesBackward0, views=False)


def unsafe_chunk(self, chunks, dim=0):
    return unsafe_split(self, _chunk_size(self, chunks, dim), dim)


def alias(self, cls=Tensor):
    """A new object of ``cls`` with the same data, version counter and history."""
    out = _make_view(self, self._array.view(), AliasBackward0, cls=cls, view_fn=alias)
    if out._node is None and self._requires_grad and not needs_grad(self):
        out._requires_grad = False
    return out


def as_subclass(self, cls):
    """``Tensor.as_subclass``: the same data and history, as an instance of ``cls`` (a Tensor subclass)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass expects a subclass of reference.Tensor, got {cls!r}")
    return alias(self, cls)


# differentiable helpers for double backward of indexing
class ScatterIndexBackward0(NodeBase):
    __slots__ = ("_index",)

    def apply(self, ops, grads):
        return (ops.index(grads[0], self._index),)


def scatter_index(grad, shape, index):
    """zeros(shape) with ``grad`` added at ``index``, recording a graph."""
    out = Tensor._wrap(array_backend.scatter_index(grad._array, shape, index))
    if needs_grad(grad):
        node = ScatterIndexBackward0(edges(grad))
        node._index = index
        attach(out, node)
    return out


class ScatterAddBackward0(NodeBase):
    """``zeros(shape).scatter_add(dim, index, grad)``, torch's double backward of ``gather``: an
    edge for the zeros (None: they need no gradient) and one for ``grad``, as torch's node."""

    __slots__ = ("_index",)

    def apply(self, ops, grads):
        return (None, ops.index(grads[0], self._index))


def scatter_add(grad, shape, index):
    """``scatter_index`` recorded as torch records gather's backward (``ScatterAddBackward0``)."""
    out = Tensor._wrap(array_backend.scatter_index(grad._array, shape, index))
    if needs_grad(grad):
        node = ScatterAddBackward0(((None, 0), edge(grad)))
        node._index = index
        attach(out, node)
    return out


class ZeroAtIndexBackward0(NodeBase):
    __slots__ = ("_index",)

    def apply(self, ops, grads):
        return (ops.zero_at_index(grads[0], self._index),)


def zero_at_index(grad, index):
    out = Tensor._wrap(array_backend.zero_at_index(grad._array, index))
    if needs_grad(grad):
        node = ZeroAtIndexBackward0(edges(grad))
        node._index = index
        attach(out, node)
    return out


class MakeDualBackward0(NodeBase):
    __slots__ = ()

    def apply(self, ops, grads):
        return (grads[0],)


class UnpackDualBackward0(MakeDualBackward0):
    __slots__ = ()


def make_dual_view(primal):
    """The dual's body: a differentiable view of the primal (same data and version)."""
    return _make_view(primal, primal._array.view(), MakeDualBackward0)


def unpack_primal_view(dual):
    """A fresh tangent-free, differentiable view of a dual's primal."""
    return _make_view(dual, dual._array.view(), UnpackDualBackward0)


class CatBackward0(NodeBase):
    """``cat(tensors, dim)``: each input's gradient is its slice of the output's along ``dim``."""

    __slots__ = ("_dim", "_sizes")

    def apply(self, ops, grads):
        g, d, out, start = grads[0], self._dim, [], 0
        for size in self._sizes:
            part = g[(slice(None),) * d + (slice(start, start + size),)]
            out.append(part if ops.differentiable else part.copy())  # a gradient of its own, not a window on g
            start += size
        return tuple(out)


def cat(tensors, dim=0):
    """A new tensor joining ``tensors`` (same dtype, same shape but along ``dim``) along ``dim``."""
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    if not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("cat(): argument 'tensors' must be a sequence of Tensors")
    if has_subclass(tensors) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
        return dispatch(cat, (tensors,), {"dim": dim})
    if tensors[0].dim() == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _dim(tensors[0], dim)
    if builtins.any(t.dtype is not tensors[0].dtype for t in tensors):
        raise TypeError("the reference's cat joins tensors of one dtype only")
    try:
        data = namespace_of(tensors[0]._array).concatenate([t._array for t in tensors], axis=d)
    except ValueError:
        raise RuntimeError("Sizes of tensors must match except in dimension "
                           f"{d}: got {[list(t.shape) for t in tensors]}") from None
    out = Tensor._wrap(data)
    if builtins.any(needs_grad(t) for t in tensors):
        node = CatBackward0(tuple(edge(t) for t in tensors))
        node._dim, node._sizes = d, tuple(t._array.shape[d] for t in tensors)
        attach(out, node)
    if builtins.any(has_tangent(t) for t in tensors):
        raise NotImplementedError("Trying to use forward AD with cat that does not support it")
    return out


class StackBackward0(NodeBase):
    """``stack(tensors, dim)``: each input's gradient is its index of the output along ``dim``."""

    __slots__ = ("_dim", "_count")

    def apply(self, ops, grads):
        g, d = grads[0], self._dim
        parts = (g[(slice(None),) * d + (i,)] for i in range(self._count))
        return tuple(part if ops.differentiable else part.copy() for part in parts)


def stack(tensors, dim=0):
    """A new tensor joining ``tensors`` (one dtype, one shape) along a new dimension ``dim``."""
    tensors = tuple(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    if not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("stack(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        + type(next(t for t in tensors if not isinstance(t, Tensor))).__name__)
    if has_subclass(tensors) and not _dispatch_state.disabled:  # rule: identity.subclass-op-results-are-subclass
        return dispatch(stack, (tensors,), {"dim": dim})
    shape = tensors[0]._array.shape
    for i, t in enumerate(tensors):
        if t._array.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                               f"and {list(t._array.shape)} at entry {i}")
    if builtins.any(t.dtype is not tensors[0].dtype for t in tensors):
        raise TypeError("the reference's stack joins tensors of one dtype only")
    ndim = len(shape) + 1
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    d = dim % ndim
    out = Tensor._wrap(namespace_of(tensors[0]._array).stack([t._array for t in tensors], axis=d))
    if builtins.any(needs_grad(t) for t in tensors):
        node = StackBackward0(tuple(edge(t) for t in tensors))
        node._dim, node._count = d, len(tensors)
        attach(out, node)
    if builtins.any(has_tangent(t) for t in tensors):
        raise NotImplementedError("Trying to use forward AD with stack that does not support it")
    return out


class GatherBackward0(NodeBase):
    """``x.gather(dim, index)``: the output's gradient added back at the gathered positions
    (several times where ``index`` repeats one). Saves ``self`` and ``index`` as torch does."""

    __slots__ = ()
    saved_names = ("dim", "index", "self", "sparse_grad")

    def apply(self, ops, grads):
        dim = self._unpack(0, False)
        index = self._unpack(1, False)
        shape = self._unpack(2, False).shape
        return (ops.scatter_add(grads[0], shape, _gather_key(index, dim)),)


def _gather_key(index, dim):
    """The advanced index that picks ``x.gather(dim, index)`` out of ``x``: ``index`` along
    ``dim``, each element's own position along the other dimensions."""
    grids = list(array_backend.numpy.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def gather(self, dim, index, *, sparse_grad=False):
    """``out[i][j] = self[index[i][j]][j]`` (``dim=0``, and so on): values picked along ``dim``."""
    if not isinstance(index, Tensor) or index.dtype.is_floating_point or index.dtype.name == "bool":
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if index.dim() != self.dim():
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    d = _dim(self, dim)
    size = self._array.shape[d]
    idx = index._array
    if idx.size and (idx.max() >= size or idx.min() < -size):
        bad = int(idx.max()) if idx.max() >= size else int(idx.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    out = Tensor._wrap(self._array[_gather_key(idx, d)])
    if needs_grad(self):
        node = GatherBackward0(edges(self))
        node._saved = (d, SavedTensor(index, False), SavedTensor(self, False), sparse_grad)
        attach(out, node)
    if has_tangent(self):
        propagate_tangent(out, lambda t: None if t is None else gather(t, d, index), self)
    return out
