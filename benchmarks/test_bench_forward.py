"""Forward-mode AD of the 1000-op elementwise chain: numpy floor, reference, torch.

The same chain as the reverse benchmark (bench_chain.py: ``*1.0001, +0.0001, tanh, exp,
log`` repeated, float64, values in (0, 1)), but carrying a tangent forward instead of
running backward:

* ``numpy``: the floor, computing each op's value and the tangent by hand
  (``t*c``, ``t``, ``t*(1-y*y)``, ``t*y``, ``t/x``).
* ``reference``: ``reference.autograd.forward_ad`` (make_dual, the chain, unpack_dual).
* ``torch``: ``torch.autograd.forward_ad`` on torch 2.13 CPU, ``torch.set_num_threads(1)``
  (conftest.py sets it for the session).

Run with ``python -m pytest benchmarks --benchmark-only``; the forward ratios are printed
in their own section at the end of the session.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from bench_chain import N_OPS, PATTERN, SIZES, TARGETS, apply_chain, initial_values

ENGINES = ["numpy", "reference", "torch"]
# few rounds at 1e6: one round is ~1000 ops, each a few passes over 8 MB arrays
ROUNDS = {"10": dict(rounds=30, warmup_rounds=3), "1e6": dict(rounds=3, warmup_rounds=0)}
FORWARD_TARGETS = {
    "reference/torch per op at 10 elements": TARGETS["reference/torch per op at 10 elements"],
    "reference/numpy time at 1e6": TARGETS["reference/numpy time at 1e6"],
}

_forward_results: dict = {}


def tangent_values(n):
    """A non-trivial input tangent (so a wrong rule cannot hide behind ones)."""
    return np.linspace(1.0, -0.5, n)


# -- the three implementations -----------------------------------------------------------
def numpy_forward(x, v):
    y, t = x, v
    for i in range(N_OPS):
        op = PATTERN[i % 5]
        if op == "mul":
            y = y * 1.0001
            t = t * 1.0001
        elif op == "add":
            y = y + 0.0001
        elif op == "tanh":
            y = np.tanh(y)
            t = t * (1 - y * y)
        elif op == "exp":
            y = np.exp(y)
            t = t * y
        else:
            t = t / y
            y = np.log(y)
    return y, t


def reference_forward(x, v):
    import reference as R
    import reference.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        y = apply_chain(fwAD.make_dual(R.from_numpy(x), R.from_numpy(v)))
        primal, tangent = fwAD.unpack_dual(y)
    return primal, tangent


def torch_forward(x, v):
    import torch
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        y = apply_chain(fwAD.make_dual(torch.from_numpy(x), torch.from_numpy(v)))
        primal, tangent = fwAD.unpack_dual(y)
    return primal, tangent


FORWARD_CHAINS = {"numpy": numpy_forward, "reference": reference_forward, "torch": torch_forward}


def _as_array(value):
    return np.asarray(value.detach().numpy() if hasattr(value, "detach") else value)


@pytest.fixture(scope="module", autouse=True)
def _forward_summary(request):
    """Print the forward-mode ratios at the end of the session (own section)."""
    class Summary:
        @staticmethod
        def pytest_terminal_summary(terminalreporter):
            _write_summary(terminalreporter)

    plugin = Summary()
    request.config.pluginmanager.register(plugin, "forward-chain-summary")
    yield


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("engine", ENGINES)
def test_forward_chain(benchmark, engine, size):
    if engine == "torch":
        torch = pytest.importorskip("torch")
        torch.set_num_threads(1)
    fn = FORWARD_CHAINS[engine]
    x, v = initial_values(SIZES[size]), tangent_values(SIZES[size])
    benchmark.group = f"forward-chain-{size}"
    benchmark.extra_info["ops"] = N_OPS
    primal, tangent = benchmark.pedantic(fn, args=(x, v), iterations=1, **ROUNDS[size])
    if size == "10":
        want_primal, want_tangent = numpy_forward(x, v)
        assert tangent is not None, "the chain's output carries no tangent"
        np.testing.assert_allclose(_as_array(primal), want_primal, rtol=1e-12)
        np.testing.assert_allclose(_as_array(tangent), want_tangent, rtol=1e-9, atol=1e-12)
        assert np.isfinite(_as_array(tangent)).all()
    del primal, tangent
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    if stats is not None:  # None under --benchmark-disable
        _forward_results[(engine, size)] = {"median": stats.median, "min": stats.min, "rounds": stats.rounds}


def _write_summary(tr):
    if not _forward_results:
        return
    tr.section("1000-op chain, forward-mode AD: reference vs numpy floor vs torch (1 thread)")
    tr.write_line(f"{'engine':<10} {'size':>5} {'median s':>10} {'min s':>10} {'us/op (median)':>15} {'rounds':>6}")
    for (engine, size), entry in sorted(_forward_results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        tr.write_line(f"{engine:<10} {size:>5} {entry['median']:>10.4f} {entry['min']:>10.4f} "
                      f"{entry['median'] / N_OPS * 1e6:>15.2f} {entry['rounds']:>6}")

    def ratio(a, b, size):
        first = _forward_results.get((a, size), {}).get("median")
        second = _forward_results.get((b, size), {}).get("median")
        return first / second if first is not None and second else math.nan

    ratios = {
        "reference/torch per op at 10 elements": ratio("reference", "torch", "10"),
        "reference/numpy per op at 10 elements": ratio("reference", "numpy", "10"),
        "reference/numpy time at 1e6": ratio("reference", "numpy", "1e6"),
        "torch/numpy time at 1e6": ratio("torch", "numpy", "1e6"),
    }
    tr.write_line("")
    for name, value in ratios.items():
        target = FORWARD_TARGETS.get(name)
        if target is None:
            verdict = ""
        elif math.isnan(value):
            verdict = "  (not measured)"
        else:
            verdict = f"  target <= {target}: {'met' if value <= target else 'MISSED'}"
        tr.write_line(f"{name:<40} {value:>7.3f}{verdict}")
