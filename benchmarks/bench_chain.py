"""The 1000-op elementwise chain, three ways (imported by conftest.py and the benchmarks).

Every engine runs the same program: a float64 tensor of N elements goes through 1000
elementwise ops, repeating ``*1.0001, +0.0001, tanh, exp, log`` (values stay in (0, 1):
``log(exp(t)) == t`` and tanh shrinks slowly), then backward of the sum.

* ``numpy``: the floor. Forward on arrays, keeping only what each op's backward needs
  (tanh's and exp's outputs, log's input, which is exp's output), then a hand-written
  backward that drops each saved array as soon as it has been used.
* ``reference``: the reference engine (``reference`` package).
* ``torch``: torch 2.13 CPU with ``torch.set_num_threads(1)``.

The tests in test_bench_chain.py record timings (pytest-benchmark) and peak memory
(tracemalloc, which sees numpy's allocations, so it measures numpy and the reference
but not torch); the terminal summary at the end prints the ratios against the targets.
"""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
N_OPS = 1000
PATTERN = ("mul", "add", "tanh", "exp", "log")
SIZES = {"10": 10, "1e6": 1_000_000}
TARGETS = {
    "reference/torch per op at 10 elements": 1.0,  # issue 25: at parity with torch
    "reference/numpy time at 1e6": 1.1,
    "reference/numpy peak memory at 1e6": 1.05,
}

_results: dict = {}


def initial_values(n):
    """Inputs in (0.5, 1): every op of the chain stays finite and well-conditioned."""
    return np.linspace(0.5, 0.99, n)


# -- the three implementations -----------------------------------------------------------
def numpy_chain(x):
    """Forward + hand-written backward on raw arrays; returns d(sum)/dx."""
    saved = []
    y = x
    for i in range(N_OPS):
        op = PATTERN[i % 5]
        if op == "mul":
            y = y * 1.0001
        elif op == "add":
            y = y + 0.0001
        elif op == "tanh":
            y = np.tanh(y)
            saved.append(y)           # tanh' = 1 - out^2
        elif op == "exp":
            y = np.exp(y)
            saved.append(y)           # exp' = out; also log's input
        else:
            y = np.log(y)
    total = y.sum()
    g = np.ones_like(y)
    del y
    for i in reversed(range(N_OPS)):
        op = PATTERN[i % 5]
        if op == "mul":
            g = g * 1.0001
        elif op == "log":
            g = g / saved[-1]         # exp's output is log's input (not popped yet)
        elif op == "exp":
            g = g * saved.pop()
        elif op == "tanh":
            t = saved.pop()
            g = g * (1 - t * t)
            del t
    return total, g


def apply_chain(y):
    """The N_OPS-op chain, on a tensor of any framework with torch's names."""
    for i in range(N_OPS):
        op = PATTERN[i % 5]
        if op == "mul":
            y = y * 1.0001
        elif op == "add":
            y = y + 0.0001
        elif op == "tanh":
            y = y.tanh()
        elif op == "exp":
            y = y.exp()
        else:
            y = y.log()
    return y


def reference_chain(x_array):
    import reference as R

    x = R.from_numpy(x_array).requires_grad_()
    total = apply_chain(x).sum()  # no other reference to the chain: freed as backward runs
    total.backward()
    return total, x.grad


def torch_chain(x_array):
    import torch

    x = torch.from_numpy(x_array).requires_grad_()
    total = apply_chain(x).sum()
    total.backward()
    return total, x.grad


CHAINS = {"numpy": numpy_chain, "reference": reference_chain, "torch": torch_chain}


def peak_memory(fn, x):
    """Peak bytes traced while ``fn(x)`` runs (the input itself is allocated before)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn(x)
        del result
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def record(engine, size, benchmark, peak=None):
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    if stats is None:  # --benchmark-disable: nothing was measured
        return
    entry = _results.setdefault((engine, size), {})
    entry["median"] = stats.median
    entry["min"] = stats.min
    entry["rounds"] = stats.rounds
    if peak is not None:
        entry["peak"] = peak
        benchmark.extra_info["peak_bytes"] = peak


