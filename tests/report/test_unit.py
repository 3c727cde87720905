"""The report's parts on small synthetic runs: results.json schema, cells and counts, JUnit,
leak-chain pictures, escaping in the page, and reproduction scripts for every rule."""
from __future__ import annotations

import ast
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.rules import load_catalogue
from conformance.report import aggregate, html, junit
from conformance.repro import derive as repro
from conformance.repro import source
from conformance.report.build import build, collect_runs
from conformance.results.column_status import NOT_INSTALLED, ColumnStatus, write_status
from conformance.report.svg import chain_svg
from conformance import results
from conformance.results import SCHEMA_VERSION, combined as schema

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = load_catalogue(ROOT / "conformance" / "catalogue")
#: this checkout's suites: the synthetic runs' scripts are made from the working tree
SUITE_DIGEST = source.digest(ROOT)
RULE = "identity.grad-stable-id"
OTHER = "identity.grad-same-object"
CHAIN = {"kind": "cycle", "types": ["Tensor", "dict", "function <lambda>", "cell", "Tensor"],
         "edges": [[0, 1, "._backward_hooks"], [1, 2, "[0]"], [2, 3, "closure 'b'"],
                   [3, 4, "cell_contents"]], "note": ""}


def write_run(path: Path, adapter: str, version: str, tests: list[tuple], end: bool = True):
    lines = [{"type": "run", "schema": SCHEMA_VERSION, "suite_revision": "abc123",
              "suite_dirty": False, "suite_digest": SUITE_DIGEST, "started": "2026-01-01T00:00:00+00:00", "adapter": adapter,
              "framework_version": version, "device": "cpu", "python": "3.11.7",
              "platform": "Linux", "rules": len(CATALOGUE.rules), "argv": []}]
    for rule, name, outcome, actual, message, *extra in tests:
        rec = {"type": "test", "adapter": adapter, "framework_version": version, "device": "cpu",
               "python": "3.11.7", "nodeid": f"conformance/suites/test_x.py::{name}",
               "rule": rule, "suite": rule.split(".")[0], "level": "MUST", "outcome": outcome,
               "actual": actual, "message": message, "observed": None,
               "expectation": extra[0] if extra else None, "duration": 0.01}
        if len(extra) > 1:
            rec["chain"] = extra[1]
        lines.append(rec)
    if end:
        lines.append({"type": "end", "exitstatus": 1, "finished": "2026-01-01T00:01:00+00:00",
                      "counts": {}, "not_run": []})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.fixture
