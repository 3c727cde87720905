"""nox sessions: the project's own tests, benchmarks, and the conformance runs per framework."""
from __future__ import annotations

import contextlib
import os
import sys

import nox

try:
    import fcntl  # locks the checkout's install while columns run at once
except ImportError:  # Windows
    fcntl = None

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"


CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright's own browser download is not used


def _chromium(session: nox.Session) -> str:
    """The Chromium the report's browser test drives: $AUTOGRAD_CONFORMANCE_CHROMIUM,
    /usr/bin/chromium, `chromium` on PATH, else Debian's package installed with apt-get when
    running as root (or with a password-less sudo); otherwise the session stops with one line saying how to install it."""
    import os
    import shutil

    for found in (os.environ.get("AUTOGRAD_CONFORMANCE_CHROMIUM"), CHROMIUM,
                  shutil.which("chromium"), shutil.which("chromium-browser")):
        if found and os.path.isfile(found):
            return found
    import subprocess

    root = hasattr(os, "geteuid") and os.geteuid() == 0
    sudo = [] if root else ["sudo", "-n"]  # non-root: only a sudo that asks no password
    if shutil.which("apt-get") and (root or (shutil.which("sudo") and subprocess.run(
            ["sudo", "-n", "true"], capture_output=True).returncode == 0)):
        session.log("installing Debian's chromium for the browser test (apt-get)")
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run(*sudo, "apt-get", "update", "-qq", external=True, env=env)
        session.run(*sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
                    "-qq", "chromium", external=True, env=env)
        if os.path.isfile(CHROMIUM):
            return CHROMIUM
    session.error("the report's browser test needs Chromium: install it (Debian/Ubuntu: "
                  "sudo apt-get install -y chromium) or set AUTOGRAD_CONFORMANCE_CHROMIUM to "
                  "its executable, then run nox -s tests again")


def _project_tests(session: nox.Session) -> None:
    chromium = _chromium(session)
    session.install("-e", ".[test,torch,fuzz,nox]")
    # 900 s a test (times the machine's time-limit scale, conformance/time_scale.py): a few
    # module fixtures run whole suites in child interpreters (each bounded by its own hang
    # limit, tests/hang.py); the 300 s default is sized for one conformance rule, not for them.
    session.run("pytest", "tests", "-p", "no:cacheprovider", "-n", "auto", "--dist", "loadgroup",
                "--conformance-timeout=900", *session.posargs,
                env={"AUTOGRAD_CONFORMANCE_CHROMIUM": chromium})


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The project's own tests: the reference engine and the harness (pytest-xdist, one
    worker per core; they write only under temporary directories)."""
    _project_tests(session)


#: CPU hogs per core in `tests-under-load`: twice as many busy loops as cores (a load of 2 per
#: core beside the tests' own workers, as on the shared runner of issue 35).
HOGS_PER_CORE = 2
HOG = ["sh", "-c", "while :; do :; done"]


@nox.session(python=PYTHON, name="tests-under-load")
def tests_under_load(session: nox.Session) -> None:
    """The project's tests beside CPU hogs that keep every core busy (`while :; do :; done`,
    two per core, ended when the tests end, however they end): no test's verdict may depend
    on how busy the machine is (time limits are limits on hangs: tests/hang.py,
    conformance/time_scale.py). `-- tests/harness/test_timeout.py` runs some of them."""
    import signal
    import subprocess

    hogs = [subprocess.Popen(HOG, start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(HOGS_PER_CORE * (os.cpu_count() or 1))]
    session.log(f"{len(hogs)} CPU hogs running ({' '.join(HOG)}), pids "
                f"{' '.join(str(h.pid) for h in hogs)}")
    try:
        _project_tests(session)
    finally:
        for hog in hogs:
            try:
                os.killpg(hog.pid, signal.SIGKILL)  # its own session: the shell and its loop
            except ProcessLookupError:
                pass
            hog.wait()
        session.log(f"{len(hogs)} CPU hogs ended")


@nox.session(python=PYTHON)
def screenshots(session: nox.Session) -> None:
    """The report page in headless Chromium, screenshots kept in reports/screenshots/."""
    chromium = _chromium(session)
    session.install("-e", ".[test,torch]")
    session.run("pytest", "tests/report/test_page.py::test_page_in_a_browser", "-p",
                "no:cacheprovider", *session.posargs,
                env={"AUTOGRAD_CONFORMANCE_CHROMIUM": chromium,
                     "AUTOGRAD_CONFORMANCE_SCREENSHOTS": "reports/screenshots"})


@nox.session(python=PYTHON)
def stress(session: nox.Session) -> None:
    """Long rounds: the thread scenarios, and --leak-check over the reference's own tests and
    every conformance rule on the reference (issue 7; `tests` runs short versions)."""
    import glob

    session.install("-e", ".[test,torch]")
    session.run("pytest", "-p", "no:cacheprovider", "tests/harness/test_threads.py",
                "tests/reference/test_forward_ad_threads.py",
                env={"AUTOGRAD_CONFORMANCE_STRESS_ROUNDS": "2000"})
    for _ in range(20):  # the suites' thread rules, again and again
        session.run("pytest", "-p", "no:cacheprovider", "-q", "--adapter=reference",
                    "conformance/suites", "-k", "threads")
    session.run("pytest", "-p", "no:cacheprovider", "--adapter=reference", "--leak-check",
                "conformance/suites")
    session.run("pytest", "-p", "no:cacheprovider", "--leak-check",
                *sorted(glob.glob("tests/reference/test_*.py")), *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks (pytest-benchmark): reference vs raw numpy vs torch, and the report page."""
    session.install("-e", ".[test,torch]")
    session.run("python", "-m", "pytest", "benchmarks", "--benchmark-only", *session.posargs)


