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
from conformance.feature_claims import ABSENT, EXPLAINED, LOOKALIKE, PRESENT, UNPROBED, Claim
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


def backward_stub(self, gradient=None, **kwargs):
    """Swallows every keyword: no support for any of them."""
    return None


def backward_reading_kwargs(self, gradient=None, **kwargs):
    return kwargs.pop("create_graph", False)


@pytest.mark.parametrize("backward, status, where, refused", [
    (lambda self, gradient=None: None, ABSENT, None, None),
    (lambda self, gradient=None, *, create_graph=False: None, PRESENT,
     "a tensor that requires grad, the result of an op", None),
    (backward_stub, ABSENT, None,
     "on a tensor that requires grad, the result of an op: backward takes **kwargs, and its "
     "source never names create_graph"),
    (backward_reading_kwargs, PRESENT, "a tensor that requires grad (reads it from **kwargs), "
     "the result of an op (reads it from **kwargs)", None),
])
def test_a_keyword_is_read_from_the_methods_signature(monkeypatch, backward, status, where,
                                                      refused):
    """A ``**kwargs`` that never names the keyword is a stub, not support (it is said, and the
    declaration holds); one whose source reads the keyword is support."""
    monkeypatch.setattr(Tensor, "backward", backward, raising=False)

    class Keyword(FakeAdapter):
        unsupported = {"create_graph_backward": "Tensor.backward takes no create_graph"}

    claim = claims_of(Keyword())["create_graph_backward"]
    assert claim.status == status, claim
    assert claim.present.get("backward(create_graph=)") == where, claim
    assert claim.refused.get("backward(create_graph=)") == refused, claim
    assert claim.contradicted == (status == PRESENT)
    if refused:
        assert "there but not support: backward(create_graph=)" in claim.line(), claim.line()


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


# -- features the framework has under another name or shape (issue 33 item 4) -----------------

def once_differentiable(backward):
    return backward


def with_module(monkeypatch, name: str, **submodules):
    """A fake framework package ``name`` with dotted submodules (``autograd.py_layer``), each a
    module in sys.modules, as an imported framework's are: the claims look there for the
    framework's own names."""
    root = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, root)
    for dotted, attributes in submodules.items():
        parent, path = root, name
        for part in dotted.split("."):
            path = f"{path}.{part}"
            child = sys.modules.get(path) or types.ModuleType(path)
            monkeypatch.setitem(sys.modules, path, child)
            setattr(parent, part, child)
            parent = child
        for key, value in attributes.items():
            setattr(parent, key, value)
    return root


def test_once_differentiable_under_the_frameworks_own_name_looks_present(monkeypatch):
    """Paddle's case: fw.autograd.function.once_differentiable is missing, the framework has it
    as autograd.py_layer.once_differentiable; the declaration is contradicted until the adapter
    translates it (then present) or says why it is not the feature."""
    with_module(monkeypatch, "ownnamefw", **{"autograd.py_layer": {
        "once_differentiable": once_differentiable}})

    class OwnName(FakeAdapter):
        module = "ownnamefw"
        unsupported = {"once_differentiable": "no decorator"}

    claim = claims_of(OwnName())["once_differentiable"]
    assert claim.status == LOOKALIKE and claim.contradicted, claim
    assert list(claim.lookalikes) == ["ownnamefw.autograd.py_layer.once_differentiable"], claim
    assert "looks present: ownnamefw.autograd.py_layer.once_differentiable" in claim.line()

    class Explaining(OwnName):
        unsupported_although_present = {"once_differentiable": {
            "ownnamefw.autograd.py_layer.once_differentiable": "a decorator for something else"}}

    assert features.unknown_keys_problem(Explaining()) is None
    explained = claims_of(Explaining())["once_differentiable"]
    assert explained.status == EXPLAINED and not explained.contradicted, explained


def test_once_differentiable_that_the_adapters_namespace_translates_is_present(monkeypatch):
    """The adapter's fw renames are looked up too: a translated name contradicts the
    declaration as the framework's own would."""
    class Translated(FakeAdapter):
        unsupported = {"once_differentiable": "no decorator"}

        def _import(self):
            function = self.namespace(None, {"once_differentiable": once_differentiable},
                                      path="fw.autograd.function")
            autograd = self.namespace(None, {"Function": Function, "function": function},
                                      path="fw.autograd")
            return self.namespace(framework(), {"autograd": autograd})

    claim = claims_of(Translated())["once_differentiable"]
    assert claim.status == PRESENT, claim
    assert claim.present == {"fw.autograd.function.once_differentiable": "fw"}, claim


