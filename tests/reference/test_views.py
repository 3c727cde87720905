"""The reference engine's views and in-place ops on them (suite `views`), multi-grad hooks
and queued callbacks: gradients against hand-computed values, and no reference cycle."""
from __future__ import annotations

import weakref

import numpy as np
import pytest

import reference as R
from reference.autograd.graph import increment_version, register_multi_grad_hook
from tests.reference.helpers import gc_disabled


def grad_of(fn, values):
    a = R.tensor(values, requires_grad=True)
    fn(a).sum().backward()
    return a.grad.numpy()


def test_inplace_on_transposed_view():  # rule: views.inplace-on-view-rewrites-base
    def fn(a):
        b = a * 1
        b.t()[0].mul_(3)  # column 0 of b
        return b * R.tensor([[1.0, 2.0], [3.0, 4.0]])

    np.testing.assert_allclose(grad_of(fn, [[1.0, 1.0], [1.0, 1.0]]), [[3, 2], [9, 4]])


def test_setitem_on_view_of_view():  # rule: views.view-history-follows-base
    w = R.ones(1, requires_grad=True)

    def fn(a):
        b = a * 1
        b[1:][0:1] = w * 5
        return b

    np.testing.assert_allclose(grad_of(fn, [1.0, 1.0, 1.0]), [1, 0, 1])
    np.testing.assert_allclose(w.grad.numpy(), [5])


def test_view_retain_grad_follows_new_history():
    a = R.ones(3, requires_grad=True)
    b = a * 1
    v = b[:2]
    v.retain_grad()
    v.mul_(2)
    (v * 3).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), [3, 3])
    np.testing.assert_allclose(a.grad.numpy(), [6, 6, 0])


def test_fill_and_zero_on_views():
    def fn(a):
        b = a * 2
        b[0].fill_(7.0)
        b[2:].zero_()
        return b

    np.testing.assert_allclose(grad_of(fn, [1.0, 1.0, 1.0, 1.0]), [0, 2, 0, 0])


def test_no_cycle_after_inplace_on_view():  # rule: views.inplace-on-view-graph-freed
    with gc_disabled():
        a = R.ones(4, requires_grad=True)
        b = a * 1
        v = b[1:3]
        v.mul_(a[1:3] * 1)
        node = weakref.ref(b.grad_fn)
        view_node = weakref.ref(v.grad_fn)
        del b, v
        assert node() is None and view_node() is None


def test_views_registry_drops_dead_views():
    b = R.ones(4) * 1
    for i in range(100):
        b[i % 4: i % 4 + 1]
    assert len(b._views) <= 16


def test_no_grad_view_is_not_registered_and_refuses():
    b = R.ones(4, requires_grad=True) * 1
    with R.no_grad():
        v = b[:2]
    assert not getattr(b, "_views", None)
    with pytest.raises(RuntimeError, match="no_grad mode"):
        v.add_(1)


def test_multi_grad_hook_holds_no_cycle():
    with gc_disabled():
        a = R.ones(2, requires_grad=True)
        y = a * 2
        register_multi_grad_hook((a, y), lambda grads: None)
        ref_a, ref_y = weakref.ref(a), weakref.ref(y)
        del a, y
        assert ref_a() is None and ref_y() is None


def test_multi_grad_hook_with_autograd_grad_inputs():
    a = R.ones(2, requires_grad=True)
    b = R.ones(2, requires_grad=True)
    seen = []
    register_multi_grad_hook((a, b), lambda grads: seen.append([g is None for g in grads]))
    R.autograd.grad((a * b).sum(), (a,))
    assert seen == [[False, True]]


def test_callbacks_of_nested_backward_stay_in_their_task():
    order = []
    x = R.ones(1, requires_grad=True)

    def hook(g):
        R.autograd.Variable._execution_engine.queue_callback(lambda: order.append("outer"))
        inner = R.ones(1, requires_grad=True)

        def inner_hook(g2):
            R.autograd.Variable._execution_engine.queue_callback(lambda: order.append("inner"))

        with R.enable_grad():
            y2 = inner * 2
            y2.register_hook(inner_hook)
            y2.sum().backward()
        order.append("inner returned")

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert order == ["inner", "inner returned", "outer"]


def test_increment_version_of_several():
    a, b = R.ones(1), R.ones(1)
    increment_version([a, b])
    assert (a._version, b._version) == (1, 1)


