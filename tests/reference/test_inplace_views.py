"""as_strided, and the in-place view ops (transpose_, t_, squeeze_, unsqueeze_, swapdims_,
swapaxes_, as_strided_): the tensor itself takes the view's geometry, as an in-place op."""
from __future__ import annotations

import numpy as np
import pytest

import reference as R
import reference.autograd.forward_ad as fwAD
from tests.reference.helpers import arr, leaf

OPS = {  # in-place op, its out-of-place twin, torch's node name
    "transpose_": (lambda t: t.transpose_(0, 1), lambda t: t.transpose(0, 1), "TransposeBackward1"),
    "swapdims_": (lambda t: t.swapdims_(0, 1), lambda t: t.swapdims(0, 1), "TransposeBackward1"),
    "swapaxes_": (lambda t: t.swapaxes_(1, 0), lambda t: t.swapaxes(1, 0), "TransposeBackward1"),
    "t_": (lambda t: t.t_(), lambda t: t.t(), "TBackward1"),
    "squeeze_dim": (lambda t: t.squeeze_(1), lambda t: t.squeeze(1), "SqueezeBackward4"),
    "squeeze_dims": (lambda t: t.squeeze_((1, 0)), lambda t: t.squeeze((1, 0)), "SqueezeBackward5"),
    "squeeze_": (lambda t: t.squeeze_(), lambda t: t.squeeze(), "SqueezeBackward3"),
    "unsqueeze_": (lambda t: t.unsqueeze_(0), lambda t: t.unsqueeze(0), "UnsqueezeBackward1"),
    "as_strided_": (lambda t: t.as_strided_((2, 2), (1, 2), 1), lambda t: t.as_strided((2, 2), (1, 2), 1),
                    "AsStridedBackward1"),
}
SHAPES = {"squeeze_dim": (3, 1, 2), "squeeze_": (3, 1, 2)}


@pytest.mark.parametrize("name", sorted(OPS))
def test_the_tensor_takes_the_view_geometry_with_a_version_bump_and_a_node_after_its_history(name):
    inplace, outplace, node_name = OPS[name]
    shape = SHAPES.get(name, (2, 3))
    x = leaf(np.arange(6.0).reshape(shape))
    weights = R.tensor(np.linspace(1.0, 2.0, 6), dtype=R.float64)
    expected = outplace(x * 1)
    (expected * weights[: expected.numel()].reshape(expected.shape)).sum().backward()
    expected_grad, x.grad = x.grad, None

    y = x * 1
    old_node = y.grad_fn
    assert inplace(y) is y and y._version == 1 and y.shape == expected.shape
    assert y.grad_fn.name() == node_name and y.grad_fn.next_functions == ((old_node, 0),)
    np.testing.assert_array_equal(arr(y), arr(expected))
    (y * weights[: y.numel()].reshape(y.shape)).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), arr(expected_grad))


def test_a_leaf_is_refused_in_grad_mode_and_changed_under_no_grad():
    x = leaf(np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.t_()
    with R.no_grad():
        x.t_()
    assert x.shape == (3, 2) and x._version == 1 and x.is_leaf and x.requires_grad


def test_a_view_stays_a_view_of_its_base_and_in_place_ops_on_it_reach_the_base():
    x = leaf(np.arange(6.0))
    base = x * 1
    view = base.view(2, 3)
    view.t_()
    assert view._base is base and view.shape == (3, 2) and base._version == 1
    view.mul_(R.tensor([[1.0, 10.0]] * 3, dtype=R.float64))
    np.testing.assert_array_equal(arr(base), [0, 1, 2, 30, 40, 50])
    base.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1, 1, 1, 10, 10, 10])


def test_views_of_a_base_that_changes_geometry_still_replay_their_own_region():
    x = leaf(np.arange(6.0))
    base = (x * 1).reshape(2, 3).clone()
    row = base[0]
    base.t_()
    base.mul_(2)  # the row's history is replayed from the transposed base
    np.testing.assert_array_equal(arr(row), [0, 2, 4])
    (row * R.tensor([1.0, 2.0, 3.0], dtype=R.float64)).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2, 4, 6, 0, 0, 0])


