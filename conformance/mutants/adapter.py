"""The reference engine with a planted bug: the adapter the mutants tool runs the suites with.

``AUTOGRAD_CONFORMANCE_MUTANT=<id> pytest --adapter=conformance.mutants.adapter:PlantedReference``
runs the suites against the reference with mutant ``<id>`` applied. The patch comes from this
side: the reference adapter knows nothing of mutants (it only refuses the variable, so that a
bug meant to be planted is never silently absent). Every process that loads the adapter by
this spec (pytest-xdist workers, fresh interpreters, the isolation probe) plants the same bug.
"""
from __future__ import annotations

import os

from adapters.base import FrameworkNotInstalled
from adapters.reference_adapter import ReferenceAdapter
from conformance import mutants

#: the ``--adapter`` value that plants ``$AUTOGRAD_CONFORMANCE_MUTANT``
SPEC = "conformance.mutants.adapter:PlantedReference"


class PlantedReference(ReferenceAdapter):
    """The reference adapter, plus the mutant named by the environment (none: the clean one)."""

    def _import(self):
        import reference

        mutant = os.environ.get(mutants.ENV, "").strip()
        if mutant:
            if mutant not in mutants.load():
                raise FrameworkNotInstalled(
                    f"{mutants.ENV}={mutant!r}: no mutant has this id; list the ids with "
                    f"python -m conformance.mutants --list, or unset the variable")
            mutants.activate_from_env()
        return reference
