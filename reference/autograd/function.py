"""Custom autograd Functions: user-written forward/backward pairs.

The ctx passed to ``forward`` *is* the graph node (``y.grad_fn is ctx``), an instance of
``F._backward_cls`` named ``FBackward``; a fresh one is made for every ``apply``, so two
applications never share saved state. Tensors saved with ``save_for_backward`` follow
the same rule as built-in nodes: inputs are kept as themselves, the function's own
outputs as raw data (no output -> ctx -> output cycle). What users put in ctx
attributes is theirs: ``ctx.out = out`` is a real cycle, which ``gc.collect()`` frees.
"""
from __future__ import annotations

import functools
import inspect
import warnings

from reference import creation, grad_mode
from reference.autograd import forward_ad
from reference.autograd.graph import FREED_MESSAGE, Error, NodeBase, RawSavedTensor, SavedTensor, _sequence
from reference.ops import inplace, views
from reference.ops.recording import attach, edge, rebase_history
from reference.ops.reduction import sum_to_size
from reference.tensor import Tensor, instance_of

LEGACY_CALL = (
    "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
    "autograd function with static forward method. (Example: "
    "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
)
ONCE_DIFFERENTIABLE = "trying to differentiate twice a function that was marked with @once_differentiable"
CLEARED_ON_ACCESS = (
    "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set on the "
    "autograd.Function. Either access saved_tensors only once, or set clear_saved_tensors_on_access=False."
)


class FunctionCtx(NodeBase):
    """What ``forward``/``setup_context`` use to talk to ``backward``."""

    __slots__ = (
        "__dict__",
        "_to_save",
        "_dirty",
        "_non_differentiable",
        "_materialize_grads",
        "_input_info",
        "_output_info",
        "needs_input_grad",
    )
    #: a ctx is no autograd.graph.Node until it is a node: BackwardCFunction's (as in torch,
    #: where FunctionCtx and the Function classes are not Nodes)
    _is_graph_node = False

    def __init__(self):
        NodeBase.__init__(self, ())
        self._to_save = None
        self._dirty = ()
        self._non_differentiable = ()
        self._materialize_grads = True
        self._input_info = ()
        self._output_info = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for value in tensors:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(value)} is of type {type(value).__name__}"
                )
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self._materialize_grads = bool(value)

    @property
    # rules: legacy_function.saved-tensors-after-free-message, gc_cycles.stashed-ctx-after-backward-raises
    def saved_tensors(self):
        saved = self._saved
        if getattr(getattr(self, "_forward_cls", None), "clear_saved_tensors_on_access", False):
            return self._saved_tensors_once()
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        # rule: gc_cycles.stashed-ctx-no-crash -- a saved output is re-made from the array the ctx keeps,
        # so a ctx that outlived its output still returns its values
        return tuple(None if s is None else s.unpack(self, True) for s in saved)

    def _saved_tensors_once(self):
        """``clear_saved_tensors_on_access = True`` on the Function: the saved tensors are handed
        over once, and the node lets go of them (backward's locals are then their only owners)."""
        if self.__dict__.get("_saved_accessed"):
            raise RuntimeError(CLEARED_ON_ACCESS)
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        tensors = tuple(None if s is None else s.unpack(self, True) for s in saved)
        self._saved_accessed = True
        self._saved = None
        return tensors

    @property
    def _raw_saved_tensors(self):
        saved = self._saved
        if saved is None:
            raise RuntimeError(FREED_MESSAGE)
        # a slot that saved None has a handle too: what it holds shows only on unpack (as in torch)
        return tuple(RawSavedTensor._handle(self, i) for i in range(len(saved)))

    @property
    def saved_variables(self):
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved_tensors


