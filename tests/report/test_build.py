"""`python -m conformance.report` on bad input and failures: one line and exit 4, and the previous
report left whole (every output rendered in memory first, then all replaced together)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conformance.report import build as report, html
from tests.report.test_unit import RULE, write_run


def outputs(out):
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


@pytest.fixture
def results_dir(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    write_run(d / "reference.jsonl", "reference", "0.1", [(RULE, "test_a", "PASS", "PASS", "")])
    write_run(d / "torch.jsonl", "torch", "2.13.0", [(RULE, "test_a", "DIVERGES", "DIVERGES", "x")])
    return d


def main(capsys, *args):
    try:
        code = report.main([str(a) for a in args])
    except SystemExit as exc:  # the argument parser's one-line errors (conformance.cli)
        code = exc.code
    return code, capsys.readouterr()


def one_line_error(code, captured):
    assert code == 4, captured
    assert len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
    return captured.err


def test_a_message_with_a_lone_surrogate_renders_escaped(results_dir, tmp_path, capsys):
    """os.fsdecode makes lone surrogates; the page raised UnicodeEncodeError and was left at
    0 bytes beside a replaced results.json."""
    write_run(results_dir / "torch.jsonl", "torch", "2.13.0",
              [(RULE, "test_a", "DIVERGES", "DIVERGES", "bad byte \udc80 in a path")])
    code, captured = main(capsys, "--results-dir", results_dir, "--out", tmp_path / "out")
    assert code == 0, captured.err
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "\\udc80" in page
    ET.parse(tmp_path / "out" / "junit" / "torch.xml")  # still well-formed XML
    assert json.loads((tmp_path / "out" / "results.json").read_text())["runs"]


@pytest.mark.parametrize("failure", [RuntimeError("the page broke"), KeyboardInterrupt()])
def test_a_failure_while_rendering_leaves_the_previous_report_whole(results_dir, tmp_path,
                                                                     monkeypatch, failure):
    out = tmp_path / "out"
    report.build(results_dir, out)
    before = outputs(out)
    write_run(results_dir / "torch.jsonl", "torch", "2.13.0", [(RULE, "test_a", "PASS", "PASS", "")])

    def broken(data):
        raise failure

    monkeypatch.setattr(html, "render", broken)
    with pytest.raises(type(failure)):
        report.build(results_dir, out)
    assert outputs(out) == before  # not a new results.json beside an old page


def test_a_results_line_with_a_field_of_the_wrong_type_is_one_line_and_replaces_nothing(
        results_dir, tmp_path, capsys):
    out = tmp_path / "out"
    report.build(results_dir, out)
    before = outputs(out)
    lines = (results_dir / "torch.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["duration"] = "slow"
    lines[1] = json.dumps(bad)
    (results_dir / "torch.jsonl").write_text("\n".join(lines) + "\n")
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", out))
    assert "torch.jsonl:2: field 'duration' is str" in err
    assert outputs(out) == before


def test_a_missing_results_directory_is_one_line(tmp_path, capsys):
    err = one_line_error(*main(capsys, "--results-dir", tmp_path / "nowhere", "--out",
                               tmp_path / "out"))
    assert "nowhere: no such directory" in err and not (tmp_path / "out").exists()


def test_a_corrupt_results_file_under_its_own_name_is_refused_not_dropped(results_dir, tmp_path,
                                                                          capsys):
    (results_dir / "my-run.jsonl").write_text('{"type": "run", "schema": 1}\nnot json\n{}\n')
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", tmp_path / "out"))
    assert "my-run.jsonl:2: not a JSON line" in err and "--exclude my-run" in err
    code, captured = main(capsys, "--results-dir", results_dir, "--out", tmp_path / "out",
                          "--exclude", "my-run")
    assert code == 0, captured.err


def test_out_naming_a_file_is_one_line(results_dir, tmp_path, capsys):
    (tmp_path / "taken").write_text("x")
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", tmp_path / "taken"))
    assert "taken' is a file; give a directory" in err and (tmp_path / "taken").read_text() == "x"


def test_the_junit_file_of_a_run_no_longer_reported_goes_with_the_new_report(results_dir, tmp_path,
                                                                           capsys):
    """junit/ is part of the report's set: a run removed (or --exclude'd) since the last report
    left its stale JUnit file beside the new ones, for CI to pick up as current."""
    write_run(results_dir / "mine.jsonl", "reference", "0.1", [(RULE, "test_a", "PASS", "PASS", "")])
    out = tmp_path / "out"
    assert main(capsys, "--results-dir", results_dir, "--out", out)[0] == 0
    assert (out / "junit" / "mine.xml").is_file()
    (out / "junit" / "notes.txt").write_text("not ours")
    code, captured = main(capsys, "--results-dir", results_dir, "--out", out, "--exclude", "mine")
    assert code == 0, captured.err
    assert not (out / "junit" / "mine.xml").exists()
    assert (out / "junit" / "torch.xml").is_file() and (out / "junit" / "notes.txt").is_file()


def test_the_stale_junit_files_are_listed_and_the_set_replaced_under_one_lock(results_dir, tmp_path,
                                                                              monkeypatch):
    """Two reports into one --out each listed the stale JUnit files, then renamed their sets
    over each other: one run's results.json was left beside the other's JUnit files. The
    commit holds a lock per --out (outside it) that a second report must wait for."""
    import fcntl

    from conformance.outputs import Outputs

    out = tmp_path / "out"
    lock = report._one_report_at_a_time(out).lock_path
    held = []
    real = Outputs.commit

    def commit(self):
        with open(lock, "a") as other:  # what a second report would do: it must wait
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(True)
            else:
                fcntl.flock(other, fcntl.LOCK_UN)
                held.append(False)
        return real(self)

    monkeypatch.setattr(Outputs, "commit", commit)
    report.build(results_dir, out)
    assert held == [True]
    assert lock.parent != out and not list(out.glob("*.lock"))


@pytest.mark.parametrize("make", ["fifo", "dangling link"])
def test_a_results_file_that_is_no_regular_file_is_refused_not_missing(results_dir, tmp_path,
                                                                       capsys, make):
    """A FIFO (or a dangling link) named torch.jsonl was shown as "no results file"."""
    import os

    path = results_dir / "torch.jsonl"
    path.unlink()
    os.mkfifo(path) if make == "fifo" else path.symlink_to(tmp_path / "gone.jsonl")
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", tmp_path / "out"))
    assert "torch.jsonl: cannot be read" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("message", ["\x01\x08\x1b[31m", "\ufffe\uffff", "]]></failure>"])
def test_a_message_holding_what_xml_cannot_is_still_well_formed_junit(results_dir, tmp_path,
                                                                     capsys, message):
    """U+FFFE and U+FFFF are no XML 1.0 characters either: CI's JUnit reader refused the file."""
    write_run(results_dir / "torch.jsonl", "torch", "2.13.0",
              [(RULE, "test_a", "DIVERGES", "DIVERGES", f"bad {message} end")])
    code, captured = main(capsys, "--results-dir", results_dir, "--out", tmp_path / "out")
    assert code == 0, captured.err
    from xml.dom import minidom

    minidom.parse(str(tmp_path / "out" / "junit" / "torch.xml"))


