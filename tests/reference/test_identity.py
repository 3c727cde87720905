"""One Python object per tensor and per node: identity, __dict__, subclasses, weakrefs.

Observed doc section 1: what the graph hands back (``.grad``, saved inputs,
``AccumulateGrad.variable``, ``next_functions``) is the very object given to it.
"""
from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import reference as R
from reference.autograd import Function
from tests.reference.helpers import arr, caught_warnings, leaf


class Tagged(R.Tensor):
    """A user subclass of the reference Tensor."""

    def describe(self):
        return f"tagged {tuple(self.shape)}"


def test_grad_is_the_same_object_every_time():  # rule: identity.grad-same-object
    a = R.randn(3, requires_grad=True)
    (a * 2).sum().backward()
    assert a.grad is a.grad
    assert len({id(a.grad) for _ in range(100)}) == 1
    junk = [R.empty(3) for _ in range(100)]
    assert len({id(a.grad) for _ in range(100)} | {id(a.grad)}) == 1
    del junk


def test_attributes_survive_while_only_the_engine_holds_the_tensor():  # rule: identity.attributes-survive-framework-ownership
    x = R.empty(2)
    x.foo = 2
    y = R.empty(2)
    y.grad = x
    old_id = id(x)
    del x
    assert y.grad.foo == 2 and id(y.grad) == old_id
    z = y.grad
    del z
    assert y.grad.foo == 2


def test_saved_inputs_are_the_original_objects():  # rule: identity.saved-input-same-object
    x = R.randn(3, requires_grad=True)
    y = x * x
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is x
    t = x * 1
    t.foo = "bar"
    w = t * t
    tid = id(t)
    del t
    s = w.grad_fn._saved_self
    assert s.foo == "bar" and id(s) == tid and s.grad_fn.name() == "MulBackward0"


def test_saved_output_is_a_new_object_sharing_data_version_and_grad_fn():  # rule: identity.saved-output-distinct-object
    x = R.randn(3, requires_grad=True)
    z = R.exp(x)
    r = z.grad_fn._saved_result
    assert r is not z
    assert R.equal(r, z)
    assert r.grad_fn is z.grad_fn
    assert r._version == z._version
    with R.no_grad():
        z += 1
    assert R.equal(r, z) and r._version == 1 and z._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.grad_fn._saved_result


