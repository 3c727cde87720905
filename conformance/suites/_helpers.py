"""Helpers the suites share: the prerequisite steps (each names the rule it depends on) and the
few checks more than one suite repeats.

A prerequisite step is something a test needs from *another* rule before it can reach its own
check (a hook handle, a weak reference, an attribute on a tensor, a ``(node, nr)`` pair of
``next_functions``, a node hook). If it fails the test ends BLOCKED by that rule
(``conformance.api.prerequisite``), so one root cause gives one DIVERGES (the rule's own test)
and BLOCKED everywhere else, the same in every suite. A test of the prerequisite rule itself that
uses the same helper is judged DIVERGES, not BLOCKED (the plugin compares ``blocked_by`` with the
test's own rule).
"""
from __future__ import annotations

import re
import weakref

from conformance.api import prerequisite, raises

#: ``t.register_hook(fn)`` returns a handle with ``remove()``.
HOOK_HANDLE = "hooks.register-hook-returns-handle"
#: ``handle.remove()`` works (and twice is harmless).
HOOK_REMOVE = "hooks.handle-remove-idempotent"
#: ``weakref.ref(t)`` is allowed on a tensor.
TENSOR_WEAKREF = "identity.weakref-survives-framework-ownership"
#: ``t.name = value`` is allowed on a tensor.
TENSOR_ATTRIBUTES = "identity.attributes-survive-framework-ownership"
#: ``node.next_functions`` holds ``(node, input_nr)`` pairs.
NEXT_FUNCTIONS_PAIRS = "identity.next-functions-pairs"
#: ``backward(inputs=...)`` restricts accumulation to those inputs.
BACKWARD_INPUTS = "engine.backward-inputs-restricts"
#: A leaf's tensor hooks run once per backward.
LEAF_HOOK_ONCE = "hooks.leaf-hook-fires-once-per-backward"
#: ``y.grad_fn is y.grad_fn`` (one Python object per node).
NODE_IDENTITY = "identity.grad-fn-same-object"


def hook_handle(t, fn, what: str = "t.register_hook(fn)"):
    """``t.register_hook(fn)``, which must return a removable handle (else BLOCKED)."""
    with prerequisite(HOOK_HANDLE, what=what) as pre:
        handle = t.register_hook(fn)
        pre.check(callable(getattr(handle, "remove", None)),
                  f"register_hook returned a handle with remove() (it returned {handle!r})")
    return handle


def remove_handle(handle, what: str = "handle.remove()", fires=None):
    """``handle.remove()``; given ``fires`` (a callable that runs a backward and returns whether
    the removed hook ran), the hook must no longer run (else BLOCKED by the remove rule)."""
    with prerequisite(HOOK_REMOVE, what=what,
                      check=None if fires is None else (lambda: not fires())):
        handle.remove()


def tensor_weakref(t, callback=None, what: str = "weakref.ref to a tensor"):
    with prerequisite(TENSOR_WEAKREF, what=what) as pre:
        ref = weakref.ref(t) if callback is None else weakref.ref(t, callback)
        pre.check(ref() is t, "the weak reference dereferences to the tensor")
    return ref


def set_attr(t, name: str, value, what: str = "setting a Python attribute on a tensor"):
    with prerequisite(TENSOR_ATTRIBUTES, what=what) as pre:
        setattr(t, name, value)
        pre.check(getattr(t, name, None) is value, f"t.{name} reads back what was set")


def next_pair(adapter, node, i: int = 0, what: str = "next_functions entries as (node, input_nr) pairs"):
    """``node.next_functions[i]`` (through ``adapter.next_functions``) as a ``(node, input_nr)``
    pair (else BLOCKED)."""
    with prerequisite(NEXT_FUNCTIONS_PAIRS, what=what) as pre:
        entry = adapter.next_functions(node)[i]
        producer, nr = entry
        pre.check(isinstance(nr, int) and nr >= 0,
                  f"next_functions[{i}] is a (node, input_nr) pair (it is {entry!r})")
    return producer, nr


def producer(adapter, node, i: int = 0):
    """``node.next_functions[i][0]``: the node feeding input ``i`` (through
    ``adapter.next_nodes``: a framework that lists producers without ``input_nr`` still has
    them); an input whose entry is None or missing is BLOCKED by the next_functions rule."""
    with prerequisite(NEXT_FUNCTIONS_PAIRS, what=f"the node feeding input {i}") as pre:
        nodes = adapter.next_nodes(node)
        pre.check(len(nodes) > i and nodes[i] is not None,
                  f"next_functions[{i}] names the node feeding input {i} (entries: {nodes!r})")
    return nodes[i]


def leaf_hooks_fire_once(adapter, fw, device):
    """Check, before a test counts what a leaf hook saw, that a leaf hook runs once per backward."""
    with prerequisite(LEAF_HOOK_ONCE, what="a leaf hook in a plain backward") as pre:
        x = fw.ones(2, requires_grad=True, device=device)
        calls = []
        x.register_hook(lambda g: calls.append(1))
        adapter.backward(fw.sum(x * 2))
        pre.check(len(calls) == 1, f"a leaf hook ran once in one backward (it ran {len(calls)} times)")


def require_forward_ad(adapter):
    """Forward-mode AD is the feature of every forward_levels rule: UNSUPPORTED without it."""
    adapter.require("forward_ad")


