"""pytest plugin (entry point ``pytest11``): runs the suites against one adapter.

This module only wires pytest hooks to the concepts that live in their own modules:
``options`` (command line), ``catalogue`` (rules), ``traceability`` (test <-> rule),
``outcomes`` (classification and pytest status), ``expectations`` (known divergences),
``results`` (JSON lines, tallies), ``summary`` (terminal output), ``timeout``
(``--conformance-timeout``: TIMEOUT), ``leakcheck`` (``--leak-check``: LEAK),
``isolation`` (the adapter and its framework loaded first in a child interpreter) and
``witness`` (each root cause's witness, run beside the tests and recorded per cause).

The harness is *active* only when the run collects from the suites directory; the
project's own tests (``tests/``) stay ordinary pytest tests that may still use the
``fw``/``adapter``/``device`` fixtures.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.base import Adapter, FrameworkNotInstalled, load_adapter
from conformance import (gc_freeze, hookspecs, import_names, isolation, leakcheck, options,
                         side_checks, summary, survival, time_scale, timeout, traceability,
                         witness)
from conformance.model import features
from conformance.model.catalogue import Catalogue, load_catalogue
from conformance.model import causes as declared_causes, expectations as declared_expectations
from conformance.model.expectations import (ExpectationSet, ExpectationsFile, coverage_note,
                                           load_expectations)
from conformance.outcomes import (HELD, Outcome, Verdict, blocked_by, first_lines, judge,
                                  missing_feature, test_outcome)
from conformance.results import (PhaseInfo, ResultsFile, RunHeader, Tally, TestRecord,
                                 TestRecords, WitnessRecord, phase_info)
from conformance.results.run_file import Run, resumable
from conformance.results.locks import InUse
from conformance.results.naming import file_of, test_name
from conformance.tomlfile import FileError


@dataclasses.dataclass
class Harness:
    """Per-run state, kept in ``config.stash``."""

    adapter: Adapter
    device: str
    suites_dir: Path
    catalogue_dir: Path
    catalogue: Catalogue | None = None  # None: the run does not touch the suites
    expectations: ExpectationSet = dataclasses.field(default_factory=ExpectationSet)
    #: the expectations file, read once for the whole run (conformance.model.expectations)
    expectations_file: ExpectationsFile | None = None
    run: RunHeader = dataclasses.field(default_factory=RunHeader)  # adapter, version, device...
    records: TestRecords | None = None
    tally: Tally = dataclasses.field(default_factory=Tally)
    results: ResultsFile | None = None
    watchdog: timeout.Watchdog | None = None
    #: the adapter's declared-missing features that the framework contradicts, or why they
    #: were not checked (conformance/feature_claims.py; from the start-up child interpreter)
    declarations: list[str] = dataclasses.field(default_factory=list)
    #: the earlier, incomplete run this one goes on from (--resume, or a supervised child
    #: after a crash: conformance/survival.py); its tests are not run again
    resumed: Run | None = None
    #: tests recorded already (deselected): the resumed run's, or xdist's workerinput
    done: frozenset = frozenset()
    #: tests of the resumed run, or crashes of earlier children, that failed the run (-x)
    failed_before: int = 0
    stopped: list = dataclasses.field(default_factory=list)
    #: nodeid -> rule id of each test left out as done (for the CRASH of one whose process died)
    rules_left_out: dict = dataclasses.field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.catalogue is not None

    def is_suite_path(self, path: Path) -> bool:
        return self.active and self.suites_dir in Path(path).resolve().parents

    def rule_of(self, item):
        ids = traceability.rule_ids_of(item)
        return self.catalogue.get(ids[0]) if len(ids) == 1 and isinstance(ids[0], str) else None


#: Witnesses run at a time: most of a witness's time is its interpreter and framework
#: starting (a few seconds, much of it waiting on the disk), so two overlap well even on two
#: cores; at most four, or half the cores.
WITNESS_WORKERS = min(4, max(2, (os.cpu_count() or 2) // 2))

HARNESS = pytest.StashKey[Harness]()
OBSERVED = pytest.StashKey[list]()


def harness(config) -> Harness:
    return config.stash[HARNESS]


def _is_controller(config) -> bool:
    return not hasattr(config, "workerinput")


def _touches(config, directory: Path) -> bool:
    """Whether the run's paths include ``directory`` or something inside it."""
    for arg in config.args:
        path = _arg_path(config, arg)
        if path == directory or directory in path.parents or path in directory.parents:
            return True
    return False


def _arg_path(config, arg) -> Path:
    """Where a test argument points: a path, or under ``--pyargs`` a module's file (a
    package's directory), so that ``--pyargs conformance.suites.test_hooks`` is recognised
    as a suite run exactly like its file path."""
    text = file_of(str(arg))
    path = (Path(config.invocation_params.dir) / text).resolve()
    if not path.exists() and config.getoption("pyargs", False):
        try:
            spec = importlib.util.find_spec(text)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            origin = Path(spec.origin).resolve()
            path = origin.parent if spec.submodule_search_locations else origin
    return path