def results_dir(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    write_run(d / "reference.jsonl", "reference", "0.1", [
        (RULE, "test_a", "PASS", "PASS", ""), (RULE, "test_b", "PASS", "PASS", ""),
        (OTHER, "test_c", "PASS", "PASS", "")])
    write_run(d / "torch.jsonl", "torch", "2.13.0", [
        (RULE, "test_a", "PASS", "PASS", ""), (RULE, "test_b", "PASS", "PASS", ""),
        (OTHER, "test_c", "XFAIL", "DIVERGES", "leak", {"outcome": "DIVERGES", "reason": "r"},
         CHAIN)])
    write_run(d / "oneflow-0.8.0.jsonl", "oneflow", "0.8.0", [
        (RULE, "test_a", "DIVERGES", "DIVERGES", "<script>alert('x')</script> ids alternate"),
        (OTHER, "test_c", "PASS", "PASS", "")], end=False)
    write_status(d, "oneflow-0.9.0",
                 ColumnStatus(NOT_INSTALLED, "pip could not install oneflow==0.9.0"))
    return d


def _compile_columns() -> list[str]:
    """The compile modes' columns, as their adapter declares them (adapters/torch_compile_adapter.py)."""
    from adapters.base import builtin_adapter_classes

    classes = builtin_adapter_classes()
    return [run.label for mode in ("torch-compile", "torch-compile-inductor",
                                   "torch-compiled-autograd") for run in classes[mode].runs]


def test_results_json_holds_every_column_with_its_status(results_dir, tmp_path):
    data, page = build(results_dir, tmp_path / "out", builtin=True)  # as nox -s report
    compile_modes = _compile_columns()
    assert [r.label for r in data.runs] == ["reference", "torch", "torch-2.15.0", "torch-1.13.1",
                                            *compile_modes, "paddle", "oneflow-0.9.0",
                                            "oneflow-0.8.0", "tinygrad", "mygrad"]
    status = {r.label: r.status for r in data.runs}
    assert status == {"reference": "complete", "torch": "complete", "torch-2.15.0": "missing",
                      "torch-1.13.1": "missing", "paddle": "missing",
                      "oneflow-0.9.0": "not-installed", "oneflow-0.8.0": "interrupted",
                      "tinygrad": "missing", "mygrad": "missing",
                      **{label: "missing" for label in compile_modes}}
    loaded = json.loads((tmp_path / "out" / "results.json").read_text())
    assert loaded["version"] == schema.VERSION and loaded["schema"] == schema.SCHEMA
    assert schema.load(tmp_path / "out" / "results.json").to_json() == loaded  # reads back
    torch = next(r for r in loaded["runs"] if r["label"] == "torch")
    assert {"suite_revision", "adapter", "framework_version", "python", "device",
            "started"} <= set(torch)
    leak = next(t for t in torch["tests"] if t["rule"] == OTHER)
    assert leak["chain"] == CHAIN and leak["duration"] == 0.01 and leak["message"] == "leak"


def test_a_third_party_report_shows_only_the_runs_it_was_given(tmp_path):
    """A framework's own report (no --builtin-columns): its runs only, no placeholder column of
    a built-in framework (compile modes included), no JUnit file for one, no advice naming a
    nox session in its data."""
    d = tmp_path / "results"
    d.mkdir()
    write_run(d / "myfw.jsonl", "myfw", "0.3", [(RULE, "test_a", "DIVERGES", "DIVERGES", "m")])
    data, page = build(d, tmp_path / "out")
    assert [r.label for r in data.runs] == ["myfw"]
    assert [p.name for p in (tmp_path / "out" / "junit").iterdir()] == ["myfw.xml"]
    text = page.read_text(encoding="utf-8")
    assert not any(f'"{label}"' in text for label in _compile_columns())
    assert "nox -s" not in (tmp_path / "out" / "results.json").read_text(encoding="utf-8")
    assert (tmp_path / "out" / "spec.html").is_file()  # the page links it
    # a built-in run with results is a column, in its declared place
    write_run(d / "torch.jsonl", "torch", "2.13.0", [(RULE, "test_a", "PASS", "PASS", "")])
    data, _ = build(d, tmp_path / "out")
    assert [r.label for r in data.runs] == ["torch", "myfw"]


@pytest.mark.parametrize("change, words", [
    ({"version": 0}, f"older than {schema.VERSION} and has no migration"),
    ({"version": 99}, "newer than this report reads"),
    ({"schema": "something-else"}, "not an autograd-conformance results file"),
    ({"version": "1"}, "no integer"),
])
def test_other_schema_versions_are_refused_with_what_to_do(results_dir, tmp_path, change, words):
    build(results_dir, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**data, **change}))
    with pytest.raises(results.ResultsSchemaError, match=words):
        schema.load(path)


def test_a_registered_migration_is_applied(results_dir, tmp_path, monkeypatch):
    build(results_dir, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    monkeypatch.setitem(results.MIGRATIONS[results.COMBINED], 0,
                        lambda d: {**d, "version": 1, "runs": d["old_runs"]})
    old = {k: v for k, v in data.items() if k != "runs"} | {"version": 0, "old_runs": data["runs"]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert schema.load(path).to_json()["runs"] == data["runs"]


def test_a_version_1_results_json_gains_blocked_by(results_dir, tmp_path):
    build(results_dir, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    for run in data["runs"]:
        del run["root_causes"]
        for t in run["tests"]:
            del t["blocked_by"]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps({**data, "version": 1}))
    loaded = schema.load(path)
    assert loaded.version == schema.VERSION
    assert all(t.blocked_by is None for r in loaded.runs for t in r.tests)
    assert all(r.root_causes == [] for r in loaded.runs)


def test_a_run_killed_mid_line_reads_as_interrupted(tmp_path):
    path = tmp_path / "cut.jsonl"
    write_run(path, "torch", "2.13.0", [(RULE, "test_a", "PASS", "PASS", "")], end=False)
    path.write_text(path.read_text() + '{"type": "test", "rule": "x')  # no newline: cut off
    run = schema.column_of(path)
    assert run.status == "interrupted" and len(run.tests) == 1
    assert "cut off" in run.detail
    assert results.end_line(path) is None


def test_results_lines_of_another_schema_are_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"type": "run", "schema": 99}) + "\n")
    with pytest.raises(results.ResultsSchemaError, match="schema 99"):
        schema.column_of(path)


