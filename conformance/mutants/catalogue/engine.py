"""Curated mutants of the engine suite's area: the backward engine: saved-tensor release and version
checks, gradient summation, ready order, grad mode, argument checks.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

from conformance.mutants import mutant, replace, single_edit
from conformance.mutants.catalogue.shared import accepted_or_raised, fw, leaf, warnings_count


def _probe_version_check():
    x = leaf()
    y = x * 1
    z = y * y
    y.add_(1)
    return accepted_or_raised(lambda: z.sum().backward())


single_edit("engine.version-check-skipped", "reference.autograd.graph:SavedTensor.unpack",
            "if self._counter[0] != self._version:", "if False:",
            models="an engine without saved-tensor version checks (MXNet's autograd and OneFlow 0.8 keep no "
                   "version counter): backward silently uses values overwritten in place",
            rules=("engine.version-counter-error", "legacy_function.saved-tensors-version-check"),
            probe=_probe_version_check)

single_edit("engine.inplace-does-not-bump-version", "reference.ops.inplace:bump_version",
            "tensor._version_counter[0] += 1", "pass",
            models="an in-place kernel that writes through the raw storage without bumping the version "
                   "(PyTorch's own bugs of this kind in out= and foreach kernels)",
            rules=("engine.version-counter-error", "identity.saved-unpack-version-checked"),
            probe=_probe_version_check)


def _probe_second_backward():
    x = leaf()
    y = (x * x).sum()
    y.backward()
    return accepted_or_raised(lambda: y.backward(), accepted="second backward ran")


single_edit("engine.saved-tensors-not-released", "reference.autograd.engine:execute",
            "if not retain_graph and node._saved:", "if False:",
            models="backward that never frees saved tensors (a persistent tape, as TensorFlow's "
                   "GradientTape(persistent=True) always)",
            rules=("engine.second-backward-error", "engine.backward-frees-saved-tensors",
                   "gc_cycles.backward-releases-saved-tensors"), probe=_probe_second_backward)


def _probe_retain_graph():
    x = leaf()
    y = (x * x).sum()
    y.backward(retain_graph=True)
    return accepted_or_raised(lambda: y.backward(), accepted="second backward ran")


single_edit("engine.retain-graph-ignored", "reference.autograd.engine:execute",
            "if not retain_graph and node._saved:", "if node._saved:",
            models="retain_graph=True not honoured by a node type (buffers freed anyway, as by custom "
                   "CUDA-graph or fused nodes that release eagerly)",
            rules=("engine.retain-graph-keeps-saved", "hooks.retain-graph-hooks-fire-each-backward"),
            probe=_probe_retain_graph)


def _probe_diamond():
    x = leaf()
    y = x * 1
    (y * 2 + y * 3).sum().backward()
    return x.grad.tolist()


single_edit("engine.gradients-overwritten-not-summed", "reference.autograd.engine:execute",
            "buffer[nr] = grad if previous is None else previous + grad", "buffer[nr] = grad",
            models="an input buffer that keeps the last gradient instead of the sum (InputBuffer::add "
                   "done as assignment)",
            rules="engine.node-runs-once-with-summed-grads", probe=_probe_diamond)


def _probe_ready_order():
    x = leaf()
    order = []
    a = x * 2
    b = x * 3
    a.grad_fn.register_prehook(lambda g: order.append("a"))
    b.grad_fn.register_prehook(lambda g: order.append("b"))
    (a + b).sum().backward()
    return order


single_edit("engine.oldest-node-first", "reference.autograd.engine:_priority",
            "else -node._seq", "else node._seq",
            models="a ready queue ordered oldest-first (a FIFO/BFS engine, as OneFlow's and Chainer's "
                   "topological order, instead of PyTorch's newest-sequence-number-first heap)",
            rules="engine.ready-newest-first", probe=_probe_ready_order)


def _probe_unused():
    x, w = leaf(), leaf()
    try:
        return fw().autograd.grad((x * 2).sum(), (x, w))[1]
    except RuntimeError:
        return "raised"


single_edit("engine.unused-input-silently-none", "reference.autograd:grad",
            "        allow_unused = materialize_grads\n", "        allow_unused = True\n",
            models="autograd.grad returning None for an input the outputs do not depend on without being "
                   "asked to (allow_unused defaulting to True, as JAX-free eager frameworks often do)",
            rules="engine.grad-unused-inputs", probe=_probe_unused)


def _probe_backward_inputs():
    x, w = leaf(), leaf()
    (x * w).sum().backward(inputs=[x])
    return w.grad is None


single_edit("engine.backward-inputs-ignored", "reference.autograd:backward",
            "    if inputs is not None:\n", "    if False:\n",
            models="backward(inputs=...) accepted but ignored (every leaf accumulates), as in PyTorch "
                   "before 1.8 added the argument, or a framework that parses it and drops it",
            rules="engine.backward-inputs-restricts", probe=_probe_backward_inputs)


def _probe_no_grad():
    with fw().no_grad():
        y = leaf() * 2
    return y.requires_grad


single_edit("engine.no-grad-records", "reference.ops.recording:needs_grad",
            "return _grad_state.enabled and (", "return (",
            models="ops that record a graph regardless of grad mode (a kernel family that forgets to "
                   "check GradMode, as several of PyTorch's early custom ops did)",
            rules="engine.no-grad-records-nothing", probe=_probe_no_grad)


def _probe_grad_mode_threads():
    import threading

    seen = []
    with fw().no_grad():
        t = threading.Thread(target=lambda: seen.append(fw().is_grad_enabled()))
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
    return accepted_or_raised(lambda: leaf().add_(1))


single_edit("engine.leaf-inplace-allowed", "reference.ops.inplace:check_inplace",
            "raise RuntimeError(LEAF_INPLACE)", "pass",
            models="in-place ops on a leaf that requires grad accepted (the leaf's value silently no longer "
                   "matches what its gradient refers to)",
            rules=("engine.leaf-inplace-error", "legacy_function.mark-dirty-leaf-raises"), probe=_probe_leaf_inplace)


def _probe_int_requires_grad():
    return accepted_or_raised(lambda: fw().tensor([1, 2]).requires_grad_())


single_edit("engine.requires-grad-on-integers", "reference.tensor:Tensor.requires_grad",
            "if value and not self.dtype.is_floating_point:", "if False:",
            models="requires_grad accepted on integer tensors (OneFlow 0.8 and MXNet accept it; gradients "
                   "then truncate)",
            rules="engine.requires-grad-float-only", probe=_probe_int_requires_grad, setter=True)


def _probe_nonleaf_warning():
    y = leaf() * 2
    return warnings_count(lambda: y.grad)


single_edit("engine.non-leaf-grad-silent", "reference.tensor:Tensor.grad",
            "warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)", "pass",
            models="no warning when reading .grad of a non-leaf (PyTorch < 1.5 returned None silently)",
            rules="engine.nonleaf-grad-warning", probe=_probe_nonleaf_warning)


def _probe_retain_grad():
    x = leaf()
    y = x * 2
    y.retain_grad()
    y.sum().backward()
    return None if y.grad is None else y.grad.tolist()


single_edit("engine.retain-grad-ignored", "reference.tensor:Tensor.retain_grad",
            "if self._node is None or self._retains_grad:", "if True:",
            models="retain_grad() accepted and ignored for non-leaves (a no-op stub, as in frameworks "
                   "that only expose it for API compatibility)",
            rules="engine.retain-grad", probe=_probe_retain_grad)


def _probe_gradient_shape():
    y = leaf() * 2
    return accepted_or_raised(lambda: y.backward(fw().ones(3)))


single_edit("engine.gradient-argument-unchecked", "reference.autograd:_root_grads",
            "elif grad.shape != out.shape:", "elif False:",
            models="backward(gradient) not checked against the output's shape (broadcast or failing deep "
                   "inside a kernel instead)",
            rules="engine.gradient-argument-validation", probe=_probe_gradient_shape)


def _probe_grad_assign_shape():
    x = leaf()
    try:
        x.grad = fw().ones(5)
        return "accepted"
    except RuntimeError:
        return "raised"


single_edit("engine.grad-assignment-unchecked", "reference.tensor:Tensor.grad",
            "if value.shape != self.shape:", "if False:",
            models="a .grad setter that accepts a tensor of another shape (the optimizer step then fails "
                   "or broadcasts)",
            rules="engine.grad-assignment-validated", probe=_probe_grad_assign_shape, setter=True)


def _probe_duplicate_roots():
    x = leaf()
    y = (x * 2).sum()
    fw().autograd.backward([y, y])
    return x.grad.tolist()


single_edit("engine.duplicate-roots-collapsed", "reference.autograd.engine:_deliver",
            "buffer[nr] = grad if previous is None else previous + grad", "buffer[nr] = grad",
            models="roots given twice counted once (roots deduplicated as a set)",
            rules="engine.duplicate-roots", probe=_probe_duplicate_roots)


def _probe_create_graph():
    x = leaf()
    (g,) = fw().autograd.grad((x * x * x).sum(), x, create_graph=True)
    return g.requires_grad


single_edit("engine.create-graph-ignored", "reference.autograd.engine:execute",
            "ops = TENSOR_OPS if create_graph else RAW_OPS", "ops = RAW_OPS",
            models="create_graph=True accepted but the backward formulas not recorded (no double "
                   "backward; a framework whose backward kernels are not differentiable)",
            rules="engine.create-graph-double-backward", probe=_probe_create_graph)
