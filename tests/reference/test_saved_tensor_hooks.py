"""The reference engine's saved-tensor hooks: what a node keeps, what unpack feeds, no cycles.

The conformance suite `saved_tensors` checks the behaviour through the public API; these tests
look inside the engine (the SavedTensor a node keeps) where the suite cannot.
"""
import gc
import threading
import weakref

import numpy as np
import pytest
from numpy.testing import assert_allclose

import reference as R
from reference.autograd import graph
from reference.autograd.graph import (
    allow_mutation_on_saved_tensors, disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks,
)


class Box:
    def __init__(self, tensor):
        self.tensor = tensor


def _saved(node, index=0):
    return node._saved[index]


def test_node_holds_only_what_pack_returned():
    x = R.ones(3, requires_grad=True)
    a = x * 3
    original = weakref.ref(a)
    boxes = []

    def pack(t):
        boxes.append(Box(t.detach().clone()))
        return boxes[-1]

    with saved_tensors_hooks(pack, lambda box: box.tensor):
        y = a.pow(2)
    saved = _saved(y.grad_fn)
    assert saved._tensor is None and saved._array is None, "the original stays in the SavedTensor"
    assert saved._hooks.packed is boxes[0]
    assert not any(r is a or r is a._array for r in gc.get_referents(saved) + gc.get_referents(saved._hooks))
    del a
    assert original() is None, "something else in the graph keeps the original"
    y.sum().backward()
    assert_allclose(x.grad.numpy(), np.full(3, 18.0))


def test_node_holds_only_what_pack_returned_for_its_output():
    x = R.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: Box(t.detach().clone()), lambda box: box.tensor):
        y = x.exp()
    saved = _saved(y.grad_fn)
    assert saved._tensor is None and saved._array is None
    out = weakref.ref(y)
    node = weakref.ref(y.grad_fn)
    gc.disable()
    try:
        del y
        assert out() is None and node() is None, "output -> node -> packed made a cycle"
    finally:
        gc.enable()


def test_unpack_result_feeds_the_gradient():
    x = R.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t * 10):
        y = x.pow(2)
    y.sum().backward()  # plain backward: formulas on raw arrays
    assert_allclose(x.grad.numpy(), [20.0, 40.0])
    x.grad = None
    with saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t * 10):
        y = x.pow(2)
    (g,) = R.autograd.grad(y.sum(), x, create_graph=True)  # formulas on tensors
    assert_allclose(g.detach().numpy(), [20.0, 40.0])
    g.sum().backward()
    assert_allclose(x.grad.numpy(), [2.0, 2.0], err_msg="unpack's tensor takes the saved input's place (as in torch)")


def test_unpack_result_feeds_custom_function_backward():
    class Square(R.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = R.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: Box(t.detach().clone()), lambda box: box.tensor + 1):
        y = Square.apply(x)
    assert y.grad_fn._saved[0]._tensor is None
    y.sum().backward()
    assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_without_hooks_nothing_changes_on_the_hot_path():
    x = R.ones(3, requires_grad=True)
    y = x.pow(2)
    saved = _saved(y.grad_fn)
    assert saved._hooks is None and saved._tensor is x
    assert graph._open_hook_contexts == 0
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        assert graph._open_hook_contexts == 1
    assert graph._open_hook_contexts == 0 and graph._saved_hooks.stack == []


def test_raw_saved_handle_does_not_keep_the_packed_value():
    x = R.ones(3, requires_grad=True)
    y = x.pow(2)
    raw = y.grad_fn._raw_saved_self
    boxes = []
    raw.register_hooks(lambda t: boxes.append(Box(t.detach().clone())) or boxes[-1], lambda box: box.tensor)
    packed = weakref.ref(boxes.pop())
    y.sum().backward()
    assert packed() is None, "the node's release did not free the packed value"
    with pytest.raises(RuntimeError, match="after it has been freed"):
        raw.register_hooks(lambda t: t, lambda t: t)


def test_raw_saved_data_and_unpack_hook():
    a = R.tensor(2.0, requires_grad=True)

    def unpack(t):
        return t

    with saved_tensors_hooks(lambda t: t, unpack):
        b = a**2
    c = b.exp()
    d = c**2
    hooked, output, saved_input = b.grad_fn._raw_saved_self, c.grad_fn._raw_saved_result, d.grad_fn._raw_saved_self
    assert hooked.data is a and hooked.unpack_hook is unpack  # pack's result, as it is
    assert saved_input.data is c and saved_input.unpack_hook is None
    data = output.data  # a saved output: its data, outside the graph, sharing the version counter
    assert data is not c and not data.requires_grad and data.grad_fn is None
    assert_allclose(data.numpy(), c.detach().numpy())
    with R.no_grad():
        c.mul_(2)
    assert data._version == c._version == 1
    assert_allclose(data.numpy(), c.detach().numpy())
    b.sum().backward()
    assert hooked.data is None and hooked.unpack_hook is None  # released with the node


