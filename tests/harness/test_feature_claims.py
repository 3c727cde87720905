"""An adapter's declared-missing features are checked against its framework
(conformance/feature_claims.py): a name the feature implies that the framework has contradicts
the declaration, unless the adapter says why the name is not the feature.

A fake framework stands in for the real ones (the logic is the same); the built-in adapters'
tables are checked for form here, and against their real frameworks in every conformance run's
terminal summary (the start-up child interpreter reports it).
"""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from adapters.base import Adapter, Unsupported, builtin_adapter_classes
from conformance import feature_claims, features, isolation
from conformance.feature_claims import ABSENT, EXPLAINED, PRESENT, UNPROBED, Claim
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
HERE = "tests.harness.test_feature_claims"


class Node:
    def __init__(self, *inputs):
        self.next_functions = tuple((n, 0) for n in inputs)


class Tensor:
    def __init__(self, requires_grad=False, grad_fn=None):
        self.requires_grad, self.grad_fn = requires_grad, grad_fn

    def __mul__(self, other):
        return Tensor(self.requires_grad, Node(Node()))


class Ctx:
    def save_for_backward(self, *tensors):
        self.saved = tensors


class Function:
    @classmethod
    def apply(cls, *args):
        return cls.forward(Ctx(), *args)


def framework(**extra):
    """A fake framework module: tensors, one op, graph nodes, custom Functions."""
    return types.SimpleNamespace(
        ones=lambda *size, requires_grad=False: Tensor(requires_grad),
        autograd=types.SimpleNamespace(Function=Function), **extra)


class FakeAdapter(Adapter):
    name = "fakeclaims"
    unsupported = {"grad_modes": "no grad modes", "forward_ad": "no dual numbers",
                   "tensor_hooks": "no hooks", "mark_dirty": "no mark_dirty",
                   "node_metadata": "no metadata", "accumulate_grad_variable": "no variable"}

    def _import(self):
        return self.namespace(framework())


def claims_of(adapter) -> dict[str, Claim]:
    return {c.feature: c for c in feature_claims.check(adapter)}


def test_declarations_the_framework_bears_out_are_absent():
    claims = claims_of(FakeAdapter())
    assert list(claims) == list(FakeAdapter.unsupported)
    assert {c.status for c in claims.values()} == {ABSENT}, claims
    assert feature_claims.contradictions(list(claims.values())) == []


class Metadata:
    """A property that records being run: probing must never run one."""
    ran = False

    def __get__(self, obj, owner=None):
        Metadata.ran = True
        raise TypeError("incompatible function arguments")


@pytest.mark.parametrize("feature, owner, name, value, where", [
    ("grad_modes", None, "no_grad", object(), "fw"),
    ("tensor_hooks", Tensor, "register_hook", lambda self, hook: None,
     "a tensor that requires grad, the result of an op"),
    ("node_metadata", Node, "metadata", Metadata(), "its grad_fn, the node grad_fn links to"),
    ("mark_dirty", Ctx, "mark_dirty", lambda self, *t: None, "a Function ctx"),
])
def test_a_present_name_contradicts_the_declaration(monkeypatch, feature, owner, name, value,
                                                    where):
    fw = framework()
    monkeypatch.setattr(owner if owner is not None else fw, name, value, raising=False)
    adapter = FakeAdapter()
    adapter._fw = adapter.namespace(fw)
    claim = claims_of(adapter)[feature]
    assert claim.status == PRESENT and claim.contradicted, claim
    assert ", ".join(claim.present.values()) == where, claim
    assert claim.line().startswith(f"{feature}: present: "), claim.line()
    assert not Metadata.ran, "probing ran a property"


@pytest.mark.parametrize("backward, status, where", [
    (lambda self, gradient=None: None, ABSENT, None),
    (lambda self, gradient=None, *, create_graph=False: None, PRESENT,
     "a tensor that requires grad, the result of an op"),
    (lambda self, gradient=None, **kwargs: None, PRESENT,
     "a tensor that requires grad (takes **kwargs), the result of an op (takes **kwargs)"),
])
def test_a_keyword_is_read_from_the_methods_signature(monkeypatch, backward, status, where):
    monkeypatch.setattr(Tensor, "backward", backward, raising=False)

    class Keyword(FakeAdapter):
        unsupported = {"create_graph_backward": "Tensor.backward takes no create_graph"}

    claim = claims_of(Keyword())["create_graph_backward"]
    assert claim.status == status, claim
    assert claim.present.get("backward(create_graph=)") == where, claim


