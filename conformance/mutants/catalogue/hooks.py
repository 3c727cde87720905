"""Curated mutants of the hooks suite's area: hooks: their order, how often they fire, what their
return value does, where they are kept.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

from conformance.mutants import edit, mutant, replace, single_edit
from conformance.mutants.catalogue.shared import accepted_or_raised, double_function, fw, leaf


def _probe_hook_order():
    x = leaf()
    seen = []
    x.register_hook(lambda g: seen.append("first"))
    x.register_hook(lambda g: seen.append("second"))
    (x * 2).sum().backward()
    return seen


single_edit("hooks.tensor-hooks-reversed", "reference.autograd.hooks:call_tensor_hooks",
            "for hook in tuple(hooks.values()):", "for hook in tuple(reversed(hooks.values())):",
            models="hooks kept in a stack (last registered runs first), as Keras callbacks pushed onto a "
                   "list and popped, or an engine that prepends each new hook",
            rules="hooks.chain-in-registration-order", probe=_probe_hook_order)


def _probe_leaf_hook_count():
    x = leaf()
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 2).sum().backward()
    return len(calls)


single_edit("hooks.leaf-hook-fires-twice", "reference.autograd.hooks:run_leaf_hooks",
            "grads[0] = call_tensor_hooks(hooks, grads[0], ops)",
            "grads[0] = call_tensor_hooks(hooks, call_tensor_hooks(hooks, grads[0], ops), ops)",
            models="a leaf's hooks run both as tensor hooks and as accumulator pre-hooks (two registration "
                   "paths for leaves, the duplication PyTorch 2.0 removed by moving leaf hooks onto AccumulateGrad)",
            rules="hooks.leaf-hook-fires-once-per-backward", probe=_probe_leaf_hook_count)


def _probe_removed_handle():
    x = leaf()
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    handle.remove()
    (x * 2).sum().backward()
    return len(calls)


single_edit("hooks.removed-handle-still-fires", "reference.handles:RemovableHandle.remove",
            "hooks.pop(self.id, None)", "pass",
            models="a handle that removes its hook from a copy of the hook list (hooks copied at "
                   "registration, so remove() edits the wrong container)",
            rules=("hooks.register-hook-returns-handle", "hooks.handle-remove-idempotent"), probe=_probe_removed_handle)


def _probe_remove_twice():
    x = leaf()
    handle = x.register_hook(lambda g: None)
    handle.remove()
    handle.remove()
    return "ok"


single_edit("hooks.second-remove-raises", "reference.handles:RemovableHandle.remove",
            "hooks.pop(self.id, None)", "del hooks[self.id]",
            models="a handle deleting its key unconditionally (KeyError on the second remove), as "
                   "hand-written handle classes in several frameworks do",
            rules="hooks.handle-remove-idempotent", probe=_probe_remove_twice)


def _probe_prehook_order():
    x = leaf()
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append("tensor"))
    y.grad_fn.register_prehook(lambda gs: seen.append("node"))
    y.sum().backward()
    return seen


@mutant("hooks.node-prehooks-before-tensor-hooks",
        models="tensor hooks implemented as node post-processing after the node's own pre-hooks "
               "(PyTorch < 2.0 ran tensor hooks and node pre-hooks from one list in registration order)",
        rules=("hooks.tensor-prehooks-before-node-prehooks", "engine.backward-call-chain"),
        probe=_probe_prehook_order)
def _():
    """A node's pre-hooks run before the hooks registered through its output tensors."""
    edit("reference.autograd.engine:execute", "_run_tensor_hooks(node, extras, grads, ops)",
         "(extras is not None and extras.pre_hooks) or _run_tensor_hooks(node, extras, grads, ops)")
    edit("reference.autograd.hooks:run_node_with_hooks", "grad_outputs = None",
         "if extras.pre_hooks:\n"
         "    from reference.autograd.engine import _run_tensor_hooks\n"
         "    _run_tensor_hooks(node, extras, grads, ops)\n"
         "grad_outputs = None")


def _probe_leaf_hook_sees_grad():
    x = leaf()
    seen = []
    x.register_hook(lambda g: seen.append(None if x.grad is None else x.grad.tolist()))
    (x * 2).sum().backward()
    return seen


single_edit("hooks.leaf-hook-after-accumulation", "reference.autograd.hooks:run_leaf_hooks",
            "grads[0] = call_tensor_hooks(hooks, grads[0], ops)",
            "from reference.autograd.accumulate import accumulate_into_leaf\n"
            "accumulate_into_leaf(leaf, grads[0], ops)\n"
            "call_tensor_hooks(hooks, grads[0], ops)\n"
            "grads[0] = None",
            models="leaf hooks run as notifications after the gradient is stored (the post-accumulate "
                   "order used for the wrong kind of hook; MXNet-style grad callbacks)",
            rules="hooks.leaf-hook-before-accumulation", probe=_probe_leaf_hook_sees_grad)