def _installed_suites_wanted(config) -> bool:
    """``--adapter`` given, and pytest found neither test paths nor ``testpaths``."""
    given = any(str(a) == "--adapter" or str(a).startswith("--adapter=")
                for a in config.invocation_params.args)
    source = getattr(config, "args_source", None)
    return given and source == pytest.Config.ArgsSource.INVOCATION_DIR


# -- configuration -------------------------------------------------------------------
def pytest_addoption(parser):
    options.add_options(parser)


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(hookspecs)


def _suite_digest(suites_dir: Path) -> dict[str, Any]:
    """``suite_digest`` for the header: the hash of the suite source the run reads, as
    reproduction scripts find it again (conformance.model.suite_source); None for suites outside a
    ``conformance/suites`` directory of this layout."""
    from conformance.model import suite_source as source

    suites_dir = Path(suites_dir).resolve()
    root = suites_dir.parents[1] if len(suites_dir.parents) > 1 else suites_dir
    return {"suite_digest": source.digest(root) if suites_dir == root / source.SUITES else None}


def _open_results(raw: str, kept: list | None = None) -> ResultsFile:
    """The ``--results`` file, held by this run (UsageError: another run holds it, or it
    cannot be written); ``kept``: the records of the run it resumes."""
    try:
        return ResultsFile(Path(raw), kept)
    except InUse as exc:
        raise pytest.UsageError(f"--results {exc}") from None
    except OSError as exc:
        raise pytest.UsageError(f"--results {raw}: cannot write it ({exc.strerror or exc}); "
                                f"choose a writable path") from None


def _stop_before_tests(config, suites_dir: Path, spec: str, message: str):
    """The run cannot start: say why, and record it in the results file if one was asked."""
    results = config.getoption("results")
    if results and _is_controller(config):
        try:
            out = _open_results(results)
            out.header(RunHeader(adapter=spec, adapter_spec=spec, device=config.getoption("device"),
                                 python=platform.python_version(), **_suite_digest(suites_dir)),
                       suites_dir, 0)
            out.close(pytest.ExitCode.USAGE_ERROR, Tally(), error=message)
        except OSError as exc:
            message += f" (and --results {results} could not be written: {exc.strerror or exc})"
        except pytest.UsageError as exc:  # another run holds the file, or it cannot be made
            message += f" (and {exc})"
    raise pytest.UsageError(message)


def _distributed(config) -> bool:
    """Whether pytest-xdist runs the tests in workers (the controller runs none)."""
    return (config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))
            and not config.getoption("collectonly"))


