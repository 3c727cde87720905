"""conformance/spin_watch.py: a child that uses CPU without progressing is ended on the CPU it
used, never on how long it took; a slow or blocked child is left to the wall limit."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from conformance import spin_watch
from tests.hang import hang_limit

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(),
                                reason="reads the child's CPU time from /proc")

MARK = f"print({spin_watch.MARKER!r}, flush=True)"


def _run(body: str, timeout: float, budget: float | None = 1.0) -> spin_watch.Finished:
    return spin_watch.run([sys.executable, "-c", textwrap.dedent(body)], env=dict(os.environ),
                          timeout=timeout, spin_cpu_seconds=budget)


def test_the_cpu_reading_sees_this_process_work_and_nothing_for_a_missing_one():
    """The watch's control: it reads a live process's CPU time, which grows as it works."""
    before = spin_watch.cpu_seconds(os.getpid())
    total = 0
    while spin_watch.cpu_seconds(os.getpid()) - before < 0.05:
        total += sum(range(10_000))
    assert spin_watch.cpu_seconds(os.getpid()) > before
    assert spin_watch.cpu_seconds(2 ** 22 + 12345) is None   # above Linux's largest pid


def test_a_child_spinning_after_it_progressed_is_ended_for_its_cpu_not_its_wall_time():
    done = _run(f"""
        {MARK}
        while True:
            pass
    """, timeout=hang_limit(5))
    assert done.returncode is None and "spins" in done.ended, done
    assert "1s allowed" in done.ended


def test_a_blocked_child_uses_no_budget_and_meets_the_wall_limit():
    done = _run(f"""
        import time
        {MARK}
        time.sleep(3600)
    """, timeout=2)
    assert done.returncode is None and "still running after 2s" in done.ended, done


def test_start_up_before_the_first_progress_line_is_not_judged():
    """Importing a framework can take many CPU seconds before any work starts."""
    done = _run("""
        while True:
            pass
    """, timeout=3)
    assert "still running after 3s" in done.ended, done


def test_a_child_that_keeps_progressing_runs_to_its_end_however_much_cpu_it_uses():
    done = _run(f"""
        import time
        for _ in range(8):
            started = time.process_time()
            while time.process_time() - started < 0.25:
                pass
            {MARK}
        print("finished")
    """, timeout=hang_limit(3))
    assert done.ended == "" and done.returncode == 0, done
    assert done.stdout == "finished\n", "the progress lines are kept out of the output"


def test_without_a_budget_only_the_wall_limit_ends_a_spin():
    done = _run(f"""
        {MARK}
        while True:
            pass
    """, timeout=2, budget=None)
    assert "still running after 2s" in done.ended, done


def test_threads_saying_lines_at_once_never_cut_one_another():
    done = _run("""
        import threading
        from conformance.api import progress, say
        def work(i):
            for r in range(200):
                progress()
                say(f"thread {i} round {r}")
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    """, timeout=hang_limit(2), budget=None)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sorted(lines) == sorted(f"thread {i} round {r}" for i in range(4) for r in range(200))
