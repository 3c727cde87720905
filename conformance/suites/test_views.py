"""Suite `views`: views, and in-place ops on them.

Rules: conformance/catalogue/views.toml. A view shares its base's memory and version counter;
an in-place op on a view rewrites the base's history and the view's. Gradients are compared
through numpy; lifetimes through conformance/liveness.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from conformance import liveness
from conformance.spelling import subject
from conformance.api import (Blocked, Unsupported, aside, diverges_if_raises, missing_method, prerequisite,
                             raises, rule)
from conformance.suites._helpers import (TENSOR_WEAKREF, inplace_on_saved_refused, producer, set_attr,
                                         tensor_weakref)

#: An in-place op on a view writes the base and rewrites its history.
VIEW_WRITE = "views.inplace-on-view-rewrites-base"



def close(adapter, t, expected, what="values"):
    assert t is not None, f"{what}: None (no gradient reached it)"
    np.testing.assert_allclose(adapter.to_numpy(t), np.asarray(expected, dtype=np.float64),
                               rtol=1e-6, err_msg=what)


def version(adapter, t):
    adapter.require("version_counter")
    try:
        return adapter.version(t)
    except AttributeError as exc:
        raise Unsupported(f"no version counter: {exc}", feature="version_counter") from exc


def is_view(t):
    method = getattr(t, "_is_view", None)
    if method is None:
        raise Unsupported("no Tensor._is_view()", feature="Tensor._is_view")
    return method()


def probe(adapter, device, t, what):
    """A probe on ``t`` itself (no hook sentinel) through a channel that passed its positive
    control; a framework with no such channel leaves the test BLOCKED by the weakref rule (the
    same outcome as in every other suite)."""
    return liveness.watch(t, what, adapter, device, allow_hook=False)


def write_through_view(adapter, fw, leaf, base, write, values, grad=None, what="an in-place op on a view"):
    """Run ``write`` (an in-place op on a view of ``base``) as a prerequisite: it must reach the
    base (``base`` then holds ``values``) and, given ``grad``, be recorded in the base's history
    (``d base.sum() / d leaf == grad``, the graph kept). Else BLOCKED by the rule that in-place ops
    on views rewrite the base: a write that silently skips the base is not this test's finding."""
    with prerequisite(VIEW_WRITE, what=what) as pre:
        write()
        got = adapter.to_numpy(fw.detach(base))
        pre.check(np.allclose(got, values), f"the write reached the base (expected {values}, got {got.tolist()})")
        if grad is not None:
            g = fw.autograd.grad(fw.sum(base), leaf, retain_graph=True)[0]
            got = adapter.to_numpy(g)
            pre.check(np.allclose(got, grad), f"the base's history records the write "
                      f"(d base.sum()/d leaf expected {grad}, got {got.tolist()})")


def recorded_inplace_on_view(adapter, fw, device):
    """``a`` a leaf, ``b = a * 1`` and ``b[1:3] *= 2``; returns (a, b, the view)."""
    a = fw.ones(4, requires_grad=True, device=device)
    b = a * 1
    v = b[1:3]
    with diverges_if_raises(RuntimeError, what="in-place op on a view of a non-leaf"):
        adapter.inplace(v, "mul_", 2)
    return a, b, v


@rule("views.view-shares-version-counter")
def test_inplace_on_view_or_base_bumps_both_versions(adapter, fw, device):
    b = fw.zeros(4, device=device)
    v = b[:2]
    before = version(adapter, b), version(adapter, v)
    adapter.inplace(v, "add_", 1)
    after_view = version(adapter, b), version(adapter, v)
    assert after_view[0] > before[0] and after_view[0] == after_view[1], \
        f"versions (base, view): {before} before, {after_view} after an in-place op on the view"
    adapter.inplace(b, "mul_", 2)
    after_base = version(adapter, b), version(adapter, v)
    assert after_base[0] > after_view[0] and after_base[0] == after_base[1], \
        f"versions (base, view): {after_view} before, {after_base} after an in-place op on the base"


