"""Bugs planted in a copy of the reference, to test the tester (tests/differential/test_search.py).

The copy is the reference imported in a worker subprocess (``--plant module:function`` of
``worker.py``, ``SubprocessTarget(plant=...)``): the function below runs there after the
import, so the oracle in the parent process stays intact.
"""
from __future__ import annotations


def reverse_tensor_hooks() -> None:
    """Tensor hooks (Tensor.register_hook) run in reverse registration order."""
    from reference.autograd import engine

    original = engine._call_tensor_hooks

    def call_reversed(hooks, grad, ops):
        return original(dict(reversed(list(hooks.items()))), grad, ops)

    engine._call_tensor_hooks = call_reversed


def crash_on_sin() -> None:
    """Tensor.sin kills the process (as a segfaulting framework would)."""
    import os

    import reference

    def sin(self):
        os.abort()

    reference.Tensor.sin = sin