def test_cells_take_the_most_severe_test_and_missing_tests_are_not_run(results_dir):
    data = schema.build(collect_runs(results_dir, {
        "reference": ("reference", None), "torch": ("torch", "2.13.0"),
        "oneflow-0.9.0": ("oneflow", "0.9.0"), "oneflow-0.8.0": ("oneflow", "0.8.0")}),
        CATALOGUE)
    table = aggregate.cells(data)
    assert table[(RULE, "oneflow-0.8.0")].outcome == "NOT RUN"  # test_b is missing there
    assert table[(RULE, "oneflow-0.8.0")].actual == "NOT RUN"
    assert table[(OTHER, "torch")].outcome == "XFAIL"
    assert table[(OTHER, "torch")].actual == "DIVERGES"
    assert table[(OTHER, "torch")].expectation["reason"] == "r"
    assert table[(RULE, "oneflow-0.9.0")].outcome == "NOT INSTALLED"
    counts = aggregate.suite_counts(data, table)
    ref = counts[("identity", "reference")]
    assert ref["rules"] == len(CATALOGUE.of_suite("identity")) and ref["held"] == 2
    of8 = counts[("identity", "oneflow-0.8.0")]
    assert of8["tests"] == 2 and of8["tests_expected"] >= 3  # the lost test is visible
    only = {(o["rule"], o["who"]) for o in aggregate.only_one(data, table)}
    assert (OTHER, "torch 2.13.0") in only


def test_junit_file_per_run(results_dir, tmp_path):
    data, _ = build(results_dir, tmp_path / "out", builtin=True)
    files = sorted(p.name for p in (tmp_path / "out" / "junit").iterdir())
    compile_modes = [f"{label}.xml" for label in _compile_columns()]
    assert files == sorted(["oneflow-0.8.0.xml", "oneflow-0.9.0.xml", "paddle.xml", "reference.xml",
                            "tinygrad.xml", "mygrad.xml", "torch-1.13.1.xml", "torch-2.15.0.xml",
                            "torch.xml", *compile_modes])
    root = ET.parse(tmp_path / "out" / "junit" / "oneflow-0.8.0.xml").getroot()
    failures = root.findall(".//failure")
    assert failures and "<script>" in failures[0].text
    skipped = ET.parse(tmp_path / "out" / "junit" / "torch.xml").getroot().findall(".//skipped")
    assert skipped and skipped[0].get("message").startswith("XFAIL")
    assert ET.parse(tmp_path / "out" / "junit" / "oneflow-0.9.0.xml").getroot().find(".//error") \
        is not None


def test_chain_svg_draws_each_object_and_escapes_labels():
    svg = chain_svg({**CHAIN, "types": ["<script>x</script>", *CHAIN["types"][1:]]})
    ET.fromstring(svg)  # well-formed
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "closure 'b'".replace("'", "&#x27;") in svg
    assert svg.count("<rect") == 4  # a cycle: the last entry is the first object again


def test_page_escapes_messages_and_embeds_its_data(results_dir, tmp_path):
    _, page = build(results_dir, tmp_path / "out")
    text = page.read_text()
    assert "<script>alert" not in text
    assert text.count("<script") == 2  # the data block and the page's own script
    data = html.embedded_data(text)
    cell = data["cells"][RULE]["oneflow-0.8.0"]
    assert any("<script>alert('x')</script>" in t["message"] for t in cell["tests"])
    # nothing is fetched: no resource URL (rule sources may quote public URLs as text)
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//|url\(\s*["\']?(https?:)?//|@import',
                         text, re.I)
    # one set of scripts per column (run), made from that run
    # (columns without results have none: oneflow-0.9.0 not installed, paddle missing)
    assert {k for k, v in data["scripts"].items() if v} == {"reference", "torch", "oneflow-0.8.0"}


def test_a_contradicted_declaration_is_shown_beside_its_run(results_dir, tmp_path):
    """A feature the adapter declares missing while the framework has it made its tests
    UNSUPPORTED: the run's header carries that line and the page shows it by the run's name."""
    path = results_dir / "reference.jsonl"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["declarations"] = ["declared unsupported, yet the framework has it: <b>hooks</b>"]
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    data, page = build(results_dir, tmp_path / "out")
    run = next(r for r in data.runs if r.label == "reference")
    assert run.header.declarations == header["declarations"]
    text = page.read_text()
    assert "yet the framework has it: &lt;b&gt;hooks&lt;/b&gt;" in text and "<b>hooks" not in text


# -- reproduction scripts -----------------------------------------------------------------------
@pytest.mark.parametrize("adapter", ["reference", "torch", "paddle", "oneflow", "tinygrad"])
def test_every_rule_has_a_script_that_imports_the_harness_instead_of_copying_it(adapter):
    problems = []
    for rule in CATALOGUE.rules.values():
        try:
            script = repro.generate(rule, adapter)
        except repro.ReproError as exc:
            problems.append(f"{rule.id}: {exc}")
            continue
        repro.check_script(script, repro.framework_of(adapter)[0])
        assert "from conformance.repro.runtime import Repro" in script and \
            script.rstrip().endswith("repro.finish()"), rule.id
        assert f"conformance rule {rule.id} [" in script
        # the harness is imported, never copied: no Unsupported/Blocked class, no classification
        assert "class Unsupported" not in script and "class Blocked" not in script, rule.id
        assert "except AssertionError" not in script, rule.id
    assert not problems, "rules without a reproduction script:\n" + "\n".join(problems)


