"""conformance/suite_index.py is the one reader of "which tests check which rule", and it agrees
with what pytest collects."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conformance import fw_surface, spec, suite_index, traceability
from conformance.repro import derive
from conformance.repro.source import WorkingTree
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "conformance" / "suites"

COLLECTOR = '''
import json, os


def pytest_collection_finish(session):
    rows = []
    for item in session.items:
        rows.append({"file": str(item.path), "name": item.originalname,
                     "rules": [list(m.args) for m in item.iter_markers("rule")],
                     "id": item.callspec.id if hasattr(item, "callspec") else ""})
    with open(os.environ["RULES_DUMP"], "w") as fh:
        json.dump(rows, fh)
'''


def test_the_index_agrees_with_pytests_collection(tmp_path):
    """Every collected suite item carries the rule the index gives its function, under one of
    the parameter ids the index computed; every test of the index is collected."""
    (tmp_path / "rules_dump.py").write_text(COLLECTOR)
    dump = tmp_path / "rows.json"
    env = {**os.environ, "RULES_DUMP": str(dump),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "rules_dump", "--adapter=reference",
                           str(SUITES)], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=hang_limit(75))
    assert proc.returncode == 0 and dump.is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = json.loads(dump.read_text())
    index = suite_index.index_of()
    by_key = {(Path(t.file).name, t.name): t for t in index.tests}
    collected = set()
    for row in rows:
        key = (Path(row["file"]).name, row["name"])
        assert key in by_key, f"pytest collected {key}, which the index does not have"
        test = by_key[key]
        assert row["rules"] == [[test.rule]], (key, row["rules"], test.rule)
        assert row["id"] in test.ids, (key, row["id"], test.ids)
        collected.add(key)
    assert collected == set(by_key), sorted(set(by_key) - collected)
    assert len(rows) == sum(len(t.ids) for t in index.tests)


def test_every_reader_gives_the_index_answer():
    index = suite_index.index_of()
    names = index.names_by_rule()
    assert traceability.test_names_by_rule(SUITES) == names
    assert {r: {n for n, _, _ in tests} for r, tests in spec.rule_tests(SUITES).items()} == names
    assert {r: set(ns) for r, (_, ns) in derive.tests_by_rule().items()} == names
    assert fw_surface.scan() == index.surface_by_suite()
    # file and line lead to the test's def
    name, path, line = spec.rule_tests(SUITES)["identity.grad-fn-same-object"][0]
    assert path.read_text().splitlines()[line - 1].startswith(f"def {name}(")


#: The decorators a suite test carries; reading one from source is the index's job.
SUITE_DECORATORS = {"rule", "api.rule", *(n for names in suite_index.MARKERS.values() for n in names),
                    "pytest.fixture", "pytest.mark.parametrize"}


def decorator_readers(source: str) -> list[str]:
    """Why ``source`` reads the suites' decorators or files itself (empty: it does not)."""
    tree = ast.parse(source)
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = []
    if "decorator_list" in attrs | strings and strings & SUITE_DECORATORS:
        found.append(f"matches {sorted(strings & SUITE_DECORATORS)} decorators")
    if "parse" in attrs and "test_*.py" in strings:
        found.append("parses the suite files")
    return found


def test_one_rule_to_tests_reader():
    """No other module of the harness reads a suite test's decorators from source (``@rule``,
    ``@needs``, ``@judged_without``, ``@subject``, fixtures, parametrize) or parses the suite
    files itself."""
    offenders = []
    for path in sorted((ROOT / "conformance").rglob("*.py")) + sorted((ROOT / "adapters").rglob("*.py")):
        if path.name == "suite_index.py" or SUITES in path.parents:
            continue
        offenders += [f"{path.relative_to(ROOT)} {why}"
                      for why in decorator_readers(path.read_text(encoding="utf-8"))]
    assert not offenders, offenders


@pytest.mark.parametrize("planted", [
    "[d for d in node.decorator_list if ast.unparse(d) == 'rule']",
    "any(ast.unparse(d.func) in ('subject', 'spelling.subject') for d in node.decorator_list)",
    "[d for d in getattr(node, 'decorator_list', []) if ast.unparse(d.func) == 'needs']",
    "[d for d in node.decorator_list if ast.unparse(d.func) == 'pytest.fixture']",
    "[ast.parse(p.read_text()) for p in suites.glob('test_*.py')]",
])
def test_the_reader_scan_catches_a_second_reader(planted):
    assert decorator_readers(planted + "\n")


