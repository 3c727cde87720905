"""The side observations a test skipped, for its record ("not checked: F").

Why (issue 33, judge at the check level): only the absence of a test's subject makes it
UNSUPPORTED. A check beside the subject that needs a feature the framework lacks (reading
``grad_fn`` in a test about gradients) is skipped through :func:`conformance.api.aside`, and
the test still judges its subject; what was skipped is said on the test's line, the page and
the results file (``TestRecord.not_checked``), so a reader knows the verdict is partial.

The plugin opens a list before each suite test and takes it when the test's call ends; a
reproduction script (no plugin) prints each note instead.
"""
from __future__ import annotations

import sys

_notes: list[str] | None = None


def begin() -> None:
    """Start collecting the notes of the test about to run."""
    global _notes
    _notes = []


def note(feature: str, what: str) -> None:
    """Record that the side observation ``what`` was not checked: ``feature`` is missing."""
    line = f"{feature}: {what}" if what else feature
    if _notes is None:  # outside the harness (a reproduction script): say it where it runs
        print(f"not checked: {line}", file=sys.stderr)
    elif line not in _notes:  # a leak check runs the body several times
        _notes.append(line)


def taken() -> tuple[str, ...]:
    """The notes of the test that ran (in order), and stop collecting."""
    global _notes
    out, _notes = tuple(_notes or ()), None
    return out
