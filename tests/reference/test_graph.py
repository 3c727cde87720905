"""torch.autograd.graph.get_gradient_edge: an edge stands for a tensor's gradient in backward
and grad, owns the graph behind it, and outlives the tensor without holding it."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import reference as R
from reference.autograd.graph import GradientEdge, get_gradient_edge
from tests.reference.helpers import arr, leaf


class Clone(R.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


def test_grad_through_an_edge_equals_grad_through_its_tensor():
    a = leaf([1.0, 2.0])
    b = a * a
    loss = (b * 3).sum()
    for target in (a, b):
        edge = get_gradient_edge(target)
        assert isinstance(edge, GradientEdge) and edge.output_nr == target.output_nr and edge.ownership_token is None
        (via_edge,) = R.autograd.grad(loss, edge, retain_graph=True)
        (via_tensor,) = R.autograd.grad(loss, target, retain_graph=True)
        np.testing.assert_array_equal(arr(via_edge), arr(via_tensor))
    assert get_gradient_edge(a).node is get_gradient_edge(a).node  # the leaf's AccumulateGrad
    assert get_gradient_edge(b).node is b.grad_fn


@pytest.mark.parametrize(("make", "expected"), [(lambda x: x.clone(), 2.0), (Clone.apply, 6.0)],
                         ids=["builtin", "custom"])
def test_backward_from_an_edge_whose_tensor_is_gone_makes_the_implicit_gradient(make, expected):
    root = R.rand(1, dtype=R.float64, requires_grad=True)
    out = make(root)
    edge = get_gradient_edge(out)
    ref = weakref.ref(out)
    del out
    gc.collect()
    assert ref() is None  # the edge does not hold its tensor
    R.autograd.backward(edge)  # the node knows its output was a float64 of shape (1,)
    R.autograd.backward(edge)  # nothing was saved: a second pass is allowed
    np.testing.assert_array_equal(arr(root.grad), [expected])
    assert root.grad.dtype is R.float64


def test_an_edge_gradient_is_checked_against_the_recorded_output():
    a = leaf([1.0, 2.0])
    edge = get_gradient_edge(a * 2)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        R.autograd.backward(edge)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        R.autograd.backward(edge, R.ones(3, dtype=R.float64))
    R.autograd.backward(edge, R.ones(2, dtype=R.float64))
    np.testing.assert_array_equal(arr(a.grad), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(R.ones(1))


def test_a_hand_made_edge_takes_an_explicit_gradient():
    a = leaf([1.0])
    b = a * 4
    edge = GradientEdge(b.grad_fn, 0)
    R.autograd.backward(edge, R.ones(1, dtype=R.float64))
    np.testing.assert_array_equal(arr(a.grad), [4.0])


def test_backward_with_edge_inputs_accumulates_only_into_leaves():
    a = leaf([1.0, 2.0])
    b = a * 2
    loss = (b * 3).sum()
    loss.backward(inputs=[get_gradient_edge(b)], retain_graph=True)
    assert a.grad is None and b._grad is None
    loss.backward(inputs=[get_gradient_edge(a)])
    np.testing.assert_array_equal(arr(a.grad), [6.0, 6.0])
