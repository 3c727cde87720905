"""The end of a run's terminal summary: its top root causes, ranked as the page ranks them,
each with the rules it breaks and the command that prints its upstream-ready report."""
from __future__ import annotations

from conformance import summary
from conformance.report.rootcause import root_causes
from conformance.results import RunHeader, TestRecord, WitnessRecord
from conformance.results.combined import Column, RuleEntry

RULES = [RuleEntry(id=f"demo.rule-{n}", level="MUST") for n in "abcde"]


def _test(n: str, actual: str, cause: str | None = None, message: str = "", **kw) -> TestRecord:
    expectation = {"outcome": actual, "reason": f"the {cause} statement",
                   "root_cause": cause} if cause else None
    return TestRecord(nodeid=f"test_demo.py::test_{n}", rule=f"demo.rule-{n}", suite="demo",
                      level="MUST", outcome="XFAIL" if cause else actual, actual=actual,
                      message=message, expectation=expectation, **kw)


def _lines(tests, witnesses=(), unsupported=None, limit=3):
    column = Column(label="myfw", framework="myfw", status="complete", detail="",
                    header=RunHeader(adapter="myfw", unsupported=unsupported), end=None,
                    tests=list(tests), witnesses=list(witnesses))
    return summary.top_causes(root_causes(column, RULES), "mypkg.adapter:MyFw", limit)


def test_the_top_causes_name_rules_blocks_and_the_report_command():
    lines = _lines([
        _test("a", "DIVERGES", "ids-change"), _test("b", "DIVERGES", "ids-change"),
        _test("c", "LEAK", "node-cycle"),
        _test("d", "BLOCKED", message="blocked", blocked_by="demo.rule-c"),
        _test("e", "UNSUPPORTED", missing_feature="forward_ad")],
        witnesses=[WitnessRecord(cause="ids-change", kind="breaks", status="reproduces",
                                 output="ids differ", rules=["demo.rule-a"])],
        unsupported={"forward_ad": "no dual numbers"})
    text = "\n".join(lines)
    assert lines[0] == "top root causes (2 break rules, 1 only a missing feature; the page lists them all):"
    assert lines[1] == "  1. ids-change: the ids-change statement"
    assert lines[2] == "     breaks 2 rules (demo.rule-a, demo.rule-b)"
    assert lines[3] == ("     witness reproduces; report: python -m conformance.witness "
                        "--adapter mypkg.adapter:MyFw --issue ids-change")
    assert "  2. node-cycle: the node-cycle statement" in lines
    assert "     breaks 1 rule (demo.rule-c); blocks 1" in lines
    assert "no witness yet: python -m conformance.witness --adapter mypkg.adapter:MyFw " \
           "--issue node-cycle" in text
    assert "forward_ad" not in text  # a missing feature is counted, not listed first


def test_a_cluster_names_its_first_test_and_more_causes_are_counted():
    lines = _lines([_test(n, "ERROR", message="TypeError: the thing went wrong here badly")
                    for n in "abcd"] + [_test("e", "CRASH", message="segfault")], limit=1)
    assert lines[-2].startswith("     no expectation names it (a cluster of messages); first test: ")
    assert lines[-1] == "  ... 1 more that break rules"


def test_a_clean_run_prints_no_cause_lines():
    assert _lines([_test("a", "PASS")]) == []
