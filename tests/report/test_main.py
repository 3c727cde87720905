"""``python -m conformance.report`` in an installed wheel without jinja2 (the ``report`` extra):
one line saying what to install, exit 4, no traceback."""
from __future__ import annotations


def test_without_jinja2_it_says_what_to_install(run_tool_without):
    run = run_tool_without("conformance.report", "jinja2")
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "autograd-conformance[report]" in run.stderr, run.stderr
