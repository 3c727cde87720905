"""The planted-bug registry (conformance/mutants): every mutant is a real, undoable bug."""
from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conformance import mutants as M
from conformance.mutants.adapter import SPEC as PLANTED
from conformance.mutants.anchor import AnchorError
from conformance.rules import load_catalogue
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]
SCORED = [m for m in M.load().values() if m.scored]


def test_the_curated_set_covers_every_suite_with_at_least_40_mutants():
    assert len(SCORED) >= 40
    assert {m.area for m in SCORED} == set(M.AREAS)


def test_every_mutant_names_what_it_models_and_rules_that_exist():
    rules = set(load_catalogue(ROOT / "conformance" / "catalogue").rules)
    for m in SCORED:
        assert m.models and m.description, m.id
        assert m.rules and set(m.rules) <= rules, (m.id, set(m.rules) - rules)


def _reference_state() -> dict:
    """Every function's code object, every function, descriptor and class, and the names of all
    attributes of the reference's modules and classes (what a mutant's ``edit`` and ``replace``
    change; the values of data attributes change as the engine runs)."""
    import reference

    state = {}
    for info in pkgutil.walk_packages(reference.__path__, "reference."):
        module = importlib.import_module(info.name)
        owners = [module, *(v for v in vars(module).values()
                            if isinstance(v, type) and v.__module__ == module.__name__)]
        for owner in owners:
            for name, value in list(vars(owner).items()):
                key = f"{info.name}:{getattr(owner, '__qualname__', '')}.{name}"
                if isinstance(value, types.ModuleType) or (name.startswith("__") and not callable(value)):
                    continue  # a submodule imported on first use, a cache (copy's __slotnames__)
                state[key] = value if callable(value) or hasattr(value, "__get__") else None
                for part in ("fget", "fset", "fdel", "__func__"):
                    func = getattr(value, part, None)
                    if func is not None and hasattr(func, "__code__"):
                        state[f"{key}.{part}"] = func.__code__
                if hasattr(value, "__code__"):
                    state[f"{key}.__code__"] = value.__code__
    return state


# Every mutant, scored or not, against today's reference: its patch applies (each edit's
# pattern matches its function exactly once: an engine change that breaks an anchor fails
# here, naming the mutant, the function and the pattern), its probe tells it from the clean
# reference, and deactivate() puts every function and attribute back.
@pytest.mark.parametrize("mutant_id", list(M.load()))
def test_every_mutant_applies_differs_and_is_undone(mutant_id):
    m = M.get(mutant_id)
    if m.id not in UNPROBED:
        M.run_probe(m)  # imports what it needs first (a submodule is an attribute of its package)
    before = _reference_state()
    if m.id in UNPROBED:
        M.activate(mutant_id)
        M.deactivate()
    else:
        differs, clean, mutated = M.probe_differs(mutant_id)
        assert differs, f"{mutant_id} is equivalent: its probe gives {clean!r} either way"
        assert M.run_probe(m) == clean  # the reference behaves as before again
    assert M.active() == ()
    changed = _changed(before, _reference_state())
    assert not changed, f"{mutant_id}: deactivate() left these changed: {changed}"


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k, M) is not after.get(k, M))


UNPROBED = {"harness.crash-on-sin"}  # its probe would kill the process: applied and undone only


def test_an_edit_that_does_not_match_is_refused_naming_mutant_function_and_pattern():
    with pytest.raises(AnchorError) as info:
        M.edit("reference.autograd.engine:_priority", "no such text", "x")
    message = str(info.value)
    assert "reference.autograd.engine:_priority" in message and "'no such text'" in message
    assert "matches 0 times" in message and "reference/autograd/engine.py:" in message
    M.deactivate()


def test_a_failing_edit_names_the_mutant_and_undoes_the_edits_before_it():
    def patch():
        M.edit("reference.autograd.engine:_priority", "else -node._seq", "else node._seq")
        M.edit("reference.autograd.engine:_priority", "node", "x")  # _priority(node), type(node), node._seq

    M.mutant("harness.test-broken-anchor", models="a test", rules=(), probe=lambda: 0, scored=False)(patch)
    try:
        before = _reference_state()
        with pytest.raises(AnchorError, match=r"^mutant harness.test-broken-anchor: edit of "
                           r"reference.autograd.engine:_priority \(reference/autograd/engine.py:\d+\): "
                           r"pattern 'node' matches 3 times, not once; lengthen the pattern"):
            M.activate("harness.test-broken-anchor")
        assert M.active() == () and not _changed(before, _reference_state())
    finally:
        M.REGISTRY.pop("harness.test-broken-anchor")
        M.deactivate()


def _suites(env_mutant, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(M.ENV, None)
    if env_mutant:
        env[M.ENV] = env_mutant
    return subprocess.run([sys.executable, "-m", "pytest", f"--adapter={PLANTED}", "-p", "no:cacheprovider",
                           "-q", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=hang_limit(75))


def test_the_environment_variable_plants_the_bug_under_the_mutants_adapter():
    args = ("conformance/suites/test_hooks.py", "-k", "registration_order")
    assert _suites(None, *args).returncode == 0
    planted = _suites("hooks.tensor-hooks-reversed", *args)
    assert planted.returncode == 1, planted.stdout[-2000:]


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--only", "no.such-mutant"], ["--bogus"]])
def test_bad_command_line_is_a_usage_error(argv):
    proc = subprocess.run([sys.executable, "-m", "conformance.mutants", *argv], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 4
    assert "Traceback" not in proc.stderr


def test_the_mutants_file_is_written_whole_or_not_at_all(tmp_path):
    from conformance.mutants.__main__ import _write_whole

    out = tmp_path / "reports" / "mutants.json"
    _write_whole(out, '{"type": "mutants"}\n')
    assert out.read_text() == '{"type": "mutants"}\n'
    with pytest.raises(TypeError):
        _write_whole(out, None)  # fails while writing
    assert out.read_text() == '{"type": "mutants"}\n'  # the previous file, whole
    assert [p.name for p in out.parent.iterdir()] == ["mutants.json"]  # no temporary file left


def test_list_names_every_scored_mutant_in_registration_order():
    proc = subprocess.run([sys.executable, "-m", "conformance.mutants", "--list"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert [line.split()[0] for line in proc.stdout.splitlines()] == [m.id for m in SCORED]


def test_the_reference_adapter_does_not_import_the_mutants_tool():
    """The tool patches the reference from its own side (conformance/mutants/adapter.py)."""
    import ast

    tree = ast.parse((ROOT / "adapters" / "reference_adapter.py").read_text(encoding="utf-8"))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("conformance")], imported
