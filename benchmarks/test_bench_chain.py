"""Forward + backward of a 1000-op elementwise chain: numpy floor, reference, torch.

Run with ``python -m pytest benchmarks --benchmark-only``; the ratios are printed at the
end of the session (see conftest.py).
"""
from __future__ import annotations

import numpy as np
import pytest

from bench_chain import CHAINS, SIZES, initial_values, peak_memory, record

ENGINES = ["numpy", "reference", "torch"]
# few rounds at 1e6: one round is ~1000 passes over 8 MB arrays, several seconds per engine
ROUNDS = {"10": dict(rounds=30, warmup_rounds=3), "1e6": dict(rounds=3, warmup_rounds=1)}


def _check(engine, total, grad, x):
    expected_total, expected_grad = CHAINS["numpy"](x)
    grad = np.asarray(grad.detach().numpy() if hasattr(grad, "detach") else grad)
    assert np.isfinite(grad).all()
    np.testing.assert_allclose(float(total), float(expected_total), rtol=1e-9)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("engine", ENGINES)
def test_chain(benchmark, engine, size):
    if engine == "torch":
        pytest.importorskip("torch")
    fn = CHAINS[engine]
    x = initial_values(SIZES[size])
    benchmark.group = f"chain-{size}"
    benchmark.extra_info["ops"] = 1000
    total, grad = benchmark.pedantic(fn, args=(x,), iterations=1, **ROUNDS[size])
    if size == "10":
        _check(engine, total, grad, x)
    del total, grad
    peak = peak_memory(fn, x) if size == "1e6" and engine in ("numpy", "reference") else None
    record(engine, size, benchmark, peak)
