"""``--leak-check``: run each test again and again; steady growth is a LEAK.

Why: a conformance suite for object lifetimes must not leak itself, and a framework that
leaks on every call of a rule's scenario breaks the rule's spirit even when each single
run looks right. The method is CPython's ``regrtest -R``: run the test ``warmups`` times
unmeasured (caches fill, warnings registries fill, lazy imports happen), then ``runs``
times measured; after each measured run collect garbage and count

* live objects by type (``objgraph.typestats``, every gc-tracked object created since the
  measured runs began: older ones are frozen with ``gc.freeze()`` so counting stays cheap), and
* memory traced by ``tracemalloc`` (catches what is not gc-tracked: bytes, arrays), except
  what the test tooling allocates (:data:`TOOLING`: hypothesis, pytest, pluggy).

A type whose count grows by at least one in *every* measured run, or traced memory that
grows by at least ``MEMORY_THRESHOLD`` bytes in every measured run and in the last by at
least half its largest growth after the first, is a leak (a one-off growth, growth that is
later given back, or a cache that fills by less and less, is not: bpo-30776's false
positives).
For a leaking type one more run is made, an object of that type created by it is picked,
and objgraph's ``find_backref_chain`` names what keeps it alive
(:func:`conformance.liveness.keep_alive_chain`); for memory alone, tracemalloc names the
line that allocated the growth.

Each run is pytest's whole protocol for the item (function-scoped fixtures are set up and
torn down every time; wider-scoped ones are kept), silently: only the final, ordinary run
is reported, and it becomes LEAK if it passed but the measured runs leaked. A test that
fails or is skipped in a silent run gets no leak verdict (its ordinary run reports it).
"""
from __future__ import annotations

import dataclasses
import fnmatch
import functools
import gc
import itertools
import tracemalloc
from typing import Callable

import pytest
from _pytest.runner import runtestprotocol

from conformance import gc_freeze
from conformance.liveness import KeepAliveChain, collect, keep_alive_chain
from conformance.outcomes import HELD
from conformance.results import phase_info

MEMORY_THRESHOLD = 4096  # bytes per measured run
FINDING = pytest.StashKey["LeakFinding"]()
#: Types a leaking scenario always grows along with the leaked object; reported, but never
#: picked for the keep-alive chain when a more specific type leaked too.
_GENERIC = {"builtins.dict", "builtins.list", "builtins.tuple", "builtins.cell",
            "builtins.function", "builtins.weakref", "builtins.set", "builtins.method"}


@dataclasses.dataclass
class LeakFinding:
    """What grew in every measured run of one test."""

    runs: int
    types: dict[str, list[int]]  # type name -> growth in each measured run
    memory: list[int] | None  # traced-memory growth (bytes) per run, if it grew steadily
    chain: KeepAliveChain | None = None
    allocation: str = ""  # for memory growth: where tracemalloc saw it allocated

    def message(self) -> str:
        parts = []
        if self.types:
            listed = ", ".join(f"{name} +{sum(d)} ({'/'.join(map(str, d))})"
                               for name, d in sorted(self.types.items(),
                                                     key=lambda kv: -sum(kv[1]))[:8])
            parts.append(f"live objects grew in each of {self.runs} measured runs: {listed}")
        if self.memory:
            parts.append(f"traced memory grew in each of {self.runs} measured runs: "
                         f"{'/'.join(map(str, self.memory))} bytes"
                         + (f" (most at {self.allocation})" if self.allocation else ""))
        if self.chain is not None:
            parts.append(f"one leaked object is kept alive by: {self.chain.render()}")
        return "LEAK: " + "; ".join(parts)


def _type_counts() -> dict[str, int]:
    import objgraph

    collect()
    return objgraph.typestats(shortnames=False)


#: Allocation sites whose memory is the test tooling's (hypothesis's strategy caches fill for
#: thousands of runs), not the code under test; tracemalloc's own and this module's too.
TOOLING = ("*/hypothesis/*", "*/_pytest/*", "*/pluggy/*", "*/tracemalloc.py", __file__)


def _snapshot():
    return tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, pattern) for pattern in TOOLING])


@functools.lru_cache(maxsize=4096)
def _tooling(filename: str) -> bool:
    return any(fnmatch.fnmatch(filename, pattern) for pattern in TOOLING)


