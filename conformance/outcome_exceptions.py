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

    The harness reports it as its own outcome, UNSUPPORTED, never as a pass or a skip, and
    records ``feature`` (a name of conformance/features.toml, or a short name of what is
    missing) in the test's ``missing_feature``: the page and the differential tester read that
    field, never the message. ``reason`` says why the framework lacks it; the message is for
    people (:meth:`missing` builds the usual one).
    """

    def __init__(self, message: str = "", *, feature: str | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.feature, self.reason = feature, reason

    @classmethod
    def missing(cls, framework: str, feature: str, reason: str, **kwargs):
        """``<framework> does not support <feature>: <reason>``, naming ``feature``."""
        return cls(f"{framework} does not support {feature}: {reason}", feature=feature,
                   reason=reason, **kwargs)

    def __reduce__(self):  # keyword fields survive pickling (a child process's exception)
        state = dict(self.__dict__)
        if isinstance(self, AttributeError):  # ``name`` is a slot, not in __dict__
            state["name"] = self.name
        return (_rebuild, (type(self), self.args, state))


def _rebuild(cls, args, state):
    exc = Exception.__new__(cls)
    exc.args = args
    for key, value in state.items():
        setattr(exc, key, value)
    return exc


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
        reason = f"it has no {path}"
        super().__init__(f"{framework} does not support {feature}: {reason}", feature=feature,
                         reason=reason)
        self.framework, self.path = framework, path
        self.name = path.rsplit(".", 1)[-1]