@rule("views.is-view-and-base")
@subject("view")
def test_is_view_and_base_name_the_owner(adapter, fw, device):
    b = fw.zeros(2, 3, device=device)
    row = b[0]
    assert is_view(row) and row._base is b, "b[0] is not reported as a view of b"
    assert row[1:]._base is b, "a view of a view does not name the original base"
    assert fw.t(b)._base is b, "t() not reported as a view of b"
    if aside(adapter, "view_method", what="b.view(6) is reported as a view of b"):
        assert is_view(b.view(6)), "view() not reported as a view of b"
    assert not is_view(fw.detach(b)) and fw.detach(b)._base is None, "detach() reported as a view"
    assert not is_view(b[[0, 1]]), "indexing with a list (a copy) reported as a view"
    assert not is_view(b) and b._base is None, "a tensor that is no view reported as one"


@rule("views.inplace-on-view-rewrites-base")
def test_inplace_on_view_is_in_base_gradient(adapter, fw, device):
    a = fw.ones(4, requires_grad=True, device=device)
    b = a * 1
    old = None
    if aside(adapter, "graph_nodes", what="the base's grad_fn changes"):
        old = adapter.grad_fn(b)
    v = b[1:3]
    with diverges_if_raises(RuntimeError, what="in-place op on a view of a non-leaf"):
        adapter.inplace(v, "mul_", 2)
    if aside(adapter, "graph_nodes", what="the base's grad_fn changes"):
        assert adapter.grad_fn(b) is not old, "the base kept its old grad_fn after an in-place op on its view"
    adapter.backward(fw.sum(b))
    close(adapter, adapter.grad(a), [1, 2, 2, 1], "a.grad after b[1:3].mul_(2); b.sum().backward()")
    a2, _, v2 = recorded_inplace_on_view(adapter, fw, device)
    adapter.backward(fw.sum(v2))
    close(adapter, adapter.grad(a2), [0, 2, 2, 0], "a.grad from the view after the in-place op on it")


@rule("views.view-history-follows-base")
def test_earlier_views_follow_in_place_changes(adapter, fw, device):
    a = fw.ones(4, requires_grad=True, device=device)
    b = a * 1
    v1 = b[1:]
    v2 = v1[1:]
    write_through_view(adapter, fw, a, b, lambda: adapter.inplace(v2, "mul_", 5),
                       [1, 1, 5, 5], grad=[1, 1, 5, 5], what="b[1:][1:].mul_(5)")
    adapter.backward(fw.sum(v1))
    close(adapter, adapter.grad(a), [0, 1, 5, 5], "gradient through b[1:] after b[1:][1:].mul_(5)")
    adapter.clear_grad(a)
    b2 = a * 1
    w = b2[:2]
    adapter.inplace(b2, "mul_", 3)
    adapter.backward(fw.sum(w))
    close(adapter, adapter.grad(a), [3, 3, 0, 0], "gradient through b[:2] taken before b.mul_(3)")


def view_write_reaches_base(adapter, fw, device, make_view, spelling):
    """Prerequisite of judging a write through a view of a leaf: the spelling's write reaches a
    plain tensor it was taken from (else the write never touches the leaf, and accepting it says
    nothing about leaves). ``x.view`` whose writes do not reach its base lacks the feature
    (``view_method``: a tensor of another shape sharing the same memory); a slice whose writes
    are lost is BLOCKED by the rule that in-place ops on views reach the base."""
    p = fw.ones(4, device=device)
    view = None
    if spelling != "setitem":   # (item assignment takes no view first: tinygrad refuses a tensor with other uses)
        try:
            view = make_view(p)
        except AttributeError as exc:   # a spelling the framework lacks (no narrow): UNSUPPORTED
            name = missing_method(exc)
            if not name:
                raise
            raise Unsupported(f"no Tensor.{name}: {exc}", feature=name) from exc
    with prerequisite(VIEW_WRITE, what=f"a write through {spelling} of a plain tensor") as pre:
        if spelling == "setitem":
            p[0:2] = fw.ones(2, device=device) * 2
        else:
            adapter.inplace(view, "mul_", 2)
        got = adapter.to_numpy(p).tolist()
        expected = LEAF_DOUBLED[spelling]
        if spelling == "view" and got != expected:
            raise Unsupported(f"a write through x.view(2, 2) does not reach x (x became {got})",
                              feature="view_method")
        pre.check(got == expected, f"the write through {spelling} reached the tensor "
                                   f"(expected {expected}, got {got})")


