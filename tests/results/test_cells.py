"""The cell (conformance.results.cells): most severe outcome, NOT RUN padding, flakiness; and
the page, the repro check and a reproduction script's RESULT line agree on it."""
from __future__ import annotations

import itertools

import pytest

from conformance.outcomes import ACTUAL, NOT_RUN, Outcome
from conformance.report import aggregate
from conformance.repro import check
from conformance.repro.runtime import Repro
from conformance.results import RunHeader, TestRecord, cells
from conformance.results.combined import Column, Combined, RuleEntry

RULE = "demo.a"
CATALOGUE = [RuleEntry(RULE, suite="demo", level="MUST", statement="s", rationale="r",
                       source="x")]


def record(name: str, actual: str, outcome: str | None = None, **extra) -> TestRecord:
    return TestRecord(nodeid=f"conformance/suites/test_demo.py::{name}", rule=RULE, suite="demo",
                      level="MUST", actual=actual, outcome=outcome or actual, message=actual,
                      **extra)


def column(label: str, tests, status: str = "complete") -> Column:
    return Column(label=label, framework="fw", status=status, detail="", header=RunHeader(),
                  end=None, tests=list(tests))


def script_result(actuals, capsys) -> str:
    """What a reproduction script of a rule whose tests had ``actuals`` prints last."""
    repro = object.__new__(Repro)  # no adapter needed to finish
    repro.results = [(a, f"message of {a}") for a in actuals]
    outcome = repro.finish()
    assert capsys.readouterr().out.startswith(f"RESULT: {outcome}")
    return outcome


ACTUALS = [o.value for o in ACTUAL]


@pytest.mark.parametrize("actuals", [
    *([a] for a in ACTUALS), *(list(p) for p in itertools.combinations(ACTUALS, 2)),
    ["PASS", "OBSERVED", "UNSUPPORTED"], ["BLOCKED", "PASS", "TIMEOUT", "LEAK"],
])
def test_the_page_the_repro_check_and_a_script_give_one_cell(actuals, capsys):
    tests = [record(f"test_{i}", a) for i, a in enumerate(actuals)]
    page = aggregate.cells(Combined(CATALOGUE, [column("fw", tests)]))[(RULE, "fw")]
    checked = check.cells(tests)[RULE]
    assert page.actual == checked.actual == script_result(actuals, capsys)
    assert page.actual == cells.by_severity(actuals)[0]  # the most severe of them
    assert checked.names == {f"test_{i}" for i in range(len(actuals))}


def test_one_diverging_test_makes_the_rule_diverge_and_xfail_keeps_the_real_outcome():
    cell = cells.cell(RULE, [record("test_a", "PASS"),
                             record("test_b", "DIVERGES", "XFAIL", expectation={"reason": "r"})])
    assert (cell.actual, cell.outcome, cell.expectation) == ("DIVERGES", "XFAIL", {"reason": "r"})
    assert cell.broken and cell.others() == ["PASS"]


def test_tests_other_runs_recorded_are_not_run_rows_and_most_severe():
    complete = column("a", [record("test_a", "PASS"), record("test_b[1]", "PASS")])
    lost = column("b", [record("test_a", "PASS")])
    table = aggregate.cells(Combined(CATALOGUE, [complete, lost]))
    cell = table[(RULE, "b")]
    assert cell.actual == cell.outcome == NOT_RUN
    padding = [t for t in cell.tests if t.actual == NOT_RUN]
    assert [(t.nodeid, t.message) for t in padding] == [("test_b[1]", cells.MISSING_TEST)]
    assert cell.names == {"test_a"}  # a script calls only the tests that ran
    assert table[(RULE, "a")].actual == "PASS"


def test_a_rule_without_any_test_and_columns_without_results():
    table = aggregate.cells(Combined(CATALOGUE, [
        column("empty", []), column("gone", [], "not-installed"), column("none", [], "missing")]))
    assert table[(RULE, "empty")].actual == NOT_RUN
    assert table[(RULE, "empty")].tests[0].message == cells.NO_TEST
    assert (table[(RULE, "gone")].outcome, table[(RULE, "gone")].actual) == \
        ("NOT INSTALLED", NOT_RUN)
    assert table[(RULE, "none")].outcome == NOT_RUN


def test_a_flaky_expectation_makes_the_cell_flaky_and_keeps_it_out_of_samples():
    flaky = record("test_a", "TIMEOUT", "XFAIL",
                   expectation={"outcome": "TIMEOUT", "reason": "r", "flaky": ["PASS"]})
    steady = TestRecord(nodeid="t.py::test_b", rule="demo.b", actual="DIVERGES", outcome="DIVERGES")
    table = check.cells([flaky, steady])
    assert table[RULE].flaky and not table["demo.b"].flaky
    assert check.sample(table, 8, "seed", include_timeouts=True) == ["demo.b"]


def test_no_result_at_all_is_an_error_for_a_script_as_for_a_cell(capsys):
    assert cells.rule_outcome([]) == Outcome.ERROR.value == script_result([], capsys)
