"""Stage 1 of every time limit: ``SIGALRM`` interrupts Python code with :class:`TestTimeout`.

Why a module of its own: the run's watchdog (:mod:`conformance.timeout`), the reproduction
scripts (:mod:`conformance.repro.runtime`) and the PyTorch-tests worker
(:mod:`conformance.torchtests.worker`) all interrupt a test this way, and all need the same
care about an interrupt that is lost. This module imports only the standard library.

A lost interrupt: Python drops an exception raised inside a finalizer (``__del__``), a weakref
callback or a ``gc.callbacks`` entry (it prints "Exception ignored in ..." and goes on). When
the alarm happens to fire while one of those runs (Hypothesis's gc callback during a
collection, a framework's ``__del__``), the test is never interrupted: it finished past its
limit and PASSed under load (seen in ``tests/harness/test_timeout.py`` beside CPU hogs).
So the alarm remembers that it fired (:attr:`Alarm.fired`): whoever runs the test asks, when
the test returns, whether its limit passed without the interrupt reaching it
(:meth:`Alarm.lost`); and until the interrupt is known to have arrived (:meth:`Alarm.arrived`),
it fires again every :data:`RETRY_SECONDS`, so a test that goes on running is still interrupted.
"""
from __future__ import annotations

import signal
import threading

from conformance.outcome_exceptions import TestTimeout

#: Seconds between further interrupts while the first one has not been seen to arrive.
RETRY_SECONDS = 1.0

LOST = ("; its interrupt was lost (it fired inside a finalizer or a gc callback, where Python "
        "drops exceptions), so the test is ended where it returned")


class Alarm:
    """One armed limit; calling it disarms it (restoring the handler and timer it found: an
    outer pytest session of the harness's own tests runs inner sessions in the same process)."""

    def __init__(self, seconds: float, per_run: float | None = None, note: str = "") -> None:
        named = seconds if per_run is None else per_run
        self.message = f"test ran past --conformance-timeout {named:g}s{note} and was interrupted"
        self.fired = False  # the limit passed (whether or not the interrupt reached the test)
        self._arrived = False
        # False off the main thread (no signal reaches it) and once disarmed
        self.armed = (hasattr(signal, "setitimer")
                       and threading.current_thread() is threading.main_thread())
        if not self.armed:
            return
        self._previous_handler = signal.signal(signal.SIGALRM, self._expired)
        self._previous_timer = signal.setitimer(signal.ITIMER_REAL, seconds)

    def _expired(self, signum, frame):
        self.fired = True
        if self._arrived:
            return
        signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)  # in case this one is dropped
        raise TestTimeout(self.message)

    def arrived(self) -> None:
        """The interrupt reached the test's runner: no further interrupts."""
        self._arrived = True
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def lost(self) -> TestTimeout | None:
        """When the limit passed but its interrupt never arrived: the TestTimeout to raise
        where the test returned (and no further interrupts); otherwise None."""
        if not self.fired or self._arrived:
            return None
        self.arrived()
        return TestTimeout(self.message + LOST)

    def __call__(self) -> None:
        if not self.armed:
            return
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous_handler)
        if self._previous_timer[0] > 0:
            signal.setitimer(signal.ITIMER_REAL, *self._previous_timer)


def arm_alarm(seconds: float, per_run: float | None = None, note: str = "") -> Alarm:
    """Arm stage 1 for ``seconds``; ``per_run`` (default ``seconds``) is the limit named in the
    interrupt's message, ``note`` how it was reached. Call the result to disarm it."""
    return Alarm(seconds, per_run, note)
