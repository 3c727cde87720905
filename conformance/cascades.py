"""One home rule per root cause: a cause that makes several rules DIVERGE names where it lives.

Why: a framework author reads each red cell as a finding. When one cause (Paddle drops a tensor's
Python wrapper) makes five rules diverge, four of them are cascades of the first unless each is
a finding of its own. So in an expectations file, a root cause whose DIVERGES entries cover more
than one rule marks one entry ``home = true`` (the rule that states the cause) and every DIVERGES
entry on another rule says why it is independent (``independent = "..."``: what it finds that
the home rule does not). A dependent test is not listed at all: it reaches the cause through a
prerequisite and is BLOCKED by the home rule.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from conformance.outcomes import Outcome

__all__ = ["problems"]


def problems(path: Path) -> list[str]:
    """Root causes in expectations file ``path`` that break the one-home-rule convention, one
    line each (``slug: what is wrong``)."""
    from conformance.model.expectations import file_entries

    diverging: dict[str, list] = defaultdict(list)
    for exp in file_entries(path):
        if exp.root_cause and exp.outcome is Outcome.DIVERGES:
            diverging[exp.root_cause].append(exp)
    out = []
    for slug, entries in diverging.items():
        rules = {e.rule for e in entries}
        homes = sorted({e.rule for e in entries if e.home})
        if len(rules) < 2:
            continue
        if len(homes) != 1:
            out.append(f"{slug}: DIVERGES on {len(rules)} rules needs exactly one home rule "
                       f"(home = true), has {len(homes)}{': ' + ', '.join(homes) if homes else ''}")
            continue
        loose = sorted({e.rule for e in entries if e.rule != homes[0] and not e.independent.strip()})
        if loose:
            out.append(f"{slug}: home {homes[0]}; DIVERGES on {', '.join(loose)} without "
                       "independent = \"why\" (or make those tests BLOCKED by a prerequisite)")
    return out
