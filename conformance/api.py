"""What a suite test may use besides the framework itself.

Tests read like user code of the framework under test: they get the framework namespace
as the ``fw`` fixture and write ``fw.ones(3, requires_grad=True)``. These helpers cover
what user code cannot say by itself: which rule a test checks, that an exception means
"the rule does not hold" rather than "the test broke", and what an implementation-defined
rule observed.
"""
from __future__ import annotations

import contextlib
import json
import sys
import re
import threading
from typing import Any, Callable, Iterator

import pytest

from conformance import side_checks
from conformance.child_interpreter import environment
from conformance.features import feature_of_name
from conformance.outcome_exceptions import Blocked, Diverges, TestTimeout, Unsupported

__all__ = ["rule", "aside", "Diverges", "Unsupported", "Blocked", "prerequisite", "diverges_if_raises",
           "raises", "in_fresh_interpreter", "progress", "say", "time_limit", "time_limit_factor"]


def rule(rule_id: str):
    """Mark a test as the check of catalogue rule ``rule_id``."""
    return pytest.mark.rule(rule_id)


def aside(adapter, *features: str, what: str) -> bool:
    """Whether to run a side observation of the test (a check beside its subject) that needs
    ``features``: False, recording "not checked: <feature>: <what>" on the test's record
    (:mod:`conformance.side_checks`), when the adapter declares one of them missing; the test
    goes on and judges its subject. Write it as ``if aside(adapter, "graph_nodes", what="the
    base's grad_fn changes"):`` over the observation's lines: the suite index leaves what that
    body touches out of the test's needs (a structure test checks that ``features`` name all
    of it), so a framework without them no longer loses the whole test."""
    if not features:
        raise TypeError("aside() names the features its observation needs")
    declared = getattr(adapter, "unsupported", {}) or {}
    missing = next((f for f in features if f in declared), None)
    if missing is not None:
        side_checks.note(missing, what)
        return False
    return True


@contextlib.contextmanager
def diverges_if_raises(*exc_types: type[BaseException], what: str = "") -> Iterator[None]:
    """Inside this block, an exception of ``exc_types`` means the rule does not hold.

    Use it around the operation a rule is about (``weakref.ref(t)`` for a weakref rule):
    a framework that refuses the operation diverges from the rule; an exception anywhere
    else in the test is still an ERROR.
    """
    try:
        yield
    except (Unsupported, Diverges):   # a missing feature stays UNSUPPORTED
        raise
    except exc_types as exc:
        prefix = f"{what}: " if what else ""
        raise Diverges(f"{prefix}{type(exc).__name__}: {exc}") from exc


def missing_method(exc: BaseException) -> str:
    """The name of the attribute whose absence ``exc`` reports on a framework object, or ""
    when ``exc`` is something else (a refusal the framework raised on purpose)."""
    if not isinstance(exc, AttributeError):
        return ""
    name, obj = getattr(exc, "name", None), getattr(exc, "obj", None)
    if name and obj is not None:
        import inspect

        owner = obj if isinstance(obj, type) else type(obj)
        module = owner.__module__ or ""
        if (module.split(".")[0] in ("conformance", "tests", "builtins", "__main__")
                or module.rsplit(".", 1)[-1].startswith("test_")):
            return ""   # the test's own class (a Function without forward): a real refusal

        try:
            inspect.getattr_static(obj, name)
        except AttributeError:
            return name
        return ""
    found = re.search(r"has no attribute '(\w+)'", str(exc))
    return found.group(1) if found else ""


@contextlib.contextmanager
def raises(exc_types, match=None, what: str = "the operation") -> Iterator[None]:
    """The rule says the block raises ``exc_types`` (with a message matching ``match``).

    Unlike ``pytest.raises``, a missing or different exception means the rule does not
    hold (DIVERGES), not that the test broke (ERROR). An AttributeError that says a method or
    attribute is missing on the framework's object is no refusal, even under
    ``raises(Exception)``: the framework lacks the feature (UNSUPPORTED). Meaning regexes for
    ``match`` live in :mod:`conformance.meanings`.
    """
    try:
        yield
    except (Unsupported, Diverges, Blocked):
        raise
    except Exception as exc:
        missing = missing_method(exc)
        if missing:
            raise Unsupported(f"{what}: the framework has no {missing!r} "
                              f"({type(exc).__name__}: {exc})",
                              feature=feature_of_name(missing)) from exc
        if not isinstance(exc, exc_types):
            raise Diverges(f"{what} raised {type(exc).__name__}: {exc}") from exc
        if match is not None and not re.search(match, str(exc)):
            raise Diverges(f"{what} raised {type(exc).__name__} with message {str(exc)!r}, "
                           f"expected to match {match!r}") from exc
    else:
        raise Diverges(f"{what} raised nothing")


class Prerequisite:
    """What a ``with prerequisite(rule) as pre:`` block checks: ``pre.check(cond, what)`` ends
    the test BLOCKED by the rule when the behaviour it needs did not happen."""

    def __init__(self, rule_id: str, what: str) -> None:
        self.rule_id = rule_id
        self.what = what
        self.checked = 0

    def check(self, condition: Any, what: str) -> None:
        """The behaviour ``what`` (said as what should have happened) happened, else BLOCKED."""
        self.checked += 1
        if not condition:
            prefix = f"{self.what}: " if self.what else ""
            raise Blocked(self.rule_id, f"{prefix}did not happen: {what}")


