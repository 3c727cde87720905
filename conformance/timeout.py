"""``--conformance-timeout``: a test that runs too long is a TIMEOUT, and the run goes on.

Why two stages: a hang can be in Python code (a lock that is never released, an endless
loop) or outside it (C/C++ code of the framework, a deadlock that holds the GIL, signals
blocked). Python code can be interrupted and the same process goes on; code outside
Python cannot, so its process has to end.

1. At the deadline, ``SIGALRM`` (POSIX, tests on the main thread: in-process runs and
   pytest-xdist workers alike) raises :class:`TestTimeout` in the test. It derives from
   ``BaseException`` so that the test's own ``except Exception`` cannot swallow it; the
   harness's hook ``pytest_conformance_classify`` (implemented here) makes it TIMEOUT.
   An interrupt that Python drops (it fired inside a finalizer or a gc callback) is raised
   again where the phase returns, and repeated while the test runs (:mod:`conformance.alarm`).
2. ``GRACE`` seconds later, if the test has still not returned, faulthandler's watchdog
   (a C thread: it needs no GIL) writes every thread's traceback to a marker file and
   ends the process. Under pytest-xdist the controller then sees a crashed worker, finds
   the marker file of the test it was running (:func:`crash_outcome`) and reports TIMEOUT
   with those tracebacks instead of CRASH; xdist starts a new worker and the run goes on.
   Without xdist the supervised child (conformance/survival.py) is ended the same way and
   the next child reports it; only under ``--in-process`` does the run end there.

pytest's own ``faulthandler_timeout`` ini option uses the same faulthandler watchdog; leave
it unset when using this one (only one can be armed at a time).
"""
from __future__ import annotations

import faulthandler
import hashlib
import os
import shutil
import re
import sys
from pathlib import Path

import pytest

from conformance import scratch, time_scale
from conformance.alarm import Alarm, arm_alarm  # noqa: F401 - arm_alarm: stage 1 alone, public here
from conformance.outcome_exceptions import TestTimeout  # re-exported: raised by the alarm

#: Seconds between the interrupt (stage 1) and ending the process (stage 2).
GRACE_MIN = 5.0
GRACE_FRACTION = 0.2
#: Key of the marker directory in xdist's ``workerinput``.
WORKERINPUT_KEY = "conformance_timeout_dir"
MARKER_HEAD = "conformance timeout"
PHASE_HEAD = "conformance phase:"
LIMIT_HEAD = "conformance limit:"  # the test's limit in seconds, then how it was reached
PHASE_CALL = "running the test"
PHASE_REPORT = "reporting the test's result (pytest's report and failure formatting)"


def _enable_crash_dump(file) -> None:
    """faulthandler writes a fatal signal's tracebacks to ``file`` (with the C stack where
    this Python's faulthandler has one: 3.14 and later)."""
    try:
        faulthandler.enable(file=file, all_threads=True, c_stack=True)
    except TypeError:
        faulthandler.enable(file=file, all_threads=True)
    except (ValueError, OSError, AttributeError):
        pass  # no usable file (closed stderr): leave faulthandler as it is


_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>\S+)')


def describe_crash(nodeid: str, text: str, fallback: str) -> str:
    """A CRASH message from a marker's text (phase lines, then faulthandler's dump)."""
    phases = [line[len(PHASE_HEAD):].strip() for line in text.splitlines()
              if line.startswith(PHASE_HEAD)]
    phase = phases[-1] if phases else "setup"
    fatal = next((line.strip() for line in text.splitlines() if line.startswith("Fatal Python error")), "")
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), None)
    frames = []
    if start is not None:
        for line in lines[start + 1:]:
            match = _FRAME.match(line)
            if not match:
                break
            frames.append(match)
    python_frame = "not recorded (no traceback in the marker)"
    if frames:
        top = frames[0]
        python_frame = f"{top['func']} ({os.path.basename(top['file'])}:{top['line']})"
        from conformance.results.naming import file_of, function_name

        test_file, test_name = file_of(nodeid), function_name(nodeid)
        in_file = [f for f in frames if f["file"].endswith(test_file)]
        suite = next((f for f in in_file if f["func"] == test_name), in_file[0] if in_file else None)
        if suite is not None and suite is not top:
            python_frame += f", called from {suite['func']} ({os.path.basename(suite['file'])}:{suite['line']})"
    native = None
    for i, line in enumerate(lines):
        if "C stack" in line:
            native = next((later.strip() for later in lines[i + 1:] if later.strip()), None)
            break
    native_frame = native or "none (faulthandler dumps C stacks from Python 3.14 on)"
    if phase == PHASE_REPORT or phase == "done":
        where = ("CRASH while reporting the test's result, not in the test: the test had "
                 "finished and pytest was formatting its outcome")
    elif phase == "teardown":
        where = "CRASH in the test's teardown"
    elif phase == "setup":
        where = "CRASH in the test's setup"
    else:
        where = "CRASH while running the test"
    return (f"{where} ({fatal or 'the worker process died'}); crashing Python frame: "
            f"{python_frame}; native frame: {native_frame}\n{fallback}")


