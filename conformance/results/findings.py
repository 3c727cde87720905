"""The differential search's findings file: ``reports/results/explore-<adapter>.jsonl``.

Written by the differential search (``python -m conformance.differential``) and by every
HypoFuzz worker (``conformance.differential.fuzz``, several processes or machines appending
to one file, each whole lines under :func:`conformance.results.locks.locked`): a ``run`` line
per search, a ``divergence`` line per finding (shrunk, with its standalone script),
``fuzz-worker`` lines and an ``end`` line per search (docs/differential.md). Read by the
report's findings section.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.results import json_text
from conformance.results.errors import ResultsSchemaError
from conformance.results.json_fields import first_wrong
from conformance.results.locks import locked

EXPLORE_PREFIX = "explore-"
EXPLORE_SCHEMA = 1


def explore_path(results_dir: Path, adapter: str) -> Path:
    return Path(results_dir) / f"{EXPLORE_PREFIX}{adapter}.jsonl"


def is_explore(path: Path) -> bool:
    return Path(path).name.startswith(EXPLORE_PREFIX)


def append_findings(path: Path, *records: dict[str, Any], lock: bool = True) -> None:
    """Append records to a findings file, whole lines, under its lock (``lock=False``: the
    caller holds it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, default=repr) + "\n" for r in records)
    if lock:
        with locked(path), open(path, "a", encoding="utf-8") as out:
            out.write(text)
    else:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text)


#: The fields readers use, per line type, and the JSON types each may hold (None is always
#: allowed): a line with another type (edited, or written by something else) is refused with
#: its line number instead of surfacing as a TypeError in the report (issue 28).
FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "run": {"schema": (int,), "engine": (str,), "started": (str,), "workers": (int,),
            "host": (str,), "fuzz_run": (str,)},
    "divergence": {"signature": (str,), "category": (str,), "summary": (str,),
                   "script": (str,), "script_lines": (int,), "found": (str,),
                   "framework_version": (str,), "worker": (str,), "expectation": (dict,),
                   "fuzz_run": (str,)},
    "fuzz-worker": {"examples": (int,), "fuzz_run": (str,)},
    "end": {"examples": (int,), "duration": (int, float), "fuzz_run": (str,)},
}

#: A divergence's ``expectation`` (``runner.expectation_for``): the rule the page names, the
#: reason and root cause beside it; a dict without a rule is refused like a wrong type.
EXPECTATION_FIELDS: dict[str, tuple[type, ...]] = {"rule": (str,), "reason": (str,),
                                                   "root_cause": (str,)}


def _field_problem(record: dict[str, Any]) -> str | None:
    """Why ``record`` cannot be read (a field of the wrong type), or None."""
    kind = record.get("type")
    problem = first_wrong(record, FIELDS.get(kind, {}) if isinstance(kind, str) else {})
    expectation = record.get("expectation") if kind == "divergence" else None
    if problem is None and expectation is not None:
        if expectation.get("rule") is None:
            return "field 'expectation' has no 'rule'"
        problem = first_wrong(expectation, EXPECTATION_FIELDS, "expectation.")
    return problem


def read_findings(path: Path) -> list[dict[str, Any]]:
    """The searches of one findings file, oldest first: each ``{"run", "divergences",
    "workers", "end"}`` (``end`` None while a search runs or after it died). HypoFuzz searches
    are told apart by ``fuzz_run``; their lines interleave with others'. A line that is not JSON
    (one cut off by a killed process) is skipped; a schema newer than this reader's, or a line
    with a field of the wrong type (:data:`FIELDS`), is refused naming ``file:line``."""
    searches: list[dict[str, Any]] = []
    by_fuzz_run: dict[str, dict[str, Any]] = {}
    current = None
    for number, record in _numbered(Path(path)):
        problem = _field_problem(record)
        if problem:
            raise ResultsSchemaError(f"{path}:{number}: {problem}; the line was not written by "
                                     f"the differential search (or was edited): remove the "
                                     f"file or move it out of the results directory")
        kind, fuzz_run = record.get("type"), record.get("fuzz_run")
        if kind == "run":
            schema = record.get("schema", 0)
            if isinstance(schema, int) and schema > EXPLORE_SCHEMA:
                raise ResultsSchemaError(f"{path}: findings schema {schema}, newer than this "
                                         f"reader's {EXPLORE_SCHEMA}; upgrade autograd-conformance")
            search = {"run": record, "divergences": [], "workers": [], "end": None}
            searches.append(search)
            if fuzz_run:
                by_fuzz_run[fuzz_run] = search
            else:
                current = search
            continue
        search = by_fuzz_run.get(fuzz_run) if fuzz_run else current
        if search is None:
            continue
        if kind == "divergence":
            search["divergences"].append(record)
        elif kind == "fuzz-worker":
            search["workers"].append(record)
        elif kind == "end":
            search["end"] = record
            if not fuzz_run:
                current = None
    return searches


def findings_lines(path: Path) -> list[dict[str, Any]]:
    """Every JSON object of a findings file, in order (a line cut off mid-write is skipped)."""
    return [record for _, record in _numbered(Path(path))]


def _numbered(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, JSON object) of every whole line of a findings file."""
    try:
        text = json_text.read_text(path, errors="replace")
    except IsADirectoryError:
        raise ResultsSchemaError(f"{path}: a directory, not a findings file") from None
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json_text.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append((number, record))
    return records
