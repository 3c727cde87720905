"""The curated mutants: lifetime bugs of the kinds real frameworks have, planted in the reference.

Each entry: ``@mutant(id, models=..., rules=..., probe=...)`` on a function that applies the bug
with ``edit`` (a one-snippet source edit of a reference function) or ``replace``. The probe's
value differs on the mutant (checked by tests/mutants and by ``python -m conformance.mutants``).
"""
from __future__ import annotations

import gc
import weakref

from conformance.mutants import edit, mutant, original, replace


def _fw():
    import reference

    return reference


def _leaf(*values):
    return _fw().tensor(list(values) or [1.0, 2.0], requires_grad=True)


def _collected(make):
    """Whether what ``make()`` returns (an object to watch, anything else to drop) is freed
    by reference counting alone, with the collector off."""
    gc.disable()
    try:
        watched = make()
        ref = weakref.ref(watched)
        del watched
        return ref() is None
    finally:
        gc.enable()


# == identity ===================================================================================
def _probe_grad_is_grad():
    x = _leaf()
    (x * 2).sum().backward()
    return x.grad is x.grad


@mutant("identity.fresh-grad-wrapper-per-read",
        models="PyTorch before PyObject preservation (pytorch#22884) and OneFlow's pybind11 tensor "
               "wrapper: every read of .grad wraps the C++ gradient in a new Python object",
        rules=("identity.grad-same-object", "identity.grad-stable-id"), probe=_probe_grad_is_grad)
def _():
    """`.grad` returns a new tensor object sharing the gradient's storage on each read."""
    edit("reference.tensor:Tensor.grad", "return self._grad",
         "return None if self._grad is None else Tensor._wrap(self._grad._array)")


def _probe_saved_self_attr():
    x = _leaf()
    x.tag = "mine"
    y = x * x
    return getattr(y.grad_fn._saved_self, "tag", None)


@mutant("identity.saved-input-rewrapped",
        models="PyTorch < 1.9 SavedVariable::unpack building a new Variable (and a new PyObject) "
               "for a saved leaf: user attributes, subclass and weakrefs are lost",
        rules=("identity.saved-input-same-object", "identity.attributes-survive-framework-ownership"),
        probe=_probe_saved_self_attr)
def _():
    """A saved input is unpacked as a new tensor sharing data and version counter."""
    edit("reference.autograd.graph:SavedTensor.unpack", "return tensor if as_tensor else tensor._array",
         "return _fresh_alias(tensor) if as_tensor else tensor._array")
    replace("reference.autograd.graph:_fresh_alias", _fresh_alias)


def _fresh_alias(tensor):
    from reference.tensor import Tensor

    out = Tensor._wrap(tensor._array)
    out._version_counter = tensor._version_counter
    out._node, out._output_nr, out._requires_grad = tensor._node, tensor._output_nr, tensor._requires_grad
    return out


def _probe_grad_fn_is():
    y = _leaf() * 2
    return y.grad_fn is y.grad_fn


@mutant("identity.grad-fn-fresh-per-read",
        models="OneFlow's and MXNet's Python grad_fn/FunctionNode proxies, created per attribute read",
        rules=("identity.grad-fn-same-object", "identity.grad-fn-stable-id"), probe=_probe_grad_fn_is)
def _():
    """`grad_fn` returns a shallow copy of the node on each read."""
    edit("reference.tensor:Tensor.grad_fn", "return self._node",
         "import copy\n    return None if self._node is None else copy.copy(self._node)")


def _probe_grad_assign():
    x = _leaf()
    g = _fw().ones(2)
    x.grad = g
    return x.grad is g


@mutant("identity.grad-assignment-copies",
        models="MXNet's attach_grad buffers and frameworks that copy an assigned gradient into "
               "their own storage instead of keeping the user's tensor",
        rules="identity.grad-assignment-keeps-object", probe=_probe_grad_assign)
def _():
    """Assigning `.grad` stores a copy of the tensor."""
    edit("reference.tensor:Tensor.grad", "self._grad = value",
         "self._grad = value if value is None else value.clone()", setter=True)


def _probe_accumulate_in_place():
    x = _leaf()
    (x * 2).sum().backward()
    first = x.grad
    (x * 2).sum().backward()
    return first is x.grad, first.tolist()


@mutant("identity.accumulate-out-of-place",
        models="functional gradient accumulation (JAX-style `grad = grad + g`, OneFlow's "
               "AccumulateGrad replacing the grad tensor): references to the old .grad go stale",
        rules="identity.grad-accumulates-in-place", probe=_probe_accumulate_in_place)
def _():
    """A later gradient replaces `.grad` with a new tensor instead of adding in place."""
    edit("reference.autograd.accumulate:_store_grad_locked",
         "current._array += ops.raw(grad)\n        current._version_counter[0] += 1",
         "variable._grad = ops.as_tensor(current._array + ops.raw(grad))")


def _probe_create_graph_accumulate():
    x = _leaf()
    (x * x).sum().backward(create_graph=True)
    first = x.grad
    before = first.detach().numpy().copy().tolist()
    (x * x).sum().backward(create_graph=True)
    return first is x.grad, before == first.detach().numpy().tolist()


@mutant("identity.create-graph-accumulates-in-place",
        models="an engine that always accumulates in place, also when the gradient has history "
               "(PyTorch's AccumulateGrad takes the out-of-place path under create_graph)",
        rules="identity.create-graph-accumulates-out-of-place", probe=_probe_create_graph_accumulate)
def _():
    """Under create_graph, the next gradient is added into the old `.grad` object."""
    edit("reference.autograd.accumulate:_store_grad_locked", "variable._grad = current + grad",
         "current._array += grad._array; current._version_counter[0] += 1")


def _probe_del_grad():
    x = _leaf()
    (x * 2).sum().backward()
    del x.grad
    return x.grad is None


@mutant("identity.del-grad-ignored",
        models="a `.grad` deleter that is a no-op (C-extension getset tables without a deleter "
               "that silently accept del), as in early OneFlow",
        rules="identity.del-grad-resets", probe=_probe_del_grad)
def _():
    """`del x.grad` leaves the gradient in place."""
    replace("reference.tensor:Tensor.grad",
            property(original("reference.tensor:Tensor.grad").fget,
                     original("reference.tensor:Tensor.grad").fset, lambda self: None))


def _probe_data_object():
    x = _leaf()
    d = x.data
    return d._version_counter is x._version_counter


@mutant("identity.data-shares-version-counter",
        models="PyTorch 0.4's `.data` vs `.detach()` distinction lost: a framework implementing "
               "`.data` as detach(), so writes through it bump the version the graph checks",
        rules=("identity.data-detach-new-objects", "engine.data-bypasses-autograd"), probe=_probe_data_object)
def _():
    """`.data` returns `detach()` (shared version counter) instead of a fresh counter."""
    edit("reference.tensor:Tensor.data", "return Tensor._wrap(self._array)", "return self.detach()")


def _probe_inplace_self():
    t = _fw().tensor([1.0, 2.0])
    return t.add_(1.0) is t


@mutant("identity.inplace-returns-new-object",
        models="OneFlow/early MXNet in-place methods returning a new Python wrapper of the same "
               "storage instead of self",
        rules="identity.inplace-returns-self", probe=_probe_inplace_self)
def _():
    """In-place arithmetic returns a new alias object instead of `self`."""
    edit("reference.ops.inplace:_apply_inplace", "    return self\n",
         "    return _fresh_alias(self)\n")
    replace("reference.ops.inplace:_fresh_alias", _fresh_alias)


