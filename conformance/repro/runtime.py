"""What a reproduction script imports: the run's adapter, and the harness's own classification.

A script (``conformance.repro.derive``) holds the rule's tests and the helpers they use as
plain code, from the suite revision its run recorded; everything that decides an outcome comes
from here, at run time, so a script can only say what the harness would say:

* the adapter, loaded by the spec the run recorded (a built-in name, an entry point or
  ``package.module:Class``) with :func:`adapters.base.load_adapter`, the harness's loader:
  ``adapter``, ``fw`` (its namespace) and the device;
* each test's feature needs, which the script lists per test (``needs=``, from the suite
  index at the run's revision: :func:`conformance.features.needed_by`): a test needing a
  feature the adapter declares missing is UNSUPPORTED before it runs, as in the run;
* each test's outcome from :func:`conformance.outcomes.test_outcome`, the function the
  harness's plugin calls; a rule's outcome is :func:`conformance.results.cells.rule_outcome`
  of its tests', as the report's cell;
* the run's ``--conformance-timeout`` with the harness's alarm (TIMEOUT; a hang outside
  Python ends the process through faulthandler, which the script runner reads as TIMEOUT),
  and its ``--leak-check`` with :func:`conformance.leakcheck.measure` (LEAK).

A script ends by printing ``RESULT: <OUTCOME>[: first line of the message]``.
"""
from __future__ import annotations

import inspect
import json
import sys
from typing import Any, Callable

from adapters.base import load_adapter
from conformance.model import features
from conformance.outcomes import HELD, Outcome, first_lines, test_outcome
from conformance.results.cells import rule_outcome

class Repro:
    """One rule's tests on one run's adapter, device and options."""

    def __init__(self, rule: str, level: str, adapter_spec: str, device: str = "cpu",
                 framework_version: str | None = None, suite_revision: str | None = None,
                 timeout: float = 0, leak_check: list[int] | None = None) -> None:
        self.rule, self.level = rule, level
        self.timeout = float(timeout or 0)
        self.leak_check = None
        # the adapter is loaded under the run's timeout too: one that hangs at import must
        # not hang the script (and repro.check, which runs it)
        limit = self._arm()
        try:
            self.adapter = load_adapter(adapter_spec)
            self.fw = self.adapter.fw
            self.adapter.check_device(device)
            have = self.adapter.framework_version()
        finally:
            if limit is not None:
                limit()
        self.device = device
        self.leak_check = tuple(leak_check) if leak_check else None
        self.results: list[tuple[str, str]] = []
        self._observed: list[Any] = []
        if framework_version and have != framework_version:
            print(f"note: the run used {self.adapter.name} {framework_version}; this is {have}")

    def observe(self, value: Any) -> None:
        """The suites' ``observe`` fixture: what an IMPLEMENTATION-DEFINED rule records."""
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        self._observed.append(value)

    # -- one test ------------------------------------------------------------------------
    def _fixture_args(self, fn: Callable) -> dict[str, Any]:
        given = {"adapter": self.adapter, "fw": self.fw, "device": self.device,
                 "observe": self.observe}
        return {p: given[p] for p in inspect.signature(fn).parameters if p in given}

    def _once(self, call: Callable[[], Any], fixtures: tuple,
              needs: tuple = ()) -> tuple[Outcome, str]:
        """Set up the suite's autouse fixtures, call the test, tear them down; classify the
        first phase that raised, as the harness does. A test that ``needs`` a feature the
        adapter declares missing is UNSUPPORTED before any of it runs (the plugin's setup)."""
        self._observed.clear()
        active = []
        exc: BaseException | None = None
        try:
            missing = features.missing_for(self.adapter, needs)
            if missing is not None:
                raise features.unsupported(self.adapter, missing)
            for fixture in fixtures:
                gen = fixture(**self._fixture_args(fixture))
                next(gen)
                active.append(gen)
            call()
        except Exception as error:  # noqa: BLE001 - classified below, as the harness does
            exc = error
        except BaseException as error:  # the harness's TestTimeout is a BaseException
            if not _is_timeout(error):
                raise
            exc = error
        for gen in reversed(active):
            try:
                next(gen, None)
            except Exception as error:  # noqa: BLE001 - a failing teardown
                exc = exc or error
        if exc is not None and _is_timeout(exc):
            return Outcome.TIMEOUT, first_lines(f"{type(exc).__name__}: {exc}")
        return test_outcome(exc, self.rule, self.level, bool(self._observed))

    def check(self, name: str, call: Callable[[], Any], fixtures: tuple = (),
              needs: tuple = ()) -> tuple[str, str]:
        """Run one test (``call``) and print and keep its outcome; ``needs``: the features the
        test needs (the script lists them per test, from the suite index)."""
        limit = self._arm()
        try:
            actual, message = self._once(call, fixtures, needs)
            if actual in HELD and self.leak_check:
                actual, message = self._leak(call, fixtures, actual, message)
        finally:
            if limit is not None:
                limit()
        lost = limit.lost() if limit is not None else None  # conformance/alarm.py, as the harness
        if lost is not None:
            actual, message = Outcome.TIMEOUT, first_lines(f"{type(lost).__name__}: {lost}")
        if actual is Outcome.OBSERVED and not message:
            message = repr(self._observed[0] if len(self._observed) == 1 else self._observed)
        print(f"{name}: {actual}" + ("\n    " + message.replace("\n", "\n    ") if message else ""))
        sys.stdout.flush()
        self.results.append((str(actual), message))
        return str(actual), message

    def _leak(self, call, fixtures, actual, message):
        from conformance import leakcheck

        warmups, runs = self.leak_check
        finding = leakcheck.measure(lambda: self._once(call, fixtures)[0] in HELD, warmups, runs)
        return (Outcome.LEAK, finding.message()) if finding is not None else (actual, message)

    def _arm(self):
        """The run's limit armed (``conformance.timeout.Limit``; call it to disarm), or None
        when the run had none."""
        if self.timeout <= 0:
            return None
        from conformance import time_scale, timeout

        scale = 1 + (sum(self.leak_check) + 1 if self.leak_check else 0)
        machine = time_scale.scale()  # a limit on hangs, as in the run (conformance/time_scale.py)
        return timeout.arm(self.timeout * scale * machine, self.timeout, sys.__stderr__,
                           time_scale.describe(self.timeout, 1, machine), machine)

    # -- the rule ------------------------------------------------------------------------
    def finish(self) -> str:
        """Print ``RESULT: ...``: the rule's outcome from its tests', as the report's cell
        (:func:`conformance.results.cells.rule_outcome`)."""
        outcome = rule_outcome(o for o, _ in self.results)
        message = next((m for o, m in self.results if o == outcome), "")
        first = message.strip().splitlines()[0] if message.strip() else ""
        shown = outcome not in (str(Outcome.PASS), str(Outcome.OBSERVED)) and first
        print(f"RESULT: {outcome}" + (f": {first}" if shown else ""))
        return outcome


def _is_timeout(exc: BaseException) -> bool:
    from conformance.outcome_exceptions import TestTimeout

    return isinstance(exc, TestTimeout)