@nox.session(python=PYTHON)
def mutants(session: nox.Session) -> None:
    """The suites' detection power: the conformance suites against every curated planted bug
    in the reference (conformance/mutants); prints killed/total and every survivor, writes
    reports/mutants.json. `-- --long --budget 600` also runs mutmut over reference/ for that
    many seconds (`-- --long-only --budget 600`: mutmut alone; docs/running.md)."""
    long = "--long" in session.posargs or "--long-only" in session.posargs
    session.install("-e", ".[test,mutants]" if long else ".[test]")
    session.run("python", "-m", "conformance.mutants", *session.posargs)


# -- conformance runs: one session per framework (version), results in reports/results/ ----
def _python(version: str) -> str:
    """``pythonX.Y`` from PATH, else from pyenv's versions (whose shims may not expose it)."""
    import glob
    import os
    import shutil
    import subprocess

    on_path = shutil.which(f"python{version}")  # may be a pyenv shim that refuses to run
    if on_path and subprocess.run([on_path, "-c", ""], capture_output=True).returncode == 0:
        return version
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    return found[-1] if found else version


# Which frameworks, versions, pins and Pythons: the adapters' own facts (adapters/*.py, `runs`).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adapters.base import Run, builtin_adapter_classes, runs_of  # noqa: E402  (standard library only)
from conformance.child_interpreter import pythonpath  # noqa: E402  (standard library only)

# -n 1: a worker of pytest-xdist runs the tests, so a segfault is one CRASH, not the end.
# 60 s a test: OneFlow 0.9.0 deadlocks in one thread rule, which is then a TIMEOUT, not a hang.
# Sized for an ordinary test on a quiet machine: it is multiplied by the machine's time-limit
# scale (measured at start) and by a test's own time_limit_factor (the 10,000-op chains: 10),
# so that TIMEOUT means a hang, not a slow framework on a busy machine (docs/running.md).
CONFORMANCE_ARGS = ["-p", "no:cacheprovider", "-n", "1", "--conformance-timeout=60", "conformance/suites"]


def _install_release(session: nox.Session, requirements) -> None:
    """Install a framework release exactly as pinned. A machine-wide pip constraints file (this
    workplace caps torch at the release it keeps on disk) would refuse a newer pin, so the pins
    are installed with an empty constraints file: they name their versions exactly."""
    session.install(*requirements, env={"PIP_CONSTRAINT": os.devnull})


#: report label -> (adapter name, run) of every conformance run (filled below)
ALL_RUNS: dict[str, tuple[str, Run]] = {}


