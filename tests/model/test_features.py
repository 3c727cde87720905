"""conformance/features.py: one registry names every core feature; a test's needs are derived
from what it touches (and its @needs); an adapter that declares a feature missing gets
UNSUPPORTED for exactly the tests that need it, before they run; an unknown key is refused."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from adapters.base import builtin_adapter_classes
from conformance import features, suite_index
from conformance.tomlfile import FileError

ROOT = Path(__file__).resolve().parents[2]


def _literal_feature_calls(path: Path) -> set[str]:
    """String literals passed to ``*.require("x")`` / ``*.feature("x", ...)`` in a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("require", "feature") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return found


def test_every_feature_key_in_use_is_in_the_registry():
    known = set(features.registry())
    declared = {key for cls in builtin_adapter_classes().values() for key in cls.unsupported}
    required = set()
    for path in [*(ROOT / "conformance" / "suites").glob("*.py"), *(ROOT / "adapters").glob("*.py")]:
        required |= _literal_feature_calls(path)
    marked = {name for t in suite_index.index_of().tests for name in t.needs}
    assert declared and required
    assert not declared - known, f"adapters declare unknown features: {sorted(declared - known)}"
    assert not required - known, f"require()/feature() name unknown features: {sorted(required - known)}"
    assert not marked - known, f"@needs names unknown features: {sorted(marked - known)}"


def test_the_feature_list_in_writing_rules_is_the_registry():
    assert features.main(["--check"]) == 0, "run python -m conformance.features --write"
    text = features.DOC.read_text(encoding="utf-8")
    for name in features.registry():
        assert f"| `{name}` |" in text


def test_a_malformed_registry_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "features.toml"
    bad.write_text('[feature.Bad-Name]\nwhat = "x"\nnames = []\n')
    with pytest.raises(FileError, match="features.toml"):
        features.registry(bad)
    bad.write_text('[feature.ok]\nwhat = "x"\n')   # names missing
    features._REGISTRIES.pop(bad, None)
    with pytest.raises(FileError, match=r"\[feature.ok\]"):
        features.registry(bad)
    for keywords in ('["backward"]', '["backward(create_graph)"]', '"backward(inputs=)"'):
        bad.write_text(f'[feature.ok]\nwhat = "x"\nnames = []\nkeywords = {keywords}\n')
        features._REGISTRIES.pop(bad, None)
        with pytest.raises(FileError, match=r"\[feature.ok\] keywords must look like"):
            features.registry(bad)
    bad.write_text('[feature.ok]\nwhat = "x"\nnames = []\nkeywords = ["backward(inputs=)"]\n')
    features._REGISTRIES.pop(bad, None)
    assert features.registry(bad)["ok"].keywords == ("backward(inputs=)",)


DEMO = '''
from conformance.api import rule
from conformance.features import needs


def helper(t):
    return t.register_hook(lambda g: g)


@rule("demo.a")
def test_nodes(fw):
    y = fw.ones(2) * 2
    assert y.grad_fn is not None


@rule("demo.b")
def test_via_helper(fw):
    helper(fw.ones(2))


@rule("demo.c")
@needs("forward_ad")
def test_marked(fw):
    pass


@rule("demo.d")
def test_modes(fw):
    with fw.no_grad():
        pass


@rule("demo.e")
def test_plain(fw):
    fwad = fw.autograd.forward_ad
    (fw.ones(2) * 2).sum().backward()
    fwad.dual_level
'''


def test_features_are_derived_from_what_a_test_touches(tmp_path):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_demo.py").write_text(DEMO)
    index = suite_index.index_of_dir(suites)
    got = {t.name: features.features_of(t, index) for t in index.tests}
    assert got == {"test_nodes": ("graph_nodes",), "test_via_helper": ("tensor_hooks",),
                   "test_marked": ("forward_ad",), "test_modes": ("grad_modes",),
                   "test_plain": ("forward_ad",)}