def test_an_instance_attribute_of_the_node_a_result_links_to_is_found():
    adapter = FakeAdapter()
    made = feature_claims.subjects(adapter)
    linked = dict(made.objects)["the node grad_fn links to"]
    linked.variable = "the leaf"
    claim = claims_of_made(adapter, made)["accumulate_grad_variable"]
    assert claim.present == {"variable": "the node grad_fn links to"}, claim


def claims_of_made(adapter, made) -> dict[str, Claim]:
    return {c.feature: c for c in feature_claims.check(adapter, made=made)}


def test_a_name_the_adapters_namespace_hides_is_found_in_the_frameworks_module(monkeypatch):
    module = types.ModuleType("fakeclaimsfw")
    module.utils = types.SimpleNamespace(weak=object())
    monkeypatch.setitem(sys.modules, "fakeclaimsfw", module)

    class Hiding(FakeAdapter):
        module = "fakeclaimsfw"
        unsupported = {"weak_tensor_utils": "hidden on purpose"}

    claim = claims_of(Hiding())["weak_tensor_utils"]
    assert claim.status == PRESENT, claim
    assert "fakeclaimsfw.utils.weak (the framework's module; fw hides it)" in claim.line()


class Refusing(FakeAdapter):
    unsupported = {"retain_grad": "no", "version_counter": "no", "needs_input_grad": "no"}

    def retain_grad(self, tensor):
        """Refuses, with a docstring."""
        self.require("retain_grad")

    def version(self, tensor):
        raise Unsupported("no version counter")

    # needs_input_grad: the base's default (torch's spelling), not the adapter's own


class Implementing(Refusing):
    def version(self, tensor):
        return tensor.inplace_version


def test_an_adapter_method_counts_when_the_adapter_implements_it():
    assert {c.status for c in claims_of(Refusing()).values()} == {ABSENT}
    claims = claims_of(Implementing())
    assert claims["version_counter"].present == {
        "adapter.version": "the adapter (Implementing.version)"}, claims
    assert claims["retain_grad"].status == claims["needs_input_grad"].status == ABSENT


class Explained(FakeAdapter):
    unsupported = {"tensor_data": "no detached alias", "setup_context": "no setup_context"}
    unsupported_although_present = {"tensor_data": {"data": "a method returning a memoryview"}}

    def _import(self):
        return self.namespace(framework())


def test_a_present_name_the_adapter_explains_holds(monkeypatch):
    monkeypatch.setattr(Tensor, "data", lambda self: memoryview(b""), raising=False)
    claims = claims_of(Explained())
    assert claims["tensor_data"].status == EXPLAINED and not claims["tensor_data"].contradicted
    assert "present but not the feature: data" in claims["tensor_data"].line()
    assert claims["setup_context"].status == UNPROBED
    assert not claims["setup_context"].contradicted


def test_an_explanation_for_a_name_that_is_absent_is_stale():
    claim = claims_of(Explained())["tensor_data"]   # Tensor has no data here
    assert claim.status == ABSENT and claim.stale and claim.contradicted, claim
    assert "stale explanation (the name is absent): data" in claim.line()


def test_a_name_that_could_not_be_looked_up_says_so():
    class NoTensors(FakeAdapter):
        def _import(self):
            return self.namespace(types.SimpleNamespace(ones=None))

    claims = claims_of(NoTensors())
    assert claims["tensor_hooks"].missed == (
        "a tensor (fw.ones(2, requires_grad=True) raised TypeError)",), claims
    assert "(not looked up on: a tensor (fw.ones" in claims["tensor_hooks"].line()
    assert claims["grad_modes"].missed == ()   # fw names need no tensor


def test_a_claim_survives_json():
    claim = Claim("tensor_data", EXPLAINED, {"data": "fw"}, {"data": "why"}, {"x": "y"},
                  ("a tensor (why)",))
    assert Claim.from_json(claim.as_json()) == claim


