"""The --results file of one run: one writer (a lock naming its pid), an end line that says
when the run was interrupted, and a reader that names file:line and field."""
from __future__ import annotations

import json
import os

import pytest

from conformance.results import (ResultsFile, ResultsInUse, ResultsSchemaError, RunEnd,
                                 RunHeader, Tally, TestRecord, combined, end_line, read_run,
                                 run_file, why_not_complete)


def written(path, *tests: TestRecord, interrupted: bool = False, not_run=()) -> ResultsFile:
    out = ResultsFile(path)
    out.header(RunHeader(adapter="reference", framework_version="0.1", device="cpu",
                         python="3.11"), path.parent, 3)
    tally = Tally()
    for t in tests:
        out.write(t)
        tally.add(t)
    tally.not_run = list(not_run)
    out.close(2 if interrupted else 0, tally, interrupted=interrupted)
    return out


def test_a_second_writer_is_refused_naming_the_first_and_nothing_is_cut(tmp_path):
    path = tmp_path / "r.jsonl"
    first = ResultsFile(path)
    first.header(RunHeader(adapter="reference"), tmp_path, 1)
    with pytest.raises(ResultsInUse) as info:
        ResultsFile(path)
    assert str(info.value) == (f"{path}: another run (pid {os.getpid()}) is writing it; wait "
                               f"for it to end or choose another file")
    assert json.loads(path.read_text())["type"] == "run"  # the first run's line is still there
    first.close(0, Tally())
    second = ResultsFile(path)  # once the first run ended, the file is free
    second.release()


def test_an_interrupted_run_is_never_complete(tmp_path):
    path = tmp_path / "r.jsonl"
    test = TestRecord(nodeid="t.py::test_a", rule="r.a", suite="r", outcome="PASS",
                      actual="PASS", duration=0.1)
    written(path, test, interrupted=True, not_run=["t.py::test_b"])
    end = json.loads(path.read_text().splitlines()[-1])
    assert end["interrupted"] is True and end["not_run"] == ["t.py::test_b"]
    run = read_run(path)
    assert not run.complete and end_line(path) is None  # nox -s report never reuses it
    assert "interrupted: 1 collected tests did not run" in run.interruption
    column = combined.column_of(path)
    assert column.status == "interrupted" and "interrupted" in column.detail


def test_a_complete_run_keeps_its_end_line_format(tmp_path):
    path = tmp_path / "r.jsonl"
    written(path, TestRecord(nodeid="t.py::a", outcome="PASS", actual="PASS"))
    end = json.loads(path.read_text().splitlines()[-1])
    assert set(end) == {"type", "exitstatus", "finished", "counts", "not_run"}
    assert end_line(path) == RunEnd.from_json(end, "x") and read_run(path).complete


def test_a_line_with_a_field_of_the_wrong_type_is_named_by_line(tmp_path):
    path = tmp_path / "r.jsonl"
    written(path, TestRecord(nodeid="t.py::a", outcome="PASS"),
            TestRecord(nodeid="t.py::b", outcome="PASS"))
    lines = path.read_text().splitlines()
    bad = json.loads(lines[2])
    bad["outcome"] = ["PASS"]
    lines[2] = json.dumps(bad)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ResultsSchemaError, match=rf"^{path}:3: field 'outcome' is list"):
        read_run(path)
    assert end_line(path) is None


def test_why_a_run_is_not_complete_is_said_in_one_line_for_each_way_it_can_fail(tmp_path):
    path = tmp_path / "r.jsonl"
    assert why_not_complete(path) == f"{path} does not exist"
    written(path, TestRecord(nodeid="t.py::test_a", outcome="PASS", actual="PASS"))
    assert why_not_complete(path) == ""
    path.write_text("\n".join(path.read_text().splitlines()[:-1]) + "\n")  # killed: no end
    assert why_not_complete(path) == ("the run ended without its end line (it was killed) "
                                      "after 1 test lines (the last: t.py::test_a)")
    written(path, TestRecord(nodeid="t.py::test_a", outcome="PASS", actual="PASS"),
            interrupted=True, not_run=["t.py::test_b"])
    assert "1 collected tests did not run" in why_not_complete(path)
    path.write_text("{}\n")
    assert why_not_complete(path).startswith(f"{path} cannot be read: {path}:1: no run header")


def test_scan_skips_what_does_not_read_for_a_run_still_being_written(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"type": "run", "schema": 1}) + "\n"
                    + json.dumps({"type": "test", "nodeid": 3}) + "\n"
                    + json.dumps({"type": "test", "nodeid": "t.py::a", "outcome": "PASS"})
                    + "\n" + '{"type": "te')
    kinds = [type(r).__name__ for r in run_file.scan(path)]
    assert kinds == ["RunHeader", "TestRecord"]


@pytest.mark.parametrize("how", ["file link", "directory link", "dangling link"])
def test_a_second_writer_through_a_symbolic_link_is_refused(tmp_path, how):
    """The lock was keyed on the path as typed: two runs reaching one file through a link
    both wrote it (both exited 0, the file interleaved)."""
    real = tmp_path / "real"
    real.mkdir()
    path = real / "r.jsonl"
    if how == "file link":
        path.write_text("")
        other = tmp_path / "link.jsonl"
        other.symlink_to(path)
    elif how == "directory link":
        (tmp_path / "alias").symlink_to(real)
        other = tmp_path / "alias" / "r.jsonl"
    else:  # the link made first, pointing where the first run's file does not exist yet
        other = tmp_path / "link.jsonl"
        other.symlink_to(path)
    first = ResultsFile(path)
    first.header(RunHeader(adapter="reference"), tmp_path, 1)
    with pytest.raises(ResultsInUse, match=r"another run \(pid \d+\) is writing it"):
        ResultsFile(other)
    assert json.loads(path.read_text())["type"] == "run"  # not cut by the second
    first.close(0, Tally())
    second = ResultsFile(other)  # the other way round: the link's run holds it now
    try:
        with pytest.raises(ResultsInUse):
            ResultsFile(path)
    finally:
        second.release()
