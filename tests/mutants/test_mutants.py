"""The planted-bug registry (conformance/mutants): every mutant is a real, undoable bug."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import mutants as M
from conformance.rules import load_catalogue

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


@pytest.mark.parametrize("mutant_id", [m.id for m in SCORED])
def test_probe_differs_on_the_mutant_and_deactivate_undoes_it(mutant_id):
    differs, clean, mutated = M.probe_differs(mutant_id)
    assert differs, f"{mutant_id} is equivalent: its probe gives {clean!r} either way"
    assert M.active() == ()
    assert M._run_probe(M.get(mutant_id)) == clean  # the reference is intact again


def test_an_edit_that_does_not_match_is_refused():
    with pytest.raises(ValueError, match="occurs 0 times"):
        M.edit("reference.autograd.engine:_priority", "no such text", "x")
    M.deactivate()


def _suites(env_mutant, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(M.ENV, None)
    if env_mutant:
        env[M.ENV] = env_mutant
    return subprocess.run([sys.executable, "-m", "pytest", "--adapter=reference", "-p", "no:cacheprovider",
                           "-q", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_environment_variable_plants_the_bug_under_the_reference_adapter():
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
