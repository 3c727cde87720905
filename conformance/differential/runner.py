"""Targets, the search loop, shrinking, the results file and the command line.

``python -m conformance.differential --adapter torch --examples 300 [--seed 0]`` runs random
programs on the reference (in this process) and on the adapter, shrinks every new divergence
(hypothesis, then a greedy one-step-deletion pass), renders it as a standalone script and
appends one JSON line per divergence to ``reports/results/explore-<adapter>.jsonl``
(schema: docs/differential.md). The reference and torch run in-process; ``--python PATH``
(or ``--subprocess``) runs the framework in a worker subprocess, so that a segfault is one
CRASH divergence and the search goes on (OneFlow: ``--python /opt/of09/bin/python``).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import platform
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, seed as hyp_seed, settings
from hypothesis.errors import Flaky

from adapters.base import FrameworkNotInstalled
from conformance import cli, isolation, options, results as _results, time_scale
from conformance.differential.compare import Divergence, compare
from conformance.differential.interpreter import CRASH, MISSING_API, TIMEOUT, probe_features, run_steps
from conformance.child_interpreter import environment
from conformance.differential.program import Program
from conformance.differential.render import render_script
from conformance.differential import gate
from conformance.differential.strategies import ALL_FEATURES, avoid_for, programs
from conformance.model import expectations as _expectations
from conformance.outputs import reports_dir

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_VERSION = _results.EXPLORE_SCHEMA  # the findings file (conformance.results)

# -- Ctrl-C ----------------------------------------------------------------------------
#: Whether Ctrl-C (SIGINT) came during this search (set by :func:`interruptible`'s handler).
#: Why kept, not only raised: a KeyboardInterrupt raised while a finalizer or weakref
#: callback runs (gc.collect() ends every program, and programs watch objects die) is
#: printed as "Exception ignored" and dropped, and one raised where hypothesis or a
#: framework catches broadly can be wrapped; the search then went on for minutes. Every
#: program, round and shrink step checks it (:func:`stop_if_interrupted`).
_INTERRUPT = {"requested": False}


def stop_if_interrupted() -> None:
    """Raise KeyboardInterrupt again if Ctrl-C came, whatever swallowed the first one."""
    if _INTERRUPT["requested"]:
        raise KeyboardInterrupt


def _on_sigint(signum, frame) -> None:
    _INTERRUPT["requested"] = True
    raise KeyboardInterrupt


class interruptible:
    """``with interruptible():`` Ctrl-C ends the search: remembered as well as raised (see
    :data:`_INTERRUPT`); the previous SIGINT handler is put back after. Outside the main
    thread (where no handler can be set) it changes nothing."""

    def __enter__(self):
        import signal
        import threading

        _INTERRUPT["requested"] = False
        self._previous = None
        self._unraisable = sys.unraisablehook
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, _on_sigint)
            sys.unraisablehook = self._quiet_interrupt
        return self

    def _quiet_interrupt(self, unraisable) -> None:
        """A Ctrl-C raised in a finalizer or gc callback is remembered (``_INTERRUPT``) and
        raised again by the search: not printed as an "Exception ignored" traceback."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _INTERRUPT["requested"]:
            return
        self._unraisable(unraisable)

    def __exit__(self, kind, value, traceback) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            sys.unraisablehook = self._unraisable
        requested, _INTERRUPT["requested"] = _INTERRUPT["requested"], False
        if requested and kind is None:  # swallowed during the last program: still Ctrl-C
            raise KeyboardInterrupt


# -- targets ---------------------------------------------------------------------------
class InProcessTarget:
    """A framework imported into this process (the reference, torch, tinygrad, any adapter
    given as package.module:Class)."""

    def __init__(self, adapter_name: str, features=None) -> None:
        from adapters.base import load_adapter

        self.adapter = load_adapter(adapter_name)
        self.name = adapter_name
        self.fw = self.adapter.fw
        self.version = self.adapter.framework_version()
        self.probe = probe_features(self.adapter)
        self.features = frozenset(features if features is not None else gate.available_features(
            declared_by(self.adapter), self.probe["failed"]))

    def run(self, program: Program) -> dict:
        return run_steps(self.adapter, program.render(), program.uses_forward_ad())

    def close(self, wait: float = 10.0) -> None:
        pass


