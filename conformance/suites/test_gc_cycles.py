"""Suite `gc_cycles`: graph and ctx ownership, and which references form cycles.

Rules: conformance/catalogue/gc_cycles.toml. Lifetimes are checked with conformance/liveness.py:
``gc_disabled()`` for "freed by refcount" rules (gc state restored in ``finally``), ``collect()``
for "freed by gc" rules. Tensors are watched through a weak reference or, where the framework
refuses one (OneFlow), through a sentinel in the closure of a no-op hook; ctx objects through a
sentinel attribute. Each scope function builds its objects, returns only probes, and so leaves
no local reference behind.
"""
from __future__ import annotations

import gc
import json
import re
import warnings

import numpy as np
import pytest

from conformance.features import feature_of_name, judged_without, needs
from conformance.spelling import subject
from conformance.api import (Blocked, Diverges, Unsupported, aside, diverges_if_raises, in_fresh_interpreter,
                            missing_method, prerequisite, raises, rule)
from conformance.suites._create_graph import create_graph_cycle_warnings
from conformance.suites._helpers import TENSOR_WEAKREF, ctx_attributes_kept, fresh_script_calling, producer, set_attr
from conformance.liveness import (
    assert_alive, assert_freed, collect, gc_disabled, sentinel_attr, sentinel_in_metadata,
    weak,
)
from conformance.liveness import watch as liveness_watch




def watch(adapter, device, t, what, allow_hook=True):
    """A probe on tensor ``t`` through a channel that passed its positive control (the
    adapter's liveness check, a weakref, else a sentinel in a hook closure: see
    :func:`conformance.liveness.watch`).

    ``allow_hook=False`` where the graph outlives the tensor at the check: a hook sentinel may
    be held by the graph node rather than by the tensor (OneFlow), so only a weakref will do.
    A framework that can watch it no way leaves the test BLOCKED by the weakref rule.
    """
    return liveness_watch(t, what, adapter, device, allow_hook=allow_hook)


def mark_dirty(adapter, ctx, *tensors):
    adapter.require("mark_dirty")
    fn = getattr(ctx, "mark_dirty", None)
    if fn is None:
        raise Unsupported(f"{adapter.name} has no ctx.mark_dirty", feature="mark_dirty")
    fn(*tensors)


def metadata_probe(adapter, node, what):
    adapter.require("node_metadata")
    try:
        return sentinel_in_metadata(node, what)
    except (AttributeError, TypeError) as exc:
        raise Unsupported(f"{adapter.name}: node.metadata unusable ({type(exc).__name__}: {exc})",
                          feature="node_metadata")


# --------------------------------------------------------------------------------------------
@rule("gc_cycles.plain-graph-freed-by-refcount")
def test_plain_graph_freed_by_refcount(adapter, fw, device):
    with gc_disabled():
        x = fw.randn(3, requires_grad=True, device=device)

        def scope():
            a = x * 2            # saved by sin (sin saves its input)
            z = fw.exp(fw.sin(a))
            return watch(adapter, device, a, "intermediate a (saved by sin)"), z

        pa, z = scope()
        assert_alive(pa, "while the output z is alive")
        del z
        assert_freed(pa, by="refcount", context="after del z (only the leaf x is still alive)")
        assert adapter.grad(x) is None


@rule("gc_cycles.plain-graph-freed-by-refcount")
def test_plain_graph_nodes_freed_by_refcount_metadata_sentinel(fw, adapter, device):
    """The seed's check_graph_dies technique: a sentinel in the interior node's metadata."""
    with gc_disabled():
        x = fw.randn(3, requires_grad=True, device=device)

        def scope():
            z = fw.exp(x * x)
            interior = producer(adapter, adapter.grad_fn(z))
            return metadata_probe(adapter, interior, "interior MulBackward node"), z

        pn, z = scope()
        assert_alive(pn, "while the output z is alive")
        del z
        assert_freed(pn, by="refcount", context="after del z")


