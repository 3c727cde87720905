"""``python -m conformance.mutants``: run the suites against every curated mutant.

For each mutant: its probe must differ from the clean reference (else it is not a bug), then
``pytest --adapter=reference conformance/suites`` runs in a subprocess with
``AUTOGRAD_CONFORMANCE_MUTANT=<id>`` (``--jobs`` at a time). A mutant is *killed* when some
test's outcome differs from the clean run's; it does not count (*invalid*) when the run breaks
before any test, or when no test passes. Each run stops at its first failing test (pytest -x),
the tests of the rules expected to catch the mutant first, then (if they
miss it) every suite, the mutant's own area first. Prints killed/total, each survivor with the
rules that should have caught it, and the score recorded before new rules were added
(baseline.json); writes ``reports/mutants.json``. ``--long --budget S`` also runs mutmut over
``reference/`` for at most S seconds (conformance/mutants/generic.py) and reports its score
(``--long-only``: that alone, kept beside the curated score already in the file); a run without
``--long`` keeps the file's last long-mode result.

Exit status: 0 when the score reaches ``--min-score`` and every survivor carries a reason,
1 otherwise, 4 on a usage error.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conformance import cli
from conformance import mutants as M
from conformance.mutants.adapter import SPEC as PLANTED
from conformance.child_interpreter import environment
from conformance.outputs import reports_dir

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).with_name("baseline.json")
OK_OUTCOMES = ("PASS", "OBSERVED")


def _pytest_cmd(results: Path, first_suite: str | None, stop_at_first: bool, nodeids=None) -> list[str]:
    paths = list(nodeids or ["conformance/suites"])
    if not nodeids and first_suite and (ROOT / f"conformance/suites/test_{first_suite}.py").is_file():
        paths.insert(0, f"conformance/suites/test_{first_suite}.py")  # its own area first
    return [sys.executable, "-m", "pytest", f"--adapter={PLANTED}", "-p", "no:cacheprovider", "-q",
            "--conformance-timeout=20", f"--results={results}", *(["-x"] if stop_at_first else []), *paths]


_WARM = False  # whether this process has pytest, the harness, the suites and the reference loaded


def warm_up() -> bool:
    """Load pytest, the harness, the suites and the reference once in this process, so that each
    run forks from it instead of starting an interpreter (POSIX only; else runs are subprocesses)."""
    global _WARM
    if not hasattr(os, "fork") or os.environ.get(M.ENV):
        return False
    import contextlib
    import io

    import pytest

    os.chdir(ROOT)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = pytest.main(["--collect-only", "-q", f"--adapter={PLANTED}", "-p", "no:cacheprovider",
                            "conformance/suites"])
    _WARM = code == 0
    return _WARM


def _forked(cmd: list[str], mutant_id: str | None, log: Path, timeout: float):
    """Run pytest's ``cmd`` arguments in a fork of this (warm) process; (exit code, output tail)."""
    pid = os.fork()
    if pid == 0:  # the child: plant the bug, run pytest, never return
        code = 3
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - fresh objects: no lock held
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            if mutant_id:
                os.environ[M.ENV] = mutant_id
                M.activate(mutant_id)
            import pytest

            code = int(pytest.main(cmd[3:]))
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - report it and leave the child, whatever happened
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            code = "timeout"
            break
        time.sleep(0.05)
    tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.is_file() else ""
    return code, tail


def run_suites(mutant_id: str | None, first_suite: str | None = None, stop_at_first: bool = True,
               timeout: float = 300, nodeids=None) -> dict:
    """Run the suites (against ``mutant_id``, or clean); {nodeid: (outcome, rule)} plus status.

    With ``stop_at_first`` (pytest -x) the run ends at the first test that fails. ``timeout``
    is sized for a quiet machine and scaled like every limit (conformance/time_scale.py): the
    whole clean run took 469 s beside other jobs on 2 cores, so an unscaled 300 s cut it off
    and the tool said the suites do not run clean on the reference."""
    from conformance import time_scale

    timeout = time_scale.scaled(timeout)
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        results = Path(tmp) / "results.jsonl"
        cmd = _pytest_cmd(results, first_suite, stop_at_first, nodeids)
        started = time.monotonic()
        if _WARM:
            code, tail = _forked(cmd, mutant_id, Path(tmp) / "output.txt", timeout)
        else:
            env = environment()
            env.pop(M.ENV, None)
            if mutant_id:
                env[M.ENV] = mutant_id
            try:
                proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                                      timeout=timeout)
                code, tail = proc.returncode, (proc.stdout + proc.stderr)[-2000:]
            except subprocess.TimeoutExpired as exc:
                code, tail = "timeout", str(exc)[-2000:]
        tests, ended = {}, False
        if results.is_file():
            from conformance.results import RunEnd, TestRecord, run_file

            for record in run_file.scan(results):
                if isinstance(record, TestRecord):
                    tests[record.nodeid] = (record.outcome, record.rule)
                elif isinstance(record, RunEnd):
                    ended = True
    return {"tests": tests, "ended": ended, "returncode": code, "tail": tail,
            "seconds": round(time.monotonic() - started, 2)}