def _traced() -> int:
    """Bytes traced since tracing began, still allocated, outside the tooling.

    Summed per file, then the tooling's files left out: the same bytes as filtering every
    trace (:func:`_snapshot`; tracing keeps one frame, so a trace's file is its statistic's),
    without matching each of tens of thousands of traces against every pattern in Python
    (0.55 against 0.1-0.2 CPU-s per measured run in a process that imported torch)."""
    return sum(stat.size for stat in tracemalloc.take_snapshot().statistics("filename")
               if not _tooling(stat.traceback[0].filename))


def measure(run_once: Callable[[], bool], warmups: int, runs: int) -> LeakFinding | None:
    """Run ``run_once`` (True if the test held) ``warmups + runs`` times; the leak, if any.

    None: no steady growth, or the test did not hold in some run (no verdict then). The
    measured runs stop at the first one in which nothing grew: a leak grows in every one.
    """
    for _ in range(warmups - 1):
        if not run_once():
            return None
    # Everything alive now is moved to gc's permanent generation: collections and counts
    # then only walk what the last warm-up and the measured runs create (a process that
    # imported torch tracks ~170,000 objects; counting them all each run costs a second).
    # The last warm-up runs after the freeze: what a run replaces of the one before (pytest's
    # per-item log capture, say) is then counted on both sides, not seen as new in run 1.
    # The freeze is left as found: under the harness each test starts frozen
    # (conformance/gc_freeze.py) and stays so, since thawing a million objects makes the
    # next test's collections walk them all again (8 of a suite's 24 s under --leak-check).
    thaw_after = not gc_freeze.is_frozen()
    collect()
    gc_freeze.freeze(collect_first=False)  # just collected
    started = False
    try:
        if warmups and not run_once():
            return None
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start(1)
        # Only the previous counts are kept (a list of them would itself grow the traced
        # memory). The bookkeeping is alive before the baseline is counted: the memory list,
        # and one counts dict (hence the second count), as at every later count and memory
        # read. Otherwise it is growth in the first measured run, and a clean test needs two.
        memory: list[int] = []
        previous = _type_counts()
        previous = _type_counts()
        memory.append(_traced())
        growth: dict[str, list[int]] | None = None
        for _ in range(runs):
            if not run_once():
                return None
            collect()
            memory.append(_traced())
            current = _type_counts()
            if growth is None:
                growth = {name: [n - previous.get(name, 0)] for name, n in current.items()
                          if n > previous.get(name, 0)}
            else:
                growth = {name: [*d, current.get(name, 0) - previous.get(name, 0)]
                          for name, d in growth.items()
                          if current.get(name, 0) > previous.get(name, 0)}
            previous = current
            if not growth and memory[-1] - memory[-2] < MEMORY_THRESHOLD:
                # Neither a type nor memory can now grow in *every* measured run: the verdict
                # is already "no leak", and the runs left would only cost time (a clean test
                # takes one measured run instead of ``runs``).
                return None
        del previous, current
        leaking = growth or {}
        mem = [b - a for a, b in zip(memory, memory[1:])]
        # Steady, not filling up: a cache that fills (hypothesis's, numpy's) grows in every
        # run too, but by less and less; a leak grows by about the same amount each run.
        settled = max(mem[1:]) if len(mem) > 2 else max(mem)
        mem_leak = (mem if all(x >= MEMORY_THRESHOLD for x in mem) and mem[-1] >= settled / 2
                    else None)
        if not leaking and mem_leak is None:
            return None
        finding = LeakFinding(runs=runs, types=leaking, memory=mem_leak)
        gc_freeze.thaw()  # referrers are only found among unfrozen objects
        _explain(finding, run_once)
        return finding
    finally:
        if thaw_after:
            gc_freeze.thaw_if_frozen()
        if started:
            tracemalloc.stop()