def test_every_hand_written_template_names_a_rule_and_defines_the_test():
    templates = sorted(repro.TEMPLATES_DIR.glob("*.py"))
    named = [p for p in templates if p.name != "__init__.py"]
    assert named, "the id(a.grad) repro must be hand-written"
    for path in named:
        rule_id = path.name[:-3]
        assert rule_id in CATALOGUE.rules, f"{path.name} names no catalogue rule"
        text = path.read_text()
        assert "{fw}" in text and "def test_script(" in text, path.name
        for adapter in ("reference", "torch", "oneflow"):
            ast.parse(repro.generate(CATALOGUE.rules[rule_id], adapter))


def test_id_of_grad_script_prints_the_ids():
    script = repro.generate(CATALOGUE.rules[RULE], "oneflow")
    assert "import oneflow" in script and "_preload_cuda_libraries()" in script
    assert "id(a.grad)" in script and "print(f\"  read {i}: {value}\"" in script
    assert "adapter_spec='oneflow'" in script


def test_derived_script_copies_the_tests_and_imports_helpers_and_harness():
    rule = CATALOGUE.rules["gc_cycles.hook-self-closure-nonleaf-collectable"]
    script = repro.generate(rule, "torch")
    assert "\nimport torch\n" in script and "fw." not in script
    tree = ast.parse(script)
    assert "\n@rule(" not in script and "@pytest" not in script
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    # the test and its suite module's own helper are copied
    assert {"test_hook_closing_over_its_nonleaf_collectable", "watch"} <= defined
    # the suites' helper modules and the harness are the installed package's, imported
    assert not {"assert_freed", "tensor_probe", "gc_disabled", "prerequisite"} & defined
    imported = {(n.module, a.name) for n in tree.body if isinstance(n, ast.ImportFrom)
                for a in n.names}
    assert {("conformance.liveness", "assert_freed"), ("conformance.liveness", "watch")} <= imported


def test_script_follows_the_run_it_was_made_from():
    """Adapter spec, device, framework version, suite revision, timeout and leak check: what
    the run's header recorded is what the script asks the runtime for."""
    header = {"adapter": "mine", "adapter_spec": "adapters.torch_adapter:TorchAdapter",
              "device": "cuda", "framework_version": "2.13.0", "conformance_timeout": 60,
              "leak_check": [2, 4], "suite_revision": None, "suite_digest": None}
    info = repro.RunInfo.of(results.RunHeader.from_json(header), "my-column")
    script = repro.generate(CATALOGUE.rules[OTHER], info)
    assert "adapter_spec='adapters.torch_adapter:TorchAdapter'" in script
    assert "device='cuda'" in script and "framework_version='2.13.0'" in script
    assert "timeout=60" in script and "leak_check=[2, 4]" in script
    assert "report column 'my-column'" in script


def test_parse_result_reads_the_last_result_line():
    assert repro.parse_result("x\nRESULT: PASS\n") == ("PASS", "")
    assert repro.parse_result("RESULT: DIVERGES: id(a.grad) took 2\n") == \
        ("DIVERGES", "id(a.grad) took 2")
    assert repro.parse_result("nothing") is None


def test_the_page_says_per_run_what_its_tests_judged(tmp_path):
    """issue 33: per column, how many tests judged their subject, each UNSUPPORTED test's
    recorded feature, and the side observations skipped ("not checked: F")."""
    d = tmp_path / "results"
    d.mkdir()
    write_run(d / "myfw.jsonl", "myfw", "1.0", [
        (RULE, "test_a", "PASS", "PASS", ""), (RULE, "test_b", "XFAIL", "DIVERGES", "m"),
        (OTHER, "test_c", "UNSUPPORTED", "UNSUPPORTED", "no nodes"),
        (OTHER, "test_d", "CRASH", "CRASH", "died"), (OTHER, "test_e", "PASS", "PASS", "")])
    lines = [json.loads(x) for x in (d / "myfw.jsonl").read_text().splitlines()]
    lines[3]["missing_feature"] = "graph_nodes"
    lines[5]["not_checked"] = ["graph_nodes: the base's grad_fn changes"]
    (d / "myfw.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    _, page = build(d, tmp_path / "out")
    text = page.read_text(encoding="utf-8")
    row = text[text.index('<tr data-label="myfw"><td>myfw 1.0'):]
    row = row[:row.index("</tr>")]
    assert '<td class="judged-count">3 of 5</td>' in row  # PASS, DIVERGES (expected), PASS
    assert "<code>graph_nodes</code> (1)</td>" in row
    assert "1 test: <code>graph_nodes</code> (1)" in row