@rule("gc_cycles.deep-graph-freed-without-recursion")
def test_deep_graph_freed_by_refcount(adapter, fw, device):
    depth = 10_000
    with gc_disabled():
        x = fw.full((1,), 0.5, requires_grad=True, device=device)

        def scope():
            first = x * 1.0
            probe = watch(adapter, device, first, "first intermediate of a 10,000-node chain")
            y = first
            for _ in range(depth):
                y = fw.sin(y)          # each sin saves its input: the chain holds every link
            return probe, y

        probe, y = scope()
        assert_alive(probe, "while the deep output is alive")
        try:
            del y
        except RecursionError as exc:  # pragma: no cover - depends on the engine
            raise Diverges(f"freeing a {depth}-node graph raised RecursionError: {exc}") from exc
        assert_freed(probe, by="refcount", context=f"after dropping the output of a {depth}-node chain")


@rule("gc_cycles.grad-does-not-retain-graph")
def test_leaf_and_grad_do_not_retain_graph(fw, adapter, device):
    with gc_disabled():
        x = fw.ones(3, requires_grad=True, device=device)

        def scope():
            a = x * 3
            loss = fw.sum(fw.sin(a))
            return watch(adapter, device, a, "intermediate a"), loss

        pa, loss = scope()
        adapter.backward(loss, retain_graph=True)   # keep saved tensors, so only the graph holds a
        g = adapter.grad(x)
        assert g is not None, "x.grad is None after backward"
        del loss
        assert_freed(pa, by="refcount", context="after del loss, with x and x.grad still alive")
        np.testing.assert_allclose(adapter.to_numpy(g), 3 * np.cos(3.0) * np.ones(3), rtol=1e-5)


@rule("gc_cycles.backward-releases-saved-tensors")
@judged_without("graph_nodes")   # the grad_fn side check is guarded below
def test_backward_releases_saved_tensors(adapter, fw, device):
    with gc_disabled():
        x = fw.randn(3, requires_grad=True, device=device)

        def scope():
            a = x * 2
            b = a * a            # MulBackward saves a (as self and as other)
            return watch(adapter, device, a, "intermediate a (saved twice by a * a)", allow_hook=False), b

        pa, b = scope()
        assert_alive(pa, "before backward (the graph saved it)")
        adapter.backward(fw.sum(b))
        try:    # where the framework has graph nodes, b keeps its own after backward
            assert adapter.feature("graph_nodes", lambda: adapter.grad_fn(b)) is not None, "b lost its grad_fn"
        except Unsupported:
            pass
        assert_freed(pa, by="refcount", context="after b.sum().backward() with b still alive")


@rule("gc_cycles.backward-releases-saved-tensors")
def test_saved_tensor_accessor_after_backward_raises(fw, adapter, device):
    x = fw.randn(3, requires_grad=True, device=device)
    a = x * 2
    b = a * a
    node = adapter.feature("graph_nodes", lambda: adapter.grad_fn(b))
    adapter.require("saved_tensor_attributes")
    if not hasattr(node, "_saved_self"):
        raise Unsupported(f"{adapter.name}: grad_fn has no _saved_self",
                          feature="saved_tensor_attributes")
    adapter.backward(fw.sum(b))
    with raises(Exception, what="b.grad_fn._saved_self after backward"):
        node._saved_self


@rule("gc_cycles.retained-graph-keeps-saved-until-graph-dies")
def test_retained_graph_keeps_saved_until_graph_dies(fw, adapter, device):
    with gc_disabled():
        x = fw.tensor([3.0], requires_grad=True, device=device)

        def scope():
            a = x * 1.0
            b = a * a
            # a weakref only: a hook sentinel lives with the retained graph's node, not with a
            return watch(adapter, device, a, "intermediate a (saved by a * a)", allow_hook=False), b

        pa, b = scope()
        adapter.backward(b, retain_graph=True)
        assert_alive(pa, "after backward(retain_graph=True): the retained graph needs it")
        adapter.backward(b)
        np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [12.0])
        del b
        assert_freed(pa, by="refcount", context="after the second backward and del b")


