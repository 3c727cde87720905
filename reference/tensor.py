"""The Tensor: an array, a version counter, and its place in the autograd graph.

A tensor is one Python object for its whole life. What the graph needs of it is held
in slots; ``__dict__`` is left to users (attributes survive as long as the object does),
and weakrefs work. Because the engine keeps the very objects it is given (``.grad``,
saved inputs, ``AccumulateGrad.variable``), identity is preserved without any wrapper
cache: ``a.grad is a.grad`` always.
"""
from __future__ import annotations

import numbers
import warnings
import weakref

import numpy as _numpy

from reference import array_backend, dtypes
from reference.grad_mode import _inference_used, _state as _grad_state
from reference.handles import HookDict, add_hook

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)
NON_LEAF_REQUIRES_GRAD = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)


_numpy_scalar = _numpy.generic

#: ``reference.autograd.backward``, which ``Tensor.backward`` calls: the autograd package sits above
#: this module (it imports Tensor), so ``reference/__init__.py`` sets this once both are imported.
_autograd_backward = None
#: ``reference.ops.views.alias``, which ``Tensor(tensor)`` is; set the same way.
_alias = None


class device:
    """A device ('cpu' or 'cuda'); compares equal to its string."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):  # noqa: A002 - torch's name
        if isinstance(type, device):
            type, index = type.type, type.index
        type, _, idx = str(type).partition(":")
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = int(idx) if idx else index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type

    def __hash__(self):
        return hash(self.type)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')"

    def __reduce__(self):
        return (device, (str(self),))


class layout:  # noqa: N801 - torch's name
    """How a tensor's elements are laid out in memory. The reference has one layout, torch's
    default: ``strided`` (a dense array addressed through sizes and strides)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"reference.{self.name}"

    def __reduce__(self):
        return "strided"  # the module-level singleton, by name


strided = layout("strided")


