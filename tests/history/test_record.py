"""conformance/history/record.py: snippets run in a child interpreter, one line each, a hang or a
crash recorded and skipped, an interrupted run resumed, only edited snippets re-run."""
import json
import re
import sys

import pytest

from conformance import evidence as ev
from conformance import history
from conformance.history.record import record

torch = pytest.importorskip("torch")
VERSION = torch.__version__.split("+")[0]


def _entries(**snippets):
    return {f"suite.{name}": ev.Evidence(rule=f"suite.{name}", snippet=code, output="", notes="",
                                         file=None) for name, code in snippets.items()}


def test_outputs_hangs_and_crashes_are_recorded(tmp_path):
    entries = _entries(a="print('one')", b="import time; time.sleep(3600)",
                       c="import os; os._exit(7)", d="print(2 + 2)")
    path = record("fw", "torch", VERSION, sys.executable, tmp_path, timeout=3, log=lambda _: None,
                  entries=entries)
    data = history.read(path)
    out = {rule: o["output"] for rule, o in data["observations"].items()}
    assert out == {"suite.a": "one", "suite.b": "timed out: no output for 3 s",
                   "suite.c": "process died (exit code 7)", "suite.d": "4"}
    assert data["framework_version"] == torch.__version__
    assert not path.with_name(f"{VERSION}.partial.jsonl").exists()


def test_only_edited_snippets_run_again(tmp_path):
    entries = _entries(a="print('one')", b="print('two')")
    record("fw", "torch", VERSION, sys.executable, tmp_path, log=lambda _: None, entries=entries)
    lines = []
    entries = _entries(a="print('one')", b="print('three')")
    path = record("fw", "torch", VERSION, sys.executable, tmp_path, log=lines.append, entries=entries)
    assert lines == [f"fw {VERSION}: 1 snippet(s) to run, 1 kept"]
    assert history.read(path)["observations"]["suite.b"]["output"] == "three"


def test_an_interrupted_run_resumes_from_its_partial_file(tmp_path):
    entries = _entries(a="print('one')", b="print('two')")
    partial = tmp_path / "fw" / f"{VERSION}.partial.jsonl"
    partial.parent.mkdir()
    digest = history.digest(ev.PRELUDE, "print('one')")
    partial.write_text(json.dumps({"version": VERSION, "python": "3.x"}) + "\n"
                       + json.dumps({"rule": "suite.a", "digest": digest, "output": "from before"})
                       + "\n{\"torn")
    path = record("fw", "torch", VERSION, sys.executable, tmp_path, log=lambda _: None, entries=entries)
    out = {r: o["output"] for r, o in history.read(path)["observations"].items()}
    assert out == {"suite.a": "from before", "suite.b": "two"}


def test_another_installed_version_is_refused_in_one_line(tmp_path):
    with pytest.raises(history.HistoryError, match=re.escape(f"has torch {torch.__version__}, not 0.0.1")):
        record("fw", "torch", "0.0.1", sys.executable, tmp_path, entries=_entries(a="print(1)"))


def test_an_interpreter_without_the_framework_is_named(tmp_path):
    with pytest.raises(history.HistoryError, match="cannot import no_such_framework_xyz"):
        record("fw", "no_such_framework_xyz", "1.0", sys.executable, tmp_path,
               entries=_entries(a="print(1)"))


def test_an_interpreter_that_hangs_importing_the_framework_is_one_line(tmp_path, monkeypatch):
    """The version check's limit ends a hang (scaled by the load, conformance/time_scale.py):
    one line naming the interpreter and what to run, never a traceback."""
    from conformance.history import record as record_module

    hangs = tmp_path / "python-that-hangs"
    hangs.write_text("#!/bin/sh\nexec sleep 3600\n")
    hangs.chmod(0o755)
    monkeypatch.setattr(record_module, "IMPORT_TIMEOUT", 1.0)
    monkeypatch.setattr(record_module.time_scale, "scaled", lambda seconds: seconds)
    with pytest.raises(history.HistoryError) as stop:
        record_module.installed_version(str(hangs), "torch")
    message = str(stop.value)
    assert "\n" not in message and "did not finish in 1 s" in message and str(hangs) in message
