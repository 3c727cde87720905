"""A missing feature is a name end to end (issue 32): ``Unsupported.feature`` -> the test
record's ``missing_feature`` -> the page and the differential tester, with no reader of the
"X does not support F" sentence but the one for results files of older harnesses
(conformance/results/legacy.py)."""
from __future__ import annotations

import ast
import json
import pickle
import re
from pathlib import Path

import pytest

from conformance import expectations_draft
from conformance.differential.interpreter import missing_feature as differential_feature
from conformance.outcome_exceptions import MissingName, Unsupported
from conformance.outcomes import missing_feature
from conformance.report import build as report, html
from conformance.results import combined, read_run

ROOT = Path(__file__).resolve().parents[2]
LEGACY_READER = "conformance/results/legacy.py"
SENTENCE = "does not support"


# -- structure --------------------------------------------------------------------------------
def _sources():
    for top in ("conformance", "adapters", "reference", ".ci"):
        yield from sorted((ROOT / top).rglob("*.py"))
    yield ROOT / "noxfile.py"


def sentence_regexes(source: str) -> list[int]:
    """Lines of ``source`` that match the "does not support" sentence with a regular expression:
    a string holding it passed to a ``re`` function, or a string holding it with regex syntax."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re":
            if any(isinstance(a, ast.Constant) and isinstance(a.value, str) and SENTENCE in a.value
                   for a in node.args):
                found.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and SENTENCE in node.value and re.search(r"\(\[|\\w|\(\?P|\[A-Za-z", node.value):
            found.append(node.lineno)
    return sorted(set(found))


def test_no_does_not_support_regex_outside_the_legacy_reader():
    found = {}
    for path in _sources():
        where = path.relative_to(ROOT).as_posix()
        lines = sentence_regexes(path.read_text(encoding="utf-8"))
        if lines and where != LEGACY_READER:
            found[where] = lines
    assert not found, (f"the missing feature is read from a message in {found}: read the test "
                       f"record's missing_feature or the exception's feature; only "
                       f"{LEGACY_READER} reads older harnesses' sentences")
    assert sentence_regexes((ROOT / LEGACY_READER).read_text()), "the legacy reader moved?"


@pytest.mark.parametrize("source", [
    'import re\nre.search(r"does not support (\\w+)", m)\n',
    'import re\nP = re.compile("does not support ([A-Za-z_]+)")\n',
    'P = r"x does not support ([A-Za-z_][\\w.]*)"\n',
])
def test_the_structure_check_catches_a_sentence_regex(source):
    assert sentence_regexes(source)


def test_the_structure_check_leaves_sentences_for_people_alone():
    assert not sentence_regexes('raise NotImplementedError("cat that does not support it")\n')
    assert not sentence_regexes('msg = f"{fw} does not support {feature}: {reason}"\n')


def unnamed_raises(source: str) -> list[int]:
    """Lines where ``Unsupported(...)`` is built without ``feature=``."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else ""
            if name == "Unsupported" and not any(k.arg == "feature" for k in node.keywords):
                lines.append(node.lineno)
    return lines


def test_every_unsupported_the_project_raises_names_its_feature():
    found = {path.relative_to(ROOT).as_posix(): lines for path in _sources()
             if (lines := unnamed_raises(path.read_text(encoding="utf-8")))}
    assert not found, (f"Unsupported(...) without feature= in {found}: name the feature "
                       f"(Unsupported.missing(framework, feature, reason), or feature=...)")
    assert unnamed_raises('raise Unsupported("no thing")\n') == [1]


# -- the exception -------------------------------------------------------------------------
def test_unsupported_carries_its_feature_and_reason_through_pickling():
    error = Unsupported.missing("fw", "node_hooks", "no hooks on nodes")
    assert str(error) == "fw does not support node_hooks: no hooks on nodes"
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.feature, copy.reason, str(copy)) == ("node_hooks", "no hooks on nodes", str(error))
    name = pickle.loads(pickle.dumps(MissingName("fw", "fw.no_grad", "grad_modes")))
    assert (name.feature, name.name, name.path) == ("grad_modes", "no_grad", "fw.no_grad")
    assert isinstance(name, AttributeError)


def test_the_recorded_and_the_searched_feature_is_the_field_never_the_message():
    sentence = Unsupported("fw does not support forward_ad: no dual numbers")
    assert missing_feature(sentence) is None and differential_feature(sentence) is None
    named = Unsupported("nothing to read here", feature="forward_ad")
    assert missing_feature(named) == differential_feature(named) == "forward_ad"
    assert missing_feature(ValueError("x")) is None


# -- end to end: every UNSUPPORTED line names its feature, the page shows it --------------------
SUITE = '''
from conformance.features import needs
from conformance.api import in_fresh_interpreter


@needs("forward_ad")
@rule("demo.a")
def test_declared_at_setup(fw):
    pass


@rule("demo.b")
def test_declared_at_run_time(adapter):
    adapter.require("forward_ad")


@rule("demo.c")
def test_named_by_the_suite(fw):
    raise Unsupported("the framework has none of it", feature="some_feature")


@rule("demo.d")
def test_named_in_a_child(adapter):
    in_fresh_interpreter(adapter, "raise Unsupported('none here either', feature='child_feature')")


@rule("demo.e")
def test_holds(fw):
    pass
'''


