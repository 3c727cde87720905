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
