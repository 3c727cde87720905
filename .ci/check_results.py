"""After `nox -s report`: every framework's conformance run must have ended cleanly.

Which runs exist and which are required come from the adapters (``runs`` in adapters/*.py).
A required run must have passed against its expectations (exit status 0). An optional one
must too, unless it could not be installed on this machine (the report shows that column
as "not installed"; here it is a warning, since CI's budget and network decide it).
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from adapters.base import report_runs  # noqa: E402  (standard library only)
from conformance.results import end_line as _end_line  # noqa: E402  (standard library only)

RESULTS = Path("reports/results")
REQUIRED = [run["label"] for _, run in report_runs() if run.get("required", True)]
OPTIONAL = [run["label"] for _, run in report_runs() if not run.get("required", True)]


def end_line(label):
    return _end_line(RESULTS / f"{label}.jsonl")


def main() -> int:
    failed = []
    for label in REQUIRED + OPTIONAL:
        end = end_line(label)
        status_file = RESULTS / f"{label}.status.json"
        if end is None and label in OPTIONAL and status_file.is_file():
            status = json.loads(status_file.read_text())
            if status.get("status") == "not-installed":
                print(f"WARNING {label}: not installed here: {status.get('detail', '')[:300]}")
                continue
        if end is None:
            failed.append(f"{label}: no complete results in {RESULTS}/{label}.jsonl")
        elif end.get("exitstatus") != 0:
            failed.append(f"{label}: the run ended with exit status {end.get('exitstatus')} "
                          f"(counts {end.get('counts')}): an outcome differs from the expectations")
        else:
            print(f"ok {label}: {end.get('counts')}")
    for line in failed:
        print(f"FAILED {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