def _load_in_process(spec: str, device: str):
    """The adapter, its framework imported and the device checked; ValueError: one line."""
    adapter = load_adapter(spec)
    try:
        adapter.fw
        adapter.check_device(device)
        version = adapter.framework_version()
    except (ValueError, FrameworkNotInstalled):
        raise
    except Exception as exc:  # noqa: BLE001 - the framework's or the adapter's own failure
        raise ValueError(f"adapter {adapter.name!r}: {type(exc).__name__}: "
                         f"{isolation.first_line(exc)}") from None
    return adapter, version


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Without pytest-xdist, a suite run is supervised: a test that kills or corrupts the
    process is CRASH and a fresh process goes on with the rest (conformance/survival.py)."""
    try:
        suites_dir = options.ini_path(config, "conformance_suites")
        touches = _installed_suites_wanted(config) or _touches(config, suites_dir)
    except (ValueError, OSError):
        return None  # pytest_configure says what is wrong
    return survival.supervise(config) if survival.wanted(config, touches) else None


def pytest_configure(config):
    config.addinivalue_line("markers", "rule(id): the conformance rule this test checks")
    config.addinivalue_line("markers", "judged_without(*features): features the test touches but "
                                       "guards itself (their absence does not make it UNSUPPORTED)")
    config.addinivalue_line("markers", "needs(*features): registry features the test needs "
                            "beyond what it touches (conformance/model/features.py)")
    config.addinivalue_line("markers", "time_limit_factor(n): the test's work legitimately takes "
                            "up to n ordinary tests' time; its limit is n × --conformance-timeout "
                            "(conformance/time_scale.py)")
    config.addinivalue_line("markers", "subject(*names): methods or fields of the framework's objects "
                            "the test's rule is about, called as themselves (conformance/spelling.py)")
    spec = config.getoption("adapter")
    device = config.getoption("device")
    suites_dir = options.ini_path(config, "conformance_suites")
    if _installed_suites_wanted(config):
        # `pytest --adapter=myfw` anywhere (a framework's CI, the package installed from its
        # wheel): no test paths and no testpaths in an ini file means the installed suites.
        config.args = [str(suites_dir)]
    try:
        if _is_controller(config):
            results = config.getoption("results")
            if results is not None and not results.strip():
                raise ValueError("--results is empty (an unset variable?); give a file path, "
                                 "e.g. --results=reports/results/NAME.jsonl, or leave it out")
            problem = options.swallowed_path_problem(config) or (
                results and options.results_problem(results, Path(config.invocation_params.dir)))
            if problem:
                raise ValueError(problem)
        options.check_values(config)
        limit = options.timeout_seconds(config)
        warmups, runs = options.leak_check_runs(config)
        witness_limit = options.witness_timeout(config)
        startup_limit = options.startup_timeout(config)
        scale = time_scale.set_scale(options.time_limit_scale(config))  # conformance/time_scale.py
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    touches = _touches(config, suites_dir)
    if _is_controller(config) and touches:
        # another distribution's `adapters` (or `reference`, `conformance`) would run its code
        # in place of ours: one line before the adapter and its framework load (import_names.py)
        problem = import_names.collision_problem()
        if problem:
            raise pytest.UsageError(problem)
    facts = None
    if _is_controller(config) and touches:
        # the adapter's module and its framework are loaded first in a child interpreter
        # (conformance/isolation.py): a hang, a crash, sys.exit or any exception is one line
        try:
            facts = isolation.probe(spec, device, time_scale.scaled(startup_limit),
                                    timeout_option="--startup-timeout")
        except isolation.ProbeFailed as exc:
            if exc.kind == "device":
                raise pytest.UsageError(str(exc)) from None
            _stop_before_tests(config, suites_dir, spec, str(exc))
    if facts is not None and _distributed(config):
        # pytest-xdist: the workers run the tests; the controller never imports the framework
        adapter, version = isolation.ProbedAdapter(facts), facts.version
    else:
        try:
            adapter, version = _load_in_process(spec, device)
        except (ValueError, FrameworkNotInstalled) as exc:
            if touches:
                _stop_before_tests(config, suites_dir, spec, isolation.first_line(exc))
            raise pytest.UsageError(isolation.first_line(exc)) from None
    _check_declared_features(adapter)
    h = Harness(adapter=adapter, device=device, suites_dir=suites_dir,
                catalogue_dir=options.ini_path(config, "conformance_catalogue"),
                declarations=declaration_lines(facts))
    config.stash[HARNESS] = h
    leak_check = config.getoption("leak_check")
    if leak_check:
        if importlib.util.find_spec("objgraph") is None:
            raise pytest.UsageError("--leak-check needs objgraph: pip install objgraph")
        config.pluginmanager.register(
            leakcheck.LeakChecker(warmups, runs, lambda item: item.stash.__delitem__(OBSERVED)
                                  if OBSERVED in item.stash else None),
            "autograd-conformance-leakcheck")
    child = survival.CHILD
    h.watchdog = timeout.Watchdog(config, limit, scale=1 + (warmups + runs + 1 if leak_check else 0),
                                  time_limit_scale=scale,
                                  directory=child.directory if child else None)
    config.pluginmanager.register(h.watchdog, "autograd-conformance-timeout")
    if not touches:
        return
    if not _is_controller(config) or child is not None:  # this process runs the tests
        config.pluginmanager.register(survival.Guard(h.watchdog.directory),
                                      "autograd-conformance-guard")
        if not _is_controller(config):
            h.done = frozenset(config.workerinput.get(survival.WORKERINPUT_KEY, ()))
    try:
        h.catalogue = load_catalogue(h.catalogue_dir)
        path = config.getoption("expectations")
        if path is not None and not Path(path).is_file():
            raise FileError(f"--expectations {path}: "
                            + ("a directory; give a file" if Path(path).is_dir()
                               else "not a regular file (a FIFO, device or socket); give a file"
                               if Path(path).exists() else "no such file"))
        h.expectations_file = declared_expectations.read(
            Path(path) if path else adapter.expectations_file())
        h.expectations = load_expectations(h.expectations_file, h.catalogue.rules, version,
                                           traceability.test_names_by_rule(h.suites_dir))
    except FileError as exc:
        raise pytest.UsageError(str(exc)) from None
    h.run = RunHeader(adapter=adapter.name, framework_version=version, device=device,
                      python=platform.python_version())
    if _is_controller(config):
        h.records = TestRecords(h.run)
        results = config.getoption("results") or (str(child.private_results) if child else None)
        resume = bool(results) and (config.getoption("resume") or (child is not None
                                                                   and child.number > 1))
        if config.getoption("resume") and not config.getoption("results"):
            raise pytest.UsageError("--resume needs --results=PATH: the file of the run to go "
                                    "on from")
        h.resumed = _resumed_run(Path(results), spec, version) if resume else None
        if child is not None and child.number > 1:  # the tests earlier children died in
            died_in = frozenset(survival.crashed(child.directory))
            h.done |= died_in
            h.failed_before += len(died_in)
        if h.resumed is not None:
            h.done |= frozenset(t.nodeid for t in h.resumed.tests)
            h.failed_before += sum(map(_fails, h.resumed.tests))
            h.results = _open_results(results, [h.resumed.header, *h.resumed.tests,
                                                *h.resumed.witnesses])
        elif results:
            h.results = _open_results(results)
            # adapter_spec: how this run named its adapter (a built-in name, an entry point or
            # package.module:Class), so that scripts made from the results load it the same way
            # conformance_timeout / leak_check: what makes a test TIMEOUT or LEAK, which a
            # reproduction script applies the same way
            try:
                h.results.header(dataclasses.replace(
                    h.run, adapter_spec=spec, conformance_timeout=limit,
                    leak_check=[warmups, runs] if leak_check else None,
                    expectations_note=_expectations_note(config, h) or None,
                    declarations=list(h.declarations) or None,
                    unsupported=dict(getattr(h.adapter, "unsupported", None) or {}) or None,
                    **_suite_digest(h.suites_dir)), h.suites_dir, len(h.catalogue.rules))
            except OSError as exc:  # a full disk (ENOSPC) or a file system that refuses it
                raise pytest.UsageError(f"--results {results}: cannot write it ({exc.strerror or exc}); "
                                        f"free space or choose a writable path") from None
        controller = Controller(config, h, private_results=not config.getoption("results"))
        config.pluginmanager.register(controller, "autograd-conformance-controller")
        if not config.getoption("no_witnesses") and not config.getoption("collectonly"):
            # under --leak-check they run after the tests: objects and memory a witness
            # thread allocates mid-test would count against the test being measured
            controller.start_witnesses(h.expectations_file, spec,
                                       time_scale.scaled(witness_limit),
                                       deferred=bool(leak_check))


def _resumed_run(path: Path, spec: str, version: str) -> Run | None:
    """The incomplete run in ``path`` to go on from (None: none there, start afresh); one of
    another adapter or framework version is a usage error (its records would be mixed in)."""
    run = resumable(path)
    if run is None:
        return None
    header = run.header
    if header.adapter_to_load != spec or header.framework_version != version:
        raise pytest.UsageError(
            f"--resume: {path} holds a run of {header.adapter_to_load} "
            f"{header.framework_version}, not of {spec} {version}; run without --resume "
            f"or choose that file's adapter")
    return run


def pytest_collection_modifyitems(config, items):
    """Tests the resumed run recorded already are not run again (deselected)."""
    h = config.stash.get(HARNESS, None)
    if h is None or not h.done:
        return
    kept = [item for item in items if item.nodeid not in h.done]
    maxfail = config.getoption("maxfail", 0)
    if maxfail and h.failed_before >= maxfail:  # -x: an earlier child's CRASH stops the run
        h.stopped = [item.nodeid for item in kept]  # not run: the end line says so
        kept = []
    for item in items:
        if item.nodeid in h.done and (rule := h.active and h.rule_of(item)):
            h.rules_left_out[item.nodeid] = rule.id
    if len(kept) != len(items):
        chosen = {item.nodeid for item in kept}
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid not in chosen])
        items[:] = kept


def pytest_report_header(config):
    h = config.stash.get(HARNESS, None)
    if h is None or not h.active:
        return None
    return (f"conformance: adapter {h.adapter.name} {h.run.framework_version}, device "
            f"{h.device}, {len(h.catalogue.rules)} rules, "
            f"{len(h.expectations)} expectations"
            + (f"; {note}" if (note := _expectations_note(config, h)) else ""))


def _expectations_note(config, h) -> str:
    """"" unless the expectations were not written for this framework version (a run of
    another release says so in its header; conformance.model.expectations.coverage_note)."""
    return coverage_note(h.expectations_file, h.run.framework_version)


def _check_declared_features(adapter: Adapter) -> None:
    """An ``unsupported`` key the feature registry does not name is a usage error (a typo
    would otherwise silently declare nothing)."""
    try:
        problem = features.unknown_keys_problem(adapter)
    except FileError as exc:
        raise pytest.UsageError(str(exc)) from None
    if problem:
        raise pytest.UsageError(problem)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A suite test that needs a feature the adapter declares missing ends UNSUPPORTED, naming
    it, before its fixtures or body run (conformance/model/features.py). Before it, what is
    alive is frozen out of the collector's walk (conformance/gc_freeze.py)."""
    h = item.config.stash.get(HARNESS, None)
    if h is None or not h.is_suite_path(item.path):
        return
    if not item.config.getoption("no_gc_freeze"):
        gc_freeze.before_test()
    side_checks.begin()
    callspec = getattr(item, "callspec", None)
    missing = features.missing_for(h.adapter, features.needed_by_item(
        h.suites_dir, Path(item.path), getattr(item, "originalname", item.name),
        [m.args for m in item.iter_markers("needs")],
        [m.args for m in item.iter_markers("judged_without")],
        indices=dict(getattr(callspec, "indices", {}) or {})))
    if missing is not None:
        raise features.unsupported(h.adapter, missing)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    """Once the tests are done, what they froze is thawed, before the summaries (and so before a
    program that ran this session in-process, pytester say, goes on): code that
    runs there searches the heap too (Hypothesis's plugin, imported at the terminal summary,
    has Trio register its random generator, and checks with ``gc.get_referrers`` that
    something holds it: frozen holders are invisible, and it warned)."""
    gc_freeze.thaw_if_frozen()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After a suite test, what it left behind is undone (``Adapter.after_test``): grad mode
    is back on whatever the test or the framework left (a leftover no_grad would make every
    later test's ops untracked, one framework bug judged as a cascade of unrelated ones), and
    an adapter's own process-wide state (a compiled region Dynamo gave up on) is restored."""
    h = item.config.stash.get(HARNESS, None)
    if h is not None and h.is_suite_path(item.path):
        h.adapter.after_test()


# -- fixtures ------------------------------------------------------------------------
@pytest.fixture(scope="session")
def adapter(request) -> Adapter:
    """The adapter of the framework under test (``--adapter``)."""
    return harness(request.config).adapter


@pytest.fixture(scope="session")
def fw(adapter):
    """The framework's torch-shaped namespace (``torch``, ``oneflow``, ``reference``)."""
    return adapter.fw


@pytest.fixture(scope="session")
def device(request) -> str:
    """The device string the suites create tensors on (``--device``)."""
    return harness(request.config).device


@pytest.fixture
def observe(request):
    """For IMPLEMENTATION-DEFINED rules: ``observe(value)`` records what the framework did.

    The value is reported (outcome OBSERVED) instead of being judged. JSON-representable
    values are kept as they are, anything else as its ``repr``.
    """
    values = request.node.stash.setdefault(OBSERVED, [])

    def record(value) -> None:
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        values.append(value)

    return record


# -- collection: every suite test names one rule, every rule has a test ----------------
@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    h = collector.config.stash.get(HARNESS, None)
    if h is None or not h.active or report.outcome != "passed":
        return report
    path = Path(collector.path).resolve()
    problems: list[str] = []
    if path == h.suites_dir and isinstance(collector, (pytest.Dir, pytest.Package)):
        problems = traceability.directory_problems(h.suites_dir, h.catalogue)
    elif isinstance(collector, (pytest.Module, pytest.Class)) and h.is_suite_path(path):
        suite = traceability.suite_of_module(path)
        if suite is not None:
            problems = [p for child in report.result if isinstance(child, pytest.Item)
                        if (p := traceability.item_problem(child, h.catalogue, suite))]
            if isinstance(collector, pytest.Module):
                missing = traceability.untested_rules(collector.obj, h.catalogue, suite)
                problems += [f"rule {r!r} has no test in {path.name}; add a test marked "
                             f"@rule({r!r}) or remove the rule" for r in missing]
    if problems:
        report.outcome = "failed"
        report.longrepr = (f"{len(problems)} rule/test traceability problem(s) "
                           f"(docs/writing-rules.md):\n  " + "\n  ".join(problems))
        report.result = []
    return report


# -- outcomes ------------------------------------------------------------------------
def _apply(report, verdict: Verdict, message: str, item, rule, expectation) -> None:
    """Give the pytest report the status the verdict calls for (see conformance.outcomes)."""
    if verdict.status == "passed":
        report.outcome = "passed"
    elif verdict.status == "skipped":
        path, lineno, _ = item.location
        report.outcome = "skipped"
        report.longrepr = (str(path), (lineno or 0) + 1, f"{verdict.actual}: {message}")
    elif verdict.status == "xfailed":
        report.outcome = "skipped"
        report.wasxfail = f"{verdict.actual} as expected: {expectation.reason}"
    else:
        report.outcome = "failed"
        if report.longrepr is None:
            report.longrepr = verdict.note or message
        elif verdict.note:
            report.sections.append(("conformance expectation", verdict.note))
        report.sections.append((f"conformance rule {rule.id} [{rule.level}]",
                                f"{rule.statement}\nwhy: {rule.rationale}"))


def _observed(item):
    values = item.stash.get(OBSERVED, [])
    return None if not values else values[0] if len(values) == 1 else values


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    h = item.config.stash.get(HARNESS, None)
    leak = leakcheck.finding_of(item) if call.when == "call" else None
    if h is None or not h.is_suite_path(item.path):
        if leak is not None and report.passed:  # a project test: fails with the word LEAK
            report.outcome = "failed"
            report.longrepr = leak.message()
            PhaseInfo(outcome=str(Outcome.LEAK), fails=True).attach(report)
        return report
    rule = h.rule_of(item)
    if rule is None:  # collection already refused it; be safe if collection was bypassed
        return report
    info = PhaseInfo(rule=rule.id, suite=rule.suite, level=rule.level, outcome=None)
    not_checked = list(side_checks.taken()) if call.when == "call" else []
    if not_checked:
        report.sections.append(("conformance: side observations not checked",
                                "\n".join(not_checked)))
    if call.when == "call" or report.outcome != "passed":
        custom = item.ihook.pytest_conformance_classify(item=item, call=call)
        exc = call.excinfo.value if call.excinfo is not None else None
        if custom is not None:
            actual = Outcome(custom)
            message = first_lines(f"{type(exc).__name__}: {exc}") if exc else ""
        else:
            actual, message = test_outcome(exc, rule.id, rule.level,
                                           bool(item.stash.get(OBSERVED, [])))
        if leak is not None and actual in HELD:
            actual, message = Outcome.LEAK, leak.message()
        expectation = h.expectations.get(rule.id, item.name)
        verdict = judge(actual, expectation.outcome if expectation else None,
                        expectation.where() if expectation else "",
                        expectation.flaky if expectation else ())
        _apply(report, verdict, message, item, rule, expectation)
        info = PhaseInfo(
            rule=rule.id, suite=rule.suite, level=rule.level, outcome=str(verdict.outcome),
            actual=str(actual),
            message=verdict.note + ("\n" if verdict.note and message else "") + message,
            observed=_observed(item), fails=verdict.fails_run,
            expectation=expectation.as_json() if expectation else None,
            blocked_by=blocked_by(exc) if actual is Outcome.BLOCKED else None,
            missing_feature=missing_feature(exc) if actual is Outcome.UNSUPPORTED else None,
            not_checked=not_checked or None)
    info.attach(report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report, config):
    """UNSUPPORTED and BLOCKED get their own word and count in pytest's lines, not 'skipped'."""
    info = phase_info(report)
    if info is None:
        return None
    if info.outcome == str(Outcome.UNSUPPORTED):
        return "unsupported", "U", "UNSUPPORTED"
    if info.outcome == str(Outcome.BLOCKED):
        return "blocked", "B", "BLOCKED"
    if info.fails and report.when in ("call", "???"):
        return "failed", "F", info.outcome
    return None


class Controller:
    """Hooks of the controller process (the only one under pytest-xdist that sees every
    report): assembles records, writes results, tallies and prints the summary."""

    def __init__(self, config, h: Harness, private_results: bool = False) -> None:
        self.config = config
        self.h = h
        self.results_path: Path | None = None
        self.private_results = private_results  # the supervisor's own file: not named
        self.expected: set[str] = set()  # suite tests collected, to find those never run
        self.witnesses: witness.Background | None = None
        self.witness_records: list[WitnessRecord] = []
        self._deferred: tuple | None = None  # start_witnesses' arguments, for the run's end
        self.earlier_failed = False  # a test of the resumed run failed it
        #: every test record of the run (the resumed run's too): its root causes, ranked as
        #: the page ranks them, end the terminal summary
        self.records: list[TestRecord] = []
        if h.resumed is not None:
            self.records.extend(h.resumed.tests)
            for record in h.resumed.tests:
                h.tally.add(record)
                self.earlier_failed = self.earlier_failed or _fails(record)
            self.witness_records.extend(h.resumed.witnesses)

    def start_witnesses(self, expectations: ExpectationsFile | None, spec: str, limit: float,
                        deferred: bool = False) -> None:
        """Run the witnesses of the root causes whose entries apply to the run's framework
        version beside the tests (conformance.witness.Background): their lines are written as
        they finish, the rest before the end line. ``deferred``: start them at the end."""
        if deferred:
            self._deferred = (expectations, spec, limit)
            return
        try:  # the file the run read (conformance.model.causes: the one Cause type)
            found = declared_causes.declared(expectations, self.h.run.framework_version) \
                if expectations is not None else []
        except FileError:  # one cause with two witnesses: never fatal to the run
            found = []
        recorded = {r.cause for r in self.witness_records}  # by the run this one resumes
        found = [cause for cause in found if cause.slug not in recorded]
        if not found:
            return
        adapter = self.h.adapter
        self.witnesses = witness.Background(
            found, lambda: witness.preamble_of(adapter, spec, limit), limit,
            workers=WITNESS_WORKERS)

    def _record_witnesses(self, finished) -> None:
        for done in finished:
            record = WitnessRecord(
                cause=done.cause.slug, kind=done.cause.kind, status=done.result.status,
                output=witness.trimmed(done.result.output),
                script=done.cause.witness.strip("\n") or None,
                rules=sorted(set(done.cause.rules)), duration=done.duration)
            self.witness_records.append(record)
            if self.h.results is not None:
                try:
                    self.h.results.write(record)
                except OSError as exc:
                    self._results_failed(exc)

    def finish_witnesses(self, interrupted: bool) -> None:
        """Record the witnesses still running (an interrupted run kills them instead)."""
        if self._deferred is not None and not interrupted:
            self.start_witnesses(*self._deferred)
        self._deferred = None
        if self.witnesses is None:
            return
        background, self.witnesses = self.witnesses, None
        if interrupted:
            background.cancel()
            self._record_witnesses(background.ready())
        else:
            self._record_witnesses(background.wait())

    def _expect(self, nodeids) -> None:
        root = Path(self.config.rootpath)
        self.expected.update(n for n in nodeids if self.h.is_suite_path(root / file_of(n)))

    def pytest_collection_finish(self, session):
        self._expect([item.nodeid for item in session.items] + self.h.stopped)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session):
        try:
            return (yield)
        finally:
            self._record_earlier_crashes()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """In this process (no xdist): a framework that calls ``os._exit`` mid-test ends
        the run with the test's CRASH line and an end line marked interrupted, and exit
        status 3 where it asked for 0: never a file without its end line that CI takes for
        success. (A supervised child is left to its supervisor, which goes on with the rest.)"""
        if survival.CHILD is not None:
            return (yield)
        real = os._exit

        def exit_now(status):
            os._exit = real
            try:
                self._exited_mid_test(item.nodeid, status)
            finally:
                real(status or int(pytest.ExitCode.INTERNAL_ERROR))

        os._exit = exit_now
        try:
            return (yield)
        finally:
            os._exit = real

    def _exited_mid_test(self, nodeid: str, status) -> None:
        message = (f"CRASH: the framework called os._exit({status!r}) in the middle of the "
                   f"test; the run ended there")
        report = pytest.TestReport(nodeid, (file_of(nodeid), None, test_name(nodeid)),
                                   {}, "failed", message, "???")
        self._crash(nodeid, report)
        self.pytest_runtest_logreport(report)
        sys.stdout.flush()
        if self.h.results is not None:
            self.h.tally.not_run = sorted(self.expected - self.h.tally.seen)
            results, self.h.results = self.h.results, None
            results.close(pytest.ExitCode.INTERNAL_ERROR if not status else status,
                          self.h.tally, error=message, interrupted=True)
        print(f"\n{nodeid}: {message}", file=sys.stderr, flush=True)

    def _record_earlier_crashes(self) -> None:
        """The CRASH of each test an earlier child of the supervisor was running when it
        died (conformance/survival.py); after the loop, as xdist reports a crashed worker's."""
        child = survival.CHILD
        if child is None or child.number == 1:
            return
        for nodeid in survival.crashed(child.directory):
            if nodeid in self.h.tally.seen:
                continue
            report = pytest.TestReport(
                nodeid, (file_of(nodeid), None, test_name(nodeid)), {}, "failed",
                "", "???")
            self._crash(nodeid, report)
            self.config.hook.pytest_runtest_logreport(report=report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        """pytest-xdist: the workers leave out the tests a resumed run recorded already."""
        node.workerinput[survival.WORKERINPUT_KEY] = sorted(self.h.done)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """pytest-xdist: let every test crash its worker once without ending the run.

        xdist stops replacing crashed workers after ``--max-worker-restart`` (default 4 per
        worker), and the tests it then never runs would vanish; unless the user chose a
        limit, raise it to the number of tests (a crashed test is not retried).
        """
        self._expect(ids)
        dsession = self.config.pluginmanager.getplugin("dsession")
        if self.config.option.maxworkerrestart is None and hasattr(dsession, "_max_worker_restart"):
            dsession._max_worker_restart = max(dsession._max_worker_restart or 0, len(ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        """pytest-xdist: the worker running ``crashitem`` died; the outcome is CRASH."""
        self._crash(crashitem, report)

    def _crash(self, crashitem: str, report) -> None:
        """Make ``report`` the CRASH (or TIMEOUT: the watchdog ended the process) of a test
        whose process died; an INTERNALERROR the guard caught is named (survival.Guard)."""
        h = self.h
        internal = survival.crash_message(survival.take(h.watchdog.directory, crashitem) or "") \
            if h.watchdog else ""
        if internal:
            report.longrepr = f"{internal}\n{report.longrepr}" if report.longrepr else internal
        meta = h.records.meta(crashitem)
        rule = h.catalogue.get(meta.rule or h.rules_left_out.get(crashitem) or "")
        expectation = h.expectations.get(rule.id, crashitem) if rule else None
        timed_out = h.watchdog.crash_outcome(crashitem) if h.watchdog else None
        actual = Outcome.TIMEOUT if timed_out else Outcome.CRASH
        verdict = judge(actual, expectation.outcome if expectation else None,
                        expectation.where() if expectation else "",
                        expectation.flaky if expectation else ())
        message = timed_out or str(report.longrepr)
        if timed_out:
            report.longrepr = timed_out
        elif h.watchdog:
            message = h.watchdog.crash_message(crashitem, message)
            report.longrepr = message
        if verdict.status == "xfailed":
            report.outcome = "skipped"
            report.wasxfail = f"{actual} as expected: {expectation.reason}"
        elif verdict.note:
            report.longrepr = f"{message}\n{verdict.note}"
        PhaseInfo(rule=rule.id if rule else None, suite=rule.suite if rule else None,
                  level=rule.level if rule else None, outcome=str(verdict.outcome),
                  actual=str(actual), message=message, observed=None,
                  fails=verdict.fails_run, crash=True,
                  expectation=expectation.as_json() if expectation else None).attach(report)

    def pytest_runtest_logreport(self, report):
        record = self.h.records.add(report)
        if record is not None:
            self.h.tally.add(record)
            self.records.append(record)
            if self.h.results is not None:
                try:
                    self.h.results.write(record)
                except OSError as exc:  # the disk filled up mid-run: stop, one line, exit 4
                    self._results_failed(exc)
        if self.witnesses is not None:
            self._record_witnesses(self.witnesses.ready())

    def _results_failed(self, exc: OSError):
        if self.witnesses is not None:
            self.witnesses.cancel()
        results, self.h.results = self.h.results, None
        message = (f"--results {results.path}: writing it failed mid-run ({exc.strerror or exc}); "
                   f"the run stopped: free space or choose another path and run again")
        try:  # the end line, if the disk has room for it after all
            results.close(pytest.ExitCode.USAGE_ERROR, self.h.tally, error=message)
        except OSError:
            pass
        pytest.exit(message, returncode=pytest.ExitCode.USAGE_ERROR)

    def pytest_terminal_summary(self, terminalreporter):
        h = self.h
        title = (f"adapter {h.adapter.name} {h.run.framework_version} on {h.device}; "
                 f"final outcomes per suite (count/tests)")
        terminalreporter.write_sep("=", "autograd conformance")
        h.tally.not_run = sorted(self.expected - h.tally.seen)
        for line in summary.render(h.tally, title):
            terminalreporter.write_line(line)
        for line in witness_summary(self.witness_records):
            terminalreporter.write_line(line)
        for line in h.declarations:
            terminalreporter.write_line(line)
        for line in self.top_causes():
            terminalreporter.write_line(line)
        if self.results_path is not None:
            from conformance.outputs import reports_dir

            where = Path(self.results_path).resolve().parent
            option = "" if where == (reports_dir() / "results").resolve() \
                else f" --results-dir {where}"
            terminalreporter.write_line(f"results: {self.results_path}; the page: python -m "
                                        f"conformance.report{option}")
        elif self.private_results and not terminalreporter.config.getoption("collectonly"):
            terminalreporter.write_line(
                f"results not kept: add --results=reports/results/{h.adapter.name}.jsonl, "
                f"then python -m conformance.report writes the page")

    def top_causes(self) -> list[str]:
        """The run's top root causes, ranked as the page ranks them (conformance/summary.py)."""
        h = self.h
        if not self.records or h.catalogue is None:
            return []
        from conformance.report.rootcause import root_causes
        from conformance.results.combined import Column, catalogue_entries

        column = Column(label=h.adapter.name, framework=getattr(h.adapter, "module", None)
                        or h.adapter.name, status="complete", detail="",
                        header=dataclasses.replace(h.run, unsupported=dict(
                            getattr(h.adapter, "unsupported", None) or {}) or None),
                        end=None, tests=self.records, witnesses=self.witness_records)
        causes = root_causes(column, catalogue_entries(h.catalogue))
        return summary.top_causes(causes, self.config.getoption("adapter"))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if self.earlier_failed and exitstatus in (pytest.ExitCode.OK,
                                                  pytest.ExitCode.NO_TESTS_COLLECTED):
            exitstatus = session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the whole run's
        self.exitstatus = exitstatus
        self.finish_witnesses(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
        if self.h.results is not None:
            self.h.tally.not_run = sorted(self.expected - self.h.tally.seen)
            self.results_path = None if self.private_results else self.h.results.path
            # Ctrl-C, -x, a collection error: tests did not run; the end line says so, the
            # report shows the run as interrupted and nox -s report never reuses it
            interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(self.h.tally.not_run)
            self.h.results.close(exitstatus, self.h.tally, interrupted=interrupted)
            self.h.results = None

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        if self.witnesses is not None:  # the session never finished: stop them
            self.witnesses.cancel()
            self.witnesses = None
        if self.h.results is not None:  # the session never finished: give the file up
            self.h.results.release()
            self.h.results = None
        if (config.getoption("in_process") and not config.invocation_params.plugins
                and survival.foreign_threads()):
            # pytest's own process, run from the command line: a framework's non-daemon
            # thread would keep the finished run from ever exiting (the supervised child
            # does the same in conformance/survival.py)
            survival.end_child(int(getattr(self, "exitstatus", 0)))


def _fails(record: TestRecord) -> bool:
    """Whether a recorded test failed its run (as :func:`conformance.outcomes.judge` decided:
    a broken rule or a strict XPASS; a BLOCKED only against an expectation)."""
    outcome = record.outcome or str(Outcome.ERROR)
    if outcome in (str(o) for o in (*HELD, Outcome.UNSUPPORTED, Outcome.XFAIL)):
        return False
    return outcome != str(Outcome.BLOCKED) or record.expectation is not None


def declaration_lines(facts) -> list[str]:
    """The terminal summary's lines on the adapter's ``unsupported`` declarations: one per
    feature the framework contradicts (a name it implies exists: its tests were UNSUPPORTED
    although they could judge the framework), or one saying why they were not checked.

    Why here and from the start-up child: the check costs one tensor, one op and attribute
    lookups in the interpreter that already imported the framework, and a line at the end of
    every run (``nox -s report`` prints each column's) is seen where a separate command is not;
    the run's outcomes stay as they are (the declaration decides them until it is fixed)."""
    if facts is None:   # no child interpreter: checked by python -m conformance.feature_claims
        return []
    if facts.claims_error:
        return [f"declared-missing features not checked: {facts.claims_error}"]
    from conformance.feature_claims import contradictions

    return [f"declared unsupported, yet the framework has it (python -m "
            f"conformance.feature_claims --adapter {facts.spec}): {line}"
            for line in contradictions(facts.claims)]


def witness_summary(records: list[WitnessRecord]) -> list[str]:
    """The run's witnesses in the terminal summary: a count per status, then one line per
    witness that did not reproduce its cause ("fixed?": the root cause is wrong until someone
    looks) or that failed to run."""
    if not records:
        return []
    words = {"reproduces": "reproduce", "does not reproduce": "do not reproduce (fixed?)",
             "error": "error", "no witness": "causes without one"}
    counts = {status: sum(r.status == status for r in records)
              for status in WitnessRecord.STATUSES}
    lines = ["witnesses: " + ", ".join(f"{n} {words[s]}" for s, n in counts.items() if n)]
    for r in records:
        if r.fixed or r.status == "error":
            last = (r.output or "").strip().splitlines()[-1:] or [""]
            lines.append(f"  {r.cause}: {r.label}" + (f" -- {last[0][:160]}" if last[0] else ""))
    return lines
