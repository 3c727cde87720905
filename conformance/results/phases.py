"""What the plugin attaches to each phase report of a suite test, typed.

Why attached to the report: under pytest-xdist only the controller writes results, and a
phase report is what crosses from a worker to it (``report.user_properties`` survives xdist's
serialisation as plain JSON data, so :meth:`PhaseInfo.to_json` is what travels). The fields a
phase decides are :meth:`conformance.results.records.TestRecord.phase_fields`: the test record
is the single list of them; besides those, ``fails`` (the phase fails the pytest run) and
``crash`` (the worker died: the record is final).
"""
from __future__ import annotations

from typing import Any

from conformance.results.records import TestRecord

PROPERTY = "conformance"  # key of the per-phase info in report.user_properties
CHAIN_PROPERTY = "conformance-chain"  # a leak's keep-alive chain (conformance.leakchains)


class PhaseInfo:
    """The verdict fields of one phase (a subset of the test record's), ``fails``, ``crash``."""

    def __init__(self, fails: bool = False, crash: bool = False, **fields: Any) -> None:
        unknown = set(fields) - set(TestRecord.phase_fields())
        if unknown:
            raise TypeError(f"not fields of a test record: {', '.join(sorted(unknown))} "
                            f"(add them to conformance.results.records.TestRecord)")
        self.fields = fields
        self.fails = bool(fails)
        self.crash = bool(crash)

    def __getattr__(self, name: str) -> Any:
        if name in TestRecord.phase_fields():
            return self.__dict__.get("fields", {}).get(name)
        raise AttributeError(name)

    def to_json(self) -> dict[str, Any]:
        return {**self.fields, "fails": self.fails, **({"crash": True} if self.crash else {})}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "PhaseInfo":
        known = set(TestRecord.phase_fields())
        return cls(fails=bool(obj.get("fails")), crash=bool(obj.get("crash")),
                   **{k: v for k, v in obj.items() if k in known})

    def attach(self, report) -> None:
        """Add this info to ``report`` (a pytest TestReport)."""
        report.user_properties = [*report.user_properties, (PROPERTY, self.to_json())]


def phase_info(report) -> PhaseInfo | None:
    """The harness's info attached to one phase report (survives xdist serialisation)."""
    for entry in getattr(report, "user_properties", ()):
        if len(entry) == 2 and entry[0] == PROPERTY and isinstance(entry[1], dict):
            return PhaseInfo.from_json(entry[1])
    return None


def chain_of(report) -> dict | None:
    """A leak's keep-alive chain attached to a phase report (conformance.leakchains)."""
    for entry in getattr(report, "user_properties", ()):
        if len(entry) == 2 and entry[0] == CHAIN_PROPERTY:
            return entry[1]
    return None