@rule("gc_cycles.saved-tensors-freed-with-graph")
def test_saved_inputs_and_output_freed_with_graph(adapter, fw, device):
    with gc_disabled():
        x = fw.randn(4, requires_grad=True, device=device)

        def scope():
            a = x * 2
            c = x + 1
            d = a * c            # saves a (self) and c (other)
            e = fw.exp(d)          # saves its result e
            f = fw.sum(e)
            return (watch(adapter, device, a, "saved self a of a * c"), watch(adapter, device, c, "saved other c of a * c"),
                    watch(adapter, device, e, "saved output e of exp")), f

        probes, f = scope()
        for p in probes[:2]:
            assert_alive(p, "while the output is alive")
        del f
        for p in probes:
            assert_freed(p, by="refcount", context="after dropping the output (no backward ran)")


def _save_out_fn(adapter, fw):
    class SaveOut(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = fw.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = adapter.saved_tensors(ctx)
            return g * y

    return SaveOut


@rule("gc_cycles.save-for-backward-output-cycle-free")
def test_save_for_backward_output_freed_by_refcount(fw, adapter, device):
    SaveOut = _save_out_fn(adapter, fw)
    with gc_disabled():
        x = fw.randn(3, requires_grad=True, device=device)

        def scope():
            y = SaveOut.apply(x)
            return watch(adapter, device, y, "output y saved by its own Function")

        py = scope()
        assert_freed(py, by="refcount", context="after the user dropped y")
        # and the pattern works: gradient of exp
        y = SaveOut.apply(x)
        adapter.backward(fw.sum(y))
        np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), np.exp(adapter.to_numpy(x)), rtol=1e-5)


