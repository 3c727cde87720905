"""tinygrad 0.14.0: a define-by-run framework that is not torch-shaped, tested as it ships.

Why the PYTHON device: tinygrad's CPU device compiles every kernel with clang, which a fresh
machine (or CI image) may lack; its PYTHON device interprets the same kernels in Python and
needs nothing. The autograd graph, ``.grad`` and ``Tensor.gradient`` are the same code on every
device (the device only runs the kernels), so every rule judges the same behaviour; the cost
is speed (the suites take a few minutes). ``DEV`` set by the user wins (``DEV=CPU`` with
clang installed runs the same suites compiled).

What tinygrad lacks as a whole is declared in ``unsupported`` under the feature registry's
names (``conformance/features.toml``): the tests that need a graph node, a hook, a
custom Function or a grad mode end UNSUPPORTED before they run. ``fw`` is a namespace of ours
(:meth:`Adapter.namespace` over ``tinygrad``) whose creation functions translate torch's
keywords (``requires_grad=``, ``device="cpu"``) and whose missing names are UNSUPPORTED;
tensors are tinygrad's own.
"""
from __future__ import annotations

import os
from typing import Any

from adapters.base import Adapter, Run, Unsupported

#: torch's in-place methods with their out-of-place tinygrad spelling, applied with ``assign``.
_INPLACE = {"add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div", "pow_": "pow"}


def _implicit_gradient(tensor):
    """torch's implicit gradient of a backward without one: ones for an output of one element
    whatever its shape (``torch.ones_like``), where tinygrad's ``Tensor.backward`` takes the
    implicit 1.0 only for a 0-dim output (an assertion otherwise). Torch's spelling of a
    one-element output, translated; any other output goes to tinygrad as it is (None), so
    tinygrad's own refusal of a non-scalar output is what a test sees."""
    if tensor.shape != () and tensor.numel() == 1:
        return tensor.ones_like()
    return None


