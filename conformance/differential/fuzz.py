"""The differential search on HypoFuzz: many processes, on many machines, one example database.

``python -m conformance.differential.fuzz --adapter torch --workers 2 --seconds 300`` runs
``hypothesis fuzz`` (HypoFuzz) on the target in ``fuzz_targets.py`` with ``--workers``
processes for ``--seconds`` seconds from when all of them run (starting may take a while on a
busy machine; at most ``--startup`` seconds), then stops them and prints what they found. A run
in which no worker ran a program fails (exit status 2) with HypoFuzz's output.

What the processes share is Hypothesis's example database (``--database``: a directory, which
may be on a shared file system, or ``redis://host:port/db``): HypoFuzz keeps there the corpus
of programs that reached new coverage, and every process, on any machine, fuzzes from the
whole corpus. Distribution is HypoFuzz's and Hypothesis's; nothing here schedules work.

A target never fails: a divergence whose signature this run has not recorded yet is shrunk
(``runner.shrink_greedy``), rendered as a standalone script (``render.py``) and appended,
under a file lock, to the same results file ``nox -s explore`` writes
(``reports/results/explore-<adapter>.jsonl``, written and read through ``conformance.results``;
schema in docs/differential.md; ``nox -s report`` shows it), so the processes go on searching
for other divergences. The settings travel to the worker
processes in environment variables (``ENV``).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from conformance import cli
from conformance import results as _results
from conformance.child_interpreter import environment
from conformance.outputs import reports_dir

TARGETS = Path(__file__).with_name("fuzz_targets.py")
#: beside the reports (the checkout's root, or the current directory when installed)
DEFAULT_DATABASE = reports_dir().parent / ".hypothesis" / "differential-fuzz"
ENV = {  # option -> environment variable read by fuzz_targets.py in each worker
    "adapter": "AUTOGRAD_CONFORMANCE_FUZZ_ADAPTER",
    "python": "AUTOGRAD_CONFORMANCE_FUZZ_PYTHON",
    "plant": "AUTOGRAD_CONFORMANCE_FUZZ_PLANT",
    "max_steps": "AUTOGRAD_CONFORMANCE_FUZZ_MAX_STEPS",
    "database": "AUTOGRAD_CONFORMANCE_FUZZ_DATABASE",
    "results": "AUTOGRAD_CONFORMANCE_FUZZ_RESULTS",
    "run": "AUTOGRAD_CONFORMANCE_FUZZ_RUN",
    "lanes": "AUTOGRAD_CONFORMANCE_FUZZ_LANES",
}


def default_results(adapter: str) -> Path:
    return _results.explore_path(reports_dir() / "results", adapter)


def database(spec: str | os.PathLike, adapter: str):
    """The shared example database: ``redis://...`` or a directory (one subdirectory per
    adapter, so that corpora of different frameworks stay apart)."""
    spec = str(spec)
    if spec.startswith(("redis://", "rediss://")):
        import redis  # pip install redis
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(redis.Redis.from_url(spec),
                                    key_prefix=f"autograd-conformance:{adapter}:".encode())
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(str(Path(spec) / adapter))


locked = _results.locked  # an exclusive flock next to the file (across processes, over NFS)


def stats_dir(results: Path, run: str) -> Path:
    return Path(results).with_name(f"{Path(results).stem}.fuzz-{run}")


def collect_stats(results: Path, run: str) -> list[dict]:
    """The workers' counts of fuzz run ``run`` (their files are removed)."""
    stats = stats_dir(results, run)
    found = []
    for path in sorted(stats.glob("*.json")) if stats.is_dir() else ():
        with contextlib.suppress(OSError, ValueError):
            found.append(json.loads(path.read_text()))
    if stats.is_dir():
        for path in stats.iterdir():
            path.unlink()
        stats.rmdir()
    return found


def records_of_run(path: Path, run: str, kind: str = "divergence") -> list[dict]:
    """The records of type ``kind`` of fuzz run ``run`` in the results file ``path``."""
    try:
        records = _results.findings_lines(Path(path))
    except (OSError, _results.ResultsSchemaError):
        return []
    return [r for r in records if r.get("type") == kind and r.get("fuzz_run") == run]