@pytest.mark.parametrize("table, words", [
    ({"grad_modes": {"no_grad": "x"}}, "does not declare unsupported"),
    ({"tensor_data": {"grad": "x"}}, "not one of the feature's surface names"),
    ({"tensor_data": {"data": " "}}, "must say why"),
    ({"tensor_data": {}}, "must be a dict"),
    (["tensor_data"], "must be a dict"),
])
def test_a_malformed_explanation_table_is_one_line(table, words):
    class Bad(Explained):
        unsupported_although_present = table

    problem = features.unknown_keys_problem(Bad())
    assert problem and words in problem and "\n" not in problem, problem


@pytest.mark.parametrize("name", sorted(builtin_adapter_classes()))
def test_the_builtin_adapters_explanations_are_well_formed(name):
    adapter = builtin_adapter_classes()[name]()
    assert features.unknown_keys_problem(adapter) is None
    for feature, reasons in adapter.unsupported_although_present.items():
        assert feature in adapter.unsupported, feature


class Contradicted(FakeAdapter):
    unsupported = {"grad_modes": "no grad modes"}

    def _import(self):
        return self.namespace(framework(no_grad=object()))


class CrashingCheck(FakeAdapter):
    """Loads fine; making the probe's tensor crashes the interpreter."""

    def _import(self):
        import ctypes

        return types.SimpleNamespace(ones=lambda *a, **k: ctypes.string_at(0))


class HangingCheck(FakeAdapter):
    """Loads fine; making the probe's tensor never returns."""

    def _import(self):
        import time

        return types.SimpleNamespace(ones=lambda *a, **k: time.sleep(600))


def tool(*args):
    return subprocess.run([sys.executable, "-m", "conformance.feature_claims", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=hang_limit(30))


def test_the_command_exits_1_on_a_contradicted_declaration_and_0_otherwise():
    bad = tool("--adapter", f"{HERE}:Contradicted")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "grad_modes: present: fw.no_grad (on fw)" in bad.stdout, bad.stdout
    good = tool("--adapter", f"{HERE}:FakeAdapter")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "mark_dirty: absent" in good.stdout


@pytest.mark.parametrize("spec, words", [
    ("nosuchadapter", "unknown adapter"),
    (f"{HERE}:CrashingCheck", "checking its declared-missing features crashed the interpreter"),
])
def test_the_command_says_what_went_wrong_in_one_line(spec, words):
    done = tool("--adapter", spec)
    assert done.returncode == 4 and done.stdout == "", done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and words in done.stderr, done.stderr


@pytest.mark.parametrize("spec, timeout, words", [
    ("CrashingCheck", 120, "crashed the interpreter (SIGSEGV)"),
    ("HangingCheck", 8, "did not finish within 8s"),
])
def test_a_check_that_fails_leaves_the_adapters_facts_whole(spec, timeout, words):
    facts = isolation.probe(f"{HERE}:{spec}", "cpu", timeout)
    assert facts is not None and facts.name == "fakeclaims" and facts.claims == []
    assert words in facts.claims_error and "declared-missing features" in facts.claims_error


CLAIMS_ADAPTER = '''
import types
from adapters.base import Adapter


class Contradicted(Adapter):
    name = "contradicted"
    unsupported = {"grad_modes": "no grad modes", "forward_ad": "no dual numbers"}

    def _import(self):
        return self.namespace(types.SimpleNamespace(__version__="1.0", no_grad=object()))
'''


def test_a_conformance_run_names_a_contradicted_declaration_in_its_summary(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    conformance_project.pytester.makepyfile(claimsfw=CLAIMS_ADAPTER)
    result = conformance_project.run("suites", "--results=results.jsonl",
                                     adapter="claimsfw:Contradicted")
    assert result.ret == 0, result.stdout.str()
    line = ("declared unsupported, yet the framework has it (python -m "
            "conformance.feature_claims --adapter claimsfw:Contradicted): "
            "grad_modes: present: fw.no_grad (on fw)")
    result.stdout.fnmatch_lines([line])
    assert "forward_ad" not in result.stdout.str()
    # the results header carries it, for the page (shown beside the run)
    assert conformance_project.results()[0]["declarations"] == [line]
    clean = conformance_project.run("suites", "--results=clean.jsonl")
    assert "declared unsupported" not in clean.stdout.str()
    assert "declarations" not in conformance_project.results("clean.jsonl")[0]