def grace(limit: float, scale: float = 1.0) -> float:
    """Seconds between the interrupt (stage 1) and ending the process (stage 2) for a test
    limited to ``limit`` seconds on a machine ``scale`` times slower than a quiet one
    (conformance/time_scale.py): a fifth of the limit, and at least ``GRACE_MIN`` scaled
    seconds, since unwinding and reporting an interrupted test slow down with the machine."""
    return max(GRACE_MIN * scale, GRACE_FRACTION * limit)


class Limit(Alarm):
    """Both stages for ``limit`` seconds: the alarm (:class:`conformance.alarm.Alarm`), then
    faulthandler's watchdog ``grace(limit)`` later, writing every thread's traceback to ``file``
    and ending the process; calling it disarms both. ``per_run`` is the limit the user gave,
    named in the interrupt's message (``limit`` covers every run of a ``--leak-check``)."""

    def __init__(self, limit: float, per_run: float, file, note: str = "",
                 scale: float = 1.0) -> None:
        self._file, self._grace = file, grace(limit, scale)
        faulthandler.dump_traceback_later(limit + self._grace, exit=True, file=file)
        super().__init__(limit, per_run, note)

    def arrived(self) -> None:
        """The interrupt reached the test: it answers in Python, so stage 2 now only bounds its
        unwinding and pytest's report, and that gets a whole grace from now (on a busy machine,
        formatting a failure can take seconds: ending the process then was a CRASH of a
        test that had already stopped)."""
        super().arrived()
        if self.armed:
            faulthandler.dump_traceback_later(self._grace, exit=True, file=self._file)

    def __call__(self) -> None:
        super().__call__()
        faulthandler.cancel_dump_traceback_later()


def arm(limit: float, per_run: float, file, note: str = "", scale: float = 1.0) -> Limit:
    """Arm both stages (:class:`Limit`; ``scale``: the machine's, for the grace); call the
    result to disarm them."""
    return Limit(limit, per_run, file, note, scale)


def marker_path(directory: Path, nodeid: str) -> Path:
    return Path(directory) / (hashlib.sha1(nodeid.encode()).hexdigest()[:20] + ".timeout")


