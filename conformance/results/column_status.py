"""``<label>.status.json``: why ``nox -s report`` has no results for a column.

Why a record of its own: the noxfile writes it, and the page and CI's result check read it
to tell "could not be installed here" (a warning for an optional column) from "ran and
produced nothing" (a failure). Read by key in three places, a typo in one would have turned
a failure into a warning; here it is one typed record, read and written in one place.
"""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Callable

from conformance.outputs import write_text
from conformance.results import json_text
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
    if not os.path.lexists(path):
        return None
    refused = f"{path}: not a status file written by nox -s report"
    try:
        found = json_text.loads(json_text.read_text(path))
    except OSError as exc:  # a directory, a FIFO, a dangling link: never taken for "none"
        raise ResultsSchemaError(f"{refused} ({exc.strerror or type(exc).__name__}); remove "
                                 f"it") from None
    except ValueError as exc:
        raise ResultsSchemaError(f"{refused} (not JSON: {exc}); remove it") from None
    problem = (f"a JSON {type(found).__name__}, not an object" if not isinstance(found, dict)
               else first_wrong(found, {"status": (str,), "detail": (str,)}))
    if problem is None and found.get("status") not in (NOT_INSTALLED, MISSING):
        problem = f"status {found.get('status')!r} is neither {NOT_INSTALLED!r} nor {MISSING!r}"
    if problem:
        raise ResultsSchemaError(f"{refused} ({problem}); remove it")
    return ColumnStatus(found["status"], found.get("detail") or "")


def clear_status(results_dir: Path, label: str) -> None:
    status_path(results_dir, label).unlink(missing_ok=True)


@dataclasses.dataclass
class Attempts:
    """What running one column came to: nox's last output, whether its install failed,
    whether the last attempt left a complete results file, and a line per attempt that did
    not complete (empty when the first one did)."""

    output: str = ""
    install_failed: bool = False
    complete: bool = False
    incomplete: list = dataclasses.field(default_factory=list)


#: At most this many attempts per column; each after the first goes on from the last.
ATTEMPTS = 5


def run_column(run: Callable[[bool], str], results: Path,
               install_failed: Callable[[str], bool], warn: Callable[[str], None],
               resume_first: bool = False, attempts: int = ATTEMPTS) -> Attempts:
    """Run a column (``run(resume)``: nox's session, returning its output; ``resume``: pass
    ``--resume`` so that the run goes on from the incomplete ``results`` file) until it leaves
    a complete results file. A framework that kills or corrupts its test worker is normally
    one CRASH (conformance/survival.py), but a run can still stop (the machine, an OOM kill,
    a crash outside any test): the next attempt resumes it, running only the tests it did
    not record, and the file ends complete, written whole with the earlier lines. Attempts go
    on while each records more tests than the one before (at most ``attempts``); a run that
    left no readable file is started afresh once. Each incomplete attempt's file is kept
    under ``incomplete/``; each is said (``warn``) with why (:func:`why_not_complete`) and
    the end of what nox printed. ``resume_first``: an incomplete file of an earlier
    ``nox -s report`` is there; the first attempt goes on from it."""
    import shutil

    from conformance.results.run_file import resumable, why_not_complete

    results = Path(results)
    done = Attempts()
    resume = resume_first and resumable(results) is not None
    recorded = -1
    for attempt in range(1, attempts + 1):
        done.output = run(resume) or ""
        done.install_failed = (not done.incomplete and not results.is_file()
                               and install_failed(done.output))
        if done.install_failed:
            return done
        why = why_not_complete(results)  # "" for a complete run: the file is read once
        done.complete = not why
        if done.complete:
            return done
        tail = " / ".join(done.output.strip().splitlines()[-3:])[-300:]
        done.incomplete.append(f"attempt {attempt}: {why}; nox said: {tail}")
        left = resumable(results)
        if left is not None:
            kept = results.parent / "incomplete" / f"{results.stem}.attempt-{attempt}.jsonl"
            kept.parent.mkdir(exist_ok=True)
            shutil.copyfile(results, kept)
            why += f" (a copy kept as {kept})"
        progressed = left is not None and len(left.tests) > recorded
        fresh = left is None and attempt == 1
        again = attempt < attempts and (progressed or fresh)
        resume = left is not None
        recorded = len(left.tests) if left is not None else recorded
        warn(f"{results.stem}: the run did not complete: {why}"
             + (("; running it once more, going on from its last recorded test" if resume
                 else "; running it once more") if again else ""))
        if not again:
            return done
    return done
