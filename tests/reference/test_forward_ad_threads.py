"""Forward-AD levels under threads: process-wide, one at a time, never corrupted.

torch 2.13 (evidence: forward_levels.levels-process-global; forward_grad.h): the level is shared by every thread; a
thread may make duals under a level another thread opened; entering while a level is
open raises the nesting error; the only synchronisation users need is around entering
and exiting. The reference guards its registry with one lock; these tests hammer it, briefly
here and for ``AUTOGRAD_CONFORMANCE_STRESS_ROUNDS`` rounds in ``nox -s stress``.
"""
from __future__ import annotations

import gc
import os
import sys
import threading
import time

import numpy as np
import pytest

import reference as R
import reference.autograd.forward_ad as fwAD
from reference.autograd.forward_ad import _registry
from tests.reference.helpers import arr
from tests.hang import hang_limit

NESTED = "Nested forward mode AD is not supported at the moment"
NO_LEVEL = (
    "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
)
THREADS = 8
#: ``nox -s stress`` sets AUTOGRAD_CONFORMANCE_STRESS_ROUNDS: that many rounds, no time cap.
STRESS_ROUNDS = os.environ.get("AUTOGRAD_CONFORMANCE_STRESS_ROUNDS")
ROUNDS = int(STRESS_ROUNDS or 150)
STEPS = 20  # enter attempts per thread per round
# Rounds past MIN_ROUNDS stop here: a cap on work, never a verdict. 3 s is enough: a registry
# without its lock left stale tangents within 2 s in 3 runs of 3 on a loaded 2-core machine.
TIME_BUDGET_S = None if STRESS_ROUNDS else 3.0
MIN_ROUNDS = 5  # always run, however slow the machine


def t64(values) -> R.Tensor:
    return R.tensor(np.array(values, dtype=np.float64), dtype=R.float64)


@pytest.fixture(autouse=True)
def no_level_left_open():
    assert fwAD._current_level == -1, "a previous test left a forward-AD level open"
    yield
    leaked = fwAD._current_level != -1
    if leaked:
        fwAD.exit_dual_level()
    assert not leaked, "the test left a forward-AD level open"