def expect_error(fn, exc_type, pattern, what):
    """Run ``fn``; it must raise ``exc_type`` with a message matching ``pattern`` (else DIVERGES)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - any other exception is a divergence here
        assert isinstance(exc, exc_type) and re.search(pattern, str(exc)), (
            f"{what}: expected {exc_type.__name__} matching {pattern!r}, "
            f"got {type(exc).__name__}: {exc}"
        )
        return exc
    raise AssertionError(f"{what}: no error (expected {exc_type.__name__} matching {pattern!r})")


def key_words(message: str, *words: str) -> list[str]:
    """The key words (case-insensitive regexes) that ``message`` lacks."""
    return [w for w in words if not re.search(w, message, flags=re.IGNORECASE)]


def expect_refusal(fn, what):
    """Run ``fn``; it must be refused: any exception but a missing method (else DIVERGES;
    a missing method is UNSUPPORTED). Returns the exception, for a class or wording rule.

    Why not ``expect_error``: a behaviour rule judges that the call is refused, not torch's
    class or sentence; those are judged once, by the suite's class/wording rule.
    """
    with raises(Exception, what=what):
        try:
            fn()
        except Exception as exc:
            refusal = exc
            raise
    return refusal


def fresh_script_calling(fn) -> str:
    """The script for :func:`conformance.api.in_fresh_interpreter` that calls
    ``fn(fw, adapter, *argv)``: ``fn`` is a function of a suites helper module, so what it
    touches is read (spelling, features, ``aside``) like any suite code, never hidden in a
    string."""
    module, name = fn.__module__, fn.__name__
    if not module.startswith("conformance.suites."):
        raise ValueError(f"{module}.{name}: a fresh-interpreter script calls a suites helper")
    return f"from {module} import {name}\n{name}(fw, adapter, *argv)\n"


def custom_function_refusals(adapter, fw, device):
    """description -> what each refusal of a custom Function raised (None: it raised nothing; a
    case whose feature is missing is left out): mark_dirty on a leaf, on an input forward does not
    return, and backward after a saved input was modified in place. Whether each
    must raise is its own legacy_function rule; their class is engine.errors-are-runtime-errors."""
    import warnings

    from conformance.api import Unsupported

    def mark_dirty(ctx, t):
        adapter.require("mark_dirty")
        if getattr(ctx, "mark_dirty", None) is None:
            raise Unsupported(f"{adapter.name} has no ctx.mark_dirty", feature="mark_dirty")
        ctx.mark_dirty(t)

    class Dirty(fw.autograd.Function):        # changes its input in place and returns it:
        @staticmethod                         # applied in place (torch: marked dirty)
        def forward(ctx, inp):
            adapter.inplace(inp, "add_", 1)
            return inp

        @staticmethod
        def backward(ctx, g):
            return g

    class NotReturned(fw.autograd.Function):  # marks its input but returns another tensor
        @staticmethod
        def forward(ctx, a):
            adapter.inplace(a, "add_", 1)
            mark_dirty(ctx, a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Square(fw.autograd.Function):       # saves its input for backward
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return 2 * x * g

    def leaf():
        return fw.ones(2, requires_grad=True, device=device)

    def version_check():
        b = fw.clone(leaf())
        y = Square.apply(b)
        adapter.inplace(b, "add_", 1)
        adapter.backward(fw.sum(y))

    cases = {
        "mark_dirty on a leaf that requires grad": lambda: adapter.apply_in_place(Dirty, leaf()),
        "mark_dirty on an input forward does not return": lambda: NotReturned.apply(fw.clone(leaf())),
        "backward after a Function's saved input was modified in place": version_check,
    }
    errors = {}
    for what, case in cases.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                case()
        except Unsupported:
            continue
        except Exception as exc:  # noqa: BLE001 - its class is what the caller judges
            errors[what] = exc
        else:
            errors[what] = None
    return errors


def ctx_attributes_kept(adapter, fw, device):
    """Check, before a test stores something on a custom Function's ctx to observe something
    else, that an attribute set on ctx in forward is there in backward."""
    with prerequisite("legacy_function.apply-with-plain-methods",
                      what="an attribute set on ctx in forward, read in backward") as pre:
        class Scale(fw.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.k = 2.0
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k

        x = fw.ones(1, requires_grad=True, device=device)
        adapter.backward(fw.sum(Scale.apply(x)))
        pre.check(float(adapter.to_numpy(adapter.grad(x))[0]) == 2.0,
                  f"backward read the ctx attribute set in forward (x.grad = {adapter.to_numpy(adapter.grad(x))})")


def inplace_on_saved_refused(adapter, fw, device):
    """Check, before a test judges a version check on some other path, that backward refuses a
    graph whose saved intermediate was modified in place."""
    with prerequisite("engine.version-counter-error",
                      what="backward after a saved intermediate was modified in place") as pre:
        a = fw.clone(fw.ones(3, requires_grad=True, device=device))
        y = a * a
        adapter.inplace(a, "add_", 1)
        try:
            adapter.backward(fw.sum(y))
            refused = False
        except Exception:  # noqa: BLE001 - any refusal is the version check here
            refused = True
        pre.check(refused, "backward refused the graph whose saved tensor changed in place")
