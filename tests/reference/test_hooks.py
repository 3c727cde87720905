"""Hooks: tensor hooks, node pre/post hooks, post-accumulate hooks, their order and sets.

Expected sequences are those torch 2.13 produces for the same programs (each test names its
rule; the torch 2.13 runs are in conformance/evidence/hooks.toml).
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import reference as R
from reference.autograd import Function
from tests.reference.helpers import arr, leaf


def test_phases_on_a_node_tensor_hooks_prehooks_apply_posthooks():
    log = []

    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            log.append("apply")
            return g * 2

    x = leaf([1.0])
    y = Double.apply(x)
    # registered in the "wrong" order on purpose: the phase decides, not the order
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    y.grad_fn.register_prehook(lambda go: log.append("pre"))
    y.register_hook(lambda g: log.append("tensor"))
    y.sum().backward()
    assert log == ["tensor", "pre", "apply", "post"]


def test_phases_on_a_leaf_tensor_hooks_accumulate_post_accumulate():
    log = []
    x = leaf([1.0, 2.0])
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post-acc", arr(t.grad).tolist())))
    x.register_hook(lambda g: log.append(("tensor", None if x.grad is None else arr(x.grad).tolist())))
    y = x * 3
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("acc-pre", None)))
    acc.register_hook(lambda gi, go: log.append(("acc-post", arr(x.grad).tolist())))
    y.sum().backward()
    assert log == [
        ("tensor", None),
        ("acc-pre", None),
        ("post-acc", [3.0, 3.0]),
        ("acc-post", [3.0, 3.0]),
    ]


def test_tensor_hooks_chain_in_registration_order():  # rule: hooks.chain-in-registration-order
    x = R.ones(3, requires_grad=True)
    y = x * 1
    log = []
    y.register_hook(lambda g: log.append(("h1", g[0].item())))
    y.register_hook(lambda g: (log.append(("h2", g[0].item())), g * 10)[1])
    y.register_hook(lambda g: log.append(("h3", g[0].item())))
    y.sum().backward()
    assert log == [("h1", 1.0), ("h2", 1.0), ("h3", 10.0)]
    np.testing.assert_allclose(arr(x.grad), [10.0, 10.0, 10.0])


def test_removable_handles():  # rules: hooks.handle-remove-idempotent, hooks.handle-remove-mid-backward, hooks.handle-remove-mid-backward-current-pass
    x = R.ones(5, 5, requires_grad=True)
    z = x * 2
    counter = [0]
    z.register_hook(lambda g: counter.__setitem__(0, counter[0] + 1))
    z.backward(R.ones(5, 5), retain_graph=True)
    h2 = z.register_hook(lambda g: counter.__setitem__(0, counter[0] + 2))
    z.backward(R.ones(5, 5), retain_graph=True)
    h2.remove()
    h2.remove()
    z.backward(R.ones(5, 5), retain_graph=True)
    assert counter[0] == 5

    a = R.rand(3, requires_grad=True)
    b = a * 2
    cnt = [0]

    def pre1(go):
        handle2.remove()

    b.grad_fn.register_prehook(pre1)
    handle2 = b.grad_fn.register_prehook(lambda go: cnt.__setitem__(0, cnt[0] + 1))
    b.sum().backward()
    assert cnt == [1]  # as in torch 2.13: the hooks of this run were already collected
    b2 = a * 2
    b2.grad_fn.register_prehook(lambda go: cnt.__setitem__(0, cnt[0] + 1)).remove()
    b2.sum().backward()
    assert cnt == [1]


def test_removable_handle_as_context_manager():
    x = leaf([1.0])
    calls = []
    with x.register_hook(lambda g: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [1]


def test_leaf_hook_sees_incoming_gradient_once():  # rule: hooks.leaf-hook-fires-once-per-backward
    x = R.ones(2, requires_grad=True)
    x.grad = R.full((2,), 100.0)
    seen = []
    x.register_hook(lambda g: (seen.append(arr(g).tolist()), g * 2)[1])
    (x * 2 + x * 3).sum().backward()
    assert seen == [[5.0, 5.0]]
    np.testing.assert_allclose(arr(x.grad), [110.0, 110.0])


def _prehook_ordering_setup(log):
    def hook1(g):
        log.append(1)
        return g * 3

    def hook2(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = R.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(hook2)
    b.register_hook(hook1)
    b.grad_fn.register_prehook(hook2)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(hook1)
    acc.register_prehook(hook2)
    a.register_hook(hook1)
    return a, b, acc


def test_tensor_hooks_before_node_prehooks_backward():  # rule: hooks.tensor-prehooks-before-node-prehooks
    log = []
    a, b, acc = _prehook_ordering_setup(log)
    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]
    assert a.grad.item() == 3 * 2 * 2 * 3 * 3 * 2


def test_tensor_hooks_before_node_prehooks_autograd_grad():  # rule: hooks.tensor-prehooks-before-node-prehooks
    log = []
    a, b, acc = _prehook_ordering_setup(log)
    (g,) = R.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]
    assert g.item() == 3 * 2 * 2 * 3 * 3


def test_tensor_hooks_before_node_prehooks_backward_inputs():  # rule: hooks.tensor-prehooks-before-node-prehooks
    log = []
    a, b, acc = _prehook_ordering_setup(log)
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    assert b.grad.item() == 3.0
    assert a.grad is None


def test_node_hooks_signatures_and_return_values():  # rules: hooks.node-hooks-builtin, hooks.node-hooks-custom-function
    for custom in (False, True):
        class Mul2(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        mul2 = Mul2.apply if custom else (lambda t: t * 2)
        a = R.tensor([1.0], requires_grad=True)
        b = mul2(a)
        pre, post, seen = [0], [0], []

        def prehook(go):
            pre[0] += 1
            return (go[0] * 2,)

        def posthook(gi, go):
            post[0] += 1
            seen.append((gi[0].item(), go[0].item()))
            return gi

        b.grad_fn.register_hook(posthook)
        b.grad_fn.register_hook(posthook)
        b.grad_fn.register_prehook(prehook)
        b.grad_fn.register_prehook(lambda x: None)
        b.grad_fn.register_prehook(prehook)
        b.grad_fn.register_prehook(prehook)
        b.sum().backward()
        assert (pre[0], post[0], a.grad.item()) == (3, 2, 16.0), custom
        assert seen == [(16.0, 8.0), (16.0, 8.0)], custom


def test_posthook_replacing_grad_inputs():
    a = leaf([1.0, 2.0])
    b = a * 3
    # as in torch, ``a * 3`` has two edges (the scalar's is empty): grad_inputs has 2 slots
    assert len(b.grad_fn.next_functions) == 2
    b.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,) + tuple(gi[1:]))
    b.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [4.0, 4.0])


def test_hooks_off_the_backward_path_never_fire():  # rule: hooks.off-path-never-fire
    x = R.randn(5, requires_grad=True)
    xs = [x[i] for i in range(5)]
    res = [None]
    xs[0].register_hook(lambda g: res.__setitem__(0, g))
    xs[0].backward()
    assert res[0].item() == 1.0
    res[0] = "untouched"
    for i in range(1, 5):
        xs[i].backward()
    assert res[0] == "untouched"
    np.testing.assert_allclose(arr(x.grad), np.ones(5))


def test_grad_vs_backward_hook_sets():  # rule: hooks.grad-runs-input-tensor-hooks-only
    a = R.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    cnt = {"t": 0, "pre": 0, "post": 0}

    def tensor_prehook(g):
        cnt["t"] += 1

    def prehook(g):
        cnt["pre"] += 1

    def posthook(gi, go):
        cnt["post"] += 1

    a.register_hook(tensor_prehook)
    b.register_hook(tensor_prehook)
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)

    def run(f):
        for k in cnt:
            cnt[k] = 0
        f()
        return dict(cnt)

    assert run(lambda: R.autograd.grad(c, inputs=(b,), retain_graph=True)) == {"t": 1, "pre": 0, "post": 0}
    assert run(lambda: R.autograd.grad(c, inputs=(a, b), retain_graph=True)) == {"t": 2, "pre": 1, "post": 1}
    assert run(lambda: c.backward(retain_graph=True)) == {"t": 2, "pre": 2, "post": 2}
    assert run(lambda: c.backward(inputs=(a, b), retain_graph=True)) == {"t": 2, "pre": 2, "post": 2}


def test_retain_grad_follows_latest_version_after_inplace():  # rule: hooks.retain-grad-latest-version
    a = R.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(2)
    a.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [1.0])


def test_hooks_stay_with_the_version_they_were_registered_on():  # rules: hooks.hook-bound-to-version, hooks.retain-grad-latest-version
    seen = []
    a = R.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(lambda g: (seen.append(("before", g.item())), g * 2)[1])
    b.mul_(2)
    b.register_hook(lambda g: (seen.append(("after", g.item())), g * 2)[1])
    b.sum().backward()
    assert seen == [("after", 1.0), ("before", 4.0)]
    np.testing.assert_allclose(arr(a.grad), [8.0])


def test_retain_grad_sees_all_tensor_hooks():
    x = leaf([1.0])
    y = x * 1
    y.register_hook(lambda g: g * 2)
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    np.testing.assert_allclose(arr(y.grad), [6.0])
    np.testing.assert_allclose(arr(x.grad), [6.0])


def test_hook_called_with_none_for_output_without_gradient():  # torch 2.13 behaviour; no rule of its own yet
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = leaf([1.0])
    first, second = Two.apply(x)
    seen = []
    second.register_hook(lambda g: seen.append(g))
    first.sum().backward()
    assert seen == [None]
    np.testing.assert_allclose(arr(x.grad), [2.0])


def test_post_accumulate_hooks_run_in_order_after_grad_is_set():  # rule: hooks.post-accumulate-after-grad-in-order
    # the hooks return the tensor itself (what sub_/mul_ return): torch 2.13 accepts that
    t = R.rand(3, requires_grad=True)
    ref = arr(t)
    t.register_post_accumulate_grad_hook(lambda p: p.sub_(p.grad))
    t.register_post_accumulate_grad_hook(lambda p: p.mul_(4.0))
    t.sum().backward()
    np.testing.assert_allclose(arr(t), 4.0 * (ref - 1.0), rtol=1e-6)


def test_accumulator_posthook_sees_grad_buffer_after_prehook_replaced_it():  # rule: identity.grad-takes-over-unshared-buffer
    """A node pre-hook on the accumulator replaces the gradient; nothing keeps its tensor, so
    ``.grad`` takes that buffer over and the accumulator's post-hook reads, in ``grad_outputs``,
    the post-accumulate hook's in-place change (torch 2.13: (1 + 3) * 2 + 1 = 9, then * 4)."""
    x = leaf([0.5, 0.5])
    accumulator = (x * 1).grad_fn.next_functions[0][0]
    seen = {}
    x.register_hook(lambda g: g + 3.0)
    accumulator.register_prehook(lambda go: (go[0] * 2.0,))
    x.register_post_accumulate_grad_hook(lambda t: [t.grad.add_(1.0)] and None)

    def post(grad_inputs, grad_outputs):
        seen["incoming"] = arr(grad_outputs[0]).tolist()
        x.grad = grad_outputs[0] * 4.0

    accumulator.register_hook(post)
    (x * 1).sum().backward()
    assert seen["incoming"] == [9.0, 9.0]
    assert arr(x.grad).tolist() == [36.0, 36.0]


