"""conformance/repro/cells.py makes every cell's script; the page renderer makes none."""
from __future__ import annotations

import ast
from pathlib import Path

from conformance.repro import cells as repro_cells
from conformance.results import RunHeader, TestRecord, combined
from tests.report.test_sections import ENTRIES

ROOT = Path(__file__).resolve().parents[2]
RULE = "identity.grad-stable-id"


def test_a_run_gets_a_script_per_rule_and_an_empty_column_none():
    tests = [TestRecord(nodeid="conformance/suites/test_identity.py::test_grad_is_stable",
                        rule=RULE, actual="PASS", outcome="PASS")]
    ran = combined.Column(label="ref", framework="reference", status="complete", detail="",
                          header=RunHeader(adapter="reference", device="cpu"), end=None, tests=tests)
    empty = combined.Column(label="gone", framework="x", status="missing", detail="",
                            header=RunHeader(), end=None, tests=[])
    data = combined.Combined(catalogue=[e for e in ENTRIES if e.id == RULE], runs=[ran, empty])
    scripts, errors = repro_cells.scripts_for(data)
    assert scripts["gone"] == {} and errors["gone"] == {}
    assert errors["ref"] == {}
    assert RULE in scripts["ref"][RULE] and "repro.finish()" in scripts["ref"][RULE]


def test_the_page_renderer_generates_no_script():
    for path in sorted((ROOT / "conformance" / "report").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in ("generate", "render_template")]
        assert calls == [], f"{path.name} generates scripts: move it to conformance/repro/"