def _conformance(session: nox.Session, adapter: str, run: Run) -> None:
    """The suites against ``adapter``'s ``run``; ``-- --column LABEL`` runs instead the column
    LABEL, another adapter's run with the same Python and pins, in this session's environment
    (``nox -s report`` does so for columns that share an install: the torch.compile modes of a
    torch release use that release's eager environment rather than a copy of its wheels)."""
    posargs = list(session.posargs)
    if "--column" in posargs:
        at = posargs.index("--column")
        label = posargs[at + 1] if at + 1 < len(posargs) else ""
        del posargs[at:at + 2]
        if label not in ALL_RUNS or _install_key(ALL_RUNS[label][1]) != _install_key(run):
            session.error(f"--column {label!r}: not a column with this session's Python and "
                          f"pins ({run.python}, {' '.join(run.install) or 'nothing'})")
        adapter, run = ALL_RUNS[label]
    if run.install:
        _install_release(session, run.install)
    with _checkout_install_lock():
        session.install("-e", ".[test]")
    results = f"reports/results/{run.label}.jsonl"
    session.run("pytest", f"--adapter={adapter}", f"--results={results}", *CONFORMANCE_ARGS,
                *run.pytest_args, *posargs)


@contextlib.contextmanager
def _checkout_install_lock():
    """Held while this checkout is installed into a session's environment: an editable install
    writes its metadata (``*.egg-info``) into the checkout itself, and `nox -s report` runs
    columns at once, so two installs at the same moment would write it together. A
    framework's own install needs no lock (each session has its environment)."""
    if fcntl is None:  # no flock (Windows): nox -s report runs columns one at a time there
        yield
        return
    os.makedirs(".nox", exist_ok=True)
    with open(os.path.join(".nox", "checkout-install.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _install_key(run: Run) -> tuple:
    """What a run's environment holds: its Python and its pins."""
    return run.python, tuple(run.install)


def _backend(python: str) -> str | None:
    """The stdlib ``venv`` for Pythons older than 3.9, which virtualenv no longer seeds."""
    return "venv" if tuple(int(x) for x in python.split(".")[:2]) < (3, 9) else None


def _pip_name(cls) -> str:
    """The requirement name an adapter's runs pin (``torch`` in ``torch==2.13.0``)."""
    installs = [run.install for run in runs_of(cls)]
    installs += [release["install"] for release in getattr(cls, "releases", ())]
    for install in installs:
        for requirement in install:
            if "==" in requirement:
                return requirement.partition("==")[0]
    return cls.module or cls.name


def _named_versions(name: str) -> list[str]:
    """The versions of adapter ``name`` in $AUTOGRAD_CONFORMANCE_RELEASES; a malformed value
    stops nox with one line."""
    from conformance.history import RELEASES_VARIABLE, HistoryError, named_releases

    try:
        return named_releases(name, os.environ.get(RELEASES_VARIABLE, ""),
                              known=builtin_adapter_classes())
    except HistoryError as exc:
        raise SystemExit(f"noxfile.py: {exc}") from None


def _named_runs(name: str, cls) -> list[Run]:
    """Optional runs of other releases named in $AUTOGRAD_CONFORMANCE_RELEASES
    ("torch==2.14.1"; docs/running.md): each a column of its own, with the Python and pins of
    the nearest release the adapter lists."""
    from conformance.history import release_for

    listed = {r.version for r in runs_of(cls)}
    runs = []
    for version in _named_versions(name):
        if version in listed:
            continue
        release = release_for(tuple(getattr(cls, "releases", ())), _pip_name(cls), version)
        runs.append(Run(label=f"{name}-{version}", version=version, required=False,
                        install=release["install"], python=release["python"]))
    return runs


def _define_conformance_sessions() -> dict:
    """One session per built-in adapter: ``conformance-<name>``, parametrized by version
    (``conformance-torch(2.15.0)``) when the adapter makes several runs, each in the Python
    its run names. Returns report label -> (session name, run)."""
    columns = {}
    for name, cls in builtin_adapter_classes().items():
        runs = list(runs_of(cls)) + _named_runs(name, cls)
        if not runs:
            continue
        ALL_RUNS.update((run.label, (name, run)) for run in runs)
        session_name = f"conformance-{name}"
        if len(runs) == 1:
            run = runs[0]

            def one(session: nox.Session, _name=name, _run=run) -> None:
                _conformance(session, _name, _run)

            one.__doc__ = f"The suites against {name} {run.version or ''} (Python {run.python})."
            nox.session(name=session_name, python=_python(run.python))(one)
            columns[run.label] = (session_name, run)
            continue
        # several runs (versions) of one framework: a session per version, each in its own
        # Python (nox cannot parametrize the interpreter: one named session each)
        for run in runs:
            def one_version(session: nox.Session, _name=name, _run=run) -> None:
                _conformance(session, _name, _run)

            one_version.__doc__ = (f"The suites against {name} {run.version} "
                                   f"(Python {run.python}).")
            versioned = f"{session_name}({run.version})"
            nox.session(name=versioned, python=_python(run.python),
                        venv_backend=_backend(run.python))(one_version)
            columns[run.label] = (versioned, run)
    return columns


def _report_sessions(columns: dict) -> dict:
    """report label -> (session, run): a run whose Python and pins an earlier column's session
    has runs in that session (``-- --column LABEL``), so each install is made once."""
    hosts: dict[tuple, str] = {}
    out = {}
    for label, (name, run) in columns.items():
        out[label] = (hosts.setdefault(_install_key(run), name), run)
    return out


REPORT_RUNS = _report_sessions(_define_conformance_sessions())


# -- history: every rule's evidence under older releases (conformance/history) -------------
def _history_releases() -> dict:
    """session name -> (adapter name, release): each release an adapter lists (``releases``)
    plus those named in $AUTOGRAD_CONFORMANCE_RELEASES."""
    from conformance.history import release_for

    found = {}
    for name, cls in builtin_adapter_classes().items():
        releases = tuple(getattr(cls, "releases", ()))
        versions = [r["version"] for r in releases]
        versions += [v for v in _named_versions(name) if v not in versions]
        for version in versions:
            found[f"history-{name}({version})"] = (name, release_for(releases, _pip_name(cls), version))
    return found


def _record_history(session: nox.Session, adapter: str, release: dict) -> None:
    """Install the release in this session's venv (its own Python), then run the snippets in
    it from the harness's interpreter (nox's own: the harness needs Python >= 3.10)."""
    _install_release(session, release["install"])
    python = os.path.join(session.virtualenv.bin, "python")
    session.run(sys.executable, "-m", "conformance.history", "record", adapter, release["version"],
                "--python", python, *session.posargs, external=True, env={"PYTHONPATH": pythonpath()})


def _define_history_sessions() -> dict:
    """``history-<adapter>(<version>)``: one session per release, in that release's Python."""
    by_adapter: dict = {}
    for session_name, (adapter, release) in _history_releases().items():
        by_adapter.setdefault(adapter, {})[release["version"]] = release

        def one(session: nox.Session, _adapter=adapter, _release=release) -> None:
            _record_history(session, _adapter, _release)

        one.__doc__ = (f"{adapter} {release['version']}'s evidence output (Python "
                       f"{release['python']}), into conformance/history/{adapter}/ (resumable).")
        nox.session(name=session_name, python=_python(release["python"]),
                    venv_backend=_backend(release["python"]))(one)
    return by_adapter


HISTORY_RELEASES = _define_history_sessions()


@nox.session(python=False)
def history(session: nox.Session) -> None:
    """Record every release the adapters list that has no history file yet or stale entries
    (one history-<adapter>(<version>) session each, in sequence), then show the changes.
    `-- torch==1.2.0 ...` limits it to those releases. Spread over machines: docs/running.md."""
    wanted = {a.replace("==", "(") + ")" for a in session.posargs}
    for adapter, by_version in HISTORY_RELEASES.items():
        for version in by_version:
            name = f"history-{adapter}({version})"
            if wanted and f"{adapter}({version})" not in wanted:
                continue
            session.log(f"{name}: recording")
            session.run(sys.executable, "-m", "nox", "-s", name, external=True)
    session.run(sys.executable, "-m", "conformance.history", "changes", external=True,
                env={"PYTHONPATH": pythonpath()})


@nox.session(python=False)
def history_merge(session: nox.Session) -> None:
    """Combine release files recorded on other machines: `nox -s history_merge -- DIR ...`
    (each DIR a copy of another machine's conformance/history, e.g. a CI artifact)."""
    if not session.posargs:
        session.error("name the folders to merge: nox -s history_merge -- artifacts/history-*")
    session.run(sys.executable, "-m", "conformance.history", "merge", *session.posargs,
                external=True, env={"PYTHONPATH": pythonpath()})


@nox.session(python=False)
def history_modes(session: nox.Session) -> None:
    """Record what each mode (torch under torch.compile) changes against eager, per release,
    from the runs `nox -s report` left in reports/results (or `-- DIR`): into
    conformance/history/modes/<mode>/<version>.json (docs/compile-modes.md)."""
    session.run(sys.executable, "-m", "conformance.history", "modes",
                *(session.posargs or ["reports/results"]),
                external=True, env={"PYTHONPATH": pythonpath()})


# -- differential testing (docs/differential.md) ---------------------------------------------
@nox.session(python=PYTHON)
def explore(session: nox.Session) -> None:
    """Long random differential search against the reference; findings go to
    reports/results/explore-<adapter>.jsonl.

    nox -s explore -- --adapter torch --examples 5000
    nox -s explore -- --adapter oneflow --python /opt/of09/bin/python --examples 2000
    (any option of `python -m conformance.differential --help`; default 2000 examples)
    """
    session.install("-e", ".[test,torch]")
    args = list(session.posargs)
    if "--examples" not in args:
        args += ["--examples", "2000"]
    session.run("python", "-m", "conformance.differential", *args, success_codes=[0, 1])


@nox.session(python=PYTHON)
def fuzz(session: nox.Session) -> None:
    """The differential search on HypoFuzz: worker processes sharing one Hypothesis example
    database for a bounded time (default: 2 workers, 120 s, torch); new divergences, shrunk to
    scripts, go to reports/results/explore-<adapter>.jsonl and are printed at the end.

    nox -s fuzz -- --adapter torch --workers 16 --seconds 3600 --database /shared/fuzz-db
    (any option of `python -m conformance.differential.fuzz --help`; docs/differential.md)
    """
    session.install("-e", ".[test,torch,fuzz]")
    session.run("python", "-m", "conformance.differential.fuzz", *session.posargs,
                success_codes=[0, 1])


# -- the comparison report: every framework's run, one page ------------------------------------
# label -> (nox session that writes reports/results/<label>.jsonl, what it installs)
REPORT_COLUMNS = {label: (name, list(run.install) or [label]) for label, (name, run) in REPORT_RUNS.items()}


def _suite_digest(spec: list[str]) -> str:
    """What a run's results depend on: the suites, catalogue, harness, adapters, reference."""
    import hashlib
    from pathlib import Path

    h = hashlib.sha256(repr(spec).encode())
    for top in ("conformance", "adapters", "reference"):
        for path in sorted(Path(top).rglob("*")):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts \
                    and "report" not in path.parts and "repro" not in path.parts:
                h.update(str(path).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _harness():
    """The checkout's conformance package on the path (standard library only: results files
    and atomic writes)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))


def _complete(results) -> bool:
    """A complete results file of the current schema (conformance.results reads it): not
    killed, not interrupted (tests not run), so it can be reused."""
    _harness()
    from conformance.results import end_line

    return end_line(results) is not None


def _install_failed(output: str) -> bool:
    """Whether a conformance session's output (it left no results file) says its install
    failed: the column is then "not installed", a warning for an optional one."""
    return ("pip install" in output and "failed" in output) or "not found" in output \
        or "ERROR: " in output


def _write_whole(path, data) -> None:
    """A stamp or status file, written whole or not at all (conformance.outputs)."""
    import json

    _harness()
    from conformance.outputs import write_text

    write_text(path, json.dumps(data))


@nox.session(python=PYTHON)
def spec(session: nox.Session) -> None:
    """The specification as one page, reports/spec.html: every rule with its evidence, tests,
    reference lines and (after `nox -s report`) each framework's status."""
    session.install("-e", ".")
    session.run("python", "-m", "conformance.spec", *session.posargs)


#: Columns run at once by `nox -s report` ($AUTOGRAD_CONFORMANCE_REPORT_JOBS, default one per
#: core, at most 4). Each run uses about one core (`-n 1`: one test worker) and its install
#: waits on the network, so on 2 cores two at a time nearly halve the report's wall time
#: (issue 35: CI ran the 16 columns one after another and passed its 90 minutes).
REPORT_JOBS_VARIABLE = "AUTOGRAD_CONFORMANCE_REPORT_JOBS"


def _report_jobs() -> int:
    raw = os.environ.get(REPORT_JOBS_VARIABLE, "").strip()
    if not raw:
        if fcntl is None:  # the checkout's install cannot be locked: one column at a time
            return 1
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return max(1, min(4, cores or 1))
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise SystemExit(f"noxfile.py: ${REPORT_JOBS_VARIABLE}={raw!r}: give a whole number of "
                         f"columns to run at once, from 1 to 64 (e.g. 2), or leave it unset")
    return int(raw)


def _column_groups(columns: dict) -> list[list[str]]:
    """The report's columns in groups that share one nox session (one install: a torch
    release's eager and torch.compile columns): a group runs its columns one after another,
    since two runs of one session at once would install into one environment together.
    Largest group first, so that the long groups start early."""
    groups: dict[str, list[str]] = {}
    for label, (name, _spec) in columns.items():
        groups.setdefault(name, []).append(label)
    return sorted(groups.values(), key=len, reverse=True)


def _report_column(session: nox.Session, label: str, name: str, spec: list, force: bool,
                   results_dir) -> None:
    """One column of the report: reuse its results when the suites and framework are
    unchanged, else run (or resume) its nox session until it leaves a complete results file;
    a column without results gets a status file saying why."""
    import json
    import sys

    from conformance.results import column_status

    results = results_dir / f"{label}.jsonl"
    stamp = results_dir / f"{label}.stamp.json"
    digest = _suite_digest(spec)
    same = not force and stamp.is_file() and json.loads(stamp.read_text()).get("digest") == digest
    if same and _complete(results):
        session.log(f"{label}: reusing {results} (suites and framework unchanged)")
        return
    # an incomplete column of the same suites and framework goes on where it stopped
    resume = same and results.is_file()
    if not resume:
        results.unlink(missing_ok=True)
    column_status.clear_status(results_dir, label)
    session.log(f"{label}: running nox -s {name!r}" + (" (resuming)" if resume else ""))
    # divergences fail the pytest run: that is the point, not a reason to stop the report
    done = column_status.run_column(
        lambda again: session.run(sys.executable, "-m", "nox", "-s", name, "--",
                                  "--column", label, *(("--resume",) if again else ()),
                                  external=True, silent=True, success_codes=range(0, 256)),
        results, _install_failed, session.warn, resume_first=resume)
    tail = "\n".join(done.output.strip().splitlines()[-8:])
    if results.is_file():
        _write_whole(stamp, {"digest": digest, "session": name})
        if not done.complete:  # no attempt completed it
            column_status.write_status(results_dir, label, column_status.ColumnStatus(
                column_status.MISSING, f"nox -s {name!r} did not complete in "
                f"{len(done.incomplete)} attempts: "
                + " | ".join(done.incomplete)))
        session.log(f"{label}: {tail.splitlines()[-1] if tail else 'done'}")
        return
    detail = (f"nox -s {name!r} could not install {' '.join(spec)}: " if done.install_failed
              else f"nox -s {name!r} produced no results: "
              + "".join(f"{a} | " for a in done.incomplete)) + tail[-600:]
    column_status.write_status(results_dir, label, column_status.ColumnStatus(
        column_status.NOT_INSTALLED if done.install_failed else column_status.MISSING,
        detail))
    session.warn(f"{label}: {detail}")


@nox.session(python=PYTHON)
def report(session: nox.Session) -> None:
    """Run the suites against every framework (reusing unchanged results) and write
    reports/index.html, reports/results.json and reports/junit/. `-- --force` reruns all.
    Columns of different installs run at once ($AUTOGRAD_CONFORMANCE_REPORT_JOBS)."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    _harness()
    force = "--force" in session.posargs
    results_dir = Path("reports/results")
    results_dir.mkdir(parents=True, exist_ok=True)
    groups = _column_groups(REPORT_COLUMNS)
    jobs = min(_report_jobs(), len(groups)) or 1
    session.log(f"{len(REPORT_COLUMNS)} columns in {len(groups)} installs, {jobs} at a time")

    def run_group(labels):
        for label in labels:
            name, spec = REPORT_COLUMNS[label]
            _report_column(session, label, name, spec, force, results_dir)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for finished in [pool.submit(run_group, labels) for labels in groups]:
            finished.result()  # a harness error in one group is raised here, after the others
    session.install("-e", ".[report]")
    # every built-in run is a column, one without results shown as missing; spec.html beside
    session.run("python", "-m", "conformance.report", "--builtin-columns")
