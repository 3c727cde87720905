"""Objects older than a test are frozen out of the garbage collector's walk (``gc.freeze``).

Why: the suites call ``gc.collect()`` hundreds of times (every liveness watch and control), and
a full collection walks every tracked object in the process: pytest's collected items and
rewritten assertions, the suite index, the framework's import-time objects. Measured on the
reference's suites, those walks were about three quarters of the run's CPU time. What the
rules judge is made by the test itself, after the freeze: it is collected as before, and a
cycle it makes stays collectable even when it points at frozen objects (a reference from a
frozen object keeps its target alive, as it should).

Frozen objects are invisible to ``gc.get_referrers`` and ``gc.get_objects``: code that
searches the heap (keep-alive chains, the leak check's counts) thaws it first with
:func:`thaw`, and the next test freezes again. An object frozen while reachable that later
becomes part of a garbage cycle is not collected (its memory stays): only objects that a
collection just before the freeze found reachable are frozen, so this is state that outlives
tests (a module fixture), never a test's own scenario.
"""
from __future__ import annotations

import gc


#: Whether this module froze the heap and nothing thawed it since. Kept here because
#: ``gc.get_freeze_count()`` walks the whole frozen list: a million objects, tens of ms a test.
_frozen = False


def before_test() -> None:
    """Collect, then freeze everything alive, unless it is frozen already (the first test, and
    the first after a thaw)."""
    if not _frozen:
        freeze()


def freeze(*, collect_first: bool = True) -> None:
    """Collect (unless the caller just did), then freeze everything alive now. Frozen already,
    this walks only what was made since (a collection does not walk the frozen objects), so it
    is cheap."""
    global _frozen
    if collect_first:
        gc.collect()
    gc.freeze()
    _frozen = True


def is_frozen() -> bool:
    """Whether :func:`freeze` froze the heap and nothing thawed it since."""
    return _frozen


def thaw() -> None:
    """Return every frozen object to the collector's view, for code that must see the whole
    heap (every unfreeze in the harness goes through here); the next test freezes again."""
    global _frozen
    gc.unfreeze()
    _frozen = False


def thaw_if_frozen() -> None:
    """At the end of a run: thaw what :func:`before_test` froze, if it is still frozen."""
    if _frozen:
        thaw()