@rule("gc_cycles.save-for-backward-output-cycle-free")
@subject("view")
def test_saved_dirty_view_freed_by_refcount(fw, adapter, device):
    class Dirty(fw.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            mark_dirty(adapter, ctx, v)
            ctx.save_for_backward(v)
            return v

        @staticmethod
        def backward(ctx, g):
            return g

    with gc_disabled():
        def scope():
            v = fw.clone(fw.tensor([1.0, 2.0], requires_grad=True, device=device)).view(2)
            out = Dirty.apply(v)
            assert out is v, "a returned input marked dirty is not the same object"
            return watch(adapter, device, v, "mutated view saved and marked dirty")

        pv = scope()
        assert_freed(pv, by="refcount", context="after the scope returned")


@pytest.mark.parametrize("with_backward", [False, True], ids=["before-backward", "after-backward"])
@rule("gc_cycles.ctx-attribute-cycle-collected")
def test_ctx_attribute_cycle_collected(fw, adapter, device, with_backward):
    ctx_attributes_kept(adapter, fw, device)
    _collector_tracks_tensors(fw, device)

    def scope():
        meta = {}

        class MyFn(fw.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x = fw.clone(x)
                ctx.meta = meta
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, g):
                (x,) = adapter.saved_tensors(ctx)
                return g * x

        a = fw.tensor([3.14], requires_grad=True, device=device)
        with diverges_if_raises(AttributeError, what='an attribute set on ctx in forward'):
            out = MyFn.apply(a)
        meta["out"] = out          # out -> node/ctx -> ctx.meta -> out
        if with_backward:
            adapter.backward(fw.sum(out))
        return watch(adapter, device, out, "output stored in ctx.meta")

    with gc_disabled():
        p = scope()
        # torch keeps it alive here (a real cycle); freeing it already is not a divergence.
    assert_freed(p, by="gc", context="(cycle out -> ctx.meta -> out)")


def _leaf_closing_over_itself(adapter, fw, device):
    """A watch on a leaf whose tensor hook closes over the leaf, every other reference gone
    (made with gc off, so only the collector can free the leaf -> hook -> leaf cycle)."""
    def scope():
        lx = fw.randn(3, requires_grad=True, device=device)
        lx.register_hook(lambda g: g if lx is not None else None)
        return watch(adapter, device, lx, "leaf whose hook closes over it")

    with gc_disabled():
        return scope()


def _collector_tracks_tensors(fw, device):
    """Prerequisite of a cycle through some holder other than a hook: the collector must track
    the tensor object at all, or no cycle through it can be collected (Paddle: the home rule's
    one cause; OneFlow 0.8.0 and 0.9.0 too: their Tensor type is not gc-tracked). An engine that
    tracks tensors but hides one holder is still judged by the test."""
    with prerequisite("gc_cycles.hook-self-closure-leaf-collectable",
                      what="the cycle collector tracks tensor objects") as pre:
        t = fw.ones(2, requires_grad=True, device=device)
        pre.check(gc.is_tracked(t), f"gc.is_tracked() is true for a {type(t).__name__}")


def _collector_sees_tensor_cycles(adapter, fw, device):
    """Prerequisite of a cycle shape whose own check needs the collector to see a tensor's Python
    parts at all (the home rule's leaf -> hook -> leaf): Paddle's tensor type is not tracked by
    the collector, so every such shape would repeat that one finding. Skipped where tensors take
    no hooks (the shape is then judged alone)."""
    with prerequisite("gc_cycles.hook-self-closure-leaf-collectable",
                      what="a cycle through a tensor's Python parts") as pre:
        try:
            leaf = _leaf_closing_over_itself(adapter, fw, device)
        except Unsupported:
            return
        collect()
        pre.check(not leaf.alive(), "gc.collect() frees a leaf whose hook closes over it")


@rule("gc_cycles.hook-self-closure-leaf-collectable")
def test_hook_closing_over_its_leaf_collectable(adapter, fw, device):
    p = _leaf_closing_over_itself(adapter, fw, device)
    assert_freed(p, by="gc", context="(leaf -> hook -> leaf)")


@rule("gc_cycles.hook-self-closure-nonleaf-collectable")
def test_hook_closing_over_its_nonleaf_collectable(adapter, fw, device):
    with prerequisite("gc_cycles.hook-self-closure-leaf-collectable",
                      what="a leaf whose hook closes over it") as pre:
        leaf = _leaf_closing_over_itself(adapter, fw, device)
        collect()
        pre.check(not leaf.alive(), "gc.collect() frees a leaf whose hook closes over it")
    x = fw.randn(3, requires_grad=True, device=device)

    def scope():
        b = x * 2
        b.register_hook(lambda g: g if b is not None else None)
        return watch(adapter, device, b, "non-leaf whose hook closes over it")

    with gc_disabled():
        p = scope()
    assert_freed(p, by="gc", context="(non-leaf -> hook -> non-leaf)")


@rule("gc_cycles.hook-returning-own-tensor")
def test_hook_returning_its_own_leaf(fw, adapter, device):
    def scope():
        x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
        x.register_hook(lambda g: x)
        adapter.backward(fw.sum(x * 10))
        return x

    x = scope()
    g = adapter.grad(x)
    assert g is not None, "x.grad is None"
    np.testing.assert_allclose(adapter.to_numpy(g), [1.0, 2.0],
                               err_msg="x.grad is not the value returned by the hook (x itself)")
    assert g is not x, "x.grad is x itself: a tensor became its own gradient"
    if aside(adapter, "graph_nodes", "requires_grad_flag", what="x.grad (the hook's x) is detached, as a plain backward's"):
        plain = fw.tensor([1.0], requires_grad=True, device=device)
        adapter.backward(fw.sum(plain * 2))
        # A detached .grad is engine.grads-detached-without-create-graph's to judge: checked here only
        # where a plain backward's .grad is detached, so its failure is not repeated as this rule's.
        if not adapter.requires_grad(adapter.grad(plain)) and adapter.grad_fn(adapter.grad(plain)) is None:
            assert not adapter.requires_grad(g), "x.grad requires grad"
            assert adapter.grad_fn(g) is None, f"x.grad has a grad_fn: {adapter.grad_fn(g)}"
    if aside(adapter, "grad_modes", "inplace_methods", what="an in-place update of x leaves x.grad"):
        with fw.no_grad():
            adapter.inplace(x, "add_", 1)
        np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [1.0, 2.0],
                                   err_msg="an in-place update of x changed x.grad (shared storage)")