class Watchdog:
    """pytest plugin: arms both stages around every test's whole protocol."""

    def __init__(self, config, limit: float, scale: int = 1, time_limit_scale: float = 1.0,
                 directory: Path | None = None) -> None:
        """``directory``: where a supervised child (conformance/survival.py) leaves its
        markers for the next one; it then behaves as an xdist worker does."""
        self.config = config
        self.runs = scale  # the whole protocol, e.g. every --leak-check run
        self.time_limit_scale = time_limit_scale  # conformance/time_scale.py
        self.per_run = limit  # the option's seconds, named in messages
        self.limit = limit * scale * time_limit_scale  # the running test's (with its factor)
        self.limit_note = ""  # how the running test's limit was reached, for messages
        workerinput = getattr(config, "workerinput", None)
        self.owns_directory = directory is None and (workerinput is None
                                                     or WORKERINPUT_KEY not in workerinput)
        if directory is not None:
            self.directory = Path(directory)
        elif self.owns_directory:
            self.directory = scratch.make("conformance-timeouts-")
        else:
            self.directory = Path(workerinput[WORKERINPUT_KEY])
        self.in_worker = workerinput is not None or directory is not None
        # stage 2 without xdist: the real terminal, saved before pytest captures fd 2 per test
        self.stderr_fd = os.dup(2) if not self.in_worker else None
        self._marker = None  # the running test's marker file (worker only)
        self._alarm: Limit | None = None  # the running test's limit
        self.crashes: dict[str, str] = {}  # nodeid -> marker text of a worker that crashed on it

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
            self.crashes[nodeid] = dump  # armed but not expired: a real crash (see crash_message)
            return None
        limit, note = self.limit, ""  # the worker's, for this test (its factor, its scale)
        for line in dump.splitlines():
            if line.startswith(LIMIT_HEAD):
                seconds, _, note = line[len(LIMIT_HEAD):].strip().partition(" ")
                limit = float(seconds)
        return (f"TIMEOUT: {nodeid} ran past --conformance-timeout {self.per_run:g}s{note} and did "
                f"not return {grace(limit, self.time_limit_scale):g}s after it was interrupted "
                f"(stuck outside Python); its worker was ended. Tracebacks at that moment:\n{dump.strip()}")

    def crash_message(self, nodeid: str, fallback: str) -> str:
        """What a worker that crashed on ``nodeid`` left in its marker: the phase it was in
        (running the test, or reporting its result), the crashing Python frame and, where
        faulthandler gives one (Python >= 3.14), the native frame."""
        text = self.crashes.pop(nodeid, None)
        if text is None:
            return fallback
        return describe_crash(nodeid, text, fallback)

    def _phase(self, what: str) -> None:
        if self._marker is not None and not self._marker.closed:
            self._marker.write(f"{PHASE_HEAD} {what}\n")
            self._marker.flush()

    def _judged(self):
        """Around one phase: a limit that passed while its interrupt was lost (see
        :mod:`conformance.alarm`) is a TestTimeout where the phase returned."""
        alarm = self._alarm
        if alarm is None:  # the limit is off
            return (yield)
        try:
            result = yield
        except TestTimeout:
            alarm.arrived()
            raise
        except BaseException as exc:
            lost = alarm.lost()
            if lost is not None:
                raise lost from exc
            raise
        lost = alarm.lost()
        if lost is not None:
            raise lost
        return result

    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_setup(self, item):
        return (yield from self._judged())

    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_call(self, item):
        self._phase(PHASE_CALL)
        return (yield from self._judged())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        if call.when == "call":
            self._phase(PHASE_REPORT)
        try:
            return (yield)
        finally:
            if call.when == "call":
                self._phase("done")

    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_teardown(self, item, nextitem):
        self._phase("teardown")
        return (yield from self._judged())

    def pytest_collection_modifyitems(self, items):
        """A malformed ``time_limit_factor`` marker stops the run before any test, one line."""
        for item in items:
            try:
                time_scale.factor_of(item)
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None

    # -- both stages around one test ------------------------------------------------
    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.per_run <= 0:
            return (yield)
        factor = time_scale.factor_of(item)
        self.limit = self.per_run * self.runs * factor * self.time_limit_scale
        self.limit_note = time_scale.describe(self.per_run, factor, self.time_limit_scale)
        marker = None
        if self.in_worker:
            marker = scratch.open_entry(marker_path(self.directory, item.nodeid))
            marker.write(f"{MARKER_HEAD} {self.per_run:g}s {item.nodeid}\n")
            marker.write(f"{LIMIT_HEAD} {self.limit!r} {self.limit_note}\n")
            marker.write(f"{PHASE_HEAD} setup\n")
            marker.flush()
            self._marker = marker
            _enable_crash_dump(marker)  # a segfault writes its tracebacks into the marker too
        self._alarm = arm(self.limit, self.per_run,
                          marker if marker is not None else self.stderr_fd, self.limit_note,
                          self.time_limit_scale)
        try:
            return (yield)
        finally:
            self._alarm()
            self._alarm = None
            if marker is not None:
                self._marker = None
                _enable_crash_dump(sys.__stderr__)
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
