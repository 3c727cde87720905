"""One record per finished test, written to a JSON-lines file the moment it is known.

Why per test and flushed: a report written at the end of the session dies with the
session (a segfault, an OOM kill); lines already flushed survive. Records are assembled
in the controller process from the phase reports, so the same code works in-process and
under pytest-xdist, where a worker that dies yields one CRASH record and the run goes on.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import platform
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, TextIO

from conformance.outcomes import Outcome

SCHEMA_VERSION = 1
PROPERTY = "conformance"  # key of the per-phase info in report.user_properties


def phase_info(report) -> dict | None:
    """The harness's info attached to one phase report (survives xdist serialisation)."""
    for entry in getattr(report, "user_properties", ()):
        if len(entry) == 2 and entry[0] == PROPERTY:
            return entry[1]
    return None


def chain_of(report) -> dict | None:
    """A leak's keep-alive chain attached to a phase report (conformance.leakchains)."""
    for entry in getattr(report, "user_properties", ()):
        if len(entry) == 2 and entry[0] == "conformance-chain":
            return entry[1]
    return None


def git_revision(path: Path) -> dict[str, Any]:
    """The commit the suites come from and whether they differ from it (None outside git)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(path), *args], capture_output=True,
                                  text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    revision = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", ".") if revision else None
    return {"suite_revision": revision, "suite_dirty": bool(status) if status is not None else None}


def suite_source(suites_dir: Path) -> dict[str, Any]:
    """``suite_digest``: the hash of the suite source the run reads (conformance.repro.source),
    None for suites outside a ``conformance/suites`` directory of this layout."""
    from conformance.repro import source

    suites_dir = Path(suites_dir).resolve()
    root = suites_dir.parents[1] if len(suites_dir.parents) > 1 else suites_dir
    if suites_dir != root / source.SUITES:
        return {"suite_digest": None}
    return {"suite_digest": source.digest(root)}


class TestRecords:
    """Assembles setup/call/teardown reports into one record per test."""

    def __init__(self, context: dict[str, Any]) -> None:
        self.context = context
        self._pending: dict[str, dict[str, Any]] = {}

    def add(self, report) -> dict[str, Any] | None:
        """Feed one phase report; returns the test's record once the test is finished."""
        info = phase_info(report)
        if report.when == "???" or (info and info.get("crash")):
            self._pending.pop(report.nodeid, None)
            return self._record(report.nodeid, info or {}, report.duration or 0.0)
        pending = self._pending.setdefault(report.nodeid, {"duration": 0.0, "info": None,
                                                           "meta": None})
        pending["duration"] += report.duration or 0.0
        if chain_of(report) is not None and "chain" not in pending:
            pending["chain"] = chain_of(report)
        if info is not None:
            pending["meta"] = pending["meta"] or info
            if info.get("outcome") is not None and self._decides(pending["info"], info):
                pending["info"] = info
        if report.when != "teardown":
            return None
        del self._pending[report.nodeid]
        if pending["info"] is None and pending["meta"] is None:
            return None  # not a suite test
        record = self._record(report.nodeid, pending["info"] or pending["meta"],
                              pending["duration"])
        if pending.get("chain") is not None:
            record["chain"] = pending["chain"]  # only for leaks: other lines keep their keys
        return record

    def meta(self, nodeid: str) -> dict[str, Any]:
        """What is known so far of an unfinished test (its rule, from the setup report)."""
        return (self._pending.get(nodeid) or {}).get("meta") or {}

    @staticmethod
    def _decides(current: dict | None, new: dict) -> bool:
        """A later phase replaces the verdict unless an earlier one already failed the test."""
        return current is None or (not current.get("fails") and new.get("fails"))

    def _record(self, nodeid: str, info: dict, duration: float) -> dict[str, Any]:
        record = {"type": "test", **self.context, "nodeid": nodeid}
        for key in ("rule", "suite", "level", "outcome", "actual", "message", "observed",
                    "expectation", "blocked_by"):
            record[key] = info.get(key)
        record["duration"] = round(duration, 6)
        return record


class Tally:
    """Counts of final outcomes per suite, for the terminal summary and the end line."""

    def __init__(self) -> None:
        self.by_suite: dict[str, Counter] = defaultdict(Counter)
        self.unsupported: Counter = Counter()
        self.seen: set[str] = set()
        self.not_run: list[str] = []  # collected suite tests that produced no record

    def add(self, record: dict[str, Any]) -> None:
        outcome = record.get("outcome") or str(Outcome.ERROR)
        self.by_suite[record.get("suite") or "?"][outcome] += 1
        if record.get("actual") == str(Outcome.UNSUPPORTED):
            message = (record.get("message") or "(no message)").splitlines()[0]
            self.unsupported[message] += 1

    def totals(self) -> Counter:
        total: Counter = Counter()
        for counts in self.by_suite.values():
            total.update(counts)
        return total


