"""Nodes that stand in a graph without an op: an error raised only if a backward reaches it,
and a gradient that becomes undefined.

Both pass their inputs through unchanged in the forward (new tensors on the same data) and
change only what happens backward. ``delayed_error`` lets a graph be built now and refuse
differentiation later, only along the paths that need it (torch's DelayedError, the node
``once_differentiable`` builds); ``undefined_grad`` sends no gradient on (None), which a
custom Function receives as zeros, or as None after ``ctx.set_materialize_grads(False)``
(torch's UndefinedGrad).
"""
from __future__ import annotations

from reference.autograd.graph import Error, NodeBase
from reference.ops.recording import attach, edge, needs_grad
from reference.tensor import Tensor


class DelayedError(Error):
    """Raises its message if a backward runs it; a backward that does not reach it is unaffected."""

    __slots__ = ()

    def name(self) -> str:
        return "DelayedError"


class UndefinedGradBackward(NodeBase):
    """Sends no gradient (None) to each of its inputs, whatever it receives."""

    __slots__ = ()

    @property
    def num_outputs(self) -> int:
        return len(self._next_functions)

    def apply(self, ops, grads):
        return (None,) * len(self._next_functions)


def _pass_through(tensors, make_node):
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"expected Tensors, got {type(tensor).__name__}")
    outputs = tuple(Tensor._wrap(t._array) for t in tensors)
    if any(needs_grad(t) for t in tensors):
        node = make_node(tuple(edge(t) for t in tensors))
        for nr, (tensor, out) in enumerate(zip(tensors, outputs)):
            if tensor._requires_grad:
                attach(out, node, nr)
    return outputs[0] if len(outputs) == 1 else outputs


def delayed_error(message: str, *tensors):
    """The tensors again (one tensor for one input), their history going through a node that
    raises RuntimeError(message) if a backward runs it."""
    return _pass_through(tensors, lambda next_functions: DelayedError(message, next_functions))


def undefined_grad(*tensors):
    """The tensors again (one tensor for one input), their history going through a node that
    sends no gradient (None) on."""
    return _pass_through(tensors, UndefinedGradBackward)
