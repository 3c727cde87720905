"""Suite `legacy_function`: custom autograd.Function semantics, legacy (instance) and new (static).

Rules: conformance/catalogue/legacy_function.toml. Functions are defined inside each test (they
need ``fw``). Error-message rules match the stable part of the message. Features a framework may
lack entirely (``ctx.mark_dirty``, ``once_differentiable``, ``setup_context``) are UNSUPPORTED there.
"""
from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import pytest

from conformance import liveness
from conformance.spelling import subject
from conformance.api import Blocked, Diverges, Unsupported, aside, diverges_if_raises, missing_method, prerequisite, raises, rule
from conformance.features import needs
from conformance.meanings import GRAPH_FREED_SAYS_WHAT_TO_DO, MISSING_BACKWARD, MISSING_FORWARD, NOT_AN_INPUT
from conformance.suites._helpers import (TENSOR_WEAKREF, ctx_attributes_kept, expect_refusal, inplace_on_saved_refused,
                                         key_words)

# the meaning of the freed-saved-tensors message: what happened, and retain_graph as the remedy
FREED_MEANING = GRAPH_FREED_SAYS_WHAT_TO_DO



def quietly(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def mark_dirty(adapter, ctx, *tensors):
    adapter.require("mark_dirty")
    fn = getattr(ctx, "mark_dirty", None)
    if fn is None:
        raise Unsupported(f"{adapter.name} has no ctx.mark_dirty", feature="mark_dirty")
    fn(*tensors)


def version(adapter, t):
    return adapter.feature("version_counter", lambda: adapter.version(t))


def once_differentiable(adapter, fw):
    return adapter.feature("once_differentiable", lambda: fw.autograd.function.once_differentiable)


def square_fn(adapter, fw):
    class Sq(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return 2 * x * g
    return Sq


def once_differentiable_square_fn(adapter, fw):
    """``square_fn`` with its backward marked ``once_differentiable``."""
    once = once_differentiable(adapter, fw)

    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return 2 * x * g
    return F


# --------------------------------------------------------------------------------------------
@rule("legacy_function.instance-call-raises")
def test_legacy_instance_call_raises(fw, device):
    class Legacy(fw.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, g):
            return g

    f = quietly(Legacy)
    with raises(Exception, what="Legacy()(x)"):  # refused; the class is engine.errors-are-runtime-errors
        f(fw.randn(3, 4, device=device))


@rule("legacy_function.instance-call-raises")
def test_instance_call_of_static_function_raises(fw, device):
    class Id(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    f = quietly(Id)
    with raises(Exception, what="Id()(x)"):
        f(fw.zeros(1, requires_grad=True, device=device))


@rule("legacy_function.instantiation-warns")
def test_instantiation_warns_deprecation(fw, adapter, device):
    class Id(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = Id()
    cats = [w.category.__name__ for w in caught]
    assert any(issubclass(w.category, DeprecationWarning) for w in caught), \
        f"Id() emitted no DeprecationWarning (warnings: {cats})"
    assert isinstance(f, Id), f"Id() returned {type(f).__name__}"
    x = fw.ones(2, requires_grad=True, device=device)
    adapter.backward(fw.sum(Id.apply(x)))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [1.0, 1.0])


@rule("legacy_function.bare-instance-node-attributes")
def test_bare_instance_node_attributes(fw, adapter, observe):
    class Id(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    f = quietly(Id)

    def probe(fn):
        try:
            return f"-> {fn()!r}"
        except (Unsupported, Blocked):
            raise
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:60]}"

    seen = {"name()": probe(lambda: f.name())}
    if aside(adapter, "graph_nodes", what="next_functions of a bare Function instance"):
        seen["next_functions"] = probe(lambda: f.next_functions)
    if aside(adapter, "node_metadata", what="metadata of a bare Function instance"):
        seen["metadata"] = probe(lambda: f.metadata)
    observe(seen)


@rule("legacy_function.apply-with-plain-methods")
def test_apply_with_plain_methods(fw, adapter, device):
    class Mul2(fw.autograd.Function):
        def forward(self, x):
            self.k = 2
            return x * 2

        def backward(self, g):
            return g * self.k

    x = fw.ones(3, requires_grad=True, device=device)
    with diverges_if_raises(AttributeError, what='self.k = 2 on the ctx in a plain-method forward'):
        y = Mul2.apply(x)
    np.testing.assert_allclose(adapter.to_numpy(y), [2.0, 2.0, 2.0])
    adapter.backward(fw.sum(y))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [2.0, 2.0, 2.0],
                               err_msg="ctx attribute set in a plain-method forward not seen in backward")


@rule("legacy_function.missing-forward-raises")
def test_missing_forward_raises(fw, device):
    class BadFw(fw.autograd.Function):
        @staticmethod
        def backward(ctx, g):
            return g

    inp = fw.ones(1, requires_grad=True, device=device)
    with raises(Exception, match=MISSING_FORWARD, what="apply without forward"):
        BadFw.apply(inp)


@rule("legacy_function.missing-backward-raises-at-backward")
def test_missing_backward_raises_at_backward(adapter, fw, device):
    class BadBw(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return fw.clone(x)

    inp = fw.ones(1, requires_grad=True, device=device)
    out = BadBw.apply(inp)          # building the graph must work
    if aside(adapter, "requires_grad_flag", what="the output requires grad"):
        assert adapter.requires_grad(out), "output of a Function without backward does not require grad"
    with raises(Exception, match=MISSING_BACKWARD, what="backward through a Function without backward"):
        adapter.backward(fw.sum(out))


@rule("legacy_function.saved-tensors-after-free-message")
def test_saved_tensors_after_free_message(adapter, fw, device):
    box = []

    class MyFn(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            box.append(ctx)
            ctx.save_for_backward(x)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            adapter.saved_tensors(ctx)
            return g

    a = fw.randn(5, requires_grad=True, device=device)
    y = MyFn.apply(a)
    adapter.backward(fw.sum(y))
    ctx = box.pop()
    # That reading them raises at all is engine.backward-frees-saved-tensors: without an error
    # there is no message to judge (BLOCKED by that rule, not a second DIVERGES).
    with prerequisite("engine.backward-frees-saved-tensors",
                      what="ctx.saved_tensors after backward") as pre:
        try:
            adapter.saved_tensors(ctx)
        except (Unsupported, Blocked):
            raise
        except Exception as exc:  # noqa: BLE001 - judged below by raises()
            error = exc
        else:
            error = None
        pre.check(error is not None, "reading a ctx's saved tensors after backward raises")
    with raises(Exception, match=FREED_MEANING, what="ctx.saved_tensors after backward"):
        raise error


@rule("legacy_function.save-none-roundtrip")
def test_save_none_roundtrip(fw, adapter, device):
    seen = []

    class MyFn(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            saved = adapter.saved_tensors(ctx)
            seen.append(saved)
            return g * 2

    a = fw.ones(3, requires_grad=True, device=device)
    with diverges_if_raises(RuntimeError, what='ctx.save_for_backward(x, None)'):
        adapter.backward(fw.sum(MyFn.apply(a)))
    (saved,) = seen
    assert len(saved) == 2, f"saved_tensors has {len(saved)} entries, expected 2"
    assert saved[1] is None, f"saved None came back as {saved[1]!r}"
    np.testing.assert_allclose(adapter.to_numpy(saved[0]), [1.0, 1.0, 1.0])


@rule("legacy_function.second-backward-without-retain-graph")
def test_second_backward_without_retain_graph(fw, adapter, device):
    Sq = square_fn(adapter, fw)
    x = fw.tensor([3.0], requires_grad=True, device=device)
    y = Sq.apply(x)
    adapter.backward(y, retain_graph=True)
    adapter.backward(y)
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [12.0],
                               err_msg="gradients of two retained backwards did not accumulate")
    with raises(Exception, what="third backward (graph freed)"):
        adapter.backward(y)


@rule("legacy_function.saved-tensors-version-check")
def test_saved_tensors_version_check(adapter, fw, device):
    inplace_on_saved_refused(adapter, fw, device)
    Sq = square_fn(adapter, fw)
    a = fw.ones(3, requires_grad=True, device=device)
    b = fw.clone(a)
    y = Sq.apply(b)
    adapter.inplace(b, "add_", 1)
    with raises(Exception, what="backward after the saved input was modified in place"):
        adapter.backward(fw.sum(y))


@rule("legacy_function.mark-dirty-returns-same-object")
def test_mark_dirty_returns_same_object(fw, adapter, device):
    class Inplace(fw.autograd.Function):   # applied in place: torch marks a dirty (adapter.apply_in_place)
        @staticmethod
        def forward(ctx, a, b):
            return adapter.inplace(a, "add_", b)

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = fw.randn(2, 2, device=device)
    y = fw.randn(2, 2, requires_grad=True, device=device)
    bumped = "the dirty input's version counter is bumped"
    v0 = None
    if aside(adapter, "version_counter", what=bumped):
        v0 = adapter.feature("version_counter", lambda: adapter.version(x))
    q = adapter.apply_in_place(Inplace, x, y)
    assert q is x, "the dirty input was returned as a different object"
    if aside(adapter, "requires_grad_flag", what="the dirty input requires grad after the Function"):
        assert adapter.requires_grad(q), "the dirty input does not require grad after the Function"
    if aside(adapter, "graph_nodes", what="the dirty input's grad_fn is the Function's node"):
        assert adapter.grad_fn(q) is not None, "the dirty input has no grad_fn after the Function"
    if aside(adapter, "version_counter", what=bumped):
        v1 = adapter.feature("version_counter", lambda: adapter.version(x))
        assert v1 > v0, f"version counter not bumped ({v0} -> {v1})"
    adapter.backward(fw.sum(q))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(y)), np.ones((2, 2)))


@rule("legacy_function.mark-dirty-leaf-raises")
@subject("view")
@pytest.mark.parametrize("target, make", [
    ("leaf", lambda leaf: leaf),
    ("slice", lambda leaf: leaf[:]),
    ("view", lambda leaf: leaf.view(2)),
], ids=["leaf", "slice", "view"])
def test_mark_dirty_leaf_raises(fw, adapter, device, target, make):
    """A custom Function applied in place (torch: it marks its input dirty) on a leaf that
    requires grad, and on a view of one (a slice, ``view``)."""
    class Dirty(fw.autograd.Function):   # applied in place: torch marks inp dirty (adapter.apply_in_place)
        @staticmethod
        def forward(ctx, inp):
            adapter.inplace(inp, "add_", 1)
            return inp

        @staticmethod
        def backward(ctx, g):
            return g

    leaf = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with raises(Exception, what=f"Dirty applied in place on the {target} of a leaf that requires grad"):
        adapter.apply_in_place(Dirty, make(leaf))


@rule("legacy_function.mark-dirty-not-returned-raises")
@needs("mark_dirty")   # required inside forward (the mark_dirty helper), unseen by the suite index
@subject("view")
def test_mark_dirty_not_returned_raises(fw, adapter, device):
    class NotReturned(fw.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            adapter.inplace(a, "add_", b)
            mark_dirty(adapter, ctx, a)
            return fw.clone(a), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, ga + 2 * gab

    a = fw.ones(2, requires_grad=True, device=device)
    b = fw.ones(2, requires_grad=True, device=device)
    with raises(Exception,
                what="mark_dirty on an input that is not returned"):
        NotReturned.apply(fw.clone(a), b)
    with raises(Exception,
                what="mark_dirty on an input (a view) that is not returned"):
        NotReturned.apply(fw.clone(a).view(2), b)


@rule("legacy_function.mark-dirty-non-input-reported")
@needs("mark_dirty")   # required inside forward (the mark_dirty helper), unseen by the suite index
@subject("view")
def test_mark_dirty_view_of_intermediate_raises(fw, adapter, device):
    class ViewOfIntermediate(fw.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            out = fw.clone(inp).view(2)
            mark_dirty(adapter, ctx, out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    a = fw.ones(2, requires_grad=True, device=device)
    with raises(Exception, match=NOT_AN_INPUT,
                what="mark_dirty on a view of an intermediate"):
        ViewOfIntermediate.apply(fw.clone(a))


@pytest.mark.parametrize("materialize", [True, False], ids=["default-zeros", "none"])
@rule("legacy_function.materialize-grads")
def test_materialize_grads(fw, adapter, device, materialize):
    seen = []

    class Two(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if not materialize:
                try:  # a missing method is a missing feature, judged after apply
                    setter = adapter.feature("set_materialize_grads", ctx, "set_materialize_grads")
                except Unsupported as exc:  # a copy: no traceback into this frame (ctx)
                    seen.append(copy.copy(exc))
                    return fw.clone(x), fw.clone(x)
                setter(False)
            return fw.clone(x), fw.clone(x)

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2)
            return g1

    x = fw.ones(2, requires_grad=True, device=device)
    with diverges_if_raises(AttributeError, what='ctx.set_materialize_grads'):
        out = Two.apply(x)[0]
    if seen and isinstance(seen[0], Unsupported):
        raise seen[0]
    adapter.backward(fw.sum(out))
    (g2,) = seen
    if materialize:
        assert g2 is not None, "unused output's grad is None although grads are materialised by default"
        np.testing.assert_allclose(adapter.to_numpy(g2), [0.0, 0.0])
    else:
        assert g2 is None, f"set_materialize_grads(False), but backward got {g2!r}"
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [1.0, 1.0])


@rule("legacy_function.materialize-grads")
def test_materialized_zero_grad_is_a_well_formed_tensor(fw, adapter, device):
    seen = []

    class Two(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return fw.clone(x), fw.clone(x)

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2)
            return g1

    x = fw.ones(2, requires_grad=True, device=device, dtype=fw.float64)
    adapter.backward(fw.sum(Two.apply(x)[0]))
    (g2,) = seen
    assert isinstance(g2, fw.Tensor), f"the materialised gradient is a {type(g2).__name__}"
    with diverges_if_raises(Exception, what="reading the materialised zero gradient (dtype, shape, repr)"):
        dtype, shape, text = g2.dtype, tuple(g2.shape), repr(g2)
        zeros = adapter.to_numpy(g2 * 1)
    assert dtype == x.dtype, f"the materialised gradient has dtype {dtype}, the output {x.dtype}"
    assert shape == (2,), f"the materialised gradient has shape {shape}"
    assert text, "repr() of the materialised gradient is empty"
    np.testing.assert_allclose(zeros, [0.0, 0.0])


@rule("legacy_function.once-differentiable-no-grad")
def test_once_differentiable_runs_without_grad(fw, adapter, device):
    once = once_differentiable(adapter, fw)
    inside = []

    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            r = 2 * x * g
            inside.append(adapter.requires_grad(x * 1.0))
            return r

    x = fw.tensor([3.0], requires_grad=True, device=device)
    (g,) = fw.autograd.grad(F.apply(x), x, create_graph=True)
    assert inside == [False], "a tensor computed from a saved tensor requires grad inside a once_differentiable backward"
    assert not adapter.requires_grad(g), "result requires grad although grad_output did not"
    np.testing.assert_allclose(adapter.to_numpy(g), [6.0])


@rule("legacy_function.once-differentiable-double-backward-raises")
def test_once_differentiable_double_backward_raises(fw, adapter, device):
    F = once_differentiable_square_fn(adapter, fw)
    x = fw.tensor([3.0], requires_grad=True, device=device)
    go = fw.ones(1, requires_grad=True, device=device)
    (g,) = fw.autograd.grad(F.apply(x), x, grad_outputs=go, create_graph=True)
    if aside(adapter, "requires_grad_flag", what="the result requires grad (it carries the error node)"):
        assert adapter.requires_grad(g), "with a differentiable grad_output, the result should carry an error node"
    with raises(Exception,
                what="double backward through once_differentiable"):
        adapter.backward(g)


@rule("legacy_function.once-differentiable-error-node-keeps-no-history")
def test_once_differentiable_result_does_not_keep_grad_output_history(fw, adapter, device):
    F = once_differentiable_square_fn(adapter, fw)
    x = fw.tensor([3.0], requires_grad=True, device=device)
    w = fw.ones(1, requires_grad=True, device=device)
    go = w * 2                             # a grad_output with a history of its own (w)
    (g,) = fw.autograd.grad(F.apply(x), x, grad_outputs=go, create_graph=True)
    if aside(adapter, "requires_grad_flag", what="the result requires grad (it carries the error node)"):
        assert adapter.requires_grad(g), "with a differentiable grad_output, the result should carry an error node"
    probe = liveness.watch(w, "w, the leaf in grad_output's history", adapter, device, allow_hook=False)
    del w, go
    liveness.assert_freed(probe, by="gc", context="(only the once_differentiable result g is kept)")
    with raises(Exception, what="double backward through once_differentiable"):
        adapter.backward(fw.sum(g))


@rule("legacy_function.input-returned-as-is-keeps-class")
@subject("requires_grad_")
def test_input_returned_as_is_keeps_its_subclass(fw, adapter, device):
    class Tagged(fw.Tensor):
        pass

    class Identity(fw.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    x = adapter.subclass_instance(Tagged, fw.ones(2, device=device))
    x.requires_grad_()
    # a refusal is the verdict, not an ERROR: the rule asks for a new tensor back (Paddle's PyLayer
    # takes an input returned as-is for an in-place op, and refuses it on a leaf)
    with diverges_if_raises(Exception, what="apply of a Function whose forward returns its input as-is"):
        y = Identity.apply(x)
    assert y is not x, "apply returned the input object itself (it must be a new tensor with the Function's node)"
    assert type(y) is Tagged, f"an input returned as-is came back as {type(y).__name__}, not {Tagged.__name__}"
    adapter.backward(fw.sum(y))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [1.0, 1.0])


def _needs_input_grad(adapter, ctx):
    """``ctx.needs_input_grad`` as a tuple, or the Unsupported a framework without it raises (kept,
    not raised inside the framework's forward: a test that reads it raises it after apply)."""
    try:
        return tuple(adapter.needs_input_grad(ctx))
    except Unsupported as exc:
        return exc


def _needed(log, key):
    """What ``_needs_input_grad`` recorded under ``key``: the tuple, or its Unsupported raised."""
    if isinstance(log[key], Unsupported):
        raise log[key]
    return log[key]


def _non_tensor_fn(adapter, fw, log):
    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, t, scale, flag):
            log["needs_input_grad"] = _needs_input_grad(adapter, ctx)
            return t * scale, "bar", None

        @staticmethod
        def backward(ctx, g, g_str, g_none):
            return None, None, None
    return F


@rule("legacy_function.non-tensor-outputs-pass-through")
def test_non_tensor_outputs_pass_through(adapter, fw, device):
    log = {}

    class F(fw.autograd.Function):   # one tensor input: the rule is about the outputs alone
        @staticmethod
        def forward(ctx, t):
            return t * 3, "bar", None

        @staticmethod
        def backward(ctx, g, *rest):   # rest: the gradients of the str and None outputs
            log["grads"] = rest
            return g * 3

    x = fw.ones(2, requires_grad=True, device=device)
    with diverges_if_raises(RuntimeError, TypeError, what="apply with non-tensor outputs"):
        y, s, n = F.apply(x)
    assert s == "bar" and type(s) is str, f"non-tensor output came back as {s!r}"
    assert n is None, f"None output came back as {n!r}"
    if aside(adapter, "requires_grad_flag", what="the tensor output requires grad"):
        assert adapter.requires_grad(y)
    adapter.backward(fw.sum(y))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [3.0, 3.0])
    assert log.get("grads") == (None, None), \
        f"backward got {log.get('grads')!r} as the gradients of the two non-tensor outputs, not (None, None)"


@rule("legacy_function.needs-input-grad")
def test_needs_input_grad(adapter, fw, device):
    with prerequisite("legacy_function.non-tensor-outputs-pass-through",
                      what="apply with an int input and non-tensor outputs") as pre:
        class Pass(fw.autograd.Function):
            @staticmethod
            def forward(ctx, t, scale):
                return t * scale, "bar"

            @staticmethod
            def backward(ctx, g, g_str):
                return g, None

        out, tag = Pass.apply(fw.ones(2, requires_grad=True, device=device), 3)
        pre.check(tag == "bar" and adapter.to_numpy(out).tolist() == [3.0, 3.0],
                  f"apply passed the int in and the str out (got {tag!r})")
    log = {}
    F = _non_tensor_fn(adapter, fw, log)
    x = fw.ones(2, requires_grad=True, device=device)
    with diverges_if_raises(RuntimeError, TypeError, what="apply with non-tensor inputs/outputs"):
        F.apply(x, 3, True)
    needed = _needed(log, "needs_input_grad")
    assert needed == (True, False, False), f"needs_input_grad = {needed}"
    log.clear()
    F.apply(fw.ones(2, requires_grad=True, device=device) * fw.ones(2, device=device), 3, True)
    assert _needed(log, "needs_input_grad") == (True, False, False)


@rule("legacy_function.needs-input-grad")
def test_needs_input_grad_false_for_a_tensor_without_grad(adapter, fw, device):
    seen = []

    class Mul(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            try:
                seen.append(tuple(adapter.needs_input_grad(ctx)))
            except Exception as exc:  # noqa: BLE001 - judged after apply, outside the framework's forward
                seen.append(exc)
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g, g

    Mul.apply(fw.ones(2, requires_grad=True, device=device), fw.ones(2, device=device))
    if seen and isinstance(seen[0], Unsupported):
        raise seen[0]
    if seen and isinstance(seen[0], Exception):
        if missing_method(seen[0]):  # the ctx has no such attribute: a missing feature
            raise Unsupported(f"the Function context has no needs_input_grad ({seen[0]})",
                              feature="needs_input_grad")
        raise Diverges(f"ctx.needs_input_grad raised {type(seen[0]).__name__}: {seen[0]}")
    assert seen == [(True, False)], f"needs_input_grad = {seen[0] if seen else None} for (requires grad, does not)"


@rule("legacy_function.none-grads-leave-grad-unset")
def test_none_grads_leave_grad_unset(adapter, fw, device):
    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, t, u):
            return t * u

        @staticmethod
        def backward(ctx, g):
            return None, None

    x = fw.ones(2, requires_grad=True, device=device)
    u = fw.ones(2, requires_grad=True, device=device)
    with diverges_if_raises(RuntimeError, what="backward returning None for inputs that require grad"):
        adapter.backward(fw.sum(F.apply(x, u)))
    assert adapter.grad(x) is None, f"backward returned None, but x.grad = {adapter.grad(x)!r}"
    assert adapter.grad(u) is None, f"backward returned None, but u.grad = {adapter.grad(u)!r}"


@rule("legacy_function.none-grads-leave-grad-unset")
def test_none_grad_passes_through_built_in_ops(adapter, fw, device):
    class Stop(fw.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return None

    x = fw.ones(2, requires_grad=True, device=device)
    with diverges_if_raises(TypeError, RuntimeError,
                            what="None from a custom backward reaching built-in ops (pow, exp, mul)"):
        adapter.backward(fw.sum(Stop.apply(fw.exp(x ** 2) * 3)))
    assert adapter.grad(x) is None, f"backward returned None, but x.grad = {adapter.grad(x)!r}"


def _require_setup_context(adapter, fw):
    """The setup_context style needs ``Function.setup_context`` (torch 2.0+): a framework whose
    Function class has no such attribute lacks the feature (UNSUPPORTED), it does not diverge."""
    adapter.feature("setup_context", fw.autograd.Function, "setup_context")


def _setup_context_square(adapter, fw):
    _require_setup_context(adapter, fw)

    class MySquare(fw.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)
            ctx.two = 2.0

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return g * ctx.two * x
    return MySquare


@rule("legacy_function.setup-context-style")
def test_setup_context_style(fw, adapter, device):
    MySquare = _setup_context_square(adapter, fw)
    x = fw.tensor([1.5, -2.0], requires_grad=True, device=device)
    with diverges_if_raises(TypeError, what="Function with setup_context (forward without ctx)"):
        y = MySquare.apply(x)
    np.testing.assert_allclose(adapter.to_numpy(y), [2.25, 4.0])
    (gx,) = fw.autograd.grad(fw.sum(y), x)
    np.testing.assert_allclose(adapter.to_numpy(gx), [3.0, -4.0])


@rule("legacy_function.setup-context-gets-defaults")
def test_setup_context_sees_forward_defaults(fw, adapter, device):
    _require_setup_context(adapter, fw)
    seen = []

    class Scale(fw.autograd.Function):
        @staticmethod
        def forward(x, k=3.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(tuple(inputs))
            ctx.k = inputs[-1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = fw.tensor([1.0, 2.0], requires_grad=True, device=device)
    with diverges_if_raises(TypeError, what="Function with setup_context (forward without ctx)"):
        y = Scale.apply(x)
    assert len(seen) == 1, f"setup_context ran {len(seen)} time(s) for one apply"
    (inputs,) = seen
    assert len(inputs) == 2, f"setup_context got {len(inputs)} input(s), not 2: forward's default k is missing"
    assert inputs[0] is x and inputs[1] == 3.0, f"setup_context got {inputs!r}"
    adapter.backward(fw.sum(y))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [3.0, 3.0])


def _ctx_style_cube(adapter, fw):
    class Cube(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.three = 3.0
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = adapter.saved_tensors(ctx)
            return g * ctx.three * x * x
    return Cube


@pytest.mark.parametrize("style", ["ctx-in-forward", "setup-context"])
@rule("legacy_function.fresh-ctx-per-apply")
def test_fresh_ctx_per_apply(fw, adapter, device, style):
    if style == "ctx-in-forward":
        ctx_attributes_kept(adapter, fw, device)
    if style == "setup-context":
        F, deriv = _setup_context_square(adapter, fw), (lambda v: 2 * v)
    else:
        F, deriv = _ctx_style_cube(adapter, fw), (lambda v: 3 * v * v)
    x1 = fw.tensor([2.0], requires_grad=True, device=device)
    x2 = fw.tensor([5.0], requires_grad=True, device=device)
    with diverges_if_raises(TypeError, what=f"Function in {style} style"):
        with diverges_if_raises(AttributeError, what='an attribute set on ctx'):
            y1 = F.apply(x1)
        y2 = F.apply(x2)
    adapter.backward(y1)
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x1)), [deriv(2.0)],
                               err_msg="backward of the first apply used another call's saved state")
    assert adapter.grad(x2) is None
    adapter.backward(y2)
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x2)), [deriv(5.0)])


