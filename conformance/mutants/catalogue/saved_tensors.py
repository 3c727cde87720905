"""Curated mutants of the saved_tensors suite's area: saved-tensor hooks: what a node keeps once a
tensor is packed, when unpack runs, which hooks win.

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

import gc
import weakref

from conformance.mutants import single_edit
from conformance.mutants.catalogue.shared import leaf, saved_hooks


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
