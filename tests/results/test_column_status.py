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


TESTS = [f"t.py::test_{n}" for n in "abcd"]


def _session(path, *stops, calls=None):
    """A fake nox session over TESTS: each call runs the tests its results file has not
    recorded (all of them unless called to resume) and stops after the number of new
    tests ``stops`` gives for that call (killed: no end line); None: runs to the end."""
    from conformance.results import ResultsFile, RunHeader, Tally, TestRecord
    from conformance.results.run_file import resumable

    plan = iter(stops)

    def run(resume):
        earlier = resumable(path) if resume else None
        if earlier is None:
            path.unlink(missing_ok=True)
        out = ResultsFile(path, [earlier.header, *earlier.tests] if earlier else None)
        if earlier is None:
            out.header(RunHeader(adapter="oneflow"), path.parent, 1)
        done = {t.nodeid for t in earlier.tests} if earlier else set()
        ran, stop = [], next(plan)
        for nodeid in TESTS:
            if nodeid in done:
                continue
            if stop is not None and len(ran) == stop:
                out.release()  # killed: no end line
                break
            ran.append(nodeid)
            out.write(TestRecord(nodeid=nodeid, outcome="PASS", actual="PASS"))
        else:
            out.close(0, Tally())
        if calls is not None:
            calls.append((resume, ran))
        return "nox > Session ran"
    return run


def test_a_column_killed_mid_run_resumes_where_it_stopped_not_from_scratch(tmp_path):
    from conformance.results import read_run

    results, warned, calls = tmp_path / "oneflow-0.9.0.jsonl", [], []
    done = run_column(_session(results, 2, None, calls=calls), results, lambda out: False,
                      warned.append)
    assert calls == [(False, TESTS[:2]), (True, TESTS[2:])]  # the rest only, not all four
    assert done.complete and len(done.incomplete) == 1 and not done.install_failed
    run = read_run(results)
    assert run.complete and [t.nodeid for t in run.tests] == TESTS  # one file, each test once
    kept = tmp_path / "incomplete" / "oneflow-0.9.0.attempt-1.jsonl"
    assert kept.is_file() and end_line(kept) is None
    assert len(warned) == 1 and "ended without its end line" in warned[0]
    assert "going on from its last recorded test" in warned[0]


def test_resuming_goes_on_while_each_attempt_records_more(tmp_path):
    results, warned, calls = tmp_path / "oneflow-0.9.0.jsonl", [], []
    done = run_column(_session(results, 1, 1, 1, None, calls=calls), results,
                      lambda out: False, warned.append)
    assert [len(ran) for _, ran in calls] == [1, 1, 1, 1] and done.complete
    assert end_line(results) is not None and len(warned) == 3


def test_a_column_that_stops_making_progress_is_given_up_with_every_attempt_said(tmp_path):
    results, warned, calls = tmp_path / "oneflow-0.9.0.jsonl", [], []
    done = run_column(_session(results, 2, 0, calls=calls), results, lambda out: False,
                      warned.append)
    assert calls == [(False, TESTS[:2]), (True, [])]
    assert results.is_file() and end_line(results) is None and not done.complete
    assert [a.split(":")[0] for a in done.incomplete] == ["attempt 1", "attempt 2"]
    assert len(warned) == 2 and "once more" not in warned[1]


def test_an_incomplete_file_of_an_earlier_report_is_resumed_at_once(tmp_path):
    results, calls = tmp_path / "oneflow-0.9.0.jsonl", []
    _session(results, 3)(False)
    done = run_column(_session(results, None, calls=calls), results, lambda out: False,
                      lambda line: None, resume_first=True)
    assert calls == [(True, TESTS[3:])] and done.complete and not done.incomplete


def test_a_complete_column_or_a_failed_install_runs_once(tmp_path):
    results = tmp_path / "paddle.jsonl"
    calls = []
    done = run_column(lambda resume: calls.append(1) or "ERROR: pip install failed", results,
                      lambda out: "ERROR: " in out, calls.append)
    assert calls == [1] and done.install_failed and not done.incomplete
    done = run_column(_session(results, None), results, lambda out: False, calls.append)
    assert calls == [1] and not done.incomplete and end_line(results) is not None
    assert done.complete


def test_a_run_that_left_no_file_is_tried_twice_when_it_was_no_install_failure(tmp_path):
    results, calls = tmp_path / "paddle.jsonl", []
    done = run_column(lambda resume: calls.append(resume) or "Segmentation fault", results,
                      lambda out: False, lambda line: None)
    assert calls == [False, False] and not done.install_failed
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