class Tensor:
    """An n-dimensional array that can record the operations applied to it."""

    __slots__ = (
        "_array",  # not "_data": wrapper subclasses commonly keep the tensor they wrap under that name
        "_version_counter",
        "_requires_grad",
        "_node",
        "_output_nr",
        "_grad",
        "_grad_accumulator",
        "_leaf_hooks",
        "_post_accumulate_hooks",
        "_retains_grad",
        "_base",
        "_fw_grads",
        "_view_fn",  # views only: redoes this view on another tensor (a tangent, the base)
        "_views",  # bases only, set lazily: weakrefs to the views made in grad mode
        "_view_no_grad",  # views only, set lazily: True when made under no_grad
        "_view_custom_function",  # views only, set lazily: True when a custom Function returned it
        "__dict__",
        "__weakref__",
    )

    _inference = False  # True (in the instance) when made inside inference_mode

    def __new__(cls, data=None, *args, **kwargs):
        """``Tensor(data)``, ``Subclass(data)``: made here, as in torch, whose ``__init__``
        takes any arguments and does nothing (a subclass's own ``__init__`` may then have any
        signature and need not pass the data on). A tensor is aliased, not copied: the result
        is a view of it (an ``AliasBackward0`` when it requires grad)."""
        if isinstance(data, Tensor) and not args and not kwargs:
            return _alias(data, cls)
        return _init(object.__new__(cls), _to_array([] if data is None else data, None, "cpu"))

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def _wrap(cls, data) -> "Tensor":
        """A new leaf tensor around ``data`` (no copy); the engine's constructor."""
        if isinstance(data, _numpy_scalar):
            data = _numpy.asarray(data)  # numpy turns 0-d results into scalars
        return _init(object.__new__(Tensor), data)

    # -- metadata ------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._array.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._array.shape)
        return self._array.shape[dim]

    def dim(self) -> int:
        return self._array.ndim

    ndim = property(dim)

    def numel(self) -> int:
        return int(self._array.size)

    def __len__(self):
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    @property
    def dtype(self):
        return dtypes.from_numpy_dtype(self._array.dtype)

    @property
    def device(self):
        return device(array_backend.device_type_of(self._array))

    @property
    def layout(self) -> layout:
        return strided

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def _version(self) -> int:
        return self._version_counter[0]

    def stride(self, dim=None):
        """The step in elements between neighbours along each dimension (numpy counts bytes)."""
        itemsize = self._array.dtype.itemsize
        strides = tuple(s // itemsize for s in self._array.strides)
        return strides if dim is None else strides[dim]

    def is_contiguous(self) -> bool:
        """torch's rule: row-major order, where a dimension of size 1 may have any stride, and
        an empty tensor is contiguous."""
        if self._array.size == 0:
            return True
        expected = 1
        for size, stride in zip(reversed(self._array.shape), reversed(self.stride())):
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True

    def data_ptr(self) -> int:
        data = self._array
        if array_backend.namespace_of(data) is array_backend.numpy:
            return data.__array_interface__["data"][0]
        return data.data.ptr

    # -- autograd state ------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if not isinstance(value, bool):
            raise RuntimeError("requires_grad must be a bool")
        if self._node is not None:
            if not value:
                # rule: engine.requires-grad-flag-leaf-only
                raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
            return
        # rule: engine.requires-grad-float-only
        if value and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = value

    @requires_grad.deleter
    def requires_grad(self):
        raise RuntimeError("requires_grad must be a bool")

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if not isinstance(requires_grad, bool):
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be bool, "
                            f"not {type(requires_grad).__name__}")
        # rule: identity.inplace-returns-self
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self):
        return self._node

    @property
    def _grad_fn(self):
        return self._node

    @_grad_fn.deleter
    def _grad_fn(self):
        raise RuntimeError("Deletion of _grad_fn not allowed. Detach tensor instead!")

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _backward_hooks(self):
        return self._leaf_hooks

    @_backward_hooks.setter
    def _backward_hooks(self, hooks):
        """A mapping of hooks run on this leaf's gradient (torch lets a mapping be assigned)."""
        self._leaf_hooks = None if hooks is None else HookDict(hooks)

    @_backward_hooks.deleter
    def _backward_hooks(self):
        raise RuntimeError("Deletion of _backwards_hooks not allowed!")

    @property
    def grad(self):
        if self._node is not None and not self._retains_grad and self._grad is None:
            # rule: engine.nonleaf-grad-warning
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        # rule: engine.grad-assignment-validated
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size"
                )
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype.c_name}' to a tensor with "
                    f"grad_dtype '{self.dtype.scalar_name}'. The gradient must match the tensor's grad_dtype "
                    "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                    "specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the "
                    "dtypes of a tensor and its gradient may break downstream systems that assume they match."
                )
            if value.device != self.device:
                raise RuntimeError(
                    f"attempting to assign a gradient located on device '{value.device}' to a tensor located "
                    f"on device '{self.device}'. Please ensure that the gradient and the tensor are on the same device"
                )
        self._grad = value

    # rule: identity.del-grad-resets
    # rule: gc_cycles.create-graph-cycle-broken-by-clearing-grad -- the _grad slot is the engine's only
    # reference to a gradient, so clearing it (= None or del) frees a create_graph gradient's graph
    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def data(self) -> "Tensor":
        """A new tensor sharing this one's array, outside autograd (own version counter)."""
        # rule: identity.data-detach-new-objects
        return Tensor._wrap(self._array)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and not value.dtype.is_floating_point:
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or complex dtype"
            )
        # rules: identity.data-assign-keeps-object, engine.data-bypasses-autograd
        self._array = value._array

    @data.deleter
    def data(self):
        raise RuntimeError("Deleting tensor data is not allowed. Delete tensor instead!")

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._node is None or self._retains_grad:
            return
        extras = self._node._get_extras()
        if extras.retains_grad is None:
            extras.retains_grad = {}
        # rule: engine.retain-grad
        # rule: engine.retain-grad-does-not-own-tensor -- the node refers to the tensor weakly
        extras.retains_grad[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def register_hook(self, hook):
        """Run ``hook(grad)`` when the gradient w.r.t. this tensor is computed."""
        # rule: hooks.register-hook-needs-requires-grad
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._node is None:
            if self._leaf_hooks is None:
                self._leaf_hooks = HookDict()
            # rules: hooks.register-hook-returns-handle, hooks.leaf-hooks-persist-across-graphs
            return add_hook(self._leaf_hooks, hook)
        # rule: hooks.tensor-hooks-kept-by-node -- the node keeps it (per output), never the tensor
        # rule: hooks.hook-bound-to-version -- kept on this grad_fn under this output_nr: an in-place op
        # gives the tensor a new grad_fn, and hooks registered before it stay with the old value
        return add_hook(self._node._tensor_hooks_for(self._output_nr), hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Run ``hook(tensor)`` after this leaf's ``.grad`` has been updated."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._node is not None:
            # rule: hooks.post-accumulate-hook-leaf-only
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = HookDict()
        return add_hook(self._post_accumulate_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the ``.grad`` of the graph's leaves."""
        if inputs is not None and isinstance(inputs, Tensor):
            inputs = (inputs,)
        _autograd_backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        """A new tensor sharing data and version counter, with no history."""
        # rule: identity.data-detach-new-objects
        # rule: forward_levels.detach-drops-tangent
        out = Tensor._wrap(self._array)
        out._version_counter = self._version_counter
        if out._inference is not self._inference:
            out._inference = self._inference
        return out

    def is_inference(self) -> bool:
        """Whether this tensor was made inside ``inference_mode``."""
        return self._inference

    def _is_view(self) -> bool:
        return self._base is not None

    def detach_(self) -> "Tensor":
        if self._base is not None:  # rule: views.detach-inplace-on-view-refused
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._node = None
        self._output_nr = 0
        self._requires_grad = False
        self._fw_grads = None  # rule: forward_levels.detach-inplace-drops-tangent
        return self

    # -- conversion ----------------------------------------------------------------
    def numpy(self):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return self._array

    def tolist(self):
        return array_backend.to_host(self._array).tolist()

    def item(self):
        if self._array.size != 1:
            raise RuntimeError(f"a Tensor with {self._array.size} elements cannot be converted to Scalar")
        return array_backend.to_host(self._array).reshape(()).item()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self._array.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        data = array_backend.to_host(self._array)
        return data if dtype is None else data.astype(dtype)

    def cpu(self):
        return self.to("cpu")

    def cuda(self):
        return self.to("cuda")

    def double(self):
        return self.to(dtypes.float64)

    def float(self):
        return self.to(dtypes.float32)

    def long(self):
        return self.to(dtypes.int64)

    # -- printing ------------------------------------------------------------------
    #: a class whose own body sets this prints as ``tensor(...)``; every other subclass prints
    #: its name in that place, as torch's repr (``MyT([1., 2.])``; ``nn.Parameter`` sets it)
    _prints_as_tensor = True

    def __repr__(self):
        cls = type(self)
        name = "tensor" if cls.__dict__.get("_prints_as_tensor") else cls.__name__
        body = _numpy.array2string(
            array_backend.to_host(self._array), separator=", ", prefix=f"{name}(", floatmode="maxprec_equal"
        )
        extras = []
        if self.device.type != "cpu":
            extras.append(f"device='{self.device}'")
        if self._array.dtype not in (_numpy.float32, _numpy.int64, _numpy.bool_):
            extras.append(f"dtype={self.dtype!r}")
        if self._node is not None:
            extras.append(f"grad_fn=<{self._node.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        if self._fw_grads:
            extras.append("tangent=...")
        suffix = "".join(", " + e for e in extras)
        return f"{name}({body}{suffix})"

    __hash__ = object.__hash__


def instance_of(cls, data) -> Tensor:
    """A new leaf of class ``cls`` around ``data``, made as torch makes a subclass's results
    (views, aliases): without running the subclass's own ``__new__`` or ``__init__``."""
    return _init(object.__new__(cls), data)


def _init(tensor, data):
    """Set every slot of a new tensor: a leaf holding ``data``, outside any graph."""
    tensor._array = data
    tensor._version_counter = [0]  # shared by all views; in-place ops bump element 0
    tensor._requires_grad = False
    tensor._node = None
    tensor._output_nr = 0
    tensor._grad = None
    tensor._grad_accumulator = None
    tensor._leaf_hooks = None
    tensor._post_accumulate_hooks = None
    tensor._retains_grad = False
    tensor._base = None
    tensor._fw_grads = None
    if _inference_used[0] and _grad_state.inference:
        tensor._inference = True
    return tensor


# -- from Python data to an array (the constructor's and reference.tensor()'s) ------------
def _infer_dtype(data):
    if isinstance(data, str):
        raise ValueError(f"too many dimensions '{type(data).__name__}'")
    if isinstance(data, bool):
        return dtypes.bool_
    if isinstance(data, numbers.Integral):
        return dtypes.int64
    if isinstance(data, numbers.Real):
        return dtypes.float32
    if isinstance(data, (list, tuple)):
        kinds = [_infer_dtype(item) for item in data]
        for candidate in (dtypes.float32, dtypes.int64, dtypes.bool_):
            if candidate in kinds:
                return candidate
        return dtypes.float32
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _to_array(data, dtype, device_type):
    xp = array_backend.namespace_for_device(device_type)
    if isinstance(data, Tensor):
        data = array_backend.to_host(data._array)
    if isinstance(data, _numpy.ndarray) or hasattr(data, "__cuda_array_interface__"):
        dt = dtypes.from_numpy_dtype(data.dtype) if dtype is None else dtype
    else:
        dt = _infer_dtype(data) if dtype is None else dtype
    return xp.array(data, dtype=dt.numpy)


class Size(tuple):
    """A shape: a tuple that prints as torch.Size does."""

    def __repr__(self):
        return f"reference.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n
