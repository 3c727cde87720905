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

from pathlib import Path

from conformance.model import causes, expectations

__all__ = ["problems"]


def problems(path: Path) -> list[str]:
    """Root causes in expectations file ``path`` that break the one-home-rule convention, one
    line each (``slug: what is wrong``); the causes as :mod:`conformance.model.causes` reads them."""
    out = []
    for cause in causes.declared(expectations.read(path)):
        if cause.slug.startswith("rule:") or len(cause.diverging) < 2:
            continue
        homes = sorted(r for r in cause.home if r in cause.diverging)
        if len(homes) != 1:
            out.append(f"{cause.slug}: DIVERGES on {len(cause.diverging)} rules needs exactly one "
                       f"home rule (home = true), has {len(homes)}"
                       f"{': ' + ', '.join(homes) if homes else ''}")
            continue
        loose = sorted(r for r in cause.diverging if r != homes[0] and not cause.independence[r])
        if loose:
            out.append(f"{cause.slug}: home {homes[0]}; DIVERGES on {', '.join(loose)} without "
                       "independent = \"why\" (or make those tests BLOCKED by a prerequisite)")
    return out
