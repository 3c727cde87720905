"""tinygrad 0.14.0: a define-by-run framework that is not torch-shaped, tested as it ships.

Why the PYTHON device: tinygrad's CPU device compiles every kernel with clang, which a fresh
machine (or CI image) may lack; its PYTHON device interprets the same kernels in Python and
needs nothing. The autograd graph, ``.grad`` and ``Tensor.gradient`` are the same code on every
device (the device only runs the kernels), so every rule judges the same behaviour; the cost
is speed (the suites take a few minutes). ``DEV`` set by the user wins (``DEV=CPU`` with
clang installed runs the same suites compiled).

What tinygrad lacks as a whole is declared in ``unsupported`` under the feature registry's
names (``conformance/features.toml``): the tests that need a graph node, a hook, a
grad mode end UNSUPPORTED before they run. A custom Function is translated onto tinygrad's
own, ``tinygrad.function(fxn, grad_fxn=...)`` (:func:`_function_base`). ``fw`` is a namespace of ours
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
        "requires_grad_flag": "tensors carry no requires_grad flag: gradients go to the tensors "
                              "Tensor.gradient or backward reach (the attribute the adapter's "
                              "creation functions set is its own, never updated by tinygrad)",
        "requires_grad_method": "Tensor has no requires_grad_ (and no requires_grad flag to switch)",
        "is_leaf": "Tensor has no is_leaf",
        "mark_dirty": "tinygrad.function's forward is traced into a new CALL whose results are new "
                      "tensors: no way to declare an input changed in place (no ctx.mark_dirty)",
        "needs_input_grad": "tensors carry no requires_grad flag, so a custom function has no "
                            "ctx.needs_input_grad (grad_fxn gets the gradient and the CALL only)",
        "once_differentiable": "no once_differentiable: tinygrad differentiates a grad_fxn's UOps "
                               "like any other (no marker refusing a double backward)",
        "set_materialize_grads": "grad_fxn gets the gradients of the outputs that got one, with no "
                                 "switch (no ctx.set_materialize_grads)",
        "setup_context": "tinygrad.function's fxn is the forward itself: no separate setup_context step",
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
        "inplace_methods": "no in-place methods (add_, mul_, copy_, detach_, ...): only Tensor.assign "
                           "(and Tensor.replace), which adapter.inplace uses for add_, sub_, mul_, "
                           "div_, pow_ and detach_",
        "unbind": "Tensor has no unbind",
        "queue_callback": "no execution engine object (queue_callback)",
    }
    unsupported_although_present = {
        "requires_grad_flag": {"requires_grad": "tinygrad 0.14.0 has no requires_grad flag (the word "
                                                "appears only as an ignored parameter of its torch "
                                                "checkpoint loader): the attribute on a tensor "
                                                "made by fw.ones(..., requires_grad=True) is the one "
                                                "this adapter's creation functions store, which "
                                                "tinygrad never reads or updates (a result of an op "
                                                "has none)"},
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

        autograd = self.namespace(None, {"grad": grad, "backward": backward,
                                         "Function": _function_base(tinygrad, Tensor)},
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
        takes the new values; torch's ``t.detach_()`` is ``t.replace(t.detach())`` (tinygrad's
        ``Tensor.replace`` gives the same object another UOp: its values, cut from their
        history); other in-place methods have no tinygrad spelling."""
        if op == "detach_" and not args:
            return tensor.replace(tensor.detach())
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
        self.require("requires_grad_flag")

    def version(self, tensor):
        self.require("version_counter")

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