#: a tensor of ones once the elements the spelling's view covers are doubled
LEAF_DOUBLED = {"slice": [2.0, 2.0, 1.0, 1.0], "full-slice": [2.0, 2.0, 2.0, 2.0],
                "view": [2.0, 2.0, 2.0, 2.0], "narrow": [2.0, 2.0, 1.0, 1.0],
                "setitem": [2.0, 2.0, 1.0, 1.0]}


@rule("views.inplace-on-view-of-leaf-refused")
@subject("view", "narrow")
@pytest.mark.parametrize("spelling, make_view", [
    ("slice", lambda a: a[:2]),
    ("full-slice", lambda a: a[:]),
    ("view", lambda a: a.view(2, 2)),
    ("narrow", lambda a: a.narrow(0, 0, 2)),
    ("setitem", lambda a: a[0:2]),
], ids=["slice", "full-slice", "view", "narrow", "setitem"])
def test_view_of_leaf_refuses_in_place(adapter, fw, device, spelling, make_view):
    """Through each view spelling users write, item assignment included (a framework may refuse
    one and accept another: OneFlow refuses ``a[:]`` but accepts ``a[:2]``, ``a.view`` and
    ``a.narrow``). This rule owns writes through views of a leaf; writes on the leaf itself are
    engine.leaf-inplace-error's."""
    view_write_reaches_base(adapter, fw, device, make_view, spelling)

    def write(a):
        if spelling == "setitem":
            a[0:2] = fw.ones(2, device=device) * 2
        else:
            adapter.inplace(make_view(a), "mul_", 2)

    a = fw.ones(4, requires_grad=True, device=device)
    with raises(Exception, what=f"in-place op on a view of a leaf that requires grad ({spelling})"):
        write(a)
    close(adapter, fw.detach(a), [1, 1, 1, 1], f"the leaf's values after the refused op ({spelling})")
    if aside(adapter, "grad_modes", what="the same write under no_grad is allowed and reaches the leaf"):
        with fw.no_grad(), diverges_if_raises(Exception, what=f"in-place op under no_grad ({spelling})"):
            write(a)
        close(adapter, fw.detach(a), LEAF_DOUBLED[spelling],
              f"the leaf's values after the op under no_grad ({spelling})")


@rule("views.inplace-on-no-grad-view-refused")
def test_view_made_under_no_grad_refuses_recorded_in_place(adapter, fw, device):
    b = fw.ones(4, requires_grad=True, device=device) * 1
    with fw.no_grad():
        v = b[:2]
    with raises(Exception, what="in-place op in grad mode on a view made under no_grad"):
        adapter.inplace(v, "mul_", 2)
    close(adapter, fw.detach(b), [1, 1, 1, 1], "the base's values after the refused op")
    with fw.no_grad(), diverges_if_raises(Exception, what="in-place op under no_grad on the no_grad view"):
        adapter.inplace(v, "mul_", 2)
    close(adapter, fw.detach(b), [2, 2, 1, 1], "the base's values after the op under no_grad")
    p = fw.zeros(4, device=device)
    with fw.no_grad():
        u = p[:2]
    adapter.inplace(u, "add_", 1)  # nothing requires grad: allowed
    close(adapter, p, [1, 1, 0, 0], "a plain tensor after a plain in-place op on its no_grad view")