class FunctionMeta(type):
    """Gives every Function subclass its node class, ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        # rules: legacy_function.grad-fn-name, identity.custom-function-node-name
        backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"_forward_cls": cls, "__slots__": ()})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class BackwardCFunction(FunctionCtx):
    """The node of one application of a custom Function (and its ctx)."""

    __slots__ = ()
    _forward_cls = None
    _is_graph_node = True  # rule: identity.graph-nodes-are-node-instances
    _none_passes = False  # backward runs, with materialised zeros (legacy_function.materialize-grads)

    @property
    def num_outputs(self) -> int:
        return len(self._output_info)

    def apply(self, ops, grads):
        fn_cls = self._forward_cls
        grads = list(grads)
        for index, grad in enumerate(grads):
            if grad is None and self._materialize_grads:
                info = self._output_info[index]
                if info is not None:
                    # rule: legacy_function.materialize-grads -- an engine value like the others
                    grads[index] = ops.from_tensor(_zeros(info))
        tensors = [None if g is None else ops.as_tensor(g) for g in grads]
        backward_fn = _backward_of(fn_cls)
        once = getattr(backward_fn, "_once_differentiable", False)
        if once:
            with grad_mode.no_grad():
                results = backward_fn(self, *tensors)
            if ops.differentiable:
                # part of the user's backward in torch (the decorator's wrapper), so before the
                # results are checked against the inputs
                results = _guard_once_differentiable(results, tensors)
        else:
            results = backward_fn(self, *tensors)
        # rules: legacy_function.wrong-number-of-grads-raises, legacy_function.none-grads-leave-grad-unset
        results = self._validate(results)
        return [None if r is None else ops.from_tensor(r) for r in results]

    def _validate(self, results):
        name = self.name()
        if not isinstance(results, tuple):
            results = (results,)
        expected = len(self._input_info)
        if len(results) != expected:
            if len(results) > expected and all(r is None for r in results[expected:]):
                results = results[:expected]
            else:
                raise RuntimeError(
                    f"function {name} returned an incorrect number of gradients (expected {expected}, got {len(results)})"
                )
        checked = []
        for index, (result, info) in enumerate(zip(results, self._input_info)):
            if result is None:
                checked.append(None)
                continue
            if info is None:
                # rule: legacy_function.backward-result-for-input-without-gradient
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position {index + 1}, "
                    "but the corresponding forward input was not a Variable"
                )
            if not isinstance(result, Tensor):
                # rule: legacy_function.backward-result-must-be-tensor
                raise RuntimeError(f"expected Variable or None (got {type(result).__name__})")
            shape, dtype = info[0], info[1]
            # rule: legacy_function.backward-result-shape-checked -- summed down where it broadcasts
            if tuple(result.shape) != shape:
                try:
                    result = sum_to_size(result, shape)
                except Exception:
                    raise RuntimeError(
                        f"Function {name} returned an invalid gradient at index {index} - got {list(result.shape)} "
                        f"but expected shape compatible with {list(shape)}"
                    ) from None
            if result.dtype != dtype:
                # rule: legacy_function.backward-result-cast-to-input-dtype
                result = result.to(dtype)
            if self._next_functions[index][0] is None:
                # rule: legacy_function.backward-result-for-input-without-gradient -- dropped
                result = None
            checked.append(result)
        return checked


def _zeros(info):
    shape, dtype, device = info
    return creation.zeros(*shape, dtype=dtype, device=device)


def _backward_of(fn_cls):
    has_backward = _overrides(fn_cls, "backward")
    has_vjp = _overrides(fn_cls, "vjp")
    if has_backward and has_vjp:
        raise RuntimeError(
            "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should only implement one of them."
        )
    # rules: legacy_function.missing-backward-raises-at-backward, legacy_function.apply-with-plain-methods
    return fn_cls.vjp if has_vjp else fn_cls.backward


def _overrides(fn_cls, name):
    for klass in fn_cls.__mro__:
        if klass is Function:
            return False
        if name in klass.__dict__:
            return True
    return False


def _guard_once_differentiable(results, grad_outputs):
    """Results that would be differentiated again go through an Error node: one input and
    one output per result, None included (torch's DelayedError gets them all, so a None
    result, e.g. for a non-tensor input, is an empty edge of the node)."""
    if not any(g is not None and g.requires_grad for g in grad_outputs):
        return results
    if not isinstance(results, tuple):
        results = (results,)
    # rule: legacy_function.once-differentiable-error-node-keeps-no-history -- the error node's
    # inputs are fresh leaves aliasing the results (as torch's DelayedError), never the incoming
    # gradients' history, which the results would otherwise keep alive
    stand_ins = []
    for result in results:
        if isinstance(result, Tensor):
            leaf = result.detach()
            leaf._requires_grad = True
            stand_ins.append(edge(leaf))
        else:
            stand_ins.append((None, 0))
    guarded = []
    # rule: legacy_function.once-differentiable-double-backward-raises
    error = Error(ONCE_DIFFERENTIABLE, tuple(stand_ins))
    for index, result in enumerate(results):
        if not isinstance(result, Tensor):
            guarded.append(result)  # None, or a wrong value that validation refuses
            continue
        out = result.detach()
        attach(out, error, index)
        guarded.append(out)
    return tuple(guarded)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class of custom autograd functions: define static forward/backward, call apply."""

    __slots__ = ()

    def __init__(self, *args, **kwargs):
        # rule: legacy_function.instantiation-warns
        warnings.warn(
            f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so you "
            "should invoke them on the class itself. Instantiating an autograd function will raise an error "
            "in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__()

    def __call__(self, *args, **kwargs):
        # rule: legacy_function.instance-call-raises
        raise RuntimeError(LEGACY_CALL)

    def name(self) -> str:
        return type(self).__name__

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        return _apply(cls, args, kwargs)


def _bind_arguments(fn_cls, args, kwargs, uses_setup_context):
    """Keyword arguments become positional inputs, in forward's parameter order; with
    setup_context, forward's defaults fill in the arguments not given, as in torch, so that
    setup_context sees every input."""
    # rule: legacy_function.setup-context-gets-defaults
    if not kwargs and not (uses_setup_context and _has_defaults(fn_cls)):
        return args
    signature = inspect.signature(fn_cls.forward)
    params = list(signature.parameters)
    if not uses_setup_context:
        params = params[1:]
    bound = inspect.signature(fn_cls.forward).bind_partial(*((None,) if not uses_setup_context else ()), *args, **kwargs)
    bound.apply_defaults()
    values = [bound.arguments[p] for p in params if p in bound.arguments]
    return tuple(values)


def _has_defaults(fn_cls) -> bool:
    """Whether forward has parameters with defaults (cached on the class)."""
    cached = fn_cls.__dict__.get("_forward_has_defaults")
    if cached is None or cached[0] is not fn_cls.forward:
        parameters = inspect.signature(fn_cls.forward).parameters.values()
        cached = (fn_cls.forward, any(p.default is not inspect.Parameter.empty for p in parameters))
        type.__setattr__(fn_cls, "_forward_has_defaults", cached)
    return cached[1]


def _apply(fn_cls, args, kwargs):
    uses_setup_context = _overrides(fn_cls, "setup_context")
    # rule: legacy_function.missing-forward-raises
    if not _overrides(fn_cls, "forward"):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")
    # rule: legacy_function.kwargs-are-inputs
    inputs = _bind_arguments(fn_cls, args, kwargs, uses_setup_context)
    # rules: identity.custom-function-grad-fn-is-ctx, legacy_function.fresh-ctx-per-apply
    ctx = fn_cls._backward_cls()
    is_tensor = [isinstance(value, Tensor) for value in inputs]
    # rule: legacy_function.needs-input-grad
    ctx.needs_input_grad = tuple(t and value._requires_grad for t, value in zip(is_tensor, inputs))
    record = grad_mode._state.enabled and any(ctx.needs_input_grad)
    forward = forward_ad.active(*inputs)
    # rule: forward_levels.custom-function-needs-jvp
    if forward and not _overrides(fn_cls, "jvp"):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )

    with grad_mode.no_grad(), forward_ad.suppress_propagation():
        if uses_setup_context:
            output = fn_cls.forward(*inputs)
        else:
            output = fn_cls.forward(ctx, *inputs)
    if uses_setup_context:
        # rule: legacy_function.setup-context-style
        fn_cls.setup_context(ctx, inputs, output)

    # rules: legacy_function.output-container-preserved, legacy_function.non-tensor-outputs-pass-through
    container = type(output) if isinstance(output, (tuple, list)) else None
    outputs = list(output) if container is not None else [output]
    input_ids = {id(value) for value, t in zip(inputs, is_tensor) if t}
    dirty_ids = {id(t) for t in ctx._dirty}
    # rules: legacy_function.mark-dirty-returns-same-object, legacy_function.mark-dirty-leaf-raises, legacy_function.mark-dirty-not-returned-raises, legacy_function.mark-dirty-non-input-reported
    _check_dirty(ctx, inputs, outputs, input_ids)
    non_diff_ids = {id(t) for t in ctx._non_differentiable}

    ctx._input_info = tuple(
        (tuple(value.shape), value.dtype, value.device.type) if t else None for value, t in zip(inputs, is_tensor)
    )
    # ctx._materialize_non_diff_grads = False (torch's attribute): a non-differentiable output's
    # missing gradient reaches backward as None even while set_materialize_grads is on
    skip = non_diff_ids if getattr(ctx, "_materialize_non_diff_grads", True) is False else ()
    ctx._output_info = tuple(
        (tuple(out.shape), out.dtype, out.device.type) if isinstance(out, Tensor) and id(out) not in skip else None
        for out in outputs
    )
    if record:
        ctx._next_functions = tuple(edge(value) if t else (None, 0) for value, t in zip(inputs, is_tensor))
        ctx._seq = next(_sequence)  # after any accumulator its edges created: children run first

    results = []
    for index, out in enumerate(outputs):
        if not isinstance(out, Tensor):
            results.append(out)
            continue
        if id(out) in dirty_ids:
            inplace.check_inplace(out)
            result = out
        elif id(out) in input_ids:
            differentiable = record and id(out) not in non_diff_ids and out.dtype.is_floating_point
            result = _alias_output(out, differentiable or not out._requires_grad)
        else:
            result = out
        if record and id(out) not in non_diff_ids and out.dtype.is_floating_point:
            if id(out) in dirty_ids and result._base is not None and len(outputs) > 1:
                # rule: views.mark-dirty-view-single-output
                raise RuntimeError(DIRTY_VIEW_MULTIPLE_OUTPUTS)
            if id(out) in dirty_ids and result._base is not None and getattr(result, "_view_fn", None) is not None:
                # rule: views.mark-dirty-on-view-rewrites-base
                position = next(i for i, value in enumerate(inputs) if value is out)
                inplace.rebase_view_history(result, ctx, position, index)
            elif id(out) in dirty_ids:
                rebase_history(result, ctx)
                result._output_nr = index
            else:
                result._node = ctx
                result._output_nr = index
                result._requires_grad = True
        elif id(out) in non_diff_ids and result._node is None:
            result._requires_grad = False
        results.append(result)
    _mark_views(fn_cls, outputs, results, input_ids, dirty_ids, non_diff_ids, record)

    if record or forward:
        # rules: identity.ctx-saved-tensors-same-objects, legacy_function.save-none-roundtrip, gc_cycles.save-for-backward-output-cycle-free
        _save(ctx, results, outputs, input_ids)
    else:
        ctx._to_save, ctx._saved = None, ()  # outside any graph, nothing is kept for backward
    if forward:
        _forward_tangents(fn_cls, ctx, inputs, outputs, results, dirty_ids, non_diff_ids)
    ctx._dirty = ctx._non_differentiable = ()  # forward's bookkeeping must not own the outputs
    if container is None:
        return results[0]
    return container(results)