def _probe_hook_replaces():
    x = leaf()
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    return x.grad.tolist()


single_edit("hooks.hook-return-ignored", "reference.autograd.hooks:call_tensor_hooks",
            "value = result", "result = value",
            models="hooks treated as observers whose return value is dropped (TensorFlow's "
                   "tape watchers, OneFlow hooks before returning a tensor was supported)",
            rules="hooks.return-none-keeps-tensor-replaces", probe=_probe_hook_replaces)


def _probe_hook_bad_shape():
    x = leaf()
    x.register_hook(lambda g: fw().ones(5))
    try:
        (x * 2).sum().backward()
        return "accepted"
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__


single_edit("hooks.hook-return-unvalidated", "reference.autograd.hooks:call_tensor_hooks",
            "_check_hook_result(hook, value, result)", "pass",
            models="an engine that trusts a hook's returned tensor (shape/dtype/device unchecked; "
                   "PyTorch's check_single_result validates it)",
            rules=("hooks.return-metadata-validated", "hooks.return-type-validated"), probe=_probe_hook_bad_shape)


def _probe_grad_leaf_untouched():
    x, w = leaf(), leaf()
    fw().autograd.grad((x * w).sum(), x)
    return w.grad is None


single_edit("hooks.whole-graph-runs-for-grad", "reference.autograd.engine:_plan",
            "    if captures is None:\n        executable = seen", "if True:\n    executable = seen",
            models="an engine without graph-task pruning: autograd.grad runs every reachable node "
                   "(PyTorch's GraphTask exec_info restricts it to the paths to the inputs)",
            rules=("hooks.off-path-never-fire", "engine.grad-returns-without-accumulating"),
            probe=_probe_grad_leaf_untouched)


def _probe_post_accumulate_sees():
    x = leaf()
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(None if t.grad is None else t.grad.tolist()))
    (x * 2).sum().backward()
    return seen


@mutant("hooks.post-accumulate-before-store",
        models="post-accumulate-grad hooks fired from the accumulator's pre-hook slot, before the "
               "gradient lands (the order PyTorch 2.1 introduced the hook to guarantee)",
        rules="hooks.post-accumulate-after-grad-in-order", probe=_probe_post_accumulate_sees)
def _():
    """Post-accumulate-grad hooks run before the gradient is stored."""
    replace("reference.autograd.accumulate:_post_hooks_first", _post_hooks_first)
    edit("reference.autograd.accumulate:accumulate_into_leaf", "store_grad(variable, grad, ops, steal, leaf=True)",
         "_post_hooks_first(variable)\nstore_grad(variable, grad, ops, steal, leaf=True)\nreturn")


def _post_hooks_first(variable):
    for hook in tuple((variable._post_accumulate_hooks or {}).values()):
        hook(variable)


def _probe_post_accumulate_return():
    x = leaf()
    x.register_post_accumulate_grad_hook(lambda t: t * 2)
    return accepted_or_raised(lambda: (x * 2).sum().backward())


single_edit("hooks.post-accumulate-return-accepted", "reference.autograd.hooks:run_post_accumulate_hooks",
            "raise RuntimeError(POST_ACCUMULATE_RETURN)", "pass",
            models="post-accumulate hooks whose return value is silently dropped (the user believes a "
                   "returned tensor replaced .grad)",
            rules="hooks.post-accumulate-must-return-none", probe=_probe_post_accumulate_return)


def _probe_retain_grad_sees_hooks():
    x = leaf()
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    return y.grad.tolist()


@mutant("hooks.retain-grad-before-tensor-hooks",
        models="retain_grad implemented as an ordinary tensor hook in registration order "
               "(PyTorch < 2.0, where a hook registered after retain_grad was not seen by .grad)",
        rules="hooks.retain-grad-sees-all-tensor-hooks", probe=_probe_retain_grad_sees_hooks)
def _():
    """retain_grad stores the gradient before the tensor hooks run."""
    replace("reference.autograd.engine:_store_retained", _store_retained)
    edit("reference.autograd.engine:_run_tensor_hooks",
         "    if extras.tensor_pre_hooks:", "_store_retained(extras, grads, ops)\nif extras.tensor_pre_hooks:",
         "    if extras.retains_grad:", "    if False:")


def _store_retained(extras, grads, ops):
    from reference.autograd.accumulate import store_grad

    for nr, tensor_ref in (extras.retains_grad or {}).items():
        tensor = tensor_ref()
        if tensor is not None and grads[nr] is not None:
            store_grad(tensor, grads[nr], ops)