def _stashing_fn(adapter, fw, box, where):
    class Keep(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if where == "forward":
                box.append(ctx)
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            if where == "backward":
                box.append(ctx)
            (x,) = adapter.saved_tensors(ctx)
            return g * 2
    return Keep


@rule("gc_cycles.stashed-ctx-ownership")
def test_stashed_ctx_ownership(fw, adapter, device, observe):
    box = []
    Keep = _stashing_fn(adapter, fw, box, "forward")
    with gc_disabled():
        def scope():
            x = fw.randn(2, requires_grad=True, device=device)
            a = x * 1.0
            y = Keep.apply(a)
            return watch(adapter, device, a, "input saved by the Function"), y

        pa, y = scope()
        ctx = box.pop()
        del y
        saved_alive = pa.alive()
        try:
            result = [tuple(t.shape) for t in adapter.saved_tensors(ctx)]
        except (Unsupported, Blocked):
            raise
        except Exception as exc:    # noqa: BLE001 - the observation records any refusal, by class
            result = f"{type(exc).__name__}: {str(exc)[:80]}"
        del ctx
    observe({"saved tensor alive while only ctx is held": saved_alive,
             "ctx.saved_tensors": result,
             "model": "ctx owns node (torch 2.13)" if saved_alive else "node owns ctx (PR 22983)"})


@rule("gc_cycles.stashed-ctx-no-crash")
def test_stashed_ctx_saved_tensors_clean(fw, adapter, device):
    box = []
    Keep = _stashing_fn(adapter, fw, box, "forward")
    x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)

    def scope():
        a = x * 3.0
        Keep.apply(a)            # output dropped at once

    scope()
    ctx = box.pop()
    collect()
    try:
        saved = adapter.saved_tensors(ctx)
    except RuntimeError as exc:
        assert str(exc).strip(), "saved_tensors of a dead node raised RuntimeError with an empty message"
        return
    except (Unsupported, Blocked):
        raise
    except Exception as exc:
        raise Diverges(f"saved_tensors of a stashed ctx raised {type(exc).__name__}: {exc}") from exc
    assert len(saved) == 1, f"saved_tensors returned {len(saved)} tensors, expected 1"
    np.testing.assert_allclose(adapter.to_numpy(saved[0]), [3.0, 6.0],
                               err_msg="stashed ctx returned wrong saved values")


@rule("gc_cycles.stashed-ctx-no-crash")
def test_stashed_ctx_after_backward_refusal_is_a_runtime_error(adapter, fw, device):
    """The class of the refusal that gc_cycles.stashed-ctx-after-backward-raises judges as
    behaviour only (any exception): a RuntimeError with a message, as for a dead node."""
    box = []
    Keep = _stashing_fn(adapter, fw, box, "backward")
    p = fw.zeros(1, requires_grad=True, device=device)
    loss = Keep.apply(p * 1.0)
    adapter.backward(loss)
    del loss
    ctx = box.pop()
    try:
        adapter.saved_tensors(ctx)
    except Exception as exc:        # noqa: BLE001 - its class is what this test judges
        if missing_method(exc):
            raise Unsupported(f"{adapter.name}: no {missing_method(exc)!r} on ctx ({exc})",
                              feature=feature_of_name(missing_method(exc))) from exc
        assert isinstance(exc, RuntimeError), (
            f"saved_tensors of a ctx stashed during a non-retaining backward raised "
            f"{type(exc).__name__}, not RuntimeError: {exc}")
        assert str(exc).strip(), "the RuntimeError has an empty message"
        return
    raise Blocked("gc_cycles.stashed-ctx-after-backward-raises",
                  "saved_tensors of a ctx stashed during a non-retaining backward raised nothing: "
                  "no refusal whose class could be judged")


@rule("gc_cycles.stashed-ctx-released-with-last-reference")
def test_stashed_ctx_and_output_released(adapter, fw, device):
    box = []
    Keep = _stashing_fn(adapter, fw, box, "forward")
    with gc_disabled():
        x = fw.randn(2, requires_grad=True, device=device)

        def scope():
            a = x * 1.0
            y = Keep.apply(a)
            return watch(adapter, device, a, "tensor saved by the Function"), y

        pa, y = scope()
        ctx = box.pop()
        pctx = sentinel_attr(ctx, "ctx attributes")
        del y, ctx
        assert_freed(pctx, by="refcount", context="after dropping both the output and the stashed ctx")
        assert_freed(pa, by="refcount", context="after dropping both the output and the stashed ctx")


