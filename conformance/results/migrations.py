"""The one migration table, for both documents this package versions.

Why one table: a reader meeting an older file either migrates it step by step or refuses it
saying what to do; with the steps of the two documents in one place, a version bump of either
is one entry here plus the record or layout it produces.

The documents: ``lines`` (a ``--results`` JSON-lines file of one run, versioned by its
header's ``schema``: :data:`conformance.results.records.SCHEMA_VERSION`) and ``results.json``
(every run, :mod:`conformance.results.combined`, versioned by ``version``).
"""
from __future__ import annotations

from typing import Any, Callable

from conformance.results import legacy, records
from conformance.results.errors import ResultsSchemaError
from conformance.outputs import regenerate_advice

LINES = "lines"
COMBINED = "results.json"
#: The combined file's current version (its layout: :mod:`conformance.results.combined`).
COMBINED_VERSION = 4


def _combined_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """results.json 2: tests carry ``blocked_by``, runs ``root_causes`` (empty here: version
    1 recorded too little to find them; rebuild the report from the .jsonl files for them)."""
    for run in data.get("runs", []):
        if not isinstance(run, dict):
            continue  # validation names it
        run.setdefault("root_causes", [])
        for test in run.get("tests", []) if isinstance(run.get("tests"), list) else ():
            if isinstance(test, dict):
                test.setdefault("blocked_by", None)
    return {**data, "version": 2}


def _combined_2_to_3(data: dict[str, Any]) -> dict[str, Any]:
    """results.json 3: tests carry ``missing_feature`` (from an older harness's message)."""
    for run in data.get("runs", []):
        if isinstance(run, dict) and isinstance(run.get("tests"), list):
            for test in run["tests"]:
                legacy.fill_missing_feature(test)
    return {**data, "version": 3}


def _combined_3_to_4(data: dict[str, Any]) -> dict[str, Any]:
    """results.json 4: tests carry ``not_checked`` (the side observations they skipped; an
    older harness skipped none: it judged a test whole or not at all)."""
    for run in data.get("runs", []):
        if isinstance(run, dict) and isinstance(run.get("tests"), list):
            for test in run["tests"]:
                if isinstance(test, dict):
                    test.setdefault("not_checked", None)
    return {**data, "version": 4}


def _lines_1_to_2(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results schema 2: test lines carry ``missing_feature`` (from an older harness's
    message)."""
    for line in lines[1:]:
        if isinstance(line, dict) and line.get("type") == "test":
            legacy.fill_missing_feature(line)
    return lines


#: document -> {version: function turning that version's content into the next version's}.
#: For LINES the content is the list of parsed lines (dicts); for COMBINED the parsed
#: results.json (the function sets the new ``version``).
#: (Lines schema 1 is the first versioned one.)
MIGRATIONS: dict[str, dict[int, Callable[[Any], Any]]] = {
    LINES: {1: _lines_1_to_2}, COMBINED: {1: _combined_1_to_2, 2: _combined_2_to_3, 3: _combined_3_to_4}}


def migrate_lines(lines: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    """The parsed lines of a ``--results`` file (the first is its header) brought to
    :data:`records.SCHEMA_VERSION`; ResultsSchemaError (saying what to do) when they cannot be."""
    current, schema = records.SCHEMA_VERSION, lines[0].get("schema", 0)
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ResultsSchemaError(f"{where}:1: schema {schema!r} is not a version number")
    if schema > current:
        raise ResultsSchemaError(f"{where}:1: written with results schema {schema}, newer than "
                                 f"this reader's {current}; upgrade autograd-conformance")
    while schema < current:
        step = MIGRATIONS[LINES].get(schema)
        if step is None:
            what = "no schema version (a harness from before versioned results)" if schema == 0 \
                else f"results schema {schema}"
            raise ResultsSchemaError(f"{where}:1: written with {what}; this reader reads schema "
                                     f"{current} and cannot migrate it: re-run the suite "
                                     f"with --results to write a current file")
        lines = step(lines)
        schema += 1
        lines[0]["schema"] = schema
    return lines


def migrate_combined(data: Any, where: str, version: int | None = None) -> Any:
    """``reports/results.json`` content brought to :data:`COMBINED_VERSION` (or ``version``)
    through ``MIGRATIONS[COMBINED]``; ResultsSchemaError (saying what to do) when it cannot be."""
    target = COMBINED_VERSION if version is None else version
    current = data.get("version")
    if not isinstance(current, int) or isinstance(current, bool):
        raise ResultsSchemaError(f"{where}: no integer \"version\"; regenerate it with "
                                 f"{regenerate_advice()}")
    if current > target:
        raise ResultsSchemaError(f"{where}: schema version {current} is newer than this report "
                                 f"reads ({target}); update this checkout")
    while current < target:
        step = MIGRATIONS[COMBINED].get(current)
        if step is None:
            raise ResultsSchemaError(f"{where}: schema version {current} is older than {target} "
                                     f"and has no migration; regenerate it with {regenerate_advice()}")
        data = step(data)
        current = data["version"]
    return data