class SubprocessTarget:
    """A framework in a worker subprocess (``worker.py``); restarted after a crash."""

    def __init__(self, adapter_name: str, python: str = sys.executable, plant: str | None = None,
                 timeout: float = 60.0) -> None:
        self.name = adapter_name
        self.python = python
        self.plant = plant
        self.timeout = timeout
        from adapters.base import load_adapter

        # for the scripts (its preamble); the framework is imported in the worker only
        self.adapter = load_adapter(adapter_name)
        self.proc = None
        self.crashes = 0
        ready = self._start()
        self.version = ready["version"]
        self.probe = ready["probe"]
        self.features = gate.available_features(declared_by(self.adapter), self.probe["failed"])

    def _start(self) -> dict:
        read_fd, write_fd = os.pipe()
        cmd = [self.python, "-m", "conformance.differential.worker", "--adapter", self.name,
               "--fd", str(write_fd)]
        if self.plant:
            cmd += ["--plant", self.plant]
        # the worker loads the adapter by the same spec; a package.module:Class adapter next to
        # where the tester was started is found there too
        env = environment(os.getcwd())
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, pass_fds=(write_fd,), env=env, text=True)
        os.close(write_fd)
        self._reader = os.fdopen(read_fd, "r")
        self._buffer = ""
        ready = self._read(timeout=time_scale.scaled(300))  # a hang at start, on any machine
        if ready is None or ready.get("type") != "ready":
            raise RuntimeError(f"worker for {self.name!r} ({self.python}) did not start: {ready!r}")
        return ready

    def _read(self, timeout: float):
        """The next message, or None at end of file / timeout."""
        deadline = time.monotonic() + timeout
        fd = self._reader.fileno()
        while "\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return {"type": "timeout"}
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk.decode()
        line, self._buffer = self._buffer.split("\n", 1)
        return json.loads(line)

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self._reader.close()
            self.proc = None

    def run(self, program: Program) -> dict:
        if self.proc is None:
            self._start()
        request = {"steps": program.render(), "forward_ad": program.uses_forward_ad()}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        step = 0
        trace: list = []
        while True:
            message = self._read(self.timeout)
            if message is None or message.get("type") == "timeout":
                category = CRASH if message is None else TIMEOUT
                code = self.proc.poll()
                self._stop()
                self.crashes += 1
                return {"trace": trace, "error": {
                    "step": step, "type": category.upper(), "category": category, "marker": category,
                    "message": f"worker {'died (exit status ' + str(code) + ')' if category == CRASH else 'timed out'}"}}
            if message["type"] == "step":
                step = message["i"]
            elif message["type"] == "result":
                return {"trace": message["trace"], "error": message["error"]}

    def close(self, wait: float = 10.0) -> None:
        """End the worker: its stdin closed, ``wait`` seconds for it to exit, then killed
        (``wait=0`` after Ctrl-C: not another program's worth of waiting)."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=wait)
            except Exception:  # noqa: BLE001
                pass
            self._stop()


def make_target(adapter: str, python: str | None = None, subprocess_: bool = False, plant: str | None = None):
    if python or subprocess_ or plant:
        return SubprocessTarget(adapter, python or sys.executable, plant)
    return InProcessTarget(adapter)


def declared_by(adapter) -> dict:
    """feature -> reason: what ``adapter`` declares its framework lacks (its ``unsupported``)."""
    return dict(getattr(adapter, "unsupported", None) or {})


# -- one program -------------------------------------------------------------------------
@dataclass
class Outcome:
    #: "same" | "diverges" | "unsupported" (a feature the adapter declares missing) |
    #: "artefact" (a missing API of a feature the adapter does not declare missing)
    status: str
    divergence: Divergence | None = None
    reference_run: dict | None = None
    target_run: dict | None = None
    unsupported: dict | None = None   # status "unsupported" / "artefact": see unsupported_of


def feature_of_missing(error: dict) -> str | None:
    """The registry feature a missing-API error is about: the one the adapter named
    (``Unsupported``, ``MissingName``), else the one owning the missing attribute
    (conformance/features.toml: ``register_hook`` -> tensor_hooks, ``grad=`` ->
    grad_assignment), else None."""
    feature = error.get("feature")
    if feature is None and error.get("name"):
        from conformance.model import features as registry

        for entry in registry.registry().values():
            if error["name"] in entry.names:
                return entry.name
    return feature


def unsupported_of(program: Program, error: dict, declared=()) -> dict:
    """What a missing-API error says the framework lacks: ``{"variant", "feature", "name",
    "declared", "exclude", "message"}``. ``feature``: see :func:`feature_of_missing`;
    ``declared``: whether the adapter declares that feature missing (else the error is a
    missing-API artefact); ``exclude``: that feature where a step can need it (every step
    needing it stops), else the step's variant (only that operation stops)."""
    step = program.steps[error["step"]]
    feature = feature_of_missing(error)
    exclude = feature if feature in ALL_FEATURES else step.variant
    return {"variant": step.variant, "feature": feature, "name": error.get("name"),
            "declared": feature in declared, "exclude": exclude,
            "message": error.get("message", "")[:200]}


