"""Shared fixtures of the project's own tests."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import textwrap

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

from tests.hang import hang_limit

# The project's own tests write only under temporary directories: Hypothesis's example
# database and caches too (not .hypothesis/ in the checkout).
_HYPOTHESIS_HOME = tempfile.mkdtemp(prefix="autograd-conformance-hypothesis-")
set_hypothesis_home_dir(_HYPOTHESIS_HOME)
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = _HYPOTHESIS_HOME  # and in the processes they start
atexit.register(shutil.rmtree, _HYPOTHESIS_HOME, ignore_errors=True)

pytest_plugins = ["pytester", "tests.xdist_groups"]

#: Plugins that no pytest run these tests start uses (the suites and the harness need neither):
#: Hypothesis's imports Hypothesis at the terminal summary and anyio's imports Trio, half of a
#: child run's start-up CPU (1.2 -> 0.6 CPU-s each, hundreds of children). Given to the runs
#: the tests start through $PYTEST_ADDOPTS; the installed quick start
#: (tests/harness/test_installed.py) runs with every plugin, as a user's run does.
LEAN_CHILD_OPTIONS = "-p no:hypothesispytest -p no:anyio"

FAKE_ADAPTER = '''
import ctypes, types
from adapters.base import Adapter, Unsupported


class FakeAdapter(Adapter):
    """A framework-free adapter: tests of the harness must not depend on any engine."""
    name = "fake"
    install_hint = "pip install fakefw==1.0"
    devices = ("cpu",)
    unsupported = {"forward_ad": "no dual numbers"}

    def _import(self):
        return types.SimpleNamespace(__version__="1.0", crash=lambda: ctypes.string_at(0))


class MissingAdapter(FakeAdapter):
    name = "missing"

    def _import(self):
        import fakefw_that_is_not_installed
'''


class ConformanceProject:
    """A throw-away conformance project: its own catalogue, suites and adapter module."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        pytester.makeini("[pytest]\nconformance_catalogue = catalogue\n"
                         "conformance_suites = suites\n")
        pytester.mkdir("catalogue")
        pytester.mkdir("suites")
        pytester.makepyfile(fakefw=FAKE_ADAPTER)
        pytester.syspathinsert()
        # the project first, so a subprocess runs this checkout's harness, not an installed one
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), repo]))
        monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_CHILD_OPTIONS)  # pytester had removed it

    def rules(self, suite: str, *names: str, level: str = "MUST") -> None:
        """Append rules ``<suite>.<name>`` to the suite's catalogue file."""
        path = self.pytester.path / "catalogue" / f"{suite}.toml"
        text = path.read_text() if path.exists() else ""
        for name in names:
            text += (f'[[rule]]\nid = "{suite}.{name}"\nlevel = "{level}"\n'
                     f'statement = "s"\nrationale = "r"\nsource = "test"\n\n')
        path.write_text(text)

    def catalogue_text(self, suite: str, text: str) -> None:
        (self.pytester.path / "catalogue" / f"{suite}.toml").write_text(textwrap.dedent(text))

    def suite(self, suite: str, source: str) -> None:
        header = "from conformance.api import rule, Unsupported, Diverges, diverges_if_raises\n"
        (self.pytester.path / "suites" / f"test_{suite}.py").write_text(
            header + textwrap.dedent(source))

    def file(self, name: str, text: str):
        path = self.pytester.path / name
        path.write_text(textwrap.dedent(text))
        return path

    def run(self, *args: str, subprocess: bool = False, adapter: str = "fakefw:FakeAdapter"):
        argv = ["-p", "no:cacheprovider", f"--adapter={adapter}", *args]
        if subprocess:
            return self.pytester.runpytest_subprocess(*argv, timeout=hang_limit(30))
        return self.pytester.runpytest(*argv)

    def results(self, name: str = "results.jsonl") -> list[dict]:
        lines = (self.pytester.path / name).read_text().splitlines()
        return [json.loads(line) for line in lines]


@pytest.fixture
def conformance_project(pytester, monkeypatch) -> ConformanceProject:
    return ConformanceProject(pytester, monkeypatch)


@pytest.fixture
def run_tool_without():
    """``run(tool, missing)``: ``python -m tool`` (no arguments) in a child interpreter where
    importing ``missing`` fails as if it were not installed (``sys.modules[name] = None``), as in
    an installed wheel without that optional extra; returns the finished process."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def run(tool: str, missing: str):
        code = (f"import runpy, sys; sys.modules[{missing!r}] = None; sys.argv = ['x']; "
                f"runpy.run_module({tool!r}, run_name='__main__')")
        return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                              text=True, timeout=hang_limit(30))

    return run


@pytest.fixture(autouse=True)
def _older_objects_frozen():
    """What is alive before a test is frozen out of the collector's walk, as the harness does
    for suite tests (conformance/gc_freeze.py): an xdist worker that imported torch, Hypothesis
    and a thousand test modules tracks about a million objects, and every full collection (a
    test's ``gc.collect()``, the leak check's, an automatic one) walked them all. A test's own
    objects are collected as before; code that searches the heap thaws it first."""
    from conformance import gc_freeze

    gc_freeze.before_test()
    yield


@pytest.fixture(scope="session", autouse=True)
def _lean_child_runs():
    """The pytest runs the tests start skip the plugins they never use (LEAN_CHILD_OPTIONS).
    Set once the session runs, in the process that runs tests: the xdist controller's workers
    parse $PYTEST_ADDOPTS too, and keep every plugin."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_ADDOPTS", " ".join(
            filter(None, [os.environ.get("PYTEST_ADDOPTS"), LEAN_CHILD_OPTIONS])))
        yield