@rule("gc_cycles.stashed-ctx-after-backward-raises")
def test_stashed_ctx_after_backward_raises(adapter, fw, device):
    with prerequisite("engine.backward-frees-saved-tensors",
                      what="a plain backward frees what a Function saved") as pre:
        seen = []
        Keep = _stashing_fn(adapter, fw, seen, "forward")
        adapter.backward(Keep.apply(fw.ones(1, requires_grad=True, device=device) * 1.0))
        try:
            adapter.saved_tensors(seen.pop())
            freed = False
        except (Unsupported, Blocked):
            raise
        except Exception:  # noqa: BLE001 - any refusal says the saved tensors are gone
            freed = True
        pre.check(freed, "saved_tensors of a Function's ctx is refused after a non-retaining backward")
    box = []
    Keep = _stashing_fn(adapter, fw, box, "backward")
    p = fw.zeros(1, requires_grad=True, device=device)
    loss = Keep.apply(p * 1.0)
    adapter.backward(loss)
    del loss
    ctx = box.pop()
    with raises(Exception, what="saved_tensors of a ctx stashed during a non-retaining backward"):
        adapter.saved_tensors(ctx)


@rule("gc_cycles.stashed-ctx-after-retained-backward")
def test_stashed_ctx_after_retained_backward(adapter, fw, device, observe):
    box = []
    Keep = _stashing_fn(adapter, fw, box, "backward")
    p = fw.zeros(1, requires_grad=True, device=device)
    loss = Keep.apply(p * 1.0)
    adapter.backward(loss, retain_graph=True)
    del loss
    ctx = box.pop()
    try:
        saved = adapter.saved_tensors(ctx)
        observe(f"returns {len(saved)} saved tensor(s)")
    except (Unsupported, Blocked):
        raise
    except Exception as exc:        # noqa: BLE001 - the observation records any refusal, by class
        observe(f"{type(exc).__name__}: {str(exc)[:60]}")


@rule("gc_cycles.dict-cycle-collected-unless-grad-holds-it")
@subject("grad=")
def test_dict_cycle_kept_by_grad_then_collected(fw, adapter, device):
    class Tracker:
        pass

    def scope():
        t1, t2 = Tracker(), Tracker()
        x = fw.zeros(2, device=device)
        y = fw.zeros(2, device=device)
        set_attr(x, "_tracker", t1)
        set_attr(y, "_tracker", t2)
        set_attr(x, "_loop", y)
        set_attr(y, "_loop", x)
        z = fw.zeros(2, device=device)
        adapter.set_grad(z, x)
        return weak(t1, "tracker in x.__dict__"), weak(t2, "tracker in y.__dict__"), z

    p1, p2, z = scope()
    # the collector must see tensor cycles at all, else "kept alive while z.grad holds it"
    # observes nothing and the end repeats the home rule
    _collector_sees_tensor_cycles(adapter, fw, device)
    collect()
    assert_alive(p1, "by gc.collect() while z.grad still refers to x (use-after-free risk)")
    assert_alive(p2, "by gc.collect() while z.grad still refers to x through x._loop")
    del z
    assert_freed(p1, by="gc", context="after z (the owner of .grad) died")
    assert_freed(p2, by="gc", context="after z (the owner of .grad) died")


@rule("gc_cycles.finalizer-collect-during-teardown-safe")
def test_finalizer_collect_in_legacy_function(fw, adapter, device):
    finalized = []

    class CollectOnDelete(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        def __del__(self):
            gc.collect()
            finalized.append(1)

    # That the Function records a node is checked once, on an output outside the loop: reading
    # the grad_fn of the graphs torn down below would hold them on a framework whose node
    # wrappers keep their graph (Paddle: engine.deep-graph-freed), not a teardown this rule judges.
    recorded = CollectOnDelete.apply(fw.randn(1, requires_grad=True, device=device) * 1.0)
    assert adapter.grad_fn(recorded) is not None, "the custom Function recorded no node: no graph to tear down"
    del recorded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(10):
            x = fw.randn(1, requires_grad=True, device=device)
            owner = CollectOnDelete()       # a Function instance the graph owns (in a hook)
            y = CollectOnDelete.apply(x * 1.0)
            y.register_hook(lambda g, owner=owner: g)
            del owner
            if i % 2:
                adapter.backward(y)
                np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [2.0])
            del y                           # teardown of the graph finalizes the instance
    collect()
    assert len(finalized) == 10, f"{len(finalized)} of 10 Function instances were finalized after their graphs died"


