"""Tensor subclasses: ops on them return the subclass, as torch's default ``__torch_function__``.

In torch an op whose arguments include an instance of a Tensor subclass goes through that
class's ``__torch_function__``; the default one (``Tensor.__torch_function__``) runs the op
with subclass dispatch switched off and turns each tensor result that is not already of the
class into one with ``as_subclass``: an alias of the op's plain result, recorded as an
``AliasBackward0`` over the op's node (``(s * x).grad_fn`` is ``AliasBackward0``, its next
function ``MulBackward0``). In-place results are the subclass instance itself, untouched.

Cost: a plain Tensor's methods are never wrapped. A direct subclass is given, when it is
defined (``__init_subclass__``), one class of dispatching wrappers of Tensor's op methods in
Tensor's place among its bases (its own methods come first, and ``super().exp()`` in them
dispatches, as torch's ``Tensor.exp`` does whoever calls it); functions that
may see a subclass as a non-first argument (``reference.mul(x, s)``, ``reference.cat``) check
their arguments' classes, and the binary operators reach the subclass's reflected method first
by Python's own rule. ``nn.Parameter`` opts out (``_disabled_torch_function_impl``), as in torch.
"""
from __future__ import annotations

import threading

from reference import tensor as _tensor
from reference.tensor import Tensor


class _State(threading.local):
    disabled = 0  # > 0 while the default __torch_function__ runs an op (per thread, as torch's guard)


_state = _State()


class DisableTorchFunctionSubclass:
    """While open, ops on subclass instances run as on plain tensors (torch's guard of that name)."""

    def __enter__(self):
        _state.disabled += 1

    def __exit__(self, *exc):
        _state.disabled -= 1
        return False


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """A class whose ``__torch_function__`` is this takes no part in dispatch (``nn.Parameter``)."""
    return func(*args, **(kwargs or {}))


def _convert(ret, cls):
    """torch's ``_convert``: each tensor in ``ret`` (or in a tuple / list of it) as ``cls``."""
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor):
        if not isinstance(ret, cls):
            ret = _tensor._alias(ret, cls)  # Tensor.as_subclass: AliasBackward0 when it requires grad
        return ret
    if isinstance(ret, (tuple, list)):
        return type(ret)(_convert(r, cls) for r in ret)
    return ret


def torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: run ``func`` with dispatch off, convert tensors to ``cls``.

    Refuses (``NotImplemented``) when a type in ``types`` is not a base of ``cls``, so that of two
    unrelated subclasses neither wins, and of a class and its subclass the subclass does."""
    # rule: identity.subclass-op-results-are-subclass
    if kwargs is None:
        kwargs = {}
    for t in types:
        if not issubclass(cls, t):
            return NotImplemented
    _state.disabled += 1
    try:
        ret = func(*args, **kwargs)
    finally:
        _state.disabled -= 1
    return _convert(ret, cls)


def _overloaded_types(args, kwargs) -> list:
    """The distinct subclass types among the arguments (tensors, and tensors in lists or
    tuples), subclasses before their bases, otherwise left to right (torch's order)."""
    found: list = []

    def consider(value):
        t = value.__class__
        if t is Tensor or t in found or not isinstance(value, Tensor):
            return
        if getattr(t, "__torch_function__", None) is _disabled_torch_function_impl:
            return
        for i, other in enumerate(found):
            if issubclass(t, other):
                found.insert(i, t)
                return
        found.append(t)

    for value in args:
        if isinstance(value, (list, tuple)):
            for item in value:
                consider(item)
        else:
            consider(value)
    if kwargs:
        for value in kwargs.values():
            consider(value)
    return found


def dispatch(func, args, kwargs=None, name=None):
    """Call ``func(*args, **kwargs)`` through the ``__torch_function__`` of the subclasses among
    its arguments (torch's ``handle_torch_function``)."""
    types = None if _state.disabled else _overloaded_types(args, kwargs)
    if not types:  # (a class that opted out, as nn.Parameter, is run as a plain tensor)
        _state.disabled += 1
        try:
            return func(*args, **(kwargs or {}))
        finally:
            _state.disabled -= 1
    for t in types:
        ret = t.__torch_function__(func, tuple(types), args, kwargs or {})
        if ret is not NotImplemented:
            return ret
    raise TypeError(f"no implementation found for '{name or getattr(func, '__name__', func)}' on types that "
                    f"implement __torch_function__: {[t for t in types]}")


def has_subclass(values) -> bool:
    """Whether any of ``values`` is an instance of a Tensor subclass (the one check a function
    taking several tensors makes before dispatching)."""
    for value in values:
        if value.__class__ is not Tensor and isinstance(value, Tensor):
            return True
    return False


#: binary operators: a refusal by every class is ``NotImplemented``, so Python reports
#: "unsupported operand type(s)" as for torch's operators
_OPERATORS = frozenset((
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
    "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
))
#: Tensor attributes that are no ops (construction, protocols, printing, serialization)
_NOT_OPS = frozenset((
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__repr__", "__hash__",
    "__len__", "__float__", "__int__", "__index__", "__bool__", "__array__", "__iter__",
    "__reduce_ex__", "__deepcopy__", "__getattribute__", "__setattr__", "__delattr__",
    "numpy", "tolist", "item", "size", "dim", "numel", "stride", "is_contiguous", "data_ptr",
))
#: properties whose value is a tensor made by an op (``grad`` and ``_base`` are returned as kept)
_OP_PROPERTIES = ("data", "T", "mT")


def _method(name, func):
    operator = name in _OPERATORS

    def method(*args, **kwargs):
        if _state.disabled:
            return func(*args, **kwargs)
        try:
            return dispatch(func, args, kwargs, name)
        except TypeError:
            if operator:
                return NotImplemented
            raise

    method.__name__ = method.__qualname__ = name
    method.__doc__ = func.__doc__
    method._torch_function_wrapper = True
    return method


def _property(name, prop):
    getter = prop.__get__

    def fget(self):
        if _state.disabled:
            return getter(self)
        return dispatch(getter, (self,), None, name)

    return property(fget, prop.fset, prop.fdel, prop.__doc__)


_dispatching_base = []  # [the class], made when the first subclass is defined (Tensor's methods are bound by then)


def _dispatching() -> type:
    """A Tensor subclass holding a dispatching wrapper of every op method of Tensor, put in
    Tensor's place among the bases of each direct subclass: a subclass's own methods come
    first, and ``super().exp()`` in one of them reaches the wrapper, as torch's ``Tensor.exp``
    dispatches whatever calls it."""
    if not _dispatching_base:
        namespace = {"__slots__": (), "__module__": Tensor.__module__, "__qualname__": "Tensor",
                     "__doc__": "Tensor, dispatching to the subclass's __torch_function__ (reference.overrides)."}
        for name, value in Tensor.__dict__.items():
            if name in _NOT_OPS:
                continue
            if isinstance(value, property):
                if name in _OP_PROPERTIES:
                    namespace[name] = _property(name, value)
            elif callable(value) and not isinstance(value, (staticmethod, classmethod, type)):
                namespace[name] = _method(name, value)
        _dispatching_base.append(None)  # the class below is made without this hook's help
        _dispatching_base[0] = type(Tensor)("Tensor", (Tensor,), namespace)
    return _dispatching_base[0]


def install_on_subclass(cls) -> None:
    """Make a new direct subclass of Tensor derive from the dispatching class instead (a
    subclass of a subclass inherits it; ``nn.Parameter`` and its subclasses opt out)."""
    if getattr(cls, "__torch_function__", None) is _disabled_torch_function_impl:  # nn.Parameter and its subclasses
        return
    if Tensor in cls.__bases__ and not (_dispatching_base and _dispatching_base[0] is None):
        base = _dispatching()
        cls.__bases__ = tuple(base if b is Tensor else b for b in cls.__bases__)


def _init_subclass(cls, **kwargs):
    super(Tensor, cls).__init_subclass__(**kwargs)
    install_on_subclass(cls)


Tensor.__torch_function__ = classmethod(torch_function)
Tensor.__init_subclass__ = classmethod(_init_subclass)
