"""No test PASSES when nothing it judges happened (issue 33 item 5): the suites run on two planted
engines (tests/suites/planted_engines.py), one that refuses every operation and one that records
nothing and refuses nothing, and every PASS either gets must be listed in
tests/suites/planted_passes.toml with the sentence of its rule's statement that allows it.

A PASS not listed fails with its test id: either the rule allows it (list it, with the sentence)
or the test passes without seeing what it judges (fix the test). PASSes known to be wrong are
listed apart (``[[wrong]]``, with why), never as allowed, until their suites are fixed.

Cost: one run of the suites per engine, both at once in child interpreters (the engines patch
the reference in the process that loads them), with no witnesses, no tracebacks and no
expectations file: about 1 to 2 CPU minutes each.

Six more planted engines each carry one shape a real framework has (issue 33's examples 5.2 to
5.5: a view that copies, a node named ``F_backward``, a node hook binding taking nothing, an
``apply`` without keywords; 3.2: a subclass instance made off the graph, a Function refusing an
input returned as-is); the cells of the rules each meets must end as that framework's
did when it was judged right, and each ended otherwise on the suites of 6f12c53 (said per test).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).with_name("planted_passes.toml")
ENGINES = {"refusing": "tests.suites.planted_engines:RefusingEngine",
           "inert": "tests.suites.planted_engines:InertEngine"}


def _listed() -> dict:
    """The data file: engine -> {"allowed": {test id: sentence}, "wrong": {test id: why}}."""
    with DATA.open("rb") as handle:
        data = tomllib.load(handle)
    out = {engine: {"allowed": {}, "wrong": {}} for engine in ENGINES}
    for kind, field in (("allowed", "allowed_by"), ("wrong", "why")):
        for entry in data.get(kind, []):
            for engine in entry["engines"]:
                out[engine][kind][entry["test"]] = entry[field]
    return out


# one pytest-xdist worker runs this module (nox -s tests: --dist loadgroup, tests/xdist_groups.py):
# the suites run once on each planted engine, in the module fixture
pytestmark = pytest.mark.xdist_group("planted-engines")


def _run_all(where: Path, runs: dict, limit: float) -> dict:
    """engine -> {test id: its results record}: ``runs`` (engine -> (adapter spec, the suites'
    paths or test ids)) at once, each in a child pytest."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    started = {}
    for engine, (spec, targets) in runs.items():
        results = where / f"{engine}.jsonl"
        argv = [sys.executable, "-m", "pytest", f"--adapter={spec}", *targets,
                "-p", "no:cacheprovider", "-q", "--tb=no", "--no-witnesses",
                f"--results={results}"]
        started[engine] = (results, subprocess.Popen(argv, cwd=ROOT, env=env, text=True,
                                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    out = {}
    for engine, (results, process) in started.items():
        output, _ = process.communicate(timeout=hang_limit(limit))
        lines = [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
        records = [r for r in lines if r.get("nodeid")]
        assert records and process.returncode in (0, 1), \
            f"the suites did not run on the {engine} engine (exit {process.returncode}):\n{output[-3000:]}"
        out[engine] = {r["nodeid"]: r for r in records}
    return out


@pytest.fixture(scope="module")
def passes(tmp_path_factory) -> dict:
    """engine -> the ids of the tests that PASS on it (both runs at once)."""
    ran = _run_all(tmp_path_factory.mktemp("planted"),
                   {engine: (spec, ["conformance/suites"]) for engine, spec in ENGINES.items()}, 1200)
    return {engine: {test for test, r in records.items() if r["outcome"] == "PASS"}
            for engine, records in ran.items()}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_pass_on_a_planted_engine_is_allowed_by_its_rule(passes, engine):
    listed = _listed()[engine]
    unlisted = sorted(passes[engine] - set(listed["allowed"]) - set(listed["wrong"]))
    assert not unlisted, (
        f"PASS on the {engine} planted engine, not in {DATA.name}: list each with the sentence of "
        f"its rule's statement that allows it, or fix the test (it passes without seeing what it "
        f"judges):\n  " + "\n  ".join(unlisted))
    stale = sorted(set(listed["allowed"]) - passes[engine])
    assert not stale, f"listed as an allowed PASS on the {engine} engine, yet not a PASS: {stale}"


@pytest.mark.xfail(strict=True, reason="known wrong PASSes (planted_passes.toml [[wrong]]) until "
                                        "their suites are fixed: then drop the entries and this mark")
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_no_known_wrong_pass_remains(passes, engine):
    wrong = _listed()[engine]["wrong"]
    assert not set(wrong) & passes[engine], sorted(set(wrong) & passes[engine])


def test_each_allowed_pass_names_a_sentence_of_its_rules_statement():
    """The data file is checked without running anything: each entry's test exists under its
    rule, and its sentence is the rule's own words."""
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue").rules
    with DATA.open("rb") as handle:
        data = tomllib.load(handle)
    for entry in data.get("allowed", []):
        rule = catalogue.get(entry["rule"])
        assert rule is not None, f"{entry['test']}: unknown rule {entry['rule']!r}"
        assert entry["allowed_by"].strip() and entry["allowed_by"] in rule.statement, \
            f"{entry['test']}: {entry['allowed_by']!r} is not in {entry['rule']}'s statement"
        assert set(entry["engines"]) <= set(ENGINES), entry
    for entry in data.get("wrong", []):
        assert entry["why"].strip() and set(entry["engines"]) <= set(ENGINES), entry
    pairs = [(engine, e["test"]) for e in data.get("allowed", []) + data.get("wrong", [])
             for engine in e["engines"]]
    twice = sorted({pair for pair in pairs if pairs.count(pair) > 1})
    assert not twice, f"listed twice for one engine: {twice}"


VIEW_CELL = "conformance/suites/test_views.py::test_view_of_leaf_refuses_in_place[view]"
NODE_NAME_CELLS = ("conformance/suites/test_identity.py::test_custom_function_node_is_named_after_function",
                   "conformance/suites/test_legacy_function.py::test_grad_fn_name")
NODE_HOOK_CELL = "conformance/suites/test_hooks.py::test_node_pre_and_post_hooks_on_builtin_node"
KWARGS_CELL = "conformance/suites/test_legacy_function.py::test_kwargs_are_inputs"
SUBCLASS_CELL = "conformance/suites/test_identity.py::test_subclass_inplace_saved_input_and_grad"
AS_IS_CELL = "conformance/suites/test_legacy_function.py::test_input_returned_as_is_keeps_its_subclass"
#: shape -> (its planted engine, the cells it is judged on)
SHAPES = {
    "copying-view": ("tests.suites.planted_engines:CopyingViewEngine", (VIEW_CELL,)),
    "node-name": ("tests.suites.planted_engines:UnderscoreNodeNameEngine", NODE_NAME_CELLS),
    "node-hook": ("tests.suites.planted_engines:NodeHookTakingNothingEngine", (NODE_HOOK_CELL,)),
    "apply-kwargs": ("tests.suites.planted_engines:ApplyWithoutKeywordsEngine", (KWARGS_CELL,)),
    "off-graph-subclass": ("tests.suites.planted_engines:OffGraphSubclassEngine", (SUBCLASS_CELL,)),
    "as-is-refused": ("tests.suites.planted_engines:AsIsInputRefusedEngine", (AS_IS_CELL,)),
}


@pytest.fixture(scope="module")
def shaped(tmp_path_factory) -> dict:
    """shape -> {test id: its results record} on the shape's engine (the runs at once)."""
    return _run_all(tmp_path_factory.mktemp("shaped"),
                    {shape: (spec, list(cells)) for shape, (spec, cells) in SHAPES.items()}, 300)


def _ending(record) -> tuple:
    return record["outcome"], record.get("missing_feature"), record.get("blocked_by")


def test_a_view_whose_writes_are_lost_leaves_no_refusal_to_judge(shaped):
    """Rule views.inplace-on-view-of-leaf-refused (issue 33, 5.2): where ``x.view`` copies, a
    write through it never touches the leaf, so accepting it says nothing about leaves: the
    premise check ends the case UNSUPPORTED ``view_method``. (6f12c53: DIVERGES, "raised nothing".)"""
    assert _ending(shaped["copying-view"][VIEW_CELL]) == ("UNSUPPORTED", "view_method", None)


def test_a_function_node_named_f_backward_names_its_function(shaped):
    """Rules identity.custom-function-node-name and legacy_function.grad-fn-name (issue 33, 5.3):
    OneFlow's ``MyFn_backward`` names MyFn as torch's ``MyFnBackward`` does: both PASS.
    (6f12c53: DIVERGES, and grad-fn-name BLOCKED by it: only torch's spelling was accepted.)"""
    cells = shaped["node-name"]
    assert {test: _ending(cells[test]) for test in NODE_NAME_CELLS} == \
        {test: ("PASS", None, None) for test in NODE_NAME_CELLS}


def test_a_node_hook_binding_taking_nothing_is_a_missing_feature(shaped):
    """Rule hooks.node-hooks-builtin (issue 33, 5.4): a ``register_hook`` bound taking no
    arguments (OneFlow 0.9.0) refuses every hook, so no hook can be registered: UNSUPPORTED
    ``node_hooks``, found by the suite's own code (the engine does not declare it).
    (6f12c53: DIVERGES on the TypeError, as if the hook had been refused.)"""
    assert _ending(shaped["node-hook"][NODE_HOOK_CELL]) == ("UNSUPPORTED", "node_hooks", None)


def test_an_apply_without_keywords_is_a_missing_form(shaped):
    """Rule legacy_function.kwargs-are-inputs (issue 33, 5.5): an ``apply`` that refuses a
    keyword before forward runs (OneFlow) has no keyword form at all: UNSUPPORTED
    ``apply(keyword=)``. (6f12c53: DIVERGES on the TypeError.)"""
    assert _ending(shaped["apply-kwargs"][KWARGS_CELL]) == ("UNSUPPORTED", "apply(keyword=)", None)


def test_a_subclass_instance_off_the_graph_is_judged_not_an_error(shaped):
    """Rule identity.subclass-op-results-are-subclass (issue 33, 3.2): where the subclass
    instance of a tensor that requires grad is a new leaf off its graph (Paddle's ``T(x)``), the
    test says so, DIVERGES, before it reads a saved input or a gradient that cannot exist.
    (6f12c53: ERROR, the missing node's AttributeError; Paddle: its own SystemError.)"""
    record = shaped["off-graph-subclass"][SUBCLASS_CELL]
    assert _ending(record) == ("DIVERGES", None, None) and "off the graph" in record["message"], record


def test_a_refused_input_returned_as_is_is_the_verdict(shaped):
    """Rule legacy_function.input-returned-as-is-keeps-class (issue 33, 3.2): ``apply`` refusing
    a Function that returns its leaf input as-is (Paddle's PyLayer) is the rule not holding:
    DIVERGES. (6f12c53: ERROR, the refusal unread.)"""
    assert _ending(shaped["as-is-refused"][AS_IS_CELL]) == ("DIVERGES", None, None)
