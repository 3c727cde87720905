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

import abc
import itertools
import sys
import threading
import weakref
from typing import NamedTuple

from reference import dtypes, grad_mode
from reference.array_backend import device_type_of, to_device, to_host
from reference.autograd.accumulate import accumulate_into_leaf, can_take_over
from reference.autograd.versions import increment_version  # noqa: F401 - torch.autograd.graph's name
from reference.handles import HookDict, RemovableHandle, add_hook  # noqa: F401 - re-exported
from reference.tensor import Tensor

_sequence = itertools.count()

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


DETACHED_INPLACE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not "
    "supported, please use out-of-place `.detach()` instead"
)


class _SavedHooksState(threading.local):
    """Per thread, as in torch: the stack of (pack, unpack) pairs and the disabled message."""

    def __init__(self):
        self.stack = []
        self.disabled = None  # the message of an active disable_saved_tensors_hooks


_saved_hooks = _SavedHooksState()
#: how many saved_tensors_hooks contexts are open in any thread: the hot path reads only
#: this global, and looks at the thread's stack only when it is non-zero
_open_hook_contexts = 0
#: bumped by every change of any thread's state (a block entered or left, hooks disabled or
#: enabled again): the engine compares it after each node, and restores only when it moved
_hooks_changes = 0
_hooks_lock = threading.Lock()


def saved_hooks_snapshot():
    """This thread's saved-tensor hooks state (the stack and the disabled message), to be put
    back by ``restore_saved_hooks``."""
    return tuple(_saved_hooks.stack), _saved_hooks.disabled


def restore_saved_hooks(snapshot) -> None:
    """Put this thread's saved-tensor hooks state back to ``snapshot``, whatever blocks were
    entered or left since (torch's engine runs each node, and the end of a backward, under
    the thread-local state the backward started with: a block an unpack hook or a node hook
    entered and never left is gone after the node, and holds its hooks no longer)."""
    global _open_hook_contexts, _hooks_changes
    stack, disabled = snapshot
    state = _saved_hooks
    with _hooks_lock:
        _open_hook_contexts += len(stack) - len(state.stack)
        _hooks_changes += 1
    state.stack[:] = stack
    state.disabled = disabled

PACK_MODIFIED_INPUT = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook can not be modified by in-place operations as this can lead to unexpected side-effects."
)
HOOKS_SET_TWICE = (
    "Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one "
    "pair of hooks is allowed at a time."
)
HOOKS_AFTER_FREE = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved variables after calling backward."
)


class Node(abc.ABC):
    """``torch.autograd.graph.Node``: what every graph node is an instance of, as a *virtual* base.

    As in torch, it is in no node class's ``__mro__``: ``isinstance``/``issubclass`` answer
    through ``__subclasshook__``, for the classes derived from ``NodeBase`` that are nodes.
    It cannot be instantiated (abstract). Other classes may join it with ``Node.register``.
    """

    @classmethod
    def __subclasshook__(cls, subclass):
        # rule: identity.graph-nodes-are-node-instances -- every node, built-in or custom, is one
        if cls is Node and issubclass(subclass, NodeBase) and subclass._is_graph_node:
            return True
        return NotImplemented

    @abc.abstractmethod
    def name(self) -> str: ...

    @property
    @abc.abstractmethod
    def next_functions(self): ...

    @property
    @abc.abstractmethod
    def metadata(self) -> dict: ...

    @abc.abstractmethod
    def register_hook(self, fn): ...

    @abc.abstractmethod
    def register_prehook(self, fn): ...

    @abc.abstractmethod
    def _sequence_nr(self) -> int: ...


