"""The reference engine's views and in-place ops on them (suite `views`), multi-grad hooks
and queued callbacks: gradients against hand-computed values, and no reference cycle."""
from __future__ import annotations

import weakref

import numpy as np
import pytest

import reference as R
from reference.autograd.graph import increment_version, register_multi_grad_hook
from tests.reference.helpers import gc_disabled


def grad_of(fn, values):
    a = R.tensor(values, requires_grad=True)
    fn(a).sum().backward()
    return a.grad.numpy()


def test_inplace_on_transposed_view():  # rule: views.inplace-on-view-rewrites-base
    def fn(a):
        b = a * 1
        b.t()[0].mul_(3)  # column 0 of b
        return b * R.tensor([[1.0, 2.0], [3.0, 4.0]])

    np.testing.assert_allclose(grad_of(fn, [[1.0, 1.0], [1.0, 1.0]]), [[3, 2], [9, 4]])


def test_setitem_on_view_of_view():  # rule: views.view-history-follows-base
    w = R.ones(1, requires_grad=True)

    def fn(a):
        b = a * 1
        b[1:][0:1] = w * 5
        return b

    np.testing.assert_allclose(grad_of(fn, [1.0, 1.0, 1.0]), [1, 0, 1])
    np.testing.assert_allclose(w.grad.numpy(), [5])


def test_view_retain_grad_follows_new_history():
    a = R.ones(3, requires_grad=True)
    b = a * 1
    v = b[:2]
    v.retain_grad()
    v.mul_(2)
    (v * 3).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [3, 3])
    np.testing.assert_allclose(a.grad.numpy(), [6, 6, 0])


def test_fill_and_zero_on_views():
    def fn(a):
        b = a * 2
        b[0].fill_(7.0)
        b[2:].zero_()
        return b

    np.testing.assert_allclose(grad_of(fn, [1.0, 1.0, 1.0, 1.0]), [0, 2, 0, 0])


def test_no_cycle_after_inplace_on_view():  # rule: views.inplace-on-view-graph-freed
    with gc_disabled():
        a = R.ones(4, requires_grad=True)
        b = a * 1
        v = b[1:3]
        v.mul_(a[1:3] * 1)
        node = weakref.ref(b.grad_fn)
        view_node = weakref.ref(v.grad_fn)
        del b, v
        assert node() is None and view_node() is None


def test_views_registry_drops_dead_views():
    b = R.ones(4) * 1
    for i in range(100):
        b[i % 4: i % 4 + 1]
    assert len(b._views) <= 16


def test_no_grad_view_is_not_registered_and_refuses():
    b = R.ones(4, requires_grad=True) * 1
    with R.no_grad():
        v = b[:2]
    assert not getattr(b, "_views", None)
    with pytest.raises(RuntimeError, match="no_grad mode"):
        v.add_(1)


def test_multi_grad_hook_holds_no_cycle():
    with gc_disabled():
        a = R.ones(2, requires_grad=True)
        y = a * 2
        register_multi_grad_hook((a, y), lambda grads: None)
        ref_a, ref_y = weakref.ref(a), weakref.ref(y)
        del a, y
        assert ref_a() is None and ref_y() is None


def test_multi_grad_hook_with_autograd_grad_inputs():
    a = R.ones(2, requires_grad=True)
    b = R.ones(2, requires_grad=True)
    seen = []
    register_multi_grad_hook((a, b), lambda grads: seen.append([g is None for g in grads]))
    R.autograd.grad((a * b).sum(), (a,))
    assert seen == [[False, True]]


def test_callbacks_of_nested_backward_stay_in_their_task():
    order = []
    x = R.ones(1, requires_grad=True)

    def hook(g):
        R.autograd.Variable._execution_engine.queue_callback(lambda: order.append("outer"))
        inner = R.ones(1, requires_grad=True)

        def inner_hook(g2):
            R.autograd.Variable._execution_engine.queue_callback(lambda: order.append("inner"))

        with R.enable_grad():
            y2 = inner * 2
            y2.register_hook(inner_hook)
            y2.sum().backward()
        order.append("inner returned")

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert order == ["inner", "inner returned", "outer"]


def test_increment_version_of_several():
    a, b = R.ones(1), R.ones(1)
    increment_version([a, b])
    assert (a._version, b._version) == (1, 1)


def test_narrow_and_select_are_views_of_their_base():
    base = R.tensor([[0.0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])
    narrowed, selected = base.narrow(1, 1, 2), R.select(base, 0, -1)
    np.testing.assert_allclose(narrowed.numpy(), [[1, 2], [5, 6], [9, 10]])
    np.testing.assert_allclose(selected.numpy(), [8, 9, 10, 11])
    assert narrowed._base is base and selected._base is base
    narrowed.mul_(10)
    assert base._version == narrowed._version == selected._version == 1
    np.testing.assert_allclose(selected.numpy(), [8, 90, 100, 11])
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        base.narrow(1, 3, 2)
    with pytest.raises(IndexError, match="out of range"):
        base.select(0, 3)


def test_inplace_on_narrowed_view_of_a_clone_reaches_the_leaf():  # rule: views.inplace-on-view-rewrites-base
    def fn(a):
        b = a.clone()
        b.narrow(0, 0, 1).mul_(2)
        b.select(1, 1).mul_(3)
        return b

    np.testing.assert_allclose(grad_of(fn, [[1.0, 1.0], [1.0, 1.0]]), [[2, 6], [1, 3]])


def test_outputs_of_unbind_split_and_chunk_refuse_recorded_writes():  # rule: views.inplace-on-multi-output-view
    a = R.ones(6, requires_grad=True)
    b = a * 1
    for parts in (b.unbind(), b.split(4), b.chunk(3), R.split(b, [1, 5])):
        assert all(p._base is b for p in parts)
        with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
            parts[-1].mul_(2)
        with pytest.raises(RuntimeError, match="returns multiple views"):
            parts[0].view(-1).add_(1)  # a view of such an output too
    assert [p.shape[0] for p in b.split(4)] == [4, 2] and [p.shape[0] for p in b.chunk(4)] == [2, 2, 2]
    with R.no_grad():
        b.unbind()[0].mul_(5)
    first, rest = b.unsafe_split(2)[0], b.unsafe_chunk(3)[1]
    first.mul_(2)  # the unsafe variants opt out
    rest.mul_(3)
    (b * R.arange(1.0, 7.0)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2, 4, 9, 12, 5, 6])  # the no_grad write is not recorded