def test_custom_function_saved_tensors_are_the_inputs():  # rule: identity.ctx-saved-tensors-same-objects
    got = {}

    class Test(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            got["x"], got["y"] = ctx.saved_tensors
            return g, None

    a = R.tensor(1.0, requires_grad=True)
    b = R.tensor(1.0)
    b.tag = "kept"
    Test.apply(a, b).backward()
    assert got["x"] is a and got["y"] is b and got["y"].tag == "kept"


def test_grad_fn_identity_is_stable():  # rule: identity.grad-fn-stable-id
    x = R.randn(3, requires_grad=True)
    y = x * x
    z = y * 2
    assert y.grad_fn is y.grad_fn
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    first = id(y.grad_fn)
    others = [(x * x).grad_fn for _ in range(100)]
    assert id(y.grad_fn) == first
    del others


def test_builtin_nodes_refuse_attributes_but_have_metadata():  # rule: identity.node-metadata-persistent
    x = R.randn(3, requires_grad=True)
    y = x * x
    with pytest.raises(AttributeError):
        y.grad_fn.foo = 1
    y.grad_fn.metadata["k"] = "v"
    assert y.grad_fn.metadata == {"k": "v"}
    assert y.grad_fn.metadata is y.grad_fn.metadata
    assert type(y.grad_fn).__name__ == "MulBackward0" and y.grad_fn.name() == "MulBackward0"
    # the reference's nodes are weak-referenceable (torch's C++ nodes are not)
    assert weakref.ref(y.grad_fn)() is y.grad_fn


def test_custom_function_grad_fn_is_ctx():  # rule: identity.custom-function-grad-fn-is-ctx
    saved = {}

    class F(Function):
        @staticmethod
        def forward(ctx, a):
            saved["fwd"] = ctx
            return a * 2

        @staticmethod
        def backward(ctx, g):
            saved["bwd"] = ctx
            return g * 2

    x = R.randn(3, requires_grad=True)
    out = F.apply(x)
    assert out.grad_fn is saved["fwd"]
    assert type(out.grad_fn) is F._backward_cls and out.grad_fn.name() == "FBackward"
    out.grad_fn.tag = "hello"
    r = weakref.ref(out.grad_fn)
    out.sum().backward()
    assert saved["bwd"] is saved["fwd"] and out.grad_fn.tag == "hello" and r() is out.grad_fn
    out2 = F.apply(x)
    assert out2.grad_fn is not out.grad_fn


def test_graph_node_is_a_virtual_base():  # rule: identity.graph-nodes-are-node-instances
    """torch.autograd.graph.Node answers isinstance/issubclass for every node (built-in, a
    leaf's accumulator, a custom Function's ctx) without being in any node class's mro;
    the Function classes and a bare FunctionCtx are no Nodes, and Node itself is abstract."""
    Node = R.autograd.graph.Node
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, a):
            seen.append(isinstance(ctx, Node))
            return a * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(isinstance(ctx, Node))
            return g * 2

    x = R.randn(3, requires_grad=True)
    y = x.exp()
    out = F.apply(x)
    accumulator = y.grad_fn.next_functions[0][0]
    for node in (y.grad_fn, accumulator, out.grad_fn):
        assert isinstance(node, Node) and issubclass(type(node), Node)
        assert Node not in type(node).__mro__
    out.sum().backward()
    assert seen == [True, True]
    assert issubclass(R.autograd.function.BackwardCFunction, Node) and issubclass(Node, Node)
    for cls in (F, Function, R.autograd.function.FunctionCtx, int, object):
        assert not issubclass(cls, Node), cls
    for value in (None, 1, x, Node, type(accumulator), F, R.autograd.function.FunctionCtx()):
        assert not isinstance(value, Node), value
    with pytest.raises(TypeError):
        Node()


def test_data_and_detach_are_new_objects_sharing_memory():  # rule: identity.data-detach-new-objects
    x = R.randn(3, requires_grad=True)
    assert x.data is not x.data
    assert x.detach() is not x
    assert x.data.data_ptr() == x.data_ptr() == x.detach().data_ptr()
    assert not x.data.requires_grad and x.detach().grad_fn is None


def test_assigning_data_keeps_object_and_version_counter():  # rule: identity.data-assign-keeps-object
    a = R.randn(1, 2)
    b = R.randn(1, 2)
    bid = id(b)
    b.data = a
    assert id(b) == bid and R.equal(b, a)
    x = R.randn(1, 2)
    xz = x[:]
    x.add_(1)
    v = x._version
    x.data = R.randn(2, 3)
    assert x._version == v and tuple(x.shape) == (2, 3)
    x.add_(1)
    assert x._version == xz._version


def test_inplace_and_requires_grad_return_self():  # rules: identity.inplace-returns-self, engine.requires-grad-flag-leaf-only
    x = R.randn(3)
    assert x.add_(1) is x
    assert x.requires_grad_() is x
    z = x * 2
    assert z.requires_grad_() is z


def test_del_grad_resets_to_none():  # rule: identity.del-grad-resets
    x = R.randn(5, 5, requires_grad=True)
    x.sum().backward()
    del x.grad
    assert x.grad is None


def test_non_leaf_grad_warns_unless_retained():  # rule: engine.nonleaf-grad-warning
    lf = R.empty(1).requires_grad_()
    assert caught_warnings(lambda: lf.grad) == []
    nl = lf.clone()
    got = caught_warnings(lambda: nl.grad)
    assert len(got) == 1 and got[0][0] is UserWarning
    assert got[0][1].startswith("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed.")
    nl.retain_grad()
    assert caught_warnings(lambda: nl.grad) == []