def test_saved_tensor_class_is_the_raw_handle_and_not_constructible():
    y = R.ones(3, requires_grad=True).pow(2)
    assert isinstance(y.grad_fn._raw_saved_self, R.autograd.SavedTensor)
    with pytest.raises(RuntimeError, match="forbidden"):
        R.autograd.SavedTensor()


def test_register_hooks_refuses_non_callables():
    y = R.ones(3, requires_grad=True).pow(2)
    with pytest.raises(TypeError):
        y.grad_fn._raw_saved_self.register_hooks(1, lambda t: t)


def test_hooks_are_per_thread():
    packs = []
    x = R.ones(3, requires_grad=True)

    def other_thread():
        x.pow(2)

    with saved_tensors_hooks(lambda t: packs.append(1) or t, lambda t: t):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert packs == [], "another thread's op used this thread's hooks"
        x.pow(2)
    assert packs == [1]


def test_disable_restores_the_previous_message():
    with disable_saved_tensors_hooks("outer"):
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="outer"):
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    assert graph._saved_hooks.disabled is None


def test_pack_runs_without_grad_mode():
    modes = []
    x = R.ones(3, requires_grad=True)
    with saved_tensors_hooks(lambda t: modes.append(R.is_grad_enabled()) or (t * t), lambda t: t):
        x.pow(2)
    assert modes == [False]


def test_save_on_cpu_shares_data_on_the_cpu():
    x = R.ones(3, requires_grad=True)
    with save_on_cpu():
        y = x.pow(2)
    saved = y.grad_fn._saved_self
    assert saved is not x and saved._array is x._array


@pytest.mark.skipif(not R.cuda_is_available(), reason="needs cupy and a GPU")
def test_save_on_cpu_keeps_the_packed_copy_on_the_host():
    x = R.ones(3, requires_grad=True, device="cuda")
    with save_on_cpu():
        y = x.pow(2)
    device, host = _saved(y.grad_fn)._hooks.packed
    assert device == "cuda" and isinstance(host._array, np.ndarray)
    assert y.grad_fn._saved_self.device.type == "cuda"
    y.sum().backward()
    assert_allclose(x.grad.cpu().numpy(), [2.0, 2.0, 2.0])


def test_allow_mutation_cleans_up_and_owns_nothing():
    x = R.ones(3, requires_grad=True)
    with allow_mutation_on_saved_tensors() as ctx:
        a = x * 1
        y = a.pow(2)
        assert graph._mutation_watch is ctx
        a.mul_(3)
        saved = _saved(y.grad_fn)._hooks.packed
        assert saved.copy is not None and saved.data is a._array
        y.sum().backward()
    assert graph._mutation_watch is None and not ctx.watched
    assert_allclose(x.grad.numpy(), [2.0, 2.0, 2.0])
    ref = weakref.ref(ctx)
    gc.disable()
    try:
        del ctx, saved, y
        assert ref() is None, "the context is kept alive by a cycle"
    finally:
        gc.enable()


def test_allow_mutation_copies_once_per_version_and_drops_copies_with_their_graph():
    with allow_mutation_on_saved_tensors() as ctx:
        a = R.randn(2, 3, requires_grad=True) * 1
        b, c = a ** 2, a * a  # a saved three times, at version 0
        assert len(ctx.tid_to_weakhandle) == 1 and ctx.cloned == {}
        a.sin_()
        assert len(ctx.cloned) == 1, "one copy for every entry that saved version 0"
        d = a ** 2  # saved at version 1
        a.sin_()
        assert len(ctx.cloned) == 2
        del b, c
        assert len(ctx.cloned) == 1, "the version-0 copy goes with the graphs that saved it"
        del d
        assert ctx.cloned == {}
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass
        assert graph._mutation_watch is ctx, "a refused nested context leaves the open one in place"
    assert ctx.cloned == {}


def test_an_extra_exit_of_a_hooks_context_is_harmless():
    ctx = saved_tensors_hooks(lambda t: t, lambda t: t)
    ctx.__enter__()
    ctx.__exit__(None, None, None)
    ctx.__exit__(None, None, None)  # one exit too many: nothing left to pop
    y = R.ones(2, requires_grad=True).exp()
    y.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)  # no default hooks left open