def _mark_views(fn_cls, outputs, results, input_ids, dirty_ids, non_diff_ids, record):
    """The outputs that are views (except inputs modified in place) may not be modified in
    place in grad mode: torch 2.13 gives them the creation meta IN_CUSTOM_FUNCTION whether the
    Function recorded or not, MULTI_OUTPUT_NODE when it has several differentiable outputs."""
    differentiable = sum(
        1 for out in outputs
        if isinstance(out, Tensor) and record and id(out) not in non_diff_ids and out.dtype.is_floating_point
    )
    for index, (out, result) in enumerate(zip(outputs, results)):
        if not isinstance(result, Tensor) or result._base is None:
            continue
        if id(out) in dirty_ids and id(out) in input_ids:
            continue
        views.created_in_custom_function(result, index, fn_cls.__name__, differentiable > 1)


# rule: forward_levels.custom-function-static-jvp
def _forward_tangents(fn_cls, ctx, inputs, outputs, results, dirty_ids, non_diff_ids):
    """Forward AD through a custom Function: its static ``jvp`` gives the output tangents."""
    tangents = forward_ad.tangents_of(*inputs)
    # the version of each input tangent before jvp: a dirty input's tangent must come back
    # modified in place (torch compares versions, then identity)
    versions = {id(value): t._version for value, t in zip(inputs, tangents) if t is not None}
    with forward_ad.suppress_propagation():
        out_tangents = fn_cls.jvp(ctx, *tangents)
    if not isinstance(out_tangents, tuple):  # a list is one (wrong) value, as in torch
        out_tangents = (out_tangents,)
    _check_jvp_results(outputs, results, out_tangents, non_diff_ids)
    input_tangent = {id(value): t for value, t in zip(inputs, tangents)}
    for out, result, tangent in zip(outputs, results, out_tangents):
        if tangent is None or not isinstance(result, Tensor):
            continue
        if id(out) in dirty_ids and id(out) in versions:
            _check_dirty_tangent(tangent, input_tangent[id(out)], versions[id(out)])
            continue  # the input's own tangent, already in place
        forward_ad.set_tangent(result, tangent)