def _probe_leaf_hook_persists():
    x = leaf()
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    return len(calls)


@mutant("hooks.leaf-hooks-on-accumulator",
        models="leaf tensor hooks stored on the leaf's current AccumulateGrad node, which dies "
               "with the graph (the difference between Tensor.register_hook and grad_fn-node hooks "
               "in PyTorch; OneFlow's leaf hooks attached to the accumulate node)",
        rules="hooks.leaf-hooks-persist-across-graphs", probe=_probe_leaf_hook_persists)
def _():
    """`Tensor.register_hook` on a leaf registers a pre-hook on the accumulator node."""
    replace("reference.tensor:_register_on_accumulator", _register_on_accumulator)
    edit("reference.tensor:Tensor.register_hook", "return add_hook(self._leaf_hooks, hook)",
         "return _register_on_accumulator(self, hook)")


def _register_on_accumulator(leaf, hook):
    from reference.ops.recording import grad_accumulator

    def prehook(grads):
        result = hook(grads[0])
        return None if result is None else (result,)

    return grad_accumulator(leaf).register_prehook(prehook)


def _probe_hooks_each_backward():
    x = leaf()
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(1))
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    return len(calls)


single_edit("hooks.one-shot-hooks", "reference.autograd.hooks:call_tensor_hooks",
            "for hook in tuple(hooks.values()):",
            "pending = tuple(hooks.values())\nhooks.clear()\nfor hook in pending:",
            models="hooks consumed when they fire (one-shot callbacks, like TensorFlow's tape that is "
                   "spent after gradient())",
            rules=("hooks.retain-graph-hooks-fire-each-backward", "hooks.leaf-hooks-persist-across-graphs"),
            probe=_probe_hooks_each_backward)


def _probe_hook_no_grad_tensor():
    return accepted_or_raised(lambda: fw().tensor([1.0]).register_hook(lambda g: None))


single_edit("hooks.hook-on-tensor-without-grad", "reference.tensor:Tensor.register_hook",
            "if not self._requires_grad:", "if False:",
            models="a framework that accepts a hook on a tensor that never gets a gradient (the hook "
                   "silently never fires)",
            rules="hooks.register-hook-needs-requires-grad", probe=_probe_hook_no_grad_tensor)


def _probe_post_hook_nonleaf():
    return accepted_or_raised(lambda: (leaf() * 2).register_post_accumulate_grad_hook(lambda t: None))


single_edit("hooks.post-accumulate-on-non-leaf", "reference.tensor:Tensor.register_post_accumulate_grad_hook",
            "if self._node is not None:", "if False:",
            models="post-accumulate hooks accepted on non-leaves, where nothing is ever accumulated",
            rules="hooks.post-accumulate-hook-leaf-only", probe=_probe_post_hook_nonleaf)


def _probe_custom_node_hook():
    Double = double_function()

    y = Double.apply(leaf())
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append(1))
    y.sum().backward()
    return len(calls)


@mutant("hooks.custom-function-node-hooks-skipped",
        models="custom-function nodes executed by a separate path that bypasses the node-hook calls "
               "(a Python-function node type that is not the engine's generic Node)",
        rules="hooks.node-hooks-custom-function", probe=_probe_custom_node_hook)
def _():
    """Custom-function nodes take the hook-free path, late-registered post-hooks included."""
    edit("reference.autograd.engine:execute", "if extras is None:",
         "if extras is None or hasattr(type(node), '_forward_cls'):",
         "if node._extras is not None and node._extras.post_hooks:",
         "if node._extras is not None and node._extras.post_hooks and not hasattr(type(node), '_forward_cls'):")


def _probe_hook_version():
    x = leaf()
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    y.mul_(3)
    y.sum().backward()
    return seen


@mutant("hooks.hooks-follow-inplace",
        models="tensor hooks kept on the tensor object and run for its newest version (PyTorch binds "
               "a hook to the grad_fn current at registration, so an in-place op leaves it on the old one)",
        rules="hooks.hook-bound-to-version", probe=_probe_hook_version)
def _():
    """An in-place op moves the tensor's hooks to its new grad_fn."""
    replace("reference.ops.inplace:_move_hooks", _move_hooks)
    edit("reference.ops.recording:rebase_history", "    attach(tensor, node)",
         "_move_hooks(old, tensor._output_nr, node)\nattach(tensor, node)")


def _move_hooks(old, nr, node):
    if old is None or old._extras is None or not old._extras.tensor_pre_hooks:
        return
    hooks = old._extras.tensor_pre_hooks.pop(nr, None)
    if hooks:
        node._tensor_hooks_for(0).update(hooks)
