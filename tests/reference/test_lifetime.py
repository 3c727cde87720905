"""Freeing: graphs die by reference counting alone; user-made cycles die by gc.collect().

Probes are weak references to the objects themselves: nodes (the reference's grad_fn
objects are weak-referenceable), tensors, and the numpy arrays behind saved tensors
(``t.detach().numpy()`` is the very array the graph holds).
"""
from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import reference as R
from reference.autograd import Function
from tests.reference.helpers import FREED, arr, gc_disabled, leaf
from tests.hang import hang_limit


def _array_ref(t):
    """A weak reference to the numpy array behind ``t`` (shared with the graph)."""
    return weakref.ref(t.detach().numpy())


def test_plain_graph_freed_by_refcount():  # rule: gc_cycles.plain-graph-freed-by-refcount
    with gc_disabled():
        x = leaf([1.0, 2.0, 3.0])
        z = (x * x).exp()
        interior = z.grad_fn.next_functions[0][0]
        probes = [weakref.ref(z), weakref.ref(z.grad_fn), weakref.ref(interior), _array_ref(z)]
        del interior
        assert all(p() is not None for p in probes)
        del z
        assert [p() for p in probes] == [None] * len(probes)
        assert x.grad is None


def test_metadata_sentinel_dies_with_graph():  # rule: gc_cycles.saved-tensors-freed-with-graph (as in torch's check_graph_dies)
    class H:
        pass

    with gc_disabled():
        x = leaf([1.0, 2.0])
        z = (x * x).exp()
        h = H()
        r = weakref.ref(h)
        z.grad_fn.next_functions[0][0].metadata["h"] = h
        del h
        assert r() is not None
        del z
        assert r() is None


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "sqrt", "relu"])
def test_node_saving_its_own_output_is_not_a_cycle(op):  # rule: gc_cycles.save-for-backward-output-cycle-free
    with gc_disabled():
        x = leaf([0.5, 1.5])
        y = getattr(x, op)()
        probes = [weakref.ref(y), weakref.ref(y.grad_fn), _array_ref(y)]
        saved = y.grad_fn._saved_result  # unpacking must not create a cycle either
        assert saved is not y
        del saved
        del y
        assert [p() for p in probes] == [None, None, None]