def _check_dirty_tangent(tangent, input_tangent, version_before):
    """A Function that modified an input in place must have its jvp modify that input's
    tangent in place (its version moved) and return that very tensor."""
    if tangent._version == version_before:
        raise RuntimeError(
            "An inplace custom Function is not modifying the forward mode gradients inplace. If the forward is "
            "modifying an input inplace, then the jvp function must modify the corresponding gradient inplace."
        )
    if tangent is not input_tangent:
        raise RuntimeError(
            "An inplace custom Function is not returning the forward mode gradients as-is. If the forward is "
            "modifying an input inplace, then the jvp function must modify the gradient inplace and return it as-is."
        )


# rules: forward_levels.custom-function-jvp-validated, forward_levels.dual-tangent-refused
def _check_jvp_results(outputs, results, out_tangents, non_diff_ids):
    """Refuse what jvp returned before any output gets a tangent, with torch's messages."""
    if len(out_tangents) != len(outputs):
        raise RuntimeError(
            f"Function's jvp returned an invalid number of forward gradients (expected {len(outputs)} "
            f"but got {len(out_tangents)})"
        )
    for index, (out, result, tangent) in enumerate(zip(outputs, results, out_tangents)):
        if tangent is None:
            continue
        if not isinstance(tangent, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(tangent).__name__}) for grad output {index}.")
        if not isinstance(result, Tensor):
            continue  # a number or other object returned by forward has no tangent to set
        if id(out) in non_diff_ids or not result.dtype.is_floating_point:
            raise RuntimeError(
                f"Function's jvp returned a gradient at position {index}, but the corresponding forward output "
                "is not a differentiable Tensor. You should return None at that position instead."
            )
        if not tangent.dtype.is_floating_point:
            raise RuntimeError("Expected both tensor and its forward grad to be floating point or complex")
        if tangent.shape != result.shape:
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the original Tensor, "
                f"this is not supported. Tensor is of size {list(result.shape)} while the given forward gradient "
                f"is of size {list(tangent.shape)}."
            )
        if forward_ad.get_tangent(tangent) is not None:
            raise RuntimeError(forward_ad.DUAL_TANGENT.format(forward_ad._registry.current))


