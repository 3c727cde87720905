"""Check-level judging (issue 33 item 1): a side observation that needs a missing feature is
skipped and recorded, and the test still judges its subject; parametrize cases have needs of
their own; every ``aside`` names what its body touches."""
from __future__ import annotations

import ast

import pytest

from conformance import features, side_checks, suite_index
from conformance.api import aside

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SIDE = '''
import types
from conformance.api import aside

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@rule("demo.a")
def test_side(adapter, fw):
    y = types.SimpleNamespace(grad_fn=None, value=1)
    if aside(adapter, "graph_nodes", what="y has a node"):
        assert y.grad_fn is not None, "no grad_fn"
    assert y.value == 2, "the subject diverges"


@rule("demo.b")
@pytest.mark.parametrize("make", [lambda t: t.reshape(2), lambda t: t.view(2)], ids=["reshape", "view"])
def test_cases(fw, make):
    pass


def _reads_the_node(y):
    return y.grad_fn


@rule("demo.d")
def test_helper_in_a_side(adapter, fw):
    y = types.SimpleNamespace(grad_fn=None)
    if aside(adapter, "graph_nodes", what="through a helper"):
        _reads_the_node(y)


@rule("demo.e")
def test_side_after_another_condition(adapter, fw):
    y = types.SimpleNamespace(grad_fn=None)
    if y is not None and aside(adapter, "graph_nodes", what="an and of conditions"):
        _reads_the_node(y)


@rule("demo.c")
def test_subject_needs_it(adapter, fw):
    y = types.SimpleNamespace(grad_fn=None)
    assert y.grad_fn is not None
'''

NODELESS = '''
from fakefw import FakeAdapter


class NoNodes(FakeAdapter):
    unsupported = {"graph_nodes": "no node objects", "view_method": "no views"}
'''


def test_a_side_observation_is_not_a_need_and_a_case_needs_its_own_values(tmp_path):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_demo.py").write_text("import pytest\n" + SIDE)
    index = suite_index.index_of_dir(suites)
    tests = {t.name: t for t in index.tests}
    assert features.features_of(tests["test_side"], index) == ()
    assert features.features_of(tests["test_subject_needs_it"], index) == ("graph_nodes",)
    assert features.features_of(tests["test_helper_in_a_side"], index) == ()
    assert features.features_of(tests["test_side_after_another_condition"], index) == ()
    cases = tests["test_cases"]
    assert features.features_of(cases, index) == ()
    assert features.case_features(cases, {"make": 0}) == set()
    assert features.case_features(cases, {"make": 1}) == {"view_method"}


@pytest.mark.parametrize("declared", [True, False])
def test_the_subject_is_judged_and_the_skipped_side_is_recorded(conformance_project, declared):
    project = conformance_project
    project.rules("demo", "a", "b", "c", "d", "e")
    project.suite("demo", "import pytest\n" + SIDE)
    project.pytester.makepyfile(nodeless=NODELESS)
    project.run("suites", "--results=results.jsonl",
                adapter="nodeless:NoNodes" if declared else "fakefw:FakeAdapter")
    got = {r["nodeid"].split("::")[-1]: r for r in project.results() if r.get("nodeid")}
    if declared:
        # the side observation needs graph_nodes: skipped, said, and the subject still judged
        assert got["test_side"]["outcome"] == "DIVERGES", got["test_side"]
        assert "subject diverges" in got["test_side"]["message"]
        assert got["test_side"]["not_checked"] == ["graph_nodes: y has a node"]
        assert got["test_subject_needs_it"]["outcome"] == "UNSUPPORTED"
        assert got["test_cases[reshape]"]["outcome"] == "PASS"
        assert got["test_cases[view]"]["outcome"] == "UNSUPPORTED"
        assert got["test_cases[view]"]["missing_feature"] == "view_method"
    else:   # the feature exists: the side observation runs and its failure is the verdict
        assert got["test_side"]["outcome"] == "DIVERGES"
        assert "no grad_fn" in got["test_side"]["message"]
        assert "not_checked" not in got["test_side"]
        assert got["test_cases[view]"]["outcome"] == "PASS"


class _Declares:
    name = "demo"
    unsupported = {"graph_nodes": "none"}


def test_aside_records_once_and_needs_a_feature():
    side_checks.begin()
    assert aside(_Declares(), "tensor_hooks", what="x") is True
    assert aside(_Declares(), "tensor_hooks", "graph_nodes", what="the node") is False
    assert aside(_Declares(), "graph_nodes", what="the node") is False
    assert side_checks.taken() == ("graph_nodes: the node",)
    assert side_checks.taken() == ()
    with pytest.raises(TypeError):
        aside(_Declares(), what="nothing named")


def test_every_aside_in_the_suites_names_what_its_body_touches():
    """An ``aside`` that names too little would let a framework without the feature run its
    body (an ERROR or a false verdict): its features cover everything the body implies."""
    index = suite_index.index_of()
    problems = []
    for relpath, mod in index.modules.items():
        for node, named in suite_index.asides_of(mod.tree):
            body = ast.Module(body=node.body, type_ignores=[])
            implied = features.implied(suite_index.surface_of(body),
                                       suite_index.attributes_of(body, mod))
            if not named or not implied <= set(named):
                problems.append(f"{relpath}:{node.lineno}: aside names {list(named)}, its body "
                                f"needs {sorted(implied)}")
    assert not problems, "\n".join(problems)


def test_no_test_can_end_unsupported_on_a_feature_outside_its_rules_subject():
    """Only the absence of a test's subject makes it UNSUPPORTED: whatever a test (or one of
    its parametrize cases) needs before it runs is in its rule's ``subject`` (the catalogue);
    anything else it touches is a side observation (``aside``)."""
    from conformance.model.catalogue import load_catalogue

    catalogue = load_catalogue(ROOT / "conformance" / "catalogue")
    known = set(features.registry())
    index = suite_index.index_of()
    problems = []
    for rule in catalogue.rules.values():
        unknown = set(rule.subject) - known
        if unknown:
            problems.append(f"{rule.id}: subject names unknown features {sorted(unknown)}")
    for test in index.tests:
        rule = catalogue.get(test.rule)
        if rule is None:
            continue
        needed = set(features.needed_by(test, index))
        for _, cases in test.cases:
            for surface, attributes in cases:
                needed |= features.implied(surface, attributes)
        outside = needed - set(rule.subject)
        if outside:
            problems.append(f"{test.suite}::{test.name} ({rule.id}) can end UNSUPPORTED on "
                            f"{sorted(outside)}, outside its rule's subject {list(rule.subject)}: "
                            f"make it a side observation (aside) or the rule's subject")
    assert not problems, "\n".join(problems)