class ResultsFile:
    """The ``--results`` JSON-lines file: a run header, one line per test, an end line."""

    def __init__(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fh: TextIO = open(path, "w", encoding="utf-8")

    def write(self, obj: dict[str, Any]) -> None:
        self._fh.write(json.dumps(obj, default=repr) + "\n")
        self._fh.flush()

    def header(self, context: dict[str, Any], suites_dir: Path, rules: int) -> None:
        """The run line: what a reproduction script of any of its cells needs besides the
        test lines (conformance.repro): the suites' git revision and digest
        (:func:`suite_source`), the adapter spec, framework version and device (``context``),
        the interpreter that ran it, and the options that turn a test into TIMEOUT or LEAK."""
        self.write({"type": "run", "schema": SCHEMA_VERSION, **git_revision(suites_dir),
                    **suite_source(suites_dir),
                    "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    **context, "python_executable": sys.executable,
                    "platform": platform.platform(), "rules": rules, "argv": sys.argv[1:]})

    def close(self, exitstatus: int, tally: Tally, error: str | None = None) -> None:
        end = {"type": "end", "exitstatus": int(exitstatus),
               "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
               "counts": dict(tally.totals()), "not_run": tally.not_run}
        if error is not None:  # the run stopped before any test (e.g. the framework crashed)
            end["error"] = error
        self.write(end)
        self._fh.close()


# -- reading a results file back ---------------------------------------------------------
# Every reader of results goes through here: the report (conformance.report.schema), drafting
# expectations (conformance.expectations_draft), the noxfile's reuse check and .ci/. Standard
# library only (conformance.outcomes imports no third-party package at module level).
class ResultsSchemaError(ValueError):
    """A results file this version cannot read; the message names the file, line, version."""


#: The two documents this module versions: the ``--results`` JSON-lines file of one run, and
#: ``reports/results.json`` (every run, written by :mod:`conformance.report.schema`).
LINES = "lines"
COMBINED = "results.json"
#: The combined file's current version (its layout: :mod:`conformance.report.schema`).
COMBINED_VERSION = 2


def _combined_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """results.json 2: tests carry ``blocked_by``, runs ``root_causes`` (empty here: version
    1 recorded too little to find them; rebuild the report from the .jsonl files for them)."""
    for run in data.get("runs", []):
        run.setdefault("root_causes", [])
        for test in run.get("tests", []):
            test.setdefault("blocked_by", None)
    return {**data, "version": 2}


#: The one migration table: document -> {version: function turning that version's content
#: into the next version's}. For LINES the content is the list of records; for COMBINED the
#: parsed results.json (the function sets the new ``version``).
#: (Lines schema 1 is the first versioned one; add ``MIGRATIONS[LINES][1]`` with schema 2.)
MIGRATIONS: dict[str, dict[int, Any]] = {LINES: {}, COMBINED: {1: _combined_1_to_2}}


def _parse_lines(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """The JSON objects of a results file, and whether its last line was cut off.

    A run killed while writing leaves a partial last line: that line is dropped (and
    reported) when the file has no end line; a bad line anywhere else is an error.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsSchemaError(f"{path}: not a text file (byte {exc.start} is not UTF-8); a "
                                 f"--results file is JSON lines: remove it or run the suites "
                                 f"again") from None
    except IsADirectoryError:
        raise ResultsSchemaError(f"{path}: a directory, not a results file") from None
    lines = text.splitlines()
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    records, truncated = [], False
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            if lineno == last and not text.endswith("\n"):
                truncated = True  # cut off mid-write: no newline after it
                break
            raise ResultsSchemaError(f"{path}:{lineno}: not a JSON line ({exc})") from None
        if not isinstance(record, dict):
            raise ResultsSchemaError(f"{path}:{lineno}: not a JSON object; is it a --results "
                                     f"file?")
        records.append(record)
    return records, truncated


def read_results(path: Path) -> list[dict[str, Any]]:
    """The records of a ``--results`` file, migrated to :data:`SCHEMA_VERSION`.

    Raises :class:`ResultsSchemaError` for a line that is not a JSON object (except a last
    line cut off mid-write, which is dropped), a file without a run header, or a schema
    version it cannot migrate (named, with what to do).
    """
    path = Path(path)
    records, _ = _parse_lines(path)
    if not records or records[0].get("type") != "run":
        raise ResultsSchemaError(f"{path}:1: no run header (a line with \"type\": \"run\"); "
                                 f"not a results file of autograd-conformance")
    schema = records[0].get("schema", 0)
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise ResultsSchemaError(f"{path}:1: schema {schema!r} is not a version number")
    if schema > SCHEMA_VERSION:
        raise ResultsSchemaError(f"{path}:1: written with results schema {schema}, newer than "
                                 f"this reader's {SCHEMA_VERSION}; upgrade autograd-conformance")
    while schema < SCHEMA_VERSION:
        migrate = MIGRATIONS[LINES].get(schema)
        if migrate is None:
            what = "no schema version (a harness from before versioned results)" if schema == 0 \
                else f"results schema {schema}"
            raise ResultsSchemaError(f"{path}:1: written with {what}; this reader reads schema "
                                     f"{SCHEMA_VERSION} and cannot migrate it: re-run the suite "
                                     f"with --results to write a current file")
        records = migrate(records)
        schema += 1
        records[0]["schema"] = schema
    return records


@dataclasses.dataclass
class Run:
    """One results file, read: its header, its test lines, its end line (None when the run
    was interrupted before writing it) and whether a last line was cut off."""

    path: Path
    header: dict[str, Any]
    tests: list[dict[str, Any]]
    end: dict[str, Any] | None
    truncated: bool = False

    @property
    def complete(self) -> bool:
        return self.end is not None


def read_run(path: Path) -> Run:
    """A results file as a :class:`Run` (see :func:`read_results` for what it refuses)."""
    path = Path(path)
    records = read_results(path)
    _, truncated = _parse_lines(path)
    end = records[-1] if len(records) > 1 and records[-1].get("type") == "end" else None
    tests = [r for r in records if r.get("type") == "test"]
    return Run(path, records[0], tests, end, truncated)


def end_line(path: Path) -> dict[str, Any] | None:
    """The end line of a complete, readable, current results file; else None (missing,
    interrupted, or of a schema this checkout cannot read: all mean "run it again")."""
    try:
        return read_run(path).end
    except (OSError, ResultsSchemaError):
        return None


def migrate_combined(data: Any, where: str, version: int | None = None) -> Any:
    """``reports/results.json`` content brought to :data:`COMBINED_VERSION` through
    ``MIGRATIONS[COMBINED]``; ResultsSchemaError (saying what to do) when it cannot be."""
    target = COMBINED_VERSION if version is None else version
    current = data.get("version")
    if not isinstance(current, int) or isinstance(current, bool):
        raise ResultsSchemaError(f"{where}: no integer \"version\"; regenerate it with "
                                 f"nox -s report")
    if current > target:
        raise ResultsSchemaError(f"{where}: schema version {current} is newer than this report "
                                 f"reads ({target}); update this checkout")
    while current < target:
        step = MIGRATIONS[COMBINED].get(current)
        if step is None:
            raise ResultsSchemaError(f"{where}: schema version {current} is older than {target} "
                                     f"and has no migration; regenerate it with nox -s report")
        data = step(data)
        current = data["version"]
    return data


# -- differential findings: reports/results/explore-<adapter>.jsonl ------------------------
# Written by the differential search (``python -m conformance.differential``) and by every
# HypoFuzz worker (``conformance.differential.fuzz``, several processes or machines appending
# to one file): a ``run`` line per search, a ``divergence`` line per finding (shrunk, with its
# standalone script), ``fuzz-worker`` lines and an ``end`` line per search (docs/differential.md).
EXPLORE_PREFIX = "explore-"
EXPLORE_SCHEMA = 1


def explore_path(results_dir: Path, adapter: str) -> Path:
    return Path(results_dir) / f"{EXPLORE_PREFIX}{adapter}.jsonl"


def is_explore(path: Path) -> bool:
    return Path(path).name.startswith(EXPLORE_PREFIX)


class _Locked:
    """An exclusive ``flock`` on ``<path>.lock``: appends from several processes (or machines
    sharing a file system) stay whole lines."""

    def __init__(self, path: Path) -> None:
        self.lock_path = Path(f"{path}.lock")

    def __enter__(self):
        import fcntl

        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(self.lock_path, "a")  # noqa: SIM115 - closed in __exit__
        fcntl.flock(self._fh, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        import fcntl

        fcntl.flock(self._fh, fcntl.LOCK_UN)
        self._fh.close()


def locked(path: Path) -> _Locked:
    return _Locked(path)


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


def read_findings(path: Path) -> list[dict[str, Any]]:
    """The searches of one findings file, oldest first: each ``{"run", "divergences",
    "workers", "end"}`` (``end`` None while a search runs or after it died). HypoFuzz searches
    are told apart by ``fuzz_run``; their lines interleave with others'. A line that is not JSON
    (one cut off by a killed process) is skipped; a schema newer than this reader's is refused."""
    records = findings_lines(Path(path))
    searches: list[dict[str, Any]] = []
    by_fuzz_run: dict[str, dict[str, Any]] = {}
    current = None
    for record in records:
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
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except IsADirectoryError:
        raise ResultsSchemaError(f"{path}: a directory, not a findings file") from None
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