@rule("legacy_function.kwargs-are-inputs")
def test_kwargs_are_inputs(fw, adapter, device):
    log = {}

    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, w=None):
            log["ran"] = True
            if aside(adapter, "needs_input_grad", what="a keyword input counts in needs_input_grad"):
                try:   # raised after apply, not inside the framework's forward
                    log["needs"] = tuple(adapter.needs_input_grad(ctx))
                except Unsupported as exc:
                    log["needs"] = exc
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = adapter.saved_tensors(ctx)
            return g * w, g * x

    x = fw.ones(2, requires_grad=True, device=device)
    w = fw.full((2,), 3.0, requires_grad=True, device=device)
    try:
        y = F.apply(x, w=w)
    except (Unsupported, Blocked, Diverges):
        raise
    except TypeError as exc:
        if "ran" not in log:   # forward never ran: apply takes no keyword form at all
            raise Unsupported(f"Function.apply takes no keyword arguments ({exc})",
                              feature="apply(keyword=)") from exc
        raise Diverges(f"apply with a keyword argument: forward ran, then TypeError: {exc}") from exc
    adapter.backward(fw.sum(y))
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [3.0, 3.0])
    assert adapter.grad(w) is not None, "tensor passed by keyword received no gradient"
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(w)), [1.0, 1.0])
    if "needs" in log:
        needs = _needed(log, "needs")
        assert needs == (True, True), f"needs_input_grad = {needs} with w passed by keyword"