def test_weakref_to_tensor_alive_while_engine_holds_it():  # rules: identity.weakref-survives-framework-ownership, identity.weakref-released-with-last-owner
    x = R.empty(2)
    wx = weakref.ref(x)
    fired = [False]
    wr2 = weakref.ref(x, lambda r: fired.__setitem__(0, True))
    y = R.empty(2)
    y.grad = x
    del x
    assert wx() is y.grad and not fired[0]
    x = wx()
    del y
    assert tuple(x.sigmoid().shape) == (2,) and not fired[0]
    del x
    assert fired[0] and wx() is None
    del wr2


def test_accumulate_grad_variable_is_the_leaf():  # rule: identity.accumulate-grad-variable-is-leaf
    x = R.randn(2, requires_grad=True)
    x.tag = "leaf"
    xid = id(x)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    del x
    assert acc.variable.tag == "leaf" and id(acc.variable) == xid
    assert type(acc).__name__ == "AccumulateGrad"


def test_weakref_to_saved_input_survives_while_graph_holds_it():
    x = leaf([1.0, 2.0])
    t = x * 3
    probe = weakref.ref(t)
    y = t * t
    del t
    assert probe() is not None and probe() is y.grad_fn._saved_self
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), 2 * 9 * np.array([1.0, 2.0]))


# -- subclasses ---------------------------------------------------------------------------
def test_subclass_constructor_and_methods():
    t = Tagged([1.0, 2.0])
    assert isinstance(t, R.Tensor) and type(t) is Tagged
    assert t.describe() == "tagged (2,)"
    t.note = "mine"
    assert t.__dict__ == {"note": "mine"}


def test_subclass_kept_as_is_by_the_graph():
    s = Tagged([1.0, 2.0]).requires_grad_()
    s.label = "sub"
    y = s * s  # a Tagged alias of the product (as torch's default __torch_function__ makes it)
    assert type(y) is Tagged and y.grad_fn.name() == "AliasBackward0"
    mul = y.grad_fn.next_functions[0][0]
    saved = mul._saved_self
    assert mul.name() == "MulBackward0" and saved is s and type(saved) is Tagged and saved.label == "sub"
    y.sum().backward()
    assert mul.next_functions[0][0].variable is s
    np.testing.assert_allclose(arr(s.grad), [2.0, 4.0])


def test_subclass_as_grad_survives_as_the_same_object():
    g = Tagged([0.5, 0.5])
    g.label = "grad"
    gid = id(g)
    x = R.zeros(2)
    x.grad = g
    del g
    assert type(x.grad) is Tagged and x.grad.label == "grad" and id(x.grad) == gid


def test_as_subclass_shares_data_and_history():
    x = R.randn(2, requires_grad=True)
    xs = x.as_subclass(Tagged)
    assert type(xs) is Tagged and xs is not x
    assert xs.data_ptr() == x.data_ptr()
    assert xs.requires_grad and xs.grad_fn is not None and not xs.is_leaf
    (xs * 2).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0])
    plain = R.randn(2).as_subclass(Tagged)
    assert type(plain) is Tagged and not plain.requires_grad and plain.grad_fn is None
    with pytest.raises(TypeError):
        x.as_subclass(int)


def test_subclass_weakref_and_dict_survive_gc_collect():
    s = Tagged([1.0]).requires_grad_()
    s.meta = {"k": 1}
    ref = weakref.ref(s)
    y = s * 2
    del s
    gc.collect()
    assert ref() is not None and ref().meta == {"k": 1}
    del y
    gc.collect()
    assert ref() is None


