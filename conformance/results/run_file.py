"""The ``--results`` file of one run: a header line, one line per finished test, an end line.

Why per test and flushed: a report written at the end of the session dies with the session (a
segfault, an OOM kill); lines already flushed survive. Records are assembled in the controller
process from the phase reports (:class:`TestRecords`), so the same code works in-process and
under pytest-xdist, where a worker that dies yields one CRASH record and the run goes on. One
run writes a file at a time (:class:`conformance.results.locks.OwnerLock`).

Reading back (:func:`read_run`) checks every line against its record class and names
``file:line`` and the field when one is wrong; a run killed mid-write (no end line, a last
line cut off) reads as interrupted, never as an error.
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

from conformance import time_scale
from conformance.outcomes import Outcome
from conformance.results import json_text, migrations
from conformance.results.errors import ResultsSchemaError
from conformance.results.locks import InUse, OwnerLock
from conformance.results.phases import PhaseInfo, chain_of, phase_info
from conformance.results import records
from conformance.results.records import RunEnd, RunHeader, TestRecord, WitnessRecord


#: a git command's limit on a quiet machine (conformance/time_scale.py scales it)
GIT_SECONDS = 60


def git_revision(path: Path) -> dict[str, Any]:
    """The commit the suites come from and whether they differ from it (None outside git)."""
    def git(*args: str) -> str | None:
        try:
            # a limit on a hang (60 s on a quiet machine), scaled by the load: a git that is
            # only slow on a busy machine must not lose the run its revision (and its page
            # the reproduction scripts)
            done = subprocess.run(["git", "-C", str(path), *args], capture_output=True,
                                  text=True, timeout=time_scale.scaled(GIT_SECONDS))
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    revision = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", ".") if revision else None
    return {"suite_revision": revision, "suite_dirty": bool(status) if status is not None else None}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# -- writing ----------------------------------------------------------------------------------
class TestRecords:
    """Assembles setup/call/teardown reports into one :class:`TestRecord` per test."""

    __test__ = False  # not a pytest test class

    def __init__(self, run: RunHeader) -> None:
        self.context = {name: getattr(run, name) for name in TestRecord.CONTEXT}
        self._pending: dict[str, dict[str, Any]] = {}

    def add(self, report) -> TestRecord | None:
        """Feed one phase report; returns the test's record once the test is finished."""
        info = phase_info(report)
        if report.when == "???" or (info is not None and info.crash):
            self._pending.pop(report.nodeid, None)
            return self._record(report.nodeid, info or PhaseInfo(), report.duration or 0.0)
        pending = self._pending.setdefault(report.nodeid, {"duration": 0.0, "info": None,
                                                           "meta": None, "chain": None})
        pending["duration"] += report.duration or 0.0
        if pending["chain"] is None:
            pending["chain"] = chain_of(report)
        if info is not None:
            pending["meta"] = pending["meta"] or info
            if info.outcome is not None and self._decides(pending["info"], info):
                pending["info"] = info
        if report.when != "teardown":
            return None
        del self._pending[report.nodeid]
        if pending["info"] is None and pending["meta"] is None:
            return None  # not a suite test
        record = self._record(report.nodeid, pending["info"] or pending["meta"],
                              pending["duration"])
        record.chain = pending["chain"]  # only leaks have one: other lines keep their keys
        return record

    def meta(self, nodeid: str) -> PhaseInfo:
        """What is known so far of an unfinished test (its rule, from the setup report)."""
        return (self._pending.get(nodeid) or {}).get("meta") or PhaseInfo()

    @staticmethod
    def _decides(current: PhaseInfo | None, new: PhaseInfo) -> bool:
        """A later phase replaces the verdict unless an earlier one already failed the test."""
        return current is None or (not current.fails and new.fails)

    def _record(self, nodeid: str, info: PhaseInfo, duration: float) -> TestRecord:
        return TestRecord(**self.context, nodeid=nodeid,
                          **{name: getattr(info, name) for name in TestRecord.phase_fields()},
                          duration=round(duration, 6))


class Tally:
    """Counts of final outcomes per suite, for the terminal summary and the end line."""

    def __init__(self) -> None:
        self.by_suite: dict[str, Counter] = defaultdict(Counter)
        self.unsupported: Counter = Counter()
        self.seen: set[str] = set()
        self.not_run: list[str] = []  # collected suite tests that produced no record

    def add(self, record: TestRecord) -> None:
        self.seen.add(record.nodeid)
        self.by_suite[record.suite or "?"][record.outcome or str(Outcome.ERROR)] += 1
        if record.actual == str(Outcome.UNSUPPORTED):
            message = (record.message or "(no message)").splitlines()[0]
            self.unsupported[message] += 1

    def totals(self) -> Counter:
        total: Counter = Counter()
        for counts in self.by_suite.values():
            total.update(counts)
        return total


