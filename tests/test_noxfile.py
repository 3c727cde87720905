"""noxfile.py's tests-under-load: the project's tests run beside CPU hogs on every core, and
the hogs end whatever happens to the tests."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def noxfile():
    pytest.importorskip("nox")
    spec = importlib.util.spec_from_file_location("project_noxfile", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    # no Python of the conformance runs to find: the noxfile would start each one (pyenv's
    # shims: seconds apiece) to define its sessions, which this test does not use
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", "/nonexistent")
        patch.setenv("PYENV_ROOT", "/nonexistent")
        spec.loader.exec_module(module)
    return module


class _Session:
    def __init__(self):
        self.logged = []

    def log(self, text):
        self.logged.append(text)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the hogs' state")
@pytest.mark.parametrize("tests_fail", [False, True])
def test_the_hogs_keep_every_core_busy_while_the_tests_run_and_end_after(noxfile, monkeypatch,
                                                                         tests_fail):
    seen = {}

    def project_tests(session):
        pids = [int(p) for p in session.logged[0].rsplit("pids ", 1)[1].split()]
        seen["pids"] = pids
        seen["alive"] = all(_alive(p) for p in pids)
        if tests_fail:
            raise RuntimeError("a test failed")

    monkeypatch.setattr(noxfile, "_project_tests", project_tests)
    session = _Session()
    if tests_fail:
        with pytest.raises(RuntimeError):
            noxfile.tests_under_load(session)
    else:
        noxfile.tests_under_load(session)
    assert len(seen["pids"]) == noxfile.HOGS_PER_CORE * (os.cpu_count() or 1) and seen["alive"]
    assert not [p for p in seen["pids"] if _alive(p)], "a CPU hog outlived the session"
    assert session.logged[-1].endswith("CPU hogs ended")
