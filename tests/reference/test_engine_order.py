"""The order in which backward runs nodes, and what each node receives.

Ready nodes run newest first (by creation order); a node runs once per backward with
the gradients of all its uses summed; gradients accumulate across calls and roots.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np

import reference as R
from tests.reference.helpers import arr, leaf
from tests.hang import hang_limit


def _log_node(node, log, label):
    node.register_prehook(lambda grads: log.append(label))


def test_ready_nodes_run_newest_first():
    x = leaf([1.0, 2.0])
    log = []
    a = x * 2          # created first
    b = x * 3          # created second
    c = x * 4          # created third
    for t, name in ((a, "a"), (b, "b"), (c, "c")):
        _log_node(t.grad_fn, log, name)
    (a + b + c).sum().backward()
    assert log == ["c", "b", "a"]


def test_newest_first_even_when_combined_in_other_order():
    x = leaf([1.0])
    log = []
    first = x.exp()
    second = x.sin()
    _log_node(first.grad_fn, log, "first")
    _log_node(second.grad_fn, log, "second")
    (first * second).sum().backward()   # the product names first before second
    assert log == ["second", "first"]


def test_node_waits_for_all_its_consumers():
    # y feeds both z1 (created early) and z2 (created late, via a longer path).
    x = leaf([1.0])
    log = []
    y = x * 2
    z1 = y * 3
    w = x.exp()
    z2 = (y + w) * 5
    for t, name in ((y, "y"), (z1, "z1"), (w, "w"), (z2, "z2")):
        _log_node(t.grad_fn, log, name)
    (z1 + z2).sum().backward()
    assert log.index("y") > log.index("z1") and log.index("y") > log.index("z2")
    assert log.count("y") == 1
    np.testing.assert_allclose(arr(x.grad), [2 * 3 + 2 * 5 + 5 * np.exp(1.0)])


def test_diamond_runs_shared_node_once_with_summed_gradient():
    x = leaf([1.0, -2.0])
    y = x * 2
    seen = []
    y.grad_fn.register_prehook(lambda grads: seen.append(arr(grads[0])))
    hook_seen = []
    y.register_hook(lambda g: hook_seen.append(arr(g)))
    left = y * 3
    right = y * 4
    (left + right).sum().backward()
    assert len(seen) == 1 and len(hook_seen) == 1
    np.testing.assert_allclose(seen[0], [7.0, 7.0])
    np.testing.assert_allclose(hook_seen[0], [7.0, 7.0])
    np.testing.assert_allclose(arr(x.grad), [14.0, 14.0])


def test_same_tensor_used_twice_in_one_op():
    x = leaf([3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [6.0])
    y = x * 1
    z = y + y
    z.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [8.0])


def test_accumulation_across_calls_and_duplicate_roots():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [6.0, 6.0])
    a = leaf([1.0, -1.0])
    b = leaf([0.5, 2.0])
    p = a * b
    R.autograd.backward([p, p], [R.ones(2, dtype=R.float64), R.ones(2, dtype=R.float64)])
    np.testing.assert_allclose(arr(a.grad), 2 * arr(b))


def test_accumulation_is_in_place_unless_create_graph():
    def run(create_graph):
        x = leaf(np.arange(5.0))
        y = x + 2
        y.backward(R.ones(5, dtype=R.float64), retain_graph=True)
        g = x.grad
        before = arr(g)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(R.ones(5, dtype=R.float64), create_graph=create_graph)
        return g is x.grad, np.array_equal(arr(g), before * 2), np.array_equal(arr(g), before)

    assert run(False) == (True, True, False)
    assert run(True) == (False, False, True)


def test_first_gradient_is_a_fresh_tensor():
    x = leaf([1.0, 2.0])
    g = R.tensor([5.0, 6.0], dtype=R.float64)
    y = x * 1
    y.backward(g)
    assert x.grad is not g
    g.mul_(0)  # changing the given gradient later does not change x.grad
    np.testing.assert_allclose(arr(x.grad), [5.0, 6.0])


def test_multiple_roots_one_call():
    x = leaf([1.0])
    a, b = x * 2, x.exp()
    R.autograd.backward([a.sum(), b.sum()])
    np.testing.assert_allclose(arr(x.grad), [2 + np.e])


def test_backward_inputs_limits_accumulation():
    x = leaf([1.0, 1.0])
    y = leaf([1.0, 1.0])
    h = x * 1
    (h * y).sum().backward(inputs=[h, y])
    assert x.grad is None
    np.testing.assert_allclose(arr(h.grad), [1.0, 1.0])
    np.testing.assert_allclose(arr(y.grad), [1.0, 1.0])


def test_autograd_grad_leaves_grad_untouched():
    x = leaf([1.0, 1.0])
    h = x * 3
    g = R.autograd.grad((h * h).sum(), [x, h])
    assert isinstance(g, tuple) and len(g) == 2
    np.testing.assert_allclose(arr(g[0]), [18.0, 18.0])
    np.testing.assert_allclose(arr(g[1]), [6.0, 6.0])
    assert x.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert h.grad is None


def test_graph_without_saved_tensors_can_backward_twice():
    b = leaf([1.0, 2.0, 3.0])
    d = b + 1
    d.backward(R.ones(3, dtype=R.float64))
    d.backward(R.ones(3, dtype=R.float64))
    np.testing.assert_allclose(arr(b.grad), [2.0, 2.0, 2.0])


def test_retain_graph_allows_second_backward():
    x = leaf([3.0])
    y = x * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(arr(x.grad), [12.0])


def test_grad_mode_is_thread_local():
    x = leaf([1.0])
    entered = threading.Event()
    release = threading.Event()
    other = {}

    def worker():
        with R.no_grad():
            other["inside"] = R.is_grad_enabled()
            entered.set()
            release.wait(hang_limit(2))
            other["recorded"] = (x * 2).requires_grad

    thread = threading.Thread(target=worker)
    thread.start()
    assert entered.wait(hang_limit(2))
    try:
        # the other thread is inside no_grad right now; this one still records
        assert R.is_grad_enabled()
        y = x * 2
        assert y.requires_grad and y.grad_fn is not None
    finally:
        release.set()
        thread.join(hang_limit(2))
    assert other == {"inside": False, "recorded": False}


def test_new_thread_starts_with_grad_enabled():
    result = {}
    with R.no_grad():
        thread = threading.Thread(target=lambda: result.setdefault("enabled", R.is_grad_enabled()))
        thread.start()
        thread.join(hang_limit(2))
        assert not R.is_grad_enabled()
    assert result == {"enabled": True}
    assert R.is_grad_enabled()


def test_grad_mode_context_managers_and_decorators():
    x = leaf([1.0])
    with R.no_grad():
        assert not (x * 2).requires_grad
        with R.enable_grad():
            assert (x * 2).requires_grad
        assert not R.is_grad_enabled()
    with R.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert R.is_grad_enabled()

    @R.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and R.is_grad_enabled()


def test_backward_runs_under_no_grad_unless_create_graph():
    x = leaf([2.0])
    modes = []
    y = x * 3
    y.register_hook(lambda g: modes.append(R.is_grad_enabled()))
    y.sum().backward(retain_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y.sum().backward(create_graph=True)
    assert modes == [False, True]
    x.grad = None