def test_a_tensor_saved_by_hand_is_packed_once_and_unpacked_per_access():
    counts = {"pack": 0, "unpack": 0}

    def pack(t):
        counts["pack"] += 1
        return t

    def unpack(t):
        counts["unpack"] += 1
        return t

    a = R.randn(3, requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        saved = graph.save_tensor(a)
        assert counts == {"pack": 1, "unpack": 0}
        first, second = saved.unpack(), saved.unpack()
    assert counts == {"pack": 1, "unpack": 2}
    np.testing.assert_array_equal(first.detach().numpy(), a.detach().numpy())
    np.testing.assert_array_equal(second.detach().numpy(), a.detach().numpy())
    plain = graph.save_tensor(a)
    assert plain.unpack() is a  # no hooks: the input itself, as a node keeps it


def test_saved_tensors_hooks_enabled_says_whether_hooks_are_refused():
    assert graph.saved_tensors_hooks_enabled()
    with disable_saved_tensors_hooks("no hooks here"):
        assert not graph.saved_tensors_hooks_enabled()
    assert graph.saved_tensors_hooks_enabled()


def test_every_saved_slot_of_a_custom_function_has_a_handle_none_included():
    class Fn(R.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad

    y = Fn.apply(R.ones(2, requires_grad=True))
    first, second = y.grad_fn._raw_saved_tensors
    assert isinstance(second, R.autograd.SavedTensor)
    with pytest.raises(RuntimeError, match="None"):
        second.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(TypeError):
        first.register_hooks(lambda t: t)
    with pytest.raises(TypeError):
        first.register_hooks(1, 1)
    first.register_hooks(lambda t: t, lambda t: t)


def _which_pack(log):
    """Save a tensor now (under enable_grad, as backward runs without grad mode) and say
    which pack hook, if any, took it."""
    before = len(log)
    with R.enable_grad():
        R.ones(1, requires_grad=True).sin()  # saves its input (pack returning an output would be a cycle)
    return log[before] if len(log) > before else None


def test_a_block_an_unpack_hook_enters_during_backward_ends_with_its_node():
    """torch runs each node under the hooks state the backward started with: a block entered
    (never left) inside an unpack hook is gone after that node, so the unpack hook it held is
    freed with its scope, and the outer block's exit leaves no hooks behind."""
    log = []

    def scope():
        def unpack(packed):
            saved_tensors_hooks(lambda t: log.append("inner") or t, lambda t: t).__enter__()
            log.append(("unpacked", _which_pack(log)))
            return packed

        x = R.ones(2, requires_grad=True)
        with saved_tensors_hooks(lambda t: log.append("outer") or t, unpack):
            y = x.exp().sin()
            y.grad_fn.register_prehook(lambda go: log.append(("sin", _which_pack(log))) and None)
            y.grad_fn.next_functions[0][0].register_prehook(lambda go: log.append(("exp", _which_pack(log))) and None)
            y.sum().backward()
            log.append(("after backward", _which_pack(log)))
        log.append(("after block", _which_pack(log)))
        return weakref.ref(unpack)

    was = gc.isenabled()
    gc.disable()
    try:
        unpack_ref = scope()
        assert unpack_ref() is None, "the block entered during backward keeps the unpack hook alive"
    finally:
        if was:
            gc.enable()
    events = [e for e in log if isinstance(e, tuple)]
    assert events == [("sin", "outer"), ("unpacked", "inner"), ("exp", "outer"), ("unpacked", "inner"),
                      ("after backward", "outer"), ("after block", None)]
    assert graph._saved_hooks.stack == [] and graph._open_hook_contexts == 0


def test_hooks_state_a_node_hook_changes_is_restored_for_the_next_node():
    """A node pre-hook that disables saved-tensor hooks, or leaves the outer block early, changes
    nothing for the next node nor after backward; a raising node, or a callback, neither."""
    log = []
    x = R.ones(2, requires_grad=True)
    outer = saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t)
    with outer:
        y = x.exp()
        z = y.sin()

        def disable_and_leave(go):
            outer.__exit__(None, None, None)
            disable_saved_tensors_hooks("no hooks here").__enter__()
            R.autograd.Variable._execution_engine.queue_callback(
                lambda: saved_tensors_hooks(lambda t: t, lambda t: t).__enter__())

        z.grad_fn.register_prehook(lambda go: disable_and_leave(go) and None)
        y.grad_fn.register_prehook(lambda go: log.append(("exp", _which_pack(log))) and None)
        z.sum().backward()
        assert graph._saved_hooks.disabled is None
        log.append(("after backward", _which_pack(log)))
    assert [e for e in log if isinstance(e, tuple)] == [("exp", "outer"), ("after backward", "outer")]
    assert graph._saved_hooks.stack == [] and graph._open_hook_contexts == 0

    def unpack_and_fail(packed):
        saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        raise ValueError("unpack failed")

    with saved_tensors_hooks(lambda t: t, unpack_and_fail):
        y = R.ones(2, requires_grad=True).exp()
    with pytest.raises(ValueError):
        y.sum().backward()
    assert graph._saved_hooks.stack == [] and graph._open_hook_contexts == 0


def test_allow_mutation_backward_after_its_block_raises_assertion_error():
    # torch 2.13's unpack hook raises AssertionError (not RuntimeError) when the graph's
    # block has exited, whether backward runs outside any block or inside another one
    with allow_mutation_on_saved_tensors():
        y = (R.ones(3, requires_grad=True) * 1).pow(2).sum()
    with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors' context"):
        y.backward()
    with allow_mutation_on_saved_tensors():
        y = (R.ones(3, requires_grad=True) * 1).pow(2).sum()
    with allow_mutation_on_saved_tensors():
        with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors' context"):
            y.backward()
