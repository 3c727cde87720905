"""The exceptions that mean an outcome: raising one of these decides how a test is reported.

Why one module: the classification (``conformance.outcomes.classify``) recognises an outcome by
the exception's class, so each class must exist once, and whoever raises one (an adapter, a
suite test, the timeout alarm, a reproduction script) must get that very class. This module
imports only the standard library, so an adapter or a script can import it without pytest or
the rest of the harness. The older homes (``adapters.base.Unsupported``,
``conformance.outcomes.Blocked``, ``conformance.api.Diverges``,
``conformance.timeout.TestTimeout``) re-export these classes; third-party adapters keep
importing ``adapters.base.Unsupported``. ``tests/harness/test_outcomes.py`` fails when another
module defines an exception class meaning an outcome.
"""
from __future__ import annotations

__all__ = ["Unsupported", "MissingName", "Blocked", "Diverges", "TestTimeout"]


class Unsupported(Exception):
    """Raised by an adapter (or a test through it) when the framework lacks a feature.

    The harness reports it as its own outcome, UNSUPPORTED, never as a pass or a skip.
    """


class Blocked(Exception):
    """A prerequisite rule failed before the test reached its own check (outcome BLOCKED).

    ``rule_id`` names the prerequisite, so the cascade points at its root cause.
    """

    def __init__(self, rule_id: str, message: str) -> None:
        super().__init__(f"blocked by {rule_id}: {message}")
        self.rule_id = rule_id


class Diverges(AssertionError):
    """The framework does not follow the rule (reported as DIVERGES, not ERROR)."""


class TestTimeout(BaseException):
    """Raised in a test that ran past ``--conformance-timeout`` (outcome TIMEOUT).

    A ``BaseException``, so that a test's own ``except Exception`` cannot swallow it.
    """

    __test__ = False  # not a test class, despite the name


class MissingName(Unsupported, AttributeError):
    """A name the framework's namespace lacks (see :meth:`Adapter.namespace`).

    Both ``Unsupported`` (the harness reports the test UNSUPPORTED, naming ``feature``) and
    ``AttributeError`` (so ``hasattr`` and ``getattr(obj, name, default)`` still answer).
    """

    def __init__(self, framework: str, path: str, feature: str) -> None:
        super().__init__(f"{framework} does not support {feature}: it has no {path}")
        self.framework, self.path, self.feature = framework, path, feature
        self.name = path.rsplit(".", 1)[-1]