@rule("legacy_function.output-container-preserved")
def test_output_container_preserved(fw, device):
    class T(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2,)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class L(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2, x * 3]

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    class B(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = fw.ones(2, requires_grad=True, device=device)
    with diverges_if_raises(RuntimeError, TypeError, what="forward returning a tuple or a list"):
        t, lst, b = T.apply(x), L.apply(x), B.apply(x)
    assert type(t) is tuple and len(t) == 1, f"1-tuple came back as {type(t).__name__}"
    assert type(lst) is list and len(lst) == 2, f"list came back as {type(lst).__name__}"
    assert isinstance(b, fw.Tensor), f"bare tensor came back as {type(b).__name__}"


@pytest.mark.parametrize("returned", [1, 3], ids=["too-few", "too-many"])
@rule("legacy_function.wrong-number-of-grads-raises")
def test_wrong_number_of_grads_raises(adapter, fw, device, returned):
    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,) * returned

    x = fw.ones(2, requires_grad=True, device=device)
    y = fw.ones(2, requires_grad=True, device=device)
    try:
        # (torch.compile traces the backward when the Function is applied: a refusal may come
        # there; the message is judged wherever it comes)
        out = F.apply(x, y)
        adapter.backward(fw.sum(out))
    except Unsupported:  # the adapter's: a framework whose protocol has no gradient count
        raise
    except Exception as exc:  # noqa: BLE001 - any class; the message is the rule
        message = str(exc)
    else:
        raise Diverges(f"backward returning {returned} gradients for 2 inputs raised nothing")
    # the node (F, FBackward, or a prefixed node name such as GradNodePyLayer_F), the expected count
    # and the count returned: key words, not torch's sentence
    missing = key_words(message, r"(\b|_)F(Backward)?\b", r"\b2\b", rf"\b{returned}\b")
    assert not missing, (f"the error for {returned} gradients returned for 2 inputs does not name "
                         f"{missing}: {message[:200]!r}")


