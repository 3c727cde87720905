"""The terminal summary: outcome counts per suite, each with its denominator.

Why denominators: "12 passed" says nothing without "of 40"; and UNSUPPORTED gets its own
column and reasons, so that a feature the framework lacks is never mistaken for a pass.
"""
from __future__ import annotations

from conformance.outcomes import ORDER, Outcome
from conformance.results import Tally


def render(tally: Tally, title: str) -> list[str]:
    totals = tally.totals()
    if not totals:
        return [f"{title}: no suite tests ran"]
    columns = [o.value for o in ORDER if o is Outcome.PASS or totals.get(o.value)]
    columns += sorted(set(totals) - set(columns))
    width = max(len("suite"), len("all"), *(len(s) for s in tally.by_suite))
    head = f"{'suite':<{width}}  {'tests':>5}  " + "  ".join(f"{c:>{max(len(c), 9)}}" for c in columns)
    lines = [title, head]

    def row(name: str, counts) -> str:
        n = sum(counts.values())
        cells = "  ".join(f"{f'{counts.get(c, 0)}/{n}':>{max(len(c), 9)}}" for c in columns)
        return f"{name:<{width}}  {n:>5}  {cells}"

    for suite in sorted(tally.by_suite):
        lines.append(row(suite, tally.by_suite[suite]))
    lines.append(row("all", totals))
    if tally.not_run:
        lines.append(f"NOT RUN: {len(tally.not_run)} collected suite tests produced no outcome "
                     f"(the run was interrupted); first: {tally.not_run[0]}")
    if tally.unsupported:
        lines.append(f"UNSUPPORTED ({sum(tally.unsupported.values())} tests):")
        for message, count in tally.unsupported.most_common():
            lines.append(f"  {count:>4} x {message}")
    return lines


def top_causes(causes, adapter_spec: str, limit: int = 3) -> list[str]:
    """The page's first screen in a few lines: the run's top root causes that break rules
    (``causes``: ranked, :func:`conformance.report.rootcause.root_causes`), each with the rules
    it breaks and blocks and the command that prints its upstream-ready report (witness script,
    its output, the rule's words); then how many more there are and how many causes are only a
    missing feature."""
    breaking = [c for c in causes if c.kind == "breaks"]
    missing = [c for c in causes if c.kind != "breaks"]
    if not causes:
        return []
    lines = [f"top root causes ({len(breaking)} break rules"
             + (f", {len(missing)} only a missing feature" if missing else "")
             + "; the page lists them all):"]
    for cause in breaking[:limit]:
        rules = ", ".join(cause.rules[:3]) + (f" +{len(cause.rules) - 3}" if len(cause.rules) > 3 else "")
        blocks = f"; blocks {len(cause.blocks)}" if cause.blocks else ""
        lines.append(f"  {cause.rank}. {cause.id}: {_short(cause.summary)}")
        lines.append(f"     breaks {len(cause.rules)} rule{'s' if len(cause.rules) != 1 else ''} "
                     f"({rules}){blocks}")
        witness = cause.witness
        if witness is not None and witness.status not in (None, "no witness"):
            state = "fixed? " if witness.fixed else f"{witness.status}; "
            lines.append(f"     witness {state}report: python -m conformance.witness "
                         f"--adapter {adapter_spec} --issue {cause.id}")
        elif cause.source == "expectation":
            lines.append(f"     no witness yet: python -m conformance.witness --adapter "
                         f"{adapter_spec} --issue {cause.id} shows the rule and a test")
        else:
            first = cause.tests[0] if cause.tests else ""
            lines.append(f"     no expectation names it (a cluster of messages); first test: {first}")
    if len(breaking) > limit:
        lines.append(f"  ... {len(breaking) - limit} more that break rules")
    return lines


def _short(text: str, width: int = 110) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= width else line[:width - 1] + "…"
