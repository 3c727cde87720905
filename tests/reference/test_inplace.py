"""In-place unary ops (exp_, relu_, sin_, cos_): gradients, and what their nodes save."""
from __future__ import annotations

import numpy as np
import pytest

import reference as R

X = np.array([0.5, -1.0, 2.0])
W = np.array([1.0, 2.0, 3.0])
DERIVATIVE = {  # d f(1.5 x) / dx
    "exp_": lambda x: 1.5 * np.exp(1.5 * x),
    "relu_": lambda x: 1.5 * (x > 0),
    "sin_": lambda x: 1.5 * np.cos(1.5 * x),
    "cos_": lambda x: -1.5 * np.sin(1.5 * x),
}


@pytest.mark.parametrize("op", sorted(DERIVATIVE))
def test_gradient_through_an_inplace_unary_op(op):
    a = R.tensor(X, requires_grad=True)
    b = a * 1.5
    assert getattr(b, op)() is b and b._version == 1
    (b * R.tensor(W)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), W * DERIVATIVE[op](X), rtol=1e-6)


def test_result_saving_ops_catch_a_later_write_snapshot_ones_do_not():
    a = R.tensor(X, requires_grad=True)
    b = a * 1
    b.exp_()  # saves its result: b itself, at version 1
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
    c = a * 1
    c.sin_()  # saves a snapshot of the old values: nothing to invalidate
    c.add_(1)
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.cos(X), rtol=1e-6)