def test_take_over_is_the_same_under_a_frame_evaluation_hook():  # rule: identity.grad-takes-over-unshared-buffer
    """torch.compile's dynamo installs a PEP 523 frame-evaluation hook, under which CPython
    passes arguments to Python functions with an extra reference for the call: a take-over
    decided by a reference count taken inside a called function then silently never happened
    (a worker that had run a compile test failed the test above in CI)."""
    try:
        from torch._C._dynamo import eval_frame
        from torch._dynamo.types import ConvertFrameReturn
    except ImportError:
        pytest.skip("needs torch's dynamo to install a frame-evaluation hook")
    previous = eval_frame.set_eval_frame(lambda *args: ConvertFrameReturn())
    try:
        test_accumulator_posthook_sees_grad_buffer_after_prehook_replaced_it()
    finally:
        eval_frame.set_eval_frame(previous)


def test_accumulator_prehook_that_keeps_the_gradient_gets_a_copy():  # rule: identity.grad-takes-over-unshared-buffer
    """What a pre-hook kept (the tensor it was given, or the one it returned) is never ``.grad``'s buffer."""
    for keep_returned in (False, True):
        x = leaf([1.0, 1.0])
        accumulator = (x * 1).grad_fn.next_functions[0][0]
        kept = []

        def pre(go, keep_returned=keep_returned):
            replaced = go[0] * 2.0
            kept.append(replaced if keep_returned else go[0])
            return (replaced,)

        accumulator.register_prehook(pre)
        (x * 1).sum().backward()
        x.grad.add_(10.0)
        assert arr(x.grad).tolist() == [12.0, 12.0]
        assert arr(kept[0]).tolist() == ([2.0, 2.0] if keep_returned else [1.0, 1.0])


