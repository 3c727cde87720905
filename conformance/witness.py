"""Witnesses: one short standalone script per root cause that shows the cause on the framework.

Why: a root cause is a claim about the framework ("Paddle drops the Python wrapper of a tensor it
still holds"). A verdict built on a wrong claim reads as a finding until someone re-runs it by
hand; a witness re-runs it every time. Each is at most ~15 lines that use only the framework
(bound as ``fw`` after the adapter's :meth:`~adapters.base.Adapter.preamble`), print what they
observe and exit non-zero where the framework shows the cause, 0 where it does not (torch 2.13
and the reference). A witness that stops reproducing marks its cause "fixed?": the cause (or
the framework) changed, and the expectations entry is wrong until someone looks.

Usage::

    python -m conformance.witness --adapter paddle          # the adapter's own expectations
    python -m conformance.witness --adapter paddle --issue CAUSE   # a paste-ready bug report
    python -m conformance.witness --adapter torch --file adapters/expectations/paddle.toml \\
        --expect-clean                                       # every witness exits 0 here

One line per root cause: ``reproduces``, ``does not reproduce (fixed?)``, ``error: ...`` or
``no witness``. Exit 1 when a witness of a root cause that breaks rules does not reproduce or
errs (with ``--expect-clean``: when any witness does not exit 0); 4 on bad input.

``--issue CAUSE`` prints instead one cause's upstream-ready report (conformance/upstream.py):
the witness in the framework's own spelling, what it prints on the framework and on torch (the
reference engine where the framework is torch or torch is not installed), the rules' statements
and rationales, the versions. Exit 0 when the witness reproduces the cause, 1 when it does not
(or the cause has no witness), 4 for a cause the expectations file does not name.

A conformance run records the same per root cause (:class:`Background`, started by the plugin:
the witnesses of the causes whose entries apply to the run's framework version run beside the
tests, each in a fresh interpreter under a time limit, and each result is one ``witness`` line
of the results file), so the page can show every ranked cause's witness and mark "fixed?".
"""
from __future__ import annotations

import ast
import dataclasses
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from conformance import cli
from conformance.child_interpreter import environment
from conformance.model import causes as _causes, expectations
from conformance.model.causes import Cause

#: The most lines a witness may have (its text, blank lines and comments excluded).
MAX_LINES = 15
#: Modules a witness may import besides the framework: ones that observe, not ones that act
#: (threading only starts the threads a race needs; faulthandler's timer ends a deadlocked
#: process, which no Python-level timer can do while a stuck thread holds the GIL).
ALLOWED_IMPORTS = {"gc", "sys", "warnings", "weakref", "threading", "faulthandler"}
#: The most characters of a witness's output a run records (its end: where it says what it saw).
MAX_OUTPUT = 2000


@dataclasses.dataclass
class Result:
    status: str                     # "reproduces" | "does not reproduce" | "error" | "no witness"
    output: str = ""

    def line(self, slug: str) -> str:
        label = {"does not reproduce": "does not reproduce (fixed?)"}.get(self.status, self.status)
        detail = self.output.strip().splitlines()[-1][:160] if self.output.strip() else ""
        return f"{slug}: {label}" + (f" -- {detail}" if detail else "")


def causes(path: Path, version: str | None = None) -> list[Cause]:
    """The root causes of expectations file ``path`` with their witnesses, in file order;
    with ``version``: only from the entries that apply to that framework version
    (:func:`conformance.model.causes.declared`)."""
    return _causes.declared(expectations.read(path), version)


