"""``reference.autograd.gradcheck`` / ``gradgradcheck``: backward against finite differences."""
from __future__ import annotations

import pytest

import reference as R
from reference.autograd import Function, gradcheck, gradgradcheck
from reference.autograd.gradcheck import GradcheckError


def test_correct_gradients_pass_both_checks():
    x = R.randn(3, dtype=R.float64, requires_grad=True)
    y = R.randn(3, dtype=R.float64, requires_grad=True)
    assert gradcheck(lambda a, b: ((a * b).exp(), a.sum()), (x, y))
    assert gradgradcheck(lambda a, b: (a * b).exp() * a, (x, y))


class WrongBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


def test_a_wrong_backward_is_reported():
    x = R.randn(2, dtype=R.float64, requires_grad=True)
    assert gradcheck(WrongBackward.apply, (x,), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(WrongBackward.apply, (x,))
    assert isinstance(GradcheckError("x"), RuntimeError)


class SquareWithDetachedBackward(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x.detach()  # right first derivative, no second one


def test_a_wrong_double_backward_is_reported():
    x = R.randn(2, dtype=R.float64, requires_grad=True)
    assert gradcheck(SquareWithDetachedBackward.apply, (x,))
    assert gradgradcheck(SquareWithDetachedBackward.apply, (x,), raise_exception=False) is False


def test_the_inputs_are_left_as_they_were():
    x = R.tensor([0.5, -1.5], dtype=R.float64, requires_grad=True)
    version = x._version
    gradcheck(lambda a: a.sin(), (x,))
    assert x.tolist() == [0.5, -1.5] and x._version == version and x.grad is None


def test_nothing_to_check_is_refused():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (R.ones(2, dtype=R.float64),))