def no_grad_view_refuses(adapter, fw, device):
    """Prerequisite: the no_grad view itself refuses an in-place op in grad mode (else a view of it
    accepting one is the same finding, BLOCKED by the no_grad-view rule)."""
    with prerequisite("views.inplace-on-no-grad-view-refused",
                      what="in-place op in grad mode on the no_grad view itself") as pre:
        b = fw.ones(4, requires_grad=True, device=device) * 1
        with fw.no_grad():
            v = b[:2]
        try:
            adapter.inplace(v, "mul_", 2)
            refused = False
        except (Unsupported, Blocked):
            raise
        except Exception:  # noqa: BLE001 - any refusal is what the prerequisite needs
            refused = True
        pre.check(refused, "the no_grad view itself refused an in-place op in grad mode")


@rule("views.inplace-on-view-of-no-grad-view-refused")
@subject("view")
def test_view_of_a_no_grad_view_refuses_recorded_in_place(adapter, fw, device):
    b = fw.ones(4, requires_grad=True, device=device) * 1
    with fw.no_grad():
        v = b[:2]
    no_grad_view_refuses(adapter, fw, device)
    w = v.view(2)  # made in grad mode, of the no_grad view
    with raises(Exception, what="in-place op in grad mode on a view of a view made under no_grad"):
        adapter.inplace(w, "mul_", 2)
    close(adapter, fw.detach(b), [1, 1, 1, 1], "the base's values after the refused op")
    with fw.no_grad(), diverges_if_raises(Exception, what="in-place op under no_grad on the view of the view"):
        adapter.inplace(w, "mul_", 2)
    close(adapter, fw.detach(b), [2, 2, 1, 1], "the base's values after the op under no_grad")


@rule("views.setitem-makes-nonleaf")
def test_slice_assignment_of_grad_values_records_history(adapter, fw, device):
    p = fw.zeros(4, device=device)
    w = fw.ones(2, requires_grad=True, device=device)
    p[1:3] = w
    adapter.backward(fw.sum(p * fw.arange(4.0, device=device)))
    close(adapter, adapter.grad(w), [1, 2], "w.grad through p[1:3] = w")
    if aside(adapter, "requires_grad_flag", what="p requires grad after the write"):
        assert adapter.requires_grad(p), "after p[1:3] = w (w requires grad) p does not require grad"
    if aside(adapter, "is_leaf", what="p is no longer a leaf"):
        assert not adapter.is_leaf(p), "after p[1:3] = w, p is still a leaf"
    # the same write on a base that requires grad must be recorded at all (else the home rule's finding)
    a2 = fw.ones(4, requires_grad=True, device=device)
    b2 = a2 * 1
    write_through_view(adapter, fw, a2, b2, lambda: adapter.inplace(b2[:2], "mul_", 3),
                       [3, 3, 1, 1], grad=[3, 3, 1, 1], what="b[:2].mul_(3) on a base that requires grad")
    q = fw.zeros(4, device=device)
    with diverges_if_raises(RuntimeError, what="in-place op with a grad-requiring value on a view of a plain tensor"):
        adapter.inplace(q[:2], "add_", w)
    if aside(adapter, "requires_grad_flag", what="q requires grad after the write"):
        assert adapter.requires_grad(q), "after q[:2].add_(w) (w requires grad) q does not require grad"
    if aside(adapter, "is_leaf", what="q is no longer a leaf"):
        assert not adapter.is_leaf(q), "after q[:2].add_(w), q is still a leaf"


@rule("views.mark-dirty-on-view-rewrites-base")
def test_custom_in_place_function_on_view(adapter, fw, device):
    class Triple(fw.autograd.Function):   # applied in place: torch marks x dirty (adapter.apply_in_place)
        @staticmethod
        def forward(ctx, x):
            adapter.inplace(x, "mul_", 3)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    a = fw.ones(4, requires_grad=True, device=device)
    b = a * 1
    v = b[:2]
    with diverges_if_raises(RuntimeError, what="a custom Function marking a view input dirty"):
        adapter.apply_in_place(Triple, v)
    adapter.backward(fw.sum(b))
    close(adapter, adapter.grad(a), [3, 3, 1, 1], "a.grad after Triple (mark_dirty) on b[:2]")