class NodeBase:
    """A backward function: takes gradients w.r.t. its outputs, returns them w.r.t. inputs.
    Every node class of the engine derives from it (``Node`` above is the public, virtual base).

    Built-in nodes use ``__slots__`` and have no ``__dict__`` (attributes are refused,
    as for PyTorch's C++ nodes; ``metadata`` is the place for user data). Custom
    ``Function`` nodes (the ctx) do have a ``__dict__``.
    """

    __slots__ = ("_next_functions", "_seq", "_saved", "_extras", "__weakref__")
    #: whether the class counts as a ``Node``: every node class; not FunctionCtx and the
    #: Function classes, which derive from this class only because a custom node is its ctx
    _is_graph_node = True
    #: names of the saved tensors, in the order of ``_saved`` (exposed as ``_saved_<name>``)
    saved_names: tuple[str, ...] = ()
    #: a built-in node that receives no gradient (None) sends none on without running its
    #: formula, as PyTorch's generated nodes do; a custom Function's backward still runs
    _none_passes = True

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
            setattr(cls, f"_raw_saved_{name}", property(_raw_saved_getter(index)))

    # -- introspection -------------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    @property
    def next_functions(self):
        # rule: identity.next-functions-pairs -- one (node, output_nr) edge per input, as recording.edge made it
        return self._next_functions

    @property
    def metadata(self) -> dict:
        extras = self._get_extras()
        # rule: identity.node-metadata-persistent
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
    #: outputs of the node (a class attribute, read once per node by the engine; nodes with
    #: several outputs override it with a property)
    num_outputs: int = 1

    def apply(self, ops, grads):
        """Gradients w.r.t. the inputs (aligned with next_functions) from ``grads``.

        ``ops`` is the op-set the formulas are written against: raw arrays in a plain
        backward, differentiable tensors under ``create_graph=True``.
        """
        raise NotImplementedError

    # rules: engine.second-backward-error, legacy_function.second-backward-without-retain-graph
    def _unpack(self, index: int, as_tensor: bool):
        saved = self._saved
        if saved is None:  # rule: saved_tensors.access-after-release-raises (unpack never runs)
            raise RuntimeError(FREED_MESSAGE)
        value = saved[index]
        if type(value) is SavedTensor:
            if not as_tensor and value._hooks is None and value._counter[0] == value._version:
                # a plain backward's common case, SavedTensor.unpack's checks inline (the hot path)
                tensor = value._tensor
                if tensor is None:
                    return value._array
                if tensor._node is not None or not value._had_grad_fn:
                    return tensor._array
            tensor = value._tensor
            if tensor is not None and tensor._node is None and value._had_grad_fn:
                # rule: engine.saved-detached-inplace-raises -- a saved input's history was cut by
                # detach_(): the formula refuses it (ctx.saved_tensors and _saved_* still read it, as in torch)
                raise RuntimeError(DETACHED_INPLACE)
            return value.unpack(self, as_tensor)
        return value  # a saved number (a scalar operand, an exponent)


class NodeExtras:
    """What few nodes have: hooks, metadata, retain_grad registrations.

    Kept out of NodeBase itself so that the common node is four slots, cheap to create.
    """

    __slots__ = ("pre_hooks", "post_hooks", "tensor_pre_hooks", "retains_grad", "metadata", "outputs")

    def __init__(self):
        self.outputs = None  # {output_nr: OutputMetadata}, recorded by get_gradient_edge
        self.pre_hooks = None  # HookDict: fn(grad_outputs)
        self.post_hooks = None  # HookDict: fn(grad_inputs, grad_outputs)
        self.tensor_pre_hooks = None  # {output_nr: HookDict}: hooks registered via tensors
        self.retains_grad = None  # {output_nr: weakref to the tensor}
        self.metadata = None  # dict


def _saved_getter(index: int):
    def getter(self):
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        value = saved[index]
        if type(value) is SavedTensor:
            return value.unpack(self, True)  # rule: saved_tensors.unpack-result-is-saved-value
        return value

    return getter


def _raw_saved_getter(index: int):
    def getter(self):
        return RawSavedTensor._handle(self, index)

    return getter