def _function_base(tinygrad, Tensor):
    """``fw.autograd.Function``: a torch-shaped custom Function run as tinygrad's own custom
    function, ``tinygrad.function(fxn, grad_fxn=g)``.

    ``apply(*args, **kwargs)`` makes a ``tinygrad.function`` whose ``fxn`` is
    ``forward(ctx, *args, **kwargs)`` (named as the Function: tinygrad names the CALL after
    ``fxn``), with a fresh ``ctx`` per call, and calls it: tinygrad traces forward into a CALL
    UOp and returns new tensors over its results. ``grad_fxn(gradient, call)`` (tinygrad hands
    it the outputs' gradient UOps and the CALL) runs ``backward(ctx, *gradients)`` on tensors
    over those UOps and hands tinygrad one entry per CALL input: the result for each tensor
    argument in its input's slot (tinygrad's inputs are the tensor arguments, deduplicated, then
    any tensor forward used without being passed, which get None). An entry of None for an
    argument that is no tensor is dropped (tinygrad gives such an argument no slot); any other
    result list that does not map onto the slots (another count, a gradient for a number) goes
    to tinygrad as backward returned it, so tinygrad's own check of the count is what a test
    sees. A Function without ``backward`` is a ``tinygrad.function`` without ``grad_fxn``
    (tinygrad then differentiates the forward's UOps). ``ctx`` keeps user attributes and
    ``save_for_backward``'s tensors (as a ``grad_fxn`` closure keeps what it uses). What
    tinygrad's protocol cannot say raises ``Unsupported``: outputs that are not tensors, the
    gradients of some outputs only (tinygrad passes those that got one without their
    positions), ``mark_non_differentiable``, a user-made instance, a Function without
    ``forward``; mark_dirty, needs_input_grad, set_materialize_grads, setup_context and
    once_differentiable are declared missing. Nothing is checked or computed here: tinygrad
    sums, casts or refuses what backward returned.
    """

    class _Context:
        """What ``forward`` and ``backward`` share for one call (torch's ctx)."""

        def __init__(self):
            self._saved = ()

        def save_for_backward(self, *tensors):
            self._saved = tensors

        @property
        def saved_tensors(self):
            return self._saved

        def mark_non_differentiable(self, *tensors):
            raise Unsupported("tinygrad.function's outputs are all differentiable through its "
                              "grad_fxn; none can be marked non-differentiable",
                              feature="mark_non_differentiable")

    class Function:
        """A torch-shaped custom Function; subclasses define static forward/backward."""

        def __init__(self, *args, **kwargs):
            raise Unsupported("tinygrad: a custom function is tinygrad.function(fxn, grad_fxn=...) "
                              "called on its inputs; an instance of a Function class has no "
                              "tinygrad meaning", feature="function_instances")

        @classmethod
        def apply(cls, *args, **kwargs):
            forward = getattr(cls, "forward", None)
            if not callable(forward):
                raise Unsupported("tinygrad.function takes the forward as its argument: a custom "
                                  "function without one has no tinygrad spelling",
                                  feature="custom_function_without_forward")
            backward = getattr(cls, "backward", None)
            ctx = _Context()
            inputs = list(args) + list(kwargs.values())
            # the UOp each tensor argument is called with: its CALL input
            uops = [a.uop if isinstance(a, Tensor) else None for a in inputs]
            outputs = []

            def fxn(*a, **k):
                out = forward(ctx, *a, **k)
                if not (isinstance(out, Tensor) or (isinstance(out, tuple) and out
                                                   and all(isinstance(o, Tensor) for o in out))):
                    raise Unsupported(f"tinygrad: {cls.__name__}.forward returned "
                                      f"{type(out).__name__} "
                                      f"{tuple(type(o).__name__ for o in out) if isinstance(out, (tuple, list)) else ''}; "
                                      f"tinygrad.function returns a tensor or a tuple of tensors "
                                      f"only", feature="custom_function_outputs")
                outputs.append(len(out) if isinstance(out, tuple) else 0)
                return out
            fxn.__qualname__ = fxn.__name__ = cls.__qualname__

            def grad_fxn(*grads, call=None):
                if call is None:   # one gradient: tinygrad passes the CALL positionally
                    *grads, call = grads
                count = outputs[0] if outputs else 0
                if count and len(grads) != count:
                    raise Unsupported(f"tinygrad hands {cls.__name__}'s grad_fxn the gradients of "
                                      f"{len(grads)} of its {count} outputs, without saying "
                                      f"which: torch's backward gets one per output",
                                      feature="custom_function_outputs")
                result = backward(ctx, *(Tensor(g) for g in grads))
                results = list(result) if isinstance(result, tuple) else [result]
                no_slot = [i < len(inputs) and uops[i] is None and r is None
                           for i, r in enumerate(results)]
                literal = [r.uop if isinstance(r, Tensor) else r
                           for r, skip in zip(results, no_slot) if not skip]
                if len(results) != len(inputs) or any(
                        uops[i] is None and r is not None for i, r in enumerate(results)):
                    return tuple(literal)   # no slot for each: tinygrad's own count check
                slots, mapped = list(call.src[1:]), {}
                for u, r in zip(uops, results):
                    if u is None or r is None:
                        continue
                    slot = next((j for j, s in enumerate(slots) if s is u), None)
                    if slot is None or slot in mapped:   # a tensor passed twice: one slot
                        return tuple(literal)
                    mapped[slot] = r.uop if isinstance(r, Tensor) else r
                return tuple(mapped.get(j) for j in range(len(slots)))

            f = tinygrad.function(fxn, allow_implicit=True,
                                  grad_fxn=grad_fxn if callable(backward) else None)
            return f(*args, **kwargs)

    return Function
