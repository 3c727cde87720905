"""The curated mutants: lifetime bugs of the kinds real frameworks have, planted in the reference.

One module per suite area (``identity``, ``gc_cycles``, ...), what their probes share in
``shared``. Each entry: ``@mutant(id, models=..., rules=..., probe=...)`` on a function that
applies the bug with ``edit`` (a source edit of a reference function, anchored by a token
pattern: conformance/mutants/anchor.py) or ``replace``, or ``single_edit(...)`` for a mutant that
is one edit. The probe's value differs on the mutant (checked by tests/mutants and by
``python -m conformance.mutants``). Importing this package registers them, area by area in the
order below (the order of ``--list`` and of ``reports/mutants.json``).
"""
from conformance.mutants.catalogue import (  # noqa: F401 - importing registers
    identity, gc_cycles, hooks, engine, forward_levels, legacy_function, saved_tensors, views, harness)