@pytest.mark.parametrize("grad_mode_view", [True, False])
@pytest.mark.parametrize("grad_mode_iview", [True, False])
def test_creation_mode_rules_apply_to_in_place_view_ops(grad_mode_view, grad_mode_iview):
    """torch's matrix: a view made under no_grad may be viewed in place only under no_grad,
    and stays a no_grad view; an in-place view op under no_grad does not make one."""
    base = leaf(np.ones((2, 3))).clone()
    with R.set_grad_enabled(grad_mode_view):
        view = base.view_as(base)
    with R.set_grad_enabled(grad_mode_iview):
        if not grad_mode_view and grad_mode_iview:
            with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
                view.transpose_(0, 1)
            return
        view.transpose_(0, 1)
    if not grad_mode_view:
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            view.add_(1)
    else:
        view.add_(1)


def test_outputs_of_multi_view_ops_are_refused_in_grad_mode():
    base = leaf(np.ones((2, 3))).clone()
    first = base.unbind()[0]
    with pytest.raises(RuntimeError, match="function that returns multiple views"):
        first.unsqueeze_(0)
    with R.no_grad():
        first.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="function that returns multiple views"):
        first.add_(1)


def test_a_tangent_takes_the_same_geometry():
    with fwAD.dual_level():
        dual = fwAD.make_dual(R.arange(6.0).reshape(2, 3).clone(), R.arange(6.0).reshape(2, 3) * 10)
        dual.t_()
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual).tangent), np.arange(6.0).reshape(2, 3).T * 10)
        flat = dual * 1
        flat.as_strided_((2,), (1,), 2)
        primal, tangent = fwAD.unpack_dual(flat)
        np.testing.assert_array_equal(arr(primal), [2.0, 3.0])
        np.testing.assert_array_equal(arr(tangent), [20.0, 30.0])


def test_as_strided_counts_from_the_start_of_the_storage():
    x = R.arange(6.0)
    tail = x[1:]
    np.testing.assert_array_equal(arr(tail.as_strided((2,), (1,))), [1.0, 2.0])
    np.testing.assert_array_equal(arr(tail.as_strided((2,), (1,), 0)), [0.0, 1.0])
    window = x.view(2, 3).as_strided((2, 2), (1, 2), 1)
    np.testing.assert_array_equal(arr(window), [[1, 3], [2, 4]])
    assert window._base is x and window.stride() == (1, 2) and window.storage_offset() == 1
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        x.as_strided((10,), (1,))


def test_as_strided_gradient_adds_overlapping_outputs_and_shares_among_overlapping_inputs():
    w = leaf(np.arange(4.0))
    (w.as_strided((2, 2), (1, 1)) * R.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=R.float64)).sum().backward()
    np.testing.assert_array_equal(arr(w.grad), [1, 5, 4, 0])  # element 1 is read twice
    v = leaf(np.ones(3))
    v.expand(2, 3).as_strided((3,), (1,)).sum().backward()  # each position is shared by 2 inputs
    np.testing.assert_array_equal(arr(v.grad), [1, 1, 1])
    a = leaf(np.arange(4.0))
    assert R.autograd.gradcheck(lambda t: t.as_strided((2, 2), (1, 1), 1), (a,))
    assert R.autograd.gradgradcheck(lambda t: t.as_strided((2, 2), (1, 1)) * t.as_strided((2, 2), (2, 1)), (a,))


def _names(node):
    return [None if n is None else n.name() for n, _ in node.next_functions]


def test_setitem_basic_index_is_copyslices_over_the_base_as_torch():
    """torch 2.13's graphs for ``x[basic] = value`` (observed): a copy through the view."""
    y = R.ones(2, requires_grad=True)
    x = R.zeros(3, 2)
    x[0] = y * 2
    assert x.grad_fn.name() == "CopySlices" and _names(x.grad_fn) == [None, "MulBackward0"]
    b = R.zeros(3, 2)
    b[1:] = y
    assert _names(b.grad_fn) == [None, "ExpandBackward0"]
    assert _names(b.grad_fn.next_functions[1][0]) == ["ViewBackward0"]
    c = R.zeros(3, 2)
    c[0] = R.ones(1, 2, requires_grad=True)
    assert _names(c.grad_fn) == [None, "ViewBackward0"]
    d = R.zeros(3, 2)
    d[...] = y
    assert d.grad_fn.name() == "CopyBackwards" and _names(d.grad_fn) == [None, "ExpandBackward0"]
    a = R.ones(3, 2, requires_grad=True).clone()
    a[0, 1] = 2.0
    assert a.grad_fn.name() == "CopySlices" and _names(a.grad_fn) == ["CloneBackward0", None]
    e = R.zeros(3)
    e[R.tensor([0, 1])] = R.ones(2, requires_grad=True)  # an advanced index stays index_put_
    assert e.grad_fn.name() == "IndexPutBackward0"
