"""Upstream-ready bug reports: the witness in the framework's spelling, what it printed on the
framework and on the comparison engine, the rules' words and the versions."""
from __future__ import annotations

import subprocess
import sys

from conformance import upstream
from conformance.results import RunHeader, TestRecord, WitnessRecord
from conformance.results.combined import Column, RuleEntry
from conformance.report.rootcause import root_causes
from tests.hang import hang_limit


def test_the_witness_is_written_in_the_frameworks_own_names():
    witness = ('import sys\nx = fw.ones([2])  # fw stays in comments\ny = fw.autograd.grad\n'
               'print("fw", x.fw)\n')
    spelled = upstream.framework_spelling(witness, "paddle")
    assert "x = paddle.ones([2])  # fw stays in comments" in spelled
    assert "y = paddle.autograd.grad" in spelled
    assert 'print("fw", x.fw)' in spelled  # a string and an attribute are not the name
    script = upstream.standalone("import paddle\n", "paddle", witness)
    assert script.startswith("import paddle\nimport sys\n") and "fw." not in script


def test_the_page_report_of_a_cause_holds_the_rule_the_script_and_its_output():
    rule = RuleEntry(id="demo.rule-a", level="MUST", statement="The grad keeps its id.",
                     rationale="Users key dicts by it.")
    test = TestRecord(nodeid="test_demo.py::test_a", rule="demo.rule-a", suite="demo",
                      outcome="XFAIL", actual="DIVERGES", message="ids differ",
                      expectation={"outcome": "DIVERGES", "root_cause": "ids-change",
                                   "reason": "Paddle hands out a new grad wrapper per read."})
    witness = WitnessRecord(cause="ids-change", kind="breaks", status="reproduces",
                            output="ids: 1 2", script="import sys\nprint(id(fw.ones([1])))\nsys.exit(1)",
                            rules=["demo.rule-a"])
    run = Column(label="paddle", framework="paddle", status="complete", detail="",
                 header=RunHeader(adapter="paddle", adapter_spec="paddle", framework_version="3.3.1",
                                  python="3.11.7"),
                 end=None, tests=[test], witnesses=[witness])
    (cause,) = root_causes(run, [rule])
    text = upstream.page_report(run, cause, [rule])
    assert text.startswith("### paddle 3.3.1: Paddle hands out a new grad wrapper per read\n")
    assert "rule `demo.rule-a`, MUST" in text and "The grad keeps its id." in text
    assert "Why it matters: Users key dicts by it." in text
    assert "```python\nimport paddle\nimport sys\nprint(id(paddle.ones([1])))\nsys.exit(1)\n```" in text
    assert "**Output with paddle 3.3.1**" in text and "ids: 1 2" in text
    assert "python -m conformance.witness --adapter paddle --issue ids-change" in text
    assert "Environment**: paddle 3.3.1, Python 3.11.7." in text


def _witness(*args):
    return subprocess.run([sys.executable, "-m", "conformance.witness", *args], capture_output=True,
                          text=True, timeout=hang_limit(300))


def test_issue_prints_a_report_that_runs_the_witness_on_the_framework_and_the_reference():
    """torch's own cause: its witness reproduces on torch and not on the reference engine."""
    done = _witness("--adapter", "torch", "--issue", "nonleaf-hook-cycle-invisible-to-gc")
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert text.startswith("### torch ") and "rule `gc_cycles.hook-self-closure-nonleaf-collectable`" in text
    assert "```python\nimport torch\n" in text and "fw." not in text
    assert "(the script shows the difference: a non-zero exit status)" in text
    assert ("**Output with the reference engine (autograd-conformance's executable specification)**"
            ", the expected behaviour (exit status 0: the behaviour the rule asks for)") in text


def test_issue_of_an_unknown_cause_is_one_line_naming_the_causes():
    done = _witness("--adapter", "torch", "--issue", "no-such-cause")
    assert done.returncode == 4 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no root cause of that name" in lines[0]
    assert "nonleaf-hook-cycle-invisible-to-gc" in lines[0]