@rule("legacy_function.grad-fn-name")
def test_grad_fn_name(fw, adapter, device):
    # The plain naming is identity.custom-function-node-name's own check (the same behaviour):
    # here it is a prerequisite, and this rule judges only a subclass of a Function. Names are
    # read in the framework's own spelling (adapter.node_name): FBackward, F_backward,
    # GradNodePyLayer_F all name F.
    class MyFn(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class SubFn(MyFn):
        pass

    x = fw.ones(2, requires_grad=True, device=device)
    with prerequisite("identity.custom-function-node-name", "a Function's node named after it") as pre:
        name = adapter.node_name(adapter.grad_fn(MyFn.apply(x)))
        pre.check(_names(name, "MyFn"), f"MyFn's node names MyFn (it is named {name!r})")
    name = adapter.node_name(adapter.grad_fn(SubFn.apply(x)))
    assert _names(name, "SubFn"), f"the node of SubFn (a subclass of MyFn) is named {name!r}, not after SubFn"
    assert not _names(name, "MyFn"), f"the node of SubFn is named {name!r}, after its base class MyFn"


def _names(node_name: str, function: str) -> bool:
    """Whether ``node_name`` names ``function`` as a word of it, in any spelling (``FBackward``,
    ``F_backward``, ``GradNodePyLayer_F``), not as part of a longer name."""
    return re.search(rf"(?<![A-Za-z0-9]){function}(?![a-z0-9])", node_name) is not None


# -- what a custom backward may return -------------------------------------------------------

def _returning(fw, make):
    """A Function ``y = x * 2`` whose backward returns ``make(g)`` instead of a gradient."""
    class F(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return make(g)
    return F


def _backward_runs(adapter, fw, device):
    """The control of a refusal check: the same Function returning a well-formed gradient runs
    and fills x.grad (else the refusal says nothing about what backward returned)."""
    with prerequisite("legacy_function.apply-with-plain-methods",
                      what="a custom backward returning a gradient of the input's shape") as pre:
        x = fw.ones(2, requires_grad=True, device=device)
        adapter.backward(fw.sum(_returning(fw, lambda g: g * 2).apply(x)))
        grad = adapter.grad(x)
        pre.check(grad is not None and adapter.to_numpy(grad).tolist() == [2.0, 2.0],
                  f"backward filled x.grad with [2, 2] (x.grad = {grad!r})")


def _refused_and_unset(adapter, fw, device, make, what):
    _backward_runs(adapter, fw, device)
    x = fw.ones(2, requires_grad=True, device=device)
    y = _returning(fw, make).apply(x)
    expect_refusal(lambda: adapter.backward(fw.sum(y)), f"backward with a custom backward returning {what}")
    grad = adapter.grad(x)
    assert grad is None, (f"the refused result reached the input: x.grad of shape "
                          f"{adapter.to_numpy(grad).shape} = {adapter.to_numpy(grad).tolist()}")


@rule("legacy_function.backward-result-shape-checked")
@pytest.mark.parametrize("shape", [(3,), (1,), ()], ids=["other-shape", "smaller", "0-dim"])
def test_backward_result_of_a_wrong_shape_is_refused(adapter, fw, device, shape):
    _refused_and_unset(adapter, fw, device, lambda g: fw.full(shape, 1.0, device=device),
                       f"a tensor of shape {shape} for a (2,) input")


@rule("legacy_function.backward-result-shape-checked")
def test_backward_result_of_a_broadcast_shape_is_summed_to_the_input(adapter, fw, device):
    x = fw.ones(2, requires_grad=True, device=device)
    y = _returning(fw, lambda g: fw.full((3, 2), 1.0, device=device)).apply(x)
    with diverges_if_raises(Exception, what="backward with a (3, 2) result for a (2,) input"):
        adapter.backward(fw.sum(y))
    grad = adapter.grad(x)
    assert grad is not None, "a (3, 2) result for a (2,) input left x.grad unset"
    np.testing.assert_allclose(adapter.to_numpy(grad), [3.0, 3.0],
                               err_msg="a (3, 2) result is not summed to the (2,) input's shape")


@rule("legacy_function.backward-result-cast-to-input-dtype")
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_backward_result_of_another_dtype_is_cast_to_the_input_dtype(adapter, fw, device, dtype):
    x = fw.ones(2, requires_grad=True, device=device)
    y = _returning(fw, lambda g: fw.full((2,), 3, dtype=getattr(fw, dtype), device=device)).apply(x)
    with diverges_if_raises(Exception, what=f"backward with a {dtype} result for a float32 input"):
        adapter.backward(fw.sum(y))
    grad = adapter.grad(x)
    assert grad is not None, f"a {dtype} result left x.grad unset"
    got, want = adapter.to_numpy(grad), adapter.to_numpy(x)
    assert got.dtype == want.dtype, f"x.grad has dtype {got.dtype}, the input {want.dtype} (backward returned {dtype})"
    np.testing.assert_allclose(got, [3.0, 3.0], err_msg="the cast gradient lost the returned values")


@rule("legacy_function.backward-result-must-be-tensor")
@pytest.mark.parametrize("value", [1, 1.5, [1.0, 1.0]], ids=["int", "float", "list"])
def test_backward_result_that_is_no_tensor_is_refused(adapter, fw, device, value):
    _refused_and_unset(adapter, fw, device, lambda g: value, repr(value))


@rule("legacy_function.backward-result-not-aliased")
def test_backward_result_the_user_holds_is_not_the_grad(adapter, fw, device):
    kept = []

    def make(g):
        r = fw.full((2,), 5.0, device=device)
        kept.append(r)
        return r

    F = _returning(fw, make)
    x = fw.ones(2, requires_grad=True, device=device)
    adapter.backward(fw.sum(F.apply(x)))
    assert len(kept) == 1, f"the custom backward ran {len(kept)} times in one backward"
    np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [5.0, 5.0],
                               err_msg="x.grad is not what the custom backward returned")
    first = 5.0
    if aside(adapter, "inplace_methods", "grad_modes", what="an in-place change of the returned tensor leaves x.grad"):
        with fw.no_grad():   # the user's own buffer, which needs no gradient: an untracked write
            adapter.inplace(kept[0], "add_", 1)
        first = 6.0
        np.testing.assert_allclose(adapter.to_numpy(adapter.grad(x)), [5.0, 5.0],
                                   err_msg="changing the tensor backward returned (held by the user) changed x.grad")
    with prerequisite("engine.accumulate-across-calls", what="a second backward") as pre:
        adapter.backward(fw.sum(F.apply(x)))
        got = adapter.to_numpy(adapter.grad(x)).tolist()
        pre.check(got == [10.0, 10.0], f"it accumulated into x.grad (x.grad {got}, expected [10, 10])")
    np.testing.assert_allclose(adapter.to_numpy(kept[0]), [first] * 2,
                               err_msg="accumulating into x.grad changed the tensor the first backward returned")


@rule("legacy_function.backward-result-for-input-without-gradient")
def test_backward_result_for_a_number_input_is_refused(adapter, fw, device):
    _backward_runs(adapter, fw, device)

    ran = []

    class ByNumber(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ran.append(k)
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * 3, g

    x = fw.ones(2, requires_grad=True, device=device)
    try:
        y = ByNumber.apply(x, 3)
    except (Unsupported, Blocked, Diverges):
        raise
    except Exception as exc:
        if not ran:   # refused before forward ran: apply takes no number arguments at all
            raise Unsupported(f"Function.apply takes no number argument ({type(exc).__name__}: {exc})",
                              feature="apply(number input)") from exc
        raise
    expect_refusal(lambda: adapter.backward(fw.sum(y)),
                   "backward with a custom backward returning a gradient for the number input k")
    grad = adapter.grad(x)
    assert grad is None, f"backward was refused, yet x.grad = {adapter.to_numpy(grad).tolist()}"


@rule("legacy_function.backward-result-for-input-without-gradient")
@needs("requires_grad_flag")   # the premise: c does not require grad (a framework without the flag has no such tensor)
def test_backward_result_for_a_constant_tensor_is_dropped(adapter, fw, device):
    class ByConstant(fw.autograd.Function):
        @staticmethod
        def forward(ctx, x, c):
            return x * c

        @staticmethod
        def backward(ctx, g):
            return g * 2, g * 5

    x = fw.ones(2, requires_grad=True, device=device)
    c = fw.ones(2, device=device)
    with diverges_if_raises(Exception, what="backward with a gradient returned for a constant tensor input"):
        adapter.backward(fw.sum(ByConstant.apply(x, c)))
    grad = adapter.grad(x)
    assert grad is not None, "the input that requires grad got no gradient"
    np.testing.assert_allclose(adapter.to_numpy(grad), [2.0, 2.0], err_msg="x.grad is not backward's first result")
    assert adapter.grad(c) is None, (f"a tensor that does not require grad got the gradient returned in its "
                                     f"slot: c.grad = {adapter.to_numpy(adapter.grad(c)).tolist()}")
