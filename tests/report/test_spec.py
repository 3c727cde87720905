"""The generated specification page: every rule is an anchor with its evidence, tests, reference
lines and (when results.json exists) its statuses; bad input is a usage error."""
import json
import subprocess
import sys
from pathlib import Path

from conformance import spec
from conformance.rules import load_catalogue

ROOT = Path(__file__).resolve().parents[2]


def test_every_rule_is_an_anchor_with_its_evidence_and_tests(tmp_path):
    page = spec.render(tmp_path / "spec.html")
    catalogue = load_catalogue(ROOT / "conformance" / "catalogue")
    for rule_id in catalogue.rules:
        assert f'id="{rule_id}"' in page, rule_id
        assert f'id="{rule_id}--evidence"' in page, f"{rule_id}: no evidence shown"
    assert "test_identity.py:" in page and "<code>test_" in page
    assert "Status</dt>" not in page  # no results.json beside it


def test_reference_lines_come_from_rule_comments(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\nif x:  # rule: engine.retain-grad\n    pass\n"
                                   "# rules: hooks.a-b, hooks.c-d\n# more words\ny = 2  # see grad_mode.set\n")
    found = spec.reference_lines(tmp_path)
    assert [(line, code) for _, line, code in found["engine.retain-grad"]] == [(2, "if x:")]
    assert [(line, code) for _, line, code in found["hooks.c-d"]] == [(4, "y = 2")]
    assert "grad_mode.set" not in found


def test_statuses_come_from_results_json(tmp_path):
    catalogue = [{"id": "engine.retain-grad", "suite": "engine", "level": "MUST", "statement": "s",
                  "rationale": "r", "source": "x"}]
    run = {"label": "torch", "framework": "torch", "framework_version": "2.13.0", "status": "complete",
           "detail": None, "tests": [{"nodeid": "t.py::test_a", "rule": "engine.retain-grad", "suite": "engine",
                                      "level": "MUST", "outcome": "DIVERGES", "actual": "DIVERGES",
                                      "message": "", "observed": None, "expectation": None,
                                      "blocked_by": None, "missing_feature": None, "not_checked": None,
                                      "duration": 0}]}
    from conformance.results import combined
    data = {"schema": combined.SCHEMA, "version": combined.VERSION, "generated": "2026-01-01T00:00:00",
            "catalogue": catalogue, "runs": [run]}
    (tmp_path / "results.json").write_text(json.dumps(data))
    columns, status = spec.framework_status(tmp_path / "results.json")
    assert columns == ["torch 2.13.0"] and status[("engine.retain-grad", "torch 2.13.0")] == "DIVERGES"


def test_out_naming_a_directory_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "conformance.spec", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