@rule("gc_cycles.finalizer-collect-during-teardown-safe")
def test_finalizer_collect_in_ctx_teardown(fw, adapter, device):
    ctx_attributes_kept(adapter, fw, device)
    finalized = []

    class Collector:
        def __del__(self):
            gc.collect()
            finalized.append(1)

    class Fn(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.res = Collector()
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return g * 2

    for i in range(10):
        x = fw.randn(3, requires_grad=True, device=device)
        with diverges_if_raises(AttributeError, what='an attribute set on ctx in forward'):
            y = fw.exp(Fn.apply(x * 1.0))
        if i % 2:
            adapter.backward(fw.sum(y))
            np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)),
                                       2 * np.exp(2 * adapter.to_numpy(x)), rtol=1e-5)
        del y
    collect()
    assert len(finalized) == 10, f"{len(finalized)} of 10 ctx finalizers ran after the graphs died"


# Frameworks may warn once per process (torch does): the rule is judged in a fresh interpreter.
# What the child runs is conformance/suites/_create_graph.py, read like any suite code.


@rule("gc_cycles.create-graph-backward-warns-cycle")
@needs("create_graph_backward")   # backward(create_graph=True): a keyword passed through the adapter
def test_create_graph_backward_warns(adapter, device):
    out = in_fresh_interpreter(adapter, fresh_script_calling(create_graph_cycle_warnings), device)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"the fresh interpreter printed no result (output: {out[-300:]!r})"
    warned = json.loads(lines[-1].split(" ", 1)[1])
    assert warned["grad"] == [], \
        f"autograd.grad(create_graph=True) warned about a reference cycle: {warned['grad'][:1]}"
    assert warned["backward"], \
        "backward(create_graph=True) did not warn about the param <-> grad reference cycle"


@rule("gc_cycles.create-graph-cycle-broken-by-clearing-grad")
def test_clearing_grad_breaks_create_graph_cycle(adapter, fw, device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with gc_disabled():
            def scope():
                b = fw.randn(3, requires_grad=True, dtype=fw.float64, device=device)
                c = b * b
                adapter.backward(c, fw.ones_like(c), create_graph=True)
                assert adapter.grad(b) is not None and adapter.grad_fn(adapter.grad(b)) is not None, \
                    "backward(create_graph=True) gave b.grad without a graph"
                return watch(adapter, device, adapter.grad(b), "b.grad (with its graph)"), b

            pg, b = scope()
            adapter.clear_grad(b)
            assert_freed(pg, by="refcount", context="after b.grad = None")
            pb = watch(adapter, device, b, "leaf b")
            del b
            assert_freed(pb, by="refcount", context="after b.grad = None and del b")


@rule("gc_cycles.garbage-cycle-does-not-free-live-graph")
@subject("view")
def test_garbage_cycle_does_not_free_live_graph(fw, adapter, device):
    def scope():
        inp = fw.randn(10, requires_grad=True, device=device)
        tmp = inp.view(10, 1)
        out = tmp.view(10)
        junk = [tmp]
        junk.append(junk)        # tmp is referenced only by this garbage cycle
        return inp, out

    inp, out = scope()
    collect()
    g = fw.randn(10, device=device)
    adapter.backward(out, g)
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(inp)), adapter.to_numpy(g),
                               err_msg="wrong gradient after gc.collect() reclaimed a cycle")


@rule("gc_cycles.node-metadata-cycle")
def test_node_metadata_cycle(fw, adapter, device, observe):
    adapter.require("node_metadata")
    x = fw.randn(3, requires_grad=True, device=device)

    def scope():
        b = x * 2
        try:
            adapter.grad_fn(b).metadata["t"] = b
        except (AttributeError, TypeError) as exc:
            raise Unsupported(f"{adapter.name}: node.metadata unusable ({type(exc).__name__})",
                              feature="node_metadata")
        return watch(adapter, device, b, "output stored in its own grad_fn.metadata")

    with gc_disabled():
        p = scope()
    collect()
    observe("collected by gc" if not p.alive() else "not collected (metadata not traversed)")
