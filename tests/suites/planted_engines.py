"""Two planted engines the suites must not praise for nothing (issue 33 item 5).

Each is the reference engine changed in the process that loads the adapter (the suites run in
a child pytest, never in the project test's own process):

- :class:`RefusingEngine` refuses every operation: tensors can be made (creation functions)
  and their fields read and set (``requires_grad``, ``.grad``, with the reference's own checks);
  every op on them, every method of a tensor, every function and context manager of ``fw``,
  ``fw.autograd`` and its ``forward_ad``, ``graph`` and ``function`` modules, and
  ``Function.apply`` raise ``RuntimeError``. Classes stay (the suites subclass them), and so
  does ``fw.utils.weak`` (weak references are no autograd operation). A test that PASSES here
  judged a refusal, or nothing.
- :class:`InertEngine` records nothing and refuses nothing: ops compute their values, no op
  ever gets a graph node (results require no grad), ``backward`` and ``autograd.grad`` run and
  do nothing (``grad`` gives None per input), hooks register and never run, forward AD's
  ``make_dual`` gives a tensor without a tangent, and the checks the engine makes only while
  it records (in-place on a leaf, hooks on tensors that need no grad) are gone with the
  recording. Checks that do not depend on recording (``x.grad = v`` validation, integer
  tensors that require grad, the legacy instance call) stay the reference's. A test that PASSES here judged nothing happening.

``tests/suites/planted_passes.toml`` lists every PASS either engine gets, each with the sentence
of its rule's statement that allows it (tests/suites/test_planted_engines.py).

Four more each plant one shape a real framework has, which the suites met only on that
framework (issue 33's examples 5.2 to 5.5): a ``view`` that copies (writes through it are lost),
a custom Function's node named ``F_backward`` (OneFlow), a node ``register_hook`` bound taking
no arguments (OneFlow 0.9.0's ``FunctionNode``), and a ``Function.apply`` taking no keywords
(OneFlow); two more, Paddle's subclass shapes of example 3.2: a subclass instance made off the
graph (``T(x)``) and a Function refusing a leaf its forward returns as-is (PyLayer). Only the
cells of the rules each shape meets are run on them.
"""
from __future__ import annotations

import sys
import types

from adapters.reference_adapter import ReferenceAdapter

REFUSAL = "planted: this engine refuses every operation"

#: what the refusing engine still does: make tensors, and read or set their plain fields
_CREATION = {"tensor", "ones", "zeros", "empty", "full", "randn", "rand", "randint", "arange",
             "from_numpy", "ones_like", "zeros_like", "empty_like", "rand_like", "randn_like",
             "full_like", "manual_seed"}
_FIELDS = {"requires_grad", "requires_grad_", "is_leaf", "grad_fn", "_grad_fn", "grad", "shape",
           "dtype", "device", "ndim", "layout", "is_cuda", "retains_grad", "_version",
           "_base", "output_nr", "names", "is_sparse", "is_quantized", "is_meta"}
#: object protocol a harness needs to hold, print and compare tensors by identity
_PROTOCOL = {"__new__", "__init__", "__init_subclass__", "__repr__", "__str__", "__hash__",
             "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__class__",
             "__dir__", "__sizeof__", "__reduce__", "__reduce_ex__", "__getstate__",
             "__setstate__", "__subclasshook__", "__format__", "__weakref__", "__dict__",
             "__slots__", "__module__", "__doc__", "__class_getitem__", "__torch_function__",
             "_wrap"}


def _refuse(*args, **kwargs):
    raise RuntimeError(REFUSAL)


def _refusing_method(name):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{REFUSAL} (Tensor.{name})")
    method.__name__ = name
    return method


class RefusingEngine(ReferenceAdapter):
    """The reference where every operation raises; only tensor creation works."""

    name = "planted-refusing"

    def _import(self):
        import reference
        from reference.autograd import function as function_module
        from reference.tensor import Tensor

        for klass in Tensor.__mro__[:-1]:
            for name, value in list(vars(klass).items()):
                if name in _PROTOCOL or name in _FIELDS or isinstance(value, property):
                    continue
                if callable(value) or isinstance(value, (staticmethod, classmethod)):
                    setattr(Tensor, name, _refusing_method(name))
        function_module.Function.apply = classmethod(_refuse)
        renames = _refusing(reference, keep=_CREATION | _CLASSES)
        renames["autograd"] = self.namespace(reference.autograd, {
            **_refusing(reference.autograd, keep=_CLASSES),
            **{name: self.namespace(getattr(reference.autograd, name),
                                    _refusing(getattr(reference.autograd, name), keep=_CLASSES),
                                    path=f"fw.autograd.{name}")
               for name in ("forward_ad", "graph", "function")}}, path="fw.autograd")
        return self.namespace(reference, renames)


#: classes the suites subclass or test instances against: defining a class is no operation
_CLASSES = {"Tensor", "Size", "device", "dtype", "layout", "Function", "FunctionCtx", "Node",
            "InplaceFunction", "NestedIOFunction", "Generator"}


def _refusing(module, keep) -> dict:
    """A refusing stand-in for every public callable of ``module`` outside ``keep``."""
    return {name: _refuse for name in dir(module)
            if not name.startswith("_") and name not in keep
            and callable(getattr(module, name, None))}


