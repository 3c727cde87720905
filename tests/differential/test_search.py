"""The differential tester (conformance/differential, docs/differential.md): a derandomized
profile against the reference itself and against torch, the planted-bug test, and the parts
it is built from (programs render to the code they run, comparison, crash handling)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from conformance.differential import program as P
from conformance.differential.compare import compare, same_record
from conformance.differential.runner import InProcessTarget, Search, SubprocessTarget, check, main
from conformance.differential.strategies import programs

ROOT = Path(__file__).resolve().parents[2]
# CI profile: fixed seeds and example counts (a few seconds each on one core).
CI_EXAMPLES = 200
CI_SEED = 20240


@pytest.fixture(scope="module")
def oracle():
    return InProcessTarget("reference")


def _search(oracle, target, examples, seed=CI_SEED, **kw):
    search = Search(oracle, target, oracle.features & target.features, **kw)
    search.run(examples, seed)
    return search


def test_reference_against_itself_finds_nothing(oracle):
    search = _search(oracle, InProcessTarget("reference"), CI_EXAMPLES)
    assert search.examples >= CI_EXAMPLES
    assert not search.findings, [f.script for f in search.findings]


def test_torch_runs_clean_apart_from_its_expectations(oracle):
    pytest.importorskip("torch")
    search = _search(oracle, InProcessTarget("torch"), CI_EXAMPLES)
    unexpected = [f.script for f in search.findings if not f.expectation]
    assert not unexpected, "\n\n".join(unexpected)


def _run_script(script: str, tmp_path: Path, plant: str | None) -> subprocess.CompletedProcess:
    path = tmp_path / "repro.py"
    path.write_text(script)
    bootstrap = "import runpy\n"
    if plant:
        module, _, func = plant.partition(":")
        bootstrap += f"import {module}; {module}.{func}()\n"
    bootstrap += f"runpy.run_path({str(path)!r}, run_name='__main__')\n"
    return subprocess.run([sys.executable, "-c", bootstrap], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_planted_bug_is_found_and_shrunk_to_a_short_script(oracle, tmp_path):
    plant = "conformance.differential.planted:reverse_tensor_hooks"
    target = SubprocessTarget("reference", sys.executable, plant=plant)
    try:
        search = _search(oracle, target, 150, seed=1, max_steps=12)  # found after 48
    finally:
        target.close()
    hooks = [f for f in search.findings if f.divergence.suite == "hooks"]
    assert hooks, f"the reversed hook order went unnoticed in {search.examples} programs"
    script = hooks[0].script
    lines = script.count("\n")
    assert lines <= 15, script
    # the script reproduces the divergence on the buggy copy and runs clean on the reference
    buggy = _run_script(script, tmp_path, plant)
    assert buggy.returncode != 0 and "AssertionError" in buggy.stderr, (script, buggy.stderr)
    clean = _run_script(script, tmp_path, None)
    assert clean.returncode == 0, (script, clean.stderr)


def test_a_crash_is_recorded_as_a_divergence_and_the_worker_restarts(oracle):
    target = SubprocessTarget("reference", sys.executable, plant="conformance.differential.planted:crash_on_sin")
    try:
        prog = P.Program("float64", (
            P.Leaf(0, (3,), 0, True), P.Unary(1, 0, "sin"), P.ObserveGrad(0)))
        outcome = check(prog, oracle, target)
        assert outcome.divergence is not None
        assert outcome.target_run["error"]["category"] == "crash"
        assert outcome.divergence.step == 1 and outcome.divergence.kind == "error"
        safe = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Unary(1, 0, "exp")))
        assert check(safe, oracle, target).status == "same"  # a fresh worker took over
    finally:
        target.close()


@settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_programs_round_trip_through_json_and_render_the_code_they_run(prog):
    again = P.Program.from_json(json.loads(json.dumps(prog.to_json())))
    assert again == prog
    for step in prog.steps:
        assert step.render("fw") == [line.replace("torch", "fw") for line in step.render("torch")]


def test_comparison_uses_the_dtype_tolerance_and_names_the_first_divergence():
    assert same_record(["grad", "t0", [1.0, 2.0]], ["grad", "t0", [1.0 + 1e-6, 2.0]], "float32")
    assert not same_record(["grad", "t0", [1.0, 2.0]], ["grad", "t0", [1.0 + 1e-6, 2.0]], "float64")
    assert not same_record(["grad", "t0", [1.0, 2.0]], ["grad", "t0", None], "float32")
    prog = P.Program("float64", (P.Leaf(0, (3,), 0, True), P.Hook(0, 0, "tensor"), P.Hook(1, 0, "tensor"),
                                 P.Backward(0)))
    ref = {"trace": [[3, ["hook", 0, [3]]], [3, ["hook", 1, [3]]]], "error": None}
    rev = {"trace": [[3, ["hook", 1, [3]]], [3, ["hook", 0, [3]]]], "error": None}
    div = compare(prog, ref, rev)
    assert div.step == 3 and div.suite == "hooks" and div.signature == "hooks|Backward|order:hook"
    err = {"trace": [], "error": {"step": 3, "type": "RuntimeError", "category": "freed",
                                  "marker": "second time", "message": "..."}}
    assert compare(prog, ref, err).signature == "engine|Backward|error:none/freed"
    assert compare(prog, ref, ref) is None


def test_the_command_line_writes_a_run_line_and_an_end_line(tmp_path, capsys):
    results = tmp_path / "explore-reference.jsonl"
    assert main(["--adapter", "reference", "--examples", "20", "--seed", "3",
                 "--results", str(results)]) == 0
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert records[0]["type"] == "run" and records[-1]["type"] == "end"
    assert records[-1]["examples"] >= 20 and records[-1]["divergences"] == 0
