"""How a gradient lands in ``.grad``: leaves (AccumulateGrad's body) and retained non-leaves.

A leaf's hooks, the tensor hooks before and the post-accumulate hooks after, are run by
``autograd.hooks``.

PyTorch's contract, kept here: the first gradient is stored as a tensor of its own (never
an alias of another tensor's gradient, never the variable itself); later ones are added
in place, so references to ``x.grad`` see the sum, except under ``create_graph=True``,
where the sum is a new differentiable tensor and old references keep their old value.
"""
from __future__ import annotations

import threading

from reference.autograd.hooks import run_post_accumulate_hooks

#: Backwards on different threads may reach the same leaf; each update of a ``.grad`` is
#: made under this lock so that none is lost (PyTorch holds a per-leaf mutex there).
_grad_lock = threading.Lock()


def store_grad(variable, grad, ops) -> None:
    """Add ``grad`` (an array, or a tensor under create_graph) into ``variable.grad``."""
    with _grad_lock:
        _store_grad_locked(variable, grad, ops)


def _store_grad_locked(variable, grad, ops) -> None:
    current = variable._grad
    # rules: engine.accumulate-across-calls, gc_cycles.hook-returning-own-tensor
    if current is None:
        variable._grad = ops.fresh_grad(grad)
    # rule: identity.create-graph-accumulates-out-of-place
    elif ops.differentiable:
        variable._grad = current + grad
    elif current._requires_grad:  # a grad with history (from create_graph): never mutate it
        variable._grad = ops.as_tensor(current._data + grad)
    else:
        # rules: identity.grad-accumulates-in-place, identity.grad-assignment-keeps-object
        current._data += ops.raw(grad)
        current._version_counter[0] += 1


def accumulate_into_leaf(variable, grad, ops) -> None:
    """AccumulateGrad's body: store the gradient, then run post-accumulate-grad hooks."""
    if grad is None:
        return
    # rule: hooks.post-accumulate-after-grad-in-order -- store first, then the hooks
    store_grad(variable, grad, ops)
    if variable._post_accumulate_hooks:
        run_post_accumulate_hooks(variable)