def test_helpers_of_the_real_suites_are_followed():
    index = suite_index.index_of()
    through = [t for t in index.tests if ("conformance.suites._helpers", "hook_handle") in t.uses]
    assert through, "no suite test calls _helpers.hook_handle any more; pick another helper"
    assert all("tensor_hooks" in features.features_of(t, index) for t in through)


def test_unknown_unsupported_key_is_a_usage_error_naming_the_nearest(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    conformance_project.pytester.makepyfile(typofw='''
from fakefw import FakeAdapter


class Typo(FakeAdapter):
    unsupported = {"tensor_hook": "no hooks"}
''')
    result = conformance_project.run("suites", adapter="typofw:Typo")
    assert result.ret == 4
    err = result.stderr.str()
    assert "'tensor_hook'" in err and "'tensor_hooks'" in err and "Traceback" not in err


SUITE = '''
import types
from pathlib import Path
from conformance.features import needs


@rule("demo.a")
def test_nodes(fw):
    Path("ran_a").write_text("ran")
    y = types.SimpleNamespace(grad_fn=None)
    assert y.grad_fn is not None, "no grad_fn"


@rule("demo.b")
def test_plain(fw):
    pass


@rule("demo.c")
@needs("graph_nodes")
def test_marked(fw):
    Path("ran_c").write_text("ran")
'''

NODELESS = '''
from fakefw import FakeAdapter


class NoNodes(FakeAdapter):
    unsupported = {"graph_nodes": "no node objects"}
'''


@pytest.mark.parametrize("declared", [True, False])
def test_a_declared_missing_feature_is_unsupported_before_the_test_runs(conformance_project, declared):
    project = conformance_project
    project.rules("demo", "a", "b", "c")
    project.suite("demo", SUITE)
    project.pytester.makepyfile(nodeless=NODELESS)
    project.run("suites", "--results=results.jsonl",
                adapter="nodeless:NoNodes" if declared else "fakefw:FakeAdapter")
    got = {r["nodeid"].split("::")[-1]: r for r in project.results() if r.get("nodeid")}
    if declared:
        assert got["test_nodes"]["outcome"] == got["test_marked"]["outcome"] == "UNSUPPORTED"
        assert "graph_nodes" in got["test_nodes"]["message"]
        assert not (project.pytester.path / "ran_a").exists()
        assert not (project.pytester.path / "ran_c").exists()
    else:   # the feature exists: the tests run and are judged
        assert got["test_nodes"]["outcome"] == "DIVERGES"
        assert got["test_marked"]["outcome"] == "PASS"
    assert got["test_plain"]["outcome"] == "PASS"


SUBJECTS = '''
from conformance.api import rule
from conformance.spelling import subject


@rule("demo.a")
@subject("grad=")
def test_assigns(fw):
    x = fw.ones(2)
    x.grad = fw.ones(2)


@rule("demo.b")
def test_reads(fw):
    x = fw.ones(2)
    assert x.grad is None


@rule("demo.c")
@subject("view")
def test_views(fw):
    fw.ones(4).view(2, 2)
'''


def test_a_subject_names_the_feature_a_test_needs(tmp_path):
    # assigning .grad reads, statically, like reading it: only @subject("grad=") tells a test a
    # framework with a read-only .grad (MyGrad) cannot run from one it can, so that framework
    # can declare grad_assignment instead of getting an ERROR per assigning test
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "test_demo.py").write_text(SUBJECTS)
    index = suite_index.index_of_dir(suites)
    got = {t.name: features.features_of(t, index) for t in index.tests}
    assert got == {"test_assigns": ("grad_assignment",), "test_reads": (),
                   "test_views": ("view_method",)}


def test_every_grad_assigning_suite_test_needs_grad_assignment():
    index = suite_index.index_of()
    assigning = [t for t in index.tests if "grad=" in t.subjects]
    assert assigning, "no suite test is about assigning .grad any more"
    assert all("grad_assignment" in features.features_of(t, index) for t in assigning)
