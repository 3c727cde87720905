"""From tests to the matrix: one cell per (rule, run), counts per (suite, run).

A cell (:mod:`conformance.results.cells`, the one definition) shows the most severe outcome of
a rule's tests, so one diverging test makes the rule diverge. Denominators come from the
catalogue (rules) and from the largest number of tests any run recorded for a suite, so a run
that lost tests shows them as NOT RUN instead of looking green.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from conformance import outcomes
from conformance.outcomes import NOT_INSTALLED, NOT_RUN
from conformance.results import cells as _cells
from conformance.results.cells import Cell
from conformance.results.combined import Column, Combined
from conformance.versions import version_key

#: Actual outcomes that count as holding a rule.
HELD = tuple(o.value for o in outcomes.HELD)

STYLE = {  # outcome -> (symbol, css class, meaning)
    "PASS": ("✓", "pass", "the rule holds"),
    "OBSERVED": ("◉", "observed", "implementation-defined: recorded what the framework does"),
    "DIVERGES": ("✗", "diverges", "the framework breaks the rule"),
    "XFAIL": ("≈", "xfail", "final outcome: broke the rule as its expectations file says (a cell shows the real outcome with an \"expected\" badge)"),
    "XPASS": ("★", "xpass", "expected to break the rule but it held: remove the expectation"),
    "UNSUPPORTED": ("∅", "unsupported", "the framework lacks a feature the rule needs"),
    "ERROR": ("!", "error", "the test broke (not a verdict on the rule)"),
    "CRASH": ("☠", "crash", "the process died running the test"),
    "BLOCKED": ("⊘", "blocked", "a prerequisite rule failed first (blocked_by names it)"),
    "TIMEOUT": ("◷", "timeout", "the test ran out of time"),
    "LEAK": ("♒", "leak", "held, but left objects or memory behind on every run"),
    NOT_RUN: ("·", "notrun", "no result: the test did not run in this run"),
    NOT_INSTALLED: ("—", "notinstalled", "the framework could not be installed"),
}


def cells(data: Combined) -> dict[tuple[str, str], Cell]:
    """(rule id, run label) -> its cell (:func:`conformance.results.cells.table`)."""
    return _cells.table(data.runs, data.rule_ids)


def broken(cell: Cell) -> bool:
    return cell.broken


def suite_counts(data: Combined, table) -> dict[tuple[str, str], dict[str, Any]]:
    """(suite, run label) -> rule outcome counts, rules held / rules, tests recorded / tests."""
    expected = _cells.expected_names(run.tests for run in data.runs)
    out = {}
    suites = sorted({e.suite for e in data.catalogue})
    for run in data.runs:
        for suite in suites:
            rules = [e.id for e in data.catalogue if e.suite == suite]
            counts = Counter(table[(r, run.label)].outcome for r in rules)
            actual = Counter(table[(r, run.label)].actual for r in rules)
            held = sum(table[(r, run.label)].actual in HELD for r in rules)
            n_tests = sum(max(len(expected.get(r, ())), 1) for r in rules)
            recorded = sum(1 for t in run.tests if t.suite == suite)
            out[(suite, run.label)] = {"counts": dict(counts), "actual": dict(actual),
                                          "held": held,
                                          "rules": len(rules), "tests": recorded,
                                          "tests_expected": n_tests}
    return out


def only_one(data: Combined, table) -> list[dict[str, Any]]:
    """Rules that exactly one column breaks, and rules that only one framework (any of its
    versions) breaks, with who."""
    out = []
    for entry in data.catalogue:
        who = [run for run in data.runs if table[(entry.id, run.label)].broken]
        frameworks = {run.framework for run in who}
        if len(who) == 1:
            out.append({"rule": entry.id, "suite": entry.suite, "scope": "column",
                        "who": who[0].title, "label": who[0].label})
        elif len(frameworks) == 1 and who:
            out.append({"rule": entry.id, "suite": entry.suite, "scope": "framework",
                        "who": who[0].framework + " (all versions tested: "
                        + ", ".join(r.title for r in who) + ")",
                        "label": who[0].label})
    return out


def _first_message(cell: Cell) -> str:
    for t in cell.tests:
        if t.actual_outcome not in HELD and t.message and t.message.strip():
            return t.message.strip().splitlines()[0][:300]
    return ""


def version_changes(data, table) -> list[dict[str, Any]]:
    """For each framework with two or more runs (oldest version first), what changed between
    consecutive versions: rules fixed (broke, now hold), regressed (held, now break) and
    changed (broke both times, differently), each with the messages of both runs."""
    by_framework: dict[tuple[str, str], list[Column]] = defaultdict(list)
    for run in data.runs:
        if run.has_results:  # each mode (eager, torch-compile...) its own line of versions
            by_framework[(run.framework, run.mode)].append(run)
    out = []
    for (framework, _mode), runs in by_framework.items():
        runs = sorted(runs, key=lambda r: version_key(r.framework_version))
        for old, new in zip(runs, runs[1:]):
            diff = {"framework": framework, "old": old.label, "new": new.label,
                    "old_title": old.title, "new_title": new.title,
                    **_changes(data, table, old, new)}
            out.append(diff)
    return out


def _changes(data, table, old: Column, new: Column) -> dict[str, list[dict[str, Any]]]:
    """Rules whose outcome differs between runs ``old`` and ``new``: fixed (broke, now hold),
    regressed (held, now break), changed (broke both times, differently), with messages."""
    out: dict[str, list[dict[str, Any]]] = {"fixed": [], "regressed": [], "changed": []}
    for entry in data.catalogue:
        a, b = table[(entry.id, old.label)], table[(entry.id, new.label)]
        if NOT_RUN in (a.actual, b.actual):
            continue
        kind = None
        if a.actual not in HELD and b.actual in HELD:
            kind = "fixed"
        elif a.actual in HELD and b.actual not in HELD:
            kind = "regressed"
        elif a.actual not in HELD and a.actual != b.actual:
            kind = "changed"
        if kind:
            expectation = b.expectation or {}
            out[kind].append({"rule": entry.id, "suite": entry.suite, "level": entry.level,
                              "old": a.actual, "new": b.actual,
                              "old_message": _first_message(a), "new_message": _first_message(b),
                              "cause": expectation.get("root_cause", ""),
                              "reason": expectation.get("reason", ""),
                              "upstream": expectation.get("upstream", "")})
    return out


def mode_changes(data, table, since=None) -> list[dict[str, Any]]:
    """For each run in a mode other than its framework's own (torch under torch.compile),
    the rules whose outcome differs from the framework's own mode at the same version:
    what the mode changes, each with its cause (the mode's expectations entry: root cause,
    reason, upstream issue) and the messages of both runs, and ``since`` which recorded release
    the difference exists (``since(mode, rule, version)``: the page passes the mode history's,
    conformance.history.modes; "" unrecorded).
    A mode run without an eager run of its version beside it is listed with ``eager`` None."""
    eager = {(run.framework, run.framework_version): run for run in data.runs
             if run.has_results and not run.mode}
    out = []
    for run in data.runs:
        if not run.mode or not run.has_results:
            continue
        base = eager.get((run.framework, run.framework_version))
        entry: dict[str, Any] = {"framework": run.framework, "mode": run.mode,
                                 "label": run.label, "title": run.title,
                                 "eager": base.label if base else None,
                                 "eager_title": base.title if base else None,
                                 "fixed": [], "regressed": [], "changed": []}
        if base is not None:
            entry.update(_changes(data, table, base, run))
        for kind in ("fixed", "regressed", "changed"):
            for change in entry[kind]:
                change["since"] = since(run.mode, change["rule"], run.framework_version) \
                    if since else ""
        out.append(entry)
    return out


def mixed(cell: Cell) -> list[str]:
    """The other outcomes of a rule whose tests differ (most severe first), else []."""
    return cell.others()


#: Fill colour of each outcome in the per-suite bars (the cell colours' stronger shade).
BAR_COLOURS = {
    "PASS": "#3aa55a", "OBSERVED": "#3c9fc0", "DIVERGES": "#d63b3b", "UNSUPPORTED": "#9a9a9a",
    "BLOCKED": "#b38ad6", "ERROR": "#f08a24", "CRASH": "#3d2352", "TIMEOUT": "#a67c52",
    "LEAK": "#2f6fb0", "XFAIL": "#d68ab5", "XPASS": "#e3b400", NOT_RUN: "#ffffff",
    NOT_INSTALLED: "#dddddd",
}


def bar_svg(counts: dict[str, int], width: int = 140, height: int = 12) -> str:
    """Counts of rules per actual outcome as one stacked bar (plain SVG, a title per part)."""
    total = sum(counts.values()) or 1
    x = 0.0
    parts = [f'<svg class="bar" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="'
             + ", ".join(f"{n} {o}" for o, n in counts.items() if n) + '">']
    for outcome in _cells.by_severity(counts)[::-1]:
        n = counts.get(outcome, 0)
        if not n:
            continue
        w = width * n / total
        parts.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" '
                     f'fill="{BAR_COLOURS.get(outcome, "#000")}" stroke="#fff" stroke-width="0.5">'
                     f'<title>{outcome}: {n}</title></rect>')
        x += w
    parts.append("</svg>")
    return "".join(parts)
