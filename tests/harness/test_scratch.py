"""Scratch directories (conformance/scratch.py): a killed run's directory is swept by a later
run once its process is gone and nothing touched it for a day; nothing else is."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conformance import scratch
from conformance.timeout import Watchdog

PREFIX = "conformance-timeouts-"
DAY_AND_A_BIT = scratch.STALE_SECONDS + 60


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _dir(root, name, age=0.0):
    path = root / name
    path.mkdir()
    (path / "marker.timeout").write_text("x")
    if age:
        stamp = os.stat(path).st_mtime - age
        os.utime(path, (stamp, stamp))
    return path


def test_only_an_old_directory_of_a_process_that_is_gone_is_swept(tmp_path):
    dead = _dead_pid()
    gone = _dir(tmp_path, f"{PREFIX}{dead}-abc", DAY_AND_A_BIT)
    before_pids = _dir(tmp_path, f"{PREFIX}1bl6ic6a", DAY_AND_A_BIT)    # a name from before
    live = _dir(tmp_path, f"{PREFIX}{os.getpid()}-abc", DAY_AND_A_BIT)   # its process runs
    fresh = _dir(tmp_path, f"{PREFIX}{dead}-def")                        # touched just now
    other_kind = _dir(tmp_path, f"conformance-supervised-{dead}-abc", DAY_AND_A_BIT)
    a_file = tmp_path / f"{PREFIX}{dead}-file"
    a_file.write_text("not a directory")
    target = _dir(tmp_path, "elsewhere", DAY_AND_A_BIT)
    link = tmp_path / f"{PREFIX}{dead}-link"
    link.symlink_to(target)
    os.utime(link, (0, 0), follow_symlinks=False)

    assert scratch.sweep(PREFIX, root=tmp_path) == sorted([gone, before_pids])
    assert not gone.exists() and not before_pids.exists()
    assert live.is_dir() and fresh.is_dir() and other_kind.is_dir() and a_file.is_file()
    assert link.is_symlink() and (target / "marker.timeout").is_file()   # nothing followed


def test_the_watchdog_names_its_directory_with_its_pid_and_removes_it_at_the_end(tmp_path,
                                                                                monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)   # re-read TMPDIR
    stale = _dir(tmp_path, f"{PREFIX}{_dead_pid()}-old", DAY_AND_A_BIT)

    class Config:
        workerinput = None

    watchdog = Watchdog(Config(), limit=60)
    assert watchdog.directory.parent == tmp_path
    assert watchdog.directory.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert not stale.exists(), "the stale directory of a killed run was not swept"
    watchdog.pytest_unconfigure(Config())
    assert not watchdog.directory.exists()


VANISHING = '''
    import glob, os, shutil

    @rule("demo.a")
    def test_a():
        found = glob.glob(os.path.join(os.environ["TMPDIR"], "conformance-*"))
        for directory in found:
            shutil.rmtree(directory)
        assert found, "the run made no scratch directory under TMPDIR"
    @rule("demo.b")
    def test_b(): pass
'''


@pytest.mark.parametrize("mode", [["-n", "1"], []], ids=["with-xdist", "supervised"])
def test_a_scratch_directory_removed_while_the_run_goes_on_is_made_again(conformance_project,
                                                                        monkeypatch, tmp_path,
                                                                        mode):
    """A temporary-directory cleaner that removes a live run's directory (its timeout markers,
    its supervised-child files) costs nothing: the next test makes it again (it ended the whole
    run with an INTERNALERROR)."""
    scratch_root = tmp_path / "scratch"
    scratch_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch_root))
    conformance_project.rules("demo", "a", "b")
    conformance_project.suite("demo", VANISHING)
    result = conformance_project.run(*mode, "suites", "--results", "results.jsonl",
                                     "-p", "no:randomly", subprocess=True)
    records = conformance_project.results()
    outcomes = {r["nodeid"].split("::")[-1]: r["outcome"] for r in records if r["type"] == "test"}
    assert outcomes == {"test_a": "PASS", "test_b": "PASS"}, result.stdout.str() + result.stderr.str()
    assert records[-1]["type"] == "end" and records[-1]["not_run"] == []
    assert result.ret == pytest.ExitCode.OK
