"""The reference under eight threads at once: grad mode, backward on independent graphs and
forward-AD levels, all in the same threads, many rounds.

No lost gradient, no crossed grad mode, no stale level registration. The rounds are short
here (``nox -s tests``); ``nox -s stress`` sets ``AUTOGRAD_CONFORMANCE_STRESS_ROUNDS`` for the
long ones. The same scenario is a rule for every adapter:
``engine.threads-independent-graphs`` and ``forward_levels.threads-enter-exit-rounds``.
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

import reference as R
import reference.autograd.forward_ad as fwAD
from tests.hang import hang_limit

THREADS = 8
ROUNDS = int(os.environ.get("AUTOGRAD_CONFORMANCE_STRESS_ROUNDS", "40"))
NESTED = "Nested forward mode AD is not supported"


@pytest.fixture
def frequent_switches():
    """Switch threads far more often than by default, to widen every race window."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def run_threads(target):
    errors: list[str] = []
    barrier = threading.Barrier(THREADS)

    def guarded(i):
        try:
            barrier.wait(hang_limit(7))
            target(i, errors)
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(f"thread {i}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(hang_limit(150))
    assert not any(th.is_alive() for th in threads), "threads still running (deadlock?)"
    return errors


def mixed_round(i: int, r: int, errors: list[str], level_holders: list[int], lock) -> None:
    """One round of one thread: grad mode, an independent graph's backward, a level try."""
    scale = float(i + 1)
    x = R.full((3,), scale, requires_grad=True)
    w = R.full((3,), float(r + 1), requires_grad=True)
    enabled = (i + r) % 2 == 0
    with R.set_grad_enabled(enabled):
        maybe = x * w
        if maybe.requires_grad is not enabled or R.is_grad_enabled() is not enabled:
            errors.append(f"thread {i} round {r}: grad mode crossed (set {enabled}, "
                          f"is_grad_enabled {R.is_grad_enabled()}, recorded {maybe.requires_grad})")
    with R.no_grad():
        if (x * 2).requires_grad:
            errors.append(f"thread {i} round {r}: no_grad did not apply")
    if not R.is_grad_enabled():
        errors.append(f"thread {i} round {r}: grad mode not restored")
    y = (x * x * w).sum()
    y.backward()
    if not (np.allclose(x.grad.numpy(), 2 * scale * (r + 1)) and np.allclose(w.grad.numpy(), scale ** 2)):
        errors.append(f"thread {i} round {r}: lost or crossed gradient x.grad={x.grad.numpy()} "
                      f"w.grad={w.grad.numpy()}")
    try:
        level = fwAD.enter_dual_level()
    except RuntimeError as exc:
        if NESTED not in str(exc):
            errors.append(f"thread {i} round {r}: enter_dual_level raised {exc}")
        return
    with lock:
        level_holders.append(i)
        holders = len(level_holders)
    try:
        if holders != 1 or level != 0:
            errors.append(f"thread {i} round {r}: level {level} with {holders} holders")
        d = fwAD.make_dual(R.full((2,), scale), R.full((2,), float(r)))
        tangent = fwAD.unpack_dual(d * 3).tangent
        if tangent is None or not np.allclose(tangent.numpy(), 3.0 * r):
            errors.append(f"thread {i} round {r}: tangent {tangent} inside its level")
    finally:
        with lock:
            level_holders.remove(i)
        fwAD.exit_dual_level(level=level)
    if fwAD.unpack_dual(d).tangent is not None:
        errors.append(f"thread {i} round {r}: tangent survived its level")


def test_grad_mode_backward_and_levels_from_eight_threads(frequent_switches):
    holders: list[int] = []
    lock = threading.Lock()

    def work(i, errors):
        for r in range(ROUNDS):
            mixed_round(i, r, errors, holders, lock)

    errors = run_threads(work)
    assert errors == [], f"{len(errors)} problem(s), first: {errors[:3]}"
    assert fwAD._current_level == -1, "a forward-AD level is still registered"
    assert R.is_grad_enabled()
    with fwAD.dual_level() as level:
        assert level == 0


def test_shared_leaf_accumulates_every_threads_gradient(frequent_switches):
    """Threads backpropagating into one shared leaf: every contribution lands, none lost."""
    leaf = R.zeros(4, requires_grad=True)

    def work(i, errors):
        for _ in range(ROUNDS):
            (leaf * float(i + 1)).sum().backward()

    errors = run_threads(work)
    assert errors == [], errors[:3]
    expected = ROUNDS * sum(range(1, THREADS + 1))
    assert np.allclose(leaf.grad.numpy(), expected), (
        f"leaf.grad {leaf.grad.numpy()} after {THREADS} threads x {ROUNDS} rounds, expected "
        f"{expected}: gradients were lost in concurrent accumulation")


def test_grad_mode_is_per_thread_while_others_toggle(frequent_switches):
    """One thread holds no_grad for the whole test while seven toggle grad mode rapidly."""
    stop = threading.Event()

    def work(i, errors):
        if i == 0:
            with R.no_grad():
                for r in range(ROUNDS * 5):
                    if R.is_grad_enabled() or (R.ones(1, requires_grad=True) * 2).requires_grad:
                        errors.append(f"round {r}: another thread's enable_grad reached no_grad")
            stop.set()
            return
        while not stop.is_set():
            with R.enable_grad():
                if not R.is_grad_enabled():
                    errors.append(f"thread {i}: enable_grad not in effect")
            with R.set_grad_enabled(False):
                if R.is_grad_enabled():
                    errors.append(f"thread {i}: set_grad_enabled(False) not in effect")

    errors = run_threads(work)
    assert errors == [], errors[:3]