def test_ctx_keeps_node_and_saved_tensors_alive():  # rules: gc_cycles.stashed-ctx-ownership, gc_cycles.stashed-ctx-no-crash, gc_cycles.stashed-ctx-released-with-last-reference
    keep = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            keep.append(ctx)
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class H:
        pass

    was = gc.isenabled()
    gc.disable()
    try:
        x = R.randn(2, requires_grad=True)
        y = F.apply(x)
        h = H()
        r = weakref.ref(h)
        y.grad_fn.metadata["h"] = h
        del h, y
        ctx = keep.pop()
        assert r() is not None
        assert [tuple(t.shape) for t in ctx.saved_tensors] == [(2,)]
        assert type(ctx.next_functions[0][0]).__name__ == "AccumulateGrad"
        del ctx
        assert r() is None
    finally:
        if was:
            gc.enable()


def test_stashed_ctx_after_backward():  # rules: gc_cycles.stashed-ctx-after-backward-raises, gc_cycles.stashed-ctx-after-retained-backward
    saved_ctx = []

    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad_x):
            saved_ctx.append(ctx)
            return ctx.saved_tensors

    p = R.zeros(1, requires_grad=True)
    loss = Id.apply(p)
    loss.backward()
    del loss
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        saved_ctx.pop().saved_tensors
    loss = Id.apply(p)
    loss.backward(retain_graph=True)
    del loss
    (t,) = saved_ctx.pop().saved_tensors
    assert t is p


def test_data_setter_is_invisible_to_autograd():  # rule: engine.data-bypasses-autograd
    x = R.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x ** 2
    y.data = R.tensor([100.0, 100.0, 100.0])
    z = 2 * y
    z.sum().backward()
    np.testing.assert_allclose(arr(x.grad), 4 * arr(x))
    np.testing.assert_allclose(arr(z), [200.0, 200.0, 200.0])
    a = R.tensor([1.0, 2.0], requires_grad=True)
    b = a.clone()
    y = b * b
    v = b._version
    b.data.mul_(10)
    assert b._version == v
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), [20.0, 40.0])


def test_create_graph_backward_warns_and_grad_has_history():  # rule: gc_cycles.create-graph-backward-warns-cycle
    b = R.randn(3, requires_grad=True, dtype=R.float64)
    c = b * b
    got = caught_warnings(lambda: c.backward(R.ones_like(c), create_graph=True))
    assert len(got) == 1 and got[0][0] is UserWarning
    assert got[0][1].startswith("Using backward() with create_graph=True will create a reference cycle")
    assert b.grad.grad_fn is not None
    assert caught_warnings(lambda: R.autograd.grad(c, b, R.ones_like(c), create_graph=True)) == []
    b.grad = None


def test_double_backward_accumulates_into_grad():  # rule: engine.create-graph-double-backward
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = R.randn(2, 2, requires_grad=True, dtype=R.float64)
        y = R.randn(2, 2, requires_grad=True, dtype=R.float64)
        z = x ** 2 + y * x + y ** 2
        z.backward(R.ones(2, 2, dtype=R.float64), create_graph=True)
        assert x.grad.grad_fn is not None
        np.testing.assert_allclose(arr(x.grad), 2 * arr(x) + arr(y))
        x_grad, y_grad = arr(x.grad), arr(y.grad)
        grad_sum = 2 * x.grad + y.grad
        (hv,) = R.autograd.grad(grad_sum, x, R.ones(2, 2, dtype=R.float64), create_graph=True)
        np.testing.assert_allclose(arr(hv), np.full((2, 2), 5.0))
        grad_sum.backward(R.ones(2, 2, dtype=R.float64))
        np.testing.assert_allclose(arr(x.grad), x_grad + 5)
        np.testing.assert_allclose(arr(y.grad), y_grad + 4)
        x.grad = None
        y.grad = None


