"""A column survives its framework: a test that kills or corrupts its process is one CRASH.

Why: a framework that segfaults, calls ``os._exit`` or corrupts the interpreter (OneFlow
0.9.0 drops a reference of a ctx ``__dict__`` on every read, until pytest's own traceback
formatting raises ``SystemError``: an INTERNALERROR) must cost the test it was running, not
the tests after it. Two pieces:

- :class:`Guard` runs in the process that runs the tests (an xdist worker, or the supervised
  child below). It leaves a ``<hash>.running`` file beside the timeout markers
  (``conformance.timeout``) while a test runs; an exception that escapes pytest's test
  protocol (an INTERNALERROR) is written into it and the process ends at once (exit status
  3): a corrupted interpreter is never trusted with another test. The process that survives
  (xdist's controller, or the supervisor) finds the file and records the test as CRASH.
- Without pytest-xdist, :func:`supervise` forks before pytest configures anything (no
  framework is imported yet): the child runs the session; when it dies with a test in
  progress, the test is CRASH and a fresh child resumes with the tests not yet run
  (:mod:`conformance.plugin` keeps the results file and its tallies whole across children).
  The child always ends with ``os._exit``: a framework's non-daemon thread left running
  cannot keep a finished run alive (:func:`end_child`).

``--in-process`` (or ``pytest.main(..., plugins=[...])`` from another program, as pytester
does, or ``--pdb``/``--trace``) keeps everything in pytest's own process, without that
protection.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance import scratch
from conformance.timeout import marker_path

#: Written into a ``.running`` file before an INTERNALERROR's text (by the guard), or
#: before how the process ended (by the supervisor).
INTERNAL_HEAD = "conformance internal error:"
ENDED_HEAD = "conformance process ended:"
#: Seconds a finished child waits for foreign non-daemon threads before it ends anyway.
THREAD_GRACE = 5.0
#: Key of the tests a resumed run already has, in xdist's ``workerinput`` (not run again).
WORKERINPUT_KEY = "conformance_resumed"


def running_path(directory: Path, nodeid: str) -> Path:
    return marker_path(directory, nodeid).with_suffix(".running")


def crashed(directory: Path) -> dict[str, str]:
    """nodeid -> what its ``.running`` file says (the INTERNALERROR, or "") of every test
    that was in progress when its process ended."""
    found = {}
    for path in sorted(Path(directory).glob("*.running")):
        try:
            nodeid, _, rest = path.read_text(errors="replace").partition("\n")
        except OSError:
            continue
        if nodeid:
            found[nodeid] = rest.strip()
    return found


def take(directory: Path, nodeid: str) -> str | None:
    """The ``.running`` file of ``nodeid`` (removed): None when there is none; else its
    INTERNALERROR line, or "" when the process died without one."""
    path = running_path(directory, nodeid)
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    path.unlink(missing_ok=True)
    return text.partition("\n")[2].strip()


def _describe(exc: BaseException) -> str:
    try:
        text = f"{type(exc).__name__}: {exc}"
        return " ".join(text.split())[:2000]
    except BaseException:  # noqa: BLE001 - the interpreter may be corrupted
        try:
            return type(exc).__name__
        except BaseException:  # noqa: BLE001
            return "an exception that could not be formatted"


class Guard:
    """pytest plugin of the process that runs the tests (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        path = running_path(self.directory, item.nodeid)
        with scratch.open_entry(path, encoding="utf-8") as running:
            running.write(item.nodeid + "\n")
        try:
            result = yield
        except (KeyboardInterrupt, SystemExit, pytest.exit.Exception):
            path.unlink(missing_ok=True)
            raise
        except BaseException as exc:  # noqa: BLE001 - an INTERNALERROR: never go on
            self._die(path, item.nodeid, exc)
        path.unlink(missing_ok=True)
        return result

    @staticmethod
    def _die(path: Path, nodeid: str, exc: BaseException) -> None:
        line = (f"INTERNALERROR while pytest ran or reported the test ({_describe(exc)}); "
                f"the interpreter is not trusted with another test")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, f"{INTERNAL_HEAD} {line}\n".encode("utf-8", "replace"))
            finally:
                os.close(fd)
        except BaseException:  # noqa: BLE001
            pass
        try:
            os.write(2, f"\n{nodeid}: {line}\n".encode("utf-8", "replace"))
        except BaseException:  # noqa: BLE001
            pass
        os._exit(int(pytest.ExitCode.INTERNAL_ERROR))


def crash_message(text: str) -> str:
    """The CRASH message of a ``.running`` file's text (see :func:`take`): the guard's
    INTERNALERROR, else how the supervisor saw the process end ("" when neither is there)."""
    lines = text.splitlines()
    for head, prefix in ((INTERNAL_HEAD, "CRASH: "), (ENDED_HEAD, "CRASH: the process running "
                                                                 "the test ")):
        found = [line[len(head):].strip() for line in lines if line.startswith(head)]
        if found:
            return prefix + found[0]
    return ""