def judge(m: M.Mutant, run: dict, clean: dict) -> dict:
    """killed / survived / invalid, with the rule whose test told the mutant apart first."""
    tests = run["tests"]
    changed = sorted({(rule or nodeid) for nodeid, (outcome, rule) in tests.items()
                      if outcome != clean["tests"].get(nodeid, ("PASS",))[0]})
    entry = {"id": m.id, "area": m.area, "models": m.models, "expected_rules": list(m.rules),
             "seconds": run["seconds"]}
    passing = sum(1 for outcome, _ in tests.values() if outcome in OK_OUTCOMES)
    if not tests:
        last = (run["tail"].strip().splitlines() or ["no output"])[-1]
        entry.update(status="invalid", reason=f"the run broke before any test (exit {run['returncode']}): {last}")
    elif changed and not passing:
        entry.update(status="invalid", reason=f"no test passes ({len(tests)} run): it breaks the engine "
                     "instead of one behaviour")
    elif changed or not run["ended"]:
        entry.update(status="killed", killed_by=changed,
                     caught_as_expected=bool(set(changed) & set(m.rules)))
        if not changed:
            entry["note"] = "the run ended early: a crash or hang the harness caught"
    else:
        entry.update(status="survived", reason=m.survivor_reason)
    return entry


def _score(entries) -> dict:
    valid = [e for e in entries if e["status"] != "invalid"]
    killed = sum(1 for e in valid if e["status"] == "killed")
    return {"killed": killed, "total": len(valid),
            "score": round(killed / len(valid), 4) if valid else None}


