"""reports/results.json: every run of the suites in one versioned file.

Why one file with a version: the page, CI dashboards and the repro tests all read it; a reader
that meets a layout it does not know must refuse it with a message saying what to do, never
misread it. The JSON-lines files of single runs (``--results``, schema
:data:`conformance.results.SCHEMA_VERSION`) are the input; this module gathers them.

Layout (version 2)::

    {"schema": "autograd-conformance/results", "version": 1, "generated": ISO time,
     "catalogue": [{"id", "suite", "level", "statement", "rationale", "source"}, ...],
     "runs": [{"label", "framework", "status", "detail",
               "suite_revision", "suite_dirty", "suite_digest", "adapter", "adapter_spec",
               "framework_version", "python", "python_executable", "device", "platform",
               "started", "conformance_timeout", "leak_check", "finished", "exitstatus",
               "counts", "not_run",
               "tests": [{"nodeid", "rule", "suite", "level", "outcome", "actual", "message",
                          "observed", "expectation", "blocked_by", "duration", "chain"?}],
               "root_causes": [{"id", "summary", "rules", "tests", "blocks", "rank",
                                "kind", "source", "outcomes", "level", "message"}]}]}

The run keys from ``suite_revision`` to ``leak_check`` are its results header's (None where an
older harness did not record them): what a reproduction script of the run's cells is made from
(conformance.repro). ``root_causes`` (conformance.report.rootcause): per run, ranked; ``id`` is the expectations'
``root_cause`` slug or ``auto-<hash>`` for a cluster; ``blocks`` the rules whose tests are
BLOCKED by it; ``kind`` "breaks" (it breaks rules) or "unsupported" (its own tests are only
UNSUPPORTED: a missing feature), every "breaks" cause ranked before every "unsupported" one.

Version 2 added ``blocked_by`` (the prerequisite rule of a BLOCKED test, else null) and
``root_causes``; a version-1
file is migrated through :data:`conformance.results.MIGRATIONS` (the one migration table, for
both the JSON-lines files and this one). Reading the JSON-lines files is
:func:`conformance.results.read_run`'s job; this module only shapes its runs.

``status``: ``complete`` (the end line was written), ``interrupted`` (the run died: no end
line), ``not-installed`` (the framework could not be installed; ``detail`` says why) or
``missing`` (no results were produced; ``detail`` says why).
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any, Iterable

from conformance import results as _results
from conformance.results import ResultsSchemaError

SCHEMA = "autograd-conformance/results"
VERSION = _results.COMBINED_VERSION
STATUSES = ("complete", "interrupted", "not-installed", "missing")
TEST_KEYS = ("nodeid", "rule", "suite", "level", "outcome", "actual", "message", "observed",
             "expectation", "blocked_by", "duration")
#: Keys of each entry of a run's ``root_causes`` (conformance.report.rootcause), ranked.
ROOT_CAUSE_KEYS = ("id", "summary", "rules", "tests", "blocks", "rank")
RUN_KEYS = ("suite_revision", "suite_dirty", "suite_digest", "adapter", "adapter_spec",
            "framework_version", "python", "python_executable", "device", "platform", "started",
            "conformance_timeout", "leak_check", "expectations_note")


#: A results file this version of the report cannot read; the message says what to do.
SchemaError = ResultsSchemaError


# -- single runs (JSON lines) -----------------------------------------------------------------
def read_lines(path: Path, label: str | None = None, framework: str | None = None) -> dict[str, Any]:
    """One run (the layout above) from a ``--results`` JSON-lines file."""
    path = Path(path)
    try:
        record = _results.read_run(path)
    except OSError as exc:
        raise SchemaError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    header, end = record.header, record.end
    tests = []
    for r in record.tests:
        test = {k: r.get(k) for k in TEST_KEYS}
        if r.get("chain") is not None:
            test["chain"] = r["chain"]
        tests.append(test)
    detail = "" if end else "the run ended without its end line (it was killed)"
    if record.truncated:
        detail += "; its last line was cut off mid-write"
    return {"label": label or path.stem, "framework": framework or header.get("adapter"),
            "status": "complete" if end else "interrupted", "detail": detail,
            **{k: header.get(k) for k in RUN_KEYS},
            "finished": end.get("finished") if end else None,
            "exitstatus": end.get("exitstatus") if end else None,
            "counts": end.get("counts") if end else None,
            "not_run": end.get("not_run", []) if end else [],
            "tests": tests}


def placeholder_run(label: str, framework: str, version: str | None, status: str,
                    detail: str) -> dict[str, Any]:
    """A column for a framework that produced no results (not installable, or not run)."""
    if status not in ("not-installed", "missing"):
        raise ValueError(f"placeholder status {status!r}")
    return {"label": label, "framework": framework, "status": status, "detail": detail,
            **{k: None for k in RUN_KEYS}, "adapter": framework, "framework_version": version,
            "root_causes": [],
            "finished": None, "exitstatus": None, "counts": None, "not_run": [], "tests": []}


# -- the combined file ------------------------------------------------------------------------
def catalogue_entries(catalogue) -> list[dict[str, str]]:
    return [{"id": r.id, "suite": r.suite, "level": r.level, "statement": r.statement,
             "rationale": r.rationale, "source": r.source} for r in catalogue.rules.values()]


def build(runs: Iterable[dict[str, Any]], catalogue) -> dict[str, Any]:
    return {"schema": SCHEMA, "version": VERSION,
            "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "catalogue": catalogue_entries(catalogue), "runs": list(runs)}


def write(data: dict[str, Any], path: Path) -> None:
    validate(data)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, default=repr) + "\n", encoding="utf-8")


def migrate(data: dict[str, Any], where: str = "results.json") -> dict[str, Any]:
    """Bring ``data`` to :data:`VERSION` or raise SchemaError saying what to do."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SchemaError(f"{where}: not an autograd-conformance results file "
                          f"(expected \"schema\": {SCHEMA!r})")
    data = _results.migrate_combined(data, where, VERSION)
    validate(data, where)
    return data


def load(path: Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{path}: not JSON ({exc})") from None
    return migrate(data, str(path))


def validate(data: dict[str, Any], where: str = "results.json") -> None:
    """Raise SchemaError if ``data`` does not have the version-1 layout."""
    def need(cond: bool, what: str) -> None:
        if not cond:
            raise SchemaError(f"{where}: {what}")

    need(data.get("schema") == SCHEMA and data.get("version") == VERSION, "wrong schema/version")
    need(isinstance(data.get("catalogue"), list), "\"catalogue\" must be a list")
    need(isinstance(data.get("runs"), list), "\"runs\" must be a list")
    labels = set()
    for run in data["runs"]:
        need(isinstance(run, dict) and isinstance(run.get("label"), str), "a run without label")
        need(run["label"] not in labels, f"run label {run['label']!r} twice")
        labels.add(run["label"])
        need(run.get("status") in STATUSES, f"run {run['label']}: status {run.get('status')!r}")
        need(isinstance(run.get("tests"), list), f"run {run['label']}: tests must be a list")
        need(isinstance(run.get("root_causes", []), list),
             f"run {run['label']}: root_causes must be a list")
        for cause in run.get("root_causes", []):
            need(isinstance(cause, dict) and all(k in cause for k in ROOT_CAUSE_KEYS),
                 f"run {run['label']}: a root cause lacks one of {ROOT_CAUSE_KEYS}")
        for t in run["tests"]:
            missing = [k for k in TEST_KEYS if k not in t]
            need(not missing, f"run {run['label']}: a test lacks {missing}")