class ResultsFile:
    """The ``--results`` JSON-lines file of the run that holds it (one writer at a time:
    :class:`ResultsInUse` names the other run's pid)."""

    def __init__(self, path: Path, kept: list | None = None) -> None:
        """``kept``: the records of an earlier, incomplete run of the same tests that this
        run resumes (its header first); the file is rewritten whole with them (never a part
        of them) before this run appends its own lines."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = OwnerLock(path)  # before truncating: never cut another run's file
        try:
            if kept:
                from conformance.outputs import write_text

                write_text(path, "".join(json.dumps(r.to_json(), default=repr) + "\n"
                                         for r in kept))
            self._fh: TextIO = open(path, "a" if kept else "w", encoding="utf-8")
        except BaseException:
            self._lock.release()
            raise

    def write(self, record: RunHeader | TestRecord | WitnessRecord | RunEnd) -> None:
        # ASCII JSON (json.dumps escapes): a message holding an undecodable byte (a lone
        # surrogate, as os.fsdecode makes) never fails the write
        self._fh.write(json.dumps(record.to_json(), default=repr) + "\n")
        self._fh.flush()

    def header(self, run: RunHeader, suites_dir: Path, rules: int) -> RunHeader:
        """Write the run line: ``run``'s adapter, framework and options, completed with the
        suites' git revision (:func:`git_revision`), the start time, the interpreter, the
        platform and the command line."""
        header = dataclasses.replace(
            run, schema=records.SCHEMA_VERSION, **git_revision(suites_dir), started=_now(),
            python_executable=sys.executable, platform=platform.platform(), rules=rules,
            argv=sys.argv[1:])
        self.write(header)
        return header

    def close(self, exitstatus: int, tally: Tally, error: str | None = None,
              interrupted: bool = False) -> RunEnd:
        """Write the end line (``interrupted``: tests were not run, see :class:`RunEnd`) and
        give the file up."""
        end = RunEnd(exitstatus=int(exitstatus), finished=_now(), counts=dict(tally.totals()),
                     not_run=list(tally.not_run), error=error,
                     interrupted=True if interrupted else None)
        try:
            self.write(end)
        finally:
            self.release()
        return end

    def release(self) -> None:
        """Close the file and its lock (without an end line: the run died)."""
        if not self._fh.closed:
            self._fh.close()
        self._lock.release()


ResultsInUse = InUse


# -- reading ----------------------------------------------------------------------------------
def _parse_lines(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """(line number, JSON object) of each line of a results file, and whether its last line
    was cut off: a run killed while writing leaves a partial last line, dropped here when it
    has no newline after it; a bad line anywhere else is an error."""
    try:
        text = json_text.read_text(path)
    except UnicodeDecodeError as exc:
        raise ResultsSchemaError(f"{path}: not a text file (byte {exc.start} is not UTF-8); a "
                                 f"--results file is JSON lines: remove it or run the suites "
                                 f"again") from None
    except IsADirectoryError:
        raise ResultsSchemaError(f"{path}: a directory, not a results file") from None
    except OSError as exc:  # a FIFO, a dangling link, a file it may not read
        raise ResultsSchemaError(f"{path}: cannot be read ({exc.strerror or exc}); a --results "
                                 f"file is a regular file of JSON lines: remove it or run the "
                                 f"suites again") from None
    ends_with_newline = text.endswith("\n")
    lines = text.splitlines()
    del text  # the file's text, its lines and their objects at once were a 200 MB file's peak
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    out, truncated = [], False
    for lineno in range(1, len(lines) + 1):
        line, lines[lineno - 1] = lines[lineno - 1], ""  # each line's text goes once parsed
        if not line.strip():
            continue
        try:
            obj = json_text.loads(line)
        except ValueError as exc:
            if lineno == last and not ends_with_newline:
                truncated = True  # cut off mid-write: no newline after it
                break
            raise ResultsSchemaError(f"{path}:{lineno}: not a JSON line ({exc})") from None
        if not isinstance(obj, dict):
            raise ResultsSchemaError(f"{path}:{lineno}: not a JSON object; is it a --results "
                                     f"file?")
        out.append((lineno, obj))
    return out, truncated


def _read(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    numbered, truncated = _parse_lines(path)
    if not numbered or numbered[0][1].get("type") != "run":
        raise ResultsSchemaError(f"{path}:1: no run header (a line with \"type\": \"run\"); "
                                 f"not a results file of autograd-conformance")
    lines = migrations.migrate_lines([obj for _, obj in numbered], str(path))
    numbers = [n for n, _ in numbered] if len(lines) == len(numbered) else \
        list(range(1, len(lines) + 1))
    return list(zip(numbers, lines)), truncated


def read_results(path: Path) -> list[dict[str, Any]]:
    """The parsed lines of a ``--results`` file, migrated to the current schema, as plain
    JSON objects (:func:`read_run` gives them typed and checked)."""
    return [obj for _, obj in _read(Path(path))[0]]


#: How much of a file :func:`is_results_file` reads: a header line is a few kilobytes.
_HEADER_BYTES = 1 << 20


def is_results_file(path: Path) -> bool:
    """Whether ``path`` (a regular file) may be replaced by a run's results: it is empty, or
    its first line is a run header (``{"type": "run", ...}``: a results file of this project,
    or a findings file of the differential search), or the start of one cut off mid-write.
    Why: ``--results`` truncated whatever it was given, a document included."""
    with open(path, "rb") as fh:
        head = fh.read(_HEADER_BYTES)
    first, newline, _ = head.lstrip().partition(b"\n")
    if not first.strip():
        return True  # empty: nothing to lose
    try:
        obj = json_text.loads(first)
    except ValueError:  # the writer's first bytes (json.dumps puts "type" first), cut off
        return not newline and first.startswith(b'{"type": "run"')
    return isinstance(obj, dict) and obj.get("type") == RunHeader.TYPE


@dataclasses.dataclass
class Run:
    """One results file, read: its header, its test lines, its end line (None when the run
    died before writing it), whether a last line was cut off, and its witness lines (none in
    files of older harnesses or of runs with ``--no-witnesses``)."""

    path: Path
    header: RunHeader
    tests: list[TestRecord]
    end: RunEnd | None
    truncated: bool = False
    witnesses: list[WitnessRecord] = dataclasses.field(default_factory=list)

    @property
    def complete(self) -> bool:
        """The run wrote its end line and every collected test ran."""
        return self.end is not None and self.end.complete

    @property
    def interruption(self) -> str:
        """Why the run is incomplete (one line), or "" when it is complete."""
        why = []
        if self.end is None:
            why.append("the run ended without its end line (it was killed)")
        elif not self.end.complete:
            why.append(f"the run was interrupted: {len(self.end.not_run)} collected tests did "
                       f"not run (exit status {self.end.exitstatus})")
        if self.truncated:
            why.append("its last line was cut off mid-write")
        return "; ".join(why)


def read_run(path: Path) -> Run:
    """A results file as a :class:`Run`. ResultsSchemaError (``file:line``, what is wrong,
    what to do) for a line that is not a JSON object (except a last line cut off mid-write,
    dropped), a file without a run header, a schema version it cannot migrate, or a field of
    the wrong type."""
    path = Path(path)
    lines, truncated = _read(path)
    header = RunHeader.from_json(lines[0][1], f"{path}:{lines[0][0]}")
    (n_last, last), several = lines[-1], len(lines) > 1
    tests, witnesses = [], []
    for i in range(len(lines)):  # each line's object goes once it is a record (memory)
        (n, obj), lines[i] = lines[i], None
        kind = obj.get("type")
        if kind == TestRecord.TYPE:
            tests.append(TestRecord.from_json(obj, f"{path}:{n}"))
        elif kind == WitnessRecord.TYPE:
            witnesses.append(WitnessRecord.from_json(obj, f"{path}:{n}"))
    end = RunEnd.from_json(last, f"{path}:{n_last}") if several and \
        last.get("type") == RunEnd.TYPE else None
    return Run(path, header, tests, end, truncated, witnesses)


def scan(path: Path):
    """Every line of a results file that reads as a record (:class:`RunHeader`,
    :class:`TestRecord`, :class:`WitnessRecord` or :class:`RunEnd`), skipping those that do not: for a tool that
    reads a run still being written or killed mid-line (conformance.mutants)."""
    for line in json_text.read_text(Path(path), errors="replace").splitlines():
        try:
            obj = json_text.loads(line)
            kind = records.BY_TYPE.get(obj.get("type")) if isinstance(obj, dict) else None
            if kind is not None:
                yield kind.from_json(obj, str(path))
        except (ValueError, TypeError):  # ResultsSchemaError is a ValueError
            continue


def end_line(path: Path) -> RunEnd | None:
    """The end line of a complete, readable, current results file; else None (missing,
    killed, interrupted, or of a schema this checkout cannot read: all mean "run it again")."""
    try:
        run = read_run(path)
    except (OSError, ResultsSchemaError):
        return None
    return run.end if run.complete else None


def resumable(path: Path) -> Run | None:
    """The incomplete run in ``path`` that a new run can go on from (its header and the
    tests and witnesses it recorded, its end line dropped), or None: no file, one that
    cannot be read, or a complete run (nothing to resume: run it again)."""
    try:
        run = read_run(Path(path))
    except (OSError, ResultsSchemaError):
        return None
    return None if run.complete else run


def why_not_complete(path: Path) -> str:
    """Why :func:`end_line` finds no complete run in ``path`` (one line), or "" when it does:
    for CI, whose log keeps only the tail, so the failure line must carry its own reason."""
    path = Path(path)
    if not path.is_file():
        return f"{path} does not exist"
    try:
        run = read_run(path)
    except (OSError, ResultsSchemaError) as exc:
        return f"{path} cannot be read: {exc}"
    if run.complete:
        return ""
    last = run.tests[-1].nodeid if run.tests else "none"
    return f"{run.interruption} after {len(run.tests)} test lines (the last: {last})"