class Recorder:
    """In a worker: checks one program and records a new divergence, shrunk, with its script."""

    def __init__(self, oracle, target, results: Path, run: str) -> None:
        self.oracle = oracle
        self.target = target
        self.results = Path(results)
        self.run = run
        self.examples = 0
        self.seen: set[str] = set()
        self._stats_at = float("-inf")

    def write_stats(self, every: float = 2.0) -> None:
        """How many programs this worker ran, in ``<results>.fuzz-<run>/<worker>.json``,
        rewritten at most every ``every`` seconds (HypoFuzz's workers end without atexit)."""
        now = time.monotonic()
        if now - self._stats_at < every:
            return
        self._stats_at = now
        stats = stats_dir(self.results, self.run)
        stats.mkdir(parents=True, exist_ok=True)
        worker = f"{socket.gethostname()}:{os.getpid()}"
        tmp = stats / f".{worker}.tmp"
        tmp.write_text(json.dumps({"worker": worker, "examples": self.examples}))
        tmp.replace(stats / f"{worker}.json")

    def _recorded(self) -> set[str]:
        return {r["signature"] for r in records_of_run(self.results, self.run)}

    def __call__(self, program) -> None:
        from conformance.differential.runner import check, divergence_record, make_finding, \
            shrink_greedy

        self.examples += 1
        self.write_stats(every=0.0 if self.examples == 1 else 2.0)
        outcome = check(program, self.oracle, self.target)
        div = outcome.divergence
        if div is None or div.signature in self.seen:
            return
        self.seen |= self._recorded()  # another process may have recorded it meanwhile
        if div.signature in self.seen:
            return
        small, result = shrink_greedy(program, self.oracle, self.target, div.signature)
        if result.divergence is None or result.divergence.signature != div.signature:
            small, result = program, check(program, self.oracle, self.target)
        if result.divergence is None:  # not reproducible (a flaky framework)
            return
        finding = make_finding(small, result, self.target, self.examples)
        record = divergence_record(finding, self.target, self.oracle.version)
        record.update(engine="hypofuzz", fuzz_run=self.run,
                      worker=f"{socket.gethostname()}:{os.getpid()}")
        with locked(self.results):
            if div.signature in self._recorded():
                self.seen.add(div.signature)
                return
            _results.append_findings(self.results, record, lock=False)
        self.seen.add(div.signature)


# -- the command line: start HypoFuzz, stop it after --seconds, report ----------------------
HYPOTHESIS_CLI = ("import sys; from hypothesis.extra.cli import main; "
                  "sys.argv[0] = 'hypothesis'; main()")


