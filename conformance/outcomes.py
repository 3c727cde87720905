"""What a test's result means for the framework, and what it means for the pytest run.

Why our own outcomes: pytest's passed/failed/skipped cannot tell "the framework breaks the
rule" (DIVERGES) from "the test itself broke" (ERROR) or "the framework lacks the feature"
(UNSUPPORTED), and a skip is exactly how "not applicable" leaks out of sight.

How they map onto pytest (so that exit status and ``-x`` keep working):

=========================  =====================  ==================================
outcome                    pytest status          fails the run?
=========================  =====================  ==================================
PASS, OBSERVED             passed                 no
UNSUPPORTED                skipped "UNSUPPORTED:  no (counted in the summary)
BLOCKED                    skipped "BLOCKED:      no (names the prerequisite rule)
DIVERGES, ERROR, CRASH,    failed                 yes
TIMEOUT, LEAK
XFAIL (as expected)        xfailed                no
XPASS (expected, passed)   failed                 yes (strict: remove the entry)
other than expected        failed                 yes (update the entry)
=========================  =====================  ==================================

BLOCKED: a prerequisite of the test (another rule's behaviour it needs to reach its own check,
declared with :func:`conformance.api.prerequisite`) failed; the results line names that rule in
``blocked_by``. It is never a verdict on the test's own rule and needs no expectation entry.
UNSUPPORTED: the results line names the missing feature in ``missing_feature``
(``Unsupported.feature``); one the adapter declares missing needs no expectation entry either.
TIMEOUT: the test ran past ``--conformance-timeout`` (``conformance.timeout``); LEAK: the test
held but, run again and again under ``--leak-check``, left more live objects or traced memory
behind on every run (``conformance.leakcheck``).

This module owns the outcome sets and their orders; every consumer (the terminal summary,
the report's cells and JUnit files, expectations drafting) takes them from here, and
``tests/harness/test_outcome_consumers.py`` fails when an outcome is added that a consumer
does not handle. It imports no third-party package at module level, so that the noxfile and
``.ci/`` can read results files (:mod:`conformance.results`) with a bare Python.
"""
from __future__ import annotations

import dataclasses
import enum
import re

from conformance.outcome_exceptions import Blocked, Unsupported  # noqa: F401 (Blocked re-exported)


class Outcome(str, enum.Enum):
    PASS = "PASS"
    OBSERVED = "OBSERVED"
    DIVERGES = "DIVERGES"
    UNSUPPORTED = "UNSUPPORTED"
    BLOCKED = "BLOCKED"
    ERROR = "ERROR"
    CRASH = "CRASH"
    TIMEOUT = "TIMEOUT"
    LEAK = "LEAK"
    XFAIL = "XFAIL"
    XPASS = "XPASS"

    def __str__(self) -> str:
        return self.value


#: Outcomes an expectations file may declare.
EXPECTABLE = (Outcome.DIVERGES, Outcome.UNSUPPORTED, Outcome.ERROR, Outcome.CRASH, Outcome.TIMEOUT,
              Outcome.LEAK)
#: Outcomes that mean the rule held (or was observed) for the framework.
HELD = (Outcome.PASS, Outcome.OBSERVED)
#: Outcomes that say the framework breaks the rule (or the test could not judge it because
#: the framework broke underneath it). UNSUPPORTED and BLOCKED are not: a missing feature
#: and a cascade from another rule are counted apart.
BROKEN = (Outcome.DIVERGES, Outcome.ERROR, Outcome.CRASH, Outcome.TIMEOUT, Outcome.LEAK)
#: Outcomes that exist only after an expectation was applied (a results line's ``outcome``),
#: never as what the framework did (its ``actual``).
FINAL_ONLY = (Outcome.XFAIL, Outcome.XPASS)
#: Outcomes a results line's ``actual`` can hold.
ACTUAL = tuple(o for o in Outcome if o not in FINAL_ONLY)
#: Column order in summaries.
ORDER = (Outcome.PASS, Outcome.OBSERVED, Outcome.DIVERGES, Outcome.UNSUPPORTED, Outcome.BLOCKED,
         Outcome.ERROR,
         Outcome.CRASH, Outcome.TIMEOUT, Outcome.LEAK, Outcome.XFAIL, Outcome.XPASS)
#: Final outcomes, most severe first: a rule with several tests shows the first that occurs.
SEVERITY = (Outcome.CRASH, Outcome.ERROR, Outcome.TIMEOUT, Outcome.LEAK, Outcome.XPASS,
            Outcome.DIVERGES, Outcome.XFAIL, Outcome.BLOCKED, Outcome.UNSUPPORTED,
            Outcome.OBSERVED, Outcome.PASS)
#: What the framework did, most severe first (:data:`SEVERITY` without the final-only ones).
ACTUAL_SEVERITY = tuple(o for o in SEVERITY if o not in FINAL_ONLY)
#: Not outcomes of a test but of a cell of the report: no result for a test that other runs
#: have, and a column whose framework could not be installed. Most severe of all.
NOT_RUN = "NOT RUN"
NOT_INSTALLED = "NOT INSTALLED"


