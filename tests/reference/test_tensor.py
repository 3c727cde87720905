"""The Tensor object itself: its constructor and what user subclasses may do with it."""
from __future__ import annotations

import pickle

import numpy as np

import reference as R
from reference.autograd import Function
from tests.reference.helpers import arr, leaf


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class Wrapper(R.Tensor):
    """A subclass that keeps the tensor it wraps under a name of its own choosing."""

    def __init__(self, data):
        super().__init__()
        self._data = data


class NeedsData(R.Tensor):
    """A subclass whose own __new__ requires an argument."""

    def __new__(cls, data):
        return super().__new__(cls, data)


def test_a_subclass_may_store_any_attribute_of_its_own():
    # the engine's own state must not take the names users give theirs (torch keeps it in C)
    inner = R.randn(2, 3)
    w = Wrapper(inner)
    assert w._data is inner
    assert tuple(w.shape) == (2, 3) and w.dtype is R.float32
    np.testing.assert_array_equal(arr(w), arr(inner))
    out = Identity.apply(w)
    assert type(out) is Wrapper and tuple(out.shape) == (2, 3)


def test_constructing_from_a_tensor_aliases_it():
    # torch 2.13: Tensor(other) is other.alias() -- a view sharing data and version counter,
    # with AliasBackward0 when other requires grad; the subclass's __init__ still runs
    base = R.zeros(2, 3)
    alias = R.Tensor(base)
    assert alias._base is base and alias.grad_fn is None and not alias.requires_grad
    alias.add_(1)
    assert base._version == alias._version == 1
    np.testing.assert_array_equal(arr(base), np.ones((2, 3)))
    x = leaf([1.0, 2.0])
    w = Wrapper(x)
    assert type(w) is Wrapper and w._base is x and w._data is x
    assert w.grad_fn.name() == "AliasBackward0"
    (w * 3).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [3.0, 3.0])
    with R.no_grad():
        assert not R.Tensor(x).requires_grad


def test_constructor_without_a_tensor():
    empty = R.Tensor()
    assert tuple(empty.shape) == (0,) and empty.dtype is R.float32
    np.testing.assert_array_equal(arr(R.Tensor([1.0, 2.0])), [1.0, 2.0])
    t = R.Tensor([1.0])
    R.Tensor.__init__(t, [5.0])  # __init__ takes anything and changes nothing, as in torch
    np.testing.assert_array_equal(arr(t), [1.0])


def test_the_engine_makes_subclass_results_without_calling_the_subclass_constructor():
    s = NeedsData(R.ones(2))
    assert type(s) is NeedsData
    assert type(s.as_subclass(NeedsData)) is NeedsData
    s.requires_grad_()
    out = Identity.apply(s)
    assert type(out) is NeedsData and out.grad_fn is not None


def test_every_tensor_has_the_strided_layout_and_is_dense():
    x = R.ones(2, 3, dtype=R.float64, requires_grad=True)
    for t in (x, x * 2, x.t(), x[0], R.zeros(0)):
        assert t.layout is R.strided and t.is_sparse is False
    assert isinstance(R.strided, R.layout) and repr(R.strided) == "reference.strided"
    assert pickle.loads(pickle.dumps(x.layout)) is R.strided
