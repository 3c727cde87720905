"""Curated mutants of the legacy_function suite's area: custom autograd Functions: legacy instance
calls, ctx, mark_dirty, once_differentiable, saved tensors.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

from conformance.mutants import edit, mutant, original, replace, single_edit
from conformance.mutants.catalogue.shared import accepted_or_raised, fresh_alias, fw, leaf, warnings_count



def _double_cls():
    class Double(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 + x * 0

    return Double


def _probe_instance_call():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = _double_cls()()
    return accepted_or_raised(lambda: fn(leaf()), accepted="ran")


single_edit("legacy_function.instance-call-runs", "reference.autograd.function:Function.__call__",
            "raise RuntimeError(LEGACY_CALL)", "return type(self).apply(*args, **kwargs)",
            models="legacy (instance-called) Functions still executed, as PyTorch did before 1.5 removed "
                   "non-static forward",
            rules="legacy_function.instance-call-raises", probe=_probe_instance_call)


def _probe_instantiation_warning():
    return warnings_count(lambda: _double_cls()())


@mutant("legacy_function.instantiation-silent",
        models="instantiating a Function without the deprecation warning (PyTorch before 2.x warned "
               "only on call)",
        rules="legacy_function.instantiation-warns", probe=_probe_instantiation_warning)
def _():
    """`Function()` no longer warns."""
    from reference.autograd.function import FunctionCtx

    replace("reference.autograd.function:Function.__init__", lambda self, *a, **k: FunctionCtx.__init__(self))


def _probe_materialize():
    class Two(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    a, b = Two.apply(leaf())
    try:
        a.sum().backward()
        return "ran"
    except TypeError:  # None * 3
        return "got None"


single_edit("legacy_function.materialize-grads-ignored", "reference.autograd.function:BackwardCFunction.apply",
            "if grad is None and self._materialize_grads:", "if False:",
            models="unused outputs' gradients passed as None although materialize_grads is on (the "
                   "default PyTorch documents: zeros)",
            rules="legacy_function.materialize-grads", probe=_probe_materialize)


def _probe_once_differentiable():
    seen = []

    class Double(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @fw().autograd.function.once_differentiable
        def backward(ctx, g):
            seen.append(fw().is_grad_enabled())
            return g * 2

    Double.apply(leaf()).sum().backward(create_graph=True)
    return seen


@mutant("legacy_function.once-differentiable-grad-enabled",
        models="@once_differentiable that marks the result but leaves grad mode on inside backward "
               "(a decorator reduced to its error-node half)",
        rules="legacy_function.once-differentiable-no-grad", probe=_probe_once_differentiable)
def _():
    """A once_differentiable backward runs with grad mode as the engine left it."""
    edit("reference.autograd.function:once_differentiable",
         "        with grad_mode.no_grad():\n            return fn(ctx, *args)", "        return fn(ctx, *args)")
    edit("reference.autograd.function:BackwardCFunction.apply", "    if once:\n", "    if False:\n")


def _probe_once_guard():
    class Cube(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        @fw().autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = leaf()
    (g,) = fw().autograd.grad((Cube.apply(x) * x).sum(), x, create_graph=True)
    return accepted_or_raised(lambda: g.sum().backward(), accepted="ran")


single_edit("legacy_function.once-differentiable-unguarded", "reference.autograd.function:BackwardCFunction.apply",
            "if ops.differentiable:", "if False:",
            models="results of a once_differentiable backward left differentiable (wrong second-order "
                   "gradients instead of an error)",
            rules="legacy_function.once-differentiable-double-backward-raises", probe=_probe_once_guard)


def _probe_needs_input_grad():
    seen = []

    class Mul(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append(ctx.needs_input_grad)
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, g

    Mul.apply(leaf(), fw().tensor([1.0, 1.0]))
    return seen


single_edit("legacy_function.needs-input-grad-all-true", "reference.autograd.function:_apply",
            "ctx.needs_input_grad = tuple(t and value._requires_grad for t, value in zip(is_tensor, inputs))",
            "ctx.needs_input_grad = tuple(is_tensor)",
            models="needs_input_grad reporting True for every tensor input (backward computes gradients "
                   "nobody asked for)",
            rules="legacy_function.needs-input-grad", probe=_probe_needs_input_grad)


_SHARED_CTX: dict = {}


def _shared_ctx(fn_cls):
    ctx = _SHARED_CTX.get(fn_cls)
    if ctx is None:
        ctx = _SHARED_CTX[fn_cls] = fn_cls._backward_cls()
    return ctx


def _probe_fresh_ctx():
    Double = _double_cls()
    return Double.apply(leaf()).grad_fn is Double.apply(leaf()).grad_fn


@mutant("legacy_function.ctx-shared-per-class",
        models="one node object per Function class reused across applications (legacy PyTorch "
               "Function instances reused by user code, Chainer FunctionNode reuse): a second apply "
               "overwrites the first's saved tensors",
        rules="legacy_function.fresh-ctx-per-apply", probe=_probe_fresh_ctx)
def _():
    """`Function.apply` reuses one ctx per Function class."""
    replace("reference.autograd.function:_shared_ctx", _shared_ctx)
    edit("reference.autograd.function:_apply", "ctx = fn_cls._backward_cls()", "ctx = _shared_ctx(fn_cls)")


def _probe_mark_dirty():
    class AddOne(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf() * 1
    return AddOne.apply(x) is x


@mutant("legacy_function.mark-dirty-returns-new-object",
        models="a dirty (in-place modified) input returned as a new wrapper object (OneFlow-style "
               "output wrapping; PyTorch returns the very input object)",
        rules="legacy_function.mark-dirty-returns-same-object", probe=_probe_mark_dirty)
def _():
    """A tensor marked dirty comes back from apply as a new alias object."""
    replace("reference.autograd.function:_fresh_alias", fresh_alias)
    edit("reference.autograd.function:_apply", "result = out\n        elif id(out) in input_ids:",
         "result = _fresh_alias(out)\nelif id(out) in input_ids:")


def _probe_dirty_not_returned():
    class Bad(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    return accepted_or_raised(lambda: Bad.apply(leaf() * 1))


single_edit("legacy_function.dirty-not-returned-accepted", "reference.autograd.function:_check_dirty",
            "if id(tensor) not in output_ids:", "if False:",
            models="mark_dirty on an input that is not returned accepted (its history silently stale)",
            rules="legacy_function.mark-dirty-not-returned-raises", probe=_probe_dirty_not_returned)


def _probe_extra_grads():
    class Extra(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    return accepted_or_raised(lambda: Extra.apply(leaf()).sum().backward())


single_edit("legacy_function.extra-grads-dropped", "reference.autograd.function:BackwardCFunction._validate",
            "if len(results) > expected and all(r is None for r in results[expected:]):", "if len(results) > expected:",
            models="a backward returning too many gradients silently truncated (a bug in the user's "
                   "backward goes unnoticed)",
            rules="legacy_function.wrong-number-of-grads-raises", probe=_probe_extra_grads)


def _probe_custom_second_backward():
    y = _double_cls().apply(leaf()).sum()
    y.backward()
    return accepted_or_raised(lambda: y.backward(), accepted="ran")


single_edit("legacy_function.saved-never-freed", "reference.autograd.engine:execute",
            "if not retain_graph and node._saved:",
            "if not retain_graph and node._saved and not hasattr(type(node), '_forward_cls'):",
            models="custom-function nodes that keep their saved tensors after backward (PyNode not "
                   "calling release_variables)",
            rules=("legacy_function.saved-tensors-after-free-message",
                   "legacy_function.second-backward-without-retain-graph"), probe=_probe_custom_second_backward)


def _probe_container():
    class Pair(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2, x * 3]

        @staticmethod
        def backward(ctx, a, b):
            return a + b

    return type(Pair.apply(leaf())).__name__


single_edit("legacy_function.output-list-becomes-tuple", "reference.autograd.function:_apply",
            "return container(results)", "return tuple(results)",
            models="multiple outputs always returned as a tuple whatever forward returned",
            rules="legacy_function.output-container-preserved", probe=_probe_container)


def _probe_save_none():
    seen = []

    class SaveNone(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(len(ctx.saved_tensors))
            return g * 2

    SaveNone.apply(leaf()).sum().backward()
    return seen


single_edit("legacy_function.saved-none-dropped", "reference.autograd.function:FunctionCtx.saved_tensors",
            "return tuple(None if s is None else s.unpack(self, True) for s in saved)",
            "return tuple(s.unpack(self, True) for s in saved if s is not None)",
            models="None entries of save_for_backward dropped (positions of the other tensors shift)",
            rules="legacy_function.save-none-roundtrip", probe=_probe_save_none)


def _probe_custom_version():
    x = leaf()
    y = x * 1
    out = _double_cls().apply(y)
    y.add_(1)
    return accepted_or_raised(lambda: out.sum().backward())


single_edit("legacy_function.saved-tensors-unchecked", "reference.autograd.function:FunctionCtx.saved_tensors",
            "return tuple(None if s is None else s.unpack(self, True) for s in saved)",
            "return tuple(None if s is None else (s._tensor if s._tensor is not None else s.unpack(self, True)) "
            "for s in saved)",
            models="ctx.saved_tensors skipping the version check built-in nodes make (custom functions "
                   "read overwritten inputs)",
            rules="legacy_function.saved-tensors-version-check", probe=_probe_custom_version)


def _probe_subclass_node_name():
    class Sub(_double_cls()):
        pass

    return Sub.apply(leaf()).grad_fn.name()


@mutant("legacy_function.subclass-node-named-after-base",
        models="a framework that makes one node class per Function that defines forward, so a "
               "subclass's nodes carry its base's name",
        rules=("legacy_function.grad-fn-name",), probe=_probe_subclass_node_name)
def _():
    """A subclass of a Function that defines forward reuses its base's node class."""
    from reference.autograd.function import Function

    init = original("reference.autograd.function:FunctionMeta.__init__")

    def init_named_after_base(cls, name, bases, attrs):
        init(cls, name, bases, attrs)
        if bases and bases[0] is not Function and "forward" in vars(bases[0]):
            cls._backward_cls = bases[0]._backward_cls

    replace("reference.autograd.function:FunctionMeta.__init__", init_named_after_base)
