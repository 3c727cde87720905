"""The reproduction script of every cell of a report: one per (run, rule), made from the run.

The page renderer (conformance/report/html.py) once generated these itself; it now only lays
out what this module returns. Each run's scripts come from the suite source that run recorded
(its revision, adapter spec, framework version, device, the tests it ran): :mod:`derive`.
"""
from __future__ import annotations

from conformance.repro import derive
from conformance.results import cells as _cells
from conformance.results.combined import Combined

#: run label -> rule id -> text (a script, or why that cell has none)
ByCell = dict[str, dict[str, str]]


def scripts_for(data: Combined) -> tuple[ByCell, ByCell]:
    """(run label -> rule id -> reproduction script, run label -> rule id -> why that cell has
    none: e.g. the run's suite revision is not in this clone)."""
    scripts: ByCell = {}
    errors: ByCell = {}
    for run in data.runs:
        label = run.label
        scripts[label], errors[label] = {}, {}
        if not run.tests:
            continue  # a column without results (not installed, not run): nothing to reproduce
        info = derive.RunInfo.of(run, label)
        try:
            tree = info.tree()
        except derive.ReproError as exc:
            errors[label] = {rid: f"(no reproduction script: {exc})" for rid in data.rule_ids}
            continue
        cells = _cells.of_run(run.tests)
        for entry in data.catalogue:  # a RuleEntry: id, level, statement, as generate reads
            names = cells[entry.id].names if entry.id in cells else None
            try:
                scripts[label][entry.id] = derive.generate(entry, info, tree, names)
            except (derive.ReproError, ValueError, KeyError) as exc:
                errors[label][entry.id] = f"(no reproduction script: {exc})"
    return scripts, errors
