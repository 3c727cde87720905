"""MyGrad 2.5.0: a pure-Python define-by-run engine on numpy that is not torch-shaped, tested as
it ships.

What MyGrad holds under another shape than torch's, and how it is translated (rename and
reshape only; nothing a rule judges is computed here):

- a result's graph node is ``Tensor.creator``, an ``Operation`` (``adapter.grad_fn``); its
  inputs are ``Operation.variables``, tensors, whose own creators are the next nodes;
  ``Operation`` is the public base class of graph nodes (``fw.autograd.graph.Node``);
- ``.grad`` is a read-only property holding a numpy array (``adapter.grad`` returns that array
  itself), cleared by ``null_grad()``; it has no setter, so assigning it is missing;
- ``constant`` is the inverse of ``requires_grad`` (creation takes ``constant=``);
- a leaf is a tensor without a creator (``is_leaf``); an op is recorded when its result has a
  creator (``is_recorded``, read, never inferred from ``constant``);
- the only grad mode is ``mygrad.no_autodiff`` (``fw.no_grad``; ``bool(no_autodiff)`` is
  whether the graph is tracked: ``fw.is_grad_enabled``);
- in-place changes are augmented assignment, ``t[...] = v`` and ``out=t`` (MyGrad rewrites
  the graph instead of counting versions);
- a custom differentiable function is an ``Operation`` subclass (``__call__`` computes the
  forward on the inputs' arrays, ``backward_var(grad, index)`` one input's gradient) run by
  ``mygrad.execute_op``: ``fw.autograd.Function`` maps a torch-shaped ``forward(ctx, ...)`` /
  ``backward(ctx, ...)`` subclass onto it, the Operation instance being ``ctx``.

What MyGrad lacks as a whole is declared in ``unsupported`` (feature registry names,
``conformance/features.toml``); the tests whose subject it is end UNSUPPORTED.
docs/adapters-not-torch-shaped.md walks through this adapter.
"""
from __future__ import annotations

import abc
from typing import Any

from adapters.base import Adapter, Run, Unsupported

#: torch's in-place methods with MyGrad's augmented assignment
_AUGMENTED = {"add_": "__iadd__", "sub_": "__isub__", "mul_": "__imul__", "div_": "__itruediv__",
              "pow_": "__ipow__"}


