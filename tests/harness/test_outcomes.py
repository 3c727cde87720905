"""Outcome classification and how each outcome maps onto pytest's status and exit code."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import outcome_exceptions
from conformance.api import prerequisite
from conformance.outcome_exceptions import Blocked, Diverges, TestTimeout, Unsupported
from conformance.outcomes import Outcome, blocked_by, classify, judge

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("exc, level, observed, expected", [
    (None, "MUST", False, Outcome.PASS),
    (AssertionError("x"), "MUST", False, Outcome.DIVERGES),
    (Diverges("x"), "SHOULD", False, Outcome.DIVERGES),
    (Unsupported("x"), "MUST", False, Outcome.UNSUPPORTED),
    (KeyError("x"), "MUST", False, Outcome.ERROR),
    (None, "IMPLEMENTATION-DEFINED", True, Outcome.OBSERVED),
    (None, "IMPLEMENTATION-DEFINED", False, Outcome.ERROR),
    (AssertionError("x"), "IMPLEMENTATION-DEFINED", True, Outcome.ERROR),
    (Unsupported("x"), "IMPLEMENTATION-DEFINED", False, Outcome.UNSUPPORTED),
    (Blocked("hooks.handle", "x"), "MUST", False, Outcome.BLOCKED),
])
def test_classify(exc, level, observed, expected):
    assert classify(exc, level, observed)[0] is expected


def test_a_pytest_skip_is_counted_not_hidden():
    try:
        pytest.skip("cuda only")
    except pytest.skip.Exception as exc:
        outcome, message = classify(exc, "MUST", False)
    assert outcome is Outcome.UNSUPPORTED and "cuda only" in message


@pytest.mark.parametrize("actual, expected, outcome, status", [
    (Outcome.PASS, None, Outcome.PASS, "passed"),
    (Outcome.DIVERGES, None, Outcome.DIVERGES, "failed"),
    (Outcome.UNSUPPORTED, None, Outcome.UNSUPPORTED, "skipped"),
    (Outcome.BLOCKED, None, Outcome.BLOCKED, "skipped"),
    (Outcome.BLOCKED, Outcome.DIVERGES, Outcome.BLOCKED, "failed"),
    (Outcome.CRASH, None, Outcome.CRASH, "failed"),
    (Outcome.DIVERGES, Outcome.DIVERGES, Outcome.XFAIL, "xfailed"),
    (Outcome.UNSUPPORTED, Outcome.UNSUPPORTED, Outcome.XFAIL, "xfailed"),
    (Outcome.PASS, Outcome.DIVERGES, Outcome.XPASS, "failed"),
    (Outcome.OBSERVED, Outcome.ERROR, Outcome.XPASS, "failed"),
    (Outcome.ERROR, Outcome.DIVERGES, Outcome.ERROR, "failed"),
])
def test_judge(actual, expected, outcome, status):
    verdict = judge(actual, expected, "f.toml [r]")
    assert (verdict.outcome, verdict.status) == (outcome, status)


SUITE = '''
    import pytest
    from conformance.api import rule, Unsupported

    @pytest.fixture
    def needs_forward_ad(adapter):
        adapter.require("forward_ad")

    @rule("demo.passes")
    def test_pass(fw): assert fw.__version__ == "1.0"
    @rule("demo.diverges")
    def test_diverges(): assert 1 == 2, "one is not two"
    @rule("demo.diverges-helper")
    def test_diverges_if_raises():
        with diverges_if_raises(TypeError, what="weakref to a tensor"):
            raise TypeError("cannot create weak reference")
    @rule("demo.unsupported")
    def test_unsupported(adapter): adapter.require("forward_ad")
    @rule("demo.unsupported-in-setup")
    def test_unsupported_in_fixture(needs_forward_ad): pass
    @rule("demo.error")
    def test_error(): {}["missing"]
    @rule("demo.observed")
    def test_observed(observe): observe({"hooks": [1, 2]})
    @rule("demo.observed-raises")
    def test_observed_raises(observe): assert False, "impl-defined rules cannot diverge"
    @rule("demo.skipped")
    def test_skipped(): pytest.skip("not on this device")
'''


@pytest.fixture
def demo(conformance_project):
    conformance_project.rules("demo", "passes", "diverges", "diverges-helper", "unsupported",
                              "unsupported-in-setup", "error", "skipped")
    conformance_project.rules("demo", "observed", "observed-raises", level="IMPLEMENTATION-DEFINED")
    conformance_project.suite("demo", SUITE)
    return conformance_project


def test_each_outcome_and_its_pytest_status(demo):
    result = demo.run("suites", "--results", "results.jsonl", "-v")
    outcomes = {r["nodeid"].split("::")[-1]: r["outcome"]
                for r in demo.results() if r["type"] == "test"}
    assert outcomes == {
        "test_pass": "PASS", "test_diverges": "DIVERGES", "test_diverges_if_raises": "DIVERGES",
        "test_unsupported": "UNSUPPORTED", "test_unsupported_in_fixture": "UNSUPPORTED",
        "test_error": "ERROR", "test_observed": "OBSERVED", "test_observed_raises": "ERROR",
        "test_skipped": "UNSUPPORTED",
    }
    # DIVERGES and ERROR fail the run; UNSUPPORTED is its own visible count, not 'skipped'.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines(["*test_diverges DIVERGES*", "*test_unsupported UNSUPPORTED*",
                                 "*4 failed, 2 passed*3 unsupported*"])
    assert "skipped" not in result.stdout.lines[-1]


def test_summary_counts_with_denominators(demo):
    result = demo.run("suites")
    result.stdout.fnmatch_lines([
        "*autograd conformance*",
        "suite*tests*PASS*OBSERVED*DIVERGES*UNSUPPORTED*ERROR*",
        "demo*9*1/9*1/9*2/9*3/9*2/9*",
        "all*9*1/9*1/9*2/9*3/9*2/9*",
        "UNSUPPORTED (3 tests):",
        "*2 x fake does not support forward_ad: no dual numbers",
    ])


def test_observed_value_and_message_are_recorded(demo):
    demo.run("suites", "--results", "results.jsonl")
    by_name = {r["nodeid"].split("::")[-1]: r for r in demo.results() if r["type"] == "test"}
    assert by_name["test_observed"]["observed"] == {"hooks": [1, 2]}
    assert by_name["test_diverges"]["message"].startswith("AssertionError: one is not two")
    assert by_name["test_diverges_if_raises"]["message"].startswith(
        "Diverges: weakref to a tensor: TypeError: cannot create weak reference")


def test_failure_report_shows_the_rule(demo):
    result = demo.run("suites", "-k", "test_diverges")
    result.stdout.fnmatch_lines(["*conformance rule demo.diverges [[]MUST[]]*", "s", "why: r"])


def test_classify_hook_lets_a_plugin_add_outcomes(conformance_project):
    conformance_project.rules("demo", "slow")
    conformance_project.suite("demo", '@rule("demo.slow")\ndef test_slow(): raise TimeoutError\n')
    conformance_project.pytester.makeconftest('''
        def pytest_conformance_classify(item, call):
            if call.excinfo is not None and call.excinfo.errisinstance(TimeoutError):
                return "TIMEOUT"
    ''')
    conformance_project.run("suites", "--results", "results.jsonl")
    assert conformance_project.results()[1]["outcome"] == "TIMEOUT"


def test_a_failing_prerequisite_blocks_and_names_its_rule():
    with pytest.raises(Blocked) as info:
        with prerequisite("hooks.register-hook-returns-handle", what="register_hook"):
            assert None is not None, "no handle"
    assert blocked_by(info.value) == "hooks.register-hook-returns-handle"
    assert classify(info.value, "MUST", False)[0] is Outcome.BLOCKED


def test_a_prerequisite_keeps_unsupported_and_the_innermost_block():
    with pytest.raises(Unsupported):
        with prerequisite("a.b"):
            raise Unsupported("no forward AD")
    with pytest.raises(Blocked) as info:
        with prerequisite("a.outer"):
            with prerequisite("a.inner"):
                raise TypeError("cannot create weak reference")
    assert info.value.rule_id == "a.inner"


# -- the exceptions that mean outcomes live in one module ------------------------------------
OUTCOME_EXCEPTIONS = ("Unsupported", "Blocked", "Diverges", "TestTimeout")
#: Classes outside conformance/outcome_exceptions.py that look like an outcome, and why they stay.
KEPT_APART = {
    # a Diverges that also carries the keep-alive chain its message describes (the outcome stays
    # DIVERGES: the classification sees the base class)
    ("conformance/liveness.py", "StillAlive"),
}
_LOOKS_LIKE_AN_OUTCOME = ("unsupported", "blocked", "diverge", "timeout", "timedout")


def _outcome_like_classes():
    """(file, class) for each class in the project that derives from an outcome exception (by
    name), or is an exception whose name says an outcome, outside outcome_exceptions.py."""
    found = set()
    for top in ("conformance", "adapters", "reference"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "conformance/outcome_exceptions.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                is_exception = any(b.endswith(("Exception", "Error")) for b in bases)
                if bases & set(OUTCOME_EXCEPTIONS) or (
                        is_exception and any(w in node.name.lower() for w in _LOOKS_LIKE_AN_OUTCOME)):
                    found.add((rel, node.name))
    return found


def test_no_module_but_outcome_exceptions_defines_an_outcome_exception():
    extra = _outcome_like_classes() - KEPT_APART
    assert not extra, (f"{sorted(extra)} define an exception meaning an outcome: define it in "
                       "conformance/outcome_exceptions.py (and re-export it), or add it to KEPT_APART with why")
    assert KEPT_APART <= _outcome_like_classes(), "a KEPT_APART entry is gone: remove it"


def test_the_old_homes_re_export_the_same_classes():
    import adapters
    from adapters import base
    from conformance import api, outcomes, timeout

    assert base.Unsupported is adapters.Unsupported is api.Unsupported is outcome_exceptions.Unsupported
    assert outcomes.Blocked is api.Blocked is outcome_exceptions.Blocked
    assert api.Diverges is outcome_exceptions.Diverges
    assert timeout.TestTimeout is outcome_exceptions.TestTimeout
    for name in OUTCOME_EXCEPTIONS:
        assert getattr(outcome_exceptions, name).__module__ == "conformance.outcome_exceptions"


def test_the_exceptions_module_imports_only_the_standard_library():
    # an adapter or a reproduction script imports it without pytest or the harness
    code = ("import sys; import conformance.outcome_exceptions; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'adapters', 'numpy')"
            " or m.startswith('conformance.') and m != 'conformance.outcome_exceptions'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_each_outcome_exception_is_classified_as_its_outcome():
    assert classify(Unsupported("x"), "MUST", False)[0] is Outcome.UNSUPPORTED
    assert classify(Blocked("r.x", "y"), "MUST", False)[0] is Outcome.BLOCKED
    assert classify(Diverges("x"), "MUST", False)[0] is Outcome.DIVERGES
    assert not isinstance(TestTimeout("x"), Exception)  # a test's ``except Exception`` cannot swallow it


def test_a_prerequisite_whose_behaviour_did_not_happen_is_blocked():
    # the block raised nothing, but the write it needed did not reach the base
    with pytest.raises(Blocked) as info:
        with prerequisite("views.inplace-on-view-rewrites-base", what="b[:2].mul_(2)") as pre:
            base = [1, 1]
            pre.check(base == [2, 1], "the write reached the base")
    assert info.value.rule_id == "views.inplace-on-view-rewrites-base"
    assert "did not happen: the write reached the base" in str(info.value)
    with pytest.raises(Blocked, match="the check after the block"):
        with prerequisite("a.b", check=lambda: False):
            pass
    with prerequisite("a.b", check=lambda: True) as pre:   # the behaviour happened: no verdict
        pre.check(1 + 1 == 2, "arithmetic")
    assert pre.checked == 2


def test_raises_tells_a_missing_method_from_a_refusal():
    from conformance.api import raises

    class FrameworkObject:          # stands for a framework class: not the test's own class
        __module__ = "fakefw.core"

    with pytest.raises(Unsupported, match="no 'detach_'"):
        with raises(Exception, what="detach_()"):
            FrameworkObject().detach_()
    with raises(Exception, match="refused"):   # a real refusal is accepted
        raise RuntimeError("in-place op refused")

    class TestsOwnFunction:         # the test's own class lacking forward: a refusal to judge
        pass

    with raises(Exception, match="forward"):
        TestsOwnFunction.forward
    with pytest.raises(Diverges):
        with raises(RuntimeError, what="x"):
            raise ValueError("another class")


def test_meaning_regexes_accept_synonyms():
    import re

    from conformance import meanings

    for message in ["Trying to backward through the graph a second time; specify retain_graph=True",
                    "cannot call backward twice, pass retain_graph=True",
                    "the saved tensors have already been freed: use retain_graph"]:
        assert re.search(meanings.GRAPH_FREED_SAYS_WHAT_TO_DO, message), message
    assert not re.search(meanings.GRAPH_FREED_SAYS_WHAT_TO_DO, "specify retain_graph=True")
    assert not re.search(meanings.GRAPH_FREED, "shape mismatch")
