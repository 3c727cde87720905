"""``reference.autograd``: PyTorch's public autograd API on the reference engine."""
from __future__ import annotations

import warnings

from reference.autograd import forward_ad, graph
from reference.autograd.function import Function, FunctionCtx, once_differentiable
from reference.grad_mode import (
    detect_anomaly, enable_grad, inference_mode, is_grad_enabled, is_multithreading_enabled, no_grad, set_detect_anomaly,
    set_grad_enabled, set_multithreading_enabled,
)
from reference import creation, overrides as _overrides
from reference.array_backend import namespace_of
from reference.autograd import engine
from reference.autograd.accumulate import store_grad
from reference.autograd.versions import _unsafe_preserve_version_counter  # noqa: F401 - torch's name
from reference.ops.backward_ops import RAW_OPS, TENSOR_OPS
from reference.ops.recording import edge
from reference.tensor import Tensor

__all__ = [
    "Variable", "backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad", "inference_mode",
    "detect_anomaly", "set_detect_anomaly",
    "set_grad_enabled", "is_grad_enabled", "forward_ad", "graph", "SavedTensor", "set_multithreading_enabled",
    "is_multithreading_enabled",
]

SavedTensor = graph.RawSavedTensor  # torch.autograd.SavedTensor: the class of grad_fn._raw_saved_*

class _ImperativeEngine:
    """``Variable._execution_engine``: the engine's one user-facing entry, queue_callback."""

    @staticmethod
    def queue_callback(callback) -> None:
        engine.queue_callback(callback)


class _VariableMeta(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch's legacy name for a tensor; kept for ``Variable._execution_engine`` and the legacy
    constructor ``Variable(tensor, requires_grad=False)``: a new leaf sharing the tensor's data."""

    _execution_engine = _ImperativeEngine()

    def __new__(cls, data, requires_grad=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when creating "
    "the graph to avoid this. If you have to use this function, make sure to reset the .grad fields "
    "of your parameters to None after use to break the cycle and avoid the leak."
)


def _as_tuple(value, what):
    if value is None:
        return None
    if isinstance(value, (Tensor, graph.GradientEdge)):  # (an edge is a tuple: test it first)
        return (value,)
    if isinstance(value, (tuple, list)):
        return tuple(value)
    raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got {type(value).__name__}")


def _edge(value):
    """(node, output_nr) of a tensor, or of a GradientEdge standing for one."""
    if isinstance(value, graph.GradientEdge):
        return (value.node, value.output_nr)
    return edge(value)


def _root_edges(outputs):
    edges = []
    for index, out in enumerate(outputs):
        node, nr = _edge(out)
        if node is None:
            # rule: engine.backward-requires-grad-error
            raise RuntimeError(f"element {index} of tensors does not require grad and does not have a grad_fn")
        edges.append((node, nr))
    return edges


def _root_grads(outputs, grad_outputs, create_graph):
    """The gradient to start from at each root, validated; arrays unless create_graph."""

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one gradient per output: got {len(grad_outputs)} gradients for {len(outputs)} outputs")
    grads = []
    for index, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(out, graph.GradientEdge):
            # the shape, dtype and device of the output it stands for (needed to make or check its gradient)
            out = graph.output_metadata(out, required=grad is None)
            if out is None and isinstance(grad, Tensor):
                grads.append(grad if create_graph else grad._array)
                continue
        if grad is None:
            if _numel(out.shape) != 1:
                # rule: engine.gradient-argument-validation
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = creation.ones(out.shape, dtype=out.dtype, device=out.device)
        elif not isinstance(grad, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(grad).__name__}")
        elif grad.shape != out.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{index}] has a shape of {grad.shape!r} and output[{index}] "
                f"has a shape of {out.shape!r}."
            )
        elif grad.dtype is not out.dtype:
            if grad.dtype.is_floating_point != out.dtype.is_floating_point:
                raise RuntimeError(
                    f"Mismatch in dtype: grad_output[{index}] has a dtype of {grad.dtype!r} and output[{index}] "
                    f"has a dtype of {out.dtype!r}."
                )
            grad = grad.to(out.dtype)  # another float dtype is accepted and converted, as in torch
        grads.append(grad if create_graph else grad._array)
    return grads


