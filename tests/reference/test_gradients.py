"""Every op's gradient against central finite differences (float64, hypothesis-drawn).

Each test builds ``sum(f(inputs) * w)`` with a fixed non-trivial weight ``w``, runs
backward, and compares every input's ``.grad`` with finite differences of the same
function evaluated under no_grad.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import reference as R
from tests.reference.array_strategies import away_from_zero, broadcast_pair, nonempty_shapes, one_array, values
from tests.reference.helpers import FEW, SETTINGS, arr, check_double_backward, check_gradients, leaf

# -- strategies ----------------------------------------------------------------------


# -- binary arithmetic, with broadcasting ------------------------------------------------
@SETTINGS
@given(broadcast_pair())
def test_add_broadcasting(pair):
    check_gradients(lambda a, b: a + b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_sub_broadcasting(pair):
    check_gradients(lambda a, b: a - b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_mul_broadcasting(pair):
    check_gradients(lambda a, b: a * b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_div_broadcasting(pair):
    a, b = pair
    check_gradients(lambda a, b: a / b, a, away_from_zero(b, 0.5))


@SETTINGS
@given(broadcast_pair(low=0.5, high=2.0))
def test_pow_tensor_tensor_broadcasting(pair):
    check_gradients(lambda a, b: a ** b, *pair)


@SETTINGS
@given(one_array(), st.floats(-3, 3))
def test_scalar_operands(a, c):
    check_gradients(lambda x: x + c, a)
    check_gradients(lambda x: c + x, a)
    check_gradients(lambda x: x - c, a)
    check_gradients(lambda x: c - x, a)
    check_gradients(lambda x: x * c, a)
    check_gradients(lambda x: c * x, a)
    check_gradients(lambda x: x / (abs(c) + 0.5), a)
    check_gradients(lambda x: (abs(c) + 0.5) / x, away_from_zero(a, 0.5))
    check_gradients(lambda x: (abs(c) + 0.5) ** x, a)


@SETTINGS
@given(one_array(), st.sampled_from([0, 1, 2, 3, -1, 0.5, 2.5, -1.5]))
def test_pow_scalar_exponent(a, exponent):
    base = np.abs(a) + 0.5  # positive base: every exponent is defined and smooth
    check_gradients(lambda x: x ** exponent, base)
    check_gradients(lambda x: R.pow(x, exponent), base)
    check_gradients(lambda x: x.pow(exponent), base)


# -- matmul ---------------------------------------------------------------------------
@st.composite
def matmul_operands(draw):
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "batched", "broadcast"]))
    if kind == "vv":
        sa, sb = (k,), (k,)
    elif kind == "mv":
        sa, sb = (n, k), (k,)
    elif kind == "vm":
        sa, sb = (k,), (k, m)
    elif kind == "mm":
        sa, sb = (n, k), (k, m)
    elif kind == "batched":
        b = draw(st.integers(1, 3))
        sa, sb = (b, n, k), (b, k, m)
    else:  # batch dims broadcast against each other, or against a plain matrix
        b = draw(st.integers(2, 3))
        sa, sb = draw(st.sampled_from([((b, n, k), (k, m)), ((n, k), (b, k, m)), ((b, 1, n, k), (2, k, m)),
                                       ((b, n, k), (k,)), ((k,), (b, k, m))]))
    return draw(values(sa)), draw(values(sb))


@SETTINGS
@given(matmul_operands())
def test_matmul(operands):
    check_gradients(lambda a, b: a @ b, *operands)
    check_gradients(lambda a, b: R.matmul(a, b), *operands)


def test_mm_matches_numpy_product_rule():
    a = np.arange(6.0).reshape(2, 3)
    b = np.arange(12.0).reshape(3, 4) / 10
    ta, tb = leaf(a), leaf(b)
    R.mm(ta, tb).sum().backward()
    np.testing.assert_allclose(arr(ta.grad), np.ones((2, 4)) @ b.T)
    np.testing.assert_allclose(arr(tb.grad), a.T @ np.ones((2, 4)))


# -- unary ------------------------------------------------------------------------------
UNARY = {
    "neg": (lambda x: -x, None),
    "neg_fn": (lambda x: R.neg(x), None),
    "exp": (lambda x: x.exp(), None),
    "exp_fn": (lambda x: R.exp(x), None),
    "log": (lambda x: x.log(), "positive"),
    "tanh": (lambda x: R.tanh(x), None),
    "sigmoid": (lambda x: x.sigmoid(), None),
    "relu": (lambda x: R.relu(x), "nonzero"),
    "sin": (lambda x: x.sin(), None),
    "cos": (lambda x: R.cos(x), None),
    "sqrt": (lambda x: x.sqrt(), "positive"),
    "abs": (lambda x: x.abs(), "nonzero"),
    "abs_builtin": (lambda x: abs(x), "nonzero"),
    "pow_fn": (lambda x: R.pow(x, 3), None),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(a=one_array())
def test_unary(name, a):
    fn, domain = UNARY[name]
    if domain == "positive":
        a = np.abs(a) + 0.3
    elif domain == "nonzero":
        a = away_from_zero(a)
    check_gradients(fn, a)


# -- reductions -------------------------------------------------------------------------
@st.composite
def array_and_dim(draw):
    a = draw(one_array(nonempty_shapes))
    dim = draw(st.integers(-a.ndim, a.ndim - 1))
    return a, dim


@SETTINGS
@given(one_array())
def test_sum_and_mean_all(a):
    check_gradients(lambda x: x.sum(), a)
    check_gradients(lambda x: R.sum(x), a)
    check_gradients(lambda x: x.mean(), a)
    check_gradients(lambda x: R.mean(x), a)


@SETTINGS
@given(array_and_dim(), st.booleans())
def test_sum_and_mean_over_dim(a_dim, keepdim):
    a, dim = a_dim
    check_gradients(lambda x: x.sum(dim, keepdim=keepdim), a)
    check_gradients(lambda x: x.mean(dim=dim, keepdim=keepdim), a)


@SETTINGS
@given(one_array(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)), st.booleans())
def test_sum_and_mean_over_several_dims(a, keepdim):
    dims = (0, -1)
    check_gradients(lambda x: x.sum(dims, keepdim=keepdim), a)
    check_gradients(lambda x: x.mean(dims, keepdim=keepdim), a)


# -- views and shape ops ------------------------------------------------------------------
@SETTINGS
@given(one_array())
def test_reshape_view_flatten_clone(a):
    check_gradients(lambda x: x.reshape(-1), a)
    check_gradients(lambda x: R.reshape(x, (a.size, 1)), a)
    check_gradients(lambda x: x.view(-1) * 2, a)
    check_gradients(lambda x: x.view(a.size, 1, 1), a)
    check_gradients(lambda x: x.clone(), a)
    check_gradients(lambda x: R.clone(x) * x, a)


@SETTINGS
@given(one_array(hnp.array_shapes(min_dims=2, max_dims=3, max_side=3)), st.data())
def test_transpose_and_t(a, data):
    d0 = data.draw(st.integers(-a.ndim, a.ndim - 1))
    d1 = data.draw(st.integers(-a.ndim, a.ndim - 1))
    swapped = np.swapaxes(a, d0, d1).shape
    scale = R.tensor(np.arange(1.0, 1.0 + a.size).reshape(swapped), dtype=R.float64)
    check_gradients(lambda x: x.transpose(d0, d1) * scale, a)
    check_gradients(lambda x: R.transpose(x, d0, d1).exp(), a)
    if a.ndim == 2:
        check_gradients(lambda x: x.t(), a)
        check_gradients(lambda x: R.t(x) @ x, a)
        check_gradients(lambda x: x.T, a)
    # a non-contiguous view followed by reshape (which must copy)
    check_gradients(lambda x: x.transpose(0, -1).reshape(-1), a)


@SETTINGS
@given(one_array(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)), st.integers(1, 3))
def test_expand(a, extra):
    target = (extra, 2) + tuple(2 if s == 1 else s for s in a.shape)
    check_gradients(lambda x: x.expand(*target), a)
    check_gradients(lambda x: x.expand(target) * x.expand(target).exp(), a)
    check_gradients(lambda x: x.expand(*target[:2], *((-1,) * a.ndim)), a)
    check_gradients(lambda x: x.expand_as(R.zeros(*target, dtype=R.float64)), a)


@SETTINGS
@given(one_array(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=2)), st.data())
def test_squeeze_unsqueeze(a, data):
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    udim = data.draw(st.integers(-a.ndim - 1, a.ndim))
    check_gradients(lambda x: x.squeeze(), a)
    check_gradients(lambda x: x.squeeze(dim), a)
    check_gradients(lambda x: R.squeeze(x, dim) * 3, a)
    check_gradients(lambda x: x.unsqueeze(udim), a)
    check_gradients(lambda x: R.unsqueeze(x, udim).exp(), a)


@st.composite
def basic_index(draw, shape):
    parts = []
    for size in shape[: draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            parts.append(draw(st.integers(-size, size - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-size, size)))
            stop = draw(st.one_of(st.none(), st.integers(-size, size)))
            step = draw(st.one_of(st.none(), st.integers(1, 2)))
            parts.append(slice(start, stop, step))
    return parts[0] if len(parts) == 1 and draw(st.booleans()) else tuple(parts)


@SETTINGS
@given(one_array(nonempty_shapes), st.data())
def test_getitem_ints_and_slices(a, data):
    index = data.draw(basic_index(a.shape))
    check_gradients(lambda x: x[index], a)
    check_gradients(lambda x: x[index] * x[index], a)


def test_getitem_repeated_reads_accumulate():
    check_gradients(lambda x: x[0] + x[0] * 2 + x[1:].sum(), np.array([1.0, 2.0, 3.0]))


# -- __setitem__ and in-place ops on non-leaf tensors ----------------------------------------
@SETTINGS
@given(one_array(nonempty_shapes), st.data())
def test_setitem_on_non_leaf(a, data):
    index = data.draw(basic_index(a.shape))
    target_shape = a[index].shape
    v = data.draw(values(target_shape))

    def with_tensor_value(x, val):
        y = x * 1.5
        y[index] = val
        return y * y

    def with_scalar_value(x):
        y = x * 2.0  # (exp would save its output, and then the write is an error)
        y[index] = 0.25
        return y * x

    check_gradients(with_tensor_value, a, v)
    check_gradients(with_scalar_value, a)


def test_setitem_broadcast_value():
    def fn(x, v):
        y = x.clone()
        y[1:, :] = v
        return y * 2

    check_gradients(fn, np.arange(6.0).reshape(3, 2), np.array([0.5, -1.0]))


INPLACE = {
    "add_": lambda y, o: y.add_(o),
    "add_alpha": lambda y, o: y.add_(o, alpha=-2.5),
    "sub_": lambda y, o: y.sub_(o),
    "sub_alpha": lambda y, o: y.sub_(o, alpha=0.5),
    "mul_": lambda y, o: y.mul_(o),
    "div_": lambda y, o: y.div_(o),
    "copy_": lambda y, o: y.copy_(o),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
@SETTINGS
@given(pair=broadcast_pair())
def test_inplace_binary_on_non_leaf(name, pair):
    a, b = pair
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    if out_shape != a.shape:
        a = np.broadcast_to(a, out_shape).copy()  # in-place results keep self's shape
    if name == "div_":
        b = away_from_zero(b, 0.5)
    op = INPLACE[name]

    def fn(x, other):
        y = x * 2.0
        result = op(y, other)
        assert result is y
        return y * x  # uses the new value of y and x again

    check_gradients(fn, a, b)


@SETTINGS
@given(one_array(), st.floats(-3, 3))
def test_inplace_scalar_operands(a, c):
    check_gradients(lambda x: (x.sin()).add_(c) * x, a)
    check_gradients(lambda x: (x * 1.0).sub_(c), a)
    check_gradients(lambda x: (x.cos()).mul_(c) + x, a)
    check_gradients(lambda x: (x.sin()).div_(abs(c) + 0.5), a)


@SETTINGS
@given(one_array())
def test_zero_and_fill_on_non_leaf(a):
    def zeroed(x):
        y = x.sin()
        y.zero_()
        return y + x * 3

    def filled(x):
        y = x * x
        y.fill_(2.5)
        return y * x

    def filled_with_tensor(x, v):
        y = x * 1
        y.fill_(v)
        return y * x

    check_gradients(zeroed, a)
    check_gradients(filled, a)
    check_gradients(filled_with_tensor, a, np.array(0.75))


@SETTINGS
@given(broadcast_pair())
def test_augmented_assignment(pair):
    a, b = pair
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    a = np.broadcast_to(a, out_shape).copy()

    def iadd(x, o):
        y = x.sin()
        y += o
        return y

    def imul(x, o):
        y = x + 0
        y *= o
        y *= o
        return y

    def mixed(x, o):
        y = x * 1
        y += o * x
        y *= x
        y -= 2
        return y

    check_gradients(iadd, a, b)
    check_gradients(imul, a, b)
    check_gradients(mixed, a, b)


def test_inplace_keeps_object_and_bumps_version():
    x = leaf([1.0, 2.0])
    y = x * 1
    v = y._version
    assert y.add_(1) is y and y.mul_(2) is y
    assert y._version >= v + 2
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0])


# -- a longer composite ---------------------------------------------------------------------
@FEW
@given(one_array(hnp.array_shapes(min_dims=2, max_dims=2, max_side=3)))
def test_composite_expression(a):
    def fn(x):
        h = (x @ x.t()).tanh() + x.sum(1, keepdim=True).sigmoid()
        return (h * h).mean(0) / (1 + h.abs().sum())

    check_gradients(fn, a)


# -- double backward (create_graph=True) ------------------------------------------------------
DOUBLE = {
    "mul": (lambda a, b: a * b, 2, None),
    "div": (lambda a, b: a / b, 2, "positive"),
    "pow_scalar": (lambda a: a ** 3, 1, None),
    "pow_tensor": (lambda a, b: a ** b, 2, "positive"),
    "exp": (lambda a: a.exp(), 1, None),
    "log": (lambda a: a.log(), 1, "positive"),
    "tanh": (lambda a: a.tanh(), 1, None),
    "sigmoid": (lambda a: a.sigmoid(), 1, None),
    "sin": (lambda a: a.sin() * a.cos(), 1, None),
    "sqrt": (lambda a: a.sqrt(), 1, "positive"),
    "matmul": (lambda a, b: (a @ b) * (a @ b), 2, "matrix"),
    "mean_getitem": (lambda a: (a[0] * a).mean(0, keepdim=True) ** 2, 1, None),
}


@pytest.mark.parametrize("name", sorted(DOUBLE))
@FEW
@given(data=st.data())
def test_double_backward(name, data):
    fn, arity, domain = DOUBLE[name]
    if domain == "matrix":
        n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
        arrays = [data.draw(values((n, k))), data.draw(values((k, m)))]
    else:
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3))
        arrays = [data.draw(values(shape)) for _ in range(arity)]
        if domain == "positive":
            arrays = [np.abs(x) + 0.5 for x in arrays]
    check_double_backward(fn, *arrays)


def test_double_backward_hessian_vector_product():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = leaf([[0.5, -1.0], [2.0, 0.0]])
    z = x ** 2 + y * x + y ** 2
    gx, gy = R.autograd.grad(z.sum(), (x, y), create_graph=True)
    np.testing.assert_allclose(arr(gx), 2 * arr(x) + arr(y))
    (hv,) = R.autograd.grad((2 * gx + gy).sum(), x, create_graph=True)
    np.testing.assert_allclose(arr(hv), np.full((2, 2), 5.0))
    assert hv.grad_fn is not None


# -- masked_fill: values compared with numpy, the gradient with finite differences -------------
@SETTINGS
@given(one_array(), st.integers(0, 2**16))
def test_masked_fill(a, seed):
    mask = np.asarray(np.random.default_rng(seed).random(a.shape) > 0.5)
    got = R.tensor(a).masked_fill(R.from_numpy(mask), -7.0)
    np.testing.assert_array_equal(arr(got), np.where(mask, -7.0, a))
    check_gradients(lambda t: t.masked_fill(R.from_numpy(mask), -7.0) * t, a)
    check_double_backward(lambda t: t.masked_fill(R.from_numpy(mask), 0.5) * t, a)


# -- cat: values compared with numpy, gradients (each input its slice) with finite differences --
@SETTINGS
@given(hnp.arrays(np.float64, (2, 3), elements=st.floats(-2, 2)),
       hnp.arrays(np.float64, (2, 1), elements=st.floats(-2, 2)))
def test_cat(a, b):
    np.testing.assert_array_equal(arr(R.cat([R.tensor(a), R.tensor(b)], dim=1)), np.concatenate([a, b], axis=1))
    np.testing.assert_array_equal(arr(R.cat((R.tensor(a.T), R.tensor(b.T)))), np.concatenate([a.T, b.T]))
    check_gradients(lambda s, t: R.cat([s * s, t, s[:, :1]], dim=-1), a, b)
    check_double_backward(lambda s, t: R.cat([s * s, t * t], dim=1), a, b)
