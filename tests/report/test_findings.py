"""The differential search's findings (explore-<adapter>.jsonl, conformance.results) in the
report: HypoFuzz searches whose lines interleave, each signature once with its shortest
script, in results.json and on the page; and the long mutation mode's survivors."""
from __future__ import annotations

import json
import re

import pytest

from conformance import results as R
from conformance.report.build import build
from tests.report.test_sections import make_dir


def divergence(signature: str, script: str, **extra) -> dict:
    return {"type": "divergence", "schema": 1, "adapter": "torch", "framework_version": "2.13.0",
            "category": signature.split("|")[0], "signature": signature, "summary": "hook order",
            "script": script, "script_lines": script.count("\n"), "expectation": None, **extra}


def test_searches_are_read_apart_even_when_fuzz_workers_interleave(tmp_path):
    path = R.explore_path(tmp_path, "torch")
    long = "import torch\n" + "x = 1\n" * 9 + "assert ev == []\n"
    short = "import torch\nassert ev == []\n"
    R.append_findings(path, {"type": "run", "schema": 1, "adapter": "torch", "examples": 10},
                      divergence("hooks|Backward|order:hook", long),
                      {"type": "end", "examples": 10, "divergences": 1, "duration": 1.0})
    R.append_findings(path, {"type": "run", "schema": 1, "engine": "hypofuzz", "fuzz_run": "a",
                             "workers": 2})
    R.append_findings(path, {"type": "run", "schema": 1, "engine": "hypofuzz", "fuzz_run": "b",
                             "workers": 1})
    R.append_findings(path, divergence("hooks|Backward|order:hook", short, fuzz_run="a", worker="h:1"),
                      divergence("engine|Grad|agrad:values", long, fuzz_run="b", worker="h:9"),
                      {"type": "fuzz-worker", "fuzz_run": "a", "worker": "h:1", "examples": 40},
                      {"type": "fuzz-worker", "fuzz_run": "a", "worker": "h:2", "examples": 35},
                      {"type": "end", "fuzz_run": "a", "examples": 75, "divergences": 1})
    with open(path, "a") as out:
        out.write('{"type": "divergence", "cut off')  # a worker killed mid-write
    plain, fuzz_a, fuzz_b = R.read_findings(path)
    assert [len(s["divergences"]) for s in (plain, fuzz_a, fuzz_b)] == [1, 1, 1]
    assert [w["examples"] for w in fuzz_a["workers"]] == [40, 35] and fuzz_a["end"]["examples"] == 75
    assert fuzz_b["end"] is None  # still running, or died

    (tmp_path / "runs").mkdir()
    results_dir = make_dir(tmp_path)
    (results_dir / path.name).write_text(path.read_text())
    data, page = build(results_dir, tmp_path / "out")
    (torch,) = data.findings
    assert torch["adapter"] == "torch" and torch["searches"] == 3 and torch["programs"] == 85
    by_sig = {d["signature"]: d for d in torch["divergences"]}
    assert by_sig["hooks|Backward|order:hook"]["script"] == short  # the shortest of two finds
    assert by_sig["hooks|Backward|order:hook"]["times_found"] == 2
    assert by_sig["hooks|Backward|order:hook"]["engines"] == ["hypofuzz", "random"]
    loaded = json.loads((tmp_path / "out" / "results.json").read_text())
    assert loaded["findings"][0]["signatures"] == 2 and loaded["findings"][0]["unexpected"] == 2
    text = page.read_text()
    assert 'id="findings"' in text and "engine|Grad|agrad:values" in text
    assert "hypofuzz (2 workers)" in text


def test_a_newer_findings_schema_is_refused(tmp_path):
    path = R.explore_path(tmp_path, "paddle")
    R.append_findings(path, {"type": "run", "schema": R.EXPLORE_SCHEMA + 1})
    try:
        R.read_findings(path)
    except R.ResultsSchemaError as exc:
        assert "newer" in str(exc)
    else:
        raise AssertionError("a newer schema was read")


