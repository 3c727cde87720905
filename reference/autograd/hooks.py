"""Running the hooks of a backward: every hook the engine calls, and the checks on what they return.

Per node, in this order (PyTorch's): the hooks registered through tensors (a leaf's own
``register_hook`` hooks, or a non-leaf's, kept on its grad_fn by output number), the
node's pre-hooks, ``apply``, the node's post-hooks; for a leaf, after its gradient is
stored, its post-accumulate-grad hooks. Hooks see tensors; the engine's gradients are
raw arrays in a plain backward, so ``ops`` converts on the way in and out.
"""
from __future__ import annotations

from reference.tensor import Tensor

NONE_REPLACED = "can't replace a None gradient with a non-None value"
POST_ACCUMULATE_RETURN = "Tensor post accumulate grad hooks should return None."


def run_leaf_hooks(leaf, grads, ops) -> None:
    """A leaf's tensor hooks, on the gradient its AccumulateGrad received, before it is stored."""
    # rules: hooks.leaf-hook-before-accumulation, hooks.leaf-hook-fires-once-per-backward, hooks.leaf-hooks-persist-across-graphs
    hooks = leaf._leaf_hooks
    if hooks:
        grads[0] = call_tensor_hooks(hooks, grads[0], ops)


def run_tensor_pre_hooks(tensor_pre_hooks, grads, ops) -> None:
    """A non-leaf's tensor hooks (``{output_nr: HookDict}`` of its node), on each output's gradient."""
    for nr, hooks in tensor_pre_hooks.items():
        if hooks:
            grads[nr] = call_tensor_hooks(hooks, grads[nr], ops)


def call_tensor_hooks(hooks, grad, ops):
    value = None if grad is None else ops.as_tensor(grad)
    # rules: hooks.chain-in-registration-order, hooks.handle-remove-mid-backward, hooks.retain-graph-hooks-fire-each-backward
    for hook in tuple(hooks.values()):
        result = hook(value)
        # rule: hooks.return-none-keeps-tensor-replaces
        if result is None:
            continue
        if value is None:
            raise RuntimeError(NONE_REPLACED)
        _check_hook_result(hook, value, result)
        value = result
    if value is None:
        return None
    return ops.from_tensor(value)


def _check_hook_result(hook, before, after):
    # rule: hooks.return-type-validated
    if not isinstance(after, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(after).__name__}'")
    name = getattr(hook, "__name__", type(hook).__name__)
    # rule: hooks.return-metadata-validated
    if after.shape != before.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    if after.dtype is not before.dtype:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was reference.{before.dtype.legacy_name} "
            f"got reference.{after.dtype.legacy_name})"
        )
    if after.device != before.device:
        raise RuntimeError(f"hook '{name}' has changed the device of value")


def run_node_with_hooks(node, extras, grads, ops, task_nodes=None):
    """Node pre-hooks, apply, node post-hooks (hooks see tensors, apply sees ``ops`` values).

    With ``task_nodes`` (a graph task limited to some inputs), post-hooks see None for the
    gradients this task does not need, as in PyTorch.
    """
    if extras.pre_hooks:
        outputs = tuple(None if g is None else ops.as_tensor(g) for g in grads)
        # rules: hooks.node-hooks-builtin, hooks.node-hooks-custom-function
        for hook in tuple(extras.pre_hooks.values()):
            result = hook(outputs)
            if result is not None:
                outputs = _check_node_hook_result(node, result, len(outputs), "pre-hook")
        # in the engine's own list, and the tensors let go: then only a tensor a hook kept
        # holds a gradient beside it, so AccumulateGrad may still take the buffer over
        # (rule: identity.grad-takes-over-unshared-buffer)
        grads[:] = [None if g is None else ops.from_tensor(g) for g in outputs]
        outputs = result = None
    grad_outputs = None
    if extras.post_hooks:
        grad_outputs = tuple(None if g is None else ops.as_tensor(g) for g in grads)
    if grads[0] is None and node._none_passes:
        grad_inputs = (None,) * len(node._next_functions)
    else:
        grad_inputs = node.apply(ops, grads)
    # rule: hooks.hooks-added-while-node-runs -- pre-hooks run from a snapshot (one a pre-hook adds waits
    # for the next pass); the post-hooks are read after the function (one a pre-hook added runs now)
    post_hooks = extras.post_hooks  # read again: an unpack hook of this node may have added one
    if post_hooks:
        if grad_outputs is None:  # registered while the node ran: it never saw the gradients in
            grad_outputs = (None,) * len(grads)
        grad_inputs = run_post_hooks(node, post_hooks, grad_inputs, grad_outputs, ops, task_nodes)
    return grad_inputs


def run_post_hooks(node, post_hooks, grad_inputs, grad_outputs, ops, task_nodes):
    """The node's post-hooks on what its backward returned; ``grad_outputs`` are tensors (or None)."""
    if task_nodes is not None:
        grad_inputs = [g if child is not None and child in task_nodes else None
                       for (child, _), g in zip(node._next_functions, grad_inputs)]
    inputs = tuple(None if g is None else ops.as_tensor(g) for g in grad_inputs)
    for hook in tuple(post_hooks.values()):
        result = hook(inputs, grad_outputs)
        if result is not None:
            inputs = _check_node_hook_result(node, result, len(inputs), "hook")
    return [None if g is None else ops.from_tensor(g) for g in inputs]


def _check_node_hook_result(node, result, expected, kind):
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != expected:
        raise RuntimeError(
            f"{kind} of {node.name()} returned an incorrect number of gradients (expected {expected}, got {len(result)})"
        )
    return tuple(result)


def run_post_accumulate_hooks(leaf) -> None:
    """A leaf's post-accumulate-grad hooks, after its ``.grad`` was updated: they see the tensor."""
    for hook in tuple(leaf._post_accumulate_hooks.values()):
        result = hook(leaf)
        if result is None or result is leaf:  # torch tolerates returning the tensor itself
            continue
        if not isinstance(result, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
        # rule: hooks.post-accumulate-must-return-none
        raise RuntimeError(POST_ACCUMULATE_RETURN)
