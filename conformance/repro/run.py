"""Run reproduction scripts and report what each printed as its RESULT line.

``python -m conformance.repro.run SCRIPTS_DIR OUT.jsonl [--standalone]``

Each ``*.py`` in SCRIPTS_DIR is executed as ``__main__`` (``runpy.run_path``) with its output
captured, one after another in one interpreter: the scripts are independent of each other, and
running them in one process keeps 200 of them to a few seconds, as the suites themselves run. A
script that kills the process (a segfault in the framework) is recorded as CRASH by the parent,
which starts a new process for the scripts after it; one that faulthandler ended at the run's
timeout (a hang the alarm could not interrupt, conformance.repro.runtime) is TIMEOUT.
``--standalone`` runs each script in its own ``python`` instead.
One JSON line per script: ``{"script", "outcome", "message", "output"}``.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

from conformance import cli, gc_freeze
from conformance.repro.derive import parse_result


#: What faulthandler writes when ``dump_traceback_later(exit=True)`` ends the process.
_FAULTHANDLER_TIMEOUT = re.compile(r"^Timeout \(\d+:\d\d:\d\d(\.\d+)?\)!", re.M)


def _died(returncode: int, stderr: str) -> tuple[str, str]:
    """The outcome of a script whose process ended without a RESULT line."""
    if _FAULTHANDLER_TIMEOUT.search(stderr or ""):
        return "TIMEOUT", "the test did not finish within the run's timeout (the process was ended)"
    if returncode < 0:
        return "CRASH", f"the process died (signal {-returncode})"
    return "CRASH", f"the process died (exit status {returncode})"


class RunnerFailed(Exception):
    """The interpreter ran no script: not a Python with autograd-conformance, or it failed
    before the first one (the message is one line and says which)."""


def _run_here(path: Path) -> dict:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: BLE001 - a script that raises reports ERROR
        out.write(f"\nscript raised {type(exc).__name__}: {exc}\n")
    text = out.getvalue()
    parsed = parse_result(text)
    outcome, message = parsed if parsed else ("ERROR", "the script printed no RESULT line")
    return {"script": path.name, "outcome": outcome, "message": message, "output": text[-4000:]}


def _worker(paths: list[Path], out_path: Path) -> None:
    with open(out_path, "a", encoding="utf-8") as fh:
        for path in paths:
            # as the suites run each test: what is alive before the script (the framework's
            # import, the scripts before it) is frozen out of its gc.collect() calls
            gc_freeze.before_test()
            fh.write(json.dumps({"script": path.name, "started": True}) + "\n")
            fh.flush()
            fh.write(json.dumps(_run_here(path)) + "\n")
            fh.flush()


def run_all(scripts_dir: Path, out_path: Path, python: str = sys.executable,
            standalone: bool = False, timeout: float = 1800) -> dict[str, dict]:
    """Run every script of ``scripts_dir`` with ``python``; script name -> result."""
    paths = sorted(Path(scripts_dir).glob("*.py"))
    out_path = Path(out_path)
    out_path.write_text("")
    results: dict[str, dict] = {}
    if standalone:
        for path in paths:
            proc = subprocess.run([python, str(path)], capture_output=True, text=True,
                                  timeout=timeout, cwd=path.parent)
            parsed = parse_result(proc.stdout)
            if proc.returncode != 0 and (proc.returncode < 0 or parsed is None):
                parsed = _died(proc.returncode, proc.stderr)
            outcome, message = parsed or ("ERROR", f"no RESULT line; stderr: {proc.stderr[-500:]}")
            results[path.name] = {"script": path.name, "outcome": outcome, "message": message,
                                  "output": proc.stdout[-4000:]}
        return results
    remaining = list(paths)
    while remaining:
        names = [str(p) for p in remaining]
        proc = subprocess.run([python, "-m", "conformance.repro.run", "--worker",
                               str(out_path), *names], capture_output=True, text=True,
                              timeout=timeout)
        started = None
        for line in out_path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("started"):
                started = rec["script"]
            else:
                results[rec["script"]] = rec
                started = None
        if started is not None and started not in results:
            outcome, message = _died(proc.returncode, proc.stderr)
            results[started] = {"script": started, "outcome": outcome, "message": message,
                                "output": proc.stderr[-2000:]}
        left = [p for p in paths if p.name not in results]
        if len(left) == len(remaining) and started is None:
            # no script started: running it again would loop forever (an interpreter that
            # exits 0 and prints nothing, as a shell script named as one does)
            said = " ".join(proc.stderr.split()[-40:]) or "it printed nothing"
            raise RunnerFailed(f"{python} ran none of the scripts (exit status "
                               f"{proc.returncode}: {said}); give an interpreter that has "
                               f"autograd-conformance and the framework (--python)")
        remaining = left
    return results


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--worker":  # run_all's own worker process, not for users
        _worker([Path(p) for p in argv[2:]], Path(argv[1]))
        return 0
    parser = cli.Parser("python -m conformance.repro.run", __doc__)
    parser.add_argument("scripts_dir", type=cli.existing_dir, metavar="SCRIPTS_DIR",
                        help="directory of reproduction scripts (*.py)")
    parser.add_argument("out", type=cli.output_file, metavar="OUT.jsonl",
                        help="one JSON line per script is written here")
    parser.add_argument("--standalone", action="store_true",
                        help="run each script in its own python")
    args = parser.parse_args(argv)
    try:
        results = run_all(args.scripts_dir, args.out, standalone=args.standalone)
    except RunnerFailed as exc:
        return parser.fail(exc)
    for name, rec in sorted(results.items()):
        print(f"{rec['outcome']:<12} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