@pytest.mark.parametrize("name", [".jsonl", "red\x1b[31m.jsonl", "two\nlines.jsonl",
                                  "a b.jsonl", "-x.jsonl", "caf\u00e9.jsonl"])
def test_a_results_file_name_that_makes_no_label_is_one_escaped_line(results_dir, tmp_path,
                                                                       capsys, name):
    """File names became column labels unchecked: an escape sequence or newline printed raw to
    the terminal and used in junit/ file names; a file named .jsonl made a phantom column."""
    write_run(results_dir / name, "torch", "2.14.0", [(RULE, "test_a", "PASS", "PASS", "")])
    out = tmp_path / "out"
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", out))
    assert ascii(name) in err and "makes no column label" in err and "rename the file" in err
    assert "\x1b" not in err and not out.exists()
    (results_dir / name).rename(results_dir / "torch-2.14.0.jsonl")  # as the line says
    code, captured = main(capsys, "--results-dir", results_dir, "--out", out)
    assert code == 0, captured.err
    assert sorted(p.name for p in (out / "junit").iterdir())[-1] == "torch.xml"
    assert "torch-2.14.0" in captured.out


def test_results_json_with_a_label_that_is_no_file_name_is_refused(results_dir, tmp_path):
    from conformance.results import ResultsSchemaError, combined

    data, _ = report.build(results_dir, tmp_path / "out")
    text = (tmp_path / "out" / "results.json").read_text()
    (tmp_path / "bad.json").write_text(text.replace('"label": "torch"', '"label": "../x\\n"'))
    with pytest.raises(ResultsSchemaError, match=r"run label '\.\./x\\n' is no column label"):
        combined.load(tmp_path / "bad.json")