class TinygradAdapter(Adapter):
    name = "tinygrad"
    install_hint = "pip install tinygrad==0.14.0"
    devices = ("cpu",)
    module = "tinygrad"
    # required: a pure-Python wheel on its PYTHON device, so CI can always install and run it
    runs = (Run(label="tinygrad", version="0.14.0", install=("tinygrad==0.14.0",), python="3.11"),)
    unsupported = {
        "graph_nodes": "tensors have no grad_fn: the graph is tinygrad's UOp DAG, with no node objects",
        "node_hooks": "no graph node objects to hook",
        "node_metadata": "no graph node objects to carry metadata",
        "graph_node_class": "no graph node objects (no autograd.graph.Node)",
        "saved_tensor_attributes": "no graph node objects exposing _saved_* tensors",
        "saved_tensor_register_hooks": "no graph node objects exposing _raw_saved_* tensors",
        "accumulate_grad_variable": "no AccumulateGrad nodes",
        "tensor_hooks": "Tensor has no register_hook",
        "post_accumulate_grad_hooks": "Tensor has no register_post_accumulate_grad_hook",
        "retain_grad": "Tensor has no retain_grad (backward fills .grad of every float tensor in the graph)",
        "requires_grad_method": "Tensor has no requires_grad_ (requires_grad is a plain attribute)",
        "is_leaf": "Tensor has no is_leaf",
        "custom_function": "no torch-shaped autograd.Function, and not translated yet: tinygrad's "
                           "own is tinygrad.function(fxn, grad_fxn=g), g(gradient UOp, CALL UOp) "
                           "returning one gradient UOp per input, with no ctx (issue 33 audit, "
                           "docs/hand-judged/tinygrad.md)",
        "mark_dirty": "no autograd.Function, so no ctx.mark_dirty",
        "needs_input_grad": "no autograd.Function, so no ctx.needs_input_grad",
        "once_differentiable": "no autograd.Function, so no once_differentiable",
        "grad_modes": "no no_grad / enable_grad / set_grad_enabled",
        "forward_ad": "no forward-mode AD (dual_level, make_dual)",
        "saved_tensors_hooks": "no saved-tensor hooks: backward recomputes from the UOp graph",
        "disable_saved_tensors_hooks": "no saved-tensor hooks",
        "save_on_cpu": "no saved-tensor hooks",
        "allow_mutation_on_saved_tensors": "no saved-tensor hooks",
        "version_counter": "Tensor has no version counter (_version)",
        "create_graph_backward": "Tensor.backward takes no create_graph",
        "backward_inputs": "Tensor.backward takes no inputs=",
        "weak_tensor_utils": "no utils.weak (WeakIdKeyDictionary, WeakIdRef, TensorWeakRef)",
        "tensor_subclass": "Tensor has no as_subclass, and plain subclassing makes no usable instance "
                           "(0.14.0, by hand: S(t) raises RuntimeError 'can't create Tensor from "
                           "Tensor'; S(t.uop) has no requires_grad attribute)",
        "tensor_data": "Tensor has no .data to read or assign (a detached alias)",
        "inplace_methods": "no in-place methods (add_, mul_, copy_, detach_, ...): only Tensor.assign",
        "unbind": "Tensor has no unbind",
        "queue_callback": "no execution engine object (queue_callback)",
    }
    unsupported_although_present = {
        "tensor_data": {"data": "Tensor.data is a method: t.data() copies the values to the host "
                                "as a memoryview; no attribute is a detached tensor sharing the "
                                "values, and assigning t.data stores a plain attribute that "
                                "hides the method and leaves the values unchanged"},
    }

    def preamble(self) -> str:
        return ("import os\n"
                "os.environ.setdefault('DEV', 'PYTHON')  # tinygrad's interpreted device: needs no compiler\n"
                "import tinygrad\n"
                "tinygrad.helpers.DEV.value = os.environ['DEV']\n")

    def _import(self):
        chosen = os.environ.get("DEV")
        os.environ.setdefault("DEV", "PYTHON")
        import tinygrad
        from tinygrad import Tensor, dtypes
        from tinygrad.helpers import DEV

        if not chosen:   # tinygrad may have been imported before DEV was set
            DEV.value = "PYTHON"

        def make(factory):
            def create(*args, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                       **kwargs):
                if dtype is not None:
                    kwargs["dtype"] = dtype
                t = factory(*args, **kwargs)
                t.requires_grad = bool(requires_grad)
                return t
            return create

        def tensor(data, requires_grad=False, device=None, dtype=None):
            if isinstance(data, Tensor):
                raise Unsupported("tinygrad: fw.tensor(<a tensor>) has no tinygrad spelling",
                                  feature="tensor_from_tensor")
            t = Tensor(data, dtype=dtype) if dtype is not None else Tensor(data)
            if dtype is None and t.dtype == dtypes.default_float:
                t = Tensor(data, dtype=dtypes.float32)
            t.requires_grad = bool(requires_grad)
            return t

        def t(tensor):
            # torch.t: a 2-D tensor's transpose, a 0-D or 1-D tensor as it is; tinygrad spells
            # the transpose Tensor.transpose (no Tensor.t)
            if tensor.ndim > 2:
                raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {tensor.ndim}D")
            return tensor.transpose(0, 1) if tensor.ndim == 2 else tensor.reshape(tensor.shape)

        def full(size, fill_value, **kwargs):
            return make(Tensor.full)(tuple(size) if not isinstance(size, int) else (size,),
                                     fill_value, **kwargs)

        def like(method):
            def create(t, requires_grad=False, device=None, dtype=None):
                out = getattr(t, method)(**({"dtype": dtype} if dtype is not None else {}))
                out.requires_grad = bool(requires_grad)
                return out
            return create

        def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
                 allow_unused=None, materialize_grads=False):
            single_out = not isinstance(outputs, (list, tuple))
            outs = [outputs] if single_out else list(outputs)
            ins = [inputs] if not isinstance(inputs, (list, tuple)) else list(inputs)
            if len(outs) != 1:
                raise Unsupported("tinygrad: Tensor.gradient differentiates one output at a time",
                                  feature="grad_of_several_outputs")
            if grad_outputs is not None and not isinstance(grad_outputs, Tensor):
                grad_outputs = grad_outputs[0]
            grads = outs[0].gradient(*ins, gradient=grad_outputs)
            # as tinygrad's own Tensor.backward does: a gradient without a device (a constant)
            # is placed on its input's device
            return tuple(g.clone(device=t.device) if g.device is None else g
                         for t, g in zip(ins, grads))

        def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                     inputs=None):
            if create_graph:
                self.require("create_graph_backward")
            if inputs is not None:
                self.require("backward_inputs")
            ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
            gs = ([grad_tensors] if isinstance(grad_tensors, Tensor) else
                  list(grad_tensors) if grad_tensors is not None else [None] * len(ts))
            for t, g in zip(ts, gs):
                t.backward(_implicit_gradient(t) if g is None else g)

        autograd = self.namespace(None, {"grad": grad, "backward": backward},
                                  path="fw.autograd")
        names = {
            "__name__": "tinygrad",
            "Tensor": Tensor,
            "tensor": tensor,
            "ones": make(Tensor.ones), "zeros": make(Tensor.zeros), "randn": make(Tensor.randn),
            "full": full, "arange": make(Tensor.arange),
            "ones_like": like("ones_like"), "zeros_like": like("zeros_like"), "t": t,
            "float32": dtypes.float32, "float64": dtypes.float64, "int64": dtypes.int64,
            "bool": dtypes.bool,
            "autograd": autograd,
            **self.functions_from_methods(tinygrad, Tensor),
        }
        return self.namespace(tinygrad, names)

    def framework_version(self) -> str:
        from importlib.metadata import version

        return version("tinygrad")

    def to_numpy(self, tensor):
        return tensor.detach().numpy()

    # -- what tinygrad spells differently on its own objects ---------------------------
    def backward(self, tensor, gradient=None, *, retain_graph=None, create_graph=False,
                 inputs=None):
        # retain_graph has nothing to translate: tinygrad never frees a graph (a rule about
        # freeing judges that behaviour, not this keyword)
        if create_graph:
            self.require("create_graph_backward")
        if inputs is not None:
            self.require("backward_inputs")
        tensor.backward(_implicit_gradient(tensor) if gradient is None else gradient)

    def inplace(self, tensor, op: str, *args):
        """torch's ``t.add_(x)`` is tinygrad's ``t.assign(t.add(x))``: the same tensor object
        takes the new values; other in-place methods have no tinygrad spelling."""
        if op not in _INPLACE:
            raise Unsupported.missing("tinygrad", "inplace_methods", f"no spelling of {op}")
        return tensor.assign(getattr(tensor, _INPLACE[op])(*args))

    def liveness(self, tensor):
        """What tinygrad's graph holds of a tensor is its UOp (``tensor.uop``), never the Tensor
        object: ``w = t * t`` keeps ``t.uop`` as a source of ``w.uop``, and the Tensor wrapper
        dies when user code drops it (the weakref channel's positive control fails). A weak
        reference to the UOp says whether the framework still holds the tensor's value and its
        history. UOps are deduplicated (one object per distinct expression), so the watch says
        whether tinygrad holds that expression for anyone; the positive control of
        :func:`conformance.liveness.watch` still decides whether the channel is used."""
        import weakref

        ref = weakref.ref(tensor.uop)
        return lambda: ref() is not None

    def retain_grad(self, tensor):
        self.require("retain_grad")

    def requires_grad(self, tensor):
        """tinygrad 0.14 keeps no requires_grad flag (gradients go to the tensors
        ``Tensor.gradient`` or ``backward`` reach): the attribute the namespace's creation
        functions set is this adapter's own, which tinygrad never updates, so reading it back
        would fabricate the flag. The framework cannot tell."""
        raise Unsupported("tinygrad tensors carry no requires_grad flag (the one on tensors the "
                          "adapter made is its own, never updated by tinygrad)",
                          feature="Tensor.requires_grad")

    def version(self, tensor):
        self.require("version_counter")

    def saved_tensors(self, ctx):
        self.require("custom_function")

    def needs_input_grad(self, ctx):
        self.require("needs_input_grad")

    def register_node_hook(self, node, hook):
        self.require("node_hooks")

    def register_node_prehook(self, node, hook):
        self.require("node_hooks")

    def next_functions(self, node):
        self.require("graph_nodes")

    def subclass_instance(self, cls, tensor):
        self.require("tensor_subclass")