def _probe_metadata():
    y = _leaf() * 2
    y.grad_fn.metadata["k"] = 1
    return y.grad_fn.metadata.get("k")


@mutant("identity.node-metadata-not-stored",
        models="a node's metadata dict created per read (C++ nodes without a PyObject slot "
               "to keep it, as PyTorch's before Node::metadata moved into the node)",
        rules="identity.node-metadata-persistent", probe=_probe_metadata)
def _():
    """`node.metadata` is a new empty dict on every read."""
    edit("reference.autograd.graph:NodeBase.metadata", "return extras.metadata", "return {}")


def _probe_node_name():
    class Double(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Double.apply(_leaf()).grad_fn.name()


@mutant("identity.custom-function-generic-node-name",
        models="PyTorch < 1.3's custom-function nodes all named `CppFunction`/`PythonFunction` "
               "(and OneFlow's generic FunctionNode names)",
        rules=("identity.custom-function-node-name", "legacy_function.grad-fn-name"), probe=_probe_node_name)
def _():
    """Custom Function nodes report a generic name instead of `<Name>Backward`."""
    replace("reference.autograd.function:BackwardCFunction.name", lambda self: "PythonFunction")


def _probe_saved_result_distinct():
    x = _leaf()
    y = x.exp()
    return y.grad_fn._saved_result is y


@mutant("identity.saved-output-is-output",
        models="a node saving its output tensor itself (PyTorch's SavedVariable before the "
               "is_output split): unpack returns the output object, and output -> node -> output "
               "is a reference cycle",
        rules=("identity.saved-output-distinct-object", "gc_cycles.plain-graph-freed-by-refcount"),
        probe=_probe_saved_result_distinct)
def _():
    """Built-in ops save their own output as the tensor itself (strongly)."""
    edit("reference.ops.recording:save_output", "return SavedTensor(tensor, True)",
         "return SavedTensor(tensor, False)")


def _probe_weak_dict_equal_values():
    from reference.utils.weak import WeakIdKeyDictionary

    d = WeakIdKeyDictionary()
    a, b = _fw().ones(2), _fw().ones(2)
    d[a] = "first"
    d[b] = "second"
    return len(d)


@mutant("identity.weak-dict-keys-by-value",
        models="a weak-keyed table built on weakref.WeakKeyDictionary semantics (keys compared by value "
               "and hashed by contents): equal-valued tensors share one entry",
        rules="identity.weak-id-key-dictionary-entry-dies-with-tensor", probe=_probe_weak_dict_equal_values)
def _():
    """WeakIdRef hashes alike and compares by value."""
    edit("reference.utils.weak:WeakIdRef.__hash__", "return self._id", "return 0")
    edit("reference.utils.weak:WeakIdRef.__eq__", "return mine is theirs", "return bool((mine == theirs).all())")


_HELD_KEYS: list = []


def _probe_weak_dict_holds_keys():
    from reference.utils.weak import WeakIdKeyDictionary

    d = WeakIdKeyDictionary()
    d[_fw().ones(2)] = "dead"
    gc.collect()
    return len(d)


@mutant("identity.weak-dict-holds-keys",
        models="a side table that keeps its keys alive (a plain dict keyed by id with the tensor kept "
               "as well): every tensor it ever saw leaks",
        rules="identity.weak-id-key-dictionary-entry-dies-with-tensor", probe=_probe_weak_dict_holds_keys)
def _():
    """WeakIdKeyDictionary keeps a strong reference to each key."""
    replace("reference.utils.weak:_HELD_KEYS", _HELD_KEYS)
    edit("reference.utils.weak:WeakIdKeyDictionary.__setitem__", "self.data[self.ref_type(key, self._remove)] = value",
         "self.data[self.ref_type(key, self._remove)] = value\n    _HELD_KEYS.append(key)")


# == gc_cycles ==================================================================================
def _probe_graph_freed():
    def make():
        x = _leaf()
        y = (x * x).exp()
        return y.grad_fn

    return _collected(make)


@mutant("gc_cycles.node-holds-own-output",
        models="a node keeping a strong reference to the tensor it produced (Chainer-style "
               "retained outputs, OneFlow's FunctionNode holding output tensors): every graph is "
               "a cycle that only the cycle collector frees",
        rules="gc_cycles.plain-graph-freed-by-refcount", probe=_probe_graph_freed)
def _():
    """`attach` gives the node a do-nothing hook closing over the output (node -> output)."""
    edit("reference.ops.recording:attach", "out._requires_grad = True",
         "out._requires_grad = True\n    node._tensor_hooks_for(output_nr)[-1] = lambda grad, out=out: None")


def _probe_ctx_output_freed():
    class Exp(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    def make():
        return Exp.apply(_leaf())

    return _collected(make)


@mutant("gc_cycles.ctx-holds-outputs-strongly",
        models="a custom Function's ctx saving its outputs as ordinary (owning) references, "
               "the output -> ctx -> output cycle PyTorch breaks with SavedVariable(is_output)",
        rules="gc_cycles.save-for-backward-output-cycle-free", probe=_probe_ctx_output_freed)
def _():
    """save_for_backward keeps a Function's own outputs as the tensors themselves."""
    edit("reference.autograd.function:_save", "saved.append(SavedTensor(tensor, True))",
         "saved.append(SavedTensor(tensor, False))")


def _probe_leaf_accumulator():
    def make():
        x = _leaf()
        (x * 2).sum()
        return x

    return _collected(make)


@mutant("gc_cycles.leaf-owns-accumulator",
        models="a leaf holding its AccumulateGrad node strongly (PyTorch keeps grad_accumulator_ "
               "as a weak_ptr precisely to avoid this leaf <-> node cycle)",
        rules=("hooks.accumulate-grad-node-hooks-die-with-node", "gc_cycles.plain-graph-freed-by-refcount"),
        probe=_probe_leaf_accumulator)
def _():
    """The leaf caches its accumulator in a strong reference (a leaf <-> node cycle)."""
    edit("reference.autograd.graph:grad_accumulator", "leaf._grad_accumulator = weakref.ref(node)",
         "leaf._grad_accumulator = (lambda node=node: node)")


def _probe_grad_keeps_graph():
    x = _leaf()
    y = (x * x).sum()
    _fw().autograd.grad(y, x)
    try:
        _fw().autograd.grad(y, x)
        return "second grad ran"
    except RuntimeError:
        return "freed"


@mutant("gc_cycles.grad-retains-graph",
        models="autograd.grad defaulting to retain_graph=True (TensorFlow's persistent tape, "
               "OneFlow's grad keeping saved tensors): every grad call pins its graph's buffers",
        rules=("engine.grad-frees-saved-tensors",), probe=_probe_grad_keeps_graph)
def _():
    """`autograd.grad` keeps the saved tensors unless told otherwise."""
    edit("reference.autograd:grad", "        retain_graph = create_graph\n    root_edges",
         "        retain_graph = True\n    root_edges")


def _probe_hook_dict_kept():
    x = _leaf()
    handle = x.register_hook(lambda g: None)
    hooks = x._leaf_hooks
    ref = weakref.ref(hooks)
    del hooks
    x._leaf_hooks = None
    return ref() is None and handle is not None


@mutant("gc_cycles.handle-owns-hook-dict",
        models="RemovableHandle holding its hooks dict strongly (PyTorch's handle was made weak "
               "so a handle kept by user code does not keep the module's/tensor's hooks alive)",
        rules=("hooks.handle-does-not-own-hooks",), probe=_probe_hook_dict_kept)
def _():
    """A handle keeps its hook dict alive."""
    edit("reference.handles:RemovableHandle.__init__", "self._dict_ref = weakref.ref(hooks)",
         "self._dict_ref = (lambda hooks=hooks: hooks)")


def _probe_retain_grad_freed():
    def make():
        x = _leaf()
        y = x * 2
        y.retain_grad()
        return y.grad_fn

    return _collected(make)


@mutant("gc_cycles.retained-tensor-held-strongly",
        models="retain_grad implemented as a hook closing over the tensor (PyTorch's Python "
               "retain_grad before 1.13 leaked the tensor through its own grad_fn's hook)",
        rules=("engine.retain-grad-does-not-own-tensor",), probe=_probe_retain_grad_freed)
def _():
    """The node keeps a strong reference to each tensor that retains its grad."""
    edit("reference.tensor:Tensor.retain_grad", "extras.retains_grad[self._output_nr] = weakref.ref(self)",
         "extras.retains_grad[self._output_nr] = (lambda t=self: t)")


def _probe_global_registry():
    def make():
        y = _leaf() * 3
        return y.grad_fn

    return _collected(make)


_EVERY_NODE: list = []


@mutant("gc_cycles.nodes-kept-in-global-registry",
        models="a process-wide tape or anomaly-mode registry keeping every node alive "
               "(TensorFlow eager's global tape, PyTorch anomaly mode's traceback store done wrong)",
        rules=("gc_cycles.plain-graph-freed-by-refcount", "gc_cycles.saved-tensors-freed-with-graph"),
        probe=_probe_global_registry)
def _():
    """Every node created is appended to a module-level list."""
    replace("reference.autograd.graph:_EVERY_NODE", _EVERY_NODE)
    edit("reference.autograd.graph:NodeBase.__init__", "self._extras = None",
         "self._extras = None\n    _EVERY_NODE.append(self)")


@mutant("gc_cycles.unpack-caches-saved-output",
        models="a saved output cached on its first unpack (an optimisation of SavedVariable that "
               "re-creates the output -> node -> output cycle PyTorch avoids)",
        rules=("identity.saved-output-unpack-not-kept",), probe=lambda: _saved_result_twice())
def _():
    """`SavedTensor.unpack` of an output caches the tensor it builds."""
    edit("reference.autograd.graph:SavedTensor.unpack", "return out", "self._tensor = out\n    return out")


def _saved_result_twice():
    y = _leaf().exp()
    return y.grad_fn._saved_result is y.grad_fn._saved_result


def _simple(id, target, old, new, *more, models, rules, probe, setter=False, survivor_reason=""):
    """A mutant that is one `edit` of one function."""

    def patch():
        edit(target, old, new, *more, setter=setter)

    patch.__doc__ = f"In {target}: {old.strip()!r} -> {new.strip()!r}"
    mutant(id, models=models, rules=rules, probe=probe, survivor_reason=survivor_reason)(patch)


def _probe_kept_gradient():
    x = _leaf()
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    return kept[0].tolist()


_simple("identity.grad-steals-held-buffer", "reference.autograd.accumulate:can_take_over",
        "if sys.getrefcount(grad) > held + 2 or getattr(grad, \"base\", True) is not None:",
        "if getattr(grad, \"base\", True) is not None:",
        models="an engine that always makes the incoming gradient the leaf's .grad, without asking "
               "whether anything else (a hook, the user) still holds it",
        rules="identity.grad-takes-over-unshared-buffer", probe=_probe_kept_gradient)


# == hooks ======================================================================================
def _probe_hook_order():
    x = _leaf()
    seen = []
    x.register_hook(lambda g: seen.append("first"))
    x.register_hook(lambda g: seen.append("second"))
    (x * 2).sum().backward()
    return seen


_simple("hooks.tensor-hooks-reversed", "reference.autograd.hooks:call_tensor_hooks",
        "for hook in tuple(hooks.values()):", "for hook in tuple(reversed(hooks.values())):",
        models="hooks kept in a stack (last registered runs first), as Keras callbacks pushed onto a "
               "list and popped, or an engine that prepends each new hook",
        rules="hooks.chain-in-registration-order", probe=_probe_hook_order)


def _probe_leaf_hook_count():
    x = _leaf()
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 2).sum().backward()
    return len(calls)


_simple("hooks.leaf-hook-fires-twice", "reference.autograd.hooks:run_leaf_hooks",
        "grads[0] = call_tensor_hooks(hooks, grads[0], ops)",
        "grads[0] = call_tensor_hooks(hooks, call_tensor_hooks(hooks, grads[0], ops), ops)",
        models="a leaf's hooks run both as tensor hooks and as accumulator pre-hooks (two registration "
               "paths for leaves, the duplication PyTorch 2.0 removed by moving leaf hooks onto AccumulateGrad)",
        rules="hooks.leaf-hook-fires-once-per-backward", probe=_probe_leaf_hook_count)


def _probe_removed_handle():
    x = _leaf()
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    handle.remove()
    (x * 2).sum().backward()
    return len(calls)


_simple("hooks.removed-handle-still-fires", "reference.handles:RemovableHandle.remove",
        "hooks.pop(self.id, None)", "pass",
        models="a handle that removes its hook from a copy of the hook list (hooks copied at "
               "registration, so remove() edits the wrong container)",
        rules=("hooks.register-hook-returns-handle", "hooks.handle-remove-idempotent"), probe=_probe_removed_handle)


def _probe_remove_twice():
    x = _leaf()
    handle = x.register_hook(lambda g: None)
    handle.remove()
    handle.remove()
    return "ok"


_simple("hooks.second-remove-raises", "reference.handles:RemovableHandle.remove",
        "hooks.pop(self.id, None)", "del hooks[self.id]",
        models="a handle deleting its key unconditionally (KeyError on the second remove), as "
               "hand-written handle classes in several frameworks do",
        rules="hooks.handle-remove-idempotent", probe=_probe_remove_twice)


def _probe_prehook_order():
    x = _leaf()
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
    edit("reference.autograd.hooks:run_node_with_hooks", "    grad_outputs = None",
         "    if extras.pre_hooks:\n        from reference.autograd.engine import _run_tensor_hooks\n"
         "        _run_tensor_hooks(node, extras, grads, ops)\n"
         "    grad_outputs = None")


def _probe_leaf_hook_sees_grad():
    x = _leaf()
    seen = []
    x.register_hook(lambda g: seen.append(None if x.grad is None else x.grad.tolist()))
    (x * 2).sum().backward()
    return seen


_simple("hooks.leaf-hook-after-accumulation", "reference.autograd.hooks:run_leaf_hooks",
        "grads[0] = call_tensor_hooks(hooks, grads[0], ops)",
        "from reference.autograd.accumulate import accumulate_into_leaf\n"
        "        accumulate_into_leaf(leaf, grads[0], ops)\n"
        "        call_tensor_hooks(hooks, grads[0], ops)\n        grads[0] = None",
        models="leaf hooks run as notifications after the gradient is stored (the post-accumulate "
               "order used for the wrong kind of hook; MXNet-style grad callbacks)",
        rules="hooks.leaf-hook-before-accumulation", probe=_probe_leaf_hook_sees_grad)


def _probe_hook_replaces():
    x = _leaf()
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    return x.grad.tolist()


_simple("hooks.hook-return-ignored", "reference.autograd.hooks:call_tensor_hooks",
        "value = result", "result = value",
        models="hooks treated as observers whose return value is dropped (TensorFlow's "
               "tape watchers, OneFlow hooks before returning a tensor was supported)",
        rules="hooks.return-none-keeps-tensor-replaces", probe=_probe_hook_replaces)


def _probe_hook_bad_shape():
    x = _leaf()
    x.register_hook(lambda g: _fw().ones(5))
    try:
        (x * 2).sum().backward()
        return "accepted"
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__


_simple("hooks.hook-return-unvalidated", "reference.autograd.hooks:call_tensor_hooks",
        "_check_hook_result(hook, value, result)", "pass",
        models="an engine that trusts a hook's returned tensor (shape/dtype/device unchecked; "
               "PyTorch's check_single_result validates it)",
        rules=("hooks.return-metadata-validated", "hooks.return-type-validated"), probe=_probe_hook_bad_shape)


def _probe_grad_leaf_untouched():
    x, w = _leaf(), _leaf()
    _fw().autograd.grad((x * w).sum(), x)
    return w.grad is None


_simple("hooks.whole-graph-runs-for-grad", "reference.autograd.engine:_plan",
        "    if captures is None:\n        executable = seen", "    if True:\n        executable = seen",
        models="an engine without graph-task pruning: autograd.grad runs every reachable node "
               "(PyTorch's GraphTask exec_info restricts it to the paths to the inputs)",
        rules=("hooks.off-path-never-fire", "engine.grad-returns-without-accumulating"),
        probe=_probe_grad_leaf_untouched)


def _probe_post_accumulate_sees():
    x = _leaf()
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
         "_post_hooks_first(variable)\n    store_grad(variable, grad, ops, steal, leaf=True)\n    return")