# -- the supervisor (no pytest-xdist) ----------------------------------------------------------
@dataclasses.dataclass
class Child:
    """What a supervised child knows: the directory its markers go to, which child it is
    (1: the first; later ones resume), and the results file to use when none was asked."""

    directory: Path
    number: int

    @property
    def private_results(self) -> Path:
        return self.directory / "results.jsonl"


#: Set in a supervised child (None elsewhere).
CHILD: Child | None = None
_SUPERVISING = False  # the hook is being called again in the child: let pytest run


_SHOWS_SOMETHING_ELSE = ("help", "version", "showfixtures", "show_fixtures_per_test",
                         "markers", "cacheshow", "collectonly", "usepdb", "trace")


def wanted(config, touches_suites: bool) -> bool:
    """Whether this run is supervised (see the module docstring)."""
    if not touches_suites or not hasattr(os, "fork") or hasattr(config, "workerinput"):
        return False
    if config.getoption("in_process") or config.invocation_params.plugins:
        return False
    if config.getoption("dist", "no") != "no" or config.getoption("numprocesses", None):
        return False
    return not any(config.getoption(name, False) for name in _SHOWS_SOMETHING_ELSE)


def _say(line: str) -> None:
    try:
        sys.stderr.flush()
        os.write(2, f"\n{line}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"was killed by {signal.Signals(number).name}"
        except ValueError:
            return f"was killed by signal {number}"
    return f"ended with exit status {os.WEXITSTATUS(status)} in the middle of it"


def supervise(config) -> int | None:
    """Run the session in forked children until one ends with no test in progress; returns
    the exit status (None in a child: pytest goes on with the session there)."""
    global CHILD, _SUPERVISING
    if _SUPERVISING:
        return None
    directory = scratch.make("conformance-supervised-")
    seen: set[str] = set()
    number = 0
    try:
        while True:
            number += 1
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                CHILD, _SUPERVISING = Child(directory, number), True
                _run_child(config)  # never returns
            terminated = []

            def forward(signum, frame, pid=pid):  # `kill <pid>` of the run ends the child too
                terminated.append(signum)
                os.kill(pid, signum)

            previous = (signal.signal(signal.SIGINT, signal.SIG_IGN),  # the child handles Ctrl-C
                        signal.signal(signal.SIGTERM, forward))
            try:
                _, status = os.waitpid(pid, 0)
            finally:
                signal.signal(signal.SIGINT, previous[0])
                signal.signal(signal.SIGTERM, previous[1])
            if terminated:
                return 128 + int(terminated[0])
            left = {n: t for n, t in crashed(directory).items() if n not in seen}
            if not left:
                if os.WIFSIGNALED(status):
                    _say(f"conformance: the run's process {_ended(status)} outside any "
                         f"test; its results file has no end line")
                    return int(pytest.ExitCode.INTERNAL_ERROR)
                return os.WEXITSTATUS(status)
            seen.update(left)
            for nodeid, text in left.items():
                if not text:  # no INTERNALERROR: say how the process ended, for the record
                    with open(running_path(directory, nodeid), "a", encoding="utf-8") as out:
                        out.write(f"{ENDED_HEAD} {_ended(status)}\n")
                why = crash_message(text)[len("CRASH: "):] or f"the process running it {_ended(status)}"
                _say(f"conformance: {nodeid}: {why}; going on with the tests not yet run in a "
                     f"fresh process (its outcome follows: CRASH, or TIMEOUT if the watchdog "
                     f"ended it)")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _run_child(config) -> None:
    try:
        status = config.hook.pytest_cmdline_main(config=config)
    except pytest.UsageError as exc:  # as pytest.main says it: one line each, exit status 4
        for message in exc.args:
            _say(f"ERROR: {message}")
        status = pytest.ExitCode.USAGE_ERROR
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - pytest's own failure: its traceback, then exit 3
        import traceback

        traceback.print_exc()
        status = pytest.ExitCode.INTERNAL_ERROR
    end_child(int(status if status is not None else 0))


def foreign_threads() -> list[threading.Thread]:
    """Non-daemon threads other than the main one that are still running."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def end_child(status: int, grace: float = THREAD_GRACE) -> None:
    """End a finished process now: its results are complete. Non-daemon threads a framework
    left running get ``grace`` seconds, then are named in one line and left behind."""
    deadline = time.monotonic() + grace
    for thread in foreign_threads():
        thread.join(max(0.0, deadline - time.monotonic()))
    left = foreign_threads()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    if left:
        names = ", ".join(f"{t.name!r}" for t in left)
        _say(f"conformance: the run is complete; ending it although the framework left "
             f"{len(left)} non-daemon thread(s) running after {grace:g}s: {names}")
    os._exit(status)
