"""Crash isolation at import: a framework whose import kills the interpreter is named as such.

Why: the harness imports the framework while pytest configures itself, before any test
and before pytest-xdist starts a worker; a segfault there would end pytest with a bare
signal and nothing in the results file. So the controller first imports the framework in
a child interpreter; if that child dies of a signal (or hangs), the run stops with a
usage error that says so, and the results file records it. A child that fails with an
ordinary exception is left to the in-process import, whose message says how to install.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

PROBE = ("import sys\n"
         "from adapters.base import load_adapter\n"
         "load_adapter(sys.argv[1]).fw\n")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def import_crash(spec: str, timeout: float = 300.0) -> str | None:
    """Import adapter ``spec``'s framework in a child interpreter; a message if it crashed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        done = subprocess.run([sys.executable, "-c", PROBE, spec], capture_output=True,
                              text=True, errors="replace", env=env,
                              timeout=timeout if timeout > 0 else None)
    except subprocess.TimeoutExpired:
        return (f"adapter {spec!r}: importing its framework did not finish within {timeout:g}s "
                f"(checked in a child interpreter); the framework hangs at import")
    except OSError:
        return None  # cannot start a child here: nothing to report, import in-process
    if done.returncode >= 0:
        return None
    tail = "\n".join(done.stderr.strip().splitlines()[-8:])
    return (f"adapter {spec!r}: importing its framework crashed the interpreter "
            f"({_signal_name(-done.returncode)}; checked in a child interpreter, so no test "
            f"can run). Last lines it wrote:\n{tail}")
