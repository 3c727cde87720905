"""How much slower than a quiet machine this run goes: every time limit of a run scales by it.

Why: a time limit exists to end hangs (TIMEOUT, a witness's ``error``, a start-up that never
finishes), never to judge speed. A wall-clock limit sized on a quiet machine is crossed by
ordinary work on a slow or busy one (a shared CI runner with a load of 25), and the verdict
would then depend on the machine, not on the framework. So each limit is

    limit = the option's seconds × the test's ``time_limit_factor`` × the run's scale

* the option (``--conformance-timeout``, ``--startup-timeout``, ``--witness-timeout``) is
  sized for an ordinary test on a quiet machine, with room to spare;
* ``@pytest.mark.time_limit_factor(N)`` is declared by a test whose work legitimately takes up
  to N ordinary tests' time (a 10,000-op chain, 1,000 nested backwards);
* the scale (``--time-limit-scale``, default ``auto``) is measured when the process starts
  (:func:`measure`): the wall time of a fixed pure-Python loop over the time it takes on a quiet
  machine, never below 1. A machine ten times slower, or one whose cores other jobs keep busy,
  gets limits that much longer; a hang is still ended, only later.

The measurement is short (about 25 ms of CPU on a quiet machine, three rounds, the median) and
is done once per process (:func:`scale` caches it).
"""
from __future__ import annotations

import os
import statistics
import time

#: Largest scale ``auto`` measures (a measurement during a pause of the whole machine must not
#: make every limit endless), and largest one ``--time-limit-scale`` accepts.
MAX_SCALE = 100.0
#: Iterations of the calibration loop, and its wall time on a quiet machine (CPython 3.11 on
#: one core of a 2-core x86-64 machine, 2026: its CPU time, which a busy machine leaves as is).
LOOP_ITERATIONS = 150_000
QUIET_SECONDS = 0.008
ROUNDS = 3

#: A child interpreter a test starts (``in_fresh_interpreter``) takes its run's scale from here.
ENVIRONMENT = "AUTOGRAD_CONFORMANCE_TIME_LIMIT_SCALE"

_scale: float | None = None  # this process's current scale
_measured: float | None = None  # what auto measured (once per process)


def _inherited() -> float | None:
    try:
        return parse(os.environ[ENVIRONMENT])
    except (KeyError, ValueError):
        return None


def _loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def measure(rounds: int = ROUNDS) -> float:
    """This machine's slowdown now: median wall time of the loop / its quiet time, in [1, MAX]."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        _loop(LOOP_ITERATIONS)
        times.append(time.perf_counter() - started)
    return min(MAX_SCALE, max(1.0, statistics.median(times) / QUIET_SECONDS))


def parse(raw) -> float | None:
    """``--time-limit-scale`` as a factor (None for ``auto``); a bad value is a ValueError."""
    text = str(raw).strip().lower()
    if text == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 1 <= value <= MAX_SCALE:
        raise ValueError(f"--time-limit-scale {raw!r}: give auto (measured at start) or a factor "
                         f"from 1 to {MAX_SCALE:g}, e.g. --time-limit-scale=1 for the options' "
                         f"seconds as they are")
    return value


def set_scale(value: float | None) -> float:
    """Fix this process's scale (None: measure it, once); returns it."""
    global _scale, _measured
    if value is None:
        if _measured is None:
            _measured = _inherited() or measure()
        value = _measured
    _scale = value
    return _scale


def scale() -> float:
    """This process's scale: the one set, else measured now (once)."""
    return set_scale(None) if _scale is None else _scale


def scaled(seconds: float) -> float:
    """``seconds`` (a limit sized for a quiet machine) times this process's scale; 0 stays 0
    (no limit)."""
    return seconds * scale() if seconds > 0 else seconds


def checked_factor(value, where: str) -> float:
    """A ``time_limit_factor`` as a number from 1 to 1000; anything else is a ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 <= value <= 1000:
        raise ValueError(f"{where}: time_limit_factor({value!r}): give a number from 1 to "
                         f"1000 (how many ordinary tests' time the test's work takes)")
    return float(value)


def factor_of(item) -> float:
    """The ``time_limit_factor`` a test declares (1 when none); a bad one is a ValueError."""
    marker = item.get_closest_marker("time_limit_factor")
    if marker is None:
        return 1.0
    return checked_factor(marker.args[0] if len(marker.args) == 1 else marker.args, item.nodeid)


def describe(option_seconds: float, factor: float, scale_: float) -> str:
    """How a limit was reached, for messages: '' when it is the option's seconds as given."""
    parts = [f"{option_seconds:g}s"]
    if factor != 1:
        parts.append(f"{factor:g} (the test's time_limit_factor)")
    if scale_ != 1:
        parts.append(f"{scale_:.3g} (this machine's time-limit scale)")
    if len(parts) == 1:
        return ""
    return f"; its limit was {' × '.join(parts)} = {option_seconds * factor * scale_:.4g}s"
