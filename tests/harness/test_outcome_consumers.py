"""Every consumer of outcomes handles every outcome: adding an Outcome member without teaching
the summary, the report (cells, marks, JUnit) and expectations drafting about it fails here."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conformance import expectations_draft, outcomes, summary
from conformance.outcomes import Outcome
from conformance.report import aggregate, junit
from conformance.results import RunHeader, Tally, TestRecord, cells
from conformance.results.combined import Column

ALL = {o.value for o in Outcome}


def test_the_outcome_orders_name_every_outcome_once():
    assert sorted(o.value for o in outcomes.ORDER) == sorted(ALL)
    assert sorted(o.value for o in outcomes.SEVERITY) == sorted(ALL)
    assert set(outcomes.ACTUAL_SEVERITY) == set(outcomes.ACTUAL)
    assert set(outcomes.ACTUAL) | set(outcomes.FINAL_ONLY) == set(Outcome)


def test_the_report_has_a_mark_and_a_place_in_both_orders_for_every_outcome():
    assert ALL <= set(aggregate.STYLE)
    # cells order outcomes by conformance.outcomes' orders, NOT RUN first
    assert cells.by_severity(ALL | {outcomes.NOT_RUN}, final=True) == \
        [outcomes.NOT_RUN, *(o.value for o in outcomes.SEVERITY)]
    assert cells.by_severity({o.value for o in outcomes.ACTUAL}) == \
        [o.value for o in outcomes.ACTUAL_SEVERITY]
    symbols = [style[0] for style in aggregate.STYLE.values()]
    assert len(symbols) == len(set(symbols)), "two outcomes share a mark"


def test_junit_maps_every_outcome():
    assert ALL <= {str(o) for o in junit.ELEMENT}


def test_drafting_expectations_handles_every_outcome_a_test_can_have():
    assert expectations_draft.DRAFTED | expectations_draft.NOT_DRAFTED == \
        {o.value for o in outcomes.ACTUAL}


@pytest.mark.parametrize("outcome", list(Outcome))
def test_the_terminal_summary_shows_every_outcome(outcome):
    tally = Tally()
    tally.add(TestRecord(nodeid="t.py::t", suite="demo", outcome=outcome.value,
                         actual=outcome.value))
    assert outcome.value in "\n".join(summary.render(tally, "t"))


@pytest.mark.parametrize("outcome, element, words", [
    ("LEAK", "failure", "left"),
    ("BLOCKED", "skipped", "identity.grad-stable-id"),
])
def test_junit_writes_a_leak_as_a_failure_and_a_blocked_test_as_skipped_naming_its_blocker(
        outcome, element, words):
    run = Column(label="x", framework="x", status="complete", detail="", header=RunHeader(),
                 end=None, tests=[TestRecord(
                     nodeid="conformance/suites/test_x.py::test_a", rule="x.a", suite="x",
                     outcome=outcome, actual=outcome, duration=0.1,
                     message="left 3 objects behind" if outcome == "LEAK" else "blocked",
                     blocked_by="identity.grad-stable-id" if outcome == "BLOCKED" else None)])
    root = junit.run_to_junit(run).getroot()
    case = root.find(".//testcase")
    found = case.find(element)
    assert found is not None, ET.tostring(case)
    assert words in (found.get("message") or "") + (found.text or "")