def test_leaf_hooks_persist_node_hooks_die_with_the_accumulator():  # rules: hooks.leaf-hooks-persist-across-graphs, hooks.accumulate-grad-node-hooks-die-with-node
    was = gc.isenabled()
    gc.disable()
    try:
        x = R.randn(2, requires_grad=True)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        probe = weakref.ref(acc)
        del y, acc
        assert probe() is None
        cnt = [0]
        x.register_hook(lambda g: cnt.__setitem__(0, cnt[0] + 1))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        assert cnt[0] == 2
        cnt2 = [0]
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: cnt2.__setitem__(0, cnt2[0] + 1))
        del y, acc
        (x * 5).sum().backward()
        assert cnt2[0] == 0
    finally:
        if was:
            gc.enable()


def test_same_accumulator_while_a_graph_holds_it():
    x = leaf([1.0])
    y = x * 2
    z = x * 3
    assert y.grad_fn.next_functions[0][0] is z.grad_fn.next_functions[0][0]
    assert y.grad_fn.next_functions[0][0].variable is x


def test_hook_returning_the_leaf_stores_a_copy():  # rule: gc_cycles.hook-returning-own-tensor
    x = R.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: x)
    (x * 10).sum().backward()
    assert x.grad is not x
    assert not x.grad.requires_grad and x.grad.grad_fn is None
    assert x.grad.data_ptr() != x.data_ptr()
    with R.no_grad():
        x.add_(1)
    np.testing.assert_allclose(arr(x.grad), [1.0, 2.0])


def test_hook_modifying_gradient_of_intermediate_changes_leaf_gradient():
    x = leaf([1.0, 2.0])
    y = x.exp()
    y.register_hook(lambda g: g * 0)
    (y * 5).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [0.0, 0.0])


def test_post_hook_registered_by_the_nodes_own_unpack_hook_runs_with_no_grad_outputs():
    from reference.autograd import engine
    from reference.autograd.graph import saved_tensors_hooks

    calls = []

    def unpack(tensor):
        node = engine.current_node()

        def halve(grad_inputs, grad_outputs):
            calls.append(grad_outputs)
            return tuple(None if g is None else g / 2 for g in grad_inputs)

        node.register_hook(halve)
        return tensor

    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(lambda t: t, unpack):
        y = x.sin()  # saves x once
    assert engine.current_node() is None  # outside any backward
    y.sum().backward()
    assert calls == [(None,)]  # it ran once, too late to have seen the gradient coming in
    np.testing.assert_allclose(x.grad.numpy(), np.cos([1.0, 2.0]) / 2)  # halved


def test_current_node_and_keep_graph_seen_from_a_custom_backward():
    from reference.autograd import engine

    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            seen.append((engine.current_node() is ctx, engine.current_task().keep_graph))
            return grad

    out = Probe.apply(leaf([1.0]))
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    assert seen == [(True, True), (True, False)]
    assert engine.current_task() is None


def test_assigned_backward_hooks_run_on_the_leaf_gradient():
    from collections import OrderedDict

    x = leaf([1.0, 2.0])
    x._backward_hooks = OrderedDict()
    x._backward_hooks["double"] = lambda grad: grad * 2
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])
    x._backward_hooks = None
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