def test_custom_function_saving_its_output_is_not_a_cycle():  # rule: gc_cycles.save-for-backward-output-cycle-free
    class SaveOut(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    with gc_disabled():
        x = leaf([1.0, 2.0])
        y = SaveOut.apply(x)
        probes = [weakref.ref(y), weakref.ref(y.grad_fn), _array_ref(y)]
        del y
        assert [p() for p in probes] == [None, None, None]
        # and it still computes the right gradient
        SaveOut.apply(x).sum().backward()
        np.testing.assert_allclose(arr(x.grad), np.exp([1.0, 2.0]))


def test_custom_function_dirty_saved_view_is_not_a_cycle():  # rule: gc_cycles.save-for-backward-output-cycle-free
    class Test(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    def scope():
        v = R.tensor([1.0, 2.0], requires_grad=True).clone()
        Test.apply(v)
        return weakref.ref(v)

    with gc_disabled():
        assert scope()() is None


def test_intermediates_and_saved_arrays_freed_with_the_output():
    with gc_disabled():
        x = leaf(np.linspace(0.1, 1.0, 5))
        a = x * 2
        b = a.sin()
        c = b * a
        probes = [weakref.ref(a), weakref.ref(b), _array_ref(a), _array_ref(b),
                  weakref.ref(a.grad_fn), weakref.ref(b.grad_fn), weakref.ref(c.grad_fn)]
        del a, b
        assert all(p() is not None for p in probes)  # held by c's graph
        del c
        assert [p() for p in probes] == [None] * len(probes)


def test_backward_releases_saved_tensors():  # rule: gc_cycles.backward-releases-saved-tensors
    with gc_disabled():
        x = leaf([1.0, 2.0, 3.0])
        a = x * 2
        b = a * a
        ra, rarr = weakref.ref(a), _array_ref(a)
        del a
        assert ra() is not None and rarr() is not None
        b.sum().backward()
        assert ra() is None and rarr() is None
        with pytest.raises(RuntimeError) as info:
            b.grad_fn._saved_self
        assert str(info.value) == FREED


def test_backward_releases_saved_outputs():
    with gc_disabled():
        x = leaf([1.0, 2.0])
        y = x.exp()
        z = y.tanh()
        ry = _array_ref(y)
        rz = _array_ref(z)
        del y
        out = z.sum()
        del z
        out.backward()
        assert ry() is None and rz() is None
        np.testing.assert_allclose(arr(x.grad), (1 - np.tanh(np.exp([1.0, 2.0])) ** 2) * np.exp([1.0, 2.0]))


def test_retain_graph_keeps_saved_tensors_until_the_last_backward():
    with gc_disabled():
        x = leaf([1.0, 2.0])
        a = x * 2
        b = a * a
        ra = weakref.ref(a)
        del a
        b.sum().backward(retain_graph=True)
        assert ra() is not None
        b.sum().backward()
        assert ra() is None
        np.testing.assert_allclose(arr(x.grad), 2 * 8 * np.array([1.0, 2.0]))


def test_autograd_grad_releases_saved_tensors():
    with gc_disabled():
        x = leaf([1.0, 2.0])
        a = x.sin()
        b = a * a
        ra = weakref.ref(a)
        del a
        R.autograd.grad(b.sum(), x)
        assert ra() is None


def test_gradient_buffers_do_not_outlive_backward():
    with gc_disabled():
        x = leaf([1.0, 2.0])
        y = x * 3
        seen = []
        y.register_hook(lambda g: seen.append(weakref.ref(g.detach().numpy())))
        y.sum().backward()
        assert len(seen) == 1 and seen[0]() is None


def test_leaf_does_not_keep_its_accumulator():
    with gc_disabled():
        x = leaf([1.0])
        y = x * 2
        acc = weakref.ref(y.grad_fn.next_functions[0][0])
        del y
        assert acc() is None
        assert x.grad is None


def test_hook_handles_do_not_keep_hooks_alive():
    class Marker:
        def __call__(self, g):
            return None

    with gc_disabled():
        x = leaf([1.0])
        y = x * 2
        marker = Marker()
        r = weakref.ref(marker)
        handle = y.register_hook(marker)
        del marker
        del y
        assert r() is None
        handle.remove()  # removing after the node died is harmless


# -- user cycles: freed by the cycle collector -----------------------------------------------
def _collected(make):
    """Build a cycle with gc disabled; return (alive before collect, alive after)."""
    with gc_disabled():
        ref = make()
        before = ref() is not None
    gc.collect()
    gc.collect()
    return before, ref() is not None


def test_leaf_hook_closing_over_its_tensor_is_collected():  # rule: gc_cycles.hook-self-closure-leaf-collectable
    def make():
        lx = R.randn(3, requires_grad=True)
        lx.register_hook(lambda g: lx)
        return weakref.ref(lx)

    assert _collected(make) == (True, False)


def test_non_leaf_hook_closing_over_its_tensor_is_collected():  # rule: gc_cycles.hook-self-closure-nonleaf-collectable (reference collects it)
    x = R.randn(3, requires_grad=True)

    def make():
        b = x * 2
        b.register_hook(lambda g: b and None)
        return weakref.ref(b)

    assert _collected(make) == (True, False)


def test_ctx_attribute_holding_output_is_collected():  # rule: gc_cycles.ctx-attribute-cycle-collected
    class MyFn(Function):
        @staticmethod
        def forward(ctx, x, metadata):
            x = x.clone()
            ctx.meta = metadata
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x, None

    for with_backward in (False, True):
        def make():
            a = R.tensor(3.14, requires_grad=True)
            metadata = {}
            out = MyFn.apply(a, metadata)
            metadata["foo"] = out
            if with_backward:
                out.sum().backward()
            return weakref.ref(out)

        assert _collected(make) == (True, False), with_backward


def test_ctx_attribute_cycle_frees_saved_arrays():
    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.out = y
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    def make():
        x = leaf([1.0, 2.0])
        y = Keep.apply(x)
        return _array_ref(y)

    assert _collected(make) == (True, False)


def test_cycle_through_tensor_dict_is_collected():  # rule: gc_cycles.dict-cycle-collected-unless-grad-holds-it
    class T:
        pass

    r1_holder, r2_holder = T(), T()
    r1, r2 = weakref.ref(r1_holder), weakref.ref(r2_holder)
    x = R.empty(2)
    x._tracker = r1_holder
    y = R.empty(2)
    y._tracker = r2_holder
    del r1_holder, r2_holder
    x._loop = y
    y._loop = x
    z = R.empty(2)
    z.grad = x
    del x, y
    gc.collect()
    assert r1() is not None and r2() is not None  # z.grad still reaches the cycle
    del z
    gc.collect()
    assert r1() is None and r2() is None


def test_unreferenced_cycle_does_not_break_live_graph():  # rule: gc_cycles.garbage-cycle-does-not-free-live-graph
    def get_out():
        inp = R.randn(10, requires_grad=True)
        tmp = inp.view(10, 1)
        out = tmp.view(10)
        my_list = [tmp]
        my_list.append(my_list)
        return out, inp

    out, inp = get_out()
    gc.collect()
    out.backward(R.ones(10))
    np.testing.assert_allclose(arr(inp.grad), np.ones(10))


def test_finalizer_running_gc_during_teardown_is_safe():  # rule: gc_cycles.finalizer-collect-during-teardown-safe
    class Holder:
        def __del__(self):
            gc.collect()

    for _ in range(10):
        x = R.randn(1, requires_grad=True)
        y = x * 2
        y.grad_fn.metadata["h"] = Holder()
        y.backward()
        del y


# -- deep graphs -------------------------------------------------------------------------
DEEP = textwrap.dedent(
    """
    import gc, sys, weakref
    import numpy as np
    import reference as R
    gc.disable()
    N = 100_000
    x = R.tensor([1.0, 2.0], dtype=R.float64, requires_grad=True)
    y = x
    for i in range(N):
        y = y * 1.0 if i % 2 else y + 0.0
    first = weakref.ref(y.grad_fn)
    assert sys.getrecursionlimit() <= 10_000
    y.sum().backward()
    assert np.allclose(x.grad.numpy(), 1.0), x.grad
    del y
    assert first() is None, "deep graph not freed after backward"
    # and without running backward at all
    y = x
    for i in range(N):
        y = y.sin() if i % 2 else y * 1.0
    last = weakref.ref(y.grad_fn)
    arrays = weakref.ref(y.detach().numpy())
    del y
    assert last() is None and arrays() is None, "deep graph not freed"
    print("ok")
    """
)


def test_deep_graph_backward_and_freeing_without_recursion_error():
    proc = subprocess.run([sys.executable, "-c", DEEP], capture_output=True, text=True, timeout=hang_limit(75))
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
