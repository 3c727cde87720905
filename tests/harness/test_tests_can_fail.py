"""Every test can fail: the suite tests fixed by issue 12 each fail on a planted bug of the
reference (conformance/mutants/tests_can_fail.py) and pass on the clean reference."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import mutants as M
from conformance.mutants.adapter import SPEC as PLANTED
from tests.hang import hang_limit

ROOT = Path(__file__).resolve().parents[2]

# planted bug -> (suite test, the outcome the fixed test gives on it)
CASES = {
    "engine.retain-graph-drops-saved-objects": [
        ("test_engine.py::test_retain_graph_keeps_saved_intermediate_alive", "DIVERGES"),
        ("test_gc_cycles.py::test_retained_graph_keeps_saved_until_graph_dies", "DIVERGES"),
    ],
    "engine.graph-nodes-never-freed": [
        ("test_engine.py::test_deep_graph_freed_without_backward", "DIVERGES"),
        ("test_engine.py::test_deep_graph_freed_after_backward", "DIVERGES"),
    ],
    "gc_cycles.tensor-hooks-never-freed": [
        ("test_gc_cycles.py::test_finalizer_collect_in_legacy_function", "DIVERGES"),
    ],
    # implementation-defined: a hook whose remove() failed is no observation (was OBSERVED)
    "hooks.handle-remove-refused": [
        ("test_hooks.py::test_hook_removed_mid_backward_in_the_same_pass", "BLOCKED"),
    ],
    # (the threads test leaves its grad-mode half to these two where grad modes cross threads
    # at all: it says so and judges the gradients)
    "engine.grad-mode-process-global": [
        # the other thread is inside its mode while this one looks (issue 33: was sequential)
        ("test_engine.py::test_enable_grad_in_thread_does_not_reenable_caller", "DIVERGES"),
        ("test_engine.py::test_no_grad_in_other_thread_does_not_leak", "DIVERGES"),
    ],
    # issue 33 item 7: what the engine stores of the caller's tensors; each switch's spellings
    "engine.gradient-argument-stored-as-grad": [
        ("test_engine.py::test_gradient_argument_is_not_stored_as_grad[leaf-is-root]", "DIVERGES"),
        ("test_engine.py::test_gradient_argument_is_not_stored_as_grad[through-add]", "DIVERGES"),
    ],
    "engine.grad-mode-decorator-no-op": [
        ("test_engine.py::test_grad_mode_switch_as_context_and_decorator[decorator-no_grad]", "DIVERGES"),
        ("test_engine.py::test_grad_mode_switch_as_context_and_decorator[decorator-enable_grad]", "DIVERGES"),
    ],
    # issue 33: what a custom backward or a hook returns
    "legacy_function.backward-result-unchecked": [
        ("test_legacy_function.py::test_backward_result_of_a_wrong_shape_is_refused[other-shape]", "DIVERGES"),
        ("test_legacy_function.py::test_backward_result_of_another_dtype_is_cast_to_the_input_dtype[float64]",
         "DIVERGES"),
    ],
    "hooks.user-gradient-taken-over": [
        ("test_hooks.py::test_hook_result_the_user_holds_is_not_the_grad[leaf]", "DIVERGES"),
        ("test_legacy_function.py::test_backward_result_the_user_holds_is_not_the_grad", "DIVERGES"),
    ],
}
ALL_TESTS = [test for cases in CASES.values() for test, _ in cases]


def _run(tmp_path, mutant_id, tests):
    results = tmp_path / f"{mutant_id or 'clean'}.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(M.ENV, None)
    if mutant_id:
        env[M.ENV] = mutant_id
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", f"--adapter={PLANTED}", "-p", "no:cacheprovider", "-q",
         "-p", "no:randomly", "--results", str(results),
         *[f"conformance/suites/{t}" for t in tests]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=hang_limit(150))
    lines = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    got = {d["nodeid"].split("suites/")[-1]: d["actual"] for d in lines if d.get("type") == "test"}
    assert set(got) == set(tests), (proc.stdout[-2000:], proc.stderr[-2000:])
    return got


def test_the_fixed_tests_pass_on_the_clean_reference(tmp_path):
    got = _run(tmp_path, None, ALL_TESTS)
    assert all(outcome in ("PASS", "OBSERVED") for outcome in got.values()), got


@pytest.mark.parametrize("mutant_id", sorted(CASES))
def test_each_fixed_test_fails_on_its_planted_bug(tmp_path, mutant_id):
    cases = CASES[mutant_id]
    got = _run(tmp_path, mutant_id, [t for t, _ in cases])
    assert got == {t: outcome for t, outcome in cases}
