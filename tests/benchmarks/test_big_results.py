"""benchmarks/big_results.py: the report benchmark's input is a results file the report reads
(every line typed and checked), of about the size asked, with every kind of line the page
shows (a regression there would benchmark an input no run writes)."""
from __future__ import annotations

import importlib.util
import os

from conformance.results import read_run

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "big_results.py")


def _module():
    spec = importlib.util.spec_from_file_location("bench_big_results", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_it_writes_a_readable_run_of_about_the_size_asked(tmp_path):
    path = tmp_path / "torch.jsonl"
    n = _module().write(path, 0.3)
    assert 0.3e6 <= path.stat().st_size < 0.6e6
    run = read_run(path)
    assert run.complete and len(run.tests) == n
    assert {t.actual for t in run.tests} >= {"PASS", "DIVERGES", "LEAK", "UNSUPPORTED", "BLOCKED"}
    assert any(t.chain for t in run.tests) and any(t.expectation for t in run.tests)
    assert len({t.nodeid for t in run.tests}) == n  # a long run: no test twice