def _resting_on_declared(program: Program, divergence: Divergence, declared) -> dict | None:
    """A divergence whose program, up to the diverging step, asks for a feature the adapter
    declares missing (a program replayed from a file, or one the gate let through): what it
    needs, as unsupported; None where it asks for none. No finding may rest on such a step."""
    for step in program.steps[:divergence.step + 1]:
        needed = sorted(gate.step_needs(step) & set(declared))
        if needed:
            return {"variant": step.variant, "feature": needed[0], "name": None, "declared": True,
                    "exclude": needed[0],
                    "message": f"the step needs {', '.join(needed)}, which the adapter declares missing"}
    return None


def check(program: Program, oracle, target) -> Outcome:
    stop_if_interrupted()
    expected = oracle.run(program)
    stop_if_interrupted()
    actual = target.run(program)
    stop_if_interrupted()
    declared = declared_by(getattr(target, "adapter", None))
    err = actual.get("error")
    divergence = compare(program, expected, actual)
    if err and err["category"] == MISSING_API and (divergence is None or divergence.step >= err["step"]):
        # the framework lacks what this step asks for: never a divergence, even where the
        # reference raised at that step (what the framework would do is unknown); a divergence
        # at an earlier step is still one. UNSUPPORTED where the adapter declares the feature
        # missing, else a missing-API artefact (the adapter did not say)
        missing = unsupported_of(program, err, declared)
        return Outcome("unsupported" if missing["declared"] else "artefact", None, expected,
                       actual, missing)
    if divergence is not None:
        resting = _resting_on_declared(program, divergence, declared)
        if resting is not None:
            return Outcome("unsupported", None, expected, actual, resting)
    return Outcome("diverges" if divergence else "same", divergence, expected, actual)


def _simpler(program: Program):
    """Candidates one edit simpler: a step deleted, or one of a step's flags switched off."""
    for index in reversed(range(len(program.steps))):
        if len(program.steps) > 1:
            yield program.without(index)
    for index, step in enumerate(program.steps):
        for f in dataclasses.fields(step):
            if getattr(step, f.name) is True:
                steps = list(program.steps)
                steps[index] = dataclasses.replace(step, **{f.name: False})
                yield Program(program.dtype, tuple(steps))


def shrink_greedy(program: Program, oracle, target, signature: str) -> tuple[Program, Outcome]:
    """After hypothesis: delete steps and switch flags off while the divergence keeps its
    signature, until no single edit keeps it (steps after the divergence are dropped)."""
    outcome = check(program, oracle, target)
    if outcome.divergence is not None:
        program = Program(program.dtype, program.steps[:outcome.divergence.step + 1])
    changed = True
    while changed:
        changed = False
        for candidate in _simpler(program):
            result = check(candidate, oracle, target)
            if result.divergence is not None and result.divergence.signature == signature:
                program = Program(candidate.dtype, candidate.steps[:result.divergence.step + 1])
                changed = True
                break
    return program, check(program, oracle, target)