def test_narrow_and_select_are_views_of_their_base():
    base = R.tensor([[0.0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])
    narrowed, selected = base.narrow(1, 1, 2), R.select(base, 0, -1)
    np.testing.assert_allclose(narrowed.numpy(), [[1, 2], [5, 6], [9, 10]])
    np.testing.assert_allclose(selected.numpy(), [8, 9, 10, 11])
    assert narrowed._base is base and selected._base is base
    narrowed.mul_(10)
    assert base._version == narrowed._version == selected._version == 1
    np.testing.assert_allclose(selected.numpy(), [8, 90, 100, 11])
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        base.narrow(1, 3, 2)
    with pytest.raises(IndexError, match="out of range"):
        base.select(0, 3)


def test_inplace_on_narrowed_view_of_a_clone_reaches_the_leaf():  # rule: views.inplace-on-view-rewrites-base
    def fn(a):
        b = a.clone()
        b.narrow(0, 0, 1).mul_(2)
        b.select(1, 1).mul_(3)
        return b

    np.testing.assert_allclose(grad_of(fn, [[1.0, 1.0], [1.0, 1.0]]), [[2, 6], [1, 3]])


def test_outputs_of_unbind_split_and_chunk_refuse_recorded_writes():  # rule: views.inplace-on-multi-output-view
    a = R.ones(6, requires_grad=True)
    b = a * 1
    for parts in (b.unbind(), b.split(4), b.chunk(3), R.split(b, [1, 5])):
        assert all(p._base is b for p in parts)
        with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
            parts[-1].mul_(2)
        with pytest.raises(RuntimeError, match="returns multiple views"):
            parts[0].view(-1).add_(1)  # a view of such an output too
    assert [p.shape[0] for p in b.split(4)] == [4, 2] and [p.shape[0] for p in b.chunk(4)] == [2, 2, 2]
    with R.no_grad():
        b.unbind()[0].mul_(5)
    first, rest = b.unsafe_split(2)[0], b.unsafe_chunk(3)[1]
    first.mul_(2)  # the unsafe variants opt out: their outputs are no views, b's history ignores the writes
    rest.mul_(3)
    (b * R.arange(1.0, 7.0)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1, 2, 3, 4, 5, 6])  # nor is the no_grad write recorded
    np.testing.assert_allclose(b.detach().numpy(), [10, 2, 3, 3, 1, 1])  # but all three wrote into b's memory


MULTI_OUTPUT_CALLS = (  # (call, torch's node name): each returns several views of its input
    (lambda t: t.unbind(), "UnbindBackward0"),
    (lambda t: t.unbind(1), "UnbindBackward0"),
    (lambda t: t.split(2), "SplitBackward0"),
    (lambda t: t.chunk(2), "SplitBackward0"),
    (lambda t: t.split([1, 2]), "SplitWithSizesBackward0"),
    (lambda t: t.split_with_sizes([2, 1], 1), "SplitWithSizesBackward0"),
)


@pytest.mark.parametrize("call, name", MULTI_OUTPUT_CALLS)
def test_outputs_of_one_multi_view_call_share_one_node(call, name):  # rule: views.inplace-on-multi-output-view
    a = R.ones(3, 3, requires_grad=True)
    b = a * 1
    parts = call(b)
    node = parts[0].grad_fn
    assert node.name() == name and len(parts) > 1
    assert all(p.grad_fn is node for p in parts) and [p.output_nr for p in parts] == list(range(len(parts)))
    assert node.next_functions == ((b.grad_fn, 0),)
    assert all(p._base is b and p._is_view() for p in parts)  # still views of the input ...
    with R.no_grad():
        parts[-1].mul_(2)
    assert all(p._version == b._version == 1 for p in parts)  # ... sharing its version counter
    assert float(b.detach().numpy().ravel()[-1]) == 2.0


def test_hook_on_one_output_runs_with_none_in_backward_through_another():
    x = R.ones(4, requires_grad=True)
    parts = x.unbind()
    seen = []
    parts[0].register_hook(lambda grad: seen.append(None if grad is None else grad.numpy().copy()))
    parts[0].backward()
    parts[2].backward()
    assert len(seen) == 2 and seen[0] == 1 and seen[1] is None
    np.testing.assert_allclose(x.grad.numpy(), [1, 0, 1, 0])


