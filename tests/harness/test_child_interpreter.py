"""conformance/child_interpreter.py: one recipe for a child interpreter's PYTHONPATH, and no
other place in the project builds one."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conformance import child_interpreter
from conformance.child_interpreter import ROOT, environment, pythonpath
from tests.hang import hang_limit

PROJECT = Path(__file__).resolve().parents[2]


def test_order_checkout_then_callers_then_inherited_without_repeats(tmp_path):
    inherited = os.pathsep.join([str(tmp_path / "b"), str(ROOT), "", str(tmp_path / "b")])
    assert pythonpath(tmp_path / "a", inherited=inherited).split(os.pathsep) == \
        [str(ROOT), str(tmp_path / "a"), str(tmp_path / "b")]


def test_a_relative_entry_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert pythonpath("adapters_here", inherited="").split(os.pathsep) == \
        [str(ROOT), str(tmp_path / "adapters_here")]


def test_only_this_interpreter_gets_this_interpreters_sys_path(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "path", ["", str(tmp_path / "site")])
    assert str(tmp_path / "site") not in pythonpath(inherited="").split(os.pathsep)
    same = pythonpath(inherited="x", same_interpreter=True).split(os.pathsep)
    assert same[0] == os.getcwd() and same[1] == str(tmp_path / "site") and same[-1] == os.path.abspath("x")


def test_environment_copies_the_base_and_keeps_its_other_variables():
    base = {"PYTHONPATH": "/elsewhere", "KEEP": "1"}
    env = environment(base=base)
    assert env["KEEP"] == "1" and env["PYTHONPATH"].split(os.pathsep) == [str(ROOT), "/elsewhere"]
    assert base == {"PYTHONPATH": "/elsewhere", "KEEP": "1"}


def test_a_child_started_elsewhere_imports_this_checkout(tmp_path):
    out = subprocess.run([sys.executable, "-c", "import conformance; print(conformance.__file__)"],
                         cwd=tmp_path, env=environment(base={"PATH": os.environ.get("PATH", "")}),
                         capture_output=True, text=True, timeout=hang_limit(4))
    assert out.stdout.strip() == str(ROOT / "conformance" / "__init__.py"), out.stderr


#: the one place that sets PYTHONPATH otherwise, and why: mutmut runs its own mutated copy of
#: the reference, which must not import the checkout's
CLEARS = {"conformance/mutants/generic.py"}


def test_no_other_module_builds_a_pythonpath():
    found = []
    files = [PROJECT / "noxfile.py", *sorted((PROJECT / "conformance").rglob("*.py")),
             *sorted((PROJECT / "adapters").rglob("*.py"))]
    for path in files:
        rel = path.relative_to(PROJECT).as_posix()
        if rel == "conformance/child_interpreter.py" or rel in CLEARS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"""["']PYTHONPATH["']\s*[]:=,)]|PYTHONPATH\s*=""", line) \
                    and "pythonpath()" not in line:
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == [], "build it with conformance.child_interpreter:\n" + "\n".join(found)
    assert child_interpreter.__doc__.count("PYTHONPATH") >= 1
