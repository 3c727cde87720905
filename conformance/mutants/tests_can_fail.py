"""Planted bugs that show a fixed suite test can fail (issue 12, "every test can fail").

Each bug is one that an earlier version of its test could not see: a sentinel that outlived
what it watched, a weak reference to a transient wrapper, a test that never ran the engine, a
hook whose failed ``remove()`` was recorded as an observation, a rule judged in a process whose
history hid the bug. ``tests/harness/test_tests_can_fail.py`` runs each test on its bug. They are
not scored (``scored=False``): they exist for those tests, not for the mutation score.
"""
from __future__ import annotations

import gc
import weakref

from conformance.mutants import edit, mutant, original, replace


def _fw():
    import reference

    return reference


def _probe_retained_saved_object():
    fw = _fw()
    x = fw.ones(3, requires_grad=True)
    a = x * 2
    b = a * a
    ref = weakref.ref(a)
    del a
    b.sum().backward(retain_graph=True)
    gc.collect()
    return ref() is not None


def _drop_saved_objects(node):
    """Keep only a fresh wrapper of each saved input's values: gradients stay right, the
    saved Python object itself is let go."""
    from reference.tensor import Tensor

    for saved in node._saved:
        if getattr(saved, "_tensor", None) is not None:
            saved._tensor = Tensor._wrap(saved._tensor._array)
    return False


@mutant("engine.retain-graph-drops-saved-objects", scored=False,
        models="an engine that, asked to retain the graph, keeps copies of the saved values and "
               "releases the saved tensors themselves (a sentinel held by the graph node cannot see it)",
        rules=("engine.retain-graph-keeps-saved", "gc_cycles.retained-graph-keeps-saved-until-graph-dies"),
        probe=_probe_retained_saved_object)
def _():
    """backward(retain_graph=True) replaces each saved input by a fresh tensor with its values."""
    replace("reference.autograd.engine:_drop_saved_objects", _drop_saved_objects)
    edit("reference.autograd.engine:execute", "if not retain_graph and node._saved:",
         "if node._saved and (not retain_graph or _drop_saved_objects(node)):")


_KEPT: list = []


def _probe_nodes_kept():
    fw = _fw()
    x = fw.ones(2, requires_grad=True)
    ref = weakref.ref((x * 2).grad_fn)
    gc.collect()
    return ref() is not None


@mutant("engine.graph-nodes-never-freed", scored=False,
        models="a framework whose node registry keeps every graph node (and what it saved) alive",
        rules=("engine.deep-graph-freed",), probe=_probe_nodes_kept)
def _():
    """Every graph node is appended to a module-level list when it is made."""
    init = original("reference.autograd.graph:NodeBase.__init__")

    def keeping_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _KEPT.append(self)

    replace("reference.autograd.graph:NodeBase.__init__", keeping_init)


def _probe_hooks_kept():
    fw = _fw()
    x = fw.ones(2, requires_grad=True)

    class Owner:
        pass

    owner = Owner()
    ref = weakref.ref(owner)
    (x * 2).register_hook(lambda g, owner=owner: g)
    del owner
    gc.collect()
    return ref() is not None


@mutant("gc_cycles.tensor-hooks-never-freed", scored=False,
        models="a framework that keeps every registered tensor hook (and its closure) for good",
        rules=("gc_cycles.finalizer-collect-during-teardown-safe",), probe=_probe_hooks_kept)
def _():
    """Tensor.register_hook also appends each hook to a module-level list."""
    register = original("reference.tensor:Tensor.register_hook")

    def keeping_register(self, hook):
        _KEPT.append(hook)
        return register(self, hook)

    replace("reference.tensor:Tensor.register_hook", keeping_register)


def _probe_remove_refused():
    fw = _fw()
    x = fw.ones(2, requires_grad=True)
    handle = x.register_hook(lambda g: g)
    try:
        handle.remove()
    except RuntimeError:
        return "refused"
    return "removed"


@mutant("hooks.handle-remove-refused", scored=False,
        models="a framework whose hook handles cannot remove their hook (remove() raises)",
        rules=("hooks.handle-remove-idempotent",), probe=_probe_remove_refused)
