"""What a framework refused, told apart from what it lacks.

Why its own module: a class or wording rule reads the exception a misuse raised; the adapter's
``Unsupported`` (a feature the framework does not have) and an ``AttributeError`` for a method
missing on a framework object are not the framework refusing the misuse, and counting them as
refusals let such rules judge (or PASS on) an exception the framework never raised.
"""
from __future__ import annotations

from conformance.api import Blocked, Diverges, Unsupported, missing_method
from conformance.features import feature_of_name


def refusal_of(fn):
    """The exception ``fn`` raises (its refusal), or None if it raises nothing. ``Unsupported``,
    ``Blocked`` and ``Diverges`` propagate, and a missing method on a framework object becomes
    ``Unsupported`` naming it: none of them is a refusal."""
    try:
        fn()
    except (Unsupported, Blocked, Diverges):
        raise
    except Exception as exc:  # noqa: BLE001 - any refusal is what the caller reads
        missing = missing_method(exc)
        if missing:
            raise Unsupported(f"the framework has no {missing!r} ({type(exc).__name__}: {exc})",
                              feature=feature_of_name(missing)) from exc
        return exc
    return None
