"""Suite `hooks`: tensor hooks, node hooks, post-accumulate-grad hooks and their lifetimes.

Rules: conformance/catalogue/hooks.toml. Observed torch behaviour:
conformance/evidence/hooks.toml.
"""
import gc
import re
import weakref

import numpy as np
import pytest
from numpy.testing import assert_allclose

from conformance import liveness, meanings
from conformance.spelling import subject
from conformance.api import Blocked, Unsupported, aside, diverges_if_raises, prerequisite, rule
from conformance.features import judged_without
from conformance.suites._helpers import (BACKWARD_INPUTS, HOOK_REMOVE, expect_refusal, hook_handle, key_words,
                                         leaf_hooks_fire_once, producer, remove_handle)
from conformance.suites._refusals import refusal_of
from conformance.suites._node_hooks import node_hook, node_hooks_run, node_prehook, register_on_node


def _remove(handle, what="handle.remove()"):
    remove_handle(handle, what=what)


def _node(adapter, t, what="grad_fn"):
    with diverges_if_raises(AttributeError, TypeError, what=what):
        node = adapter.grad_fn(t)
    assert node is not None, f"{what}: tensor has no grad_fn"
    return node


def _accumulator(adapter, t):
    """The AccumulateGrad node of the leaf that ``t`` was computed from (single input)."""
    return producer(adapter, adapter.grad_fn(t))


# -- registration ------------------------------------------------------------------------

@rule("hooks.register-hook-needs-requires-grad")
def test_register_hook_on_tensor_without_grad_raises(fw, device):
    t = fw.randn(3, device=device)
    expect_refusal(lambda: t.register_hook(lambda g: g), "register_hook on a tensor with requires_grad=False")


@rule("hooks.post-accumulate-hook-leaf-only")
def test_post_accumulate_hook_refused_on_non_leaf(fw, adapter, device):
    leaf = fw.randn(3, requires_grad=True, device=device)
    nonleaf = leaf * 2.0
    adapter.register_post_accumulate_grad_hook(leaf, lambda p: None)  # accepted on a leaf
    expect_refusal(lambda: adapter.register_post_accumulate_grad_hook(nonleaf, lambda p: None),
                   "register_post_accumulate_grad_hook on a non-leaf")


@rule("hooks.register-hook-returns-handle")
def test_register_hook_returns_removable_handle(fw, device):
    x = fw.ones(3, requires_grad=True, device=device)
    h_leaf = x.register_hook(lambda g: None)
    y = x * 2
    h_nonleaf = y.register_hook(lambda g: None)
    for where, h in (("leaf", h_leaf), ("non-leaf", h_nonleaf)):
        assert h is not None, f"register_hook on a {where} returned None instead of a handle"
        assert callable(getattr(h, "remove", None)), (
            f"register_hook on a {where} returned {type(h).__name__} without a remove() method")


# -- return values and order ---------------------------------------------------------------

@rule("hooks.return-none-keeps-tensor-replaces")
def test_none_keeps_gradient_and_tensor_replaces_it(fw, adapter, device):
    x = fw.ones(3, requires_grad=True, device=device)
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(adapter.to_numpy(g).tolist()))  # returns None
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: seen.append(adapter.to_numpy(g).tolist()))  # returns None
    adapter.backward(fw.sum(y))
    assert seen == [[1.0] * 3, [10.0] * 3], (
        f"hooks saw {seen}; expected the first to see 1s (None keeps) and the last 10s (tensor replaces)")
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 10.0),
                    err_msg="the tensor returned by the hook did not replace the propagated gradient")


@rule("hooks.chain-in-registration-order")
def test_hooks_chain_in_registration_order(fw, adapter, device):
    x = fw.ones(2, requires_grad=True, device=device)
    y = x * 1
    log = []

    def make(name, factor):
        def hook(g):
            log.append((name, float(adapter.to_numpy(g)[0])))
            return g * factor
        return hook

    y.register_hook(make("h1", 2.0))
    y.register_hook(make("h2", 3.0))
    y.register_hook(make("h3", 5.0))
    adapter.backward(fw.sum(y))
    assert log == [("h1", 1.0), ("h2", 2.0), ("h3", 6.0)], (
        f"observed {log}; expected h1, h2, h3 in registration order, each seeing the previous result")
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(2, 30.0))


# -- removal -------------------------------------------------------------------------------

@rule("hooks.handle-remove-idempotent")
def test_handle_remove_is_idempotent(adapter, fw, device):
    x = fw.ones(5, 5, requires_grad=True, device=device)
    z = x * 2
    counter = [0]
    z.register_hook(lambda g: counter.__setitem__(0, counter[0] + 1))
    adapter.backward(z, fw.ones(5, 5, device=device), retain_graph=True)
    h2 = hook_handle(z, lambda g: counter.__setitem__(0, counter[0] + 2))
    adapter.backward(z, fw.ones(5, 5, device=device), retain_graph=True)
    assert counter[0] == 4, f"after two passes the counter is {counter[0]}, expected 1 + (1 + 2) = 4"
    _remove(h2)
    _remove(h2, what="second handle.remove()")
    adapter.backward(z, fw.ones(5, 5, device=device), retain_graph=True)
    assert counter[0] == 5, (
        f"counter is {counter[0]} after removing h2 twice and one more pass; expected 5 "
        "(removed hook silent, the other hook still firing)")


@rule("hooks.handle-remove-mid-backward")
def test_tensor_hook_removed_by_another_hook_is_gone_afterwards(fw, adapter, device):
    x = fw.ones(3, requires_grad=True, device=device)
    y = x * 2
    ran = []
    handles = {}

    refused = []

    def remover(g):
        ran.append("remover")
        if "victim" in handles:
            try:
                handles.pop("victim").remove()
            except Exception as exc:  # noqa: BLE001 - judged after backward, not inside the engine
                refused.append(f"{type(exc).__name__}: {exc}")

    y.register_hook(remover)
    handles["victim"] = hook_handle(y, lambda g: ran.append("victim"))
    adapter.backward(fw.sum(y), retain_graph=True)
    if refused:
        raise Blocked(HOOK_REMOVE, f"remove() called inside a running hook: {refused[0]}")
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 2.0),
                    err_msg="removing a hook mid-backward disturbed the gradient")
    ran.clear()
    adapter.backward(fw.sum(y))
    assert ran == ["remover"], f"hooks that ran in the next pass: {ran}; the removed hook still fires"


@rule("hooks.handle-remove-mid-backward")
def test_node_prehook_removed_by_another_prehook_is_gone_afterwards(fw, adapter, device):
    a = fw.ones(3, requires_grad=True, device=device)
    b = a * 2
    node = _node(adapter, b)
    cnt = [0]
    handles = {}

    refused = []

    def pre1(grad_outputs):
        if "victim" in handles:
            try:
                handles.pop("victim").remove()
            except Exception as exc:  # noqa: BLE001 - judged after backward, not inside the engine
                refused.append(f"{type(exc).__name__}: {exc}")

    node_prehook(adapter, node, pre1)
    handles["victim"] = node_prehook(adapter, node, lambda go: cnt.__setitem__(0, cnt[0] + 1))
    adapter.backward(fw.sum(b), retain_graph=True)
    if refused:
        raise Blocked(HOOK_REMOVE, f"remove() of a node pre-hook inside another pre-hook: {refused[0]}")
    assert_allclose(adapter.to_numpy(adapter.grad(a)), np.full(3, 2.0),
                    err_msg="removing a node pre-hook mid-backward disturbed the gradient")
    first = cnt[0]
    adapter.backward(fw.sum(b))
    assert cnt[0] == first, "a node pre-hook removed during an earlier backward ran again in a later one"


@rule("hooks.handle-remove-mid-backward-current-pass")
def test_hook_removed_mid_backward_in_the_same_pass(adapter, fw, device, observe):
    a = fw.ones(3, requires_grad=True, device=device)
    b = a * 2
    ran = {"tensor": 0, "node": 0}
    handles = {}
    refused = []

    def remove(kind):
        try:
            handles[kind].remove()
        except Exception as exc:  # noqa: BLE001 - recorded, not judged (implementation-defined)
            refused.append(f"{kind} handle.remove(): {type(exc).__name__}: {exc}")

    b.register_hook(lambda g: remove("tensor"))
    handles["tensor"] = hook_handle(b, lambda g: ran.__setitem__("tensor", ran["tensor"] + 1))
    node_half = "a node pre-hook removed by another in the same pass"
    if aside(adapter, "graph_nodes", "node_hooks", what=node_half):
        node = adapter.grad_fn(b)
        node_prehook(adapter, node, lambda go: remove("node"))
        handles["node"] = node_prehook(adapter, node, lambda go: ran.__setitem__("node", ran["node"] + 1))
    adapter.backward(fw.sum(b))
    if refused:
        # a hook whose remove() failed was never removed: what it did says nothing about the rule
        raise Blocked(HOOK_REMOVE, f"remove() inside a running hook failed: {refused[0]}")
    seen = {"removed tensor hook ran in the same pass": ran["tensor"] == 1}
    if aside(adapter, "graph_nodes", "node_hooks", what=node_half):
        seen["removed node pre-hook ran in the same pass"] = ran["node"] == 1
    observe(seen)


# -- leaf hooks ----------------------------------------------------------------------------

@rule("hooks.leaf-hook-fires-once-per-backward")
def test_two_leaf_hooks_fire_once_each_in_order(adapter, fw, device):
    x = fw.ones(2, requires_grad=True, device=device)
    log = []
    x.register_hook(lambda g: log.append(1))
    x.register_hook(lambda g: log.append(2))
    adapter.backward(fw.sum(x * 2))
    assert log == [1, 2], f"leaf hooks ran as {log}; expected [1, 2] (each once, in registration order)"


@rule("hooks.leaf-hook-fires-once-per-backward")
def test_leaf_hook_fires_once_when_leaf_used_several_times(adapter, fw, device):
    x = fw.ones(2, requires_grad=True, device=device)
    calls = [0]
    x.register_hook(lambda g: calls.__setitem__(0, calls[0] + 1))
    adapter.backward(fw.sum(x * 2 + x * 3 + fw.exp(x)))
    assert calls[0] == 1, f"leaf used 3 times: hook called {calls[0]} times, expected once"


@rule("hooks.leaf-hook-before-accumulation")
def test_leaf_hook_sees_summed_incoming_gradient_before_accumulation(fw, adapter, device):
    leaf_hooks_fire_once(adapter, fw, device)
    x = fw.ones(2, requires_grad=True, device=device)
    adapter.backward(fw.sum(x * 100))      # an earlier gradient, accumulated before the hook exists
    seen = []

    def hook(g):
        seen.append(adapter.to_numpy(g).tolist())
        return g * 2

    x.register_hook(hook)
    adapter.backward(fw.sum(x * 2 + x * 3))
    assert seen == [[5.0, 5.0]], (
        f"leaf hook saw {seen}; expected one call with the summed incoming gradient [5, 5] "
        "(not per use [2]/[3], not the accumulated 105)")
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(2, 110.0),
                    err_msg="x.grad should be 100 + hook's return value (2 * 5)")


# -- phase order ---------------------------------------------------------------------------

@rule("hooks.tensor-prehooks-before-node-prehooks")
def test_tensor_hooks_run_before_node_prehooks(adapter, fw, device):
    log = []

    def tensor_hook(g):
        log.append("t")
        return g * 3

    def prehook(gs):
        log.append("n")
        return tuple(g * 2 for g in gs)

    a = fw.tensor(1.0, requires_grad=True, device=device)
    b = fw.clone(a)
    node = _node(adapter, b)
    node_prehook(adapter, node, prehook)
    b.register_hook(tensor_hook)
    node_prehook(adapter, node, prehook)
    acc = _accumulator(adapter, b)
    a.register_hook(tensor_hook)
    node_prehook(adapter, acc, prehook, what="AccumulateGrad.register_prehook")
    a.register_hook(tensor_hook)
    adapter.backward(fw.sum(b))
    assert log == ["t", "n", "n", "t", "t", "n"], (
        f"hook order {log}; expected b's tensor hook, b.grad_fn's two pre-hooks, a's two tensor "
        "hooks, then the AccumulateGrad pre-hook")
    assert adapter.to_numpy(adapter.grad(a)).item() == 3.0 * 2 * 2 * 3 * 3 * 2, f"a.grad is {adapter.to_numpy(adapter.grad(a)).item()}, expected 216"


@rule("hooks.retain-grad-sees-all-tensor-hooks")
def test_retain_grad_sees_hooks_registered_before_and_after(adapter, fw, device):
    def double(g):
        return g * 2

    a = fw.tensor(1.0, requires_grad=True, device=device)
    b = fw.clone(a)
    b.register_hook(double)
    adapter.retain_grad(b)
    b.register_hook(double)
    adapter.backward(fw.clone(b))
    assert adapter.to_numpy(adapter.grad(b)).item() == 4.0, (
        f"b.grad is {adapter.to_numpy(adapter.grad(b)).item()} with hooks before and after retain_grad(); expected 4 (both applied)")

    a = fw.tensor(1.0, requires_grad=True, device=device)
    b = fw.clone(a)
    adapter.retain_grad(b)
    b.register_hook(double)
    adapter.backward(fw.clone(b))
    assert adapter.to_numpy(adapter.grad(b)).item() == 2.0, (
        f"b.grad is {adapter.to_numpy(adapter.grad(b)).item()} with a hook registered after retain_grad(); expected 2")


@rule("hooks.inputs-nonleaf-grad-excludes-node-prehooks")
def test_backward_inputs_nonleaf_grad_after_tensor_hooks_only(adapter, fw, device):
    log = []

    def tensor_hook(g):
        log.append("t")
        return g * 3

    def prehook(gs):
        log.append("n")
        return tuple(g * 2 for g in gs)

    a = fw.tensor(1.0, requires_grad=True, device=device)
    b = fw.clone(a)
    node_prehook(adapter, _node(adapter, b), prehook)
    b.register_hook(tensor_hook)
    a.register_hook(tensor_hook)
    with prerequisite(BACKWARD_INPUTS, what="backward(inputs=...)") as pre:
        adapter.backward(fw.sum(b), inputs=(b,))
        pre.check(adapter.grad(b) is not None and adapter.grad(a) is None,
                  "backward(inputs=(b,)) accumulated into b only, not into the leaf a beyond it")
    assert log == ["t", "n"], f"hooks that ran: {log}; expected b's tensor hook then b.grad_fn's pre-hook"
    assert adapter.grad(b) is not None and adapter.to_numpy(adapter.grad(b)).item() == 3.0, (
        f"b.grad is {None if adapter.grad(b) is None else adapter.to_numpy(adapter.grad(b)).item()}; expected 3 (tensor hook applied, "
        "node pre-hook not)")
    assert adapter.grad(a) is None, "a is beyond inputs=(b,) but received a gradient"


# -- node hooks ----------------------------------------------------------------------------

def _check_node_hooks(fw, adapter, device, make_output, kind):
    a = fw.tensor([1.0], requires_grad=True, device=device)
    b = make_output(a)
    node = _node(adapter, b)
    log = []

    def pre(name, factor):
        def hook(grad_outputs):
            log.append((name, float(adapter.to_numpy(grad_outputs[0])[0])))
            return None if factor is None else tuple(g * factor for g in grad_outputs)
        return hook

    def post(name, factor):
        def hook(grad_inputs, grad_outputs):
            log.append((name, float(adapter.to_numpy(grad_inputs[0])[0]),
                        float(adapter.to_numpy(grad_outputs[0])[0])))
            return tuple(None if g is None else g * factor for g in grad_inputs)
        return hook

    with diverges_if_raises(AttributeError, TypeError, what=f"node hooks on a {kind} grad_fn"):
        # a node without the method, or whose binding refuses every hook, is UNSUPPORTED
        register_on_node(adapter, node, post("q1", 10.0), "post")
        register_on_node(adapter, node, pre("p1", 2.0), "pre")
        register_on_node(adapter, node, pre("p2", None), "pre")
        register_on_node(adapter, node, post("q2", 1.0), "post")
        register_on_node(adapter, node, pre("p3", 3.0), "pre")
    adapter.backward(fw.sum(b))
    expected = [("p1", 1.0), ("p2", 2.0), ("p3", 2.0), ("q1", 12.0, 6.0), ("q2", 120.0, 6.0)]
    assert log == expected, (
        f"{kind} node hooks ran as {log}; expected {expected} (pre-hooks in order, None keeps, "
        "post-hooks after the node seeing modified grad_outputs and chaining replacements)")
    assert_allclose(adapter.to_numpy(adapter.grad(a)), [120.0],
                    err_msg=f"{kind}: post-hook replacement of grad_inputs did not reach a.grad")


@rule("hooks.node-hooks-builtin")
def test_node_pre_and_post_hooks_on_builtin_node(fw, adapter, device):
    _check_node_hooks(fw, adapter, device, lambda t: t * 2, "built-in")


@rule("hooks.node-hooks-custom-function")
def test_node_pre_and_post_hooks_on_custom_function_node(fw, adapter, device):
    node_hooks_run(adapter, fw, device)

    class Mul2(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    _check_node_hooks(fw, adapter, device, Mul2.apply, "custom Function")


# -- which hooks run -----------------------------------------------------------------------

@rule("hooks.off-path-never-fire")
def test_hook_on_sibling_element_never_fires(fw, adapter, device):
    x = fw.randn(5, requires_grad=True, device=device)
    parts = [x[i] for i in range(5)]
    fired = []
    parts[0].register_hook(lambda g: fired.append(adapter.to_numpy(g).tolist()))
    for i in range(1, 5):
        adapter.backward(parts[i])
    assert fired == [], f"hook on x[0] fired with {fired} during backward of the other elements"
    assert_allclose(adapter.to_numpy(adapter.grad(x)), [0.0, 1.0, 1.0, 1.0, 1.0])
    adapter.backward(parts[0])
    assert fired == [1.0], f"hook on x[0] saw {fired} during its own backward; expected [1.0]"


@rule("hooks.off-path-never-fire")
def test_hooks_off_path_or_beyond_inputs_never_fire(adapter, fw, device):
    x = fw.ones(3, requires_grad=True, device=device)
    fired = []
    branch = x * 2
    branch.register_hook(lambda g: fired.append("branch"))
    other = x * 3
    mid = other * 4
    x.register_hook(lambda g: fired.append("x"))
    other.register_hook(lambda g: fired.append("other"))
    with prerequisite(BACKWARD_INPUTS, what="backward(inputs=...)") as pre:
        adapter.backward(fw.sum(mid), inputs=(other,), retain_graph=True)
        pre.check(adapter.grad(other) is not None and adapter.grad(x) is None,
                  "backward(inputs=(other,)) accumulated into other only, not into the leaf x")
    assert fired == ["other"], (
        f"hooks fired: {fired}; only 'other' is on the path to inputs=(other,) "
        "('branch' is a sibling, 'x' lies beyond the requested input)")
    fired.clear()
    fw.autograd.grad(fw.sum(mid), (other,))
    assert fired == ["other"], f"autograd.grad(mid, (other,)) fired hooks {fired}; expected ['other']"


@rule("hooks.grad-runs-input-tensor-hooks-only")
@judged_without("graph_nodes", "node_hooks")   # the node half is guarded below
def test_autograd_grad_runs_input_tensor_hooks_but_not_node_hooks(adapter, fw, device):
    a = fw.tensor(1.0, requires_grad=True, device=device)
    b = a * 2
    c = b * 2
    cnt = {"t": 0, "pre": 0, "post": 0}

    def tensor_hook(g):
        cnt["t"] += 1

    def prehook(g):
        cnt["pre"] += 1

    def posthook(gi, go):
        cnt["post"] += 1

    a.register_hook(tensor_hook)
    b.register_hook(tensor_hook)
    # The tensor-hook half is judged even where node hooks are missing or broken: a framework
    # whose autograd.grad skips an input's tensor hook DIVERGES; only then the node half's
    # UNSUPPORTED / BLOCKED stands.
    held: BaseException | None = None
    try:
        acc = _accumulator(adapter, b)
        node_hook(adapter, acc, posthook)
        node_prehook(adapter, acc, prehook)
        node_hook(adapter, _node(adapter, b), posthook)
        node_prehook(adapter, _node(adapter, b), prehook)
    except (Unsupported, Blocked) as exc:
        held = exc

    def run(f):
        for k in cnt:
            cnt[k] = 0
        f()
        return dict(cnt)

    observed = {
        "grad(c, (b,))": run(lambda: fw.autograd.grad(c, (b,), retain_graph=True)),
        "grad(c, (a, b))": run(lambda: fw.autograd.grad(c, (a, b), retain_graph=True)),
        "c.backward()": run(lambda: adapter.backward(c, retain_graph=True)),
    }
    expected = {
        "grad(c, (b,))": {"t": 1, "pre": 0, "post": 0},
        "grad(c, (a, b))": {"t": 2, "pre": 1, "post": 1},
        "c.backward()": {"t": 2, "pre": 2, "post": 2},
        "c.backward(inputs=(a, b))": {"t": 2, "pre": 2, "post": 2},
    }
    tensor_hooks = {k: v["t"] for k, v in observed.items()}
    assert tensor_hooks == {k: v["t"] for k, v in expected.items() if k in observed}, (
        f"tensor hook call counts {tensor_hooks}; expected {expected}")
    if held is not None:
        raise held
    with prerequisite(BACKWARD_INPUTS, what="backward(inputs=...)") as pre:
        observed["c.backward(inputs=(a, b))"] = run(lambda: adapter.backward(c, inputs=(a, b), retain_graph=True))
        pre.check(adapter.grad(b) is not None, "backward(inputs=(a, b)) accumulated into the non-leaf b")
    assert observed == expected, f"hook call counts {observed}; expected {expected}"


# -- in-place and versions -----------------------------------------------------------------

@rule("hooks.hook-bound-to-version")
def test_hooks_before_and_after_inplace_see_their_own_version(fw, adapter, device):
    a = fw.tensor([1.0], requires_grad=True, device=device)
    b = fw.clone(a)
    seen = []

    def hook(tag):
        def h(g):
            seen.append((tag, float(adapter.to_numpy(g)[0])))
            return g * 2
        return h

    b.register_hook(hook("before"))
    adapter.inplace(b, "mul_", 2)
    b.register_hook(hook("after"))
    adapter.backward(fw.sum(b))
    assert seen == [("after", 1.0), ("before", 4.0)], (
        f"observed {seen}; expected the hook registered after mul_ to see the new version's gradient "
        "(1) first, then the earlier hook the old version's gradient (2 * 2 * 1 = 4)")
    assert_allclose(adapter.to_numpy(adapter.grad(a)), [8.0])


@rule("hooks.retain-grad-latest-version")
def test_retained_grad_is_for_latest_version(fw, adapter, device):
    a = fw.clone(fw.tensor([1.0], requires_grad=True, device=device))
    adapter.retain_grad(a)
    adapter.inplace(a, "mul_", 2)
    adapter.inplace(a, "mul_", 2)
    adapter.backward(fw.sum(a))
    assert adapter.grad(a) is not None, "retained non-leaf has no .grad after in-place ops"
    assert_allclose(adapter.to_numpy(adapter.grad(a)), [1.0],
                    err_msg="a.grad should be d(sum)/d(latest a) = 1, not the gradient of an older version")


# -- validation ----------------------------------------------------------------------------

def _backward_with_hook(adapter, fw, device, hook):
    x = fw.randn(3, requires_grad=True, device=device)
    y = x * 2
    y.register_hook(hook)
    return lambda: adapter.backward(fw.sum(y))


@rule("hooks.return-type-validated")
def test_hook_returning_non_tensor_raises_type_error(adapter, fw, device):
    expect_refusal(_backward_with_hook(adapter, fw, device, lambda g: 1), "backward with a hook returning 1")


@rule("hooks.return-metadata-validated")
def test_hook_returning_other_shape_raises_naming_hook(adapter, fw, device):
    def hook_named(g):
        return fw.ones(2, 2, device=device)

    exc = expect_refusal(_backward_with_hook(adapter, fw, device, hook_named),
                         "backward with a hook returning a (2, 2) tensor for a (3,) gradient")
    assert not key_words(str(exc), "hook_named", meanings.SHAPE), (
        f"the refusal does not name the hook and what it changed (its shape): {type(exc).__name__}: {exc}")


@rule("hooks.return-metadata-validated")
def test_hook_returning_other_dtype_raises(adapter, fw, device):
    def widen(g):
        return fw.ones(3, dtype=fw.float64, device=device)

    exc = expect_refusal(_backward_with_hook(adapter, fw, device, widen),
                         "backward with a hook returning float64 for a float32 gradient")
    assert not key_words(str(exc), "widen", meanings.DTYPE), (
        f"the refusal does not name the hook and what it changed (its dtype): {type(exc).__name__}: {exc}")


@rule("hooks.return-metadata-validated")
@pytest.mark.parametrize("shape", [(1,), (2, 3), ()], ids=["smaller", "broadcast", "0-dim"])
def test_hook_returning_a_broadcastable_shape_is_refused(adapter, fw, device, shape):
    """Unlike a custom backward's result, a hook's result is never summed or broadcast: any other
    shape is refused, and nothing reaches the leaf."""
    x = fw.ones(3, requires_grad=True, device=device)
    y = x * 2
    control = []
    y.register_hook(lambda g: control.append(1))
    adapter.backward(fw.sum(y), retain_graph=True)
    with prerequisite("hooks.leaf-hook-fires-once-per-backward", what="a hook returning None") as pre:
        pre.check(control == [1] and adapter.grad(x) is not None,
                  f"a hook on y ran once and x.grad was filled (hook calls: {control})")
    adapter.clear_grad(x)
    y.register_hook(lambda g: fw.full(shape, 1.0, device=device))
    expect_refusal(lambda: adapter.backward(fw.sum(y)),
                   f"backward with a hook returning shape {shape} for a (3,) gradient")
    grad = adapter.grad(x)
    assert grad is None, (f"the refused hook result reached the leaf: x.grad = "
                          f"{adapter.to_numpy(grad).tolist()}")


@rule("hooks.return-metadata-validated")
def test_hook_misuse_refusals_are_runtime_errors(adapter, fw, device):
    """The class of each hooks refusal, judged here once: the behaviour rules (register-hook-needs-requires-grad,
    post-accumulate-hook-leaf-only, post-accumulate-must-return-none, module-full-backward-hook-order and
    this rule's shape/dtype checks) judge only that the call is refused."""
    refusals = {
        "register_hook on a tensor that does not require grad":
            refusal_of(lambda: fw.randn(3, device=device).register_hook(lambda g: g)),
        "a hook returning a tensor of another shape":
            refusal_of(_backward_with_hook(adapter, fw, device, lambda g: fw.ones(2, 2, device=device))),
        "a hook returning a tensor of another dtype":
            refusal_of(_backward_with_hook(adapter, fw, device,
                                           lambda g: fw.ones(3, dtype=fw.float64, device=device))),
    }
    leaf = fw.randn(3, requires_grad=True, device=device)
    if aside(adapter, "post_accumulate_grad_hooks", what="the class of the post-accumulate hooks' refusals"):
        refusals["register_post_accumulate_grad_hook on a non-leaf"] = refusal_of(
            lambda: adapter.register_post_accumulate_grad_hook(leaf * 2.0, lambda p: None))
        adapter.register_post_accumulate_grad_hook(leaf, lambda p: adapter.grad(p))
        refusals["a post-accumulate hook returning a value"] = refusal_of(lambda: adapter.backward(fw.sum(leaf)))
    raised = {k: e for k, e in refusals.items() if e is not None}
    assert raised, "none of the hook misuses was refused (their behaviour rules say they must be)"
    wrong = {k: type(e).__name__ for k, e in raised.items() if not isinstance(e, RuntimeError)}
    assert not wrong, f"hook refusals that are not RuntimeError: {wrong}"


@rule("hooks.return-metadata-validated")
def test_hook_returning_non_tensor_is_a_type_error(adapter, fw, device):
    """The class of the refusal of a hook result that is no tensor (torch: TypeError); whether it is
    refused at all is hooks.return-type-validated."""
    with prerequisite("hooks.return-type-validated", what="backward with a hook returning 1") as pre:
        exc = refusal_of(_backward_with_hook(adapter, fw, device, lambda g: 1))
        pre.check(exc is not None, "backward was refused")
    assert isinstance(exc, TypeError), (
        f"a hook returning 1 was refused with {type(exc).__name__}, not TypeError: {exc}")


@rule("hooks.hook-result-not-aliased")
@pytest.mark.parametrize("where", ["leaf", "non-leaf"])
def test_hook_result_the_user_holds_is_not_the_grad(adapter, fw, device, where):
    if where == "leaf":
        leaf_hooks_fire_once(adapter, fw, device)
    held = fw.full((2,), 7.0, device=device)
    x = fw.ones(2, requires_grad=True, device=device)
    y = x if where == "leaf" else fw.clone(x)   # clone passes its gradient through unchanged
    calls = []

    def hook(g):
        calls.append(1)
        return held

    y.register_hook(hook)
    adapter.backward(fw.sum(y * 2))
    assert calls == [1], f"the hook on the {where} ran {len(calls)} times in one backward"
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [7.0, 7.0],
                               err_msg=f"x.grad is not what the {where}'s hook returned")
    first = 7.0
    if aside(adapter, "inplace_methods", what="an in-place change of the returned tensor leaves x.grad"):
        adapter.inplace(held, "add_", 1)
        first = 8.0
        np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [7.0, 7.0],
                                   err_msg="changing the tensor the hook returned (held by the user) changed x.grad")
    adapter.backward(fw.sum(x * 3))   # the leaf's own hook runs again and returns held once more
    again = 7.0 + (first if where == "leaf" else 3.0)
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [again] * 2,
                               err_msg="a second backward did not accumulate into x.grad")
    np.testing.assert_allclose(adapter.to_numpy(held), [first] * 2,
                               err_msg="accumulating into x.grad changed the tensor the hook returned")


# -- post-accumulate-grad hooks ------------------------------------------------------------

@rule("hooks.post-accumulate-after-grad-in-order")
def test_post_accumulate_hooks_see_grad_and_run_in_order(fw, adapter, device):
    t = fw.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    log = []

    def first(p):
        log.append(("first", p is t, None if adapter.grad(p) is None else adapter.to_numpy(adapter.grad(p)).tolist()))
        with fw.no_grad():
            adapter.inplace(p, "sub_", adapter.grad(p))

    def second(p):
        log.append(("second", p is t, adapter.to_numpy(p).tolist()))
        with fw.no_grad():
            adapter.inplace(p, "mul_", 4.0)

    adapter.register_post_accumulate_grad_hook(t, first)
    adapter.register_post_accumulate_grad_hook(t, second)
    adapter.backward(fw.sum(t * 2))
    expected = [("first", True, [2.0, 2.0, 2.0]), ("second", True, [-1.0, 0.0, 1.0])]
    assert log == expected, (
        f"observed {log}; expected the hooks in order, receiving the leaf itself, with .grad already set")
    assert_allclose(adapter.to_numpy(t), [-4.0, 0.0, 4.0])


@rule("hooks.post-accumulate-must-return-none")
def test_post_accumulate_hook_returning_value_raises(fw, adapter, device):
    u = fw.randn(2, 3, requires_grad=True, device=device)
    adapter.register_post_accumulate_grad_hook(u, lambda p: adapter.grad(p))
    expect_refusal(lambda: adapter.backward(fw.sum(u)), "backward with a post-accumulate hook returning p.grad")


# -- lifetimes -----------------------------------------------------------------------------

@rule("hooks.leaf-hooks-persist-across-graphs")
def test_leaf_hook_fires_in_every_new_graph(adapter, fw, device):
    leaf_hooks_fire_once(adapter, fw, device)
    x = fw.randn(2, requires_grad=True, device=device)
    cnt = [0]
    x.register_hook(lambda g: cnt.__setitem__(0, cnt[0] + 1))
    adapter.backward(fw.sum(x * 2))
    gc.collect()
    adapter.backward(fw.sum(x * 3))
    adapter.backward(fw.sum(fw.exp(x) * 5))
    assert cnt[0] == 3, f"leaf hook fired {cnt[0]} times over three separate graphs, expected 3"


@rule("hooks.accumulate-grad-node-shared-while-alive")
def test_referenced_accumulator_is_reused_by_new_graphs(adapter, fw, device):
    x = fw.randn(2, requires_grad=True, device=device)
    y = x * 2
    acc = _accumulator(adapter, y)
    cnt = [0]
    node_prehook(adapter, acc, lambda go: cnt.__setitem__(0, cnt[0] + 1), what="AccumulateGrad.register_prehook")
    del y
    z = x * 5
    assert _accumulator(adapter, z) is acc, "a new graph on x got a different AccumulateGrad node while the old one is alive"
    adapter.backward(fw.sum(z))
    adapter.backward(fw.sum(x * 7))
    assert cnt[0] == 2, f"hook on the kept AccumulateGrad node fired {cnt[0]} times over two graphs, expected 2"


@rule("hooks.accumulate-grad-node-hooks-die-with-node")
def test_unreferenced_accumulator_and_its_hooks_are_dropped(adapter, fw, device):
    class Marker:
        pass

    x = fw.randn(2, requires_grad=True, device=device)
    y = x * 2
    acc = _accumulator(adapter, y)
    m = Marker()
    marker_ref = weakref.ref(m)
    cnt = [0]
    watch = "the dropped node (a marker in its metadata) is freed"
    node_prehook(adapter, acc, lambda go: cnt.__setitem__(0, cnt[0] + 1), what="AccumulateGrad.register_prehook")
    if aside(adapter, "node_metadata", what=watch):
        adapter.feature("node_metadata", acc, "metadata")["m"] = m
        with prerequisite("identity.node-metadata-persistent", what="the marker in AccumulateGrad's metadata") as pre:
            pre.check(_accumulator(adapter, y).metadata.get("m") is m,
                      "a fresh read of the node's metadata finds the marker (it watches the node)")
    adapter.backward(fw.sum(y), retain_graph=True)   # the control: the hook runs while its node lives
    with prerequisite("hooks.node-hooks-builtin", what="a pre-hook on a live AccumulateGrad node") as pre:
        pre.check(cnt[0] == 1, f"the hook ran once in a backward through its node (it ran {cnt[0]} times)")
    del m, y, acc
    gc.collect()
    if aside(adapter, "node_metadata", what=watch):
        assert marker_ref() is None, (
            "the leaf keeps its AccumulateGrad node (and its metadata) alive after every graph using it is gone")
    adapter.backward(fw.sum(x * 5))
    assert cnt[0] == 1, f"a hook on a dropped AccumulateGrad node fired {cnt[0] - 1} time(s) in a later graph"


@rule("hooks.retain-graph-hooks-fire-each-backward")
def test_tensor_hooks_fire_on_every_retained_backward(adapter, fw, device):
    leaf_hooks_fire_once(adapter, fw, device)
    x = fw.ones(2, requires_grad=True, device=device)
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append("tensor"))
    x.register_hook(lambda g: log.append("leaf"))
    for _ in range(3):
        adapter.backward(fw.sum(y), retain_graph=True)
    assert log == ["tensor", "leaf"] * 3, (
        f"over three retained passes the tensor hooks ran as {log}; expected ['tensor', 'leaf'] three times")


@rule("hooks.retain-graph-hooks-fire-each-backward")
def test_node_hooks_fire_on_every_retained_backward(adapter, fw, device):
    x = fw.ones(2, requires_grad=True, device=device)
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append("tensor"))
    node = _node(adapter, y)
    node_prehook(adapter, node, lambda go: log.append("pre"))
    node_hook(adapter, node, lambda gi, go: log.append("post"))
    for _ in range(3):
        adapter.backward(fw.sum(y), retain_graph=True)
    one = ["tensor", "pre", "post"]
    assert log == one * 3, f"over three retained passes the hooks ran as {log}; expected {one} three times"


# -- hooks over several tensors -------------------------------------------------------------

def _multi_grad_hook(fw):
    register = getattr(getattr(fw.autograd, "graph", None), "register_multi_grad_hook", None)
    if register is None:
        raise Unsupported("no autograd.graph.register_multi_grad_hook",
                          feature="fw.autograd.graph.register_multi_grad_hook")
    return register


@rule("hooks.multi-grad-hook-all")
def test_multi_grad_hook_all_fires_once_with_the_group(adapter, fw, device):
    register = _multi_grad_hook(fw)
    a = fw.ones(2, requires_grad=True, device=device)
    b = fw.ones(2, requires_grad=True, device=device)
    seen = []
    handle = register((a, b), lambda grads: seen.append(
        [None if g is None else adapter.to_numpy(g).tolist() for g in grads]))
    adapter.backward(fw.sum(a * 2 + b * 3))
    assert seen == [[[2.0, 2.0], [3.0, 3.0]]], f"one backward reaching a and b: hook calls {seen}"
    adapter.backward(fw.sum(a * 2))
    assert seen[1:] == [[[2.0, 2.0], None]], f"a backward reaching only a: hook calls {seen[1:]}"
    handle.remove()
    adapter.backward(fw.sum(a * 2 + b * 3))
    assert len(seen) == 2, "the hook ran after handle.remove()"


@rule("hooks.multi-grad-hook-any")
def test_multi_grad_hook_any_fires_once_with_the_first(adapter, fw, device):
    register = _multi_grad_hook(fw)
    a = fw.ones(2, requires_grad=True, device=device)
    b = fw.ones(2, requires_grad=True, device=device)
    seen = []
    register((a, b), lambda g: seen.append(adapter.to_numpy(g).tolist()), mode="any")
    adapter.backward(fw.sum(a * 2 + b * 3))
    assert len(seen) == 1 and seen[0] in ([2.0, 2.0], [3.0, 3.0]), \
        f"one backward reaching a and b: hook calls {seen}"
    adapter.backward(fw.sum(a * 2))
    assert seen[1:] == [[2.0, 2.0]], f"a second backward reaching only a: hook calls {seen[1:]}"


@rule("hooks.handle-does-not-own-hooks")
def test_a_kept_handle_does_not_keep_its_hook_alive(fw, device):
    class Hook:
        def __call__(self, grad):
            return None

    with liveness.gc_disabled():
        def scope():
            x = fw.ones(2, requires_grad=True, device=device)
            hook = Hook()
            handle = x.register_hook(hook)
            return liveness.weak(hook, "the hook registered on x"), handle

        probe, handle = scope()
        liveness.assert_freed(probe, by="refcount", context="x dropped while its hook's handle is held")
        _remove(handle, "handle.remove() after its tensor died")


# -- module full backward hooks ------------------------------------------------------------

def _two_output_module(adapter, fw, *, pre_hooks=False):
    """A module ``m(a, k, b) -> (a * 2, b * 3)`` (``k`` a number); Unsupported without
    ``nn.Module`` full backward hooks, or without their pre-hooks where the test uses them
    (``pre_hooks``: torch 1.8-1.13 have the hooks but not the pre-hooks)."""
    base = adapter.feature("module_backward_hooks", lambda: fw.nn.Module)

    class TwoOut(base):
        def forward(self, a, k, b):
            return a * 2, b * 3

    m = TwoOut()
    adapter.feature("module_backward_hooks", m, "register_full_backward_hook")
    if pre_hooks:
        adapter.feature("module_backward_hooks", m, "register_full_backward_pre_hook")
    return m


def _values(adapter, grads):
    return [None if g is None else adapter.to_numpy(g).tolist() for g in grads]


@rule("hooks.module-full-backward-hook-order")
def test_module_full_backward_hooks_order_and_contents(adapter, fw, device):
    m = _two_output_module(adapter, fw, pre_hooks=True)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("hook", mod is m, _values(adapter, gi), _values(adapter, go))))
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre", mod is m, _values(adapter, go))))
    m.register_full_backward_pre_hook(lambda mod, go: seen.append(("pre-first",)), prepend=True)
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(("hook-first",)), prepend=True)
    a = fw.ones(2, requires_grad=True, device=device)
    b = fw.ones(2, requires_grad=True, device=device)
    oa, ob = m(a, 7, b)
    adapter.backward(fw.sum(oa) + fw.sum(ob))
    assert [s[0] for s in seen] == ["pre-first", "pre", "hook-first", "hook"], f"order: {[s[0] for s in seen]}"
    assert seen[1] == ("pre", True, [[1.0, 1.0], [1.0, 1.0]]), f"pre-hook saw {seen[1]}"
    assert seen[3] == ("hook", True, [[2.0, 2.0], None, [3.0, 3.0]], [[1.0, 1.0], [1.0, 1.0]]), \
        f"hook saw {seen[3]} (grad_input has one entry per input, None for the number)"
    assert adapter.to_numpy(adapter.grad(a)).tolist() == [2.0, 2.0] and adapter.to_numpy(adapter.grad(b)).tolist() == [3.0, 3.0]


@rule("hooks.module-full-backward-hook-order")
def test_module_full_backward_hooks_replace_gradients(adapter, fw, device):
    m = _two_output_module(adapter, fw, pre_hooks=True)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10, go[1]))
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], None, gi[2] * 100))
    a = fw.ones(2, requires_grad=True, device=device)
    b = fw.ones(2, requires_grad=True, device=device)
    oa, ob = m(a, 7, b)
    adapter.backward(fw.sum(oa) + fw.sum(ob))
    assert adapter.to_numpy(adapter.grad(a)).tolist() == [20.0, 20.0], f"a.grad = {adapter.to_numpy(adapter.grad(a)).tolist()} (pre-hook scaled grad_output[0] by 10)"
    assert adapter.to_numpy(adapter.grad(b)).tolist() == [300.0, 300.0], f"b.grad = {adapter.to_numpy(adapter.grad(b)).tolist()} (hook scaled grad_input[2] by 100)"
    m2 = _two_output_module(adapter, fw)
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    oa, ob = m2(fw.ones(2, requires_grad=True, device=device), 7, fw.ones(2, requires_grad=True, device=device))
    expect_refusal(lambda: adapter.backward(fw.sum(oa) + fw.sum(ob)), "a hook returning 1 of 3 grad_input")


@rule("hooks.module-full-backward-hook-lifetime")
def test_module_full_backward_hooks_are_those_of_the_call(adapter, fw, device):
    m = _two_output_module(adapter, fw)
    ran = []
    handle = m.register_full_backward_hook(lambda mod, gi, go: ran.append("registered before the call"))
    a = fw.ones(2, requires_grad=True, device=device)
    oa, ob = m(a, 7, a)
    handle.remove()
    m.register_full_backward_hook(lambda mod, gi, go: ran.append("registered after the call"))
    adapter.backward(fw.sum(oa) + fw.sum(ob))
    assert ran == ["registered before the call"], f"hooks that ran for the graph built before: {ran}"
    ran.clear()
    oa, ob = m(a, 7, a)
    adapter.backward(fw.sum(oa) + fw.sum(ob))
    assert ran == ["registered after the call"], f"hooks that ran for a call after remove(): {ran}"


@rule("hooks.module-full-backward-hook-lifetime")
def test_module_with_backward_hook_lives_as_long_as_its_graph(adapter, fw, device):
    m = _two_output_module(adapter, fw)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    probe = liveness.weak(m, "the module")
    a = fw.ones(2, requires_grad=True, device=device)
    oa, ob = m(a, 7, a)
    del m, ob
    liveness.assert_alive(probe, "while a graph built by its call lives (its hooks need it)")
    with liveness.gc_disabled():
        del oa
        liveness.assert_freed(probe, by="refcount", context="once the graph built by its call is dropped")


@rule("hooks.multi-grad-hook-handle-lifetime")
def test_multi_grad_hook_outlives_its_dropped_handle(adapter, fw, device):
    register = _multi_grad_hook(fw)
    a = fw.ones(2, requires_grad=True, device=device)
    seen = []

    class Hook:
        def __call__(self, grads):
            seen.append(len(grads))

    hook = Hook()
    probe = liveness.weak(hook, "the multi-grad hook's function")
    handle = register((a,), hook)
    del hook, handle
    gc.collect()
    liveness.assert_alive(probe, "after its handle was dropped (the tensors' hooks still need it)")
    adapter.backward(fw.sum(a * 2))
    assert seen == [1], f"the hook did not fire after its handle was dropped: {seen}"
    handle = register((a,), lambda grads: seen.append("second"))
    handle.remove()
    handle.remove()                         # removing twice is harmless
    adapter.backward(fw.sum(a * 2))
    assert seen == [1, 1], f"a removed multi-grad hook fired: {seen}"


@rule("hooks.hooks-added-while-node-runs")
def test_hooks_registered_on_a_node_while_it_runs(adapter, fw, device):
    x = fw.ones(2, requires_grad=True, device=device)
    y = x * 2
    node = _node(adapter, y)
    ran, added = [], []

    def pre(grad_outputs):
        ran.append("pre")
        if not added:
            added.append("pre")
            node_hook(adapter, node, lambda gi, go: ran.append("post added by pre"))
            node_prehook(adapter, node, lambda go: ran.append("pre added by pre"))

    def post(grad_inputs, grad_outputs):
        ran.append("post")
        if added == ["pre"]:
            added.append("post")
            node_hook(adapter, node, lambda gi, go: ran.append("post added by post"))

    node_prehook(adapter, node, pre)
    node_hook(adapter, node, post)
    adapter.backward(fw.sum(y), retain_graph=True)
    assert ran == ["pre", "post", "post added by pre"], \
        f"first pass: {ran} (a post-hook added by a pre-hook runs in the same pass, the others from the next)"
    ran.clear()
    adapter.backward(fw.sum(y))
    assert ran == ["pre", "pre added by pre", "post", "post added by pre", "post added by post"], f"second pass: {ran}"


@rule("hooks.tensor-hooks-kept-by-node")
@subject("unbind")
def test_non_leaf_hooks_are_kept_per_output_by_the_node(adapter, fw, device):
    x = fw.ones(2, requires_grad=True, device=device)
    a, b = x.unbind()
    seen = []
    hook_handle(a, lambda g: seen.append(("a", adapter.to_numpy(g).tolist())))
    hook_handle(b, lambda g: seen.append(("b", adapter.to_numpy(g).tolist())))
    s = a * 2 + b * 3
    probe = liveness.weak(a, "a (an output of unbind with a hook)")
    del a, b
    liveness.assert_freed(probe, by="gc", context="while its hook is registered (the node, not the tensor, keeps it)")
    adapter.backward(s)
    assert sorted(seen) == [("a", 2.0), ("b", 3.0)], \
        f"hooks of two outputs of one node, after the tensors were freed: {sorted(seen)}"
