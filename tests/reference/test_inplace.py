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


NAMES = {  # torch 2.13's node names: an in-place op's node is named as its out-of-place twin's
    "mul_": (lambda t, o: t.mul_(o), "MulBackward0"), "mul_scalar": (lambda t, o: t.mul_(2), "MulBackward0"),
    "add_": (lambda t, o: t.add_(o, alpha=2), "AddBackward0"), "add_scalar": (lambda t, o: t.add_(2), "AddBackward0"),
    "div_": (lambda t, o: t.div_(o), "DivBackward0"), "sub_": (lambda t, o: t.sub_(o), "SubBackward0"),
    "isub": (lambda t, o: t.__isub__(o), "SubBackward0"), "exp_": (lambda t, o: t.exp_(), "ExpBackward0"),
    "relu_": (lambda t, o: t.relu_(), "ReluBackward0"), "sin_": (lambda t, o: t.sin_(), "SinBackward0"),
    "cos_": (lambda t, o: t.cos_(), "CosBackward0"),
}


@pytest.mark.parametrize("op", sorted(NAMES))
def test_in_place_nodes_are_named_as_torch_names_them(op):
    fn, name = NAMES[op]
    x = R.tensor(X, requires_grad=True)
    assert fn(x.clone(), R.tensor(W, requires_grad=True) * 1).grad_fn.name() == name


def test_sub_with_alpha_subtracts_alpha_times_other():
    x, y = R.tensor(X, requires_grad=True), R.tensor(W, requires_grad=True)
    out = x.clone()
    out.sub_(y, alpha=2)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), X - 2 * W)
    np.testing.assert_allclose(y.grad.numpy(), [-2.0, -2.0, -2.0])


def test_number_to_a_tensor_power_is_pow_backward2():
    x = R.tensor(X, requires_grad=True)
    assert ((2 ** x).grad_fn.name(), (x ** x).grad_fn.name(), (x ** 2).grad_fn.name()) == \
        ("PowBackward2", "PowBackward1", "PowBackward0")