def test_a_test_module_is_indexed_as_pytest_would(tmp_path):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_demo.py").write_text(textwrap.dedent('''
        import pytest
        from conformance import api
        from conformance.api import rule
        from conformance import liveness

        def helper(fw):
            return fw.autograd.grad

        @rule("demo.one")
        @pytest.mark.parametrize("a", [1, 2])
        @pytest.mark.parametrize("b,c", [(True, "x")], ids=["named"])
        def test_one(fw, a, b, c):
            helper(fw)
            liveness.collect()

        @api.rule("demo.two")
        def test_two(adapter):
            def test_nested():  # not collected: no test of its own
                pass
            adapter.saved_tensors(None)

        class TestGroup:
            @rule("demo.three")
            def test_method(self, fw):
                pass

        def test_unmarked():
            pass
    '''))
    (suites / "test_broken.py").write_text("def test_(:\n")
    index = suite_index.index_of_dir(suites)
    assert set(index.names_by_rule()) == {"demo.one", "demo.two", "demo.three"}
    one = index.by_rule["demo.one"][0]
    assert one.ids == ("named-1", "named-2") and one.params == ("fw", "a", "b", "c")
    assert {("conformance.suites.test_demo", "helper"), ("conformance.liveness", "collect")} <= one.uses
    assert ("conformance.api", "rule") not in one.uses  # the harness's mark is no use
    assert index.by_rule["demo.two"][0].surface == {"adapter.saved_tensors"}
    assert [t.name for t in index.tests if t.rule is None] == ["test_unmarked"]
    assert index.surface_by_suite()["fw"] == {"fw.autograd.grad": {"demo"}}
    assert list(index.errors) and "test_broken.py" in next(iter(index.errors))


def test_the_index_is_read_once_per_tree_and_again_when_a_suite_changes(tmp_path):
    suites = tmp_path / "conformance" / "suites"
    suites.mkdir(parents=True)
    module = suites / "test_demo.py"
    module.write_text('from conformance.api import rule\n\n@rule("demo.one")\ndef test_one():\n    pass\n')
    first = suite_index.index_of(WorkingTree(tmp_path))
    assert suite_index.index_of(WorkingTree(tmp_path)) is first
    module.write_text(module.read_text() + '\n\n@rule("demo.two")\ndef test_two():\n    pass\n')
    assert set(suite_index.index_of(WorkingTree(tmp_path)).by_rule) == {"demo.one", "demo.two"}


def test_a_test_class_gives_its_markers_to_its_methods_as_pytest_does(tmp_path):
    """pytest's items carry their class's marks: a method of a ``@rule`` class checks that
    rule (collection's "every rule has a test" reads this index), and the class's ``@needs`` and
    ``@judged_without`` count for every method (a reproduction script checks them per test)."""
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_demo.py").write_text(textwrap.dedent('''
        from conformance.api import rule
        from conformance.features import judged_without, needs

        @rule("demo.one")
        @needs("grad_modes")
        class TestOne:
            @judged_without("graph_nodes")
            def test_method(self, fw):
                pass

        @rule("demo.two")
        @judged_without("tensor_hooks")
        def test_two(fw):
            pass
    '''))
    index = suite_index.index_of_dir(suites)
    method = index.by_rule["demo.one"][0]
    assert (method.name, method.needs, method.without) == ("test_method", ("grad_modes",),
                                                          ("graph_nodes",))
    assert index.by_rule["demo.two"][0].without == ("tensor_hooks",)
    module = type("Module", (), {"__file__": str(suites / "test_demo.py")})
    assert traceability.rule_ids_in_module(module) == {"demo.one", "demo.two"}


def test_a_module_the_tree_lacks_is_looked_up_once():
    """Deriving a script asks of every name whether the tree has it as a module; in a git
    revision each look was a ``git show``, so a miss is remembered as a hit is."""
    from conformance.model import suite_index as model_index
    from conformance.model.suite_source import SourceUnavailable, Tree

    class Counting(Tree):
        key = ("counting", id(object()))
        reads: list = []

        def read(self, relpath):
            self.reads.append(relpath)
            if relpath == "pkg/here.py":
                return "X = 1\n"
            raise SourceUnavailable(f"no {relpath}")

        def describe(self):
            return "a counting tree"

    tree = Counting()
    for _ in range(3):
        assert model_index.find_module(tree, "pkg.absent") is None
        assert model_index.find_module(tree, "pkg.here") is not None
        with pytest.raises(model_index.SuiteSourceError, match="no pkg/absent.py"):
            model_index.load_module(tree, "pkg/absent.py")
    assert sorted(tree.reads) == ["pkg/absent.py", "pkg/absent/__init__.py", "pkg/here.py"]
