"""Planted bugs the project's own tests use (area ``harness``: not scored, not a suite's area).

Importing the module registers them; the package imports the areas in a fixed order.
"""
from __future__ import annotations

from conformance.mutants import mutant, replace


def _crash_sin(*args, **kwargs):
    import os

    os.abort()


@mutant("harness.crash-on-sin", models="a framework that segfaults inside an op", rules=(),
        probe=lambda: "not probed (the process dies)", scored=False)
def _():
    """`Tensor.sin` and `sin` (what `fw.sin(x)` calls) kill the process (the differential
    tester must record a crash)."""
    replace("reference.tensor:Tensor.sin", _crash_sin)
    replace("reference:sin", _crash_sin)