def _post_hooks_first(variable):
    for hook in tuple((variable._post_accumulate_hooks or {}).values()):
        hook(variable)


def _probe_post_accumulate_return():
    x = _leaf()
    x.register_post_accumulate_grad_hook(lambda t: t * 2)
    try:
        (x * 2).sum().backward()
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("hooks.post-accumulate-return-accepted", "reference.autograd.hooks:run_post_accumulate_hooks",
        "raise RuntimeError(POST_ACCUMULATE_RETURN)", "pass",
        models="post-accumulate hooks whose return value is silently dropped (the user believes a "
               "returned tensor replaced .grad)",
        rules="hooks.post-accumulate-must-return-none", probe=_probe_post_accumulate_return)


def _probe_retain_grad_sees_hooks():
    x = _leaf()
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
         "    if extras.tensor_pre_hooks:", "    _store_retained(extras, grads, ops)\n    if extras.tensor_pre_hooks:",
         "    if extras.retains_grad:", "    if False:")


def _store_retained(extras, grads, ops):
    from reference.autograd.accumulate import store_grad

    for nr, tensor_ref in (extras.retains_grad or {}).items():
        tensor = tensor_ref()
        if tensor is not None and grads[nr] is not None:
            store_grad(tensor, grads[nr], ops)


def _probe_leaf_hook_persists():
    x = _leaf()
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
    x = _leaf()
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(1))
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    return len(calls)


