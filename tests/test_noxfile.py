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


# -- nox -s report: columns of different installs at once ----------------------------------

def test_columns_sharing_a_session_form_one_group_and_the_largest_group_comes_first(noxfile):
    columns = {"reference": ("conformance-reference", []),
               "torch": ("conformance-torch(2.13.0)", ["torch==2.13.0"]),
               "paddle": ("conformance-paddle", ["paddlepaddle"]),
               "torch-compile": ("conformance-torch(2.13.0)", ["torch==2.13.0"]),
               "torch-compile-inductor": ("conformance-torch(2.13.0)", ["torch==2.13.0"])}
    assert noxfile._column_groups(columns) == [
        ["torch", "torch-compile", "torch-compile-inductor"], ["reference"], ["paddle"]]


@pytest.mark.parametrize("raw, jobs", [("1", 1), ("3", 3), (" 2 ", 2)])
def test_report_jobs_come_from_the_variable(noxfile, monkeypatch, raw, jobs):
    monkeypatch.setenv(noxfile.REPORT_JOBS_VARIABLE, raw)
    assert noxfile._report_jobs() == jobs


def test_report_jobs_default_to_one_per_core_and_at_most_four(noxfile, monkeypatch):
    monkeypatch.delenv(noxfile.REPORT_JOBS_VARIABLE, raising=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert noxfile._report_jobs() == max(1, min(4, cores))


@pytest.mark.parametrize("raw", ["0", "two", "-1", "1.5", "65"])
def test_a_bad_report_jobs_value_is_one_line_saying_what_to_give(noxfile, monkeypatch, raw):
    monkeypatch.setenv(noxfile.REPORT_JOBS_VARIABLE, raw)
    with pytest.raises(SystemExit) as stop:
        noxfile._report_jobs()
    message = str(stop.value)
    assert "\n" not in message and raw in message and "whole number" in message


def test_report_runs_groups_at_once_and_a_groups_columns_one_after_another(noxfile, monkeypatch,
                                                                              tmp_path):
    """Two installs overlap in time (two jobs); the two columns of one install never do (they
    would install into one environment together)."""
    import threading

    from tests.hang import hang_limit

    columns = {"a1": ("session-a", []), "a2": ("session-a", []), "b": ("session-b", [])}
    monkeypatch.setattr(noxfile, "REPORT_COLUMNS", columns)
    monkeypatch.setenv(noxfile.REPORT_JOBS_VARIABLE, "2")
    monkeypatch.chdir(tmp_path)
    events, lock = [], threading.Lock()
    both_running = threading.Barrier(2, timeout=hang_limit(0.1))

    def fake_column(session, label, name, spec, force, results_dir):
        with lock:
            events.append(("start", label))
        if label in ("a1", "b"):
            both_running.wait()   # fails (BrokenBarrierError) unless both groups run at once
        with lock:
            events.append(("end", label))

    monkeypatch.setattr(noxfile, "_report_column", fake_column)

    class Session(_Session):
        posargs = []

        def install(self, *args):
            self.installed = args

        def run(self, *args, **kwargs):
            self.ran = args

    session = Session()
    noxfile.report(session)   # nox.session wraps it in a callable Func
    assert sorted(label for what, label in events if what == "end") == ["a1", "a2", "b"]
    assert events.index(("end", "a1")) < events.index(("start", "a2")), \
        "a group's columns ran at once"
    assert session.ran[-1] == "--builtin-columns", "the page was not written after the columns"
    assert any("2 at a time" in line for line in session.logged)


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="flock: POSIX only")
def test_the_checkout_is_installed_by_one_column_at_a_time(noxfile, monkeypatch, tmp_path):
    """Columns run at once; their editable installs of this checkout write its metadata into
    the checkout, so the second waits for the first."""
    import threading
    import time

    from tests.hang import hang_limit

    monkeypatch.chdir(tmp_path)
    events = []
    first_inside, release = threading.Event(), threading.Event()

    def first():
        with noxfile._checkout_install_lock():
            events.append("first in")
            first_inside.set()
            release.wait(hang_limit(1))
            events.append("first out")

    def second():
        first_inside.wait(hang_limit(1))
        with noxfile._checkout_install_lock():
            events.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    first_inside.wait(hang_limit(1))
    time.sleep(0.5)   # room for the second to get in, were the lock not held
    release.set()
    for thread in threads:
        thread.join(hang_limit(1))
    assert events == ["first in", "first out", "second in"]