class RawSavedTensor:
    """``grad_fn._raw_saved_<name>``: a handle on one saved tensor of a node.

    It names the slot (node, index) instead of holding the SavedTensor, so that the node's
    release after backward frees the packed value even while a user keeps the handle.
    """

    __slots__ = ("_node", "_index")

    def __init__(self, *args, **kwargs):
        # torch.autograd.SavedTensor: only the engine makes these
        raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")

    @classmethod
    def _handle(cls, node, index):
        raw = object.__new__(cls)
        raw._node = node
        raw._index = index
        return raw

    def _slot(self):
        """The SavedTensor in the slot, or None once the node has released it (or saved no tensor there)."""
        saved = self._node._saved
        if saved is None:
            return None
        value = saved[self._index]
        return value if type(value) is SavedTensor else None

    @property
    def data(self):
        """What the slot holds: pack's result under hooks, a saved input itself, or a saved output's
        data as a new tensor outside the graph (sharing its version counter); None once released."""
        value = self._slot()
        if value is None:
            return None
        if value._hooks is not None:
            return value._hooks.packed
        if value._tensor is not None:
            return value._tensor
        out = Tensor._wrap(value._array)
        out._version_counter = value._counter
        return out

    def unpack(self):
        """The saved tensor, as backward would see it (through the unpack hook, version-checked)."""
        return self._node._unpack(self._index, True)

    @property
    def unpack_hook(self):
        """The unpack hook registered for this saved tensor, or None."""
        value = self._slot()
        if value is None or value._hooks is None:
            return None
        return value._hooks.unpack_hook

    def register_hooks(self, *hooks) -> None:
        """``register_hooks(pack_hook, unpack_hook)``: pack the saved tensor now with ``pack_hook``;
        ``unpack_hook`` runs on every access."""
        if len(hooks) != 2 or not all(callable(hook) for hook in hooks):
            raise TypeError("register_hooks(): incompatible function arguments: expected two callables, "
                            "(pack_hook, unpack_hook)")
        pack_hook, unpack_hook = hooks
        saved = self._node._saved
        if saved is None:
            raise RuntimeError(HOOKS_AFTER_FREE)  # rule: saved_tensors.register-hooks-after-release-raises
        value = saved[self._index]
        if type(value) is not SavedTensor:
            raise RuntimeError("None is forbidden")  # nothing was saved in this slot
        if value._hooks is not None:
            raise RuntimeError(HOOKS_SET_TWICE)  # rule: saved_tensors.register-hooks-twice-raises
        # rule: saved_tensors.register-hooks-per-tensor -- pack once, now; unpack_hook on every later access
        value._pack(value.unpack(self._node, True), pack_hook, unpack_hook, value._array is not None)

    def __repr__(self) -> str:
        return f"<reference.autograd.graph.RawSavedTensor object at {id(self):#x}>"


class _SavedOutsideGraph(NodeBase):
    """Holds a tensor saved by hand (``save_tensor``), in the slot a node would use; no edges."""

    __slots__ = ()


def save_tensor(tensor) -> RawSavedTensor:
    """Save ``tensor`` as a node saves an input (pack hooks run now), outside any graph;
    ``unpack()`` reads it back as backward would. torch: ``torch._C._autograd._make_saved_tensor``."""
    holder = _SavedOutsideGraph()
    holder._saved = (SavedTensor(tensor, False),)
    return RawSavedTensor._handle(holder, 0)