def _parse(argv):
    parser = cli.Parser("python -m conformance.mutants", __doc__.split("\n")[0])
    parser.add_argument("--jobs", type=cli.positive_int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these mutants")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    default = reports_dir() / "mutants.json"  # the checkout's reports/, or ./reports installed
    parser.add_argument("--json", type=cli.output_file, default=default,
                        help=f"machine-readable result (default: {default})")
    parser.add_argument("--min-score", type=cli.share, default=0.95, help="fail below this share killed")
    parser.add_argument("--record-baseline", action="store_true",
                        help="write this run's score to conformance/mutants/baseline.json")
    parser.add_argument("--long", action="store_true", help="also run mutmut over reference/")
    parser.add_argument("--long-only", action="store_true",
                        help="run only mutmut over reference/ (the curated result in --json stays)")
    parser.add_argument("--budget", type=cli.positive_int, default=600, help="seconds for --long (default 600)")
    parser.add_argument("--seed", type=int, default=None,
                        help="the long mode's random sample (default: a new one, recorded)")
    args = parser.parse_args(argv)
    args.json = args.json.resolve()  # before warm_up's chdir: a relative --json names the caller's
    return args


def main(argv=None) -> int:
    args = _parse(argv)
    if args.long_only:
        return _long_only(args)
    registry = M.load()
    scored = [m for m in registry.values() if m.scored]
    if args.only:
        unknown = [i for i in args.only if i not in registry]
        if unknown:
            return cli.usage_error("python -m conformance.mutants",
                                   f"--only: unknown mutant(s): {', '.join(unknown)}; see --list")
        scored = [registry[i] for i in args.only]
    if args.list:
        for m in scored:
            print(f"{m.id:55} {', '.join(m.rules)}")
        return 0

    started = time.monotonic()
    entries = []
    runnable = []
    for m in scored:  # the probe proves each mutant is a bug (in this process, patched and undone)
        differs, clean_value, mutant_value = M.probe_differs(m.id)
        if differs:
            runnable.append(m)
        else:
            entries.append({"id": m.id, "area": m.area, "models": m.models, "expected_rules": list(m.rules),
                            "status": "invalid", "reason": f"equivalent: its probe gives {mutant_value!r} "
                            "on the mutant and on the clean reference"})
    warm_up()
    clean = run_suites(None, stop_at_first=False)
    if not clean["tests"] or any(o not in OK_OUTCOMES for o, _ in clean["tests"].values()):
        why = (f"the clean run was still going after {clean['seconds']} s and was ended"
               if clean["returncode"] == "timeout" else "the suites do not run clean on the reference")
        bad = [f"{outcome} {nodeid}" for nodeid, (outcome, _) in clean["tests"].items()
               if outcome not in OK_OUTCOMES]
        print(f"error: {why}; fix that first:\n" + "\n".join(bad[:20]) + "\n" + clean["tail"],
              file=sys.stderr)
        return 1
    print(f"clean run: {len(clean['tests'])} tests in {clean['seconds']} s; "
          f"{len(runnable)} mutants, {args.jobs} at a time", flush=True)

    by_rule: dict = {}
    firsts: dict = {}  # the first test of each suite file, in order
    from conformance.results.naming import file_of

    for nodeid in clean["tests"]:
        firsts.setdefault(file_of(nodeid), nodeid)
    firsts = list(firsts.values())
    for nodeid, (_, rule) in clean["tests"].items():
        by_rule.setdefault(rule, []).append(nodeid)

    def one(m):
        expected = [n for r in m.rules for n in by_rule.get(r, [])]
        run = run_suites(m.id, m.area, nodeids=expected) if expected else None  # its rules' tests first
        if run is None or not any(o not in OK_OUTCOMES for o, _ in run["tests"].values()):
            run = run_suites(m.id, m.area)  # every suite, its own area first
        if run["tests"] and not any(o in OK_OUTCOMES for o, _ in run["tests"].values()):
            # every test run so far failed: does the first test of each suite pass?
            sane = run_suites(m.id, stop_at_first=False, nodeids=[n for n in firsts if n not in run["tests"]])
            run["tests"] = {**sane["tests"], **run["tests"]}
        entry = judge(m, run, clean)
        mark = {"killed": "killed  ", "survived": "SURVIVED", "invalid": "INVALID "}[entry["status"]]
        print(f"  {mark} {m.id} ({entry['seconds']} s)", flush=True)
        return entry

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        entries += list(pool.map(one, runnable))
    order = {m.id: i for i, m in enumerate(scored)}
    entries.sort(key=lambda e: order[e["id"]])
    curated = {**_score(entries), "mutants": entries,
               "survivors": [e for e in entries if e["status"] == "survived"],
               "invalid": [e for e in entries if e["status"] == "invalid"]}
    elapsed = round(time.monotonic() - started, 1)
    baseline = json.loads(BASELINE.read_text()) if BASELINE.is_file() else None
    if args.record_baseline and not args.only:
        baseline = {"date": datetime.date.today().isoformat(), "killed": curated["killed"],
                    "total": curated["total"], "score": curated["score"],
                    "survivors": [e["id"] for e in curated["survivors"]],
                    "note": "measured before any rule was added for the survivors (issue 16)"}
        _write_whole(BASELINE, json.dumps(baseline, indent=2) + "\n")

    long_result = _previous(args.json).get("generic")  # the last long-mode run, dated, unless rerun
    if args.long:
        long_result = _generic(args)

    print()
    print(f"curated mutants: {curated['killed']}/{curated['total']} killed"
          + (f" ({curated['score']:.1%})" if curated["score"] is not None else "") + f" in {elapsed} s")
    if baseline:
        print(f"before the new rules ({baseline['date']}): {baseline['killed']}/{baseline['total']} "
              f"({baseline['score']:.1%})")
    for e in curated["survivors"]:
        print(f"  survivor {e['id']}: should be caught by {', '.join(e['expected_rules'])}"
              + (f"; kept because: {e['reason']}" if e["reason"] else "; NO REASON GIVEN"))
    for e in curated["invalid"]:
        print(f"  invalid  {e['id']}: {e['reason']}")
    if long_result is not None:
        print(f"generic (mutmut over reference/{'' if args.long else ', ' + str(long_result.get('date'))}): "
              f"{long_result.get('summary')}")

    if args.json:
        out = Path(args.json)
        _write_whole(out, json.dumps({
            "type": "mutants", "schema": 1,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "runtime_s": elapsed, "jobs": args.jobs, "partial": bool(args.only),
            "curated": curated, "baseline": baseline, "generic": long_result,
        }, indent=2) + "\n")
        print(f"written: {out}")

    unexplained = [e for e in curated["survivors"] if not e["reason"]]
    low = curated["score"] is None or curated["score"] < args.min_score
    return 1 if (unexplained or curated["invalid"] or low) else 0


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file beside it, renamed over it
    (a run stopped while writing leaves the previous file, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's file is private; the report is not
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _previous(path) -> dict:
    """The mutants file written before (empty when there is none or it is unreadable)."""
    from conformance.results import json_text  # no FIFO waited on, no RecursionError

    try:
        found = json_text.loads(json_text.read_text(Path(path))) if path else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _generic(args) -> dict:
    from conformance.mutants import generic

    print(f"mutmut over reference/: at most {args.budget} s, {args.jobs} at a time", flush=True)
    result = generic.run(args.budget, jobs=args.jobs, seed=args.seed)
    result["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return result


def _long_only(args) -> int:
    """``--long-only``: mutmut alone; its result replaces the file's ``generic`` entry."""
    result = _generic(args)
    print(f"generic (mutmut over reference/): {result.get('summary')}")
    for function, count in list(result.get("survivors_by_function", {}).items())[:15]:
        print(f"  {count:3} survived in {function}")
    unreached = result.get("not_reached_by_function", {})
    if unreached:
        print("  not reached by any suite test (mutants): "
              + ", ".join(f"{f} ({n})" for f, n in list(unreached.items())[:10]))
    if args.json:
        out = Path(args.json)
        found = _previous(out) or {"type": "mutants", "schema": 1, "curated": None, "baseline": None}
        found["generic"] = result
        _write_whole(out, json.dumps(found, indent=2) + "\n")
        print(f"written: {out}")
    return 0 if result.get("checked") else 1


if __name__ == "__main__":
    sys.exit(main())