@rule("views.mark-dirty-view-single-output")
def test_custom_in_place_function_on_a_view_returns_one_tensor_only(adapter, fw, device):
    adapter.require("mark_dirty")

    class AddTwo(fw.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            adapter.inplace(a, "add_", b)
            ctx.mark_dirty(a)
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, ga + gab

    b = fw.ones(2, requires_grad=True, device=device)
    base = fw.ones(4, requires_grad=True, device=device) * 1
    with raises(Exception, what="a custom Function marking a view input dirty and returning two tensors"):
        AddTwo.apply(base[:2], b)
    d, e = AddTwo.apply(fw.ones(2, requires_grad=True, device=device) * 1, b)  # not a view: accepted
    close(adapter, fw.detach(e), [3, 3], "the second output when the dirty input is no view")


@rule("views.saved-view-version-checked")
def test_writes_through_an_alias_invalidate_saved_values(adapter, fw, device):
    inplace_on_saved_refused(adapter, fw, device)  # no version check at all: the home rule's finding
    a = fw.ones(4, requires_grad=True, device=device)
    b = a * 1
    v = b[:2]
    y = v * v  # saves the view
    adapter.inplace(b, "add_", 1)
    with raises(Exception, what="backward needing a view after its base was modified"):
        adapter.backward(fw.sum(y))
    b = a * 1
    v = b[:2]
    y = b * b  # saves the base
    before = adapter.to_numpy(fw.detach(b)) + np.array([1, 1, 0, 0])
    write_through_view(adapter, fw, a, b, lambda: adapter.inplace(v, "add_", 1), before,
                       what="b[:2].add_(1)")
    with raises(Exception, what="backward needing a base after its view was modified"):
        adapter.backward(fw.sum(y))


@rule("views.detach-inplace-on-view-refused")
def test_detach_in_place_refused_on_views(adapter, fw, device):
    a = fw.ones(4, requires_grad=True, device=device)
    v = (a * 1)[:2]
    # through the adapter (a framework may spell detach_ otherwise: tinygrad's replace); one
    # without any spelling is UNSUPPORTED there, raises() telling a missing method from a refusal
    fn = None
    if aside(adapter, "graph_nodes", what="the view's grad_fn is unchanged"):
        fn = adapter.grad_fn(v)
    with raises(Exception, what="detach_() on a view of a tensor that requires grad"):
        adapter.inplace(v, "detach_")
    if aside(adapter, "graph_nodes", what="the view's grad_fn is unchanged"):
        assert adapter.grad_fn(v) is fn, "the view's grad_fn changed although detach_() was refused"
    if aside(adapter, "requires_grad_flag", what="the view still requires grad"):
        assert adapter.requires_grad(v), "the view no longer requires grad although detach_() was refused"
    with raises(Exception, what="detach_() on a view of a plain tensor"):
        adapter.inplace(fw.zeros(4, device=device)[:2], "detach_")


@rule("views.inplace-on-view-double-backward")
def test_second_derivative_through_in_place_on_view(adapter, fw, device):
    a = fw.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True, device=device)
    b = a * 1
    write_through_view(adapter, fw, a, b, lambda: adapter.inplace(b[:2], "mul_", a[:2]), [1, 4, 3, 4],
                       grad=[2, 4, 1, 1], what="b[:2].mul_(a[:2])")
    (g,) = fw.autograd.grad(fw.sum(b), a, create_graph=True)
    close(adapter, fw.detach(g), [2, 4, 1, 1], "first derivative")
    adapter.backward(fw.sum(g))
    close(adapter, adapter.grad(a), [2, 2, 0, 0], "second derivative")


@rule("views.inplace-on-view-frees-saved")
def test_backward_releases_what_the_in_place_op_saved(adapter, fw, device):
    a = fw.ones(4, requires_grad=True, device=device)
    w = fw.ones(2, requires_grad=True, device=device)
    x = w * 2
    saved = probe(adapter, device, x, "the tensor saved by b[:2].mul_(x)")
    b = a * 1
    write_through_view(adapter, fw, a, b, lambda: adapter.inplace(b[:2], "mul_", x), [2, 2, 1, 1], grad=[2, 2, 1, 1],
                       what="b[:2].mul_(x)")
    del x
    with liveness.gc_disabled():
        if not saved.alive():
            raise Blocked(TENSOR_WEAKREF, "the watch on x died while the graph of b[:2].mul_(x) "
                          "saved it: it observes the Python object, not the tensor")
        adapter.backward(fw.sum(b))
        liveness.assert_freed(saved, by="refcount", context="after backward without retain_graph")
    with raises(Exception, what="a second backward without retain_graph"):
        adapter.backward(fw.sum(b))