class _Packed:
    """What a node keeps for a saved tensor under hooks: what pack returned, the unpack hook,
    and the metadata needed to give unpack's result the saved tensor's place in the graph.
    The original tensor is not kept (rule: saved_tensors.node-holds-only-packed)."""

    __slots__ = ("packed", "unpack_hook", "is_output", "grad_fn", "output_nr", "requires_grad", "accumulator")

    def unpack(self, node, as_tensor):
        # rule: saved_tensors.unpack-reentrant-backward -- the hook is called with no engine lock
        # held, and each backward keeps its state in its own execute() frame: a backward the hook
        # runs is a nested graph task that finishes before the outer one reads the value
        value = self.unpack_hook(self.packed)  # rule: saved_tensors.unpack-on-every-access
        if not isinstance(value, Tensor):  # rule: saved_tensors.unpack-non-tensor-raises
            raise TypeError(
                "Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(value).__name__}"
            )
        if not as_tensor:
            return value._array  # rule: saved_tensors.unpack-result-feeds-gradient
        grad_fn = node if self.is_output else self.grad_fn
        if grad_fn is None and not self.requires_grad:
            return value  # nothing to reconnect: unpack's own tensor (saved_tensors.unpacked-input-identity)
        # rule: saved_tensors.create-graph-through-unpacked -- a new tensor on unpack's data, in the
        # saved tensor's place in the graph (its grad_fn, or the leaf's accumulator)
        out = Tensor._wrap(value._array)
        out._version_counter = value._version_counter
        out._requires_grad = True
        if grad_fn is not None:
            out._node = grad_fn
            out._output_nr = self.output_nr
        else:
            out._grad_accumulator = self.accumulator
        return out


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    Inputs are kept as the original object (so ``_saved_self is x``). A node's own
    output is kept as its raw array and version counter only, and is re-wrapped on
    unpack as a new tensor sharing both, whose grad_fn is the node: keeping the output
    itself would make output -> node -> output a reference cycle.
    """

    __slots__ = ("_tensor", "_array", "_counter", "_version", "_output_nr", "_requires_grad", "_hooks",
                 "_had_grad_fn")

    def __init__(self, tensor, is_output: bool):
        self._counter = tensor._version_counter
        self._version = self._counter[0]
        self._hooks = None  # a _Packed once pack hooks have run
        if is_output:
            # rule: gc_cycles.saved-tensors-freed-with-graph -- an output is kept as its array, never the
            # tensor (which owns this node): everything saved goes when the last output does
            self._tensor = None
            self._array = tensor._array
            self._output_nr = tensor._output_nr
            self._requires_grad = tensor._requires_grad  # (its dtype is the array's: read for messages only)
        else:
            self._tensor = tensor
            self._array = None
            self._had_grad_fn = tensor._node is not None
        # rule: saved_tensors.pack-once-at-save -- the hot path's one check: a global count
        if _open_hook_contexts and _saved_hooks.stack:
            pack_hook, unpack_hook = _saved_hooks.stack[-1]  # rule: saved_tensors.innermost-hooks-win
            self._pack(tensor, pack_hook, unpack_hook, is_output)

    def _pack(self, tensor, pack_hook, unpack_hook, is_output):
        """Hand ``tensor`` to ``pack_hook`` (under no_grad, as in torch) and keep only its result."""

        version = tensor._version_counter[0]
        # pack sees the tensor itself, a tangent included; tangents are never saved here, so
        # hooks leave forward AD alone (rule: saved_tensors.forward-ad-under-hooks)
        with grad_mode.no_grad():  # rule: saved_tensors.hooks-grad-mode (unpack runs under the caller's mode)
            packed = pack_hook(tensor)  # its exception propagates out of the op (saved_tensors.hooks-popped-on-exception)
        if tensor._version_counter[0] != version:  # rule: saved_tensors.pack-modifying-input-raises
            raise RuntimeError(PACK_MODIFIED_INPUT)
        hooks = _Packed()
        hooks.packed = packed
        # rule: saved_tensors.hook-functions-released -- the node keeps unpack (not pack) and only
        # here, so both functions go once the block has exited and this SavedTensor is released
        hooks.unpack_hook = unpack_hook
        hooks.is_output = is_output
        hooks.output_nr = tensor._output_nr
        hooks.requires_grad = tensor._requires_grad
        hooks.grad_fn = None if is_output else tensor._node
        hooks.accumulator = None
        if hooks.requires_grad and not is_output and tensor._node is None:
            hooks.accumulator = weakref.ref(grad_accumulator(tensor))
        # rule: saved_tensors.packed-released-with-graph -- only the node's SavedTensor holds
        # ``hooks`` (no back reference), so the packed value goes with the node
        self._hooks = hooks
        # rule: saved_tensors.node-holds-only-packed -- drop the original
        self._tensor = None
        self._array = None

    # rule: identity.saved-output-unpack-not-kept -- each unpack builds its tensor; none is cached
    def unpack(self, node, as_tensor: bool):
        hooks = self._hooks
        if hooks is not None:
            # rule: saved_tensors.hooks-skip-version-check -- unpack's result is used as it is, so
            # a packed copy is unaffected by later in-place ops (saved_tensors.pack-copy-survives-inplace)
            return hooks.unpack(node, as_tensor)
        # rules: identity.saved-unpack-version-checked, engine.version-counter-error, engine.version-counter-error-detail, legacy_function.saved-tensors-version-check
        if self._counter[0] != self._version:
            raise RuntimeError(self._version_error(node))
        tensor = self._tensor
        if tensor is not None:  # (identity hooks give the same: saved_tensors.identity-hooks-transparent)
            return tensor if as_tensor else tensor._array
        if not as_tensor:
            return self._array

        out = Tensor._wrap(self._array)
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
            shape, dtype = tuple(self._array.shape), dtypes.from_numpy_dtype(self._array.dtype)
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


class AccumulateGrad(NodeBase):
    """The sink of a leaf: adds the incoming gradient into ``variable.grad``.

    The node owns its leaf; the leaf owns the node only weakly, so hooks registered on
    the node die with the last graph that uses it, while hooks registered on the leaf
    tensor persist across graphs.
    """

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(())
        # rule: identity.accumulate-grad-variable-is-leaf
        self.variable = variable

    def apply(self, ops, grads):
        grad = grads[0]
        steal = False
        if grad is not None and not ops.differentiable and self.variable._grad is None:
            # rule: identity.grad-takes-over-unshared-buffer -- the engine holds the gradient
            # in ``grads`` (cleared of stale names by the engine, and by the pre-hooks' runner),
            # here in ``grad``, and, with post-hooks on this node, in the tensor of their
            # grad_outputs (as torch allows), which then shares the buffer with ``.grad``
            extras = self._extras
            # the count is taken here, by a C call, so that no Python call boundary adds to it
            references = sys.getrefcount(grad) - (
                3 if extras is not None and extras.post_hooks else 2)
            steal = can_take_over(grad, references)
        accumulate_into_leaf(self.variable, grad, ops, steal)
        return ()


def grad_accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's current AccumulateGrad node, created on demand and cached weakly."""
    ref = leaf._grad_accumulator
    node = ref() if ref is not None else None
    if node is None:
        # rule: engine.backward-keeps-leaves-leaves -- the accumulator is reached through edges; the leaf's grad_fn stays None
        node = AccumulateGrad(leaf)
        # rules: hooks.accumulate-grad-node-shared-while-alive, hooks.accumulate-grad-node-hooks-die-with-node, gc_cycles.grad-does-not-retain-graph
        leaf._grad_accumulator = weakref.ref(node)
    return node


