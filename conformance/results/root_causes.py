"""A run's ranked root causes as the page shows them: one typed record per cause.

Why a record: the ranked cause was a 12-key dict built in ``conformance.report.rootcause``,
written into ``results.json`` and read back by key in the page and its template. Here
:class:`RankedCause` is the single list of its fields (``to_json`` / ``from_json``, each field's
JSON type checked, the file and the field named). Adding a field to a root cause is this class,
its builder (:func:`conformance.report.rootcause.root_causes`) and the template.

The record stores the cause's ``kind``; which kind a cause is is decided by one rule,
:func:`conformance.model.causes.kind_of`, in the builder.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from conformance.results.records import Record as _Record, WitnessRecord, field as _field


@dataclasses.dataclass
class CauseWitness(_Record):
    """What a ranked cause's witness did in the run (from the run's witness line)."""

    status: str | None = _field(str)
    label: str | None = _field(str)
    output: str = _field(str, default="")
    script: str = _field(str, default="")
    fixed: bool = _field(bool, default=False)
    extra: dict = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, record: WitnessRecord | None) -> "CauseWitness | None":
        """The witness entry of a cause from the run's witness record (None: none recorded)."""
        if record is None:
            return None
        return cls(status=record.status, label=record.label, output=record.output or "",
                   script=record.script or "", fixed=record.fixed)


@dataclasses.dataclass
class RankedCause(_Record):
    """One root cause of a run, ranked: the tests that fail for one reason, the rules it
    breaks and those it blocks (docs: ``conformance.report.rootcause``)."""

    TYPE: ClassVar[str] = "root cause"
    #: Fields an entry of results.json must have (older files: these alone).
    REQUIRED: ClassVar[tuple[str, ...]] = ("id", "summary", "rules", "tests", "blocks", "rank")

    id: str = _field(str, default="", required=True)
    summary: str = _field(str, default="", required=True)
    source: str = _field(str, default="cluster")     # "expectation", "declaration" or "cluster"
    kind: str = _field(str, default="breaks")        # model.causes.KINDS
    outcomes: list = _field(list, factory=list)
    rules: list = _field(list, factory=list, required=True)
    tests: list = _field(list, factory=list, required=True)
    blocks: list = _field(list, factory=list, required=True)
    level: str | None = _field(str)
    message: str = _field(str, default="")
    witness: CauseWitness | None = _field(dict)
    rank: int = _field(int, default=0, required=True)
    extra: dict = dataclasses.field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in super().to_json().items() if k != "type"}
        out["witness"] = self.witness.to_json() if self.witness is not None else None
        return out

    @classmethod
    def from_json(cls, obj: Any, where: str = "results.json") -> "RankedCause":
        cause = super().from_json(obj, where)
        if isinstance(cause.witness, dict):
            cause.witness = CauseWitness.from_json(cause.witness, f"{where}: witness")
        return cause
