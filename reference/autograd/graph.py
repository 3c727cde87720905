"""Graph nodes: what backward runs, and the ownership rules that keep graphs acyclic.

Ownership (strong references point backward in time only):
  output tensor -> its ``grad_fn`` node -> ``next_functions`` (the nodes of its inputs)
  node -> its saved tensors (inputs as the original objects; its own outputs as raw
  arrays, never as the output tensor, which would own the node back).
A leaf holds its ``AccumulateGrad`` node only weakly; the node holds the leaf strongly.
Hook dictionaries live on the node (for non-leaves, keyed by output number) or on the
leaf tensor, and a ``RemovableHandle`` holds its dictionary weakly. So dropping the last
output frees the whole graph by reference counting alone, and cycles exist only where a
user makes them (a hook closing over its tensor, a ctx attribute holding an output),
which Python's cycle collector can see and free because every link is a Python object.
"""
from __future__ import annotations

import itertools
import weakref

_sequence = itertools.count()
_hook_ids = itertools.count()

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)
INPLACE_HINT = (
    "Hint: enable anomaly detection to find the operation that failed to compute its "
    "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)


class HookDict(dict):
    """An ordered id -> hook mapping that a RemovableHandle can reference weakly."""

    __slots__ = ("__weakref__",)


class RemovableHandle:
    """Removes one hook from the dict it was added to; removing twice is harmless."""

    __slots__ = ("_dict_ref", "id")

    def __init__(self, hooks: HookDict):
        self.id = next(_hook_ids)
        self._dict_ref = weakref.ref(hooks)

    def remove(self) -> None:
        hooks = self._dict_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def add_hook(hooks: HookDict, fn) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


class Node:
    """A backward function: takes gradients w.r.t. its outputs, returns them w.r.t. inputs.

    Built-in nodes use ``__slots__`` and have no ``__dict__`` (attributes are refused,
    as for PyTorch's C++ nodes; ``metadata`` is the place for user data). Custom
    ``Function`` nodes (the ctx) do have a ``__dict__``.
    """

    __slots__ = ("_next_functions", "_seq", "_saved", "_extras", "__weakref__")
    #: names of the saved tensors, in the order of ``_saved`` (exposed as ``_saved_<name>``)
    saved_names: tuple[str, ...] = ()

    def __init__(self, next_functions=()):
        self._next_functions = next_functions
        self._seq = next(_sequence)
        self._saved = ()
        self._extras = None  # NodeExtras, only once a hook, metadata or retain_grad exists

    def _get_extras(self) -> "NodeExtras":
        extras = self._extras
        if extras is None:
            extras = self._extras = NodeExtras()
        return extras

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for index, name in enumerate(cls.__dict__.get("saved_names", ())):
            setattr(cls, f"_saved_{name}", property(_saved_getter(index)))

    # -- introspection -------------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self):
        return self._next_functions

    @property
    def metadata(self) -> dict:
        extras = self._get_extras()
        if extras.metadata is None:
            extras.metadata = {}
        return extras.metadata

    def _sequence_nr(self) -> int:
        return self._seq

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    # -- hooks ---------------------------------------------------------------------
    def register_prehook(self, fn) -> RemovableHandle:
        """``fn(grad_outputs) -> new grad_outputs or None``, run before the node."""
        extras = self._get_extras()
        if extras.pre_hooks is None:
            extras.pre_hooks = HookDict()
        return add_hook(extras.pre_hooks, fn)

    def register_hook(self, fn) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs) -> new grad_inputs or None``, run after it."""
        extras = self._get_extras()
        if extras.post_hooks is None:
            extras.post_hooks = HookDict()
        return add_hook(extras.post_hooks, fn)

    def _tensor_hooks_for(self, output_nr: int) -> HookDict:
        """The tensor hooks registered through output ``output_nr`` of this node."""
        extras = self._get_extras()
        if extras.tensor_pre_hooks is None:
            extras.tensor_pre_hooks = {}
        hooks = extras.tensor_pre_hooks.get(output_nr)
        if hooks is None:
            hooks = extras.tensor_pre_hooks[output_nr] = HookDict()
        return hooks

    # -- backward ------------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return 1

    def apply(self, ops, grads):
        """Gradients w.r.t. the inputs (aligned with next_functions) from ``grads``.

        ``ops`` is the op-set the formulas are written against: raw arrays in a plain
        backward, differentiable tensors under ``create_graph=True``.
        """
        raise NotImplementedError

    def _unpack(self, index: int, as_tensor: bool):
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        value = saved[index]
        if type(value) is SavedTensor:
            return value.unpack(self, as_tensor)
        return value  # a saved number (a scalar operand, an exponent)


class NodeExtras:
    """What few nodes have: hooks, metadata, retain_grad registrations.

    Kept out of Node itself so that the common node is four slots, cheap to create.
    """

    __slots__ = ("pre_hooks", "post_hooks", "tensor_pre_hooks", "retains_grad", "metadata")

    def __init__(self):
        self.pre_hooks = None  # HookDict: fn(grad_outputs)
        self.post_hooks = None  # HookDict: fn(grad_inputs, grad_outputs)
        self.tensor_pre_hooks = None  # {output_nr: HookDict}: hooks registered via tensors
        self.retains_grad = None  # {output_nr: weakref to the tensor}
        self.metadata = None  # dict


def _saved_getter(index: int):
    def getter(self):
        return self._unpack(index, True)

    return getter


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Inputs are kept as the original object (so ``_saved_self is x``). A node's own
    output is kept as its raw array and version counter only, and is re-wrapped on
    unpack as a new tensor sharing both, whose grad_fn is the node: keeping the output
    itself would make output -> node -> output a reference cycle.
    """

    __slots__ = ("_tensor", "_data", "_counter", "_version", "_output_nr", "_requires_grad", "_dtype")

    def __init__(self, tensor, is_output: bool):
        self._counter = tensor._version_counter
        self._version = self._counter[0]
        if is_output:
            self._tensor = None
            self._data = tensor._data
            self._output_nr = tensor._output_nr
            self._requires_grad = tensor.requires_grad
            self._dtype = tensor.dtype
        else:
            self._tensor = tensor
            self._data = None

    def unpack(self, node, as_tensor: bool):
        if self._counter[0] != self._version:
            raise RuntimeError(self._version_error(node))
        tensor = self._tensor
        if tensor is not None:
            return tensor if as_tensor else tensor._data
        if not as_tensor:
            return self._data
        from reference.tensor import Tensor

        out = Tensor._wrap(self._data)
        out._version_counter = self._counter
        if self._requires_grad:
            out._node = node
            out._output_nr = self._output_nr
            out._requires_grad = True
        return out

    def _version_error(self, node) -> str:
        tensor = self._tensor
        if tensor is not None:
            shape, dtype = tensor.shape, tensor.dtype
            producer = tensor.grad_fn
            which = "" if producer is None else f", which is output {tensor._output_nr} of {_short_name(producer)},"
        else:
            shape, dtype = tuple(self._data.shape), self._dtype
            which = f", which is output {self._output_nr} of {_short_name(node)},"
        dims = ", ".join(str(s) for s in shape)
        return (
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [reference.{dtype.legacy_name} [{dims}]]{which} is at version "
            f"{self._counter[0]}; expected version {self._version} instead. {INPLACE_HINT}"
        )


def _short_name(node) -> str:
    name = node.name()
    stripped = name.rstrip("0123456789")
    if stripped.endswith("Backward"):
        stripped = stripped[: -len("Backward")]
    return stripped or name


class AccumulateGrad(Node):
    """The sink of a leaf: adds the incoming gradient into ``variable.grad``.

    The node owns its leaf; the leaf owns the node only weakly, so hooks registered on
    the node die with the last graph that uses it, while hooks registered on the leaf
    tensor persist across graphs.
    """

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    def apply(self, ops, grads):
        from reference.autograd.accumulate import accumulate_into_leaf

        accumulate_into_leaf(self.variable, grads[0], ops)
        return ()


class Error(Node):
    """Stands in for a backward that must not be differentiated again."""

    __slots__ = ("_message",)

    def __init__(self, message, next_functions):
        super().__init__(next_functions)
        self._message = message

    def name(self) -> str:
        return "reference::autograd::Error"

    def apply(self, ops, grads):
        raise RuntimeError(self._message)
