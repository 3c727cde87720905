"""``<label>.status.json``: written whole by nox -s report, read back typed; anything else in
its place is refused naming the file, never read as "not installed" (which CI forgives)."""

import pytest

from conformance.results import ResultsSchemaError, end_line
from conformance.results.column_status import (MISSING, NOT_INSTALLED, ColumnStatus,
                                               clear_status, read_status, run_column,
                                               status_path, write_status)


def test_a_written_status_reads_back_and_clears(tmp_path):
    assert read_status(tmp_path, "paddle") is None
    write_status(tmp_path, "paddle", ColumnStatus(NOT_INSTALLED, "pip failed"))
    status = read_status(tmp_path, "paddle")
    assert status == ColumnStatus(NOT_INSTALLED, "pip failed") and status.not_installed
    write_status(tmp_path, "paddle", ColumnStatus(MISSING, "no results"))
    assert not read_status(tmp_path, "paddle").not_installed
    clear_status(tmp_path, "paddle")
    assert read_status(tmp_path, "paddle") is None and not list(tmp_path.iterdir())


def test_only_the_two_statuses_exist():
    with pytest.raises(ValueError, match="'installed'"):
        ColumnStatus("installed")


@pytest.mark.parametrize("content, words", [
    ("{", "not JSON: Expecting property name"),
    ("[]", "a JSON list, not an object"),
    ('{"status": 1}', "field 'status' is int 1, expected a string"),
    ('{"status": "not installed"}', "status 'not installed' is neither"),  # a typo is no warning
    ('{"status": "missing", "detail": ["x"]}', "field 'detail' is list"),
])
def test_anything_else_is_refused_naming_the_file(tmp_path, content, words):
    status_path(tmp_path, "paddle").write_text(content)
    with pytest.raises(ResultsSchemaError) as info:
        read_status(tmp_path, "paddle")
    assert str(info.value).startswith(f"{status_path(tmp_path, 'paddle')}: not a status file")
    assert words in str(info.value) and str(info.value).endswith("remove it")


def _run_writing(path, *complete: bool):
    """A fake nox session: each call writes a results file, complete or killed (no end)."""
    from conformance.results import ResultsFile, RunHeader, Tally, TestRecord

    calls = iter(complete)

    def run():
        path.unlink(missing_ok=True)
        out = ResultsFile(path)
        out.header(RunHeader(adapter="oneflow"), path.parent, 1)
        out.write(TestRecord(nodeid="t.py::test_a", outcome="PASS", actual="PASS"))
        if next(calls):
            out.close(0, Tally())
        else:
            out.release()  # killed: no end line
        return "nox > Session ran"
    return run


def test_a_column_killed_once_runs_once_more_and_keeps_the_first_file(tmp_path):
    results, warned = tmp_path / "oneflow-0.9.0.jsonl", []
    done = run_column(_run_writing(results, False, True), results, lambda out: False,
                      warned.append)
    assert end_line(results) is not None and done.incomplete and not done.install_failed
    assert done.complete
    kept = tmp_path / "incomplete" / "oneflow-0.9.0.attempt-1.jsonl"
    assert kept.is_file() and end_line(kept) is None
    assert len(warned) == 1 and "ended without its end line" in warned[0]
    assert "running it once more" in warned[0]


def test_a_column_incomplete_twice_says_both_and_keeps_the_second_file(tmp_path):
    results, warned = tmp_path / "oneflow-0.9.0.jsonl", []
    done = run_column(_run_writing(results, False, False), results, lambda out: False,
                      warned.append)
    assert results.is_file() and end_line(results) is None
    assert [a.split(":")[0] for a in done.incomplete] == ["attempt 1", "attempt 2"]
    assert not done.complete
    assert len(warned) == 2


def test_a_complete_column_or_a_failed_install_runs_once(tmp_path):
    results = tmp_path / "paddle.jsonl"
    calls = []
    done = run_column(lambda: calls.append(1) or "ERROR: pip install failed", results,
                      lambda out: "ERROR: " in out, calls.append)
    assert calls == [1] and done.install_failed and not done.incomplete
    done = run_column(_run_writing(results, True), results, lambda out: False, calls.append)
    assert calls == [1] and not done.incomplete and end_line(results) is not None
    assert done.complete


def test_a_run_that_left_no_file_is_tried_twice_when_it_was_no_install_failure(tmp_path):
    results, calls = tmp_path / "paddle.jsonl", []
    done = run_column(lambda: calls.append(1) or "Segmentation fault", results,
                      lambda out: False, lambda line: None)
    assert calls == [1, 1] and not done.install_failed
    assert all("does not exist" in a for a in done.incomplete) and not done.complete


@pytest.mark.parametrize("make", ["directory", "fifo", "dangling link"])
def test_a_status_path_that_is_no_file_is_refused_not_taken_for_none(tmp_path, make):
    """A directory or FIFO at <label>.status.json read as "no status"; a FIFO would block."""
    import os

    path = status_path(tmp_path, "paddle")
    {"directory": path.mkdir, "fifo": lambda: os.mkfifo(path),
     "dangling link": lambda: path.symlink_to(tmp_path / "none")}[make]()
    with pytest.raises(ResultsSchemaError, match="not a status file written by nox -s report"):
        read_status(tmp_path, "paddle")


def test_a_deeply_nested_status_file_is_refused(tmp_path):
    """It was a RecursionError, a traceback from the report and CI's check."""
    status_path(tmp_path, "paddle").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ResultsSchemaError, match="nested too deeply"):
        read_status(tmp_path, "paddle")