class Error(NodeBase):
    """Stands in for a backward that must not be differentiated again."""

    __slots__ = ("_message",)
    _none_passes = False  # it refuses whichever of its outputs the gradient arrives through

    def __init__(self, message, next_functions):
        super().__init__(next_functions)
        self._message = message

    def name(self) -> str:
        return "reference::autograd::Error"

    @property
    def num_outputs(self) -> int:
        return len(self._next_functions)  # one output per input, as torch's DelayedError

    def apply(self, ops, grads):
        raise RuntimeError(self._message)


# -- gradient edges ---------------------------------------------------------------------
class GradientEdge(NamedTuple):
    """Where the gradient of a tensor is computed: input ``output_nr`` of ``node`` (a leaf's
    AccumulateGrad, input 0). Holding it holds the node, hence the graph behind it; backward
    and grad accept it in place of the tensor. ``ownership_token`` is torch's field for nodes
    that do not own their graph; the reference's nodes all do, so it stays None."""

    node: Node
    output_nr: int
    ownership_token: Node | None = None


class OutputMetadata(NamedTuple):
    """What a node knows of one of its outputs without holding it: enough for backward to make
    the implicit gradient of a GradientEdge (torch keeps this for every output; the reference
    records it when ``get_gradient_edge`` is asked, the one way to an edge without a tensor)."""

    shape: tuple
    dtype: object
    device: object