def test_first_grad_of_a_leaf_under_create_graph_is_a_copy_into_the_leafs_layout():
    # torch 2.13: a new empty tensor laid out like the leaf, the gradient copied in (so a
    # CopyBackwards node whose first edge, the empty tensor, is None, and version 1); a clone
    # when the leaf's memory is not dense; a retained non-leaf's gradient is a clone
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = R.randn(3, requires_grad=True, dtype=R.float64)
        go = R.ones(3, requires_grad=True, dtype=R.float64)
        y = x * 1
        y.retain_grad()
        y.backward(go, create_graph=True)
        node = x.grad.grad_fn
        assert node.name() == "CopyBackwards" and x.grad._version == 1
        assert node.next_functions[0] == (None, 0) and node.next_functions[1][0].name() == "MulBackward0"
        assert y.grad.grad_fn.name() == "CloneBackward0"
        np.testing.assert_allclose(arr(x.grad), np.ones(3))
        (gg,) = R.autograd.grad(x.grad.sum(), go)
        np.testing.assert_allclose(arr(gg), np.ones(3))
        x.grad = y.grad = None

        z = R.randn(4, 6, dtype=R.float64)[:, ::2].detach().requires_grad_()  # every other column
        (z * go[0]).sum().backward(create_graph=True)
        assert z.grad.grad_fn.name() == "CloneBackward0"
        t = R.randn(4, 3, dtype=R.float64).t().detach().requires_grad_()  # dense, transposed
        (t * go[0]).sum().backward(create_graph=True)
        assert t.grad.grad_fn.name() == "CopyBackwards"
        z.grad = t.grad = None

        w = R.randn(3, requires_grad=True, dtype=R.float64)
        (w * 2).sum().backward(create_graph=True)  # a gradient without history: still copied
        assert w.grad.grad_fn is None and w.grad._version == 1


# -- reference.utils.weak ------------------------------------------------------------------

def test_weak_id_key_dictionary_mapping_methods():  # rule: identity.weak-id-key-dictionary-entry-dies-with-tensor
    from reference.utils.weak import WeakIdKeyDictionary

    a, b = R.ones(2), R.ones(2)
    d = WeakIdKeyDictionary({a: 1})
    assert d.setdefault(b, 2) == 2 and d.setdefault(b, 3) == 2
    assert [k is a or k is b for k in d] == [True, True] and sorted(d.values()) == [1, 2]
    assert 5 not in d and [] not in d  # a number cannot be weakly referenced: no key, no error
    with pytest.raises(KeyError):
        d[5]
    copy = d.copy()
    assert d.pop(a) == 1 and a not in d and copy[a] == 1 and len(copy) == 2
    del d[b]
    assert len(d) == 0 and d.get(b) is None


def test_weak_id_key_dictionary_iteration_survives_dying_keys():  # rule: identity.weak-id-key-dictionary-entry-dies-with-tensor
    from reference.utils.weak import WeakIdKeyDictionary

    keys = [R.ones(1) for _ in range(4)]
    d = WeakIdKeyDictionary()
    for i, k in enumerate(keys):
        d[k] = i
    del k
    seen = []
    for key in d:
        seen.append(d[key])
        keys.clear()  # every other key dies while the loop holds one
        del key
    assert seen[0] == 0 and len(d) == 0


def test_weak_id_key_dictionary_makes_no_cycle():  # rule: identity.weak-id-key-dictionary-entry-dies-with-tensor
    from reference.utils.weak import WeakIdKeyDictionary

    gc.disable()
    try:
        d = WeakIdKeyDictionary()
        t = R.ones(1)
        d[t] = "v"
        ref = weakref.ref(d)
        del d
        assert ref() is None, "the dictionary is kept alive by its own removal callback"
        del t  # the key's callback finds no dictionary: nothing happens
    finally:
        gc.enable()


def test_weak_id_ref_equality_after_death():  # rule: identity.tensor-weak-ref
    from reference.utils.weak import TensorWeakRef, WeakIdRef

    a = R.ones(2)
    w1, w2 = WeakIdRef(a), WeakIdRef(a)
    assert w1 == w2 and not (w1 != w2)
    del a
    assert w1() is None and w1 != w2 and w1 == w1
    with pytest.raises(AssertionError):
        TensorWeakRef([1.0])