def _():
    """RemovableHandle.remove raises instead of removing the hook."""
    def refuse(self):
        raise RuntimeError("remove() refused (planted bug)")

    replace("reference.handles:RemovableHandle.remove", refuse)


class _SharedGradMode:
    enabled = True


def _probe_grad_mode_shared():
    import threading

    from reference import grad_mode

    seen = []
    with grad_mode.no_grad():
        t = threading.Thread(target=lambda: seen.append(grad_mode.is_grad_enabled()))
        t.start()
        t.join()
    return seen[0]


@mutant("engine.grad-mode-process-global", scored=False,
        models="a framework whose grad mode is one process-wide flag, not per thread",
        rules=("engine.threads-independent-graphs", "engine.grad-mode-thread-local"),
        probe=_probe_grad_mode_shared)
def _():
    """The grad-mode state is one object shared by every thread."""
    replace("reference.grad_mode:_state", _SharedGradMode())


def _probe_backward_result_unchecked():
    fw = _fw()

    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return fw.ones(3)

    x = fw.ones(2, requires_grad=True)
    try:
        F.apply(x).sum().backward()
    except RuntimeError:
        return "refused"
    return list(x.grad.shape)


@mutant("legacy_function.backward-result-unchecked", scored=False,
        models="a framework that stores whatever a custom backward returns (OneFlow 0.9.0: a leaf of "
               "shape (2,) ends with x.grad of shape (3,)), neither checking its shape nor casting its dtype",
        rules=("legacy_function.backward-result-shape-checked",
               "legacy_function.backward-result-cast-to-input-dtype"),
        probe=_probe_backward_result_unchecked)
def _():
    """The custom backward's results skip the shape check and the cast to the input's dtype."""
    edit("reference.autograd.function:BackwardCFunction._validate",
         "if tuple(result.shape) != shape:", "if False:",
         "if result.dtype != dtype:", "if False:")


def _probe_user_gradient_taken_over():
    fw = _fw()
    held = fw.ones(2)
    x = fw.ones(2, requires_grad=True)
    x.register_hook(lambda g: held)
    (x * 2).sum().backward()
    held.add_(1)
    return x.grad.tolist()


@mutant("hooks.user-gradient-taken-over", scored=False,
        models="an engine that makes a leaf's .grad the very buffer a hook or a custom backward "
               "returned, although the user still holds that tensor",
        rules=("hooks.hook-result-not-aliased", "legacy_function.backward-result-not-aliased"),
        probe=_probe_user_gradient_taken_over)
def _():
    """A leaf's first gradient is taken over whoever else holds it (no use-count check)."""
    replace("reference.autograd.graph:can_take_over",
            lambda grad, held: getattr(grad, "base", None) is None)


def _probe_gradient_argument_kept():
    fw = _fw()
    x = fw.ones(3, requires_grad=True)
    g = fw.ones(3) * 2
    x.backward(g)
    g.mul_(10)           # shared memory shows in x.grad
    return x.grad.tolist()


@mutant("engine.gradient-argument-stored-as-grad", scored=False,
        models="an engine that keeps the caller's gradient tensor as a leaf's .grad (no copy)",
        rules=("engine.backward-gradient-argument-not-stored",), probe=_probe_gradient_argument_kept)
def _():
    """AccumulateGrad takes over every first gradient, the caller's own included."""
    replace("reference.autograd.graph:can_take_over", lambda grad, held: True)


def _probe_no_grad_decorator():
    fw = _fw()
    x = fw.ones(2, requires_grad=True)
    return fw.no_grad()(lambda: x * 2)().grad_fn is None


@mutant("engine.grad-mode-decorator-no-op", scored=False,
        models="grad-mode switches that work as context managers but do nothing as decorators",
        rules=("engine.grad-mode-switch-spellings",), probe=_probe_no_grad_decorator)
def _():
    """no_grad()/enable_grad()/inference_mode() used as a decorator return the function as it is."""
    replace("reference.grad_mode:_GradModeContext.__call__", lambda self, fn: fn)