@contextlib.contextmanager
def prerequisite(rule_id: str, what: str = "",
                 check: Callable[[], Any] | None = None) -> Iterator[Prerequisite]:
    """Inside this block runs what the test needs from *another* rule (``rule_id``) before it
    can reach its own check: a failure there ends the test BLOCKED by ``rule_id``, not DIVERGES.

    Not raising is not enough: the block verifies that the behaviour it needs happened, with
    ``pre.check(condition, what)`` inside it or ``check=`` (called after the block; falsy is
    BLOCKED). A write through a view that silently does not reach its base is as BLOCKED as one
    that raises.

    ``Unsupported`` passes through (a missing feature stays UNSUPPORTED), and so does a
    ``Blocked`` from a nested prerequisite (the innermost names the root cause).
    """
    pre = Prerequisite(rule_id, what)
    try:
        yield pre
    except (Unsupported, Blocked):
        raise
    except Exception as exc:
        prefix = f"{what}: " if what else ""
        raise Blocked(rule_id, f"{prefix}{type(exc).__name__}: {exc}") from exc
    if check is not None:
        try:
            ok = check()
        except (Unsupported, Blocked):
            raise
        except Exception as exc:
            prefix = f"{what}: " if what else ""
            raise Blocked(rule_id, f"{prefix}checking it raised {type(exc).__name__}: {exc}") from exc
        pre.check(ok, "the check after the block")


_FRESH_PRELUDE = """
import sys
from adapters.base import load_adapter
from conformance.outcome_exceptions import Unsupported
adapter = load_adapter(sys.argv[1])
fw = adapter.fw
argv = sys.argv[3:]
try:
    exec(compile(sys.argv[2], "<fresh interpreter script>", "exec"), {**globals()})
except Unsupported as exc:
    import json
    print("@@UNSUPPORTED@@", json.dumps([exc.feature, exc.reason, str(exc)]))
"""


def time_limit_factor(n: float):
    """Mark a test whose work legitimately takes up to ``n`` ordinary tests' time (a 10,000-op
    chain): its limit is ``n`` × ``--conformance-timeout`` (conformance/time_scale.py), so that
    its TIMEOUT means a hang, not a slow framework on a busy machine. A bad ``n`` is a
    ValueError where the test is defined (the module's collection error)."""
    from conformance import time_scale

    return pytest.mark.time_limit_factor(time_scale.checked_factor(n, "time_limit_factor"))


def time_limit(seconds: float) -> float:
    """A wait in a test (a thread's join, an event, a barrier) sized for a quiet machine, times
    the run's ``--time-limit-scale`` (conformance/time_scale.py): a wait that runs out means a
    hang, not a busy machine. Also in a child of ``in_fresh_interpreter``."""
    from conformance import time_scale

    return time_scale.scaled(seconds)


def in_fresh_interpreter(adapter, script: str, *args: str, timeout: float = 300,
                        spin_cpu_seconds: float | None = None) -> str:
    """Run ``script`` in a new Python interpreter and return what it printed.

    For what a framework does once per process (a warning it gives once). The script sees
    ``adapter`` (loaded by the same spec as this run, so ``package.module:Class`` adapters
    work too), ``fw`` and ``argv`` (``args`` as strings). ``Unsupported`` raised in the child
    is raised here (UNSUPPORTED); a child still running after ``timeout`` seconds is killed
    and the test is a TIMEOUT; any other failure of the child is a RuntimeError (ERROR).
    ``timeout`` is sized for a quiet machine: it is scaled like every limit (``time_limit``),
    and the child's own ``time_limit`` uses this run's scale.

    ``spin_cpu_seconds``: a child that calls :func:`progress` as it works is also ended (a
    TIMEOUT) once it has used that much CPU since it last progressed: a hang that spins ends
    after the same CPU work on any machine, not after the load-scaled wall limit
    (conformance/spin_watch.py). Unscaled: CPU time does not grow with the machine's load.
    """
    from conformance import spin_watch, time_scale

    timeout = time_limit(timeout)
    env = environment(same_interpreter=True)
    env[time_scale.ENVIRONMENT] = repr(time_scale.scale())
    done = spin_watch.run([sys.executable, "-c", _FRESH_PRELUDE,
                           getattr(adapter, "spec", adapter.name), script, *map(str, args)],
                          env=env, timeout=timeout, spin_cpu_seconds=spin_cpu_seconds)
    if done.ended:
        # the child hung (a deadlock in the framework): the test ran too long, TIMEOUT, not ERROR
        raise TestTimeout(f"the fresh interpreter running the test {done.ended} and was killed")
    if done.returncode != 0:
        raise RuntimeError(f"helper process failed:\n{done.stderr[-2000:]}")
    for line in done.stdout.splitlines():
        if line.startswith("@@UNSUPPORTED@@"):
            feature, reason, message = json.loads(line.split(" ", 1)[1])
            raise Unsupported(message, feature=feature, reason=reason)
    return done.stdout


_progress_lock = threading.Lock()


def progress() -> None:
    """In a child of :func:`in_fresh_interpreter`: say the work progressed (a round done), so
    that the parent's ``spin_cpu_seconds`` counts from here. One whole line, safe from any
    thread; use :func:`say` for the child's other lines so that none is cut by this one."""
    from conformance.spin_watch import MARKER

    say(MARKER)


def say(line: str) -> None:
    """In a child of :func:`in_fresh_interpreter`: print ``line`` whole (threads that print at
    once never interleave their lines) and flush it to the parent now."""
    with _progress_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
