"""``python -m conformance.differential`` in an installed wheel without hypothesis (not a
dependency of the package): one line saying what to install, exit 4, no traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_without_hypothesis_it_says_what_to_install():
    # sys.modules[name] = None makes ``import name`` raise ImportError, as if not installed
    code = ("import runpy, sys; sys.modules['hypothesis'] = None; sys.argv = ['x']; "
            "runpy.run_module('conformance.differential', run_name='__main__')")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "pip install hypothesis" in run.stderr, run.stderr
