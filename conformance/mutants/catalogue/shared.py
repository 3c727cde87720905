"""What the curated mutants' probes and patches share: the engine, a leaf, the probe patterns.

A probe is a few lines of user code whose value differs on the mutant; most of them are one of
a few shapes (was an object freed by reference counting alone, did an operation raise, how many
warnings, a custom Function that doubles its input, a dual tensor), written once here.
"""
from __future__ import annotations

import gc
import warnings
import weakref
from typing import Callable


def fw():
    """The reference engine's torch-shaped namespace (imported when a probe first runs)."""
    import reference

    return reference


def fwad_module():
    """``torch.autograd.forward_ad`` of the reference."""
    return fw().autograd.forward_ad


def leaf(*values):
    """A leaf that requires grad, ``[1.0, 2.0]`` unless given values."""
    return fw().tensor(list(values) or [1.0, 2.0], requires_grad=True)


def collected(make: Callable[[], object]) -> bool:
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


def accepted_or_raised(call: Callable[[], object], errors=RuntimeError, accepted: str = "accepted") -> str:
    """``"raised"`` when ``call()`` raises one of ``errors``, else ``accepted``: the probe of a
    check the mutant removes (or adds)."""
    try:
        call()
    except errors:
        return "raised"
    return accepted


def warnings_count(call: Callable[[], object]) -> int:
    """How many warnings ``call()`` gives, each one counted (the ``"always"`` filter)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return len(caught)


def double_function():
    """A custom ``autograd.Function`` class: forward ``x * 2``, backward ``g * 2``."""

    class Double(fw().autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Double


def new_dual(primal=(1.0,), tangent=(2.0,)):
    """A dual tensor at the open forward-AD level (call it inside ``dual_level()``)."""
    return fwad_module().make_dual(fw().tensor(list(primal)), fw().tensor(list(tangent)))


def saved_hooks(pack, unpack):
    """``torch.autograd.graph.saved_tensors_hooks(pack, unpack)`` of the reference."""
    return fw().autograd.graph.saved_tensors_hooks(pack, unpack)


def fresh_alias(tensor):
    """A new tensor object sharing ``tensor``'s data, version counter and history: what a
    framework that re-wraps its tensors hands out instead of the object itself."""
    from reference.tensor import Tensor

    out = Tensor._wrap(tensor._array)
    out._version_counter = tensor._version_counter
    out._node, out._output_nr, out._requires_grad = tensor._node, tensor._output_nr, tensor._requires_grad
    return out