_simple("hooks.one-shot-hooks", "reference.autograd.hooks:call_tensor_hooks",
        "for hook in tuple(hooks.values()):", "pending = tuple(hooks.values())\n    hooks.clear()\n"
        "    for hook in pending:",
        models="hooks consumed when they fire (one-shot callbacks, like TensorFlow's tape that is "
               "spent after gradient())",
        rules=("hooks.retain-graph-hooks-fire-each-backward", "hooks.leaf-hooks-persist-across-graphs"),
        probe=_probe_hooks_each_backward)


def _probe_hook_no_grad_tensor():
    try:
        _fw().tensor([1.0]).register_hook(lambda g: None)
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("hooks.hook-on-tensor-without-grad", "reference.tensor:Tensor.register_hook",
        "if not self._requires_grad:", "if False:",
        models="a framework that accepts a hook on a tensor that never gets a gradient (the hook "
               "silently never fires)",
        rules="hooks.register-hook-needs-requires-grad", probe=_probe_hook_no_grad_tensor)


def _probe_post_hook_nonleaf():
    try:
        (_leaf() * 2).register_post_accumulate_grad_hook(lambda t: None)
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("hooks.post-accumulate-on-non-leaf", "reference.tensor:Tensor.register_post_accumulate_grad_hook",
        "if self._node is not None:", "if False:",
        models="post-accumulate hooks accepted on non-leaves, where nothing is ever accumulated",
        rules="hooks.post-accumulate-hook-leaf-only", probe=_probe_post_hook_nonleaf)


def _probe_custom_node_hook():
    class Double(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(_leaf())
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
    x = _leaf()
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
         "    _move_hooks(old, tensor._output_nr, node)\n    attach(tensor, node)")


def _move_hooks(old, nr, node):
    if old is None or old._extras is None or not old._extras.tensor_pre_hooks:
        return
    hooks = old._extras.tensor_pre_hooks.pop(nr, None)
    if hooks:
        node._tensor_hooks_for(0).update(hooks)


# == engine =====================================================================================
def _probe_version_check():
    x = _leaf()
    y = x * 1
    z = y * y
    y.add_(1)
    try:
        z.sum().backward()
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("engine.version-check-skipped", "reference.autograd.graph:SavedTensor.unpack",
        "if self._counter[0] != self._version:", "if False:",
        models="an engine without saved-tensor version checks (MXNet's autograd and OneFlow 0.8 keep no "
               "version counter): backward silently uses values overwritten in place",
        rules=("engine.version-counter-error", "legacy_function.saved-tensors-version-check"),
        probe=_probe_version_check)

_simple("engine.inplace-does-not-bump-version", "reference.ops.inplace:bump_version",
        "tensor._version_counter[0] += 1", "pass",
        models="an in-place kernel that writes through the raw storage without bumping the version "
               "(PyTorch's own bugs of this kind in out= and foreach kernels)",
        rules=("engine.version-counter-error", "identity.saved-unpack-version-checked"),
        probe=_probe_version_check)


def _probe_second_backward():
    x = _leaf()
    y = (x * x).sum()
    y.backward()
    try:
        y.backward()
        return "second backward ran"
    except RuntimeError:
        return "raised"


_simple("engine.saved-tensors-not-released", "reference.autograd.engine:execute",
        "if not retain_graph and node._saved:", "if False:",
        models="backward that never frees saved tensors (a persistent tape, as TensorFlow's "
               "GradientTape(persistent=True) always)",
        rules=("engine.second-backward-error", "engine.backward-frees-saved-tensors",
               "gc_cycles.backward-releases-saved-tensors"), probe=_probe_second_backward)


def _probe_retain_graph():
    x = _leaf()
    y = (x * x).sum()
    y.backward(retain_graph=True)
    try:
        y.backward()
        return "second backward ran"
    except RuntimeError:
        return "raised"


_simple("engine.retain-graph-ignored", "reference.autograd.engine:execute",
        "if not retain_graph and node._saved:", "if node._saved:",
        models="retain_graph=True not honoured by a node type (buffers freed anyway, as by custom "
               "CUDA-graph or fused nodes that release eagerly)",
        rules=("engine.retain-graph-keeps-saved", "hooks.retain-graph-hooks-fire-each-backward"),
        probe=_probe_retain_graph)


def _probe_diamond():
    x = _leaf()
    y = x * 1
    (y * 2 + y * 3).sum().backward()
    return x.grad.tolist()


_simple("engine.gradients-overwritten-not-summed", "reference.autograd.engine:execute",
        "buffer[nr] = grad if previous is None else previous + grad", "buffer[nr] = grad",
        models="an input buffer that keeps the last gradient instead of the sum (InputBuffer::add "
               "done as assignment)",
        rules="engine.node-runs-once-with-summed-grads", probe=_probe_diamond)


def _probe_ready_order():
    x = _leaf()
    order = []
    a = x * 2
    b = x * 3
    a.grad_fn.register_prehook(lambda g: order.append("a"))
    b.grad_fn.register_prehook(lambda g: order.append("b"))
    (a + b).sum().backward()
    return order


