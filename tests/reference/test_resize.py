"""resize_ / resize_as_: a new shape over the same storage, with a version bump only when
the shape changes; refused for tensors that require grad or carry a tangent."""
from __future__ import annotations

import numpy as np
import pytest

import reference as R
import reference.autograd.forward_ad as fwAD


def test_a_new_shape_bumps_the_version_and_the_same_shape_is_a_no_op():
    x, y = R.rand(1), R.randn(3)
    assert x.resize_((1, 2)) is x and x.shape == (1, 2) and x._version == 1
    assert x.resize_as_(y) is x and x.shape == (3,) and x._version == 2
    x.resize_(3)
    x.resize_as_(y)
    assert x._version == 2


def test_the_elements_are_the_storage_in_memory_order_and_shrinking_keeps_the_rest():
    y = R.arange(6.0)
    y.resize_(2)
    np.testing.assert_array_equal(y.numpy(), [0, 1])
    y.resize_(2, 3)
    np.testing.assert_array_equal(y.numpy(), [[0, 1, 2], [3, 4, 5]])
    assert y.stride() == (3, 1)
    t = R.arange(6.0).reshape(2, 3).t()
    t.resize_(3, 2)  # the same shape: strides kept
    assert t.stride() == (1, 3)
    t.resize_(6)
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0))


def test_a_view_resized_within_its_storage_still_writes_into_its_base():
    base = R.zeros(6)
    view = base[2:4]
    view.resize_(3)
    assert view.storage_offset() == 2 and view._base is base
    view.fill_(1.0)
    np.testing.assert_array_equal(base.numpy(), [0, 0, 1, 1, 1, 0])
    assert base._version == view._version == 2


def test_growing_keeps_the_old_elements():
    x = R.arange(3.0)
    x.resize_(2, 3)
    np.testing.assert_array_equal(x.numpy()[0], [0, 1, 2])


def test_resizing_a_tensor_that_requires_grad_or_has_a_tangent_is_refused():
    leaf = R.ones(2, requires_grad=True)
    for tensor in (leaf, leaf * 2):
        with R.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            tensor.resize_(3)
    with fwAD.dual_level():
        dual = fwAD.make_dual(R.ones(2), R.ones(2))
        with pytest.raises(RuntimeError, match="forward grad"):
            dual.resize_(3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        R.ones(1).resize_(-1)