def _explain(finding: LeakFinding, run_once: Callable[[], bool]) -> None:
    """One more run: name what keeps one of its new objects alive, or where memory grew."""
    specific = [n for n in finding.types if n not in _GENERIC]
    wanted = set(specific or finding.types)
    collect()
    before_ids = {id(o) for o in _objects_named(wanted)}
    snapshot = _snapshot() if finding.memory and tracemalloc.is_tracing() else None
    if not run_once():
        return
    collect()
    if wanted:
        new = [o for o in _objects_named(wanted) if id(o) not in before_ids]
        if new:
            obj = new[-1]
            del new
            finding.chain = keep_alive_chain(obj)
            del obj
    if snapshot is not None:
        stats = _snapshot().compare_to(snapshot, "lineno")
        top = next((s for s in stats if s.size_diff > 0), None)
        if top is not None:
            frame = top.traceback[0]
            finding.allocation = f"{frame.filename}:{frame.lineno} (+{top.size_diff} B)"


def _type_name(t: type) -> str:
    """The name objgraph's ``typestats(shortnames=False)`` counts objects of ``t`` under."""
    module = getattr(t, "__module__", None)
    return f"{module}.{t.__name__}" if module else t.__name__


def _objects_named(wanted: set[str]) -> list:
    """The gc-tracked objects whose type name is in ``wanted``: each type is named once, and
    the walk over every object stays in C (a worker can track a million objects)."""
    objects = gc.get_objects()
    kinds = list(map(type, objects))
    type_ids = list(map(id, kinds))
    named = {i for i, t in dict(zip(type_ids, kinds)).items() if _type_name(t) in wanted}
    return list(itertools.compress(objects, map(named.__contains__, type_ids)))


class LeakChecker:
    """pytest plugin: the silent repeated runs before each test's ordinary run."""

    def __init__(self, warmups: int, runs: int, reset: Callable[[object], None]) -> None:
        self.warmups = warmups
        self.runs = runs
        self.reset = reset  # forget per-run state the harness keeps on the item

    @pytest.hookimpl(tryfirst=True, wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        function = getattr(item, "obj", None)
        attributes = dict(getattr(function, "__dict__", None) or {})

        def run_once() -> bool:
            marks = _finalizer_marks(item)
            # nextitem=item.parent: the teardown pops the item (its function-scoped fixtures
            # are torn down and set up afresh next time) and keeps every wider scope.
            reports = runtestprotocol(item, log=False, nextitem=item.parent)
            self.reset(item)
            _forget_finished_dependents(marks)
            if attributes and function.__dict__ != attributes:
                # decorators' per-call state on the test function (hypothesis wraps its
                # settings object once more on every call): not the code under test
                function.__dict__.clear()
                function.__dict__.update(attributes)
            return all(_held(r) for r in reports)

        item.stash[FINDING] = measure(run_once, self.warmups, self.runs)
        try:
            return (yield)
        finally:
            item.stash[FINDING] = None


def _finalizer_marks(item) -> list[tuple[object, int]]:
    """pytest bookkeeping that grows with every run of the same item: a function-scoped
    fixture that uses a wider-scoped one adds ``partial(its finish, request)`` to the wider
    one's finalizers, kept until that scope ends. Note each wider fixture's list length."""
    info = getattr(item, "_fixtureinfo", None)
    marks = []
    for defs in getattr(info, "name2fixturedefs", {}).values():
        for fixturedef in defs:
            finalizers = getattr(fixturedef, "_finalizers", None)
            if getattr(fixturedef, "scope", "function") != "function" and isinstance(finalizers, list):
                marks.append((fixturedef, len(finalizers)))
    return marks


def _forget_finished_dependents(marks) -> None:
    """Drop what a silent run appended to those lists: finishers of function-scoped fixtures,
    already torn down by the run (calling one again would do nothing)."""
    for fixturedef, length in marks:
        finalizers = fixturedef._finalizers
        finalizers[length:] = [f for f in finalizers[length:]
                               if not (isinstance(f, functools.partial)
                                       and getattr(getattr(f.func, "__self__", None),
                                                   "scope", None) == "function")]


def _held(report) -> bool:
    """Whether the framework held in this phase, before expectations (an expected LEAK
    entry turns a held run into XPASS, which must still be measured)."""
    info = phase_info(report)
    if info is not None and info.actual:
        return info.actual in {str(o) for o in HELD}
    return report.outcome == "passed"


def finding_of(item) -> LeakFinding | None:
    return item.stash.get(FINDING, None)