class MyGradAdapter(Adapter):
    name = "mygrad"
    install_hint = "pip install mygrad==2.5.0"
    devices = ("cpu",)
    module = "mygrad"
    # required: pure Python on numpy, so CI can always install and run it
    runs = (Run(label="mygrad", version="2.5.0", install=("mygrad==2.5.0",), python="3.11"),)
    unsupported = {
        "node_hooks": "Operation takes no hooks (no register_hook / register_prehook)",
        "node_metadata": "Operation has no metadata dict",
        "saved_tensor_attributes": "Operation exposes its inputs as .variables only, no _saved_<name> attributes",
        "saved_tensor_register_hooks": "Operation has no _raw_saved_<name> objects taking pack/unpack hooks",
        "accumulate_grad_variable": "a leaf has no graph node of its own (no AccumulateGrad): backward writes its _grad directly",
        "tensor_hooks": "Tensor has no register_hook",
        "post_accumulate_grad_hooks": "Tensor has no register_post_accumulate_grad_hook",
        "retain_grad": "Tensor has no retain_grad (backward keeps .grad of every non-constant tensor in the graph)",
        "requires_grad_method": "Tensor.constant is read-only: no way to switch tracking on an existing tensor",
        "tensor_data": "Tensor.data is the numpy array of the values, not a detached tensor alias",
        "mark_dirty": "an Operation has no way to declare that it changed an input in place (the memory guard makes inputs read-only)",
        "set_materialize_grads": "Operation.backward_var always gets the output's gradient array (one output per Operation)",
        "once_differentiable": "no higher-order differentiation: backward_var works on numpy arrays, so there is nothing to mark once-differentiable",
        "forward_ad": "no forward-mode AD",
        "saved_tensors_hooks": "no saved-tensor hooks (an Operation keeps its input tensors in .variables)",
        "disable_saved_tensors_hooks": "no saved-tensor hooks",
        "save_on_cpu": "no saved-tensor hooks",
        "allow_mutation_on_saved_tensors": "no such context manager (in-place changes always rewrite the graph)",
        "version_counter": "Tensor has no version counter: in-place changes rewrite the graph instead",
        "create_graph_backward": "Tensor.backward takes no create_graph (gradients are numpy arrays, never on a graph)",
        "backward_inputs": "Tensor.backward takes no inputs=",
        "detach_alias_recorded_writes": "an in-place op writes an array in place only untracked: a tracked one writes new memory, so no write through x.data (what fw.detach wraps) is recorded",
        "retain_graph": "Tensor.backward(grad) takes no retain_graph and always ends by clearing the graph it ran through (clear_graph)",
        "weak_tensor_utils": "no utils.weak (WeakIdKeyDictionary, WeakIdRef, TensorWeakRef)",
        "grad_assignment": "Tensor.grad is a read-only property (no setter, no deleter); null_grad() clears it",
        "view_method": "Tensor has no view(); reshape and basic indexing return views when numpy does",
        "unbind": "no unbind: every Operation has exactly one output",
        "queue_callback": "no execution engine object (queue_callback)",
        "setup_context": "an Operation's __call__ is its forward and keeps its own state: there is no separate setup_context step",
        "gradient_edge": "no gradient edges (get_gradient_edge)",
        "forward_grad_mode": "no forward-mode AD",
        "module_backward_hooks": "no nn.Module",
    }
    unsupported_although_present = {
        "tensor_data": {"data": "Tensor.data is the tensor's numpy array itself (not a detached "
                                "tensor); assigning it replaces the array behind the graph's back"},
    }

    def __init__(self) -> None:
        super().__init__()
        self._detached: dict[int, Any] = {}   # id -> weak reference: what fw.detach made

    def _import(self):
        import numpy as np
        import mygrad
        from mygrad import Tensor
        from mygrad.nnet.activations import sigmoid
        from mygrad.operation_base import Operation

        def constant_of(requires_grad: bool) -> bool:
            return not bool(requires_grad)

        def floats(data: Any, dtype: Any):
            """torch's default dtype for Python floats is float32; MyGrad's float64."""
            if dtype is not None:
                return dtype
            kind = np.asarray(data).dtype
            return np.float32 if kind == np.float64 and not isinstance(data, np.ndarray) else None

        def tensor(data, dtype=None, device=None, requires_grad=False):
            if isinstance(data, Tensor):
                data = data.data
            dtype = floats(data, dtype)
            return mygrad.tensor(data, dtype=dtype, constant=constant_of(requires_grad))

        def shaped(factory, default_dtype=np.float32):
            def create(*size, dtype=None, device=None, requires_grad=False):
                shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
                return factory(shape, dtype=dtype or default_dtype, constant=constant_of(requires_grad))
            create.__name__ = factory.__name__
            return create

        def randn(*size, dtype=None, device=None, requires_grad=False):
            shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
            values = mygrad.random.randn(*shape).data.astype(dtype or np.float32)
            return mygrad.tensor(values, constant=constant_of(requires_grad))

        def full(size, fill_value, dtype=None, device=None, requires_grad=False):
            shape = (size,) if isinstance(size, int) else tuple(size)
            return mygrad.full(shape, fill_value, dtype=floats(fill_value, dtype),
                               constant=constant_of(requires_grad))

        def arange(*args, dtype=None, device=None, requires_grad=False):
            return mygrad.arange(*args, dtype=dtype, constant=constant_of(requires_grad))

        def like(factory):
            def create(t, dtype=None, device=None, requires_grad=False):
                return factory(t, dtype=dtype, constant=constant_of(requires_grad))
            create.__name__ = factory.__name__
            return create

        def sum_(t, dim=None, keepdim=False):
            return mygrad.sum(t, axis=dim, keepdims=keepdim)

        def mean(t, dim=None, keepdim=False):
            return mygrad.mean(t, axis=dim, keepdims=keepdim)

        def clone(t):
            # a differentiable copy into new memory: MyGrad's unary identity op
            return mygrad.positive(t)

        def detach(t):
            # the same values outside the graph: a constant tensor over the tensor's own array
            # (MyGrad's x.data, the alias it has); ``inplace`` writes through it untracked, as
            # MyGrad writes an array in place (a tracked in-place op would write new memory)
            alias = mygrad.astensor(t.data if isinstance(t, Tensor) else t, constant=True)
            self._remember_detached(alias)
            return alias

        def reshape(t, *shape):
            shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list, int)) else shape
            return mygrad.reshape(t, shape)

        def pow_(t, exponent):
            return mygrad.power(t, exponent)

        def no_grad():
            return mygrad.no_autodiff

        def is_grad_enabled():
            return bool(mygrad.no_autodiff)   # the tracker's state: True while the graph is tracked

        def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                     inputs=None):
            ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
            gs = ([grad_tensors] if isinstance(grad_tensors, Tensor) or grad_tensors is None
                  else list(grad_tensors))
            if len(ts) != 1:
                raise Unsupported("mygrad: Tensor.backward starts from one tensor; there is no "
                                  "backward of several outputs at once",
                                  feature="backward_of_several_outputs")
            self.backward(ts[0], gs[0], retain_graph=retain_graph, create_graph=create_graph,
                          inputs=inputs)

        Function = _function_base(self, mygrad, Tensor, Operation)
        graph = self.namespace(None, {"Node": Operation}, path="fw.autograd.graph")
        function = self.namespace(None, {"Function": Function}, path="fw.autograd.function")
        autograd = self.namespace(None, {"backward": backward, "Function": Function,
                                         "graph": graph, "function": function},
                                  path="fw.autograd")
        names = {
            "__name__": "mygrad",
            "tensor": tensor,
            "ones": shaped(mygrad.ones), "zeros": shaped(mygrad.zeros), "randn": randn,
            "full": full, "arange": arange,
            "ones_like": like(mygrad.ones_like), "zeros_like": like(mygrad.zeros_like),
            "bool": np.bool_,
            "sum": sum_, "mean": mean, "clone": clone, "detach": detach, "reshape": reshape,
            "pow": pow_, "mul": mygrad.multiply, "add": mygrad.add, "sub": mygrad.subtract,
            "div": mygrad.divide, "neg": mygrad.negative, "t": mygrad.transpose,
            "sigmoid": sigmoid,
            "no_grad": no_grad, "is_grad_enabled": is_grad_enabled,
            "autograd": autograd,
            **self.functions_from_methods(mygrad, Tensor),
        }
        return self.namespace(mygrad, names)

    def framework_version(self) -> str:
        from importlib.metadata import version

        return version("mygrad")

    def _remember_detached(self, alias) -> None:
        """Keep a weak reference to a tensor fw.detach made (tensors are unhashable: numpy's
        ``==``), dropped when the tensor dies."""
        import weakref

        key = id(alias)
        self._detached[key] = weakref.ref(alias, lambda _ref: self._detached.pop(key, None))

    def to_numpy(self, tensor):
        import numpy as np

        return np.array(getattr(tensor, "data", tensor), copy=True)

    # -- shapes: what MyGrad holds differently ---------------------------------------
    # A gradient is a numpy array (``adapter.grad``), which no graph can hold: read as a tensor,
    # it has no node, needs no gradient and was made by no recorded op.
    def grad_fn(self, tensor):
        return None if _is_array(tensor) else tensor.creator

    def grad(self, tensor):
        return tensor.grad

    def set_grad(self, tensor, value):
        self.require("grad_assignment")

    def clear_grad(self, tensor):
        tensor.null_grad()

    def is_leaf(self, tensor) -> bool:
        return _is_array(tensor) or tensor.creator is None

    def requires_grad(self, tensor) -> bool:
        return not _is_array(tensor) and not tensor.constant

    def is_recorded(self, tensor) -> bool:
        return not _is_array(tensor) and tensor.creator is not None

    def node_name(self, node) -> str:
        return type(node).__name__

    def next_functions(self, node):
        # every Operation has one output, so each input's producer feeds it from output 0
        return tuple((self._producer(v), 0) for v in node.variables)

    def next_nodes(self, node):
        return tuple(self._producer(v) for v in node.variables)

    def _producer(self, variable):
        """The node feeding one input of an Operation: its creator, None for a constant (it
        needs no gradient); a leaf that needs one has no node in MyGrad (no AccumulateGrad)."""
        if variable.creator is None and not variable.constant:
            raise Unsupported.missing("mygrad", "accumulate_grad_variable",
                                      "a leaf that needs a gradient has no graph node")
        return variable.creator

    # -- what MyGrad spells differently on its own objects ------------------------------
    def backward(self, tensor, gradient=None, *, retain_graph=None, create_graph=False,
                 inputs=None):
        if create_graph:
            self.require("create_graph_backward")
        if inputs is not None:
            self.require("backward_inputs")
        if retain_graph:
            self.require("retain_graph")
        tensor.backward(gradient)

    def inplace(self, tensor, op: str, *args):
        """torch's in-place methods as MyGrad spells them: augmented assignment (``t += u``),
        item assignment (``t[...] = u``: copy_, zero_, fill_), or an op with ``out=t``
        (exp_, clamp_); the others have no MyGrad spelling."""
        import mygrad

        ref = self._detached.get(id(tensor))
        if ref is not None and ref() is tensor:
            # a write through what fw.detach made (a constant tensor over the source's own
            # array, MyGrad's x.data): MyGrad writes an array in place only untracked (a tracked
            # in-place op writes new memory and rewires the graph), so the write is that
            # untracked op, as torch's write through a detached alias that needs no gradient is
            # recorded nowhere; the memory guard refuses it where a graph holds the array. A
            # write that torch records on the alias (an argument needs a gradient, grad mode on)
            # has no MyGrad spelling
            # (mygrad.no_autodiff is true while MyGrad tracks: its state flag)
            if bool(mygrad.no_autodiff) and any(isinstance(a, mygrad.Tensor) and not a.constant
                                                for a in args):
                self.require("detach_alias_recorded_writes")
            with mygrad.no_autodiff:
                return self._inplace(tensor, op, *args)
        return self._inplace(tensor, op, *args)

    def _inplace(self, tensor, op: str, *args):
        import mygrad

        if op in _AUGMENTED:
            result = getattr(tensor, _AUGMENTED[op])(*args)
            return tensor if result is NotImplemented else result
        if op in ("copy_", "fill_"):
            tensor[...] = args[0]
            return tensor
        if op == "zero_":
            tensor[...] = 0
            return tensor
        if op == "exp_":
            return mygrad.exp(tensor, out=tensor)
        if op == "clamp_":
            low, high = (list(args) + [None, None])[:2]
            return mygrad.clip(tensor, low, high, out=tensor)
        raise Unsupported.missing("mygrad", "inplace_methods", f"no MyGrad spelling of {op}")

    def retain_grad(self, tensor):
        self.require("retain_grad")

    def version(self, tensor):
        self.require("version_counter")

    def saved_tensors(self, ctx):
        return ctx.saved_tensors

    def saved_input(self, node, index):
        # an Operation keeps the inputs its backward reads in .variables, by position (no
        # _saved_<name> attributes: saved_tensor_attributes stays declared missing)
        return node.variables[index]

    def apply_in_place(self, function, target, *args):
        # MyGrad's caller names the tensor an op changes in place: execute_op(..., out=target)
        return function._execute((target,) + args, {}, target)

    def needs_input_grad(self, ctx):
        return ctx.needs_input_grad

    def register_node_hook(self, node, hook):
        self.require("node_hooks")

    def register_node_prehook(self, node, hook):
        self.require("node_hooks")

    def subclass_instance(self, cls, tensor):
        """MyGrad makes an op's result of the class the op runs through (``Tensor._op`` is a
        classmethod): ``t[...]`` run through ``cls`` is a ``cls`` view of ``t`` on the graph,
        as torch's ``as_subclass`` is an alias of ``t``."""
        from mygrad._tensor_core_ops.indexing import GetItem

        return cls._op(GetItem, tensor, op_args=(Ellipsis,))


