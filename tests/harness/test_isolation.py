"""Loading the adapter runs code the harness does not control: each way it fails is one line.

conformance/isolation.py loads the adapter's module and its framework in a child interpreter
first; whatever goes wrong (an exception, sys.exit, a hang, a segfault) ends the run with
exit 4, one line, and the results header and end line written. Under pytest-xdist the
controller never imports the framework (issue 28).
"""
from __future__ import annotations

import pytest

BROKEN = '''
import os, signal, sys, time, types
from fakefw import FakeAdapter


class ExitingAdapter(FakeAdapter):
    name = "exiting"

    def _import(self):
        sys.exit("the framework found no licence file")


class BadVersionAdapter(FakeAdapter):
    name = "badversion"

    def framework_version(self):
        raise KeyError("__version__")


def _die_with_a_killed_child(*args):
    """A framework's SIGCHLD handler: a child process killed by a signal ends this one."""
    try:
        child = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # peek, not reap
    except ChildProcessError:
        return
    if child is not None and child.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
        os._exit(70)


class SigchldAdapter(FakeAdapter):
    """Its framework installs a SIGCHLD handler at import (seen on a real framework): in a
    controller that imported it, the first worker crash would end the run."""
    name = "sigchld"

    def _import(self):
        signal.signal(signal.SIGCHLD, _die_with_a_killed_child)
        return super()._import()
'''

RAISING_MODULE = '''
raise RuntimeError("adapter module broken on purpose")
'''

HANGING_MODULE = '''
import time
time.sleep(3600)
'''

SEGFAULTING_MODULE = '''
import ctypes
ctypes.string_at(0)
'''

EXITING_MODULE = '''
import os
os._exit(3)
'''


@pytest.fixture
def project(conformance_project):
    conformance_project.rules("demo", "a")
    conformance_project.suite("demo", '@rule("demo.a")\ndef test_a(): pass\n')
    conformance_project.pytester.makepyfile(brokenadapters=BROKEN)
    return conformance_project


def one_line_exit_4(project, adapter: str, *args: str) -> str:
    """Run with ``adapter``; exit 4, one line on stderr, and a header and end line recorded."""
    result = project.run("suites", "--results=r.jsonl", *args, adapter=adapter)
    err = [line for line in result.errlines if line.strip()]
    text = "\n".join(result.outlines + result.errlines)
    assert result.ret == 4, text
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    assert len(err) == 1, text
    header, end = project.results("r.jsonl")
    assert header["type"] == "run" and header["adapter_spec"] == adapter
    assert end["type"] == "end" and end["exitstatus"] == 4 and end["error"] in err[0]
    return err[0]


@pytest.mark.parametrize("module, words", [
    (RAISING_MODULE, ["importing module 'badmod' raised RuntimeError: adapter module broken on "
                      "purpose", "fix that module"]),
    (SEGFAULTING_MODULE, ["crashed the interpreter (SIGSEGV"]),
    (EXITING_MODULE, ["ended the interpreter (exit status 3"]),
])
def test_an_adapter_module_that_fails_at_import(project, module, words):
    project.file("badmod.py", module)
    line = one_line_exit_4(project, "badmod:Adapter")
    for word in words:
        assert word in line, line


def test_an_adapter_module_that_hangs_at_import_meets_the_time_limit(project):
    project.file("badmod.py", HANGING_MODULE)
    # its own limit (--startup-timeout), unscaled: HANGING_MODULE never finishes
    line = one_line_exit_4(project, "badmod:Adapter", "--startup-timeout=2", "--time-limit-scale=1")
    assert "did not finish within 2s" in line and "--startup-timeout" in line, line


def test_a_relative_adapter_spec(project):
    line = one_line_exit_4(project, ".rel:X")
    assert "must look like package.module:ClassName (an absolute module name)" in line, line


def test_an_entry_point_naming_a_missing_module(project):
    info = project.pytester.mkdir("ghostfw-1.0.dist-info")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ghostfw\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[autograd_conformance.adapters]\nghost = ghostfw_is_not_installed:GhostAdapter\n")
    line = one_line_exit_4(project, "ghost")
    assert "adapter 'ghost': its entry point 'ghostfw_is_not_installed:GhostAdapter' cannot be " \
           "loaded (ModuleNotFoundError" in line, line


def test_sys_exit_in_the_framework_import(project):
    line = one_line_exit_4(project, "brokenadapters:ExitingAdapter")
    assert "importing its framework called sys.exit('the framework found no licence file')" in line


def test_framework_version_raising(project):
    line = one_line_exit_4(project, "brokenadapters:BadVersionAdapter")
    assert "framework_version() raised KeyError: '__version__'" in line, line


def test_an_unknown_adapter_is_recorded_too(project):
    line = one_line_exit_4(project, "nosuch")
    assert "unknown adapter 'nosuch'" in line


def test_a_framework_with_its_own_sigchld_handler_cannot_end_a_distributed_run(project):
    """The controller of an -n run never imports the framework: a worker crash stays a cell."""
    project.rules("demo", "crashes", "b")
    project.suite("demo", '''
        @rule("demo.a")
        def test_a(): pass
        @rule("demo.crashes")
        def test_crash(fw): fw.crash()
        @rule("demo.b")
        def test_b(fw): assert fw.__version__ == "1.0"
    ''')
    result = project.run("-n", "1", "suites", "--results=r.jsonl", subprocess=True,
                         adapter="brokenadapters:SigchldAdapter")
    records = project.results("r.jsonl")
    outcomes = {r["nodeid"].split("::")[-1]: r["outcome"] for r in records if r["type"] == "test"}
    assert outcomes == {"test_a": "PASS", "test_crash": "CRASH", "test_b": "PASS"}, \
        result.stdout.str() + result.stderr.str()
    assert records[0]["framework_version"] == "1.0"
    assert records[-1]["type"] == "end" and records[-1]["not_run"] == []
    result.stdout.fnmatch_lines(["*adapter sigchld 1.0 on cpu*"])