def _numel(shape) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


# rule: engine.autograd-backward-equivalent
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""

    outputs = _as_tuple(tensors, "tensors")
    grad_outputs = _as_tuple(grad_tensors, "grad_tensors")
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        # rule: gc_cycles.create-graph-backward-warns-cycle
        warnings.warn(CREATE_GRAPH_WARNING, UserWarning, stacklevel=3)
    root_edges = _root_edges(outputs)
    root_grads = _root_grads(outputs, grad_outputs, create_graph)
    captures = None
    leaves = True
    if inputs is not None:
        inputs = _as_tuple(inputs, "inputs")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        ops = TENSOR_OPS if create_graph else RAW_OPS
        captures, leaves = {}, set()
        for tensor in inputs:
            node, nr = _edge(tensor)
            if node is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            leaves.add(node)  # runs (hooks included), but what lies beyond runs only if needed
            if isinstance(tensor, graph.GradientEdge):
                if not isinstance(node, graph.AccumulateGrad):  # no tensor to store into: the edge only stops there
                    captures.setdefault((node, nr), _ignore)
            elif not tensor.is_leaf:
                captures[(node, nr)] = _storing_capture(tensor, ops, store_grad, captures.get((node, nr)))
    engine.execute(root_edges, root_grads, retain_graph, create_graph, captures, leaves)


def _ignore(grad):
    pass


def _storing_capture(tensor, ops, store_grad, previous):
    def capture(grad):
        if previous is not None:
            previous(grad)
        if grad is not None:
            store_grad(tensor, grad, ops)

    return capture


# rules: engine.grad-returns-without-accumulating, engine.grad-unused-inputs, hooks.grad-runs-input-tensor-hooks-only
def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned, with ``.grad`` untouched."""

    outputs = _as_tuple(outputs, "outputs")
    inputs = _as_tuple(inputs, "inputs")
    if not _overrides._state.disabled and _overrides.has_subclass(outputs + inputs):
        # rule: identity.subclass-op-results-are-subclass -- torch.autograd.grad is overridable too
        return _overrides.dispatch(grad, (outputs, inputs), dict(
            grad_outputs=grad_outputs, retain_graph=retain_graph, create_graph=create_graph, only_inputs=only_inputs,
            allow_unused=allow_unused, is_grads_batched=is_grads_batched, materialize_grads=materialize_grads), "grad")
    grad_outputs = _as_tuple(grad_outputs, "grad_outputs")
    if not inputs:  # rule: engine.grad-empty-inputs-refused
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported by the reference engine")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    # rule: engine.grad-frees-saved-tensors -- like backward, grad frees the graph unless retained
    if retain_graph is None:
        retain_graph = create_graph
    root_edges = _root_edges(outputs)
    root_grads = _root_grads(outputs, grad_outputs, create_graph)
    results = [None] * len(inputs)
    captures = {}
    for index, tensor in enumerate(inputs):
        node, nr = _edge(tensor)
        if node is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        captures[(node, nr)] = _result_capture(results, index, captures.get((node, nr)))
    engine.execute(root_edges, root_grads, retain_graph, create_graph, captures, set())
    out = []
    for index, (tensor, value) in enumerate(zip(inputs, results)):
        if value is None:
            if not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {index} appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads and isinstance(tensor, graph.GradientEdge):
                meta = graph.output_metadata(tensor, required=True)
                out.append(creation.zeros(meta.shape, dtype=meta.dtype, device=meta.device))
            else:
                out.append(creation.zeros_like(tensor) if materialize_grads else None)
        else:
            out.append(value if create_graph else _wrap_result(value))
    return tuple(out)


def _result_capture(results, index, previous):
    def capture(grad):
        if previous is not None:
            previous(grad)
        if grad is not None:
            results[index] = grad if results[index] is None else results[index] + grad

    return capture


def _wrap_result(array):
    """A returned gradient the caller owns: never a read-only broadcast view of another array."""

    flags = getattr(array, "flags", None)
    if flags is not None and not flags.writeable:
        array = namespace_of(array).array(array, copy=True)
    return Tensor._wrap(array)
