"""Whether one feature an adapter declares missing is missing: the record of that check.

Why its own module: :mod:`conformance.feature_claims` makes the check (and its command runs
it through :func:`conformance.isolation.probe`), while the probe's child makes it at start-up
and :mod:`conformance.isolation` reads the claims back from the child's answer. The record
both need lives below both, so neither imports the other in a circle.
"""
from __future__ import annotations

import dataclasses

ABSENT, PRESENT, EXPLAINED, UNPROBED = "absent", "present", "explained", "unprobed"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One declared-missing feature and what the framework showed of it."""

    feature: str
    status: str                                   # ABSENT, PRESENT, EXPLAINED or UNPROBED
    present: dict[str, str] = dataclasses.field(default_factory=dict)    # name -> where found
    explained: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> the adapter's why
    stale: dict[str, str] = dataclasses.field(default_factory=dict)      # explained, yet absent
    #: framework objects its bare names could not be looked up on, and why
    missed: tuple[str, ...] = ()

    @property
    def contradicted(self) -> bool:
        return self.status == PRESENT or bool(self.stale)

    def line(self) -> str:
        """The feature's verdict on one line."""
        if self.status == PRESENT:
            unexplained = [n for n in self.present if n not in self.explained]
            text = "present: " + ", ".join(f"{n} (on {self.present[n]})" for n in unexplained)
        elif self.status == EXPLAINED:
            text = "present but not the feature: " + "; ".join(
                f"{n} (on {self.present[n]}): {self.explained[n]}" for n in self.present)
        elif self.status == UNPROBED:
            text = "unprobed: the registry lists no surface name or keyword for it"
        else:
            text = ABSENT
        if self.stale:
            text += ("; stale explanation (the name is absent): "
                     + ", ".join(sorted(self.stale)))
        if self.missed:
            text += " (not looked up on: " + "; ".join(self.missed) + ")"
        return f"{self.feature}: {text}"

    def as_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Claim":
        return cls(str(data["feature"]), str(data["status"]),
                   *({str(k): str(v) for k, v in dict(data.get(field) or {}).items()}
                     for field in ("present", "explained", "stale")),
                   tuple(str(m) for m in data.get("missed") or ()))
