"""How a gradient lands in ``.grad``: leaves (AccumulateGrad's body) and retained non-leaves.

A leaf's hooks, the tensor hooks before and the post-accumulate hooks after, are run by
``autograd.hooks``.

PyTorch's contract, kept here: the first gradient is stored as a tensor of its own (never
an alias of another tensor's gradient or of anything a user or hook holds, never the variable
itself): the incoming buffer itself when only the engine holds it, else a copy; later ones
are added in place, so references to ``x.grad`` see the sum, except under ``create_graph=True``,
where the sum is a new differentiable tensor and old references keep their old value.
"""
from __future__ import annotations

import threading

from reference.autograd.hooks import run_post_accumulate_hooks

#: Backwards on different threads may reach the same leaf; each update of a ``.grad`` is
#: made under this lock so that none is lost (PyTorch holds a per-leaf mutex there).
_grad_lock = threading.Lock()


def can_take_over(grad, references) -> bool:
    """Whether the raw gradient ``grad`` may become ``.grad`` itself: an array that owns its
    writable, C-contiguous memory and that nothing holds but the engine (as PyTorch steals the
    incoming buffer when its use count says so). ``references``: ``sys.getrefcount(grad)``
    taken by the caller where the engine's holders are known, less those holders; 1 (only
    getrefcount's own argument) when nothing else holds it.

    The count is taken in the caller, never here: passing ``grad`` into a Python function adds
    a reference for the call's duration when a frame-evaluation hook (PEP 523, installed by
    torch.compile's dynamo) is active, and the take-over then silently never happened."""
    # rules: legacy_function.backward-result-not-aliased, hooks.hook-result-not-aliased -- a
    # gradient the user still holds (what a custom backward or a hook returned) is copied
    # rule: engine.backward-gradient-argument-not-stored -- a gradient the caller passed to
    # backward is held by the caller's tensor too: it is copied, never taken over
    if references > 1 or getattr(grad, "base", True) is not None:
        return False
    flags = grad.flags
    return flags.c_contiguous and getattr(flags, "writeable", True)


def store_grad(variable, grad, ops, steal=False, leaf=False) -> None:
    """Add ``grad`` (an array, or a tensor under create_graph) into ``variable.grad``;
    with ``steal``, a first gradient is stored as it is instead of copied. A ``leaf``'s first
    gradient is copied into the leaf's layout, a retained non-leaf's is cloned (under
    create_graph the two differ in their grad_fn, CopyBackwards or CloneBackward0)."""
    with _grad_lock:
        _store_grad_locked(variable, grad, ops, steal, leaf)


def _store_grad_locked(variable, grad, ops, steal, leaf) -> None:
    current = variable._grad
    # rules: engine.accumulate-across-calls, gc_cycles.hook-returning-own-tensor
    if current is None:
        # rule: identity.grad-takes-over-unshared-buffer
        if steal:
            variable._grad = ops.as_tensor(grad)
        else:
            variable._grad = ops.fresh_leaf_grad(grad, variable) if leaf else ops.fresh_grad(grad)
    # rule: identity.create-graph-accumulates-out-of-place
    elif ops.differentiable:
        variable._grad = current + grad
    elif current._requires_grad:  # a grad with history (from create_graph): never mutate it
        variable._grad = ops.as_tensor(current._array + grad)
    else:
        # rules: identity.grad-accumulates-in-place, identity.grad-assignment-keeps-object
        current._array += ops.raw(grad)
        current._version_counter[0] += 1


def accumulate_into_leaf(variable, grad, ops, steal=False) -> None:
    """AccumulateGrad's body: store the gradient, then run post-accumulate-grad hooks.
    ``steal``: nothing else holds ``grad`` (an array), so a first gradient may be it."""
    if grad is None:
        return
    # rule: hooks.post-accumulate-after-grad-in-order -- store first, then the hooks
    store_grad(variable, grad, ops, steal, leaf=True)
    if variable._post_accumulate_hooks:
        run_post_accumulate_hooks(variable)