@rule("views.inplace-on-view-graph-freed")
def test_graph_of_in_place_on_view_freed_by_refcount(adapter, fw, device):
    a = fw.ones(4, requires_grad=True, device=device)
    w = fw.ones(2, requires_grad=True, device=device)
    x = w * 2
    saved = probe(adapter, device, x, "the tensor saved by v.mul_(x)")
    b = a * 1
    v = b[:2]
    write_through_view(adapter, fw, a, b, lambda: adapter.inplace(v, "mul_", x), [2, 2, 1, 1], grad=[2, 2, 1, 1],
                       what="v.mul_(x)")
    del x
    with liveness.gc_disabled():
        if not saved.alive():
            raise Blocked(TENSOR_WEAKREF, "the watch on x died while the graph of v.mul_(x) "
                          "saved it: it observes the Python object, not the tensor")
        del b, v
        liveness.assert_freed(saved, by="refcount", context="after dropping the base and the view")


@rule("views.inplace-on-multi-output-view")
@subject("unbind")
def test_write_into_an_output_of_unbind_is_refused_or_recorded(adapter, fw, device):
    p = fw.zeros(4, device=device)
    adapter.inplace(p.unbind()[0], "add_", 1)  # nothing requires grad: allowed
    if adapter.to_numpy(p)[0] != 1:
        raise Unsupported("the outputs of unbind are copies, not views of their input",
                          feature="unbind")
    a = fw.ones(4, requires_grad=True, device=device)
    b = a * 1
    parts = b.unbind()
    if aside(adapter, "grad_modes", what="a write into an output of unbind under no_grad is allowed"):
        with fw.no_grad(), diverges_if_raises(Exception, what="in-place op under no_grad on unbind()[1]"):
            adapter.inplace(parts[1], "mul_", 2)
        close(adapter, fw.detach(b), [1, 2, 1, 1], "the base after a no_grad write into unbind()[1]")
    second = adapter.to_numpy(fw.detach(b))[1]
    try:
        adapter.inplace(parts[0], "mul_", 3)
    except RuntimeError:  # refused, as torch does: nothing written
        close(adapter, fw.detach(b), [1, second, 1, 1], "the base's values after the refused op")
    else:  # accepted: the base's history must include the write
        # ... which needs writes through a plain (single-output) view recorded at all
        a2 = fw.ones(4, requires_grad=True, device=device)
        b2 = a2 * 1
        write_through_view(adapter, fw, a2, b2, lambda: adapter.inplace(b2[:2], "mul_", 3),
                           [3, 3, 1, 1], grad=[3, 3, 1, 1], what="b[:2].mul_(3) (a single-output view)")
        adapter.backward(fw.sum(b * fw.arange(1.0, 5.0, device=device)))
        close(adapter, adapter.grad(a), [3, 2, 3, 4], "the leaf's gradient through a write into unbind()[0]")


