"""PaddlePaddle 3.x (CPU wheel): a framework whose dygraph mode already speaks much of torch's
vocabulary (``requires_grad=``, ``grad_fn``, ``autograd.Function``), tested as it ships.

Nothing of Paddle's is patched: the suites reach what Paddle spells differently on its own
objects (``ctx.saved_tensor()``, ``retain_grads()``, ``inplace_version``, in-place ops that
take only tensors) through the adapter methods below, and ``fw`` is Paddle's own module
with the few torch-shaped names it lacks added on a namespace of ours. Tensors are Paddle's.
"""
from __future__ import annotations

import types
from typing import Any

from adapters.base import Adapter, Run
from conformance.outcome_exceptions import Unsupported


class _Namespace(types.SimpleNamespace):
    """Attribute lookup falls through to a wrapped module (ours first, then Paddle's)."""

    def __init__(self, module: Any, **extra: Any) -> None:
        super().__init__(**extra)
        object.__setattr__(self, "_module", module)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_module"), name)


class PaddleAdapter(Adapter):
    name = "paddle"
    install_hint = "pip install paddlepaddle==3.3.1"
    devices = ("cpu",)
    module = "paddle"
    # -n 1 matters here: Paddle segfaults in several rules (each is then one CRASH).
    runs = (Run(label="paddle", version="3.3.1", install=("paddlepaddle==3.3.1",), python="3.11"),)
    unsupported = {
        "forward_ad": "paddle.autograd has no forward_ad (dual_level, make_dual)",
        "mark_dirty": "PyLayerContext has no mark_dirty: a PyLayer is in place by returning its changed "
                      "input (ctx.mark_not_inplace opts out), with no explicit dirty declaration",
        "needs_input_grad": "PyLayerContext has no needs_input_grad",
        "node_hooks": "grad nodes take no Python pre-hooks (no register_prehook); post-hooks exist only "
                      "as the private GradNodeBase._register_post_hook, whose hook must return a list",
        "node_metadata": "grad nodes have no metadata dict",
        "saved_tensor_attributes": "grad nodes expose no _saved_* attributes",
        "create_graph_backward": "Tensor.backward takes no create_graph (paddle.grad does)",
        "backward_inputs": "Tensor.backward takes no inputs=",
        "saved_tensor_register_hooks": "grad nodes expose no _raw_saved_* saved tensors to register hooks on",
        "disable_saved_tensors_hooks": "paddle.autograd has saved_tensors_hooks only, no disable_saved_tensors_hooks",
        "save_on_cpu": "paddle.autograd has saved_tensors_hooks only, no save_on_cpu",
        "allow_mutation_on_saved_tensors": "paddle.autograd has no allow_mutation_on_saved_tensors",
        "weak_tensor_utils": "paddle.utils has no weak module (WeakIdKeyDictionary, WeakIdRef, TensorWeakRef)",
        "graph_node_class": "paddle.autograd has no graph.Node class (grad_fn objects are GradNodeBase, an internal class)",
    }

    def _import(self):
        import paddle

        paddle.disable_static()
        # torch keeps saved_tensors_hooks in autograd.graph; Paddle has it in paddle.autograd
        from paddle.autograd import py_layer

        graph = _Namespace(types.SimpleNamespace(), saved_tensors_hooks=paddle.autograd.saved_tensors_hooks)
        # torch's autograd.function.once_differentiable is Paddle's py_layer.once_differentiable
        function = _Namespace(types.SimpleNamespace(), once_differentiable=py_layer.once_differentiable)
        autograd = _Namespace(paddle.autograd, function=function, graph=graph)
        return _Namespace(paddle, autograd=autograd, __name__="paddle",
                          **self.functions_from_methods(paddle, paddle.Tensor))

    def framework_version(self) -> str:
        import paddle

        return str(paddle.__version__)

    def to_numpy(self, tensor):
        return tensor.detach().cpu().numpy()

    # -- what Paddle spells differently on its own objects ---------------------------
    def grad_fn(self, tensor):
        """Paddle shows a leaf's gradient accumulator (``GradNodeAccumulation``, the node torch
        reaches only through a consumer's ``next_functions``) as the leaf's ``grad_fn``, from
        its creation on; torch spells a leaf's ``grad_fn`` None. The accumulator is read as
        None, every node an op made passes through."""
        node = super().grad_fn(tensor)
        if node is not None and node.name() == "GradNodeAccumulation":
            return None
        return node

    def register_post_accumulate_grad_hook(self, tensor, hook):
        """Paddle's spelling is the private ``Tensor._register_backward_hook(hook)``: a hook
        called with no arguments after the leaf's ``.grad`` was accumulated, refused on a
        non-leaf, returning no handle. The tensor reaches the hook through a weak reference (a
        strong one would be a cycle through a tensor, which Paddle's collector cannot see); a
        hook whose tensor is gone is not called with a stand-in."""
        import weakref

        register = self.feature("post_accumulate_grad_hooks", tensor, "_register_backward_hook")
        ref = weakref.ref(tensor)

        def call():
            leaf = ref()
            if leaf is None:
                raise Unsupported("the tensor's Python wrapper is gone: Paddle's hook gets no "
                                  "tensor", feature="post_accumulate_grad_hooks")
            return hook(leaf)

        return register(call)

    def saved_tensors(self, ctx):
        return tuple(ctx.saved_tensor())

    def retain_grad(self, tensor) -> None:
        tensor.retain_grads()

    def version(self, tensor) -> int:
        return int(tensor.inplace_version)

    def inplace(self, tensor, op: str, *args):
        import paddle

        args = tuple(paddle.full_like(tensor, a) if isinstance(a, (int, float, bool)) else a
                     for a in args)
        return getattr(tensor, op)(*args)

    def needs_input_grad(self, ctx):
        self.require("needs_input_grad")

    def subclass_instance(self, cls, tensor):
        """No ``as_subclass``, but ``class T(paddle.Tensor)`` constructs from a tensor, sharing
        its memory (Paddle's own spelling). Unlike torch's alias, Paddle's instance is a new
        leaf that does not require grad, off ``tensor``'s graph."""
        return cls(tensor)

    def register_node_hook(self, node, hook):
        self.require("node_hooks")

    def register_node_prehook(self, node, hook):
        self.require("node_hooks")

    def next_functions(self, node):
        # Paddle lists the producer nodes alone, by input slot: it does not say which output of
        # the producer feeds the slot (input_nr), and the adapter does not guess it.
        raise Unsupported("Paddle's GradNodeBase.next_functions lists the producer nodes by input "
                          "slot, without the producer's output index (input_nr)",
                          feature="next_functions_input_nr")

    def next_nodes(self, node):
        return tuple(node.next_functions)

    def backward(self, tensor, gradient=None, *, retain_graph=None, create_graph=False,
                 inputs=None):
        if create_graph:
            self.require("create_graph_backward")
        if inputs is not None:
            self.require("backward_inputs")
        return tensor.backward(gradient, retain_graph=bool(retain_graph))
