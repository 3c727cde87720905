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
