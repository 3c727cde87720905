"""``--conformance-timeout``: a test that runs too long is a TIMEOUT, and the run goes on.

Why two stages: a hang can be in Python code (a lock that is never released, an endless
loop) or outside it (C/C++ code of the framework, a deadlock that holds the GIL, signals
blocked). Python code can be interrupted and the same process goes on; code outside
Python cannot, so its process has to end.

1. At the deadline, ``SIGALRM`` (POSIX, tests on the main thread: in-process runs and
   pytest-xdist workers alike) raises :class:`TestTimeout` in the test. It derives from
   ``BaseException`` so that the test's own ``except Exception`` cannot swallow it; the
   harness's hook ``pytest_conformance_classify`` (implemented here) makes it TIMEOUT.
2. ``GRACE`` seconds later, if the test has still not returned, faulthandler's watchdog
   (a C thread: it needs no GIL) writes every thread's traceback to a marker file and
   ends the process. Under pytest-xdist the controller then sees a crashed worker, finds
   the marker file of the test it was running (:func:`crash_outcome`) and reports TIMEOUT
   with those tracebacks instead of CRASH; xdist starts a new worker and the run goes on.
   Without xdist the run ends there (the tracebacks go to the terminal): use ``-n 1``.

pytest's own ``faulthandler_timeout`` ini option uses the same faulthandler watchdog; leave
it unset when using this one (only one can be armed at a time).
"""
from __future__ import annotations

import faulthandler
import hashlib
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path

import pytest

#: Seconds between the interrupt (stage 1) and ending the process (stage 2).
GRACE_MIN = 5.0
GRACE_FRACTION = 0.2
#: Key of the marker directory in xdist's ``workerinput``.
WORKERINPUT_KEY = "conformance_timeout_dir"
MARKER_HEAD = "conformance timeout"


class TestTimeout(BaseException):
    """Raised in a test that ran past ``--conformance-timeout``."""

    __test__ = False  # not a test class, despite the name


def grace(limit: float) -> float:
    return max(GRACE_MIN, GRACE_FRACTION * limit)


def marker_path(directory: Path, nodeid: str) -> Path:
    return Path(directory) / (hashlib.sha1(nodeid.encode()).hexdigest()[:20] + ".timeout")


class Watchdog:
    """pytest plugin: arms both stages around every test's whole protocol."""

    def __init__(self, config, limit: float, scale: int = 1) -> None:
        self.config = config
        self.limit = limit * scale  # the whole protocol, e.g. every --leak-check run
        self.per_run = limit
        workerinput = getattr(config, "workerinput", None)
        self.owns_directory = workerinput is None or WORKERINPUT_KEY not in workerinput
        if self.owns_directory:
            self.directory = Path(tempfile.mkdtemp(prefix="conformance-timeouts-"))
        else:
            self.directory = Path(workerinput[WORKERINPUT_KEY])
        self.in_worker = workerinput is not None
        # stage 2 without xdist: the real terminal, saved before pytest captures fd 2 per test
        self.stderr_fd = os.dup(2) if not self.in_worker else None

    # -- xdist: the workers write their markers where the controller looks -------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput[WORKERINPUT_KEY] = str(self.directory)

    def crash_outcome(self, nodeid: str) -> str | None:
        """If the worker that crashed on ``nodeid`` was ended by stage 2: the tracebacks."""
        path = marker_path(self.directory, nodeid)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return None
        path.unlink(missing_ok=True)
        head, _, dump = text.partition("\n")
        if not head.startswith(MARKER_HEAD) or "Timeout (" not in dump:
            return None  # armed but not expired: a real crash
        return (f"TIMEOUT: {nodeid} ran past --conformance-timeout {self.per_run:g}s and did "
                f"not return {grace(self.limit):g}s after it was interrupted (stuck outside "
                f"Python); its worker was ended. Tracebacks at that moment:\n{dump.strip()}")

    # -- both stages around one test ------------------------------------------------
    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.limit <= 0:
            return (yield)
        marker = None
        if self.in_worker:
            marker = open(marker_path(self.directory, item.nodeid), "w")
            marker.write(f"{MARKER_HEAD} {self.per_run:g}s {item.nodeid}\n")
            marker.flush()
            faulthandler.dump_traceback_later(self.limit + grace(self.limit), exit=True,
                                              file=marker)
        else:
            faulthandler.dump_traceback_later(self.limit + grace(self.limit), exit=True,
                                              file=self.stderr_fd)
        alarm = _arm_alarm(self.limit, self.per_run)
        try:
            return (yield)
        finally:
            alarm()
            faulthandler.cancel_dump_traceback_later()
            if marker is not None:
                marker.close()
                Path(marker.name).unlink(missing_ok=True)

    def pytest_conformance_classify(self, item, call):
        if call.excinfo is not None and call.excinfo.errisinstance(TestTimeout):
            return "TIMEOUT"
        return None

    def pytest_unconfigure(self, config):
        if self.stderr_fd is not None:
            os.close(self.stderr_fd)
            self.stderr_fd = None
        if self.owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)


def _arm_alarm(seconds: float, per_run: float):
    """Stage 1: SIGALRM raises TestTimeout after ``seconds``; returns the disarm function.

    Restores the previous handler and timer (an outer pytest session of the harness's own
    tests runs inner sessions in the same process).
    """
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return lambda: None

    def expired(signum, frame):
        raise TestTimeout(f"test ran past --conformance-timeout {per_run:g}s and was interrupted")

    previous_handler = signal.signal(signal.SIGALRM, expired)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, seconds)

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_timer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *previous_timer)

    return disarm