GRADIENT_EDGE_NO_GRAD = "It is not possible to get the gradient edge for a Tensor that does not require gradients"


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge where ``tensor``'s gradient is computed: ``autograd.grad(loss, edge)`` equals
    ``autograd.grad(loss, tensor)``, and the edge outlives the tensor."""
    if not tensor._requires_grad:
        raise RuntimeError(GRADIENT_EDGE_NO_GRAD)
    node = tensor._node if tensor._node is not None else grad_accumulator(tensor)
    extras = node._get_extras()
    if extras.outputs is None:
        extras.outputs = {}
    # rule: engine.gradient-edge-outlives-tensor -- the edge holds the node, never the tensor:
    # shape, dtype and device only: no reference to the tensor, so no cycle and no lifetime change
    extras.outputs[tensor._output_nr] = OutputMetadata(tensor.shape, tensor.dtype, tensor.device)
    return GradientEdge(node, tensor._output_nr)


def output_metadata(edge: GradientEdge, required: bool):
    """The recorded shape, dtype and device of the output an edge stands for; None when none
    was recorded (an edge built by hand), or an error if ``required``."""
    extras = edge.node._extras
    meta = None if extras is None or extras.outputs is None else extras.outputs.get(edge.output_nr)
    if meta is None and required:
        raise RuntimeError(
            "the reference knows the shape of a node's output only for edges made by "
            "torch.autograd.graph.get_gradient_edge; pass the gradient for this GradientEdge explicitly")
    return meta


# -- saved-tensor hooks (torch.autograd.graph's context managers) -----------------------
def saved_tensors_hooks_enabled() -> bool:
    """False inside ``disable_saved_tensors_hooks`` (on this thread), True otherwise."""
    return _saved_hooks.disabled is None


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Within the block, every tensor saved for backward is handed to ``pack_hook`` once, at
    save time, and the node keeps only what it returns; ``unpack_hook(packed)`` runs on every
    access (``ctx.saved_tensors``, ``grad_fn._saved_*``, backward) and its tensor is what the
    formula uses. Nested blocks: the innermost pair applies."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        global _open_hook_contexts, _hooks_changes
        state = _saved_hooks
        if state.disabled is not None:  # rule: saved_tensors.disable-refuses-hooks
            raise RuntimeError(state.disabled)
        state.stack.append((self.pack_hook, self.unpack_hook))
        with _hooks_lock:
            _open_hook_contexts += 1
            _hooks_changes += 1
        return self

    def __exit__(self, *exc):
        global _open_hook_contexts, _hooks_changes
        if not _saved_hooks.stack:  # more exits than entries (an unpack hook leaving early): nothing to pop
            return False
        # rules: saved_tensors.hooks-popped-on-exception (an exception leaves the block as a normal
        # exit does: the pair is popped, the enclosing one applies again), saved_tensors.hook-functions-released
        # (the stack keeps no reference to a pair once its block exited)
        _saved_hooks.stack.pop()
        with _hooks_lock:
            _open_hook_contexts -= 1
            _hooks_changes += 1
        return False


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Within the block, entering ``saved_tensors_hooks`` raises RuntimeError(error_message);
    entering it while hooks are active raises the same, as in torch."""

    def __init__(self, error_message):
        self.error_message = error_message
        self._previous = None

    def __enter__(self):
        state = _saved_hooks
        if state.stack:  # rule: saved_tensors.disable-refuses-hooks
            raise RuntimeError(self.error_message)
        self._previous = state.disabled
        state.disabled = self.error_message
        _changed()
        return self

    def __exit__(self, *exc):
        _saved_hooks.disabled = self._previous
        _changed()
        return False


def _changed() -> None:
    global _hooks_changes
    with _hooks_lock:
        _hooks_changes += 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Saved tensors live on the host between forward and backward: pack copies a device
    tensor to host memory, unpack copies it back to its device. A CPU tensor is kept as it
    is (its data shared, no copy), but the hooks still run."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(_pack_to_cpu, _unpack_from_cpu)
        self.pin_memory = pin_memory  # accepted; numpy has no pinned memory
        self.device_type = device_type