_simple("engine.oldest-node-first", "reference.autograd.engine:_priority",
        "else -node._seq", "else node._seq",
        models="a ready queue ordered oldest-first (a FIFO/BFS engine, as OneFlow's and Chainer's "
               "topological order, instead of PyTorch's newest-sequence-number-first heap)",
        rules="engine.ready-newest-first", probe=_probe_ready_order)


def _probe_unused():
    x, w = _leaf(), _leaf()
    try:
        return _fw().autograd.grad((x * 2).sum(), (x, w))[1]
    except RuntimeError:
        return "raised"


_simple("engine.unused-input-silently-none", "reference.autograd:grad",
        "        allow_unused = materialize_grads\n", "        allow_unused = True\n",
        models="autograd.grad returning None for an input the outputs do not depend on without being "
               "asked to (allow_unused defaulting to True, as JAX-free eager frameworks often do)",
        rules="engine.grad-unused-inputs", probe=_probe_unused)


def _probe_backward_inputs():
    x, w = _leaf(), _leaf()
    (x * w).sum().backward(inputs=[x])
    return w.grad is None


_simple("engine.backward-inputs-ignored", "reference.autograd:backward",
        "    if inputs is not None:\n", "    if False:\n",
        models="backward(inputs=...) accepted but ignored (every leaf accumulates), as in PyTorch "
               "before 1.8 added the argument, or a framework that parses it and drops it",
        rules="engine.backward-inputs-restricts", probe=_probe_backward_inputs)


def _probe_no_grad():
    with _fw().no_grad():
        y = _leaf() * 2
    return y.requires_grad


_simple("engine.no-grad-records", "reference.ops.recording:needs_grad",
        "return _grad_state.enabled and (", "return (",
        models="ops that record a graph regardless of grad mode (a kernel family that forgets to "
               "check GradMode, as several of PyTorch's early custom ops did)",
        rules="engine.no-grad-records-nothing", probe=_probe_no_grad)


def _probe_grad_mode_threads():
    import threading

    seen = []
    with _fw().no_grad():
        t = threading.Thread(target=lambda: seen.append(_fw().is_grad_enabled()))
        t.start()
        t.join()
    return seen


_PROCESS_GRAD_MODE = [True]


@mutant("engine.grad-mode-process-wide",
        models="a grad-mode flag kept in a process-wide global instead of thread-local storage "
               "(PyTorch's GradMode is thread_local; a plain global leaks no_grad into other threads)",
        rules="engine.grad-mode-thread-local", probe=_probe_grad_mode_threads)
def _():
    """Grad mode is one process-wide flag."""
    replace("reference.grad_mode:_State.enabled",
            property(lambda self: _PROCESS_GRAD_MODE[0],
                     lambda self, value: _PROCESS_GRAD_MODE.__setitem__(0, value)))


def _probe_leaf_inplace():
    try:
        _leaf().add_(1)
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("engine.leaf-inplace-allowed", "reference.ops.inplace:check_inplace",
        "raise RuntimeError(LEAF_INPLACE)", "pass",
        models="in-place ops on a leaf that requires grad accepted (the leaf's value silently no longer "
               "matches what its gradient refers to)",
        rules=("engine.leaf-inplace-error", "legacy_function.mark-dirty-leaf-raises"), probe=_probe_leaf_inplace)


def _probe_int_requires_grad():
    try:
        _fw().tensor([1, 2]).requires_grad_()
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("engine.requires-grad-on-integers", "reference.tensor:Tensor.requires_grad",
        "if value and not self.dtype.is_floating_point:", "if False:",
        models="requires_grad accepted on integer tensors (OneFlow 0.8 and MXNet accept it; gradients "
               "then truncate)",
        rules="engine.requires-grad-float-only", probe=_probe_int_requires_grad, setter=True)


def _probe_nonleaf_warning():
    import warnings

    y = _leaf() * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y.grad
    return len(caught)


_simple("engine.non-leaf-grad-silent", "reference.tensor:Tensor.grad",
        "warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)", "pass",
        models="no warning when reading .grad of a non-leaf (PyTorch < 1.5 returned None silently)",
        rules="engine.nonleaf-grad-warning", probe=_probe_nonleaf_warning)


def _probe_retain_grad():
    x = _leaf()
    y = x * 2
    y.retain_grad()
    y.sum().backward()
    return None if y.grad is None else y.grad.tolist()


_simple("engine.retain-grad-ignored", "reference.tensor:Tensor.retain_grad",
        "if self._node is None or self._retains_grad:", "if True:",
        models="retain_grad() accepted and ignored for non-leaves (a no-op stub, as in frameworks "
               "that only expose it for API compatibility)",
        rules="engine.retain-grad", probe=_probe_retain_grad)


def _probe_gradient_shape():
    y = _leaf() * 2
    try:
        y.backward(_fw().ones(3))
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("engine.gradient-argument-unchecked", "reference.autograd:_root_grads",
        "elif grad.shape != out.shape:", "elif False:",
        models="backward(gradient) not checked against the output's shape (broadcast or failing deep "
               "inside a kernel instead)",
        rules="engine.gradient-argument-validation", probe=_probe_gradient_shape)


def _probe_grad_assign_shape():
    x = _leaf()
    try:
        x.grad = _fw().ones(5)
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("engine.grad-assignment-unchecked", "reference.tensor:Tensor.grad",
        "if value.shape != self.shape:", "if False:",
        models="a .grad setter that accepts a tensor of another shape (the optimizer step then fails "
               "or broadcasts)",
        rules="engine.grad-assignment-validated", probe=_probe_grad_assign_shape, setter=True)


def _probe_duplicate_roots():
    x = _leaf()
    y = (x * 2).sum()
    _fw().autograd.backward([y, y])
    return x.grad.tolist()


_simple("engine.duplicate-roots-collapsed", "reference.autograd.engine:_deliver",
        "buffer[nr] = grad if previous is None else previous + grad", "buffer[nr] = grad",
        models="roots given twice counted once (roots deduplicated as a set)",
        rules="engine.duplicate-roots", probe=_probe_duplicate_roots)


def _probe_create_graph():
    x = _leaf()
    (g,) = _fw().autograd.grad((x * x * x).sum(), x, create_graph=True)
    return g.requires_grad


_simple("engine.create-graph-ignored", "reference.autograd.engine:execute",
        "ops = TENSOR_OPS if create_graph else RAW_OPS", "ops = RAW_OPS",
        models="create_graph=True accepted but the backward formulas not recorded (no double "
               "backward; a framework whose backward kernels are not differentiable)",
        rules="engine.create-graph-double-backward", probe=_probe_create_graph)


# == forward_levels =============================================================================
def _fwad():
    return _fw().autograd.forward_ad


def _probe_tangent_after_exit():
    fwad = _fwad()
    with fwad.dual_level():
        dual = fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([2.0]))
    with fwad.dual_level():
        return fwad.unpack_dual(dual).tangent is None


_simple("forward_levels.tangents-kept-after-exit", "reference.autograd.forward_ad:_LevelRegistry.exit",
        "dropped.append(grads.pop(level))", "pass",
        models="a level that does not clear its tangents on exit (PyTorch's ForwardADLevel destructor "
               "resets every registered forward grad; a framework without that registry keeps them)",
        rules=("forward_levels.tangents-cleared-at-exit", "forward_levels.new-level-starts-clean"),
        probe=_probe_tangent_after_exit)