# -- expectations ------------------------------------------------------------------------
def expectation_for(adapter, divergence: Divergence) -> dict | None:
    """``{"rule", "reason", "root_cause"}`` of the expectation that explains ``divergence``,
    or None: the ``[[differential]]`` entries of the adapter's own expectations file
    (``adapter.expectations_file()``, so a third-party adapter's file counts), read through
    :mod:`conformance.model.expectations`."""
    found = _expectations.read(adapter.expectations_file()).explaining(divergence.signature)
    if found is None:
        return None
    return {"rule": found.rule, "reason": found.reason, "root_cause": found.root_cause}


# -- the search --------------------------------------------------------------------------
class _Found(Exception):
    pass


def make_finding(program: Program, outcome: Outcome, target, examples_before: int) -> "Finding":
    """A shrunk divergence with its standalone script and the expectation that covers it."""
    div = outcome.divergence
    header = [
        f"autograd-conformance differential test: {target.name} {target.version} "
        f"diverges from the reference",
        f"category: {div.suite}; signature: {div.signature}",
        f"{div.summary[:200]}",
    ]
    script = render_script(program, div, outcome.reference_run, target.adapter, header)
    return Finding(program, outcome, script, expectation_for(target.adapter, div), examples_before)


@dataclass
class Finding:
    program: Program
    outcome: Outcome
    script: str
    expectation: dict | None
    examples_before: int

    @property
    def divergence(self) -> Divergence:
        return self.outcome.divergence


class _Stop(Exception):
    """The round ends without a divergence: a newly unsupported variant, or time is up."""


#: How a divergence is shrunk. ``full``: hypothesis's shrinker, then the greedy pass
#: (:func:`shrink_greedy`); the shortest scripts, at hundreds of runs of both engines a
#: finding. ``greedy``: the greedy pass alone; a finding in a few runs, its script now and then
#: a step longer. Use it where one run is slow (a framework run in a worker, a slow back end).
SHRINKS = ("full", "greedy")


