"""conformance.repro.run (and the interpreter conformance.repro.check gives it): an interpreter
that runs no script is one line, never a loop, and a results file's header never names what
runs (issue 28, third round)."""
from __future__ import annotations

import dataclasses
import sys

import pytest

from conformance.repro import check
from conformance.repro.run import RunnerFailed, run_all
from conformance.results import RunHeader


def _script(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_an_interpreter_that_runs_no_script_is_one_line_not_a_loop(tmp_path):
    """One that exits 0 and prints nothing (a shell script named python3) was started again
    and again, forever."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "a.py").write_text("print('RESULT: PASS')\n")
    python = _script(tmp_path / "python3", "#!/bin/sh\nexit 0\n")
    with pytest.raises(RunnerFailed, match=r"ran none of the scripts \(exit status 0: it printed "
                                           r"nothing\); give an interpreter") as caught:
        run_all(scripts, tmp_path / "out.jsonl", python=str(python))
    assert "\n" not in str(caught.value)


def test_a_real_interpreter_still_runs_them(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "a.py").write_text("print('RESULT: PASS')\n")
    assert run_all(scripts, tmp_path / "out.jsonl")["a.py"]["outcome"] == "PASS"


def _header(python_executable):
    fields = {f.name: None for f in dataclasses.fields(RunHeader)}
    return dataclasses.replace(RunHeader(**fields), python_executable=python_executable)


def test_the_recorded_interpreter_is_used_only_where_it_is_named_as_a_python(tmp_path):
    """A results file naming /tmp/x.sh as its interpreter made repro.check run it."""
    shell = _script(tmp_path / "evil.sh", "#!/bin/sh\ntouch PWNED\n")
    assert check._interpreter(_header(str(shell)), None) == sys.executable
    python = _script(tmp_path / "python3.11", "#!/bin/sh\n")
    assert check._interpreter(_header(str(python)), None) == str(python)
    assert check._interpreter(_header(str(tmp_path / "python3")), None) == sys.executable  # gone
    assert check._interpreter(_header(str(shell)), "/given") == "/given"
