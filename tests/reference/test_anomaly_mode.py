"""Anomaly mode: process-wide; a node returning NaN stops the backward (check_nan)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import reference as R


def test_detect_anomaly_refuses_a_node_that_returns_nan_and_restores_the_mode():
    assert not R.is_anomaly_enabled() and R.is_anomaly_check_nan_enabled()
    x = R.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with R.autograd.detect_anomaly():
            assert R.is_anomaly_enabled() and any("Anomaly Detection" in str(w.message) for w in caught)
            with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan values in its 1th output"):
                (x / x).sum().backward()
            with R.autograd.set_detect_anomaly(True, check_nan=False):
                (x / x).sum().backward()
            assert R.is_anomaly_check_nan_enabled()
    assert not R.is_anomaly_enabled()
    np.testing.assert_array_equal(np.isnan(x.grad.numpy()), [True, False])
    x.grad = None
    (x / x).sum().backward()  # outside anomaly mode: NaN passes
    R.autograd.set_detect_anomaly(True)
    try:
        assert R.is_anomaly_enabled()
    finally:
        R.autograd.set_detect_anomaly(False)
    assert not R.is_anomaly_enabled()


def test_anomaly_mode_names_a_custom_function_and_checks_double_backward():
    class Bad(R.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g + float("nan")

    x = R.ones(1, requires_grad=True)
    (g,) = R.autograd.grad(Bad.apply(x) * x, x, create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with R.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="'BadBackward' returned nan"):
            Bad.apply(x).backward()
        with R.autograd.detect_anomaly(check_nan=False):
            g.sum().backward()