def _edited(path, index, **fields):
    """``path`` with line ``index`` (0: the header, -1: the last) given ``fields``."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[index].update(fields)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize("line, fields, named", [
    (1, {"chain": {"kind": 5}}, "field 'chain.kind' is int 5"),
    (1, {"chain": {"kind": "cycle", "types": "Tensor"}}, "field 'chain.types' is str"),
    (1, {"chain": {"kind": "root", "types": ["a", "b"], "edges": [[0, 1]]}},
     "field 'chain.edges[0]' is list [0, 1], expected a list of 3 entries"),
    (1, {"chain": {"kind": "root", "types": ["a", "b"], "edges": [["0", 1, "x"]]}},
     "field 'chain.edges[0][0]' is str '0', expected an integer"),
    (1, {"chain": {"kind": "root", "types": [{"a": 1}], "note": 3}}, "field 'chain.types[0]'"),
    (1, {"chain": {"kind": "external", "note": ["x"]}}, "field 'chain.note' is list"),
    (1, {"expectation": {"outcome": "DIVERGES", "reason": ["r"]}}, "field 'expectation.reason'"),
    (1, {"expectation": {"outcome": "DIVERGES", "root_cause": 7}},
     "field 'expectation.root_cause' is int 7"),
    (0, {"leak_check": ["2", 4]}, "field 'leak_check[0]' is str '2'"),
    (0, {"leak_check": [2]}, "field 'leak_check' is list [2], expected a list of 2 entries"),
    (0, {"declarations": [{"x": 1}]}, "field 'declarations[0]' is dict"),
    (-1, {"not_run": [3]}, "field 'not_run[0]' is int 3"),
])
def test_every_field_the_report_reads_is_type_checked_to_its_depth(results_dir, tmp_path, capsys,
                                                                     line, fields, named):
    """A LEAK line with "chain": {"kind": 5} was a traceback (report/svg.py); every nested field
    the page, its root causes and its scripts read is checked where the line is read: one line
    naming file:line and the field, exit 4, nothing written."""
    path = results_dir / "torch.jsonl"
    write_run(path, "torch", "2.13.0", [(RULE, "test_a", "LEAK", "LEAK", "leak", None,
                                         {"kind": "cycle", "types": ["Tensor", "cell", "Tensor"],
                                          "edges": [[0, 1, ".x"], [1, 2, "cell_contents"]],
                                          "note": ""})])
    _edited(path, line, **fields)
    out = tmp_path / "out"
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", out))
    number = {0: 1, 1: 2, -1: 3}[line]
    assert f"torch.jsonl:{number}: {named}" in err, err
    assert not out.exists()


def test_a_witness_line_whose_rules_are_not_names_is_one_line(results_dir, tmp_path, capsys):
    path = results_dir / "torch.jsonl"
    lines = path.read_text().splitlines()
    witness = {"type": "witness", "cause": "c", "kind": "breaks", "status": "reproduces",
               "output": "", "script": "", "rules": [RULE, 5], "duration": 0.1}
    path.write_text("\n".join(lines[:-1] + [json.dumps(witness), lines[-1]]) + "\n")
    err = one_line_error(*main(capsys, "--results-dir", results_dir, "--out", tmp_path / "out"))
    assert "torch.jsonl:3: field 'rules[1]' is int 5" in err