def _pack_to_cpu(tensor):

    # rule: saved_tensors.save-on-cpu-round-trip
    device = device_type_of(tensor._array)
    host = Tensor._wrap(to_host(tensor._array)) if device != "cpu" else tensor.detach()
    return (device, host)


def _unpack_from_cpu(packed):

    device, host = packed
    if device == "cpu":
        return host
    return Tensor._wrap(to_device(host._array, device))


MUTATION_OUTSIDE_CONTEXT = (
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the "
    "graph was originally recorded."
)
#: the innermost open allow_mutation_on_saved_tensors context; in-place ops ask it first
_mutation_watch = None


class _MutableSaved:
    """What allow_mutation_on_saved_tensors packs: the saved data, and a copy of it taken
    just before the first in-place change to that data."""

    __slots__ = ("data", "counter", "copy", "copy_version", "context", "__weakref__")


class _AllowMutationContext:
    __slots__ = ("watched", "closed", "_hooks", "_previous", "__weakref__")

    def __init__(self):
        self.watched = {}  # id(version counter) -> [weakref to _MutableSaved]; never owns them
        self.closed = False

    def pack(self, tensor):
        saved = _MutableSaved()
        saved.data = tensor._array
        saved.counter = tensor._version_counter  # keeps the id below valid while saved lives
        saved.copy = None
        saved.context = self
        self.watched.setdefault(id(saved.counter), []).append(weakref.ref(saved))
        return saved

    def unpack(self, saved):
        if saved.context.closed:  # rule: saved_tensors.allow-mutation-outside-context-raises
            # torch 2.13 raises AssertionError here (its unpack hook is Python code), not the
            # RuntimeError of the engine's own checks; so does the reference
            raise AssertionError(MUTATION_OUTSIDE_CONTEXT)
        if saved.copy is None:
            out = Tensor._wrap(saved.data)
            out._version_counter = saved.counter
            return out
        return Tensor._wrap(saved.copy)

    def before_mutation(self, tensor) -> None:
        """Called by every in-place op before it writes: copy what a node saved from it, once
        for all the entries that saved this version (as torch clones once per tensor version)."""
        refs = self.watched.get(id(tensor._version_counter))
        if not refs:
            return
        copy = None
        for ref in refs:
            saved = ref()
            if saved is not None and saved.copy is None and saved.counter is tensor._version_counter:
                # rule: saved_tensors.allow-mutation-keeps-saved-value
                if copy is None:
                    copy = saved.data.copy()
                saved.copy = copy
                saved.copy_version = tensor._version

    @property
    def cloned(self) -> dict:
        """``{(tensor id, version): copy}`` of the copies still kept (torch's name): one per
        version a saved tensor had when written over, gone with the graphs that saved it."""
        out = {}
        for key, refs in self.watched.items():
            for ref in refs:
                saved = ref()
                if saved is not None and saved.copy is not None:
                    out[(key, saved.copy_version)] = saved.copy
        return out

    @property
    def tid_to_weakhandle(self) -> dict:
        """``{tensor id: weak handles}`` of the tensors whose saved values are still watched (torch's name)."""
        return {key: refs for key, refs in self.watched.items() if any(ref() is not None for ref in refs)}

    def __enter__(self):
        global _mutation_watch
        if _mutation_watch is not None:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        self._hooks = saved_tensors_hooks(self.pack, self.unpack)
        self._hooks.__enter__()
        self._previous, _mutation_watch = _mutation_watch, self
        return self

    def __exit__(self, *exc):
        global _mutation_watch
        _mutation_watch = self._previous
        self._previous = None
        self._hooks.__exit__(*exc)
        self._hooks = None
        self.closed = True
        self.watched.clear()
        return False


def allow_mutation_on_saved_tensors():
    """Within the block, a tensor saved for backward may be modified in place: its saved
    value is copied just before the first change, and backward uses that copy. A graph
    recorded in the block cannot be backpropagated through after the block ends."""
    return _AllowMutationContext()


# torch.autograd.graph's register_multi_grad_hook is defined in reference.autograd.multi_hooks
# (it needs the engine, which sits above this module) and set here by reference/__init__.py at
# package import.