def problems(witness: str, framework: str) -> list[str]:
    """What is wrong with a witness's text: too long, not Python, or importing more than the
    framework and the observing modules of :data:`ALLOWED_IMPORTS`."""
    out = []
    lines = [ln for ln in witness.strip().splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if len(lines) > MAX_LINES:
        out.append(f"{len(lines)} lines (at most {MAX_LINES})")
    try:
        tree = ast.parse(witness)
    except SyntaxError as exc:
        return out + [f"does not parse: {exc}"]
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            top = name.split(".")[0]
            if top not in ALLOWED_IMPORTS | {framework}:
                out.append(f"imports {name} (only {framework} and {', '.join(sorted(ALLOWED_IMPORTS))})")
    return out


def script(adapter, witness: str) -> str:
    """The witness as it runs: the adapter's preamble, ``fw`` bound to the framework, the text."""
    return script_of(adapter.preamble(), adapter.module, witness)


def script_of(preamble: str, module: str, witness: str) -> str:
    """:func:`script` from the adapter's preamble and module name."""
    return f"{preamble}fw = {module}\n{witness}"


def _env() -> dict[str, str]:
    """The environment of a witness: this interpreter's path first (the adapter's packages)."""
    return environment(same_interpreter=True)


def _spawn(text: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", text], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            errors="replace", env=_env())


def _finish(proc: subprocess.Popen, timeout: float) -> Result:
    """Wait for a witness's process at most ``timeout`` seconds (then kill it: ``error``)."""
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, _ = proc.communicate()
        seen = f"; it printed: {stdout.strip()[-300:]}" if stdout.strip() else ""
        return Result("error", f"still running after {timeout:g}s (killed){seen}")
    return classify(proc.returncode, stdout, stderr)


def classify(returncode: int, stdout: str, stderr: str) -> Result:
    """A finished witness's result from its exit status and output."""
    output = (stdout + stderr).strip()
    if returncode == 0:
        return Result("does not reproduce", stdout)
    if returncode < 0:
        return Result("reproduces", f"{stdout.strip()} (killed by signal {-returncode})")
    # (the framework's own log lines on stderr are not what the witness observed)
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if "Traceback (most recent call last)" in stderr and not last.startswith(("AssertionError", "SystemExit")):
        return Result("error", last or output)
    return Result("reproduces", stdout if stdout.strip() else output)


def run(adapter, witness: str, timeout: float = 120) -> Result:
    """Run one witness in a fresh interpreter."""
    return run_script(script(adapter, witness), timeout)


def run_script(text: str, timeout: float = 120) -> Result:
    """Run one witness's whole script (:func:`script`) in a fresh interpreter."""
    try:
        proc = _spawn(text)
    except OSError as exc:
        return Result("error", f"could not start {sys.executable}: {exc.strerror or exc}")
    return _finish(proc, timeout)


def trimmed(output: str, limit: int = MAX_OUTPUT) -> str:
    """``output`` without surrounding blank space, cut to its last ``limit`` characters."""
    text = (output or "").strip()
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


#: A child that gives the controller of a distributed run (which never imports the
#: framework, so holds no adapter of its own) the adapter's preamble and module name.
_PREAMBLE_OF = ("import json, sys\nfrom adapters.base import load_adapter\n"
                "a = load_adapter(sys.argv[1])\nprint(json.dumps([a.preamble(), a.module]))\n")


def preamble_of(adapter, spec: str, timeout: float) -> tuple[str, str]:
    """The adapter's preamble and framework module: asked of ``adapter`` where it has them,
    else (the stand-in of a distributed run's controller) of a child that loads ``spec``;
    ValueError (one line) when that child fails."""
    if hasattr(adapter, "preamble") and getattr(adapter, "module", None):
        return adapter.preamble(), adapter.module
    try:
        done = subprocess.run([sys.executable, "-c", _PREAMBLE_OF, spec], capture_output=True,
                              text=True, timeout=timeout, env=_env(), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ValueError(f"loading adapter {spec!r} for its preamble took over {timeout:g}s") from None
    except OSError as exc:
        raise ValueError(f"could not start {sys.executable}: {exc.strerror or exc}") from None
    try:
        preamble, module = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, TypeError):
        raise ValueError(f"could not load adapter {spec!r} for its preamble: "
                         f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}") from None
    return str(preamble), str(module)


@dataclasses.dataclass
class Finished:
    """One cause's witness as a run records it."""

    cause: Cause
    result: Result
    duration: float = 0.0


class Background:
    """The witnesses of a conformance run, run beside its tests.

    Why beside: each witness starts an interpreter and imports the framework (seconds); run one
    after another at the end they would add that much per witness to every run. Here daemon
    threads run them (``workers`` at a time) from the start of the run, each under ``timeout``
    seconds (a hanging witness is killed and recorded as ``error``); :meth:`ready` hands out
    those finished so far (the run writes them as it goes), :meth:`wait` the rest, and
    :meth:`cancel` kills those still running (an interrupted run must not wait for them).
    Nothing raised in a thread escapes it: a failure is that witness's ``error``.
    """

    def __init__(self, found: list[Cause], preamble: Callable[[], tuple[str, str]],
                 timeout: float, workers: int = 1) -> None:
        self.timeout = timeout
        self._preamble = preamble
        self._todo: queue.Queue = queue.Queue()
        self._done: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen] = set()
        self._cancelled = False
        self._head: tuple[str, str] | None = None
        self._head_error = ""
        self.total = len(found)
        for cause in found:
            if cause.witness:
                self._todo.put(cause)
            else:
                self._done.put(Finished(cause, Result("no witness")))
        self._threads = [threading.Thread(target=self._work, daemon=True,
                                          name=f"conformance-witness-{i}")
                         for i in range(max(1, workers) if not self._todo.empty() else 0)]
        for thread in self._threads:
            thread.start()

    def _script(self, cause: Cause) -> str:
        with self._lock:
            if self._head is None and not self._head_error:
                try:
                    self._head = self._preamble()
                except Exception as exc:  # noqa: BLE001 - one witness line each, never the run
                    self._head_error = str(exc) or type(exc).__name__
            if self._head_error:
                raise ValueError(self._head_error)
        return script_of(*self._head, cause.witness)

    def _work(self) -> None:
        while not self._cancelled:
            try:
                cause = self._todo.get_nowait()
            except queue.Empty:
                return
            start = time.monotonic()
            try:
                proc = _spawn(self._script(cause))
                with self._lock:
                    self._procs.add(proc)
                    if self._cancelled:
                        proc.kill()
                try:
                    result = _finish(proc, self.timeout)
                finally:
                    with self._lock:
                        self._procs.discard(proc)
            except Exception as exc:  # noqa: BLE001 - one witness line, never the run
                result = Result("error", f"{type(exc).__name__}: {exc}")
            if not self._cancelled:
                self._done.put(Finished(cause, result, round(time.monotonic() - start, 3)))

    def ready(self) -> list[Finished]:
        """The witnesses finished since the last call."""
        out = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def wait(self) -> list[Finished]:
        """Wait for every witness still running (each is bounded by ``timeout``), then
        :meth:`ready`."""
        for thread in self._threads:
            thread.join()
        return self.ready()

    def cancel(self) -> None:
        """Kill the witnesses still running and start no more (their results are dropped)."""
        with self._lock:
            self._cancelled = True
            for proc in self._procs:
                proc.kill()


def main(argv: Iterable[str] | None = None) -> int:
    parser = cli.Parser("python -m conformance.witness", __doc__.split("\n")[0])
    parser.add_argument("--adapter", required=True, help="the adapter whose framework runs the witnesses")
    parser.add_argument("--file", type=Path, help="an expectations file (default: the adapter's own)")
    parser.add_argument("--expect-clean", action="store_true",
                        help="every witness must exit 0 (a framework that follows the rules)")
    parser.add_argument("--issue", metavar="CAUSE",
                        help="print the upstream-ready bug report of root cause CAUSE (its "
                             "slug): the witness in the framework's spelling, its output there "
                             "and on torch or the reference, the rules' words, the versions")
    parser.add_argument("--timeout", type=cli.positive_float, default=600,
                        help="seconds per witness (a limit on hangs: times this machine's "
                        "time-limit scale, conformance/time_scale.py)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    from conformance import time_scale
    args.timeout = time_scale.scaled(args.timeout)
    from adapters.base import load_adapter
    from conformance import isolation
    from conformance.tomlfile import FileError

    try:
        # loaded in a child interpreter first: a hang, a segfault or sys.exit is one line
        isolation.probe(args.adapter, "cpu", timeout=args.timeout, timeout_option="--timeout")
        adapter = load_adapter(args.adapter)
        path = args.file or adapter.expectations_file()
        if not Path(path).is_file():
            raise ValueError(f"{path}: not a regular file (a directory, FIFO, device or socket); "
                             f"give an expectations file with --file" if Path(path).exists()
                             else f"no expectations file {path}; give one with --file")
        # the adapter's own file: only the causes whose entries apply to the installed version
        # (another file, run for --expect-clean on a clean framework, is judged whole)
        found = causes(Path(path), None if args.file else adapter.framework_version())
        if args.issue is not None:
            chosen = _chosen(args.issue, found, Path(path))
    except (ValueError, FileError, isolation.ProbeFailed) as exc:
        return parser.fail(exc)
    if args.issue is not None:
        text, reproduced = issue_report(adapter, chosen, args.timeout)
        print(text, end="")
        return 0 if reproduced else 1
    failed = 0
    for cause in found:
        if not cause.witness:
            print(Result("no witness").line(cause.slug))
            continue
        result = run(adapter, cause.witness, args.timeout)
        print(result.line(cause.slug), flush=True)
        if args.expect_clean:
            failed += result.status != "does not reproduce"
        elif cause.kind == "breaks":
            failed += result.status != "reproduces"
    return 1 if failed else 0


def _chosen(slug: str, found: list[Cause], path: Path) -> Cause:
    """The cause ``slug`` of the expectations file (from any entry when none that applies to
    the installed version names it); ValueError naming the causes there is."""
    for cause in found:
        if cause.slug == slug:
            return cause
    every = causes(path)
    for cause in every:
        if cause.slug == slug:
            return cause
    known = ", ".join(c.slug for c in every if not c.slug.startswith("rule:"))
    raise ValueError(f"--issue {slug}: no root cause of that name in {path} (its causes: "
                     f"{known or 'none'})")


def _comparison(adapter) -> tuple[str, str, str]:
    """(engine words, preamble, module) of the engine a report compares with: torch where it
    is installed and the framework is not torch itself, else the reference engine."""
    import importlib.util
    from importlib import metadata

    if adapter.module != "torch" and importlib.util.find_spec("torch") is not None:
        try:
            version = metadata.version("torch")
        except metadata.PackageNotFoundError:
            version = ""
        return f"torch {version}".strip(), "import torch\n", "torch"
    return ("the reference engine (autograd-conformance's executable specification)",
            "import reference\n", "reference")


def issue_report(adapter, cause: Cause, timeout: float) -> tuple[str, bool]:
    """The upstream-ready report of ``cause`` on ``adapter``'s framework, its witness run on
    the framework and on the comparison engine now; and whether the witness reproduced."""
    from conformance import upstream
    from conformance.model.catalogue import load_catalogue

    catalogue = load_catalogue(Path(__file__).resolve().parent / "catalogue")
    ordered = cause.home + [r for r in cause.rules if r not in cause.home]
    rules = [upstream.RuleText(r.id, r.level, r.statement, r.rationale)
             for r in (catalogue.rules.get(rid) for rid in ordered) if r is not None]
    version = adapter.framework_version()
    module = adapter.module or adapter.name
    observed = compared = None
    script = ""
    if cause.witness:
        script = upstream.standalone(adapter.preamble(), module, cause.witness)
        result = run_script(script, timeout)
        observed = upstream.Observed(f"{module} {version}", result.status, trimmed(result.output))
        engine, preamble, other = _comparison(adapter)
        again = run_script(upstream.standalone(preamble, other, cause.witness), timeout)
        compared = upstream.Observed(engine, again.status, trimmed(again.output))
    text = upstream.report(framework=module, version=version, slug=cause.slug,
                           summary=cause.statement, rules=rules, script=script,
                           observed=observed, compared=compared)
    return text, observed is not None and observed.status == "reproduces"


if __name__ == "__main__":
    sys.exit(main())
