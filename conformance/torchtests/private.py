"""torch's private names that PyTorch's lifetime tests reach for, each mapped onto the reference.

PyTorch tests its engine partly through ``torch._C`` (its C++ bindings): a weak reference that
can say it expired, the node running now, whether the running backward keeps its graph, error
and undefined-gradient nodes. The reference has each of these behaviours under its own name
(the reference is not a copy of torch's bindings); this table is the translation, used only when
``import torch`` resolves to the reference (``aliasing``). A private name not listed here stays a
``Missing`` placeholder, reported as a missing API. Facts about torch's private surface, no code of it.
"""
from __future__ import annotations

import weakref

from reference.autograd import engine, forward_ad, graph, marker_nodes, versions


class WeakTensorRef:
    """``torch._C._WeakTensorRef(t)``: ``expired()`` once the tensor is gone. A reference tensor
    is its Python object (no C++ object behind it), so a plain weak reference says the same."""

    __slots__ = ("_ref",)

    def __init__(self, tensor):
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        return self._ref() is None


# torch's UndefinedGrad and DelayedError are node classes (issubclass(..., autograd.graph.Node)
# holds): their stand-ins join the reference's virtual Node base likewise
@graph.Node.register
class UndefinedGrad:
    """``torch._C._functions.UndefinedGrad()(*tensors)``: pass-through whose backward sends None."""

    def __call__(self, *tensors):
        return marker_nodes.undefined_grad(*tensors)


@graph.Node.register
class DelayedError:
    """``torch._C._functions.DelayedError(message, num_inputs)(*tensors)``: pass-through whose
    backward raises ``message``."""

    def __init__(self, message: str, num_inputs: int):
        self.message = message
        self.num_inputs = num_inputs

    def __call__(self, *tensors):
        if len(tensors) != self.num_inputs:
            raise TypeError(f"DelayedError expects {self.num_inputs} inputs, got {len(tensors)}")
        return marker_nodes.delayed_error(self.message, *tensors)


def make_saved_tensor(tensor, is_output: bool):
    """``torch._C._autograd._make_saved_tensor``: a tensor saved by hand, as an input."""
    if is_output:
        raise ValueError("the reference saves tensors by hand only as inputs (is_output=False): "
                         "an output is saved by the node that produced it")
    return graph.save_tensor(tensor)


def current_graph_task_keep_graph() -> bool:
    """``torch._C._autograd._get_current_graph_task_keep_graph``: retain_graph of the running backward."""
    task = engine.current_task()
    if task is None:
        raise RuntimeError("no backward is running on this thread: there is no graph task to ask")
    return task.keep_graph


#: torch's private name -> the reference's object standing for it
PRIVATE = {
    "torch._C._WeakTensorRef": WeakTensorRef,
    "torch._C._current_autograd_node": engine.current_node,
    "torch._C._set_fwd_grad_enabled": forward_ad.set_fwd_grad_mode,
    "torch._C._functions.AccumulateGrad": graph.AccumulateGrad,
    "torch._C._functions.DelayedError": DelayedError,
    "torch._C._functions.UndefinedGrad": UndefinedGrad,
    "torch._C._autograd.SavedTensor": graph.RawSavedTensor,
    "torch._C._autograd._make_saved_tensor": make_saved_tensor,
    "torch._C._autograd._get_current_graph_task_keep_graph": current_graph_task_keep_graph,
    "torch._C._autograd._saved_tensors_hooks_is_enabled": graph.saved_tensors_hooks_enabled,
    "torch._C._autograd._unsafe_set_version_counter": versions.set_versions,
}

_NAMESPACES = {name.rsplit(".", i)[0] for name in PRIVATE for i in range(1, name.count(".") + 1)}


def is_namespace(name: str) -> bool:
    """Whether ``name`` (e.g. ``torch._C._functions``) holds private names listed here."""
    return name in _NAMESPACES
