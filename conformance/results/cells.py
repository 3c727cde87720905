"""The cell: what one run says about one rule. The one definition, for the page, the repro
check and the reproduction scripts.

Why one: the page's matrix, ``python -m conformance.repro.check`` (does a script reproduce
the cell?) and a script's own ``RESULT:`` line each computed "the outcome of a rule" and had
to agree by convention. Here:

* a rule's outcome is the most severe of its tests' (:func:`rule_outcome` for what the
  framework did, by :data:`conformance.outcomes.ACTUAL_SEVERITY`; the final outcome, after
  expectations, by :data:`conformance.outcomes.SEVERITY`), so one diverging test makes the
  rule diverge; a rule without any test result is ERROR;
* a test that another run recorded for the rule but this run did not is a NOT RUN row of the
  cell (NOT RUN is more severe than anything), so a run that lost tests never looks green;
* a cell is flaky when an expectation of one of its tests says the framework does not behave
  the same in every run (``flaky``): such cells are left out of reproduction samples.
"""
from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Iterable

from conformance.outcomes import (ACTUAL_SEVERITY, BROKEN, NOT_INSTALLED, NOT_RUN, SEVERITY,
                                  Outcome, worst)
from conformance.results.naming import function_name, test_name
from conformance.results.records import TestRecord

_ERROR = Outcome.ERROR.value
#: The messages of a cell's NOT RUN rows.
MISSING_TEST = "this run has no result for the test (other runs do)"
NO_TEST = "no test of this rule ran"


def rule_outcome(actuals: Iterable[str]) -> str:
    """What the framework did for a rule: the most severe of its tests' actual outcomes
    (ERROR when there are none). A reproduction script's ``RESULT:`` is this too."""
    found = [str(o) for o in actuals] or [_ERROR]
    return worst(found, ACTUAL_SEVERITY)


def final_outcome(finals: Iterable[str]) -> str:
    """The rule's final outcome (after expectations): the most severe of its tests'."""
    found = [str(o) for o in finals] or [_ERROR]
    return worst(found, SEVERITY)


def by_severity(found: Iterable[str], final: bool = False) -> list[str]:
    """``found`` outcomes most severe first (NOT RUN before all, unknown ones after)."""
    order = [NOT_RUN, *(o.value for o in (SEVERITY if final else ACTUAL_SEVERITY))]
    found = set(found)
    return [o for o in order if o in found] + sorted(found - set(order))


@dataclasses.dataclass
class Cell:
    """One rule in one run: its final ``outcome``, what the framework did (``actual``), its
    tests (NOT RUN rows included), the first expectation among them, and flakiness."""

    rule: str
    outcome: str
    actual: str
    tests: list[TestRecord]
    expectation: dict[str, Any] | None = None
    flaky: bool = False
    level: str | None = None

    @property
    def names(self) -> set[str]:
        """The test functions that ran (what a reproduction script of the cell calls)."""
        return {function_name(t.nodeid) for t in self.tests if t.actual != NOT_RUN}

    @property
    def broken(self) -> bool:
        """The framework breaks the rule (not merely UNSUPPORTED or BLOCKED)."""
        return self.actual in {o.value for o in BROKEN}

    def others(self) -> list[str]:
        """The other actual outcomes of a rule whose tests differ (most severe first)."""
        return [o for o in by_severity(t.actual_outcome or _ERROR for t in self.tests)
                if o != self.actual]


def cell(rule: str, tests: Iterable[TestRecord], expected: Iterable[str] = ()) -> Cell:
    """The cell of ``rule`` from the run's ``tests`` of it, padded with a NOT RUN row for each
    test name in ``expected`` (what other runs recorded for it) that the run lacks."""
    tests = list(tests)
    have = {test_name(t.nodeid) for t in tests}
    tests += [TestRecord.not_run(name, rule, MISSING_TEST) for name in sorted(set(expected) - have)]
    if not tests:
        tests = [TestRecord.not_run("(none)", rule, NO_TEST)]
    return Cell(rule=rule,
                outcome=final_outcome(t.outcome or _ERROR for t in tests),
                actual=rule_outcome(t.actual_outcome or _ERROR for t in tests),
                tests=tests,
                expectation=next((t.expectation for t in tests if t.expectation), None),
                flaky=any(t.flaky for t in tests),
                level=next((t.level for t in tests if t.level), None))


def of_run(tests: Iterable[TestRecord]) -> dict[str, Cell]:
    """rule -> cell for every rule one run has a test of (no padding: one run alone)."""
    by_rule: dict[str, list[TestRecord]] = defaultdict(list)
    for t in tests:
        if t.rule:
            by_rule[t.rule].append(t)
    return {rule: cell(rule, ts) for rule, ts in by_rule.items()}


def expected_names(runs_tests: Iterable[Iterable[TestRecord]]) -> dict[str, set[str]]:
    """rule -> the test names any of the runs recorded for it."""
    out: dict[str, set[str]] = defaultdict(set)
    for tests in runs_tests:
        for t in tests:
            if t.rule:
                out[t.rule].add(test_name(t.nodeid))
    return out


#: Column statuses with no results, and what their cells show.
NO_RESULTS = {"not-installed": NOT_INSTALLED, "missing": NOT_RUN}


def table(columns, rule_ids: Iterable[str]) -> dict[tuple[str, str], Cell]:
    """(rule id, column label) -> cell, for columns with ``label``, ``status`` and ``tests``
    (the runs of ``results.json``): every rule of ``rule_ids`` in every column, padded with
    the tests the other columns recorded; a column without results shows NOT INSTALLED or
    NOT RUN in every row."""
    columns = list(columns)
    rule_ids = list(rule_ids)
    expected = expected_names(c.tests for c in columns)
    out: dict[tuple[str, str], Cell] = {}
    for column in columns:
        by_rule: dict[str, list[TestRecord]] = defaultdict(list)
        for t in column.tests:
            by_rule[t.rule or "?"].append(t)
        for rid in rule_ids:
            if column.status in NO_RESULTS:
                out[(rid, column.label)] = Cell(rid, NO_RESULTS[column.status], NOT_RUN, [])
                continue
            out[(rid, column.label)] = cell(rid, by_rule.get(rid, []), expected.get(rid, ()))
    return out