@pytest.fixture
def frequent_switches():
    """Make the interpreter switch threads far more often, to widen every race window."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def run_threads(target, count=THREADS):
    errors = []

    def guarded(index):
        try:
            target(index)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(f"thread {index}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=hang_limit(15))
    assert not any(thread.is_alive() for thread in threads), "a thread hung (deadlock?)"
    return errors


def test_many_threads_entering_and_leaving_levels(frequent_switches):
    made = []  # every tensor any thread made (strong refs: checked for stale tangents)
    made_lock = threading.Lock()
    state = {"open": 0, "max_open": 0, "owned": 0, "refused": 0}
    state_lock = threading.Lock()
    deadline = None if TIME_BUDGET_S is None else time.monotonic() + TIME_BUDGET_S
    rounds_done = 0

    for round_index in range(ROUNDS):
        if deadline is not None and time.monotonic() > deadline and round_index >= MIN_ROUNDS:
            break
        barrier = threading.Barrier(THREADS)

        def worker(index):
            barrier.wait()
            mine = []
            for step in range(STEPS):
                primal = t64([float(index), float(step), 1.0])
                tangent = t64([1.0, float(index + 1), float(step + 1)])
                try:
                    level = fwAD.enter_dual_level()
                except RuntimeError as exc:
                    assert str(exc) == NESTED, f"enter failed with {exc!r}"
                    with state_lock:
                        state["refused"] += 1
                    # someone else's level: duals may be made under it (it may close any time)
                    for _ in range(4):
                        try:
                            dual = fwAD.make_dual(primal, tangent)
                        except RuntimeError as exc2:
                            assert str(exc2) == NO_LEVEL, f"make_dual failed with {exc2!r}"
                            break
                        mine.extend([dual, dual * 2.0, fwAD.unpack_dual(dual).primal])
                    continue
                with state_lock:
                    state["open"] += 1
                    state["owned"] += 1
                    state["max_open"] = max(state["max_open"], state["open"])
                    assert state["open"] == 1, "two levels open at once"
                try:
                    assert level == 0 and fwAD._current_level == 0
                    dual = fwAD.make_dual(primal, tangent)
                    out = (dual * 3.0).sin()
                    unpacked = fwAD.unpack_dual(dual)
                    assert unpacked.tangent is tangent
                    np.testing.assert_array_equal(arr(unpacked.primal), arr(primal))
                    want = 3.0 * arr(tangent) * np.cos(3.0 * arr(primal))
                    np.testing.assert_allclose(arr(fwAD.unpack_dual(out).tangent), want, rtol=1e-12)
                    mine.extend([dual, out, unpacked.primal])
                finally:
                    with state_lock:
                        state["open"] -= 1
                    fwAD.exit_dual_level(level=level)
                assert fwAD.unpack_dual(dual).tangent is None
            with made_lock:
                made.extend(mine)

        errors = run_threads(worker)
        assert not errors, f"round {round_index}: " + "; ".join(errors[:3])
        assert fwAD._current_level == -1, f"round {round_index}: a level is still open"
        assert len(_registry.carriers) == 0, f"round {round_index}: tensors still registered"
        rounds_done += 1

    assert rounds_done >= MIN_ROUNDS
    assert state["max_open"] == 1 and state["open"] == 0
    assert state["owned"] > 0 and state["refused"] > 0, state
    # Every level is closed: no tensor may still hold a tangent, and a new level (same
    # index 0) must not resurrect one.
    stale = [t for t in made if t._fw_grads]
    assert not stale, f"{len(stale)} of {len(made)} tensors kept a tangent after every level exited"
    with fwAD.dual_level():
        revived = [t for t in made if fwAD.unpack_dual(t).tangent is not None]
        assert not revived, f"{len(revived)} tensors show a tangent in a fresh level"
    assert len(_registry.carriers) == 0
    del made
    gc.collect()
    assert len(_registry.carriers) == 0


def test_level_opened_on_main_thread_is_visible_from_others():
    # evidence: forward_levels.levels-process-global
    seen = {}
    with fwAD.dual_level():
        main_dual = fwAD.make_dual(t64([1.0, 2.0]), t64([1.0, 1.0]))

        def worker(_):
            seen["level"] = fwAD._current_level
            out = fwAD.make_dual(t64([0.5, 0.5]), t64([1.0, 1.0])) * 3
            seen["tangent"] = arr(fwAD.unpack_dual(out).tangent).tolist()
            seen["main_dual"] = fwAD.unpack_dual(main_dual).tangent is not None
            try:
                fwAD.enter_dual_level()
            except RuntimeError as exc:
                seen["nest"] = str(exc)

        assert not run_threads(worker, count=1)
    assert seen == {"level": 0, "tangent": [3.0, 3.0], "main_dual": True, "nest": NESTED}
    assert fwAD.unpack_dual(main_dual).tangent is None


def test_level_opened_on_a_worker_thread():
    # evidence forward_levels.levels-process-global: the worker's level is level 0 and its tangents vanish when it exits
    seen = {}
    opened, release = threading.Event(), threading.Event()

    def worker(_):
        with fwAD.dual_level() as level:
            seen["level"] = level
            seen["dual"] = fwAD.make_dual(t64([1.0, 2.0]), t64([1.0, 1.0]))
            opened.set()
            release.wait(hang_limit(2))

    thread = threading.Thread(target=worker, args=(0,))
    thread.start()
    try:
        assert opened.wait(hang_limit(2))
        assert fwAD._current_level == 0  # visible on this thread
        assert fwAD.unpack_dual(seen["dual"]).tangent is not None
        here = fwAD.make_dual(t64([3.0]), t64([2.0]))  # duals can be made here under it
        assert arr(fwAD.unpack_dual(here * 2).tangent).tolist() == [4.0]
        try:
            fwAD.enter_dual_level()
            raise AssertionError("entering a second level succeeded")
        except RuntimeError as exc:
            assert str(exc) == NESTED
    finally:
        release.set()
        thread.join(hang_limit(2))
    assert seen["level"] == 0
    assert fwAD._current_level == -1
    assert fwAD.unpack_dual(seen["dual"]).tangent is None
    assert fwAD.unpack_dual(here).tangent is None
    assert len(_registry.carriers) == 0


def test_threads_making_duals_under_one_level_get_their_own_tangents(frequent_switches):
    results = {}

    def worker(index):
        rng = np.random.default_rng(index)
        count = 0
        for _ in range(40):
            p = rng.uniform(-1, 1, size=(3,))
            t = rng.uniform(-1, 1, size=(3,))
            tangent = t64(t)
            dual = fwAD.make_dual(t64(p), tangent)
            assert fwAD.unpack_dual(dual).tangent is tangent
            out = (dual * float(index + 1)).tanh() + dual
            y = np.tanh(p * (index + 1))
            want = (1 - y * y) * (index + 1) * t + t
            np.testing.assert_allclose(arr(fwAD.unpack_dual(out).tangent), want, rtol=1e-12, atol=1e-14)
            dual += out  # in place: the tangent accumulates
            np.testing.assert_allclose(arr(tangent), t + want, rtol=1e-12, atol=1e-14)
            count += 1
        results[index] = count

    with fwAD.dual_level():
        errors = run_threads(worker)
        assert not errors, "; ".join(errors[:3])
        assert fwAD._current_level == 0
    assert results == {i: 40 for i in range(THREADS)}
    assert fwAD._current_level == -1
    gc.collect()
    assert len(_registry.carriers) == 0
