"""The differential tester through any adapter (issue 33 item 8): programs use only the
documented surface, a step whose feature the adapter declares missing is never generated (the
run says which were left out and why), no finding rests on a declared-missing feature, and a
missing API of an undeclared feature is a missing-API artefact, counted, never a finding."""
from __future__ import annotations

import ast
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from adapters.base import Adapter
from conformance.differential import gate, program as P
from conformance.differential.interpreter import MISSING_API, categorize, is_missing_api, missing_name
from conformance.differential.runner import (InProcessTarget, Search, SubprocessTarget, check,
                                             feature_of_missing)
from conformance.differential.strategies import ALL_FEATURES, programs
from conformance.model.suite_index import attribute_chain

#: what a program may use on the framework's own objects (a tensor, a hook's argument, a ctx,
#: a handle, a Function class): Python's operators aside, only these. Everything else goes
#: through ``fw.*`` (computations) or an adapter method (what frameworks spell differently).
ON_FRAMEWORK_OBJECTS = {
    "shape", "dtype",                          # a tensor's (or a gradient array's) shape, dtype
    "register_hook", "register_post_accumulate_grad_hook",   # the hook features themselves
    "remove",                                  # a hook handle
    "save_for_backward", "apply",              # the custom Function protocol (fw.autograd.Function)
}
#: names a program binds that are not the framework's objects
_PLAIN = {"ev", "keep", "gc", "weakref"}


def surface_problems(source: str) -> list[str]:
    """Every use in ``source`` of something outside the documented surface: an attribute of a
    framework object not in ON_FRAMEWORK_OBJECTS (``t.sum()``, ``t.grad``, ``x.exp()``), an
    adapter method the adapter contract lacks, ``.tolist()`` of anything but
    ``adapter.to_numpy(...)``, an assignment to an attribute."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            problems.append(f"assigns .{node.attr}")
            continue
        chain = attribute_chain(node)
        if chain and chain[0] == "adapter":
            if not hasattr(Adapter, chain[1]):
                problems.append(f"adapter.{chain[1]} is no adapter method")
            continue
        if chain and chain[0] in {"fw"} | _PLAIN:
            continue
        receiver = node.value
        if isinstance(receiver, ast.Call):
            called = attribute_chain(receiver.func) or []
            if node.attr == "tolist" and called[:2] == ["adapter", "to_numpy"]:
                continue
            if node.attr == "tangent" and called[:1] == ["fw"]:   # unpack_dual(t).tangent
                continue
        if node.attr not in ON_FRAMEWORK_OBJECTS:
            problems.append(f".{node.attr} on {ast.unparse(receiver)}")
    return problems


def _listed(chain: str, listed) -> bool:
    return any(chain == name or chain.startswith(name + ".") for name in listed)


def fw_names_off_the_list(source: str) -> list[str]:
    """``fw.*`` names in ``source`` that docs/fw-surface.md does not list (the names every
    adapter must give torch's meaning; a namespace passes any other name of the framework
    through untranslated: MyGrad's ``transpose(x, 0, 1)`` is numpy's, a no-op there)."""
    from conformance import fw_surface
    from conformance.model.suite_index import surface_of

    listed = set(fw_surface.scan()["fw"])
    return sorted(c for c in surface_of(ast.parse(source)) if c.startswith("fw.") and not _listed(c, listed))


def test_the_surface_check_sees_torch_spellings():
    """The check can fail: the spellings the programs used before (issue 33) are caught."""
    for old in ("t1 = t0.exp()", "adapter.backward(t0.sum())", "ev.append(t0.tolist())",
                "ev.append(t0.grad)", "t0.grad = None", "ev.append(t0.grad_fn is None)",
                "adapter.register_node_hook(t0.grad_fn, f)", "adapter.grad_of(t0)"):
        assert surface_problems(old), old


    assert fw_names_off_the_list("t1 = fw.transpose(t0, 0, 1)") == ["fw.transpose"]


@pytest.mark.parametrize("step", P.samples(), ids=lambda s: s.variant)
def test_every_step_uses_only_the_documented_surface(step):
    source = "\n".join(step.render())
    assert not surface_problems(source), (surface_problems(source), source)
    assert not fw_names_off_the_list(source), (fw_names_off_the_list(source), source)


@settings(max_examples=80, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_every_generated_program_uses_only_the_documented_surface_and_its_variants_are_gated(prog):
    assert not surface_problems(str(prog)), (surface_problems(str(prog)), str(prog))
    for step in prog.steps:
        # every step the strategies generate is in the catalogue the gate judges, with all it needs
        assert gate.step_needs(step) <= gate.variant_needs(step.variant), (step, str(prog))


def test_a_steps_needs_are_read_from_its_source_through_the_registry():
    assert gate.needs_of_source("h0 = t0.register_hook(f)") == {"tensor_hooks"}
    assert gate.needs_of_source("ev.append(adapter.grad_fn(t0) is None)") == {"graph_nodes"}
    assert gate.needs_of_source("adapter.set_grad(t0, fw.ones_like(t0))") == {"grad_assignment"}
    assert gate.needs_of_source("adapter.backward(fw.sum(t0), create_graph=True)") == {"create_graph_backward"}
    assert gate.needs_of_source("adapter.backward(fw.sum(t0), create_graph=False)") == set()
    assert gate.needs_of_source("with fw.no_grad(): t1 = fw.exp(t0)") == {"grad_modes"}
    assert gate.needs_of_source("w0 = weakref.ref(t0)") == {"weakref"}
    assert gate.needs_of_source("ev.append(adapter.to_numpy(t0).tolist())") == set()


def _features_some_step_needs() -> list[str]:
    return sorted(set().union(*gate.catalogue().values()))


def _declaring(feature: str):
    """A target whose adapter declares ``feature`` missing (nothing is run on it)."""
    adapter = types.SimpleNamespace(unsupported={feature: f"no {feature} here"})
    return types.SimpleNamespace(adapter=adapter, probe={"failed": {}})


@pytest.mark.parametrize("feature", _features_some_step_needs())
def test_a_feature_the_adapter_declares_missing_is_never_generated_and_the_run_says_so(feature):
    search = Search(oracle=None, target=_declaring(feature), features=ALL_FEATURES)
    assert feature not in search.features
    needing = {v for v, needs in gate.catalogue().items() if feature in needs}
    assert needing and needing <= set(search.left_out), (needing, search.left_out)
    for variant in needing:
        assert search.left_out[variant]["why"][feature] == f"declared missing: no {feature} here"

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs(search.features))
    def never(prog):
        assert not any(feature in gate.step_needs(s) for s in prog.steps), str(prog)

    never()


# -- missing APIs: declared (unsupported) or not (an artefact), never a finding --------------
def _read_only_error() -> AttributeError:
    class Tensor:
        grad = property(lambda self: None)

    try:
        Tensor().grad = None
    except AttributeError as exc:
        return exc
    raise AssertionError("a property without a setter took an assignment")


def test_assigning_a_read_only_grad_is_a_missing_api_of_grad_assignment():
    """MyGrad's trial: ``t.grad = None`` on a read-only property raised an AttributeError with
    no object, which counted as behaviour: a finding although grad_assignment was declared
    missing."""
    exc = _read_only_error()
    assert is_missing_api(exc) and categorize(exc)[0] == MISSING_API
    assert missing_name(exc) == "grad="
    assert feature_of_missing({"feature": None, "name": "grad="}) == "grad_assignment"
    try:
        None.tolist  # noqa: B018 - a gradient that is None: behaviour, not a missing API
    except AttributeError as none:
        assert not is_missing_api(none)


@pytest.fixture(scope="module")
def oracle():
    return InProcessTarget("reference")


def _planted(spec: str, plant: str) -> SubprocessTarget:
    return SubprocessTarget(f"conformance.differential.planted:{spec}", sys.executable,
                            plant=f"conformance.differential.planted:{plant}")


def test_no_finding_rests_on_a_feature_the_adapter_declares_missing(oracle):
    """A planted framework whose ``.grad`` is read-only and whose adapter declares
    grad_assignment missing: a search finds nothing (the old programs' ``t.grad = None`` was a
    finding), never generates ``SetGrad``, says why, and still clears gradients through the
    adapter's own ``clear_grad``."""
    target = _planted("ReadOnlyGrad", "read_only_grad")
    try:
        search = Search(oracle, target, oracle.features & target.features)
        search.run(250, seed=3, max_rounds=5)
        assert not search.findings, [f.script for f in search.findings]
        assert "grad_assignment" in search.left_out["SetGrad"]["why"]
        assert not search.artefacts, search.artefacts
        cleared = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Backward(0), P.SetGradNone(0),
                                        P.ObserveGrad(0)))
        assert check(cleared, oracle, target).status == "same"
        # a program replayed from a file that assigns .grad: unsupported, never a divergence
        assigned = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.SetGrad(0), P.ObserveGrad(0)))
        outcome = check(assigned, oracle, target)
        assert outcome.status == "unsupported" and outcome.divergence is None
        assert outcome.unsupported["feature"] == "grad_assignment"
    finally:
        target.close()


