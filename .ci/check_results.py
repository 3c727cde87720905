"""After `nox -s report`: every framework's conformance run must have ended cleanly, and the
reproduction scripts of a sample of each run's cells must reproduce what the cells show.

Which runs exist and which are required come from the adapters (``runs`` in adapters/*.py).
A required run must have passed against its expectations (exit status 0). An optional one
must too, unless it could not be installed on this machine (the report shows that column
as "not installed"; here it is a warning, since CI's budget and network decide it).

Scripts: ``python -m conformance.repro.check`` on every complete run (a sample of SAMPLE cells:
one of each outcome the run has, then others), in the interpreter the run recorded (its nox
venv), and on a committed torch run recorded at an older suite revision (OLD_RUN: its scripts
come from ``git show`` of that revision), in the torch run's interpreter.
"""
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from adapters.base import report_runs  # noqa: E402  (standard library only)
from conformance.results import end_line as _end_line  # noqa: E402  (standard library only)
from conformance.results import why_not_complete  # noqa: E402  (standard library only)
from conformance.results.column_status import read_status  # noqa: E402  (standard library only)

RESULTS = Path("reports/results")
REQUIRED = [run.label for _, run in report_runs() if run.required]
OPTIONAL = [run.label for _, run in report_runs() if not run.required]


def end_line(label):
    return _end_line(RESULTS / f"{label}.jsonl")


SAMPLE = "6"
OLD_RUN = Path("tests/report/data/torch-at-b301759.jsonl")


def _recorded_python(path: Path):
    from conformance.results import read_run  # noqa: E402  (standard library only)

    python = read_run(path).header.python_executable
    return python if python and Path(python).exists() else None


def check_scripts(labels) -> list:
    """Run conformance.repro.check on each complete run (and OLD_RUN); the failures."""
    failed = []
    for label in labels:
        path = RESULTS / f"{label}.jsonl"
        if end_line(label) is None:
            continue
        python = _recorded_python(path)
        if python is None:
            failed.append(f"{label}: the interpreter its run recorded is gone; run nox -s report")
            continue
        failed += _check(python, [str(path), "--sample", SAMPLE], label)
    torch = RESULTS / "torch.jsonl"
    python = _recorded_python(torch) if torch.is_file() else None
    if python is None:
        failed.append(f"{OLD_RUN}: no torch run to borrow an interpreter from")
    else:
        failed += _check(python, [str(OLD_RUN), "--sample", "8"], f"{OLD_RUN.name} (older suites)")
    return failed


def _check(python: str, args: list, what: str) -> list:
    proc = subprocess.run([python, "-m", "conformance.repro.check", *args], text=True,
                          capture_output=True, cwd=Path(__file__).resolve().parents[1])
    print(proc.stdout.rstrip())
    if proc.returncode != 0:
        return [f"{what}: reproduction scripts do not reproduce their cells (exit status "
                f"{proc.returncode}) {proc.stderr.strip()[-400:]}"]
    return []


def main() -> int:
    failed = []
    for label in REQUIRED + OPTIONAL:
        end = end_line(label)
        status = read_status(RESULTS, label)
        if end is None and label in OPTIONAL and status is not None and status.not_installed:
            print(f"WARNING {label}: not installed here: {status.detail[:300]}")
            continue
        if end is None:
            # CI keeps only the tail of its log: this line says why, and what nox printed
            detail = status.detail if status else ""
            failed.append(f"{label}: no complete results in {RESULTS}/{label}.jsonl: "
                          f"{why_not_complete(RESULTS / f'{label}.jsonl')}"
                          + (f"; nox said: {detail[-600:]}" if detail else ""))
        elif end.exitstatus != 0:
            failed.append(f"{label}: the run ended with exit status {end.exitstatus} "
                          f"(counts {end.counts}): an outcome differs from the expectations")
        else:
            print(f"ok {label}: {end.counts}")
    failed += check_scripts(REQUIRED + OPTIONAL)
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    from conformance.results import ResultsSchemaError  # noqa: E402  (standard library only)

    try:
        sys.exit(main())
    except ResultsSchemaError as exc:  # a damaged file under reports/results: one line
        print(f"check_results: {exc}", file=sys.stderr)
        sys.exit(4)