@pytest.mark.parametrize("line, words", [
    ({"type": "end", "examples": [1]}, ":2: field 'examples' is list [1], expected an integer"),
    ({"type": "end", "examples": True}, ":2: field 'examples' is bool True, expected an integer"),
    (divergence("a|b", "x", script_lines="3"), ":2: field 'script_lines' is str '3'"),
    (divergence("a|b", "x", category=["hooks"]), ":2: field 'category' is list"),
    ({"type": "fuzz-worker", "fuzz_run": {"a": 1}}, ":2: field 'fuzz_run' is dict"),
    # the page names the expectation's rule: one without it was a template error
    (divergence("a|b", "x", expectation={"x": 1}), ":2: field 'expectation' has no 'rule'"),
    (divergence("a|b", "x", expectation={"rule": 3}), ":2: field 'expectation.rule' is int 3"),
])
def test_a_findings_line_with_a_field_of_the_wrong_type_is_refused_with_its_line(
        tmp_path, capsys, line, words):
    """The report summed, sorted and hashed these fields: such a line was a traceback, and a
    file it could not read vanished from the page (issue 28). Now: file:line, exit 4, and the
    previous report stays whole."""
    from conformance.report.build import main

    results = make_dir(tmp_path)
    path = R.explore_path(results, "myfw")
    R.append_findings(path, {"type": "run", "schema": 1, "engine": "random"}, line)
    with pytest.raises(R.ResultsSchemaError, match=re.escape(words)):
        R.read_findings(path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("previous")
    assert main(["--results-dir", str(results), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:2: " in err and "Traceback" not in err, err
    assert [p.name for p in out.iterdir()] == ["index.html"]
    assert (out / "index.html").read_text() == "previous"


def test_a_findings_file_with_a_newer_schema_stops_the_report_instead_of_vanishing(tmp_path, capsys):
    from conformance.report.build import main

    results = make_dir(tmp_path)
    R.append_findings(R.explore_path(results, "paddle"), {"type": "run", "schema": 99})
    assert main(["--results-dir", str(results), "--out", str(tmp_path / "out")]) == 4
    assert "explore-paddle.jsonl: findings schema 99, newer" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, words", [
    ("not json", "mutants.json: not JSON"),
    ("[1]", "mutants.json: a JSON list, not an object"),
    ('{"curated": 5}', "field 'curated' is int 5, expected an object"),
    ('{"curated": {"survivors": [5]}}', "field 'curated.survivors[0]' is int 5, expected an object"),
    ('{"curated": {"killed": 1, "total": 2, "score": "x"}}', "field 'curated.score' is str"),
    # NaN went out into results.json as bare NaN; deep nesting was a RecursionError
    ('{"curated": {"killed": 1, "total": 2, "score": NaN}}', "field 'curated.score' is str 'NaN'"),
    ("[" * 100_000 + "]" * 100_000, "mutants.json: not JSON (ValueError)"),
    ('{"curated": null, "generic": {"survivors": 5}}', "field 'generic.survivors' is int"),
    ('{"curated": {"survivors": [{"id": 7}]}}', "field 'curated.survivors[0].id' is int 7, "
                                                "expected a string"),
    ('{"curated": null, "generic": {"survivors_by_function": []}}',
     "field 'generic.survivors_by_function' is list [], expected an object"),
])
def test_a_damaged_mutants_json_is_one_line_and_replaces_nothing(tmp_path, capsys, content, words):
    """reports/mutants.json with a field of another type was a traceback (AttributeError,
    TypeError) from the report; one that was not JSON was silently left out."""
    from conformance.report.build import main

    results = make_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mutants.json").write_text(content)
    (out / "index.html").write_text("previous")
    assert main(["--results-dir", str(results), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "mutants.json"]
    assert (out / "index.html").read_text() == "previous"


def test_a_mutants_json_of_the_long_mode_alone_is_shown(tmp_path):
    """``nox -s mutants -- --long-only`` before any curated run writes ``"curated": null``."""
    d = make_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "mutants.json").write_text(json.dumps({
        "type": "mutants", "schema": 1, "curated": None, "baseline": None,
        "generic": {"summary": "300/400 killed (75.0%)", "survivors_by_function": {"f": 2}}}))
    data, page = build(d, out)
    text = page.read_text()
    assert "No run of the curated planted bugs yet" in text and "None/None" not in text
    assert "300/400 killed (75.0%)" in text


def test_the_long_mutation_mode_shows_its_survivors_by_function(tmp_path):
    d = make_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    survivors = [{"mutant": "reference.tensor.xǁTensorǁt__mutmut_3", "function": "reference.tensor.Tensor.t",
                  "change": ["-if x < 0:", "+if x < 1:"], "kind": "behaviour"},
                 {"mutant": "reference.tensor.xǁTensorǁt__mutmut_4", "function": "reference.tensor.Tensor.t",
                  "change": ["-raise E('a')", "+raise E('XXaXX')"], "kind": "text"}]
    (out / "mutants.json").write_text(json.dumps({
        "type": "mutants", "date": "2026-11-23T17:00:00+00:00",
        "curated": {"killed": 90, "total": 91, "score": 0.989, "survivors": []},
        "generic": {"tool": "mutmut", "seed": 5, "summary": "300/400 killed (75.0%)",
                    "survivors_by_function": {"reference.tensor.Tensor.t": 2}, "survivors": survivors,
                    "not_reached_by_function": {"reference.ops.linalg.matmul": 89}}}))
    data, page = build(d, out)
    generic = json.loads((out / "results.json").read_text())["mutants"]["generic"]
    assert "survivors" not in generic and [s["kind"] for s in generic["survivors_shown"]] == ["behaviour"]
    text = page.read_text()
    assert "300/400 killed (75.0%)" in text and "reference.tensor.Tensor.t</code>: 2" in text
    assert "+if x &lt; 1:" in text and "reference.ops.linalg.matmul</code> (89)" in text


@pytest.mark.parametrize("name", ["mutants.json", "explore"])
def test_a_fifo_in_place_of_mutants_json_or_a_findings_file_is_refused(tmp_path, capsys, name):
    """Reading either blocked the report forever."""
    import os

    from conformance.report.build import main

    results = make_dir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "mutants.json" if name == "mutants.json"
              else R.explore_path(results, "paddle"))
    assert main(["--results-dir", str(results), "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file (a FIFO, device or socket)" in err, err
    assert sorted(p.name for p in out.iterdir()) == (["mutants.json"] if name == "mutants.json"
                                                     else [])
