"""Time limits in the project's own tests: limits on hangs, never checks of speed.

Why: the machines that run these tests are shared (a CI runner, a workstation with 8 agents on
2 cores, a load of 25). A limit sized on a quiet machine fails there though nothing hangs, and
the verdict would depend on the machine (issue 35). Speed targets live in benchmarks/.

So a child process, a wait or a join in a test gets ``hang_limit(quiet)``: ``quiet`` is how
long the work takes on a quiet 2-core machine (measured with ``pytest --durations``), and the
limit lets a machine ten times slower still pass, three times over. A test never asserts how
long something took: to show that a limit ended a hang, the hung thing never ends on its own
(an hour's sleep, an endless loop) and the test checks the outcome the limit gives.
``tests/harness/test_time_limits.py`` keeps every limit in tests/ this way.
"""
from __future__ import annotations

#: How much slower a machine may be than a quiet one and still pass every test.
SLOWER_MACHINE = 10
#: Room on top of that (a quiet machine's time varies too).
MARGIN = 3


def hang_limit(quiet_seconds: float) -> float:
    """Seconds to wait for work that takes ``quiet_seconds`` on a quiet machine before calling
    it a hang (at least 5 minutes: a child interpreter's start on a busy machine)."""
    return max(300.0, SLOWER_MACHINE * MARGIN * quiet_seconds)
