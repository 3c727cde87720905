"""Custom autograd Functions: ctx, saving, dirty / non-differentiable outputs, options."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import reference as R
from reference.autograd import Function, once_differentiable
from tests.reference.helpers import arr, leaf


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_ctx_is_grad_fn_named_after_the_function():
    seen = {}

    class Fn(Function):
        @staticmethod
        def forward(ctx, x):
            seen["ctx"] = ctx
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen["bctx"] = ctx
            return g * 2

    x = leaf([1.0, 2.0])
    y = Fn.apply(x)
    assert y.grad_fn is seen["ctx"]
    assert type(y.grad_fn) is Fn._backward_cls and y.grad_fn.name() == "FnBackward"
    assert type(y.grad_fn).__name__ == "FnBackward"
    assert isinstance(y.grad_fn, R.autograd.graph.Node)
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    assert seen["bctx"] is seen["ctx"]
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0])


def test_gradient_values_through_a_custom_function():
    x = leaf([1.0, -2.0, 3.0])
    y = Square.apply(x.sin())
    (y * R.tensor([1.0, 2.0, 3.0], dtype=R.float64)).sum().backward()
    xs = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(arr(x.grad), np.array([1.0, 2.0, 3.0]) * 2 * np.sin(xs) * np.cos(xs))


def test_save_for_backward_identity_for_inputs():
    got = {}

    class Keep(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, None, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            got["saved"] = ctx.saved_tensors
            a, _, b = ctx.saved_tensors
            return g * b, g * a

    a = leaf([2.0])
    b = R.tensor([5.0], dtype=R.float64)
    b.tag = "b"
    Keep.apply(a, b).backward()
    sa, none, sb = got["saved"]
    assert sa is a and none is None and sb is b and sb.tag == "b"
    np.testing.assert_allclose(arr(a.grad), [5.0])


def test_saved_input_returned_unchanged_still_unpacks_as_the_input():
    saved = []

    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            saved.append(ctx.saved_tensors[0])
            return g

    p = R.zeros(1, requires_grad=True)
    out = Id.apply(p)
    assert out is not p and out.grad_fn.name() == "IdBackward"
    out.backward()
    assert saved[0] is p and saved[0].grad_fn is None
    q = R.zeros(1, requires_grad=True).clone()
    Id.apply(q).backward()
    assert saved[1] is q and saved[1].grad_fn.name() == "CloneBackward0"


def test_saved_output_is_a_new_object_with_the_function_as_grad_fn():
    got = {}

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            got["y"] = y
            return g * y

    x = leaf([0.0, 1.0])
    out = Exp.apply(x)
    out.sum().backward(retain_graph=True)
    assert got["y"] is not out and got["y"].grad_fn is out.grad_fn
    np.testing.assert_allclose(arr(got["y"]), arr(out))
    np.testing.assert_allclose(arr(x.grad), np.exp([0.0, 1.0]))


def test_mark_dirty_returns_same_object_and_rewires_graph():  # rule: legacy_function.mark-dirty-returns-same-object
    class Inplace(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, ga + gb

    x = R.randn(5, 5)
    y = R.randn(5, 5, requires_grad=True)
    v0 = x._version
    q, p = Inplace.apply(x, y)
    assert q is x and type(q.grad_fn) is Inplace._backward_cls
    assert q.requires_grad and x._version > v0
    q.sum().backward()
    np.testing.assert_allclose(arr(y.grad), np.ones((5, 5)))


def test_mark_dirty_on_non_leaf():
    class AddOne(Function):
        @staticmethod
        def forward(ctx, a):
            a.add_(1)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf([1.0, 2.0])
    h = x * 2
    out = AddOne.apply(h)
    assert out is h and h.grad_fn.name() == "AddOneBackward"
    np.testing.assert_allclose(arr(h), [3.0, 5.0])
    h.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [6.0, 6.0])


def test_mark_non_differentiable():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            values = x * 2
            index = x.detach() > 0
            mask = x * 0
            ctx.mark_non_differentiable(index, mask)
            return values, index, mask

        @staticmethod
        def backward(ctx, g_values, g_index, g_mask):
            assert g_mask is None or float(g_mask.abs().sum()) == 0.0
            return g_values * 2

    x = leaf([1.0, -1.0])
    values, index, mask = SortLike.apply(x)
    assert values.requires_grad and values.grad_fn.name() == "SortLikeBackward"
    assert not mask.requires_grad and mask.grad_fn is None
    assert not index.requires_grad
    values.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0])


def test_set_materialize_grads():  # rule: legacy_function.materialize-grads
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(None if g2 is None else arr(g2).tolist())
            return g1, None

    for m in (True, False):
        x = R.ones(2, requires_grad=True)
        Two.apply(x, m)[0].sum().backward()
        np.testing.assert_allclose(arr(x.grad), [1.0, 1.0])
    assert seen == [[0.0, 0.0], None]


def test_needs_input_grad_and_non_tensor_io():  # rules: legacy_function.needs-input-grad, legacy_function.non-tensor-outputs-pass-through
    seen = {}

    class F(Function):
        @staticmethod
        def forward(ctx, t, scale, flag, other):
            seen["needs"] = ctx.needs_input_grad
            return t * scale, "bar", None

        @staticmethod
        def backward(ctx, g, g_str, g_none):
            seen["grads"] = (g_str, g_none)
            return None, None, None, None

    x = R.ones(2, requires_grad=True)
    y, s, n = F.apply(x, 3, True, R.ones(2))
    assert seen["needs"] == (True, False, False, False)
    assert s == "bar" and n is None and y.requires_grad
    y.sum().backward()
    assert seen["grads"] == (None, None)
    assert x.grad is None


def test_no_input_requires_grad_records_nothing():
    x = R.ones(2)
    y = Square.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    with R.no_grad():
        z = Square.apply(R.ones(2, requires_grad=True))
    assert not z.requires_grad and z.grad_fn is None


def test_forward_runs_without_grad_mode():
    modes = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(R.is_grad_enabled())
            y = x * 2
            modes.append(y.requires_grad)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2

    F.apply(leaf([1.0]))
    assert modes == [False, False]


def test_once_differentiable():  # rules: legacy_function.once-differentiable-no-grad, legacy_function.once-differentiable-double-backward-raises
    modes = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            modes.append(R.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = R.tensor([3.0], requires_grad=True)
    (g,) = R.autograd.grad(F.apply(x), x, create_graph=True)
    assert not g.requires_grad and g.grad_fn is None
    np.testing.assert_allclose(arr(g), [6.0])
    go = R.ones(1, requires_grad=True)
    (g,) = R.autograd.grad(F.apply(x), x, grad_outputs=go, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == "reference::autograd::Error"
    assert modes == [False, False]


def test_once_differentiable_error_node_has_a_slot_for_every_result():
    # torch 2.13's DelayedError takes all of backward's results, None included: one edge and
    # one output per result, in order, so a None result is an empty edge and the gradient of
    # the third input is output 2 of the node
    class F(Function):
        @staticmethod
        def forward(ctx, a, scale, b):
            ctx.scale = scale
            return a * scale + b

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            return g * ctx.scale, None, g

    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    go = R.ones(2, dtype=R.float64, requires_grad=True)
    gx, gy = R.autograd.grad(F.apply(x, 2.0, y), (x, y), go, create_graph=True)
    error = gx.grad_fn
    assert gy.grad_fn is error and (gx.output_nr, gy.output_nr) == (0, 2)
    kinds = [None if node is None else node.name() for node, _ in error.next_functions]
    assert kinds == ["AccumulateGrad", None, "AccumulateGrad"]
    np.testing.assert_allclose(arr(gx), [2.0, 2.0])
    np.testing.assert_allclose(arr(gy), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="trying to differentiate twice"):
        gy.sum().backward()  # through output 2 of the node


def test_double_backward_through_custom_function():
    x = leaf([1.5, -0.5])
    (g,) = R.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(arr(g), 2 * arr(x))
    (h,) = R.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(arr(h), [2.0, 2.0])


def test_setup_context_style_and_fresh_ctx_per_call():  # rules: legacy_function.setup-context-style, legacy_function.fresh-ctx-per-apply
    class MySquare(Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)
            ctx.calls = getattr(ctx, "calls", 0) + 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = R.randn((), requires_grad=True, dtype=R.float64)
    y1 = MySquare.apply(x)
    y2 = MySquare.apply(x)
    assert y1.grad_fn is not y2.grad_fn
    assert y1.grad_fn.calls == 1 and y2.grad_fn.calls == 1
    (gx,) = R.autograd.grad(y1, x)
    np.testing.assert_allclose(arr(gx), 2 * arr(x))


def test_two_applications_never_share_saved_state():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.save_for_backward(x)
            return x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k, None

    a = leaf([1.0])
    b = leaf([1.0])
    ya = Scale.apply(a, 2.0)
    yb = Scale.apply(b, 5.0)
    assert ya.grad_fn.saved_tensors[0] is a and yb.grad_fn.saved_tensors[0] is b
    yb.backward()
    ya.backward()
    np.testing.assert_allclose(arr(a.grad), [2.0])
    np.testing.assert_allclose(arr(b.grad), [5.0])
    assert ya.grad_fn.k == 2.0 and yb.grad_fn.k == 5.0


def test_legacy_instance_call_raises_and_apply_on_plain_methods_works():  # rules: legacy_function.instance-call-raises, legacy_function.apply-with-plain-methods
    class Mul2(Function):
        def forward(self, x):
            self.k = 2
            return x * 2

        def backward(self, g):
            return g * self.k

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        instance = Mul2()
    try:
        instance(R.ones(3, requires_grad=True))
    except RuntimeError as exc:
        assert str(exc).startswith("Legacy autograd function with non-static forward method is deprecated.")
    else:
        raise AssertionError("calling a Function instance must raise")
    x = R.ones(3, requires_grad=True)
    y = Mul2.apply(x)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0, 2.0])
    assert y.grad_fn.k == 2 and type(y.grad_fn).__name__ == "Mul2Backward"


def test_bare_function_instance_has_a_usable_node():  # rule: legacy_function.bare-instance-node-attributes
    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = Id()
    assert f.name() == "Id" and f.next_functions == () and f.metadata == {}
    assert type(f.register_hook(lambda *a: None)).__name__ == "RemovableHandle"
    assert isinstance(f._sequence_nr(), int)


def test_keyword_arguments_and_output_containers():  # rules: legacy_function.kwargs-are-inputs, legacy_function.output-container-preserved
    needs = []

    class F(Function):
        @staticmethod
        def forward(ctx, x, w=None):
            needs.append(ctx.needs_input_grad)
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w, g * x

    class T(Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2,)

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class L(Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 2, x * 3]

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = R.ones(2, requires_grad=True)
    w = R.full((2,), 3.0, requires_grad=True)
    F.apply(x, w=w).sum().backward()
    assert needs == [(True, True)]
    np.testing.assert_allclose(arr(x.grad), [3.0, 3.0])
    np.testing.assert_allclose(arr(w.grad), [1.0, 1.0])
    assert type(T.apply(x)) is tuple and type(L.apply(x)) is list and type(F.apply(x, w)) is R.Tensor
    x.grad = None
    out = L.apply(x)
    (out[0] + out[1]).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [5.0, 5.0])


def test_backward_may_return_fewer_trailing_nones_and_broadcast_grads():
    class F(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g, g  # g has the broadcast shape; the engine sums it down for y

    x = leaf(np.ones((2, 3)))
    y = leaf(np.ones(3))
    F.apply(x, y).sum().backward()
    np.testing.assert_allclose(arr(y.grad), [2.0, 2.0, 2.0])


def test_node_hooks_on_custom_function():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0])
    y = F.apply(x)
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1,))
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [21.0])


def test_legacy_variable_constructor_makes_a_leaf_sharing_data():
    from reference.autograd import Variable

    data = R.ones(2) * 4
    v = Variable(data, requires_grad=True)
    assert v.requires_grad and v.is_leaf and v is not data and isinstance(v, Variable)
    data.add_(1)  # shares the array (and version counter, as detach does)
    np.testing.assert_allclose(v.detach().numpy(), [5, 5])
    assert not Variable(R.ones(1)).requires_grad


def test_inplace_function_carries_its_flag():
    from reference.autograd.function import InplaceFunction

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):  # as torch warns
        assert InplaceFunction(inplace=True).inplace and not InplaceFunction().inplace
    with pytest.raises(NotImplementedError):  # no forward: torch raises the same (a RuntimeError)
        InplaceFunction.apply(R.ones(1, requires_grad=True))


def test_clear_saved_tensors_on_access_hands_them_over_once():
    import weakref

    seen = []

    class Cleared(Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            seen.append(weakref.ref(x))
            with pytest.raises(RuntimeError, match="can only be accessed once"):
                ctx.saved_tensors
            return grad * 2

    a = R.ones(2, requires_grad=True)
    Cleared.apply(a * 1).sum().backward()
    assert seen[0]() is None, "the node kept what it handed over"
    np.testing.assert_allclose(a.grad.numpy(), [2, 2])


def test_materialize_non_diff_grads_false_leaves_a_non_differentiable_outputs_gradient_none():
    for flag, expected in ((None, [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]), (False, [[0.0, 0.0], None, [1.0, 1.0]])):
        seen = []

        class Three(R.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                a, b, c = x.clone(), x.clone(), x.clone()
                ctx.mark_non_differentiable(b)
                if flag is not None:
                    ctx._materialize_non_diff_grads = flag
                return a, b, c

            @staticmethod
            def backward(ctx, ga, gb, gc):
                seen.append([None if g is None else g.tolist() for g in (ga, gb, gc)])
                return ga

        x = R.tensor([1.0, 2.0], requires_grad=True)
        Three.apply(x)[2].sum().backward()
        assert seen == [expected]


class ViewOfInput(Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


class TwoViews(Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x), x.view(-1)

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 + g2.view_as(g1)


CUSTOM_VIEW = "This view was created inside a custom Function (or because an input was returned as-is)"


def test_view_returned_by_a_custom_function_refuses_inplace_in_grad_mode():
    # torch 2.13 gives such a view the creation meta IN_CUSTOM_FUNCTION (replacing the no_grad
    # one it was made with inside forward), whether the Function recorded or not; the message
    # names the view's grad_fn if it has one
    b = leaf([1.0])
    plain = ViewOfInput.apply(R.zeros(1, 2, dtype=R.float64))
    with pytest.raises(RuntimeError) as info:
        plain += b
    assert str(info.value).startswith("A view was created in no_grad mode and is being modified inplace with grad mode")
    assert CUSTOM_VIEW in str(info.value)
    recorded = ViewOfInput.apply(leaf([[1.0, 2.0]]) * 1)
    with pytest.raises(RuntimeError) as info:
        recorded.mul_(2)
    assert str(info.value).startswith("Output 0 of ViewOfInput is a view and is being modified inplace.")
    assert CUSTOM_VIEW in str(info.value)
    with pytest.raises(RuntimeError, match="Output 0 of View is a view and is being modified inplace. This view was created inside"):
        recorded.view(-1).mul_(2)  # a view of it, made in grad mode, inherits the restriction
    with R.no_grad():
        recorded.mul_(2)  # outside grad mode nothing is refused
    unused = ViewOfInput.apply(R.zeros(2, dtype=R.float64))
    unused.add_(1)  # nothing requires grad: allowed
    np.testing.assert_array_equal(arr(unused), [1.0, 1.0])


def test_views_of_a_function_with_several_differentiable_outputs_are_multi_output_views():
    first, _ = TwoViews.apply(leaf([[1.0, 2.0]]) * 1)
    with pytest.raises(RuntimeError, match="Output 0 of TwoViews is a view and is being modified inplace. This view "
                                           "is the output of a function that returns multiple views."):
        first.mul_(2)
    first, _ = TwoViews.apply(R.zeros(1, 2, dtype=R.float64))  # not recorded: no differentiable output
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        first.add_(leaf([1.0]))


class ReturnsInput(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_an_input_returned_as_is_comes_back_as_a_view_of_it():
    # torch 2.13 returns view_as(input), made without grad mode: a view with the same creation
    # meta as the views forward returns; an input that requires grad returned outside the
    # graph (no_grad) comes back detached instead
    x = R.zeros(2, dtype=R.float64)
    y = ReturnsInput.apply(x)
    assert y is not x and y._base is x and y.grad_fn is None
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        y.add_(leaf([1.0, 1.0]))
    y.add_(1)  # nothing requires grad: allowed, and seen through x
    np.testing.assert_array_equal(arr(x), [1.0, 1.0])
    a = leaf([1.0, 2.0])
    out = ReturnsInput.apply(a)
    assert out._base is a and out.grad_fn.name() == "ReturnsInputBackward"
    with pytest.raises(RuntimeError, match="Output 0 of ReturnsInput is a view and is being modified inplace"):
        out.mul_(2)
    (out * 2).sum().backward()
    np.testing.assert_array_equal(arr(a.grad), [2.0, 2.0])
    with R.no_grad():
        detached = ReturnsInput.apply(a)
    assert detached._base is None and not detached.requires_grad
    assert detached._version == a._version