@pytest.mark.parametrize("call, name", MULTI_OUTPUT_CALLS)
def test_gradient_through_some_outputs_of_a_multi_view_call(call, name):
    base = np.arange(9.0).reshape(3, 3)
    a = R.tensor(base, requires_grad=True)
    parts = call(a * 1)
    (parts[0] * 2).sum().backward(retain_graph=True)
    (parts[-1] * parts[-1]).sum().backward()  # through the same node again: nothing it needs is freed
    expected = _region(call, 0, np.full((3, 3), 2.0)) + _region(call, -1, 2 * base)
    np.testing.assert_allclose(a.grad.numpy(), expected)


def _region(call, which, values):
    """``values`` where output ``which`` of ``call`` reads its input, zeros elsewhere."""
    mask = R.zeros(3, 3)
    with R.no_grad():
        call(mask)[which].fill_(1.0)
    return np.where(mask.numpy() == 1, values, 0)


@pytest.mark.parametrize("call, name", MULTI_OUTPUT_CALLS)
def test_double_backward_through_a_multi_view_call(call, name):
    base = np.arange(1.0, 10.0).reshape(3, 3)
    a = R.tensor(base, requires_grad=True)
    parts = call(a)
    (g,) = R.autograd.grad((parts[-1] ** 3).sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _region(call, -1, 3 * base ** 2))
    (gg,) = R.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(gg.numpy(), _region(call, -1, 6 * base))


def test_write_into_a_view_of_a_multi_view_output_names_its_own_node():  # rule: views.inplace-on-multi-output-view
    b = R.ones(3, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="Output 1 of Unbind is a view"):
        b.unbind()[1].mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of Select is a view .* returns multiple views"):
        b.split(1)[0][0].mul_(2)
    plain, w = R.zeros(3), R.ones((), requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad mode .* returns multiple views"):  # no node to name
        plain.unbind()[0].mul_(w)


UNSAFE_CALLS = (
    (lambda t: t.unsafe_split(1), "UnsafeSplitBackward0"),
    (lambda t: t.unsafe_split_with_sizes((1, 1, 1)), "UnsafeSplitWithSizesBackward0"),
    (lambda t: t.unsafe_chunk(3), "UnsafeSplitBackward0"),
)


@pytest.mark.parametrize("call, name", UNSAFE_CALLS)
def test_outputs_of_unsafe_split_are_one_node_not_views(call, name):
    a = R.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    b = a * 1
    s1, s2, s3 = call(b)
    assert s1.grad_fn is s2.grad_fn is s3.grad_fn and s1.grad_fn.name() == name
    assert [s.output_nr for s in (s1, s2, s3)] == [0, 1, 2]
    assert s1._base is None and not s1._is_view()
    s1.mul_(s2)  # its own version counter: what MulBackward saved of s2 stays valid
    assert (s1._version, s2._version, b._version) == (1, 0, 0)
    np.testing.assert_allclose(b.detach().numpy()[0], [0, 4, 10])  # the memory is still shared
    (s1.sum() + b.sum()).backward()  # b's history does not see the write
    np.testing.assert_allclose(a.grad.numpy(), [[4, 5, 6], [1, 2, 3], [1, 1, 1]])


def test_unsafe_split_of_a_leaf_may_be_written_and_of_a_no_grad_input_records_nothing():
    a = R.ones(4, requires_grad=True)
    first, second = a.unsafe_split(2)
    first.mul_(3)
    (first.sum() + second.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [3, 3, 1, 1])
    with R.no_grad():
        parts = a.unsafe_chunk(2)
    assert parts[0].grad_fn is None and not parts[0].requires_grad


@pytest.mark.parametrize(
    "call, name, shape",
    [
        (lambda b: b.squeeze(), "SqueezeBackward0", (3,)),
        (lambda b: b.squeeze(0), "SqueezeBackward1", (3, 1)),
        (lambda b: b.squeeze(1), "SqueezeBackward1", (1, 3, 1)),  # not of size 1: a view all the same
        (lambda b: b.squeeze((0, 2)), "SqueezeBackward2", (3,)),
        (lambda b: b.squeeze([1, -1]), "SqueezeBackward2", (1, 3)),
    ],
)
def test_squeeze_overloads_are_views_named_as_torch_names_them(call, name, shape):
    a = R.ones(1, 3, 1, requires_grad=True)
    view = call(a * 1)
    assert view._is_view() and view.grad_fn.name() == name and tuple(view.shape) == shape
    (view * R.tensor(2.0)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((1, 3, 1), 2.0))


@pytest.mark.parametrize(
    "index, name",
    [
        (1, "SelectBackward0"),
        ((slice(None), 0), "SelectBackward0"),  # the whole-dimension slice does nothing
        ((1, 0), "SelectBackward0"),
        ((slice(0, 1), 1), "SelectBackward0"),
        ((1, slice(0, 1)), "SliceBackward0"),
        ((Ellipsis, 0), "SelectBackward0"),
        (slice(None, None, 2), "SliceBackward0"),
    ],
)
def test_basic_index_is_named_by_its_last_effective_item(index, name):
    b = R.ones(3, 2, requires_grad=True) * 1
    assert b[index].grad_fn.name() == name and b[index]._is_view()


def _chain(t):
    """The node names from ``t.grad_fn`` down its first edges, until the base's node."""
    names, node = [], t.grad_fn
    while node is not None and node.name() not in ("MulBackward0", "AccumulateGrad"):
        names.append(node.name())
        node = node.next_functions[0][0]
    return names


# Observed on torch 2.13: a basic index is applied item by item, a view of a view per item that
# does something; an index that does nothing is an alias, a lone slice always a slice.
@pytest.mark.parametrize("index, chain", [
    (None, ["UnsqueezeBackward0"]),
    (Ellipsis, ["AliasBackward0"]),
    ((slice(None), slice(None)), ["AliasBackward0"]),
    ((), ["AliasBackward0"]),
    (slice(None), ["SliceBackward0"]),
    ((1, 0), ["SelectBackward0", "SelectBackward0"]),
    ((None, 0), ["SelectBackward0", "UnsqueezeBackward0"]),
    ((0, Ellipsis, None), ["UnsqueezeBackward0", "SelectBackward0"]),
    ((0, slice(1, 3), slice(None, None, 2)), ["SliceBackward0", "SliceBackward0", "SelectBackward0"]),
    ((slice(None), None, slice(None), 2), ["SelectBackward0", "UnsqueezeBackward0"]),
])
def test_a_basic_index_is_one_view_per_item_as_in_torch(index, chain):
    b = R.ones(2, 3, 4, requires_grad=True) * 1
    view = b[index]
    assert _chain(view) == chain and view._is_view() and view._base is b
    expected = np.zeros((2, 3, 4))
    expected[index] = 2.0
    (grad,) = R.autograd.grad((view * 2).sum(), b)
    np.testing.assert_allclose(grad.numpy(), expected)


def test_narrow_over_a_whole_dimension_is_still_a_slice():
    b = R.ones(2, 3, requires_grad=True) * 1
    assert b.narrow(0, 0, 2).grad_fn.name() == "SliceBackward0"
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        b[0, 0, 0]


def test_an_inplace_op_through_a_view_of_several_items_rewrites_the_base():
    a = R.ones(2, 3, 4, requires_grad=True)
    b = a * 1
    b[0, 1:3].mul_(3)
    assert b.grad_fn.name() == "CopySlices" and b._version == 1
    (grad,) = R.autograd.grad(b.sum(), a)
    expected = np.ones((2, 3, 4))
    expected[0, 1:3] = 3
    np.testing.assert_allclose(grad.numpy(), expected)


def test_select_is_a_select_view():
    a = R.ones(3, 2, requires_grad=True)
    row = (a * 1).select(0, 1)
    assert row.grad_fn.name() == "SelectBackward0"
    (row * R.tensor([2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[0, 0], [2, 3], [0, 0]])


def test_boolean_scalar_index_is_a_copy_not_a_view():
    # numpy and torch both treat a boolean scalar as a mask: a new leading dimension, new memory
    a = R.ones(3, 2, requires_grad=True)
    masked = (a * 1)[True]
    assert not masked._is_view() and masked.grad_fn.name() == "IndexBackward0" and tuple(masked.shape) == (1, 3, 2)
    (masked * R.tensor(2.0)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 2), 2.0))
    base = R.zeros(2)
    copy = base[True]
    copy.add_(1)
    np.testing.assert_allclose(base.numpy(), [0, 0])
    assert base._version == 0