def _function_base(adapter: MyGradAdapter, mygrad, Tensor, Operation):
    """``fw.autograd.Function``: a torch-shaped custom Function run as a MyGrad ``Operation``.

    ``apply(*args)`` runs ``mygrad.execute_op`` with an Operation subclass made once per Function
    (named as the Function: a MyGrad user names their Operation class) whose instance is
    ``ctx``: ``__call__`` runs ``forward(ctx, *args)`` on the inputs and hands MyGrad the
    result's array (as an Operation's forward does, it computes on values: nothing inside is
    recorded); ``backward_var(grad, index)`` gives input ``index`` its entry of
    ``backward(ctx, grad)`` (one call per backward through the node), None as MyGrad's
    ``SkipGradient``. What MyGrad's protocol cannot say (several outputs, keyword inputs, a
    backward returning another number of gradients than inputs, a user-made instance,
    mark_non_differentiable) raises ``Unsupported``; mark_dirty and set_materialize_grads are
    declared missing. Nothing is checked or computed here.
    """
    import numpy as np
    from mygrad._utils import SkipGradient

    class _Context(Operation):
        function: Any = None   # the torch-shaped Function class

        def __call__(self, *tensors, layout=(), out=None):
            self.variables = tensors
            self._args = _rebuild(layout, tensors)
            self._positions = tuple(i for i, slot in enumerate(layout) if slot is _TENSOR)
            self._grads = None
            self._own = ()
            if out is not None:
                # applied in place (adapter.apply_in_place: execute_op(..., out=target)): an
                # Operation never writes its inputs (the memory guard) but ``out``; the
                # torch-shaped forward changes a constant tensor of its own holding the
                # target's values and returns it, and that is what goes into ``out``. Each
                # such tensor stands for its input: saving it saves the input (.variables)
                self._own = tuple(mygrad.tensor(t.data, constant=True) for t in tensors)
                with mygrad.no_autodiff:
                    result = self.function.forward(self, *_rebuild(layout, self._own))
                if result is not self._own[0]:
                    raise Unsupported("mygrad: an Operation applied in place writes its one "
                                      "result into its target (execute_op(..., out=target)); a "
                                      "forward that does not return the target it changed has "
                                      "no MyGrad spelling", feature="mark_dirty")
                np.copyto(out, result.data)
                return out
            with mygrad.no_autodiff:
                out = self.function.forward(self, *self._args)
            if not isinstance(out, Tensor):
                raise Unsupported(f"mygrad: {self.function.__name__}.forward returned "
                                  f"{type(out).__name__}; an Operation has exactly one output "
                                  f"tensor", feature="custom_function_outputs")
            return out.data

        # ctx, as the suites use it
        def save_for_backward(self, *tensors):
            # an input is kept as MyGrad keeps an Operation's inputs for its backward: as its
            # place in .variables, the entry an in-place change of that input reroutes to the
            # placeholder holding the values the op saw (what MyGrad's own operations read in
            # backward_var); anything else is kept as it is
            # (applied in place, forward saw tensors of its own standing for the inputs)
            def place(t):
                own = _position(self._own, t)
                return own if own is not None else _position(self.variables, t)
            self._saved = tuple(_Input(i) if i is not None else t
                                for t, i in ((t, place(t)) for t in tensors))

        @property
        def saved_tensors(self):
            return tuple(self.variables[s.index] if isinstance(s, _Input) else s
                         for s in self._saved)

        @property
        def needs_input_grad(self):
            return tuple(isinstance(a, Tensor) and not a.constant for a in self._args)

        def mark_non_differentiable(self, *tensors):
            raise Unsupported("mygrad: an Operation's output is differentiable unless every input "
                              "is constant; no output can be marked non-differentiable",
                              feature="mark_non_differentiable")

        # the Operation protocol
        def backward(self, grad, **kwargs):
            with mygrad.no_autodiff:
                result = self.function.backward(self, mygrad.astensor(grad, constant=True))
            grads = result if isinstance(result, tuple) else (result,)
            if len(grads) != len(self._args):
                raise Unsupported(f"mygrad: {self.function.__name__}.backward returned "
                                  f"{len(grads)} gradients for {len(self._args)} inputs; an "
                                  f"Operation gives each input its gradient by index "
                                  f"(backward_var), so another count has no MyGrad spelling",
                                  feature="custom_backward_gradient_count")
            if any(g is not None and not isinstance(a, Tensor) for g, a in zip(grads, self._args)):
                raise Unsupported(f"mygrad: {self.function.__name__}.backward returned a gradient "
                                  f"for an input that is no tensor; an Operation's inputs are "
                                  f"tensors only (a number is part of the operation), so such a "
                                  f"gradient has no MyGrad spelling",
                                  feature="custom_backward_gradient_count")
            self._grads = grads
            try:
                super().backward(grad, **kwargs)
            finally:
                self._grads = None

        def backward_var(self, grad, index, **kwargs):
            g = self._grads[self._positions[index]]
            if g is None:
                raise SkipGradient()
            # what backward returned goes to MyGrad as it is (never made an array here): MyGrad
            # validates it (a list is its InvalidGradient), as torch validates a Function's
            return g.data if isinstance(g, Tensor) else g

    def _rebuild(layout, tensors):
        it = iter(tensors)
        return tuple(next(it) if slot is _TENSOR else slot for slot in layout)

    class Function:
        """A torch-shaped custom Function; subclasses define static forward/backward."""

        def __init__(self, *args, **kwargs):
            raise Unsupported("mygrad: a custom Operation's instances are made by the engine on "
                              "each call (execute_op); a user-made instance has no MyGrad "
                              "meaning", feature="function_instances")

        @classmethod
        def apply(cls, *args, **kwargs):
            return cls._execute(args, kwargs, None)

        @classmethod
        def _execute(cls, args, kwargs, target):
            if kwargs:
                raise Unsupported("mygrad: execute_op takes an Operation's inputs positionally; "
                                  "keywords are op_kwargs, never inputs",
                                  feature="apply(keyword=)")  # the suite's name for it
            op = cls.__dict__.get("_mygrad_operation")
            if op is None:
                namespace = {"function": cls, "__qualname__": cls.__qualname__,
                             "__module__": cls.__module__}
                # a Function without forward or backward is an Operation without __call__ or
                # backward_var: left abstract, so MyGrad's own refusal (Operation is an ABC) is
                # what the user sees, not an error of this translation
                for torch_name, mygrad_name in (("forward", "__call__"),
                                                ("backward", "backward_var")):
                    if not callable(getattr(cls, torch_name, None)):
                        namespace[mygrad_name] = abc.abstractmethod(_absent)
                op = type(cls.__name__, (_Context,), namespace)
                cls._mygrad_operation = op
            tensors = tuple(a for a in args if isinstance(a, Tensor))
            layout = tuple(_TENSOR if isinstance(a, Tensor) else a for a in args)
            return mygrad.execute_op(op, *tensors, op_kwargs={"layout": layout}, out=target)

    return Function


_TENSOR = object()   # a tensor's place in a custom Function's arguments


class _Input:
    """A saved tensor that is one of the Operation's inputs: its index in ``.variables``."""
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _position(variables, tensor):
    """The index of ``tensor`` (by identity: tensors compare elementwise) among an
    Operation's inputs, None when it is not one."""
    return next((i for i, v in enumerate(variables) if v is tensor), None)


def _absent(self, *args, **kwargs):  # pragma: no cover - abstract: never called
    raise NotImplementedError


def _is_array(value) -> bool:
    import numpy as np

    return isinstance(value, (np.ndarray, np.generic))