def _alias_output(tensor, as_view):
    """An input returned as-is becomes a new object sharing its data and version counter, of
    the input's class (a Tensor subclass stays that subclass). As in torch 2.13 it is a view of
    the input (``view_as(input)`` made without grad mode, so no node of its own), except for an
    input that requires grad returned outside the graph, which comes back detached."""
    # rule: legacy_function.input-returned-as-is-keeps-class
    if as_view:
        with grad_mode.no_grad(), forward_ad.suppress_propagation():
            return views.alias(tensor, type(tensor))
    out = instance_of(type(tensor), tensor._array)
    out._version_counter = tensor._version_counter
    return out


DIRTY_VIEW_MULTIPLE_OUTPUTS = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot return "
    "more than one Tensor. This is not supported by the current autograd engine. You should either make sure "
    "the input is not a view (using .clone() for example) or make your Function only return one Tensor "
    "(potentially splitting it into two Functions: one doing the inplace that returns a single Tensor and a "
    "second one that does the other operations). You can ask on the forum https://discuss.pytorch.org/ if "
    "you need help to do this change."
)


def _check_dirty(ctx, inputs, outputs, input_ids):
    output_ids = {id(o) for o in outputs if isinstance(o, Tensor)}
    for tensor in ctx._dirty:
        if id(tensor) not in input_ids:
            message = (
                "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                "mutated should be passed to ctx.mark_dirty()."
            )
            if tensor._base is not None:
                raise RuntimeError(message)
            warnings.warn(message, UserWarning, stacklevel=4)  # harmless for a fresh tensor, as in torch
            continue
        if tensor._node is None and tensor._requires_grad and tensor._base is None and grad_mode._state.enabled:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        if id(tensor) not in output_ids:
            raise RuntimeError(
                "Some elements marked as dirty during the forward method were not returned as output. The inputs "
                "that are modified inplace must all be outputs of the Function."
            )


def _save(ctx, results, outputs, input_ids):
    to_save = ctx._to_save
    ctx._to_save = None
    if not to_save:
        ctx._saved = ()
        return
    output_positions = {id(o): i for i, o in enumerate(outputs) if isinstance(o, Tensor)}
    saved = []
    for tensor in to_save:
        if tensor is None:
            saved.append(None)
        elif id(tensor) in output_positions and results[output_positions[id(tensor)]] is tensor:
            # rule: gc_cycles.stashed-ctx-released-with-last-reference -- its own output: saved without
            # owning it, so a stashed ctx and the output free each other's state by refcount
            saved.append(SavedTensor(tensor, True))
        else:
            saved.append(SavedTensor(tensor, False))  # hooks apply here too: saved_tensors.custom-function-hooked
    ctx._saved = tuple(saved)


def once_differentiable(fn):
    """Mark a backward as not differentiable: it runs without grad mode, and its results
    raise if differentiated again."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        # rule: legacy_function.once-differentiable-no-grad
        with grad_mode.no_grad():
            return fn(ctx, *args)

    wrapper._once_differentiable = True
    return wrapper


class InplaceFunction(Function):
    """torch's base for Functions that may work in place: a Function whose instances carry ``inplace``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace
