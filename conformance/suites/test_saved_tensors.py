"""Suite `saved_tensors`: saved-tensor hooks (pack / unpack) and what a node owns between them.

Rules: conformance/catalogue/saved_tensors.toml. Observed torch behaviour:
conformance/evidence/saved_tensors.toml.
"""
import gc
import weakref

import numpy as np
from numpy.testing import assert_allclose

from conformance import liveness
from conformance.api import Blocked, Unsupported, aside, diverges_if_raises, prerequisite, raises, rule


def _hooks(fw, adapter):
    return adapter.feature("saved_tensors_hooks", lambda: fw.autograd.graph.saved_tensors_hooks)


def _saved_self(adapter, node):
    return adapter.feature("saved_tensor_attributes", lambda: node._saved_self)


def _raw_saved_self(adapter, node):
    raw = adapter.feature("saved_tensor_register_hooks", lambda: node._raw_saved_self)
    adapter.feature("saved_tensor_register_hooks", lambda: raw.register_hooks)
    return raw


class Packed:
    """What the packing hooks below return: a box a weakref can watch."""

    def __init__(self, tensor):
        self.tensor = tensor


class Counter:
    """Pack / unpack hooks that count their calls; pack keeps a detached copy in a box."""

    def __init__(self, fw, scale=1):
        self.fw = fw
        self.packs = 0
        self.unpacks = 0
        self.boxes = []
        self.scale = scale

    def pack(self, tensor):
        self.packs += 1
        box = Packed(self.fw.clone(self.fw.detach(tensor)))
        self.boxes.append(weakref.ref(box))
        return box

    def unpack(self, box):
        self.unpacks += 1
        return box.tensor * self.scale if self.scale != 1 else box.tensor


def _square_function(fw, adapter):
    class Square(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = adapter.saved_tensors(ctx)
            return grad * 2 * x

    return Square


@rule("saved_tensors.pack-once-at-save")
def test_pack_runs_once_per_saved_tensor_at_save_time(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x, 2)
        packed = counter.packs
        assert packed >= 1, "pack was not called when pow saved its input"
        if aside(adapter, "grad_modes", what="an op recorded under no_grad runs no pack"):
            with fw.no_grad():
                fw.pow(x, 2)
            assert counter.packs == packed, f"pack ran for an op under no_grad ({packed} -> {counter.packs} calls)"
    adapter.backward(fw.sum(y))
    assert counter.packs == packed, f"pack ran again during backward ({packed} -> {counter.packs} calls)"
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 2.0))


@rule("saved_tensors.unpack-on-every-access")
def test_unpack_runs_on_every_backward_and_read(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x, 2)
    assert counter.unpacks == 0, f"unpack ran {counter.unpacks} times during forward"
    adapter.backward(fw.sum(y), retain_graph=True)
    first = counter.unpacks
    assert first >= 1, "backward did not unpack the saved tensor"
    adapter.backward(fw.sum(y), retain_graph=True)
    assert counter.unpacks == 2 * first, (
        f"the first backward unpacked {first} times, the second {counter.unpacks - first} times")
    if aside(adapter, "graph_nodes", "saved_tensor_attributes", what="each read of grad_fn._saved_self unpacks"):
        before = counter.unpacks
        adapter.feature("saved_tensor_attributes", lambda: adapter.grad_fn(y)._saved_self)
        adapter.feature("saved_tensor_attributes", lambda: adapter.grad_fn(y)._saved_self)
        assert counter.unpacks == before + 2, f"two reads of _saved_self ran unpack {counter.unpacks - before} times"


@rule("saved_tensors.node-holds-only-packed")
def test_node_holds_only_what_pack_returned(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    a = x * 3
    original = liveness.watch(a, "the original tensor a", adapter, device, allow_hook=False).get
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(a, 2)
    del a
    gc.collect()
    assert original() is None, "the node keeps the original tensor although pack returned a copy"
    assert counter.boxes and all(box() is not None for box in counter.boxes), "the node dropped what pack returned"
    adapter.backward(fw.sum(y))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 18.0))


@rule("saved_tensors.packed-released-after-backward")
def test_packed_value_released_by_backward(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x * 3, 2)
    adapter.backward(fw.sum(y), retain_graph=True)
    assert all(box() is not None for box in counter.boxes), "retain_graph=True backward released the packed value"
    adapter.backward(fw.sum(y))
    assert all(box() is None for box in counter.boxes), "the packed value outlives a non-retaining backward"


@rule("saved_tensors.packed-released-with-graph")
def test_packed_value_released_with_graph(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    with prerequisite("saved_tensors.packed-released-after-backward",
                      what="what pack returned is released at all") as pre:
        first = Counter(fw)
        x = fw.ones(3, requires_grad=True, device=device)
        with hooks(first.pack, first.unpack):
            y = fw.pow(x * 3, 2)
        adapter.backward(fw.sum(y))
        del x, y
        liveness.collect()
        pre.check(first.boxes and all(box() is None for box in first.boxes),
                  "the packed values die once a backward ran and the graph, input and output are gone")
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x * 3, 2)
    assert counter.boxes, "pack was not called"
    gc.disable()
    try:
        del y
        alive = [box for box in counter.boxes if box() is not None]
    finally:
        gc.enable()
    assert not alive, f"{len(alive)} packed values outlive their graph"


@rule("saved_tensors.unpack-result-feeds-gradient")
def test_gradient_uses_what_unpack_returned(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw, scale=10)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x, 2)
    adapter.backward(fw.sum(y))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 20.0),
                    err_msg="the gradient did not use unpack's tensor (10 * x)")


@rule("saved_tensors.unpack-result-is-saved-value")
def test_saved_attribute_is_unpack_result(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw, scale=10)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x, 2)
    assert_allclose(adapter.to_numpy(_saved_self(adapter, adapter.grad_fn(y))), np.full(3, 10.0),
                    err_msg="_saved_self is not unpack's tensor")


@rule("saved_tensors.custom-function-hooked")
def test_custom_function_saved_tensors_go_through_hooks(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw, scale=5)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = _square_function(fw, adapter).apply(x)
    assert counter.packs == 1, f"save_for_backward of one tensor ran pack {counter.packs} times"
    adapter.backward(fw.sum(y))
    assert counter.unpacks == 1, f"one read of ctx.saved_tensors ran unpack {counter.unpacks} times"
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 10.0),
                    err_msg="ctx.saved_tensors in backward was not unpack's tensor (5 * x)")


@rule("saved_tensors.identity-hooks-transparent")
def test_identity_hooks_change_nothing(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    with hooks(lambda t: t, lambda t: t):
        y = fw.pow(x, 3)
        (g,) = fw.autograd.grad(fw.sum(y), x, create_graph=True)
    assert_allclose(adapter.to_numpy(g), [3.0, 12.0, 27.0])
    adapter.backward(fw.sum(g))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), [6.0, 12.0, 18.0], err_msg="second derivative under identity hooks")
    if aside(adapter, "graph_nodes", "saved_tensor_attributes", "requires_grad_flag",
             what="grad_fn._saved_self is the input's values, requiring grad"):
        saved = adapter.feature("saved_tensor_attributes", lambda: adapter.grad_fn(y)._saved_self)
        assert_allclose(adapter.to_numpy(saved), [1.0, 2.0, 3.0])
        assert adapter.requires_grad(saved), "the unpacked saved input lost requires_grad"


@rule("saved_tensors.unpacked-input-identity")
def test_unpacked_input_identity(fw, adapter, device, observe):
    hooks = _hooks(fw, adapter)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(lambda t: t, lambda t: t):
        y = fw.pow(x, 2)
    observe({"saved_self_is_input": _saved_self(adapter, adapter.grad_fn(y)) is x})


@rule("saved_tensors.innermost-hooks-win")
def test_innermost_hooks_win(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    outer, inner = Counter(fw), Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(outer.pack, outer.unpack):
        nested = hooks(inner.pack, inner.unpack)
        with diverges_if_raises(Exception, what="entering saved_tensors_hooks inside another"):
            nested.__enter__()
        try:
            y = fw.pow(x, 2)
        finally:
            nested.__exit__(None, None, None)
        inner_packs = inner.packs
        assert inner_packs >= 1 and outer.packs == 0, (
            f"nested hooks: inner packed {inner_packs}, outer packed {outer.packs} times")
        z = fw.pow(x, 2)
    assert outer.packs >= 1 and inner.packs == inner_packs, (
        f"after the inner block: outer packed {outer.packs}, inner {inner.packs - inner_packs} more times")
    adapter.backward(fw.sum(y + z))
    assert inner.unpacks >= 1 and outer.unpacks >= 1, "each saved tensor is unpacked by the pair that packed it"


@rule("saved_tensors.disable-refuses-hooks")
def test_disable_refuses_hooks(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    disable = adapter.feature("disable_saved_tensors_hooks",
                              lambda: fw.autograd.graph.disable_saved_tensors_hooks)
    with disable("offloading is not allowed in this block"):
        with raises(Exception, match="offloading is not allowed", what="entering saved_tensors_hooks while disabled"):  # the user's message
            with hooks(lambda t: t, lambda t: t):
                pass
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        fw.pow(x, 2)
    assert counter.packs >= 1, "hooks do not work again after the disable block"


@rule("saved_tensors.register-hooks-per-tensor")
def test_register_hooks_on_one_saved_tensor(fw, adapter, device):
    x = fw.ones(3, requires_grad=True, device=device)
    y = fw.pow(x, 2)
    counter = Counter(fw, scale=10)
    _raw_saved_self(adapter, adapter.grad_fn(y)).register_hooks(counter.pack, counter.unpack)
    assert counter.packs == 1 and counter.unpacks == 0, (
        f"register_hooks: {counter.packs} packs, {counter.unpacks} unpacks (expected 1, 0)")
    adapter.backward(fw.sum(y))
    assert counter.packs == 1 and counter.unpacks == 1, f"backward: {counter.packs} packs, {counter.unpacks} unpacks"
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 20.0), err_msg="the gradient did not use unpack's tensor")


@rule("saved_tensors.register-hooks-twice-raises")
def test_register_hooks_twice_raises(fw, adapter, device):
    x = fw.ones(3, requires_grad=True, device=device)
    y = fw.pow(x, 2)
    first, second = Counter(fw, scale=10), Counter(fw)
    raw = _raw_saved_self(adapter, adapter.grad_fn(y))
    raw.register_hooks(first.pack, first.unpack)
    with raises(Exception, what="a second register_hooks on one saved tensor"):
        raw.register_hooks(second.pack, second.unpack)
    adapter.backward(fw.sum(y))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 20.0), err_msg="the first hooks were replaced")
    hooks = _hooks(fw, adapter)
    with hooks(lambda t: t, lambda t: t):
        z = fw.pow(x, 2)
    with raises(Exception, what="register_hooks on a tensor saved under saved_tensors_hooks"):
        _raw_saved_self(adapter, adapter.grad_fn(z)).register_hooks(second.pack, second.unpack)


@rule("saved_tensors.register-hooks-after-release-raises")
def test_register_hooks_after_release_raises(fw, adapter, device):
    x = fw.ones(3, requires_grad=True, device=device)
    y = fw.pow(x, 2)
    raw = _raw_saved_self(adapter, adapter.grad_fn(y))
    adapter.backward(fw.sum(y))
    counter = Counter(fw)
    with raises(Exception, what="register_hooks after the saved tensor was freed"):
        raw.register_hooks(counter.pack, counter.unpack)
    assert counter.packs == 0, "pack ran on a freed saved tensor"


@rule("saved_tensors.access-after-release-raises")
def test_access_after_release_raises(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x, 2)
    adapter.backward(fw.sum(y))
    unpacks = counter.unpacks
    with raises(Exception, what="_saved_self after backward freed it"):
        _saved_self(adapter, adapter.grad_fn(y))
    assert counter.unpacks == unpacks, "unpack ran on a released saved tensor"


@rule("saved_tensors.unpack-non-tensor-raises")
def test_unpack_returning_non_tensor_raises(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.ones(3, requires_grad=True, device=device)
    with hooks(lambda t: t, lambda t: "not a tensor"):
        y = fw.pow(x, 2)
    with raises(Exception, what="backward with unpack returning a str"):
        adapter.backward(fw.sum(y))
    assert adapter.grad(x) is None, "a gradient was computed from unpack's non-tensor"


@rule("saved_tensors.pack-modifying-input-raises")
def test_pack_modifying_its_input_raises(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.ones(3, requires_grad=True, device=device)
    a = x * 1

    def pack(t):
        adapter.inplace(t, "mul_", 2)
        return t

    with raises(Exception, what="an op whose pack hook modifies its input in place"):
        with hooks(pack, lambda t: t):
            fw.pow(a, 2)


@rule("saved_tensors.packed-kept-after-retain-graph")
def test_retain_graph_unpacks_again(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    counter = Counter(fw)
    x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with hooks(counter.pack, counter.unpack):
        y = fw.pow(x, 2)
    (g1,) = fw.autograd.grad(fw.sum(y), x, retain_graph=True)
    unpacks = counter.unpacks
    (g2,) = fw.autograd.grad(fw.sum(y), x)
    assert counter.unpacks > unpacks, "the second backward did not unpack"
    assert_allclose(adapter.to_numpy(g2), adapter.to_numpy(g1))
    assert_allclose(adapter.to_numpy(g2), [2.0, 4.0])


@rule("saved_tensors.create-graph-through-unpacked")
def test_double_backward_through_detached_packed_copy(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with hooks(lambda t: fw.clone(fw.detach(t)), lambda t: t):
        y = fw.pow(x, 3)
    (g,) = fw.autograd.grad(fw.sum(y), x, create_graph=True)
    assert_allclose(adapter.to_numpy(g), [3.0, 12.0])
    if aside(adapter, "requires_grad_flag", what="the gradient requires grad"):
        assert adapter.requires_grad(g), "the gradient computed from an unpacked tensor is not differentiable"
    adapter.backward(fw.sum(g))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), [6.0, 12.0],
                    err_msg="second derivative: unpack's tensor was not put back in the graph")


@rule("saved_tensors.pack-copy-survives-inplace")
def test_packed_copy_unaffected_by_inplace_change(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.ones(3, requires_grad=True, device=device)
    a = x * 1
    with hooks(lambda t: fw.clone(fw.detach(t)), lambda t: t):
        y = fw.pow(a, 2)
    adapter.inplace(a, "mul_", 5)
    (g,) = fw.autograd.grad(fw.sum(y), x)
    assert_allclose(adapter.to_numpy(g), np.full(3, 2.0),
                    err_msg="backward did not use the packed copy (the value before the in-place change)")


@rule("saved_tensors.hooks-skip-version-check")
def test_inplace_change_of_packed_original(fw, adapter, device, observe):
    hooks = _hooks(fw, adapter)
    x = fw.ones(3, requires_grad=True, device=device)
    a = x * 1
    with hooks(lambda t: t, lambda t: t):
        y = fw.pow(a, 2)
    adapter.inplace(a, "mul_", 5)
    try:
        (g,) = fw.autograd.grad(fw.sum(y), x)
    except (Unsupported, Blocked):
        raise
    except Exception:  # noqa: BLE001 - refused or not is the observation; no class rule here
        observe("raises")
    else:
        observe({"gradient": adapter.to_numpy(g).tolist()})


@rule("saved_tensors.forward-ad-under-hooks")
def test_forward_ad_unchanged_by_hooks(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    adapter.require("forward_ad")
    fwad = adapter.feature("forward_ad", lambda: fw.autograd.forward_ad)
    counter = Counter(fw)
    p = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with fwad.dual_level():
        dual = fwad.make_dual(p * 1, fw.tensor([1.0, 1.0], device=device))
        with hooks(counter.pack, counter.unpack):
            y = fw.pow(dual, 3)
        tangent = fwad.unpack_dual(y).tangent
        assert tangent is not None, "the output lost its tangent under hooks"
        assert_allclose(adapter.to_numpy(tangent), [3.0, 12.0])
        adapter.backward(fw.sum(y))
    assert counter.packs >= 1, "pack was not called"
    assert_allclose(adapter.to_numpy(adapter.grad(p)), [3.0, 12.0])


@rule("saved_tensors.save-on-cpu-round-trip")
def test_save_on_cpu_round_trip(fw, adapter, device):
    save_on_cpu = adapter.feature("save_on_cpu", lambda: fw.autograd.graph.save_on_cpu)
    x = fw.tensor([1.0, 2.0, 3.0], requires_grad=True, device=device)
    with save_on_cpu():
        y = fw.pow(x, 2)
    if aside(adapter, "graph_nodes", "saved_tensor_attributes", what="grad_fn._saved_self is back on the input's device"):
        saved = adapter.feature("saved_tensor_attributes", lambda: adapter.grad_fn(y)._saved_self)
        assert_allclose(adapter.to_numpy(saved), [1.0, 2.0, 3.0])
        assert saved.device == x.device, f"the unpacked tensor is on {saved.device}, the original on {x.device}"
    adapter.backward(fw.sum(y))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), [2.0, 4.0, 6.0])


@rule("saved_tensors.allow-mutation-keeps-saved-value")
def test_allow_mutation_uses_value_at_save(fw, adapter, device):
    allow = adapter.feature("allow_mutation_on_saved_tensors",
                            lambda: fw.autograd.graph.allow_mutation_on_saved_tensors)
    x = fw.ones(3, requires_grad=True, device=device)
    with allow():
        a = x * 1
        y = fw.pow(a, 2)
        adapter.inplace(a, "mul_", 3)
        adapter.backward(fw.sum(y))
    assert_allclose(adapter.to_numpy(a), np.full(3, 3.0))
    assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 2.0),
                    err_msg="backward did not use the saved value from before the in-place change")


@rule("saved_tensors.allow-mutation-outside-context-raises")
def test_allow_mutation_graph_needs_its_block(fw, adapter, device):
    allow = adapter.feature("allow_mutation_on_saved_tensors",
                            lambda: fw.autograd.graph.allow_mutation_on_saved_tensors)
    x = fw.ones(3, requires_grad=True, device=device)
    with allow():
        y = fw.pow(x * 1, 2)
    with raises(Exception, what="backward after the allow_mutation_on_saved_tensors block exited"):
        adapter.backward(fw.sum(y))


@rule("saved_tensors.hooks-grad-mode")
def test_pack_runs_without_grad_and_unpack_under_the_callers_mode(adapter, fw, device):
    hooks = _hooks(fw, adapter)
    log = []

    packing = []

    def pack(t):
        if packing:                         # the op below saved a tensor: pack ran inside pack
            log.append(("pack inside pack",))
            return t
        packing.append(t)
        try:
            inner = t * t                   # an op inside pack must record nothing (no recursion)
            log.append(("pack", fw.is_grad_enabled(), adapter.is_recorded(inner)))
        finally:
            packing.clear()
        return t

    def unpack(t):
        log.append(("unpack", fw.is_grad_enabled()))
        return t

    x = fw.ones(2, requires_grad=True, device=device)
    with hooks(pack, unpack):
        y = fw.exp(x)
    assert log == [("pack", False, False)], f"pack saw grad mode / recorded: {log}"
    log.clear()
    adapter.backward(fw.sum(y), retain_graph=True)
    assert log == [("unpack", False)], f"unpack during backward: {log}"
    if aside(adapter, "create_graph_backward", what="unpack runs under grad mode in a create_graph backward"):
        log.clear()
        (g,) = fw.autograd.grad(fw.sum(y), x, create_graph=True)
        assert log == [("unpack", True)], f"unpack during a create_graph backward: {log}"
    if aside(adapter, "graph_nodes", "saved_tensor_attributes", what="unpack runs under grad mode when user code reads _saved_result"):
        log.clear()
        adapter.feature("saved_tensor_attributes", lambda: adapter.grad_fn(y)._saved_result)
        assert log == [("unpack", True)], f"unpack when user code reads _saved_result: {log}"


def _closures(log):
    """A pack / unpack pair of plain functions (weakly watchable) that log their calls; pack
    returns a box (a Packed) and logs a weak reference to it, to see when the node lets go."""
    def pack(t):
        box = Packed(t)
        log.append(("pack", weakref.ref(box)))
        return box

    def unpack(box):
        log.append(("unpack", None))
        return box.tensor
    return pack, unpack


@rule("saved_tensors.hook-functions-released")
def test_hook_functions_kept_only_while_needed(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.ones(3, requires_grad=True, device=device)

    def hooked(save=True):
        """Run a block under a fresh pair; return the output (None if nothing was saved), probes
        on the two functions (which nothing but the engine holds afterwards) and the log."""
        log = []
        pack, unpack = _closures(log)
        probes = (liveness.weak(pack, "the pack function"), liveness.weak(unpack, "the unpack function"))
        with hooks(pack, unpack):
            y = fw.pow(x, 2) if save else None
        if save:
            with prerequisite("saved_tensors.pack-once-at-save", what="pow under the hooks") as pre:
                pre.check(any(kind == "pack" for kind, _ in log), "pack ran when pow saved its input")
        return y, probes, log

    def released(log, owner, what):
        """Prerequisite: the node let go of what pack returned (``owner`` owns that rule)."""
        with prerequisite(owner, what=what) as pre:
            pre.check(all(box() is None for kind, box in log if kind == "pack"), "the packed boxes were freed")

    def freed(probes, context):
        for probe in probes:
            liveness.assert_freed(probe, by="refcount", context=context)

    with liveness.gc_disabled():
        _, probes, _ = hooked(save=False)
        freed(probes, "after a block in which nothing was saved")

        y, (pack, unpack), log = hooked()
        liveness.assert_alive(unpack, "after the block, while the node that saved under it lives")
        del y
        released(log, "saved_tensors.packed-released-with-graph", "dropping the graph without a backward")
        freed((pack, unpack), "once the graph was dropped without a backward")

        y, (pack, unpack), log = hooked()
        adapter.backward(fw.sum(y), retain_graph=True)
        with prerequisite("saved_tensors.packed-kept-after-retain-graph", what="a second backward") as pre:
            before = len(log)
            adapter.backward(fw.sum(y), retain_graph=True)
            pre.check(("unpack", None) in log[before:], "the second backward through the retained graph ran unpack")
        liveness.assert_alive(unpack, "after backwards with retain_graph=True, the graph still held")
        del y
        released(log, "saved_tensors.packed-released-with-graph", "dropping the retained graph")
        freed((pack, unpack), "once the retained graph was dropped")

        x = fw.ones(3, requires_grad=True, device=device)   # a fresh leaf: its .grad is this backward's
        y, (pack, unpack), log = hooked()
        liveness.assert_alive(unpack, "after the block, while the node that saved under it lives")
        adapter.backward(fw.sum(y))
        assert_allclose(adapter.to_numpy(adapter.grad(x)), np.full(3, 2.0))
        released(log, "saved_tensors.packed-released-after-backward", "a non-retaining backward")
        freed((pack, unpack), "after a non-retaining backward through the node (its output still held)")


@rule("saved_tensors.unpack-reentrant-backward")
def test_unpack_hook_runs_a_backward_of_its_own(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    inner = []

    def unpack(t):
        w = fw.tensor([3.0, 3.0], requires_grad=True, device=device)
        u = fw.ones(2, requires_grad=True, device=device)
        with fw.enable_grad():
            adapter.backward(fw.sum(w * w))
            (g,) = fw.autograd.grad(fw.sum(u * 7), u)
        inner.append((adapter.to_numpy(adapter.grad(w)).tolist(), adapter.to_numpy(g).tolist()))
        return t

    x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with hooks(lambda t: t, unpack):
        y = fw.pow(x, 2)
    with diverges_if_raises(Exception, what="a backward whose unpack hook runs a backward and autograd.grad"):
        adapter.backward(fw.sum(y))
    with prerequisite("saved_tensors.unpack-on-every-access", what="backward through the hooked pow") as pre:
        pre.check(inner, "the backward called unpack")
    assert all(got == ([6.0, 6.0], [7.0, 7.0]) for got in inner), (
        f"inside unpack: w.grad of (w * w).sum() at w = 3 and d(7 u).sum()/du were {inner}, expected [6, 6] and [7, 7]")
    assert_allclose(adapter.to_numpy(adapter.grad(x)), [2.0, 4.0],
                    err_msg="the outer backward's gradient after backwards ran inside its unpack hook")


class PackFailed(Exception):
    """What the failing pack hook below raises."""


@rule("saved_tensors.hooks-popped-on-exception")
def test_block_left_by_an_exception_pops_its_hooks(fw, adapter, device):
    hooks = _hooks(fw, adapter)
    x = fw.ones(2, requires_grad=True, device=device)
    with prerequisite("saved_tensors.pack-once-at-save", what="pow under the hooks") as pre:
        control = Counter(fw)
        with hooks(control.pack, control.unpack):
            fw.pow(x, 2)
        pre.check(control.packs >= 1, "pack ran when pow saved its input")

    left = Counter(fw)
    try:
        with hooks(left.pack, left.unpack):
            raise KeyError("the user's own error")
    except KeyError:
        pass
    fw.pow(x, 2)
    assert left.packs == 0, f"the hooks of a block left by an exception still pack ({left.packs} calls after it)"

    def failing_pack(t):
        raise PackFailed("pack failed")

    with raises(Exception, match="pack failed", what="an op whose pack hook raises"):
        with hooks(failing_pack, lambda t: t):
            fw.pow(x, 2)
    grad_mode_kept = fw.is_grad_enabled()
    adapter.restore_grad_mode()  # else no later op would pack: the checks below would see nothing
    assert grad_mode_kept, ("grad mode is off after an op whose pack hook raised: the no_grad "
                            "the hook ran under outlived it")
    with diverges_if_raises(PackFailed, what="an op after the block whose pack hook raised"):
        fw.pow(x, 2)  # raises again if the failing pair is still in place

    with prerequisite("saved_tensors.innermost-hooks-win", what="one saved_tensors_hooks block inside another") as pre:
        outer, inner = Counter(fw), Counter(fw)
        with hooks(outer.pack, outer.unpack):
            with hooks(inner.pack, inner.unpack):
                fw.pow(x, 2)
        pre.check(inner.packs >= 1 and outer.packs == 0, "the inner pair packed, the outer did not")

    outer = Counter(fw)
    with hooks(outer.pack, outer.unpack):
        with raises(Exception, match="pack failed", what="an op whose pack hook raises"):
            with hooks(failing_pack, lambda t: t):
                fw.pow(x, 2)
        assert outer.packs == 0, "the enclosing pair packed for the op inside the inner block"
        fw.pow(x, 2)
        assert outer.packs >= 1, "after the inner block failed, the enclosing pair does not pack again"
    packed = outer.packs
    fw.pow(x, 2)
    assert outer.packs == packed, "after both blocks exited, the enclosing pair still packs"
