"""``<label>.status.json``: why ``nox -s report`` has no results for a column.

Why a record of its own: the noxfile writes it, and the page and CI's result check read it
to tell "could not be installed here" (a warning for an optional column) from "ran and
produced nothing" (a failure). Read by key in three places, a typo in one would have turned
a failure into a warning; here it is one typed record, read and written in one place.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conformance.outputs import write_text
from conformance.results.errors import ResultsSchemaError
from conformance.results.json_fields import first_wrong

NOT_INSTALLED = "not-installed"
MISSING = "missing"


@dataclasses.dataclass(frozen=True)
class ColumnStatus:
    """``status``: NOT_INSTALLED (the framework's install failed) or MISSING (the run left no
    results); ``detail``: what nox printed last, for the page and for CI's log."""

    status: str
    detail: str = ""

    def __post_init__(self):
        if self.status not in (NOT_INSTALLED, MISSING):
            raise ValueError(f"column status {self.status!r}: {NOT_INSTALLED!r} or {MISSING!r}")

    @property
    def not_installed(self) -> bool:
        return self.status == NOT_INSTALLED


def status_path(results_dir: Path, label: str) -> Path:
    return Path(results_dir) / f"{label}.status.json"


def write_status(results_dir: Path, label: str, status: ColumnStatus) -> Path:
    """Written whole or not at all."""
    return write_text(status_path(results_dir, label), json.dumps(dataclasses.asdict(status)))


def read_status(results_dir: Path, label: str) -> ColumnStatus | None:
    """The column's status, or None when nox -s report wrote none (the run left results).
    A file that is not one nox wrote is ResultsSchemaError naming it: never guessed at."""
    path = status_path(results_dir, label)
    if not path.is_file():
        return None
    refused = f"{path}: not a status file written by nox -s report"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsSchemaError(f"{refused} ({type(exc).__name__}); remove it") from None
    problem = (f"a JSON {type(found).__name__}, not an object" if not isinstance(found, dict)
               else first_wrong(found, {"status": (str,), "detail": (str,)}))
    if problem is None and found.get("status") not in (NOT_INSTALLED, MISSING):
        problem = f"status {found.get('status')!r} is neither {NOT_INSTALLED!r} nor {MISSING!r}"
    if problem:
        raise ResultsSchemaError(f"{refused} ({problem}); remove it")
    return ColumnStatus(found["status"], found.get("detail") or "")


def clear_status(results_dir: Path, label: str) -> None:
    status_path(results_dir, label).unlink(missing_ok=True)
