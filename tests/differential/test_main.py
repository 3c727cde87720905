"""``python -m conformance.differential`` in an installed wheel without hypothesis (not a
dependency of the package): one line saying what to install, exit 4, no traceback."""
from __future__ import annotations


def test_without_hypothesis_it_says_what_to_install(run_tool_without):
    run = run_tool_without("conformance.differential", "hypothesis")
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "pip install hypothesis" in run.stderr, run.stderr