def _stop(proc: subprocess.Popen, grace: float = 20.0) -> None:
    """SIGINT to HypoFuzz's process group (its workers save and exit), then SIGKILL."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait)


def _wait_for_workers(proc: subprocess.Popen, stats: Path, workers: int, limit: float) -> int:
    """Wait until ``workers`` processes have each run a program (their stats files), HypoFuzz
    ended, or ``limit`` seconds passed; how many run. Starting (HypoFuzz collects the target in
    every process) can take long on a busy machine; the fuzzing time counts from here."""
    deadline = time.monotonic() + limit
    running = 0
    while proc.poll() is None and time.monotonic() < deadline:
        running = len(list(stats.glob("*.json"))) if stats.is_dir() else 0
        if running >= workers:
            break
        time.sleep(0.2)
    return len(list(stats.glob("*.json"))) if stats.is_dir() else 0


def _fuzz(proc: subprocess.Popen, results: Path, run: str, seconds: float,
          stop_after: int, poll: float = 0.5) -> str:
    """Let the workers fuzz until HypoFuzz ends (``"ended"``), ``seconds`` pass (``"time"``;
    0: no limit) or, with ``stop_after``, this run has recorded that many divergences
    (``"divergences"``); returns which."""
    deadline = time.monotonic() + seconds if seconds else float("inf")
    while proc.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return "time"
        if stop_after and len(records_of_run(results, run)) >= stop_after:
            return "divergences"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=min(poll, left))
    return "ended"


def main(argv=None) -> int:
    parser = cli.Parser(
        "python -m conformance.differential.fuzz",
        "the differential search as HypoFuzz targets, several processes sharing "
                    "one Hypothesis example database (docs/differential.md)")
    parser.add_argument("--adapter", default="torch", metavar="NAME",
                        help="framework compared with the reference (default: torch)")
    parser.add_argument("--workers", type=int, default=2, metavar="N",
                        help="fuzzing processes on this machine (default: 2)")
    parser.add_argument("--seconds", type=float, default=120.0, metavar="S",
                        help="stop the workers after S seconds (0: run until interrupted; "
                             "default: 120)")
    parser.add_argument("--database", default=str(DEFAULT_DATABASE), metavar="DIR|redis://...",
                        help="the shared example database: a directory (put it on a shared file "
                             "system for several machines) or a redis URL (default: "
                             ".hypothesis/differential-fuzz)")
    parser.add_argument("--results", default=None, metavar="PATH",
                        help="JSON-lines file findings are appended to (default: "
                             "reports/results/explore-<adapter>.jsonl)")
    parser.add_argument("--max-steps", type=int, default=16, metavar="N", help="program length")
    parser.add_argument("--python", default=None, metavar="PATH", type=cli.executable,
                        help="run the framework in a worker subprocess under this Python")
    parser.add_argument("--startup", type=float, default=300.0, metavar="S",
                        help="at most S seconds for the workers to start (collect the target, run "
                             "a first program); --seconds counts from when all of them run "
                             "(default: 300)")
    parser.add_argument("--stop-after", type=int, default=0, metavar="N",
                        help="stop as soon as this run has recorded N divergences (0: never; "
                             "default: 0): a check that a planted or known bug is still found "
                             "ends when it is, however slow the machine, --seconds bounding it")
    parser.add_argument("--plant", default=None, help=argparse.SUPPRESS)  # tests: a planted bug
    args = parser.parse_args(argv)
    if args.workers < 1 or not 0 <= args.seconds < float("inf") or not 0 < args.startup < float("inf") \
            or args.stop_after < 0:
        return parser.fail("--workers must be >= 1, --seconds >= 0, --startup > 0 and "
                           "--stop-after >= 0")
    try:
        import hypofuzz  # noqa: F401
    except ImportError:
        return parser.fail("the fuzz workers need HypoFuzz: pip install hypofuzz (nox -s fuzz "
                           "installs it)")
    results = Path(args.results or default_results(args.adapter)).resolve()
    if results.is_dir():
        return parser.fail(f"--results {args.results}: is a directory; give a file path")
    run = uuid.uuid4().hex[:12]
    spec = args.database
    if not spec.startswith(("redis://", "rediss://")):
        spec = str(Path(spec).resolve())
    env = environment()
    # HypoFuzz collects its targets with a pytest run of its own, which needs Hypothesis's
    # pytest plugin: options meant for the user's test runs (one that blocks that plugin, as the
    # project's tests do for their child runs) would leave it no tests
    env.pop("PYTEST_ADDOPTS", None)
    env.update({ENV["adapter"]: args.adapter, ENV["max_steps"]: str(args.max_steps),
                ENV["database"]: spec, ENV["results"]: str(results), ENV["run"]: run,
                ENV["lanes"]: str(args.workers)})
    for key in ("python", "plant"):
        if getattr(args, key):
            env[ENV[key]] = getattr(args, key)
    _results.append_findings(results, {
        "type": "run", "schema": _results.EXPLORE_SCHEMA, "engine": "hypofuzz", "fuzz_run": run,
        "adapter": args.adapter, "workers": args.workers, "seconds": args.seconds,
        "database": spec, "max_steps": args.max_steps, "stop_after": args.stop_after,
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv if argv is None else argv})
    cmd = [sys.executable, "-c", HYPOTHESIS_CLI, "fuzz", "-n", str(args.workers),
           "--no-dashboard", "--", str(TARGETS), "-p", "no:cacheprovider", "-q"]
    print(f"[fuzz] {args.workers} HypoFuzz worker(s) on {args.adapter}, database {spec}, "
          f"{'until interrupted' if not args.seconds else f'{args.seconds:g}s'}; "
          f"findings -> {results}", flush=True)
    started = time.monotonic()
    log_path = results.with_name(f"{results.stem}.fuzz-{run}.log")
    log = open(log_path, "w", encoding="utf-8")
    # the checkout's root, or the current directory when installed (never site-packages)
    proc = subprocess.Popen(cmd, cwd=reports_dir().parent, env=env, start_new_session=True,
                            stdout=log, stderr=subprocess.STDOUT)
    running = 0
    fuzzing_since = None
    stopped_by = "ended"  # HypoFuzz ended before (or while) its workers started
    try:
        running = _wait_for_workers(proc, stats_dir(results, run), args.workers, args.startup)
        fuzzing_since = time.monotonic()
        if running and proc.poll() is None:
            stopped_by = _fuzz(proc, results, run, args.seconds, args.stop_after)
    except KeyboardInterrupt:
        stopped_by = "interrupt"
    finally:
        _stop(proc)
        log.close()
    duration = time.monotonic() - started
    startup = (fuzzing_since or time.monotonic()) - started
    found = records_of_run(results, run)
    workers = collect_stats(results, run)
    examples = sum(w.get("examples", 0) for w in workers)
    _results.append_findings(
        results, *({"type": "fuzz-worker", "fuzz_run": run, **worker} for worker in workers),
        {"type": "end", "engine": "hypofuzz", "fuzz_run": run, "examples": examples,
         "divergences": len(found), "unexpected": sum(1 for r in found if not r.get("expectation")),
         "stopped_by": stopped_by,
         "duration": round(duration, 1), "startup": round(startup, 1)})
    if stopped_by == "divergences":
        print(f"[fuzz] stopped after {len(found)} divergence(s) (--stop-after {args.stop_after})")
    print(f"[fuzz] {duration:.0f}s ({startup:.0f}s starting), {len(workers)} of {args.workers} "
          f"worker(s) ran, {examples} programs: {len(found)} divergence(s) -> {results} "
          f"(HypoFuzz's output: {log_path})")
    for record in found:
        tag = "expected" if record.get("expectation") else "NEW"
        print(f"[{tag}] {record['category']}: {record['signature']}  ({record['script_lines']} "
              f"lines, found by {record['worker']})")
        print(record["script"])
    ended_early = proc.returncode not in (0, None) and fuzzing_since is not None and \
        stopped_by != "divergences" and duration - startup < (args.seconds or float("inf")) - 1
    if not workers or ended_early:
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
        print("\n".join(tail), file=sys.stderr)
        why = (f"no HypoFuzz worker ran a program within {args.startup:g}s" if not workers else
               f"hypothesis fuzz ended early with exit status {proc.returncode}")
        print(f"error: {why} (its output: {log_path})", file=sys.stderr)
        return 2
    return 1 if any(not r.get("expectation") for r in found) else 0


if __name__ == "__main__":
    sys.exit(main())