@rule("views.setitem-basic-index-records-copyslices")
def test_setitem_basic_index_of_grad_value_into_plain_tensor(adapter, fw, device):
    y = fw.ones(2, requires_grad=True, device=device)
    x = fw.zeros(3, 2, device=device)
    if aside(adapter, "graph_nodes", what="x's grad_fn has no base edge and a value edge to y * 2's node"):
        with prerequisite("engine.leaf-inplace-error", what="a tensor outside the graph") as pre:
            pre.check(adapter.grad_fn(x) is None, "a fresh tensor has no grad_fn (else its node is the base edge)")
    v0 = None
    if aside(adapter, "version_counter", what="the write bumps x's version once"):
        v0 = adapter.version(x)
    x[0] = y * 2
    if aside(adapter, "version_counter", what="the write bumps x's version once"):
        assert adapter.version(x) == v0 + 1, "the write did not bump x's version once"
    if aside(adapter, "graph_nodes", what="x's grad_fn has no base edge and a value edge to y * 2's node"):
        node = adapter.grad_fn(x)
        assert node is not None, "x[0] = y (y requires grad) left x outside the graph (no grad_fn)"
        value_edge = producer(adapter, node, 1)   # BLOCKED where the node lists no producers
        base_edge = adapter.next_nodes(node)[0]     # None: x itself needs no gradient
        assert base_edge is None, f"x did not require grad, yet its grad_fn has a base edge {base_edge}"
        assert value_edge is not None and adapter.node_name(value_edge).lower().startswith("mul"), \
            f"the value's edge leads to {value_edge}, not its history (MulBackward0)"
    adapter.backward(fw.sum(x), retain_graph=True)
    close(adapter, adapter.grad(y), [2.0, 2.0], "y.grad after x[0] = y * 2; x.sum().backward()")
    if aside(adapter, "requires_grad_flag", what="x requires grad after the write"):
        assert adapter.requires_grad(x), "x[0] = y (y requires grad) left x not requiring grad"


@rule("views.setitem-basic-index-records-copyslices")
def test_setitem_basic_index_broadcast_value_gets_summed_gradient(adapter, fw, device):
    w = fw.ones(1, requires_grad=True, device=device)
    b = fw.zeros(3, 2, device=device)
    b[1:] = w                               # broadcast to the (2, 2) slot
    weights = fw.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], device=device)
    adapter.backward(fw.sum(b * weights))
    close(adapter, adapter.grad(w), [14.0], "w.grad after b[1:] = w")
    p = fw.zeros(3, 2, device=device)
    fresh_has_node = False
    if aside(adapter, "graph_nodes", what="writing values without grad records no node"):
        fresh_has_node = adapter.grad_fn(p) is not None  # every tensor shows a node: engine.leaf-inplace-error's finding
    p[0] = 1.0
    p[1] = fw.ones(2, device=device)
    close(adapter, p, [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]], "p after writing values without grad")
    if aside(adapter, "requires_grad_flag", what="p does not require grad after writing values without grad"):
        assert not adapter.requires_grad(p), "writing values without grad made the tensor require grad"
    if aside(adapter, "graph_nodes", what="writing values without grad records no node"):
        assert fresh_has_node or adapter.grad_fn(p) is None, "writing values without grad recorded a graph"


@rule("views.view-keeps-base-object")
def test_view_keeps_its_base_object(adapter, fw, device):
    plain = fw.zeros(2, device=device)
    adapter.feature("view_base", lambda: plain[:1]._base)   # the rule's own feature, before any channel
    liveness.control_weakref(adapter, device, "a weak reference to the base")
    x = fw.ones(4, requires_grad=True, device=device)
    for kind, make in (("a plain tensor", lambda: fw.zeros(4, device=device)),
                       ("a non-leaf that requires grad", lambda: x * 2)):
        base = make()
        set_attr(base, "tag", kind)
        ref = tensor_weakref(base, what=f"a weak reference to {kind}")
        watched = liveness.Probe(f"the base ({kind})", ref, "weakref",
                                 "a weakref reported a tensor saved by a live graph alive")
        v = base[1:3]
        with prerequisite("views.is-view-and-base", what=f"base[1:3] of {kind}") as pre:
            pre.check(v._base is base, "base[1:3]._base is the base while the user holds it")
        with liveness.gc_disabled():
            del base
            held = ref()
            assert held is not None, f"{kind}: the base was freed while its view v = base[1:3] lives"
            assert v._base is held, f"{kind}: v._base is another object than the base the weakref still sees"
            assert getattr(held, "tag", None) == kind, (
                f"{kind}: the attribute set on the base is gone (tag is {getattr(held, 'tag', None)!r})")
            del held
            del v
            liveness.assert_freed(watched, by="refcount", context="once its only view was dropped")