def _probe_level_index():
    fwad = _fwad()
    with fwad.dual_level() as first:
        pass
    with fwad.dual_level() as second:
        pass
    return first, second


_LEVELS = iter(range(10**9))


_simple("forward_levels.level-index-not-reused", "reference.autograd.forward_ad:_LevelRegistry.enter",
        "self.current = 0\n        return 0", "self.current = next(_LEVELS)\n        return self.current",
        models="level indices handed out by an ever-growing counter (functorch's interpreter stack "
               "levels; PyTorch's forward AD reuses index 0 for its single level)",
        rules=("forward_levels.level-index-reused", "forward_levels.dual-level-yields-zero"),
        probe=_probe_level_index)


def _probe_nesting():
    fwad = _fwad()
    with fwad.dual_level():
        try:
            fwad.enter_dual_level()
            return "nested"
        except RuntimeError:
            return "raised"


_simple("forward_levels.nesting-allowed", "reference.autograd.forward_ad:_LevelRegistry.enter",
        "if self.current is not None:", "if False:",
        models="nested levels accepted although tangents are kept for one level only (the second enter "
               "silently takes over the first)",
        rules="forward_levels.nesting-is-error", probe=_probe_nesting)


def _probe_exit_wrong_level():
    fwad = _fwad()
    level = fwad.enter_dual_level()
    try:
        fwad.exit_dual_level(level=level + 3)
        return "accepted"
    except RuntimeError:
        fwad.exit_dual_level(level=level)
        return "raised"


_simple("forward_levels.exit-any-level", "reference.autograd.forward_ad:_LevelRegistry.exit",
        "if self.current is None or level != self.current:", "if self.current is None:",
        models="exit_dual_level ignoring which level it is given (closes the open one)",
        rules="forward_levels.exit-not-current-errors", probe=_probe_exit_wrong_level)


def _probe_exit_none_open():
    try:
        _fwad().exit_dual_level(level=0)
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("forward_levels.exit-without-open-level", "reference.autograd.forward_ad:_LevelRegistry.exit",
        "if self.current is None or level != self.current:", "if self.current is not None and level != self.current:",
        models="exiting when no level is open treated as a no-op (unbalanced enter/exit goes unnoticed)",
        rules="forward_levels.exit-none-open-errors", probe=_probe_exit_none_open)


_HELD_TANGENTS: list = []


def _probe_tangent_owned():
    fwad = _fwad()
    with fwad.dual_level():
        tangent = _fw().tensor([2.0])
        ref = weakref.ref(tangent)
        dual = fwad.make_dual(_fw().tensor([1.0]), tangent)
        del tangent, dual
        return ref() is None


@mutant("forward_levels.level-owns-tangents",
        models="a level that keeps strong references to the tangents it hands out (PyTorch's "
               "ForwardADLevel holds its grads weakly so a tangent lives as long as its dual)",
        rules="forward_levels.tangent-owned-by-dual", probe=_probe_tangent_owned)
def _():
    """The registry keeps every tangent set at a level alive until exit."""
    replace("reference.autograd.forward_ad:_HELD_TANGENTS", _HELD_TANGENTS)
    edit("reference.autograd.forward_ad:_LevelRegistry.set_tangent", "tensor._fw_grads[level] = tangent",
         "tensor._fw_grads[level] = tangent\n        _HELD_TANGENTS.append(tangent)")


def _probe_unpack_fresh():
    fwad = _fwad()
    with fwad.dual_level():
        dual = fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([2.0]))
        return fwad.unpack_dual(dual).primal is dual


_simple("forward_levels.unpack-returns-dual", "reference.autograd.forward_ad:unpack_dual",
        "return UnpackedDualTensor(_views.unpack_primal_view(tensor), tangent)", "return UnpackedDualTensor(tensor, tangent)",
        models="unpack_dual returning the dual itself as the primal (its tangent then leaks into "
               "computations meant to be tangent-free)",
        rules="forward_levels.unpack-primal-fresh-view", probe=_probe_unpack_fresh)


def _probe_make_dual_alias():
    fwad = _fwad()
    primal = _fw().tensor([1.0])
    with fwad.dual_level():
        dual = fwad.make_dual(primal, _fw().tensor([2.0]))
        primal.add_(1)
        return fwad.unpack_dual(dual).primal.tolist()


_simple("forward_levels.make-dual-copies-primal", "reference.autograd.forward_ad:make_dual",
        "dual = _views.make_dual_view(tensor)", "dual = _views.make_dual_view(tensor.clone())",
        models="make_dual copying the primal (JAX-style value semantics) instead of viewing it",
        rules="forward_levels.make-dual-aliases-primal", probe=_probe_make_dual_alias)


def _probe_detach_tangent():
    fwad = _fwad()
    with fwad.dual_level():
        dual = fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([2.0]))
        return fwad.unpack_dual(dual.detach()).tangent is None


_simple("forward_levels.detach-keeps-tangent", "reference.tensor:Tensor.detach",
        "out._version_counter = self._version_counter",
        "out._version_counter = self._version_counter\n    out._fw_grads = self._fw_grads",
        models="detach() sharing the autograd meta that holds forward grads (the tangent leaks through "
               "a tensor that must be outside autograd)",
        rules="forward_levels.detach-drops-tangent", probe=_probe_detach_tangent)


def _probe_detach_inplace_tangent():
    fwad = _fwad()
    with fwad.dual_level():
        out = fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([2.0])) * 3
        out.detach_()
        return fwad.unpack_dual(out).tangent is None


_simple("forward_levels.detach-inplace-keeps-tangent", "reference.tensor:Tensor.detach_",
        "self._fw_grads = None", "pass",
        models="detach_() clearing the reverse-mode history only (requires_grad and grad_fn), leaving "
               "the forward grads in the autograd meta it does not reset",
        rules="forward_levels.detach-inplace-drops-tangent", probe=_probe_detach_inplace_tangent)


def _probe_dual_tangent():
    fwad = _fwad()
    with fwad.dual_level():
        tangent = fwad.make_dual(_fw().tensor([2.0]), _fw().tensor([3.0]))
        try:
            fwad.make_dual(_fw().tensor([1.0]), tangent)
            return "accepted"
        except RuntimeError:
            return "raised"


_simple("forward_levels.dual-tangent-accepted", "reference.autograd.forward_ad:make_dual",
        "if get_tangent(tangent, level) is not None:", "if False:",
        models="make_dual storing whatever tensor it is given as the tangent, a dual of the same level "
               "included (its own tangent then rides along as a hidden second-order term)",
        rules="forward_levels.dual-tangent-refused", probe=_probe_dual_tangent)


def _probe_jvp_unchecked():
    fwad = _fwad()

    class Wrong(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def jvp(ctx, t):
            return _fw().ones(4)

    with fwad.dual_level():
        try:
            Wrong.apply(fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([2.0])))
            return "accepted"
        except RuntimeError:
            return "raised"


_simple("forward_levels.jvp-results-unchecked", "reference.autograd.function:_forward_tangents",
        "_check_jvp_results(outputs, results, out_tangents, non_diff_ids)", "pass",
        models="a custom Function's jvp results set as the outputs' tangents without checking count, "
               "shape or dtype (the user's mistake surfaces ops later as wrong derivatives)",
        rules="forward_levels.custom-function-jvp-validated", probe=_probe_jvp_unchecked)


def _probe_no_grad_tangent():
    fwad = _fwad()
    with fwad.dual_level():
        dual = fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([2.0]))
        with _fw().no_grad():
            out = dual * 3
        t = fwad.unpack_dual(out).tangent
        return None if t is None else t.tolist()