def test_a_near_spelling_on_the_same_objects_looks_present(monkeypatch):
    """retain_grads for retain_grad: the framework's own spelling of the method."""
    monkeypatch.setattr(Tensor, "retain_grads", lambda self: None, raising=False)

    class NearName(FakeAdapter):
        unsupported = {"retain_grad": "no retain_grad"}

        def retain_grad(self, tensor):
            self.require("retain_grad")

    claim = claims_of(NearName())["retain_grad"]
    assert claim.status == LOOKALIKE, claim
    assert claim.lookalikes == {"retain_grads": "spelled like retain_grad on a tensor that "
                                                "requires grad, the result of an op"}, claim


def test_tensor_subclasses_by_plain_subclassing_look_present():
    """No as_subclass, but Sub(tensor) makes a Sub: tensor subclasses exist in another shape."""
    class NoAsSubclass(FakeAdapter):
        unsupported = {"tensor_subclass": "no as_subclass"}

        def subclass_instance(self, cls, tensor):
            self.require("tensor_subclass")

    claim = claims_of(NoAsSubclass())["tensor_subclass"]
    assert claim.status == LOOKALIKE and claim.contradicted, claim
    assert "Sub(tensor)" in claim.lookalikes and "plain subclassing" in claim.lookalikes["Sub(tensor)"]

    class Translating(NoAsSubclass):
        unsupported = {}

        def subclass_instance(self, cls, tensor):
            return cls(tensor)

    assert feature_claims.implements(Translating(), "subclass_instance")


class Sealed(Tensor):
    """Tensors whose class refuses both plain subclass construction and .grad assignment."""

    def __init__(self, requires_grad=False, grad_fn=None):
        if type(self) is not Sealed:
            raise TypeError("Sealed cannot be subclassed")
        super().__init__(requires_grad, grad_fn)

    @property
    def grad(self):
        return None

    @grad.setter
    def grad(self, value):
        raise AttributeError("grad is read-only")


def test_subclassing_that_fails_is_no_lookalike():
    class SealedAdapter(FakeAdapter):
        unsupported = {"tensor_subclass": "no subclasses", "grad_assignment": "read-only grad"}

        def _import(self):
            return self.namespace(types.SimpleNamespace(
                ones=lambda *size, requires_grad=False: Sealed(requires_grad)))

    claims = claims_of(SealedAdapter())
    assert claims["tensor_subclass"].status == ABSENT, claims
    assert claims["grad_assignment"].status == ABSENT, claims


def test_grad_assignment_is_looked_up_by_assigning():
    """grad= has no name to look up: the claim assigns .grad on a fresh leaf and reads it back."""
    class NoGradAssignment(FakeAdapter):
        unsupported = {"grad_assignment": "no x.grad = v"}

    claim = claims_of(NoGradAssignment())["grad_assignment"]
    assert claim.status == LOOKALIKE and claim.contradicted, claim
    assert claim.lookalikes == {"grad=": "t.grad = g keeps g: .grad reads it back"}, claim


class HoldsArrays:
    """A framework that keeps gradients in a field of its own (``gradient``)."""

    def __init__(self, requires_grad=False):
        self.requires_grad, self.gradient = requires_grad, None

    def __mul__(self, other):
        return HoldsArrays(self.requires_grad)

    @property
    def grad(self):   # no .grad assignment of its own
        return self.gradient


def test_grad_assignment_through_the_adapters_translation_is_found():
    class Translating(FakeAdapter):
        unsupported = {"grad_assignment": "no x.grad = v"}

        def _import(self):
            return self.namespace(types.SimpleNamespace(
                ones=lambda *size, requires_grad=False: HoldsArrays(requires_grad)))

        def set_grad(self, tensor, value):
            tensor.gradient = value

        def grad(self, tensor):
            return tensor.gradient

    claim = claims_of(Translating())["grad_assignment"]
    assert claim.status == PRESENT, claim
    assert claim.present == {"adapter.set_grad": "the adapter (Translating.set_grad)"}, claim
    # and the shape probe assigned through the translation and read back through adapter.grad
    assert claim.lookalikes == {"grad=": "adapter.set_grad (Translating) keeps g: .grad reads "
                                         "it back"}, claim

    class Untranslated(Translating):
        def set_grad(self, tensor, value):
            self.require("grad_assignment")

    assert claims_of(Untranslated())["grad_assignment"].status == ABSENT


class Hookable(Node):
    def register_hook(self, hook):
        return hook


class Refusing_(Node):
    def register_hook(self):   # bound taking no hook: every call with one refuses
        raise TypeError("incompatible function arguments")


def nodes_of(node_class):
    class Result(Tensor):
        def __mul__(self, other):
            return Tensor(self.requires_grad, node_class(node_class()))

    return types.SimpleNamespace(ones=lambda *size, requires_grad=False: Result(requires_grad),
                                 autograd=types.SimpleNamespace(Function=Function))


class NoNodeHooks(FakeAdapter):
    unsupported = {"node_hooks": "no node hooks"}

    def register_node_hook(self, node, hook):
        self.require("node_hooks")

    def register_node_prehook(self, node, hook):
        self.require("node_hooks")


