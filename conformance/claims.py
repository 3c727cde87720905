"""Whether one feature an adapter declares missing is missing: the record of that check.

Why its own module: :mod:`conformance.feature_claims` makes the check (and its command runs
it through :func:`conformance.isolation.probe`), while the probe's child makes it at start-up
and :mod:`conformance.isolation` reads the claims back from the child's answer. The record
both need lives below both, so neither imports the other in a circle.
"""
from __future__ import annotations

import dataclasses

ABSENT, PRESENT, EXPLAINED, UNPROBED = "absent", "present", "explained", "unprobed"
#: nothing under the feature's own names, but something the framework has looks like it (its own
#: name for it elsewhere, a near spelling, another shape): a contradiction until the adapter
#: translates it or says why it is not the feature
LOOKALIKE = "lookalike"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One declared-missing feature and what the framework showed of it."""

    feature: str
    status: str                                   # ABSENT, PRESENT, LOOKALIKE, EXPLAINED or UNPROBED
    present: dict[str, str] = dataclasses.field(default_factory=dict)    # name -> where found
    explained: dict[str, str] = dataclasses.field(default_factory=dict)  # name -> the adapter's why
    stale: dict[str, str] = dataclasses.field(default_factory=dict)      # explained, yet absent
    #: framework objects its bare names could not be looked up on, and why
    missed: tuple[str, ...] = ()
    #: what looks like the feature though none of its names is there: name -> where and what
    lookalikes: dict[str, str] = dataclasses.field(default_factory=dict)
    #: present names that are not support, each with why (a binding that refuses the arguments
    #: the translation passes, a ``**kwargs`` stub that never reads the keyword): no contradiction
    refused: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def contradicted(self) -> bool:
        return self.status in (PRESENT, LOOKALIKE) or bool(self.stale)

    def line(self) -> str:
        """The feature's verdict on one line."""
        if self.status == PRESENT:
            unexplained = [n for n in self.present if n not in self.explained]
            text = "present: " + ", ".join(f"{n} (on {self.present[n]})" for n in unexplained)
        elif self.status == LOOKALIKE:
            text = "absent under its names, but looks present: " + "; ".join(
                f"{n} ({self.lookalikes[n]})" for n in self.lookalikes if n not in self.explained)
        elif self.status == EXPLAINED:
            found = {**self.present, **self.lookalikes}
            text = "present but not the feature: " + "; ".join(
                f"{n} (on {found[n]}): {self.explained[n]}" for n in found)
        elif self.status == UNPROBED:
            text = "unprobed: the registry lists no surface name or keyword for it"
        else:
            text = ABSENT
        if self.refused:
            text += "; there but not support: " + "; ".join(
                f"{n} ({why})" for n, why in self.refused.items())
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
        def table(field):
            return {str(k): str(v) for k, v in dict(data.get(field) or {}).items()}

        return cls(str(data["feature"]), str(data["status"]),
                   *(table(field) for field in ("present", "explained", "stale")),
                   tuple(str(m) for m in data.get("missed") or ()),
                   table("lookalikes"), table("refused"))
