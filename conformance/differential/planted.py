"""Bugs planted in a copy of the reference, to test the tester (tests/differential/test_search.py).

The copy is the reference imported in a worker subprocess (``--plant module:function`` or
``--plant <mutant id>`` of ``worker.py``, ``SubprocessTarget(plant=...)``): the function below
runs there after the import, so the oracle in the parent process stays intact. The bugs are
mutants of the shared registry (conformance/mutants), which the suites are scored against too.
"""
from __future__ import annotations

from conformance import mutants


def reverse_tensor_hooks() -> None:
    """Tensor hooks (Tensor.register_hook) run in reverse registration order."""
    mutants.activate("hooks.tensor-hooks-reversed")


def crash_on_sin() -> None:
    """Tensor.sin kills the process (as a segfaulting framework would)."""
    mutants.activate("harness.crash-on-sin")


# -- an adapter that declares a feature missing while its framework misbehaves there ---------
# What the tester is held to: a feature the adapter declares missing is never asked for, so
# no finding can rest on it, however the framework behaves there (MyGrad's trial: `t.grad =
# None` on a read-only `grad` was reported as a finding although grad_assignment was declared
# missing).
def read_only_grad() -> None:
    """``Tensor.grad`` becomes a read-only property (no setter, as MyGrad's): assigning it
    raises Python's ``AttributeError``; reading and deleting it still work."""
    from reference.tensor import Tensor

    Tensor.grad = property(Tensor.grad.fget, None, Tensor.grad.fdel)


def _reference_adapter():
    from adapters.reference_adapter import ReferenceAdapter

    return ReferenceAdapter


class ReadOnlyGrad(_reference_adapter()):
    """The reference as a framework whose ``.grad`` cannot be assigned (plant
    :func:`read_only_grad` in its worker): it declares ``grad_assignment`` missing and clears a
    gradient its own way (``del t.grad``), as MyGrad's adapter would with ``null_grad()``."""

    name = "planted-read-only-grad"
    unsupported = {"grad_assignment": "Tensor.grad is a read-only property (planted)"}

    def clear_grad(self, tensor):
        del tensor.grad


class NoTensorHooks(_reference_adapter()):
    """The reference as a framework that declares ``tensor_hooks`` missing (plant
    :func:`reverse_tensor_hooks` in its worker: the hooks it has run in reverse order), for the
    guard that no divergence of a program replayed from a file rests on a declared feature."""

    name = "planted-no-tensor-hooks"
    unsupported = {"tensor_hooks": "declared missing (planted)"}