def worst(outcomes, order=SEVERITY) -> str:
    """The most severe of ``outcomes`` (strings or :class:`Outcome`) by ``order``;
    ``NOT RUN`` before all, an unknown string after all."""
    values = {str(o) for o in outcomes}
    if NOT_RUN in values:
        return NOT_RUN
    for outcome in order:
        if outcome.value in values:
            return outcome.value
    return next(iter(sorted(values)), NOT_RUN)


def blocked_by(exc: BaseException | None) -> str | None:
    """The prerequisite rule id of a BLOCKED test, else None."""
    return exc.rule_id if isinstance(exc, Blocked) else None


def missing_feature(exc: BaseException | None) -> str | None:
    """The feature an UNSUPPORTED test lacks, as its ``Unsupported`` names it, else None."""
    feature = getattr(exc, "feature", None) if isinstance(exc, Unsupported) else None
    return feature if isinstance(feature, str) and feature else None


def classify(exc: BaseException | None, level: str, observed: bool) -> tuple[Outcome, str]:
    """The framework outcome of one test phase, and a message saying why.

    ``exc`` is what the phase raised (None when it returned), ``level`` the rule's level,
    ``observed`` whether the test recorded a value with ``observe``.
    """
    implementation_defined = level == "IMPLEMENTATION-DEFINED"
    if exc is None:
        if implementation_defined and not observed:
            return Outcome.ERROR, ("the rule is IMPLEMENTATION-DEFINED but the test recorded "
                                   "nothing; call observe(value) with what the framework did")
        return (Outcome.OBSERVED if implementation_defined else Outcome.PASS), ""
    message = first_lines(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, Unsupported):
        return Outcome.UNSUPPORTED, first_lines(str(exc))
    if isinstance(exc, Blocked):
        return Outcome.BLOCKED, first_lines(str(exc))
    import pytest  # here, so that reading results files needs no pytest

    if isinstance(exc, pytest.skip.Exception):
        return Outcome.UNSUPPORTED, first_lines(f"pytest.skip: {exc.msg}")
    if isinstance(exc, pytest.xfail.Exception):
        return Outcome.ERROR, ("pytest.xfail() in a suite test; declare expected outcomes in "
                               "adapters/expectations/<adapter>.toml instead")
    if implementation_defined:
        # Nothing can diverge from an implementation-defined rule: a raise is a broken test.
        return Outcome.ERROR, message
    if isinstance(exc, (AssertionError, pytest.fail.Exception)):
        return Outcome.DIVERGES, message
    return Outcome.ERROR, message


def test_outcome(exc: BaseException | None, rule_id: str, level: str,
                 observed: bool) -> tuple[Outcome, str]:
    """What the harness records as a test's framework outcome (its ``actual``) for one phase:
    :func:`classify`, and a BLOCKED that names the test's own rule is a verdict on that rule
    (DIVERGES). The harness and every reproduction script (conformance.repro.runtime) call
    this one function."""
    actual, message = classify(exc, level, observed)
    if actual is Outcome.BLOCKED and blocked_by(exc) == rule_id:
        # a step declared as a prerequisite is the test's own rule here: a verdict on it
        actual = Outcome.DIVERGES
    return actual, message


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def first_lines(text: str, lines: int = 6, width: int = 400) -> str:
    """The start of a failure message, without terminal colour codes (OneFlow adds them)."""
    kept = _ANSI.sub("", str(text)).strip().splitlines()[:lines]
    return "\n".join(line[:width] for line in kept)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The final outcome of a test after its expectation, and the pytest status it gets."""

    outcome: Outcome
    actual: Outcome
    status: str  # "passed" | "failed" | "skipped" | "xfailed"
    note: str = ""

    @property
    def fails_run(self) -> bool:
        return self.status == "failed"


def judge(actual: Outcome, expected: Outcome | None, where: str = "",
          flaky: tuple[Outcome, ...] = ()) -> Verdict:
    """Compare the framework's outcome with the expected one (None: the rule should hold).

    ``flaky``: further outcomes the expectation accepts, for a framework that does not
    behave the same in every run (a deadlock that happens in some runs only). A held rule
    listed there passes with a note instead of being a strict XPASS.
    """
    if expected is not None and actual != expected and actual in flaky:
        note = f"flaky: {actual} this time, {expected} in other runs ({where})"
        if actual in HELD:
            return Verdict(actual, actual, "passed", note)
        return Verdict(Outcome.XFAIL, actual, "xfailed", note)
    if expected is None:
        if actual in HELD:
            return Verdict(actual, actual, "passed")
        if actual in (Outcome.UNSUPPORTED, Outcome.BLOCKED):
            return Verdict(actual, actual, "skipped")
        return Verdict(actual, actual, "failed")
    if actual == expected:
        return Verdict(Outcome.XFAIL, actual, "xfailed")
    if actual is Outcome.BLOCKED:
        return Verdict(actual, actual, "failed",
                       f"expected {expected} ({where}) but the test is BLOCKED by a prerequisite: "
                       f"a cascade needs no entry; remove it")
    if actual in HELD:
        return Verdict(Outcome.XPASS, actual, "failed",
                       f"[XPASS(strict)] expected {expected} ({where}) but the rule held: "
                       f"remove the entry")
    return Verdict(actual, actual, "failed",
                   f"expected {expected} ({where}) but got {actual}: update the entry")
