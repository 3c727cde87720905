"""Curated mutants of the saved_tensors suite's area: saved-tensor hooks: what a node keeps once a
tensor is packed, when unpack runs, which hooks win.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

import gc
import weakref

from conformance.mutants import mutant, original, replace, single_edit
from conformance.mutants.catalogue.shared import collected, fw, leaf, saved_hooks


def _probe_original_dropped():
    gc.disable()
    try:
        x = leaf()
        with saved_hooks(lambda t: t.detach().clone(), lambda p: p):
            y = (x * 1) * 2.0
            t = x * 1
            z = t * t
        ref = weakref.ref(t)
        del t
        return ref() is None, y is not None, z is not None
    finally:
        gc.enable()


single_edit("saved_tensors.node-keeps-original", "reference.autograd.graph:SavedTensor._pack",
            "self._tensor = None", "pass",
            models="a node that packs a saved tensor but keeps the original too (pack hooks that offload "
                   "to CPU or disk then save no memory at all)",
            rules="saved_tensors.node-holds-only-packed", probe=_probe_original_dropped)


def _probe_unpack_every_access():
    calls = []
    x = leaf()
    with saved_hooks(lambda t: t, lambda p: calls.append(1) or p):
        y = x * x
    for _ in range(3):
        y.grad_fn._saved_self
    return len(calls)


single_edit("saved_tensors.unpack-once-at-save", "reference.autograd.graph:SavedTensor._pack",
            "hooks.unpack_hook = unpack_hook", "hooks.unpack_hook = (lambda p, value=unpack_hook(packed): value)",
            models="an engine that unpacks eagerly and caches the result (the unpacked tensor then lives as "
                   "long as the graph, defeating offloading hooks)",
            rules="saved_tensors.unpack-on-every-access", probe=_probe_unpack_every_access)


def _probe_innermost_hooks():
    seen = []
    x = leaf()
    with saved_hooks(lambda t: seen.append("outer") or t, lambda p: p):
        with saved_hooks(lambda t: seen.append("inner") or t, lambda p: p):
            x * x
    return seen


single_edit("saved_tensors.outermost-hooks-win", "reference.autograd.graph:SavedTensor.__init__",
            "pack_hook, unpack_hook = _saved_hooks.stack[-1]", "pack_hook, unpack_hook = _saved_hooks.stack[0]",
            models="a hook stack read from the bottom (the first registered pair wins over a nested one)",
            rules="saved_tensors.innermost-hooks-win", probe=_probe_innermost_hooks)


def _probe_hook_functions_freed():
    def make():
        def unpack(packed):
            return packed
        with saved_hooks(lambda t: t, unpack):
            pass
        return unpack
    return collected(make)


single_edit("saved_tensors.last-hooks-kept", "reference.autograd.graph:saved_tensors_hooks.__exit__",
            "_saved_hooks.stack.pop()", "_saved_hooks.last_exited = _saved_hooks.stack.pop()",
            models="an engine that keeps the pair of the last exited block in a per-thread slot (torch 1.10 "
                   "kept its one pair of 'default hooks' in a global slot): the hook functions, and the "
                   "storage they close over, outlive the block and every graph recorded in it",
            rules="saved_tensors.hook-functions-released", probe=_probe_hook_functions_freed)


def _probe_popped_on_exception():
    from reference.autograd.graph import restore_saved_hooks, saved_hooks_snapshot

    seen = []
    x = leaf()
    snapshot = saved_hooks_snapshot()
    try:
        try:
            with saved_hooks(lambda t: seen.append("left") or t, lambda p: p):
                raise KeyError("the user's error")
        except KeyError:
            pass
        x * x
    finally:
        restore_saved_hooks(snapshot)  # the probe runs in the process that later runs the suites clean
    return seen


single_edit("saved_tensors.hooks-kept-on-exception", "reference.autograd.graph:saved_tensors_hooks.__exit__",
            "if not _saved_hooks.stack:", "if not _saved_hooks.stack or exc[0] is not None:",
            models="a hooks context whose clean-up runs on a normal exit only (code after the yield of a "
                   "contextmanager without try/finally): a block left by an exception leaves its pair on "
                   "the stack, packing every later saved tensor",
            rules="saved_tensors.hooks-popped-on-exception", probe=_probe_popped_on_exception)


def _probe_unpack_reentrant():
    inner = []

    def unpack(packed):
        w = leaf(3.0, 3.0)
        with fw().enable_grad():
            (w * w).sum().backward()
        inner.append(w.grad.tolist())
        return packed

    x = leaf()
    with saved_hooks(lambda t: t, unpack):
        y = x * x
    try:
        y.sum().backward()
    except RuntimeError:
        return "raised"
    return inner


@mutant("saved_tensors.unpack-not-reentrant",
        models="an engine that marks itself busy while it unpacks saved tensors and refuses a backward "
               "started from inside (a non-reentrant engine lock held around the unpack hook, which in a "
               "native engine deadlocks instead)",
        rules="saved_tensors.unpack-reentrant-backward", probe=_probe_unpack_reentrant)
def _unpack_not_reentrant():
    """The unpack of a hooked saved tensor runs with a busy flag set; execute() refuses to start
    while it is set."""
    import threading

    busy = threading.local()
    unpack, execute = original("reference.autograd.graph:_Packed.unpack"), original("reference.autograd.engine:execute")

    def guarded_unpack(self, node, as_tensor):
        busy.on = True
        try:
            return unpack(self, node, as_tensor)
        finally:
            busy.on = False

    def guarded_execute(*args, **kwargs):
        if getattr(busy, "on", False):
            raise RuntimeError("backward started while the engine unpacks a saved tensor")
        return execute(*args, **kwargs)

    replace("reference.autograd.graph:_Packed.unpack", guarded_unpack)
    replace("reference.autograd.engine:execute", guarded_execute)