@pytest.fixture
def run_with_unsupported(conformance_project):
    project = conformance_project
    project.rules("demo", "a", "b", "c", "d", "e")
    project.suite("demo", SUITE)
    project.run("suites", "--results=results.jsonl", "--no-witnesses")
    return project.pytester.path / "results.jsonl"


def test_every_unsupported_line_names_its_feature(run_with_unsupported):
    run = read_run(run_with_unsupported)
    assert run.header.unsupported == {"forward_ad": "no dual numbers"}
    got = {t.nodeid.split("::")[-1]: (t.actual, t.missing_feature) for t in run.tests}
    assert got == {"test_declared_at_setup": ("UNSUPPORTED", "forward_ad"),
                   "test_declared_at_run_time": ("UNSUPPORTED", "forward_ad"),
                   "test_named_by_the_suite": ("UNSUPPORTED", "some_feature"),
                   "test_named_in_a_child": ("UNSUPPORTED", "child_feature"),
                   "test_holds": ("PASS", None)}
    declared = [t for t in run.tests if t.declared_missing(run.header.unsupported)]
    assert sorted(t.rule for t in declared) == ["demo.a", "demo.b"]
    # a line that needs no field does not carry one
    raw = [json.loads(line) for line in run_with_unsupported.read_text().splitlines()]
    assert "missing_feature" not in next(r for r in raw if r.get("actual") == "PASS")


def test_the_page_shows_the_feature_and_the_declaration_without_reading_messages(
        run_with_unsupported, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    # a message that names another feature: the page must show the record's, not this one
    lines = run_with_unsupported.read_text().splitlines()
    lines = [json.dumps({**obj, "message": "x does not support other_feature: misleading"})
             if (obj := json.loads(line)).get("missing_feature") == "some_feature" else line
             for line in lines]
    (results / "fake.jsonl").write_text("\n".join(lines) + "\n")
    report.build(results, tmp_path / "out", catalogue_dir=run_with_unsupported.parent / "catalogue")
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    data = html.embedded_data(page)
    cells = data["cells"]
    tests = {t["name"]: t for rule in cells.values() for cell in rule.values()
             for t in cell["tests"]}
    assert tests["test_named_by_the_suite"]["missing_feature"] == "some_feature"
    assert tests["test_declared_at_setup"]["missing_feature"] == "forward_ad"
    assert cells["demo.a"]["fake"]["declared"] == {"forward_ad": "no dual numbers"}
    assert cells["demo.c"]["fake"]["declared"] is None  # not declared: no badge
    # the declared feature is one cause, stated by the declaration's reason
    assert 'data-cause="unsupported-forward_ad"' in page
    assert "fake does not support forward_ad: no dual numbers (declared in the adapter)" in page
    assert 'data-cause="unsupported-some_feature"' in page
    assert "unsupported-other_feature" not in page
    # the matrix marks the declared cells expected, the undeclared one not
    cell_a = re.search(r'<td class="cell [^"]*" [^>]*data-rule="demo.a" data-label="fake"', page)[0]
    cell_c = re.search(r'<td class="cell [^"]*" [^>]*data-rule="demo.c" data-label="fake"', page)[0]
    assert " expected" in cell_a and " expected" not in cell_c


def test_drafting_leaves_declared_features_out(run_with_unsupported):
    drafted = expectations_draft.draft_entries(expectations_draft.read_runs([run_with_unsupported]))
    assert sorted(rule for rule, *_ in drafted) == ["demo.c", "demo.d"]


# -- results of older harnesses: the one legacy reader ----------------------------------------
def test_an_older_harness_s_results_get_the_feature_from_their_message(tmp_path):
    path = tmp_path / "old.jsonl"
    lines = [{"type": "run", "schema": 1, "adapter": "fake"},
             {"type": "test", "nodeid": "s.py::test_a", "rule": "demo.a", "outcome": "UNSUPPORTED",
              "actual": "UNSUPPORTED", "message": "fake does not support forward_ad: no dual numbers"},
             {"type": "test", "nodeid": "s.py::test_b", "rule": "demo.b", "outcome": "DIVERGES",
              "actual": "DIVERGES", "message": "AssertionError: x does not support y"},
             {"type": "end", "exitstatus": 1}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = read_run(path)
    assert [t.missing_feature for t in run.tests] == ["forward_ad", None]
    entry = combined.column_of(path, "fake").to_json()
    for test in entry["tests"]:
        del test["missing_feature"]  # as a results.json of version 2 had them
    data = {"schema": combined.SCHEMA, "version": 2, "catalogue": [], "runs": [entry]}
    migrated = combined.migrate(data)
    assert [t["missing_feature"] for t in migrated["runs"][0]["tests"]] == ["forward_ad", None]
