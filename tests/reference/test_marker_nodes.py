"""Nodes without an op: an error raised only where a backward reaches it, and an undefined gradient."""
import numpy as np
import pytest

import reference as R
from reference.autograd import marker_nodes


def test_delayed_error_raises_only_on_paths_that_need_it():
    x = R.rand(2, requires_grad=True)
    y = R.rand(2, requires_grad=True)
    y_safe = marker_nodes.delayed_error("Boom!", y)
    assert y_safe.grad_fn.name() == "DelayedError"
    np.testing.assert_array_equal(y_safe.detach().numpy(), y.detach().numpy())
    with pytest.raises(RuntimeError, match="Boom!"):
        (x * y_safe).sum().backward()
    with pytest.raises(RuntimeError, match="Boom!"):
        R.autograd.grad((x * y_safe).sum(), y)
    gx, = R.autograd.grad((x * y_safe).sum(), x)  # the error node is not on x's path
    np.testing.assert_allclose(gx.numpy(), y.detach().numpy())
    gy, = R.autograd.grad((x * y_safe).sum(), y_safe)  # nor on the path to y_safe itself
    np.testing.assert_allclose(gy.numpy(), x.detach().numpy())


def test_delayed_error_of_several_tensors_keeps_each_output_number():
    a, b = R.ones(2, requires_grad=True), R.ones(3)
    out_a, out_b = marker_nodes.delayed_error("no", a, b)
    assert out_a.grad_fn is not None and out_a.output_nr == 0
    assert out_b.grad_fn is None and not out_b.requires_grad


def test_undefined_grad_reaches_a_custom_function_as_zeros_or_none():
    seen = []

    class Identity(R.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            seen.append(None if grad is None else grad.numpy().tolist())
            return grad, None

    x = R.ones(1, requires_grad=True)
    marker_nodes.undefined_grad(Identity.apply(x, True)).backward()
    marker_nodes.undefined_grad(Identity.apply(x, False)).backward()
    assert seen == [[0.0], None]
    assert x.grad.numpy().tolist() == [0.0]  # the zeros the first backward returned


def test_undefined_grad_leaves_the_leaf_without_grad():
    x = R.ones(2, requires_grad=True)
    marker_nodes.undefined_grad(x * 2).sum().backward()
    assert x.grad is None
