"""Root causes as an expectations file declares them: one :class:`Cause` type, one rule for its kind.

Why one type: a root cause is one claim about a framework ("Paddle drops the Python wrapper of a
tensor it still holds"), written once in an expectations file (the ``root_cause`` slug shared by
its entries, their common ``reason``, the ``witness`` that shows it, the ``home`` rule and the
``independent`` DIVERGES elsewhere). The witnesses, the cascades check and the ranked causes of
the page all read it from here; :func:`kind_of` is the one rule that says whether a cause breaks
rules or only stands for a missing feature, for a declared cause and a ranked one alike.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable

from conformance.model.expectations import ExpectationsError, ExpectationsFile
from conformance.outcomes import Outcome

#: The two kinds of root cause, in rank order: broken rules first, missing features after.
BREAKS, UNSUPPORTED = KINDS = ("breaks", "unsupported")


def kind_of(outcomes: Iterable[Outcome | str]) -> str:
    """``unsupported`` when every outcome is UNSUPPORTED (the cause is only a missing feature),
    else ``breaks`` (a cause with no outcome of its own, known only from the tests it blocks,
    breaks)."""
    seen = {getattr(o, "value", o) for o in outcomes}
    return UNSUPPORTED if seen and seen <= {Outcome.UNSUPPORTED.value} else BREAKS


@dataclasses.dataclass
class Cause:
    """One root cause of an expectations file."""

    slug: str                       # the entries' root_cause, or "rule:<id>" for an entry without
    statement: str                  # the entries' one reason
    kind: str                       # BREAKS or UNSUPPORTED (kind_of the entries' outcomes)
    witness: str = ""               # the script that shows the cause ("" none)
    rules: list[str] = dataclasses.field(default_factory=list)      # in file order, once each
    home: list[str] = dataclasses.field(default_factory=list)       # rules marked home = true
    #: rule -> why its DIVERGES is no cascade of the home rule ("" where an entry does not say)
    independence: dict[str, str] = dataclasses.field(default_factory=dict)
    diverging: list[str] = dataclasses.field(default_factory=list)  # rules with a DIVERGES entry


def declared(found: ExpectationsFile, version: str | None = None) -> list[Cause]:
    """The root causes of an expectations file, in file order; with ``version``: only from the
    entries that apply to that framework version. ExpectationsError when one cause has two
    different witnesses."""
    causes: dict[str, Cause] = {}
    outcomes: dict[str, list[Outcome]] = {}
    for exp in found.entries:
        if version is not None and not exp.applies_to(version):
            continue
        slug = exp.root_cause or f"rule:{exp.rule}"
        cause = causes.setdefault(slug, Cause(slug, exp.reason, BREAKS))
        outcomes.setdefault(slug, []).append(exp.outcome)
        if exp.rule not in cause.rules:
            cause.rules.append(exp.rule)
        if exp.outcome is Outcome.DIVERGES:
            if exp.rule not in cause.diverging:
                cause.diverging.append(exp.rule)
            why = exp.independent.strip()  # every DIVERGES entry of the rule must say why
            cause.independence[exp.rule] = cause.independence.get(exp.rule, why) and why
        if exp.home and exp.rule not in cause.home:
            cause.home.append(exp.rule)
        if exp.witness:
            if cause.witness and cause.witness != exp.witness:
                raise ExpectationsError(f"{found.path}: [{exp.rule}]: root cause {slug!r} has two "
                                        "different witnesses; one root cause, one witness")
            cause.witness = exp.witness
    for slug, cause in causes.items():
        cause.kind = kind_of(outcomes[slug])
    return list(causes.values())