_simple("forward_levels.no-grad-stops-tangents", "reference.autograd.forward_ad:propagating",
        "return _suppressed.depth == 0 and _registry.current is not None",
        "from reference import grad_mode\n    return _suppressed.depth == 0 and _registry.current is not None "
        "and grad_mode._state.enabled",
        models="forward AD switched off by no_grad (the reverse-mode recording switch reused for tangents; "
               "PyTorch keeps propagating under no_grad)",
        rules="forward_levels.no-grad-keeps-tangent", probe=_probe_no_grad_tangent)


def _probe_inplace_tangent_object():
    fwad = _fwad()
    with fwad.dual_level():
        tangent = _fw().tensor([2.0])
        dual = fwad.make_dual(_fw().tensor([1.0]), tangent)
        dual.add_(fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([5.0])))
        return fwad.unpack_dual(dual).tangent is tangent


_simple("forward_levels.inplace-replaces-tangent", "reference.ops.inplace:add_",
        "return t_self.add_(step)", "return t_self + step",
        models="in-place ops giving the dual a new tangent object instead of updating the tangent in "
               "place (aliases of the old tangent go stale)",
        rules="forward_levels.inplace-keeps-tangent-object", probe=_probe_inplace_tangent_object)


def _probe_view_tangent():
    fwad = _fwad()
    with fwad.dual_level():
        dual = fwad.make_dual(_fw().tensor([1.0, 2.0]), _fw().tensor([3.0, 4.0]))
        return fwad.unpack_dual(dual.view(2, 1)).tangent is None


_simple("forward_levels.views-drop-tangent", "reference.ops.views:_make_view",
        "if has_tangent(self):", "if False:",
        models="view ops without a forward rule (tangents lost through reshape/transpose)",
        rules="forward_levels.views-propagate-tangent", probe=_probe_view_tangent)


def _probe_levels_threads():
    import threading

    fwad = _fwad()
    seen = []
    with fwad.dual_level():
        t = threading.Thread(target=lambda: seen.append(fwad._current_level))
        t.start()
        t.join()
    return seen


_THREAD_LEVELS = __import__("threading").local()


@mutant("forward_levels.levels-thread-local",
        models="levels kept per thread (functorch/JAX-style per-thread interpreter stacks; PyTorch's "
               "forward-AD levels are process-wide under one mutex)",
        rules=("forward_levels.levels-process-global", "forward_levels.concurrent-duals-one-level"),
        probe=_probe_levels_threads)
def _():
    """The open level is stored per thread."""
    replace("reference.autograd.forward_ad:_LevelRegistry.current",
            property(lambda self: getattr(_THREAD_LEVELS, "current", None),
                     lambda self, value: setattr(_THREAD_LEVELS, "current", value)))


def _probe_make_dual_size():
    fwad = _fwad()
    with fwad.dual_level():
        try:
            fwad.make_dual(_fw().tensor([1.0, 2.0]), _fw().tensor([1.0]))
            return "accepted"
        except RuntimeError:
            return "raised"


_simple("forward_levels.make-dual-size-unchecked", "reference.autograd.forward_ad:make_dual",
        "if tangent.shape != tensor.shape:", "if False:",
        models="make_dual accepting a tangent of another shape (broadcast later or failing in a jvp)",
        rules="forward_levels.make-dual-size-check", probe=_probe_make_dual_size)