def test_a_replayed_divergence_through_a_declared_feature_is_unsupported(oracle):
    """The framework's tensor hooks run in reverse (planted) but its adapter declares
    tensor_hooks missing: a program with hooks, replayed from a file, diverges in what it
    observes, and still is no finding."""
    target = _planted("NoTensorHooks", "reverse_tensor_hooks")
    try:
        prog = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Hook(0, 0, "tensor"),
                                     P.Hook(1, 0, "tensor"), P.Backward(0)))
        outcome = check(prog, oracle, target)
        assert outcome.status == "unsupported" and outcome.divergence is None, outcome.status
        assert outcome.unsupported["feature"] == "tensor_hooks"
        assert "Hook.tensor" in Search(oracle, target, ALL_FEATURES).left_out
    finally:
        target.close()


def test_variants_the_framework_cannot_run_are_found_before_the_search(oracle):
    """Each variant is tried once by a short program of its own before the search: the
    reference runs every one of them."""
    target = InProcessTarget("reference")
    search = Search(oracle, target, oracle.features & target.features)
    search.try_variants()
    assert not search.artefacts and not search.left_out and not search.excluded
    assert set(gate.probe_programs(ALL_FEATURES)) == set(gate.catalogue())


@settings(max_examples=30, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(gate.catalogue())))
def test_each_variants_probe_program_ends_with_that_variant_and_runs_on_the_reference(variant):
    from adapters.base import load_adapter
    from conformance.differential.interpreter import run_steps

    prog = gate.probe_programs(ALL_FEATURES)[variant]
    assert prog.steps[-1].variant == variant
    result = run_steps(load_adapter("reference"), prog.render(), prog.uses_forward_ad())
    assert result["error"] is None, (variant, result["error"], str(prog))
