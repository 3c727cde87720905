"""Witnesses on the page (issue 27): under each ranked root cause its witness script and what
it printed in the run, "fixed?" where it no longer reproduces its cause (in the cause, the
run's heading, results.json and the report's console lines); older runs render as before."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from conformance.report import build as report_build, rootcause
from conformance.results import RunHeader, TestRecord, WitnessRecord, combined
from tests.report.test_unit import CATALOGUE, write_run

A, B, C = "identity.grad-stable-id", "identity.grad-same-object", "hooks.chain-in-registration-order"
ENTRIES = combined.catalogue_entries(CATALOGUE)
OLD_RUN = Path(__file__).resolve().parent / "data" / "torch-at-b301759.jsonl"
WRAPPER = {"outcome": "DIVERGES", "reason": "OneFlow wraps .grad anew on every read",
           "root_cause": "grad-wrapper-per-read"}
HOOKS = {"outcome": "DIVERGES", "reason": "hooks run twice", "root_cause": "hooks-twice"}


def witness_line(cause, status, output, script="import sys\nsys.exit(1)", kind="breaks"):
    return {"type": "witness", "cause": cause, "kind": kind, "status": status, "output": output,
            "script": script, "rules": [A], "duration": 2.0}


def run_dir(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    path = d / "oneflow-0.9.0.jsonl"
    write_run(path, "oneflow", "0.9.0", [
        (A, "test_a", "XFAIL", "DIVERGES", "AssertionError: ids differ", WRAPPER),
        (B, "test_b", "XFAIL", "DIVERGES", "AssertionError: ids differ", WRAPPER),
        (C, "test_c", "XFAIL", "DIVERGES", "AssertionError: ran twice", HOOKS)])
    lines = path.read_text().splitlines()
    witnesses = [witness_line("grad-wrapper-per-read", "does not reproduce",
                              "ids equal: 140 140", "print(id(x.grad), id(x.grad))"),
                 witness_line("hooks-twice", "reproduces", "the hook ran 2 times"),
                 witness_line("not-failing-here", "reproduces", "still seen <script>"),
                 witness_line("no-script", "no witness", "", script=None)]
    path.write_text("\n".join([*lines[:-1], *map(json.dumps, witnesses), lines[-1]]) + "\n")
    shutil.copy(OLD_RUN, d / "torch-at-b301759.jsonl")
    return d


def test_each_cause_carries_its_witness_and_clusters_carry_none():
    run = combined.Column(
        label="x", framework="x", status="complete", detail="", header=RunHeader(), end=None,
        tests=[TestRecord(nodeid="s.py::test_a", rule=A, actual="DIVERGES", outcome="DIVERGES",
                          message="m", expectation=WRAPPER),
               TestRecord(nodeid="s.py::test_c", rule=C, actual="DIVERGES", outcome="DIVERGES",
                          message="AssertionError: something else entirely happened here")],
        witnesses=[WitnessRecord(cause="grad-wrapper-per-read", status="does not reproduce",
                                 output="ids equal", script="print(1)")])
    causes = {c.id: c for c in rootcause.root_causes(run, ENTRIES)}
    assert causes["grad-wrapper-per-read"].witness.to_json() == {
        "status": "does not reproduce", "label": "does not reproduce (fixed?)",
        "output": "ids equal", "script": "print(1)", "fixed": True}
    assert [c.witness for k, c in causes.items() if k != "grad-wrapper-per-read"] == [None]


def test_the_page_shows_each_ranked_causes_witness_and_marks_fixed(tmp_path, capsys):
    d = run_dir(tmp_path)
    out = tmp_path / "out"
    assert report_build.main(["--results-dir", str(d), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"fixed\? 1 witness\(es\) do not reproduce their cause: grad-wrapper-per-read",
                     printed)
    page = (out / "index.html").read_text()
    section = page[page.index('<section class="causes" data-label="oneflow-0.9.0"'):]
    section = section[:section.index("</section>")]
    fixed = section[section.index('<li data-cause="grad-wrapper-per-read"'):]
    fixed = fixed[:fixed.index("</li>")]
    assert 'data-witness="does not reproduce"' in fixed and ">fixed?</span>" in fixed
    assert "print(id(x.grad), id(x.grad))" in fixed and "ids equal: 140 140" in fixed
    assert "does not reproduce (fixed?)" in fixed
    held = section[section.index('<li data-cause="hooks-twice"'):]
    held = held[:held.index("</li>")]
    assert 'data-witness="reproduces"' in held and "fixed?" not in held
    assert "the hook ran 2 times" in held and "sys.exit(1)" in held
    assert '<span class="badge fixedq">1 fixed?</span>' in section
    # a witness of a cause no test fails for is listed, escaped; "no witness" is not listed there
    unranked = section[section.index('<ul class="causes unranked">'):]
    assert 'data-cause="not-failing-here"' in unranked and "still seen &lt;script&gt;" in unranked
    assert 'data-cause="no-script"' not in unranked
    data = json.loads((out / "results.json").read_text())
    run = {r["label"]: r for r in data["runs"]}
    causes = {c["id"]: c for c in run["oneflow-0.9.0"]["root_causes"]}
    assert causes["grad-wrapper-per-read"]["witness"]["fixed"] is True
    assert causes["hooks-twice"]["witness"]["fixed"] is False
    assert len(run["oneflow-0.9.0"]["witnesses"]) == 4
    # the older run (no witness lines) renders as before: causes without any witness
    old = run["torch-at-b301759"]
    assert "witnesses" not in old and all(c["witness"] is None for c in old["root_causes"])
    assert combined.load(out / "results.json").runs[-1].witnesses == []


def test_an_older_run_alone_renders_without_witness_markup(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    shutil.copy(OLD_RUN, d / "torch-at-b301759.jsonl")
    data, page = report_build.build(d, tmp_path / "out", {"torch-at-b301759": ("torch", None)})
    text = page.read_text()
    assert data.runs[0].root_causes and 'class="witness' not in text and "fixed?" not in text