def test_gather_and_stack_as_torch():
    x = R.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    index = R.tensor([[2, 0], [1, 1]])
    y = x.gather(1, index)
    assert y.tolist() == [[3.0, 1.0], [5.0, 5.0]] and y.grad_fn.name() == "GatherBackward0"
    node = y.grad_fn
    assert node._saved_self is x and node._saved_index is index and node._saved_dim == 1
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 1.0], [0.0, 2.0, 0.0]]  # a repeated index adds twice
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        x.gather(1, index.float())
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, R.tensor([[3]]))
    a, b = R.ones(2, requires_grad=True), R.zeros(2, requires_grad=True)
    s = R.stack([a, b], dim=1)
    assert s.shape == (2, 2) and s.grad_fn.name() == "StackBackward0" and len(s.grad_fn.next_functions) == 2
    (s * R.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert a.grad.tolist() == [1.0, 3.0] and b.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        R.stack([a, R.ones(3)])


class _Sub(R.Tensor):
    pass


VIEW_MAKERS = {  # how the view was made: torch 2.13 regenerates each as AsStridedBackward0
    "select": lambda a: a[1], "slice": lambda a: a[1:], "view": lambda a: a.view(-1), "t": lambda a: a.t(),
    "unsqueeze": lambda a: a.unsqueeze(0), "expand": lambda a: a[0:1].expand(2, 4),
    "steps": lambda a: a[::2, 1::2], "of_a_view": lambda a: a[1:][:, 1:], "subclass_alias": lambda a: a.as_subclass(_Sub),
}


@pytest.mark.parametrize("make", sorted(VIEW_MAKERS))
def test_a_view_of_a_modified_base_is_regenerated_as_one_as_strided_node(make):
    # rule: views.view-history-follows-base -- one AsStridedBackward0 over the base's new history,
    # and the gradient through it is the view's own region of the base (values from torch 2.13)
    x = R.tensor(np.linspace(0.5, 1.5, 12).reshape(3, 4), requires_grad=True)
    w = R.tensor(np.arange(1.0, 13.0).reshape(3, 4))
    a = x.clone()
    v = VIEW_MAKERS[make](a)
    a.mul_(w)
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert [n.name() for n, _ in v.grad_fn.next_functions] == ["MulBackward0"]
    weights = R.tensor(np.arange(1.0, 1.0 + v.numel()).reshape(tuple(v.shape)))
    (v * weights).sum().backward()
    expected = np.zeros(12)
    positions = VIEW_MAKERS[make](R.tensor(np.arange(12.0).reshape(3, 4))).numpy().astype(int).reshape(-1)
    np.add.at(expected, positions, np.arange(1.0, 1.0 + v.numel()))
    np.testing.assert_allclose(x.grad.numpy().reshape(-1), expected * w.numpy().reshape(-1))


def test_in_place_through_a_view_regenerates_the_others_and_a_subclass_alias():
    x = R.ones(3, 4, requires_grad=True)
    a = x.clone()
    s = a.as_subclass(_Sub)
    first = a[0]
    a[1] = R.ones(4, requires_grad=True)  # CopySlices over the base
    assert (first.grad_fn.name(), a.grad_fn.name()) == ("AsStridedBackward0", "CopySlices")
    s.mul_(2)  # in place through the alias: the alias's own node is regenerated, as torch's
    assert (s.grad_fn.name(), a.grad_fn.name()) == ("AsStridedBackward0", "CopySlices")


def test_gather_double_backward_is_scatter_add_as_torch_records_it():
    # torch 2.13: the gradient of gather under create_graph is ScatterAddBackward0 with edges
    # (None for the zeros, the incoming gradient's node), values as below
    x = R.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.gather(1, R.tensor([[0, 0], [1, 0]]))
    g, = R.autograd.grad((y * y).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "ScatterAddBackward0"
    assert [n if n is None else n.name() for n, _ in g.grad_fn.next_functions] == [None, "AddBackward0"]
    assert g.detach().numpy().tolist() == [[4.0, 0.0], [6.0, 8.0]]
    g2, = R.autograd.grad(g.sum(), x)
    assert g2.numpy().tolist() == [[4.0, 0.0], [2.0, 2.0]]