def _probe_custom_jvp():
    class Double(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    fwad = _fwad()
    with fwad.dual_level():
        dual = fwad.make_dual(_fw().tensor([1.0]), _fw().tensor([3.0]))
        t = fwad.unpack_dual(Double.apply(dual)).tangent
        return None if t is None else t.tolist()


_simple("forward_levels.custom-function-jvp-unused", "reference.autograd.function:_apply",
        "    if forward:\n        _forward_tangents(", "    if False:\n        _forward_tangents(",
        models="custom Functions opaque to forward AD (their jvp never called; outputs carry no tangent)",
        rules="forward_levels.custom-function-static-jvp", probe=_probe_custom_jvp)


# == legacy_function ============================================================================
class _Probe:
    pass


def _double_cls():
    class Double(_fw().autograd.Function):
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
    try:
        fn(_leaf())
        return "ran"
    except RuntimeError:
        return "raised"


_simple("legacy_function.instance-call-runs", "reference.autograd.function:Function.__call__",
        "raise RuntimeError(LEGACY_CALL)", "return type(self).apply(*args, **kwargs)",
        models="legacy (instance-called) Functions still executed, as PyTorch did before 1.5 removed "
               "non-static forward",
        rules="legacy_function.instance-call-raises", probe=_probe_instance_call)


def _probe_instantiation_warning():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _double_cls()()
    return len(caught)


@mutant("legacy_function.instantiation-silent",
        models="instantiating a Function without the deprecation warning (PyTorch before 2.x warned "
               "only on call)",
        rules="legacy_function.instantiation-warns", probe=_probe_instantiation_warning)
def _():
    """`Function()` no longer warns."""
    from reference.autograd.function import FunctionCtx

    replace("reference.autograd.function:Function.__init__", lambda self, *a, **k: FunctionCtx.__init__(self))


def _probe_materialize():
    class Two(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    a, b = Two.apply(_leaf())
    try:
        a.sum().backward()
        return "ran"
    except TypeError:  # None * 3
        return "got None"


_simple("legacy_function.materialize-grads-ignored", "reference.autograd.function:BackwardCFunction.apply",
        "if grad is None and self._materialize_grads:", "if False:",
        models="unused outputs' gradients passed as None although materialize_grads is on (the "
               "default PyTorch documents: zeros)",
        rules="legacy_function.materialize-grads", probe=_probe_materialize)


def _probe_once_differentiable():
    seen = []

    class Double(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @_fw().autograd.function.once_differentiable
        def backward(ctx, g):
            seen.append(_fw().is_grad_enabled())
            return g * 2

    Double.apply(_leaf()).sum().backward(create_graph=True)
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
    class Cube(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        @_fw().autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = _leaf()
    (g,) = _fw().autograd.grad((Cube.apply(x) * x).sum(), x, create_graph=True)
    try:
        g.sum().backward()
        return "ran"
    except RuntimeError:
        return "raised"


_simple("legacy_function.once-differentiable-unguarded", "reference.autograd.function:BackwardCFunction.apply",
        "if ops.differentiable:", "if False:",
        models="results of a once_differentiable backward left differentiable (wrong second-order "
               "gradients instead of an error)",
        rules="legacy_function.once-differentiable-double-backward-raises", probe=_probe_once_guard)


def _probe_needs_input_grad():
    seen = []

    class Mul(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append(ctx.needs_input_grad)
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, g

    Mul.apply(_leaf(), _fw().tensor([1.0, 1.0]))
    return seen


_simple("legacy_function.needs-input-grad-all-true", "reference.autograd.function:_apply",
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
    return Double.apply(_leaf()).grad_fn is Double.apply(_leaf()).grad_fn


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
    class AddOne(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = _leaf() * 1
    return AddOne.apply(x) is x


@mutant("legacy_function.mark-dirty-returns-new-object",
        models="a dirty (in-place modified) input returned as a new wrapper object (OneFlow-style "
               "output wrapping; PyTorch returns the very input object)",
        rules="legacy_function.mark-dirty-returns-same-object", probe=_probe_mark_dirty)
def _():
    """A tensor marked dirty comes back from apply as a new alias object."""
    replace("reference.autograd.function:_fresh_alias", _fresh_alias)
    edit("reference.autograd.function:_apply", "result = out\n        elif id(out) in input_ids:",
         "result = _fresh_alias(out)\n        elif id(out) in input_ids:")


def _probe_dirty_not_returned():
    class Bad(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    try:
        Bad.apply(_leaf() * 1)
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("legacy_function.dirty-not-returned-accepted", "reference.autograd.function:_check_dirty",
        "if id(tensor) not in output_ids:", "if False:",
        models="mark_dirty on an input that is not returned accepted (its history silently stale)",
        rules="legacy_function.mark-dirty-not-returned-raises", probe=_probe_dirty_not_returned)


def _probe_extra_grads():
    class Extra(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    try:
        Extra.apply(_leaf()).sum().backward()
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("legacy_function.extra-grads-dropped", "reference.autograd.function:BackwardCFunction._validate",
        "if len(results) > expected and all(r is None for r in results[expected:]):", "if len(results) > expected:",
        models="a backward returning too many gradients silently truncated (a bug in the user's "
               "backward goes unnoticed)",
        rules="legacy_function.wrong-number-of-grads-raises", probe=_probe_extra_grads)


def _probe_custom_second_backward():
    y = _double_cls().apply(_leaf()).sum()
    y.backward()
    try:
        y.backward()
        return "ran"
    except RuntimeError:
        return "raised"


_simple("legacy_function.saved-never-freed", "reference.autograd.engine:execute",
        "if not retain_graph and node._saved:", "if not retain_graph and node._saved and not hasattr(type(node), '_forward_cls'):",
        models="custom-function nodes that keep their saved tensors after backward (PyNode not "
               "calling release_variables)",
        rules=("legacy_function.saved-tensors-after-free-message",
               "legacy_function.second-backward-without-retain-graph"), probe=_probe_custom_second_backward)


def _probe_container():
    class Pair(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2, x * 3]

        @staticmethod
        def backward(ctx, a, b):
            return a + b

    return type(Pair.apply(_leaf())).__name__


_simple("legacy_function.output-list-becomes-tuple", "reference.autograd.function:_apply",
        "return container(results)", "return tuple(results)",
        models="multiple outputs always returned as a tuple whatever forward returned",
        rules="legacy_function.output-container-preserved", probe=_probe_container)


def _probe_save_none():
    seen = []

    class SaveNone(_fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(len(ctx.saved_tensors))
            return g * 2

    SaveNone.apply(_leaf()).sum().backward()
    return seen


_simple("legacy_function.saved-none-dropped", "reference.autograd.function:FunctionCtx.saved_tensors",
        "return tuple(None if s is None else s.unpack(self, True) for s in saved)",
        "return tuple(s.unpack(self, True) for s in saved if s is not None)",
        models="None entries of save_for_backward dropped (positions of the other tensors shift)",
        rules="legacy_function.save-none-roundtrip", probe=_probe_save_none)


def _probe_custom_version():
    x = _leaf()
    y = x * 1
    out = _double_cls().apply(y)
    y.add_(1)
    try:
        out.sum().backward()
        return "accepted"
    except RuntimeError:
        return "raised"


_simple("legacy_function.saved-tensors-unchecked", "reference.autograd.function:FunctionCtx.saved_tensors",
        "return tuple(None if s is None else s.unpack(self, True) for s in saved)",
        "return tuple(None if s is None else (s._tensor if s._tensor is not None else s.unpack(self, True)) "
        "for s in saved)",
        models="ctx.saved_tensors skipping the version check built-in nodes make (custom functions "
               "read overwritten inputs)",
        rules="legacy_function.saved-tensors-version-check", probe=_probe_custom_version)


# == saved_tensors ==============================================================================
def _saved_hooks(pack, unpack):
    return _fw().autograd.graph.saved_tensors_hooks(pack, unpack)


def _probe_original_dropped():
    gc.disable()
    try:
        x = _leaf()
        with _saved_hooks(lambda t: t.detach().clone(), lambda p: p):
            y = (x * 1) * 2.0
            t = x * 1
            z = t * t
        ref = weakref.ref(t)
        del t
        return ref() is None, y is not None, z is not None
    finally:
        gc.enable()


_simple("saved_tensors.node-keeps-original", "reference.autograd.graph:SavedTensor._pack",
        "self._tensor = None", "pass",
        models="a node that packs a saved tensor but keeps the original too (pack hooks that offload "
               "to CPU or disk then save no memory at all)",
        rules="saved_tensors.node-holds-only-packed", probe=_probe_original_dropped)


def _probe_unpack_every_access():
    calls = []
    x = _leaf()
    with _saved_hooks(lambda t: t, lambda p: calls.append(1) or p):
        y = x * x
    for _ in range(3):
        y.grad_fn._saved_self
    return len(calls)


_simple("saved_tensors.unpack-once-at-save", "reference.autograd.graph:SavedTensor._pack",
        "hooks.unpack_hook = unpack_hook", "hooks.unpack_hook = (lambda p, value=unpack_hook(packed): value)",
        models="an engine that unpacks eagerly and caches the result (the unpacked tensor then lives as "
               "long as the graph, defeating offloading hooks)",
        rules="saved_tensors.unpack-on-every-access", probe=_probe_unpack_every_access)


def _probe_innermost_hooks():
    seen = []
    x = _leaf()
    with _saved_hooks(lambda t: seen.append("outer") or t, lambda p: p):
        with _saved_hooks(lambda t: seen.append("inner") or t, lambda p: p):
            x * x
    return seen


_simple("saved_tensors.outermost-hooks-win", "reference.autograd.graph:SavedTensor.__init__",
        "pack_hook, unpack_hook = _saved_hooks.stack[-1]", "pack_hook, unpack_hook = _saved_hooks.stack[0]",
        models="a hook stack read from the bottom (the first registered pair wins over a nested one)",
        rules="saved_tensors.innermost-hooks-win", probe=_probe_innermost_hooks)


# == views ======================================================================================
def _probe_view_version():
    x = _fw().tensor([1.0, 2.0])
    v = x.view(2, 1)
    v.add_(1)
    return x._version


_simple("views.view-own-version-counter", "reference.ops.views:_make_view",
        "out._version_counter = self._version_counter", "out._version_counter = [self._version_counter[0]]",
        models="views with their own version counter (an in-place write through a view then escapes the "
               "saved-tensor check of whatever saved the base)",
        rules="views.view-shares-version-counter", probe=_probe_view_version)


def _probe_view_base():
    x = _fw().tensor([1.0, 2.0, 3.0, 4.0])
    return x.view(2, 2)[0]._base is x


_simple("views.base-is-parent-view", "reference.ops.views:_make_view",
        "out._base = self._base if self._base is not None else self", "out._base = self",
        models="a view of a view reporting its parent as `_base` (PyTorch always points at the root "
               "tensor that owns the storage)",
        rules="views.is-view-and-base", probe=_probe_view_base)


def _probe_view_history():
    x = _leaf()
    b = x * 1
    v = b.view(2, 1)
    b.mul_(2)
    v.sum().backward()
    return x.grad.tolist()


_simple("views.view-history-not-renewed", "reference.ops.views:refresh_views",
        "views = getattr(base, \"_views\", None)", "views = None",
        models="views whose grad_fn is not renewed after an in-place op on their base (gradients through "
               "the view skip the in-place op)",
        rules="views.view-history-follows-base", probe=_probe_view_history)


# == harness: planted bugs the project's own tests use (not scored) =================================
def _crash_sin(self):
    import os

    os.abort()


@mutant("harness.crash-on-sin", models="a framework that segfaults inside an op", rules=(),
        probe=lambda: "not probed (the process dies)", scored=False)
def _():
    """`Tensor.sin` kills the process (the differential tester must record a crash)."""
    replace("reference.tensor:Tensor.sin", _crash_sin)