def test_node_hooks_that_exist_but_refuse_their_arguments_are_not_the_feature():
    """OneFlow's case: FunctionNode.register_hook is bound taking nothing; a binding that always
    refuses is no feature (UNSUPPORTED, not DIVERGES), and the claim says it is there."""
    adapter = NoNodeHooks()
    adapter._fw = adapter.namespace(nodes_of(Refusing_))
    claim = claims_of(adapter)["node_hooks"]
    assert claim.status == ABSENT and not claim.contradicted, claim
    assert list(claim.refused) == ["register_hook"], claim
    assert "refuses 1 argument(s)" in claim.refused["register_hook"], claim
    assert "its grad_fn, the node grad_fn links to" in claim.refused["register_hook"], claim
    assert "there but not support: register_hook" in claim.line()


def test_node_hooks_that_take_a_hook_while_the_adapter_refuses_look_present():
    adapter = NoNodeHooks()
    adapter._fw = adapter.namespace(nodes_of(Hookable))
    claim = claims_of(adapter)["node_hooks"]
    assert claim.status == LOOKALIKE and claim.contradicted, claim
    assert "torch's spelling of adapter.register_node_hook" in claim.lookalikes["register_hook"]


def test_node_hooks_through_the_bases_default_are_present():
    """An adapter that keeps the base's register_node_hook (torch's node.register_hook) has the
    feature wherever the framework's node takes a hook."""
    class Default(FakeAdapter):
        unsupported = {"node_hooks": "no node hooks"}

    adapter = Default()
    adapter._fw = adapter.namespace(nodes_of(Hookable))
    claim = claims_of(adapter)["node_hooks"]
    assert claim.status == PRESENT, claim
    assert "register_hook, the base's default" in claim.present["adapter.register_node_hook"]


def test_a_compiled_binding_is_read_from_its_docstring():
    """pybind11 bindings have no signature; their docstring's first line says what they take."""
    class Binding:
        __name__ = "register_hook"
        __doc__ = "register_hook() -> None\n"
        __self__ = object()
        __signature__ = "unreadable"    # as a compiled binding's: inspect.signature fails

        def __call__(self, *args):
            raise TypeError("incompatible function arguments")

    assert "passes 2 where it takes 0" in feature_claims._refusal(Binding(), 1)
    Binding.__doc__ = "register_hook(self: Node, arg0: object) -> Handle\n"
    assert feature_claims._refusal(Binding(), 1) == ""


def test_the_graph_node_is_reached_through_the_adapters_translation():
    """A framework whose node is not grad_fn (MyGrad's creator): the adapter's grad_fn finds it,
    and the node's names are looked up there."""
    class Creator:
        metadata = {}

    class Held:
        def __init__(self, requires_grad=False):
            self.requires_grad, self.creator = requires_grad, None

        def __mul__(self, other):
            out = Held(self.requires_grad)
            out.creator = Creator()
            return out

    class Translating(FakeAdapter):
        unsupported = {"node_metadata": "no metadata"}

        def _import(self):
            return self.namespace(types.SimpleNamespace(
                ones=lambda *size, requires_grad=False: Held(requires_grad)))

        def grad_fn(self, tensor):
            return tensor.creator

    claim = claims_of(Translating())["node_metadata"]
    assert claim.status == PRESENT and claim.present == {"metadata": "its grad_fn"}, claim


def test_torchs_spelling_is_read_from_the_bases_defaults():
    spell = feature_claims.torch_spellings
    assert spell("register_node_hook") == (feature_claims.Spelling("node", "register_hook", 1),)
    assert spell("clear_grad") == (feature_claims.Spelling("tensor", "grad", -1),)
    assert [s.name for s in spell("clear_grad")] == ["grad="]
    assert spell("subclass_instance") == (feature_claims.Spelling("tensor", "as_subclass"),)


@pytest.mark.parametrize("name, ok", [
    ("register_hook", True),               # torch's spelling of adapter.register_node_hook
    ("someframework.autograd.hooks.register", True),   # a framework's own dotted name
    ("register_forward_hook", False),
])
def test_an_explanation_may_name_torchs_spelling_or_a_frameworks_own_name(name, ok):
    class Explains(FakeAdapter):
        unsupported = {"node_hooks": "no node hooks"}
        unsupported_although_present = {"node_hooks": {name: "why"}}

    problem = features.unknown_keys_problem(Explains())
    assert (problem is None) == ok, problem


def test_a_claim_with_lookalikes_survives_json():
    claim = Claim("once_differentiable", LOOKALIKE, lookalikes={"fw2.x.y": "its own name"},
                  refused={"register_hook": "refuses"})
    assert Claim.from_json(claim.as_json()) == claim and claim.contradicted