@dataclass
class Search:
    """Rounds of hypothesis searches. A divergence with a new signature ends a round (it is
    shrunk and reported); so does a step the framework lacks that was not known to be
    missing: it is recorded in ``unsupported`` (a feature the adapter declares missing, met at
    run time) or ``artefacts`` (a missing API of a feature it does not declare), variant ->
    what was missing and how often, and the next round's strategy no longer generates it
    (``features`` / ``excluded``). ``left_out``: the variants never generated, and why
    (:func:`gate.left_out`: the adapter's declarations, failed one-line tries)."""

    oracle: object
    target: object
    features: frozenset
    max_steps: int = 16
    findings: list = field(default_factory=list)
    known: set = field(default_factory=set)
    examples: int = 0
    statuses: dict = field(default_factory=dict)
    on_finding: object = None
    excluded: set = field(default_factory=set)
    unsupported: dict = field(default_factory=dict)
    artefacts: dict = field(default_factory=dict)
    deadline: float | None = None      # time.monotonic() after which no program starts
    declared: dict | None = None       # feature -> reason (default: the target adapter's)
    left_out: dict = field(default_factory=dict)
    tried_seconds: float = 0.0         # how long trying each variant took (before the search)
    shrink: str = "full"               # one of SHRINKS

    def __post_init__(self) -> None:
        if self.shrink not in SHRINKS:
            raise ValueError(f"shrink {self.shrink!r}: one of {', '.join(SHRINKS)}")
        if self.declared is None:
            self.declared = declared_by(getattr(self.target, "adapter", None))
        # declared missing is missing, whatever features the caller passed
        self.features = frozenset(self.features) - frozenset(self.declared)
        probe = getattr(self.target, "probe", None) or {}
        self.left_out = gate.left_out(self.features, self.declared, probe.get("failed"))
        for feature, message in sorted((probe.get("failed") or {}).items()):
            if feature not in gate.LANGUAGE and feature not in self.declared:
                # a registry feature the adapter does not declare, whose one-line try failed
                self.artefacts[feature] = {"variant": None, "feature": feature, "name": None,
                                           "declared": False, "exclude": feature,
                                           "message": message, "programs": 0, "found": "probe"}
        self._tried = False

    def try_variants(self) -> None:
        """Before the search: each variant the gate lets through runs once, as the last step
        of a short program (``gate.probe_programs``); one that meets a missing API there is left
        out (a feature the adapter declares missing) or recorded as a missing-API artefact (one
        it does not declare), so no program of the search asks for it."""
        if self._tried:
            return
        self._tried = True
        for variant, program in gate.probe_programs(self.features).items():
            stop_if_interrupted()
            if variant in self.excluded:
                continue
            observed = self.target.run(program)
            err = observed.get("error")
            if not err or err["category"] != MISSING_API or err["step"] != len(program.steps) - 1:
                continue
            missing = unsupported_of(program, err, self.declared)
            self.excluded.add(variant)
            if missing["declared"]:
                feature = missing["feature"]
                self.left_out[variant] = {"features": [feature], "why": {
                    feature: f"declared missing: {self.declared[feature]} (its one-line try: "
                             f"{missing['message'][:120]})"}}
            else:
                self.artefacts[variant] = {**missing, "exclude": variant, "programs": 0, "found": "probe"}

    def artefact_count(self) -> int:
        """Missing-API artefacts: programs that met one, and those found before the search."""
        return sum(max(1, e["programs"]) for e in self.artefacts.values())

    def _note_unsupported(self, missing: dict) -> bool:
        """Record a missing-API outcome; True when it newly switches something off."""
        book = self.unsupported if missing.get("declared") else self.artefacts
        entry = book.setdefault(missing["variant"], {**missing, "programs": 0, "found": "run"})
        entry["programs"] += 1
        if missing["exclude"] in ALL_FEATURES and missing["exclude"] not in self.features:
            # a feature already off (declared) met through a step that does not name it (a
            # translation that raised Unsupported for it): that variant stops
            missing = {**missing, "exclude": missing["variant"]}
        if missing["exclude"] in self.features:
            self.features = self.features - {missing["exclude"]}
            return True
        if missing["exclude"] not in ALL_FEATURES and missing["exclude"] not in self.excluded:
            self.excluded.add(missing["exclude"])
            return True
        return False

    def _one_round(self, budget: int, seed: int | None):
        strategy = programs(self.features, self.max_steps, excluded=frozenset(self.excluded),
                            avoid=avoid_for(self.known))
        box: dict = {}

        def prop(program):
            if "stop" in box:  # hypothesis replays and shrinks the stopping example: cut it short
                raise _Stop()
            if "signature" not in box:
                if self.deadline is not None and time.monotonic() > self.deadline:
                    box["stop"] = "time"
                    raise _Stop()
                self.examples += 1
            outcome = check(program, self.oracle, self.target)
            if "signature" not in box:
                self.statuses[outcome.status] = self.statuses.get(outcome.status, 0) + 1
                if outcome.unsupported is not None and self._note_unsupported(outcome.unsupported):
                    box["stop"] = "unsupported"
                    raise _Stop()
            div = outcome.divergence
            if div is None or div.signature in self.known:
                return
            if box.setdefault("signature", div.signature) != div.signature:
                return
            box["last"] = program
            raise _Found(div.signature)

        test = settings(max_examples=budget, database=None, deadline=None, derandomize=False,
                        suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                        phases=[Phase.generate, Phase.shrink] if self.shrink == "full"
                        else [Phase.generate], verbosity=Verbosity.quiet,
                        print_blob=False)(given(strategy)(prop))
        if seed is not None:
            test = hyp_seed(seed)(test)
        try:
            test()
        except (_Found, Flaky):
            pass
        except _Stop:
            pass
        except Exception as exc:  # hypothesis wraps some failures
            if "last" not in box and "stop" not in box:
                raise
            if "last" in box:
                print(f"[differential] hypothesis ended with {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            stop_if_interrupted()  # a Ctrl-C that one of the clauses above (or hypothesis) ate
        if "last" not in box:
            return None, box.get("stop")
        return box.get("last"), box.get("signature")

    def run(self, examples: int, seed: int | None = 0, max_rounds: int = 50,
            seconds: float | None = None) -> list[Finding]:
        """Search until ``examples`` programs ran, ``max_rounds`` divergences were found, or
        ``seconds`` passed (the divergence being shrunk is finished first). Ctrl-C under
        :class:`interruptible` ends it (KeyboardInterrupt), whatever swallowed it first."""
        start = self.examples
        tried = time.monotonic()
        self.try_variants()
        self.tried_seconds = round(time.monotonic() - tried, 1)
        if seconds is not None:  # the search's own time: the variants' tries are not counted
            self.deadline = time.monotonic() + seconds
        rounds = found = 0
        while self.examples - start < examples and found < max_rounds and rounds < max_rounds + 200:
            stop_if_interrupted()
            budget = examples - (self.examples - start)
            before = self.examples
            program, signature = self._one_round(budget, None if seed is None else seed + rounds)
            rounds += 1
            if program is None:
                if signature == "time":
                    break
                if signature == "unsupported":
                    continue
                if self.examples == before:
                    break
                continue
            found += 1
            self.known.add(signature)
            program, outcome = shrink_greedy(program, self.oracle, self.target, signature)
            if outcome.divergence is None or outcome.divergence.signature != signature:
                outcome = check(program, self.oracle, self.target)
            if outcome.divergence is None:  # not reproducible (a flaky framework)
                continue
            finding = make_finding(program, outcome, self.target, self.examples)
            self.findings.append(finding)
            if self.on_finding:
                self.on_finding(finding)
        return self.findings


def print_summary(search: Search, duration: float, results) -> None:
    """What the run left out and why, what it met missing, and the counts: divergences and
    missing-API artefacts apart (an artefact is never a divergence)."""
    for variant, entry in sorted(search.left_out.items()):
        why = "; ".join(f"{f}: {r}" for f, r in entry["why"].items())
        print(f"[left out] {variant}: {why[:160]}")
    for variant, missing in sorted(search.unsupported.items()):
        print(f"[unsupported] {variant}: {missing['feature']} (declared missing; "
              f"{missing['programs']} programs; {missing['message'][:100]})")
    for variant, missing in sorted(search.artefacts.items()):
        print(f"[missing-API artefact] {variant}: {missing['feature'] or missing.get('name') or '?'} "
              f"not declared missing ({missing['programs']} programs, found by the "
              f"{missing['found']}; {missing['message'][:100]})")
    print(f"{search.examples} programs in {duration:.1f}s: {search.statuses}; "
          f"{len(search.findings)} divergences; {search.artefact_count()} missing-API artefacts "
          f"({len(search.artefacts)} step variants); {len(search.left_out)} step variants left "
          f"out, {len(search.unsupported)} met unsupported at run time (each variant tried "
          f"first: {search.tried_seconds:.1f}s) -> {results}")


# -- results -----------------------------------------------------------------------------
def divergence_record(finding: Finding, target, reference_version: str) -> dict:
    div = finding.divergence
    return {
        "type": "divergence", "schema": SCHEMA_VERSION,
        "adapter": target.name, "framework_version": target.version,
        "reference_version": reference_version,
        "category": div.suite, "signature": div.signature, "summary": div.summary,
        "kind": div.kind, "step": div.step,
        "expected": div.expected, "actual": div.actual,
        "expected_error": div.expected_error, "actual_error": div.actual_error,
        "program": finding.program.to_json(), "program_text": str(finding.program),
        "script": finding.script, "script_lines": finding.script.count("\n"),
        "expectation": finding.expectation, "examples_before": finding.examples_before,
        "found": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


#: seconds the adapter's module and framework may take to load in the child (isolation.probe)
PROBE_TIMEOUT = 300.0


def main(argv=None) -> int:
    parser = cli.Parser("python -m conformance.differential",
                        "differential testing against the reference engine")
    parser.add_argument("--adapter", default="reference", metavar="NAME",
                        help="framework to compare with the reference: a built-in adapter name "
                             "(torch, oneflow, reference), an entry point of the group "
                             "autograd_conformance.adapters, or package.module:ClassName "
                             "(default: reference)")
    parser.add_argument("--examples", type=cli.positive_int, default=None,
                        help="example budget (programs run; default 200, or no limit with --seconds)")
    parser.add_argument("--seconds", type=cli.positive_int, default=None,
                        help="time budget: no program starts after this many seconds")
    parser.add_argument("--seed", type=int, default=None, help="fixed seed (default: random)")
    parser.add_argument("--max-steps", type=cli.positive_int, default=16)
    parser.add_argument("--python", default=None, type=cli.executable, help="run the framework in a worker under this Python")
    parser.add_argument("--subprocess", action="store_true", help="run the framework in a worker subprocess")
    parser.add_argument("--plant", default=None, help="module:function called in the worker (tests)")
    parser.add_argument("--results", default=None, help="JSON-lines file (default reports/results/explore-<adapter>.jsonl)")
    parser.add_argument("--max-findings", type=cli.positive_int, default=50)
    parser.add_argument("--shrink", choices=SHRINKS, default="full",
                        help="full: hypothesis's shrinker, then a greedy pass (shortest scripts); "
                             "greedy: the greedy pass alone, far fewer runs a finding, for a slow "
                             "framework (default: full)")
    args = parser.parse_args(argv)
    if not args.adapter.strip():
        parser.error("--adapter: an empty name; give a built-in name, an entry point or "
                     "package.module:ClassName")
    if args.results is not None:
        problem = (options.results_problem(args.results, Path.cwd()) if args.results.strip()
                   else "--results: an empty path (an unset variable?); give a file path")
        if problem:
            return parser.fail(problem)
    results = Path(args.results or _results.explore_path(reports_dir() / "results", args.adapter))
    examples = args.examples or (10 ** 9 if args.seconds else 200)

    if args.python is None:
        # the adapter's module and its framework are loaded in a child interpreter first
        # (conformance/isolation.py): a hang, a segfault or sys.exit at import is one line
        try:
            isolation.probe(args.adapter, "cpu", timeout=time_scale.scaled(PROBE_TIMEOUT),
                            timeout_option=None)
        except isolation.ProbeFailed as exc:
            return parser.fail(exc)
    try:
        oracle = InProcessTarget("reference")
        target = make_target(args.adapter, args.python, args.subprocess, args.plant)
    except (ValueError, FrameworkNotInstalled, RuntimeError) as exc:
        return parser.fail(exc)
    features = oracle.features & target.features
    started = time.monotonic()
    try:
        _results.append_findings(results, {
            "type": "run", "schema": SCHEMA_VERSION, "adapter": target.name, "adapter_spec": args.adapter,
            "framework_version": target.version, "reference_version": oracle.version,
            "features": sorted(features), "examples": args.examples, "seconds": args.seconds,
            "seed": args.seed,
            "max_steps": args.max_steps, "shrink": args.shrink, "python": platform.python_version(),
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "argv": sys.argv if argv is None else argv})
    except OSError as exc:
        target.close()
        return parser.fail(f"--results {results}: cannot write it ({exc.strerror or exc}); "
                           f"choose a writable path")

    def on_finding(finding):
        record = divergence_record(finding, target, oracle.version)
        _results.append_findings(results, record)
        tag = "expected" if finding.expectation else "NEW"
        print(f"[{tag}] {record['category']}: {record['signature']}  ({record['script_lines']} lines)")
        print(record["script"])

    search = Search(oracle, target, features, args.max_steps, on_finding=on_finding,
                    shrink=args.shrink)
    wait = 0.0  # for the worker to exit, unless the search ends as asked
    try:
        with interruptible():  # Ctrl-C ends the search, whatever catches its first raise
            search.run(examples, args.seed, max_rounds=args.max_findings, seconds=args.seconds)
        duration = time.monotonic() - started
        _results.append_findings(results, {
            "type": "end", "examples": search.examples, "statuses": search.statuses,
            "unsupported": search.unsupported, "artefacts": search.artefacts,
            "artefact_count": search.artefact_count(), "left_out": search.left_out,
            "tried_seconds": search.tried_seconds,
            "divergences": len(search.findings),
            "unexpected": sum(1 for f in search.findings if not f.expectation),
            "crashes": getattr(target, "crashes", 0), "duration": round(duration, 1)})
        wait = 10.0
    except OSError as exc:  # a disk that filled up mid-search: the lines written so far stay
        return parser.fail(f"--results {results}: writing it failed mid-search "
                           f"({exc.strerror or exc}); free space or choose another path")
    finally:
        target.close(wait)
    print_summary(search, duration, results)
    return 1 if any(not f.expectation for f in search.findings) else 0