class InertEngine(ReferenceAdapter):
    """The reference that records nothing and refuses nothing."""

    name = "planted-inert"

    def _import(self):
        import reference
        from reference import grad_mode
        from reference.tensor import Tensor

        class Handle:
            def remove(self):
                return None

        def register(self, *args, **kwargs):
            return Handle()

        # grad mode as the user sets it is kept and reported (grad_mode's own functions and
        # context managers read it); everywhere else the engine reads "off": it never records
        here = grad_mode.__file__

        class _Never(grad_mode._State):
            @property
            def enabled(self):
                if sys._getframe(1).f_code.co_filename == here:
                    return self.__dict__.get("user", True)
                return False

            @enabled.setter
            def enabled(self, value):
                self.__dict__["user"] = bool(value)

        grad_mode._state.__class__ = _Never

        def backward(*args, **kwargs):
            return None

        def grad(outputs, inputs, *args, **kwargs):
            many = isinstance(inputs, (tuple, list))
            return tuple(None for _ in inputs) if many else (None,)

        # forward AD records no tangent either: make_dual gives the primal's values, alone
        forward_ad = reference.autograd.forward_ad
        forward_ad.make_dual = lambda tensor, tangent, *, level=None: tensor.view_as(tensor)

        Tensor.backward = backward
        Tensor.register_hook = register
        Tensor.register_post_accumulate_grad_hook = register
        Tensor.retain_grad = lambda self: None
        reference.autograd.backward = backward
        reference.autograd.grad = grad
        return reference


class CopyingViewEngine(ReferenceAdapter):
    """``x.view(shape)`` returns a copy of ``x`` in that shape (a recorded one): a write through
    it never reaches ``x`` (tinygrad 0.14.0's ``.view`` of a realized buffer)."""

    name = "planted-copying-view"

    def _import(self):
        import reference
        from reference.tensor import Tensor

        view = Tensor.view
        Tensor.view = lambda self, *shape: view(self.clone(), *shape)
        return reference


class UnderscoreNodeNameEngine(ReferenceAdapter):
    """A custom Function ``F``'s node is named ``F_backward`` (OneFlow's spelling), not
    ``FBackward``."""

    name = "planted-underscore-node-name"

    def _import(self):
        import reference
        from reference.autograd.function import FunctionMeta

        init = FunctionMeta.__init__

        def renamed(cls, name, bases, attrs):
            init(cls, name, bases, attrs)
            cls._backward_cls.__name__ = cls._backward_cls.__qualname__ = f"{name}_backward"

        FunctionMeta.__init__ = renamed
        return reference


class NodeHookTakingNothingEngine(ReferenceAdapter):
    """Graph nodes' ``register_hook`` is bound taking no arguments (OneFlow 0.9.0's
    ``FunctionNode.register_hook``: ``() -> None``): no post-hook can be registered. Not
    declared missing, so the suites' own code meets the binding."""

    name = "planted-node-hook-taking-nothing"

    def _import(self):
        import reference
        from reference.autograd.graph import NodeBase

        def register_hook(self):
            return None

        NodeBase.register_hook = register_hook
        return reference


class ApplyWithoutKeywordsEngine(ReferenceAdapter):
    """``Function.apply`` takes its inputs positionally only: a keyword is a TypeError before
    forward runs (OneFlow's ``Function.apply``)."""

    name = "planted-apply-without-keywords"

    def _import(self):
        import reference
        from reference.autograd.function import Function

        apply = Function.__dict__["apply"].__func__

        def positional(cls, *args):
            return apply(cls, *args)

        Function.apply = classmethod(positional)
        return reference


class OffGraphSubclassEngine(ReferenceAdapter):
    """The subclass instance of a tensor that requires grad is a new leaf off its graph that
    requires no grad (Paddle's ``T(x)``, which its adapter gives for ``as_subclass``)."""

    name = "planted-off-graph-subclass"

    def subclass_instance(self, cls, tensor):
        return tensor.detach().as_subclass(cls)


class AsIsInputRefusedEngine(ReferenceAdapter):
    """A custom Function whose forward returns a leaf that requires grad as-is is refused by
    ``apply`` (Paddle's PyLayer takes it for an in-place op: "Leaf Var ... can't use inplace
    strategy")."""

    name = "planted-as-is-input-refused"

    def _import(self):
        import functools

        import reference
        from reference.autograd import function as function_module
        from reference.tensor import Tensor

        apply = function_module._apply

        def refusing(fn_cls, args, kwargs):
            leaves = [a for a in (*args, *kwargs.values())
                      if isinstance(a, Tensor) and a.is_leaf and a.requires_grad]
            had, forward = fn_cls.__dict__.get("forward"), fn_cls.forward

            @functools.wraps(forward)
            def checked(*inputs, **named):
                out = forward(*inputs, **named)
                if any(o is leaf for o in (out if isinstance(out, (tuple, list)) else (out,))
                       for leaf in leaves):
                    raise ValueError("planted: a leaf that requires grad, returned as-is, "
                                     "can't use the inplace strategy")
                return out

            fn_cls.forward = staticmethod(checked)
            try:
                return apply(fn_cls, args, kwargs)
            finally:
                if had is None:
                    del fn_cls.forward
                else:
                    fn_cls.forward = had

        function_module._apply = refusing
        return reference
