"""Forward-mode AD of the reference engine (reference.autograd.forward_ad).

Every op's jvp is compared with central finite differences along the tangent
direction, ``(f(x + eps*t) - f(x - eps*t)) / (2*eps)``, evaluated outside any level
on plain tensors (float64, hypothesis-drawn shapes and values). The rest checks the
level API, tangent lifetimes and the interplay with reverse mode, following what
torch 2.13 does (conformance/evidence/forward_levels.toml).
"""
from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import reference as R
import reference.autograd.forward_ad as fwAD
from reference.autograd.forward_ad import _registry
from tests.reference.array_strategies import away_from_zero, broadcast_pair, nonempty_shapes, one_array, small_shapes, values
from tests.reference.helpers import SETTINGS, arr, error_of, gc_disabled, leaf, numeric_grads, weight_like

NESTED = "Nested forward mode AD is not supported at the moment"
NO_LEVEL = (
    "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
)
EXIT_NOT_LAST = (
    "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
)
NO_JVP = "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
EPS = 1e-6


@pytest.fixture(autouse=True)
def no_level_left_open():
    """Each test starts and ends with no level open (a leak would poison later tests)."""
    assert fwAD._current_level == -1, "a previous test left a forward-AD level open"
    yield
    leaked = fwAD._current_level != -1
    if leaked:
        fwAD.exit_dual_level()
    assert not leaked, "the test left a forward-AD level open"


# -- helpers -------------------------------------------------------------------------
def t64(values) -> R.Tensor:
    return R.tensor(np.array(values, dtype=np.float64), dtype=R.float64)


def directional_fd(fn, arrays, directions):
    """Central finite difference of ``fn`` at ``arrays`` along ``directions`` (None: 0)."""
    def at(sign):
        moved = [a + sign * EPS * d if d is not None else a.copy() for a, d in zip(arrays, directions)]
        return arr(fn(*[t64(m) for m in moved]))

    return (at(1.0) - at(-1.0)) / (2 * EPS)


def check_jvp(fn, *arrays, rtol=1e-5, atol=1e-6):
    """For all inputs dual together, and for each input dual alone, the output's tangent
    matches finite differences along the tangents, and its primal matches ``fn``."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    tangents = [weight_like(a.shape, seed=i + 1) for i, a in enumerate(arrays)]
    expected_value = arr(fn(*[t64(a) for a in arrays]))
    masks = [tuple(True for _ in arrays)]
    if len(arrays) > 1:
        masks += [tuple(i == j for j in range(len(arrays))) for i in range(len(arrays))]
    for mask in masks:
        directions = [t if on else None for t, on in zip(tangents, mask)]
        with fwAD.dual_level():
            inputs = [fwAD.make_dual(t64(a), t64(d)) if d is not None else t64(a) for a, d in zip(arrays, directions)]
            out = fn(*inputs)
            primal, tangent = fwAD.unpack_dual(out)
            assert tangent is not None, f"output has no tangent (dual inputs: {mask})"
            got_tangent, got_primal = arr(tangent), arr(primal)
        want = directional_fd(fn, arrays, directions)
        assert got_tangent.shape == want.shape, f"tangent shape {got_tangent.shape}, output shape {want.shape}"
        np.testing.assert_allclose(got_primal, expected_value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_tangent, want, rtol=rtol, atol=atol, err_msg=f"dual inputs: {mask}")


# -- strategies ----------------------------------------------------------------------
@st.composite
def target_and_operand(draw, low=-2.0, high=2.0):
    """A target of some shape and an operand that broadcasts to it (for in-place ops)."""
    shape = draw(small_shapes)
    keep = draw(st.integers(0, len(shape)))
    operand_shape = tuple(1 if draw(st.booleans()) else s for s in shape[len(shape) - keep:])
    return draw(values(shape, low, high)), draw(values(operand_shape, low, high))


# -- binary arithmetic ---------------------------------------------------------------
@SETTINGS
@given(broadcast_pair())
def test_add_jvp(pair):
    check_jvp(lambda a, b: a + b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_sub_jvp(pair):
    check_jvp(lambda a, b: a - b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_mul_jvp(pair):
    check_jvp(lambda a, b: a * b, *pair)


@SETTINGS
@given(broadcast_pair())
def test_div_jvp(pair):
    a, b = pair
    check_jvp(lambda x, y: x / y, a, away_from_zero(b, 0.5))


@SETTINGS
@given(one_array(), st.floats(-3, 3))
def test_scalar_operands_jvp(a, c):
    check_jvp(lambda x: x + c, a)
    check_jvp(lambda x: c + x, a)
    check_jvp(lambda x: x - c, a)
    check_jvp(lambda x: c - x, a)
    check_jvp(lambda x: x * c, a)
    check_jvp(lambda x: c * x, a)
    check_jvp(lambda x: x / (c if abs(c) > 0.1 else 2.0), a)
    check_jvp(lambda x: c / x, away_from_zero(a, 0.5))
    check_jvp(lambda x: -x, a)


@SETTINGS
@given(one_array(), st.sampled_from([0, 1, 2, 3, -1, -2]))
def test_pow_integer_exponent_jvp(a, exponent):
    base = away_from_zero(a, 0.3) if exponent < 0 else a
    check_jvp(lambda x: x ** exponent, base)


@SETTINGS
@given(one_array(low=0.2, high=3.0), st.sampled_from([0.5, 2.5, -1.5, 1.0 / 3]))
def test_pow_fractional_exponent_jvp(a, exponent):
    check_jvp(lambda x: x ** exponent, a)


@SETTINGS
@given(broadcast_pair(low=0.3, high=2.0))
def test_pow_tensor_exponent_jvp(pair):
    check_jvp(lambda x, y: x ** y, *pair)


@SETTINGS
@given(one_array(low=-2.0, high=2.0), st.sampled_from([0.5, 2.0, 3.7]))
def test_number_to_tensor_power_jvp(a, base):
    check_jvp(lambda x: base ** x, a)


# -- unary math ----------------------------------------------------------------------
UNARY = {
    "exp": (lambda x: x.exp(), lambda a: a),
    "log": (lambda x: x.log(), lambda a: np.abs(a) + 0.2),
    "tanh": (lambda x: x.tanh(), lambda a: a),
    "sigmoid": (lambda x: x.sigmoid(), lambda a: a),
    "relu": (lambda x: x.relu(), away_from_zero),
    "sin": (lambda x: x.sin(), lambda a: a),
    "cos": (lambda x: x.cos(), lambda a: a),
    "sqrt": (lambda x: x.sqrt(), lambda a: np.abs(a) + 0.2),
    "abs": (lambda x: x.abs(), away_from_zero),
    "neg": (lambda x: -x, lambda a: a),
    "R.exp": (lambda x: R.exp(x), lambda a: a),
    "R.tanh": (lambda x: R.tanh(x), lambda a: a),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(one_array())
def test_unary_jvp(name, a):
    fn, domain = UNARY[name]
    check_jvp(fn, domain(a))


@SETTINGS
@given(one_array())
def test_composite_chain_jvp(a):
    check_jvp(lambda x: ((x * 1.5).tanh().exp() + x.sin() * x).sigmoid().sum(), a)


# -- reductions ----------------------------------------------------------------------
@SETTINGS
@given(one_array())
def test_sum_and_mean_all_jvp(a):
    check_jvp(lambda x: x.sum(), a)
    check_jvp(lambda x: x.mean(), a)
    check_jvp(lambda x: R.sum(x), a)


@st.composite
def array_and_dims(draw):
    a = draw(one_array(nonempty_shapes))
    dims = draw(st.one_of(
        st.integers(-a.ndim, a.ndim - 1),
        st.lists(st.integers(0, a.ndim - 1), min_size=1, max_size=a.ndim, unique=True).map(tuple),
    ))
    return a, dims


@SETTINGS
@given(array_and_dims(), st.booleans())
def test_sum_and_mean_over_dims_jvp(a_dims, keepdim):
    a, dims = a_dims
    check_jvp(lambda x: x.sum(dims, keepdim), a)
    check_jvp(lambda x: x.mean(dim=dims, keepdim=keepdim), a)


# -- matmul --------------------------------------------------------------------------
@st.composite
def matmul_operands(draw):
    n, k, m, b = (draw(st.integers(1, 3)) for _ in range(4))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "batched", "broadcast"]))
    shapes = {
        "vv": ((k,), (k,)),
        "mv": ((n, k), (k,)),
        "vm": ((k,), (k, m)),
        "mm": ((n, k), (k, m)),
        "batched": ((b, n, k), (b, k, m)),
        "broadcast": draw(st.sampled_from([((b, n, k), (k, m)), ((n, k), (b, k, m)), ((b, 1, n, k), (2, k, m)),
                                           ((b, n, k), (k,)), ((k,), (b, k, m))])),
    }[kind]
    return draw(values(shapes[0])), draw(values(shapes[1]))


@SETTINGS
@given(matmul_operands())
def test_matmul_jvp(operands):
    check_jvp(lambda a, b: a @ b, *operands)
    check_jvp(lambda a, b: R.matmul(a, b), *operands)


# -- views and copies ----------------------------------------------------------------
@SETTINGS
@given(one_array(nonempty_shapes))
def test_view_ops_jvp(a):
    n = a.size
    check_jvp(lambda x: x.reshape(-1), a)
    check_jvp(lambda x: x.reshape(n, 1), a)
    check_jvp(lambda x: x.view(1, n), a)
    check_jvp(lambda x: x.view(-1) * 2, a)
    check_jvp(lambda x: x.transpose(0, -1), a)
    check_jvp(lambda x: x.unsqueeze(0), a)
    check_jvp(lambda x: x.unsqueeze(-1).squeeze(-1), a)
    check_jvp(lambda x: x.unsqueeze(1).squeeze(), a)
    check_jvp(lambda x: x.expand(2, *a.shape), a)
    check_jvp(lambda x: x.clone(), a)
    check_jvp(lambda x: x.flatten(), a)


@SETTINGS
@given(one_array(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3)))
def test_t_and_expand_singleton_jvp(a):
    check_jvp(lambda x: x.t(), a)
    check_jvp(lambda x: x.T * 1.0, a)
    check_jvp(lambda x: x.reshape(*a.shape, 1).expand(*a.shape, 3), a)


@SETTINGS
@given(one_array(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4)), st.data())
def test_indexing_jvp(a, data):
    i = data.draw(st.integers(-a.shape[0], a.shape[0] - 1))
    start = data.draw(st.integers(0, a.shape[0] - 1))
    step = data.draw(st.integers(1, 2))
    picks = data.draw(st.lists(st.integers(0, a.shape[0] - 1), min_size=1, max_size=4))
    check_jvp(lambda x: x[i], a)
    check_jvp(lambda x: x[start::step], a)
    check_jvp(lambda x: x[..., :1], a)
    check_jvp(lambda x: x[picks], a)
    check_jvp(lambda x: x[R.tensor(picks)], a)
    if a.ndim > 1:
        check_jvp(lambda x: x[i, 1:], a)


# -- in-place ops (evidence: forward_levels.inplace-updates-tangent, views-propagate-tangent) -------------------------------------------------
INPLACE = {
    "add_": (lambda x, y: x.add_(y), lambda b: b),
    "add_alpha": (lambda x, y: x.add_(y, alpha=-2.5), lambda b: b),
    "sub_": (lambda x, y: x.sub_(y), lambda b: b),
    "mul_": (lambda x, y: x.mul_(y), lambda b: b),
    "div_": (lambda x, y: x.div_(y), lambda b: away_from_zero(b, 0.5)),
    "+=": (lambda x, y: x.__iadd__(y), lambda b: b),
    "*=": (lambda x, y: x.__imul__(y), lambda b: b),
    "copy_": (lambda x, y: x.copy_(y), lambda b: b),
    "fill_0d": (lambda x, y: x.fill_(y.sum()), lambda b: b),
}


def run_inplace(op, x, y):
    """Apply ``op`` to x in place, as user code does (``x += y`` rebinds to the result)."""
    out = op(x, y)
    assert out is x, "an in-place op must return self"
    return x


def check_inplace_jvp(op, a, b, self_dual, other_dual):
    """``op`` mutates its first argument; compare the tangent the target ends with
    against finite differences of ``(a, b) -> op(copy of a, b)``."""
    ta = weight_like(a.shape, seed=1) if self_dual else None
    tb = weight_like(b.shape, seed=2) if other_dual else None

    def fresh(x, y):
        return run_inplace(op, x.clone(), y)

    want = directional_fd(fresh, [a, b], [ta, tb])
    with fwAD.dual_level():
        x_tangent = t64(ta) if self_dual else None
        x = fwAD.make_dual(t64(a), x_tangent) if self_dual else t64(a)
        y = fwAD.make_dual(t64(b), t64(tb)) if other_dual else t64(b)
        run_inplace(op, x, y)
        primal, tangent = fwAD.unpack_dual(x)
        assert tangent is not None, "the target has no tangent after the in-place op"
        if self_dual:
            assert tangent is x_tangent, "the in-place op must update the dual's tangent in place"
        got, got_primal = arr(tangent), arr(primal)
    np.testing.assert_allclose(got_primal, arr(fresh(t64(a), t64(b))), rtol=1e-12, atol=1e-12)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(INPLACE))
@pytest.mark.parametrize("duals", ["self", "other", "both"])
@SETTINGS
@given(target_and_operand())
def test_inplace_jvp(name, duals, pair):
    op, domain = INPLACE[name]
    a, b = pair
    check_inplace_jvp(op, a, domain(b), duals in ("self", "both"), duals in ("other", "both"))


@pytest.mark.parametrize("name", ["add_", "mul_", "div_", "fill_", "zero_"])
@SETTINGS
@given(one_array(), st.floats(-3, 3).filter(lambda c: abs(c) > 0.1))
def test_inplace_with_number_on_dual_jvp(name, a, c):
    op = {
        "add_": lambda x, _: x.add_(c),
        "mul_": lambda x, _: x.mul_(c),
        "div_": lambda x, _: x.div_(c),
        "fill_": lambda x, _: x.fill_(c),
        "zero_": lambda x, _: x.zero_(),
    }[name]
    check_inplace_jvp(op, a, np.zeros(()), self_dual=True, other_dual=False)


@st.composite
def setitem_case(draw):
    a = draw(one_array(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4)))
    kind = draw(st.sampled_from(["int", "slice", "list", "tensor", "int-slice"]))
    n = a.shape[0]
    if kind == "int":
        index = draw(st.integers(-n, n - 1))
    elif kind == "slice":
        index = slice(draw(st.integers(0, n - 1)), None, draw(st.integers(1, 2)))
    elif kind == "int-slice" and a.ndim > 1:
        index = (draw(st.integers(0, n - 1)), slice(1, None))
    else:
        picks = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        index = picks if kind == "list" else ("tensor", picks)
    target_shape = a[index[1] if isinstance(index, tuple) and index[0] == "tensor" else index].shape
    value = draw(values(target_shape))
    return a, index, value


def _index(index):
    if isinstance(index, tuple) and index and index[0] == "tensor":
        return R.tensor(index[1])
    return index


@pytest.mark.parametrize("duals", ["self", "other", "both"])
@SETTINGS
@given(setitem_case())
def test_setitem_jvp(duals, case):
    a, index, value = case

    def op(x, y):
        x[_index(index)] = y
        return x

    check_inplace_jvp(op, a, value, duals in ("self", "both"), duals in ("other", "both"))


def test_plain_tensor_written_with_dual_gets_zeros_where_untouched():
    with fwAD.dual_level():
        dual = fwAD.make_dual(t64([3.0, 4.0]), t64([1.0, 2.0]))
        baz = t64([0.5, 0.5, 0.5])
        baz[0] = dual[1]
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(baz).tangent), [2.0, 0.0, 0.0])
        baz = t64([0.5, 0.5])
        baz += dual
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(baz).tangent), [1.0, 2.0])
        baz = t64([0.5, 0.5, 0.5])
        baz[[0, 2]] = dual
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(baz).tangent), [1.0, 0.0, 2.0])


def test_write_through_detach_does_not_reach_the_original():
    with fwAD.dual_level():
        dual = fwAD.make_dual(t64([3.0, 4.0]), t64([1.0, 2.0]))
        baz = t64([0.5, 0.5])
        alias = baz.detach()
        alias += dual
        assert fwAD.unpack_dual(baz).tangent is None
        np.testing.assert_array_equal(arr(baz), [3.5, 4.5])  # the values did change
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(alias).tangent), [1.0, 2.0])


def test_inplace_on_dual_leaves_the_original_primal_tangent_free():
    # evidence: forward_levels.inplace-updates-tangent
    foo = t64([0.25, 0.75])
    bar = t64([1.0, 1.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        dual *= 2
        assert fwAD.unpack_dual(foo).tangent is None
        np.testing.assert_array_equal(arr(bar), [2.0, 2.0])
        primal, tangent = fwAD.unpack_dual(dual)
        primal *= 2
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual).tangent), [2.0, 2.0])
        tangent *= 2
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual).tangent), [4.0, 4.0])
        np.testing.assert_array_equal(arr(foo), [1.0, 3.0])


def test_inplace_on_view_of_dual_updates_the_base_tangent():
    # evidence forward_levels.views-propagate-tangent: view *= 2 on dual[0:1] doubles the first element of dual's tangent
    with fwAD.dual_level():
        dual = fwAD.make_dual(t64([0.25, 0.75]), t64([1.0, 1.0]))
        view = dual[0:1]
        view *= 2
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(dual).tangent), [2.0, 1.0])
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(view).tangent), [2.0])


def test_inplace_dual_into_view_of_plain_tensor_gives_the_base_a_tangent():
    # torch 2.13: baz = zeros(3); v = baz[0:2]; v += dual  ->  baz's tangent is [1, 1, 0]
    with fwAD.dual_level():
        dual = fwAD.make_dual(t64([3.0, 4.0]), t64([1.0, 1.0]))
        baz = t64([0.0, 0.0, 0.0])
        view = baz[0:2]
        view += dual
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(view).tangent), [1.0, 1.0])
        tangent = fwAD.unpack_dual(baz).tangent
        assert tangent is not None, "the base of the written view has no tangent"
        np.testing.assert_array_equal(arr(tangent), [1.0, 1.0, 0.0])


@pytest.mark.parametrize("op, want_value, want_tangent", [
    # torch 2.13, x = [1, 2] with tangent [1, 1] (these agree with the calculus)
    ("x /= x", [1.0, 1.0], [0.0, 0.0]),
    ("x += x", [2.0, 4.0], [2.0, 2.0]),
    ("x -= x", [0.0, 0.0], [0.0, 0.0]),
    ("x.copy_(x * 2)", [2.0, 4.0], [2.0, 2.0]),
])
def test_inplace_op_with_itself_as_operand(op, want_value, want_tangent):
    with fwAD.dual_level():
        x = fwAD.make_dual(t64([1.0, 2.0]), t64([1.0, 1.0]))
        exec(op, {}, {"x": x})
        primal, tangent = fwAD.unpack_dual(x)
        np.testing.assert_allclose(arr(primal), want_value)
        np.testing.assert_allclose(arr(tangent), want_tangent)


def test_inplace_square_of_itself():
    # x *= x at x = [1, 2], tangent [1, 1]: the calculus says 2*x*t = [2, 4]; torch 2.13
    # gives [2, 6] (its formula reads the already-updated self tangent as other's
    # tangent). Either is defensible; anything else is not.
    with fwAD.dual_level():
        x = fwAD.make_dual(t64([1.0, 2.0]), t64([1.0, 1.0]))
        x *= x
        primal, tangent = fwAD.unpack_dual(x)
        np.testing.assert_allclose(arr(primal), [1.0, 4.0])
        got = arr(tangent).tolist()
        assert got in ([2.0, 4.0], [2.0, 6.0]), f"x *= x gave tangent {got}"


# -- levels (evidence: forward_levels.enter-exit-api, nesting-is-error) ------------------------------------------------------------
def test_dual_level_yields_zero_and_sets_current_level():
    assert fwAD._current_level == -1
    with fwAD.dual_level() as level:
        assert level == 0
        assert fwAD._current_level == 0
    assert fwAD._current_level == -1


def test_enter_exit_api_and_index_reuse():
    first = fwAD.enter_dual_level()
    assert (first, fwAD._current_level) == (0, 0)
    fwAD.exit_dual_level()
    assert fwAD._current_level == -1
    with fwAD.dual_level() as again:
        pass
    second = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=second)
    assert (again, second, fwAD._current_level) == (0, 0, -1)


def test_nesting_is_an_error_and_leaves_the_outer_level_open():
    with fwAD.dual_level():
        assert error_of(fwAD.enter_dual_level) == (RuntimeError, NESTED)

        def nested_context():
            with fwAD.dual_level():
                pass

        assert error_of(nested_context) == (RuntimeError, NESTED)
        assert fwAD._current_level == 0
        dual = fwAD.make_dual(t64([1.0]), t64([2.0]))
        assert fwAD.unpack_dual(dual).tangent is not None
    assert fwAD._current_level == -1


def test_exiting_a_level_that_is_not_the_current_one():
    with fwAD.dual_level():
        assert error_of(lambda: fwAD.exit_dual_level(level=1)) == (RuntimeError, EXIT_NOT_LAST)
        assert fwAD._current_level == 0
    # no level open: an explicit index is "not the last one"
    assert error_of(lambda: fwAD.exit_dual_level(level=0)) == (RuntimeError, EXIT_NOT_LAST)


def test_exiting_when_no_level_exists():
    # torch 2.13: exit_dual_level() with no level open takes level = _current_level = -1
    # and fails in C++ with this message.
    assert error_of(fwAD.exit_dual_level) == (RuntimeError, "Dual level must be a positive number.")
    assert fwAD._current_level == -1


def test_make_dual_without_a_level():
    assert error_of(lambda: fwAD.make_dual(t64([1.0]), t64([1.0]))) == (RuntimeError, NO_LEVEL)
    with fwAD.dual_level():
        pass
    assert error_of(lambda: fwAD.make_dual(t64([1.0]), t64([1.0]))) == (RuntimeError, NO_LEVEL)


def test_make_dual_checks_sizes_and_dtypes():
    # evidence forward_levels.make-dual-size-check / make-dual-floating-only: no broadcasting, integral tensors rejected, dtype need not match
    with fwAD.dual_level():
        p = t64([1.0, 2.0])
        kind, message = error_of(lambda: fwAD.make_dual(p, t64([1.0, 2.0, 3.0])))
        assert kind is RuntimeError and "Tensor is of size [2] while the given forward gradient is of size [3]" in message
        kind, message = error_of(lambda: fwAD.make_dual(p, t64([[1.0, 2.0]])))
        assert kind is RuntimeError and "of size [1, 2]" in message
        assert error_of(lambda: fwAD.make_dual(p, R.tensor([1, 2]))) == (
            ValueError, "Expected tangent to be floating point or complex, but got: reference.int64")
        assert error_of(lambda: fwAD.make_dual(R.tensor([1, 2]), p)) == (
            ValueError, "Expected primal to be floating point or complex, but got: reference.int64")
        mixed = fwAD.make_dual(R.tensor([1.0, 2.0], dtype=R.float32), p)
        assert fwAD.unpack_dual(mixed).tangent.dtype == R.float64


def test_unpack_dual_returns_the_namedtuple():
    foo, bar = t64([0.5, 0.25]), t64([1.0, 2.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        unpacked = fwAD.unpack_dual(dual)
        assert type(unpacked).__name__ == "UnpackedDualTensor"
        assert unpacked._fields == ("primal", "tangent")
        assert isinstance(unpacked, tuple)
        primal, tangent = unpacked
        assert primal is unpacked.primal and tangent is unpacked.tangent
        assert unpacked.tangent is bar
        assert unpacked.primal is not fwAD.unpack_dual(dual).primal  # a new view each call
        np.testing.assert_array_equal(arr(unpacked.primal), arr(foo))
        assert unpacked.primal._base is foo and dual._base is foo
        assert fwAD.unpack_dual(unpacked.primal).tangent is None
        plain = fwAD.unpack_dual(foo)
        assert plain.primal is foo and plain.tangent is None
    outside = fwAD.unpack_dual(dual)
    assert type(outside).__name__ == "UnpackedDualTensor" and outside.tangent is None


def test_tangent_identity():
    p, t = t64([1.0, 2.0, 3.0]), t64([0.1, 0.2, 0.3])
    with fwAD.dual_level():
        assert fwAD.unpack_dual(fwAD.make_dual(p, t)).tangent is t


def test_primal_of_make_dual_aliases_the_input():
    p, t = t64([1.0, 2.0]), t64([0.0, 1.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(p, t)
        primal = fwAD.unpack_dual(dual).primal
        assert dual.data_ptr() == p.data_ptr() == primal.data_ptr()
        assert dual._version == p._version == 0
        p.add_(1.0)  # a write to the input shows through the dual and its primal
        np.testing.assert_array_equal(arr(dual), [2.0, 3.0])
        np.testing.assert_array_equal(arr(primal), [2.0, 3.0])
        assert dual._version == p._version == primal._version == 1
        dual.mul_(2.0)  # and the other way round
        np.testing.assert_array_equal(arr(p), [4.0, 6.0])
        assert p._version == 2


def test_tangents_are_cleared_on_exit_and_not_resurrected():
    # evidence: forward_levels.tangents-cleared-at-exit
    foo, bar, baz = t64([1.0, 2.0]), t64([3.0, 4.0]), t64([5.0, 6.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        derived = dual * 2
        assert fwAD.unpack_dual(dual).tangent is bar
    assert fwAD.unpack_dual(dual).tangent is None
    with fwAD.dual_level():
        new_dual = fwAD.make_dual(foo, baz)
        assert fwAD.unpack_dual(dual).tangent is None
        assert fwAD.unpack_dual(derived).tangent is None
        assert fwAD.unpack_dual(new_dual).tangent is baz
        np.testing.assert_array_equal(arr(dual), [1.0, 2.0])
        assert fwAD.unpack_dual(dual * 3).tangent is None


def test_printing_shows_the_tangent_only_on_duals():
    with fwAD.dual_level():
        a = t64([1.0, 2.0])
        b = fwAD.make_dual(a, t64([1.0, 1.0]))
        assert "tangent=" in repr(b)
        assert "tangent=" not in repr(a)
        assert "tangent=" not in repr(fwAD.unpack_dual(b).primal)
    assert "tangent=" not in repr(b)


# -- tangent lifetimes (evidence: forward_levels.tangent-owned-by-dual) ---------------------------------------------------------
def test_level_exit_frees_a_tangent_only_the_dual_held():
    with gc_disabled():
        with fwAD.dual_level():
            tangent = t64([1.0, 2.0])
            tangent.note = "kept"
            ref = weakref.ref(tangent)
            dual = fwAD.make_dual(t64([3.0, 4.0]), tangent)
            del tangent
            assert ref() is not None
            assert fwAD.unpack_dual(dual).tangent.note == "kept"
        assert ref() is None, "the tangent outlived the level"
        assert dual is not None


def test_dual_dying_frees_its_tangent_while_the_level_is_open():
    with gc_disabled():
        with fwAD.dual_level():
            tangent = t64([1.0, 2.0])
            ref = weakref.ref(tangent)
            dual = fwAD.make_dual(t64([3.0, 4.0]), tangent)
            del tangent
            assert ref() is not None
            dual_ref = weakref.ref(dual)
            del dual
            assert dual_ref() is None, "the dual is kept alive (by the level?)"
            assert ref() is None, "the tangent outlived its dual"
            assert len(_registry.carriers) == 0


def test_derived_tangents_die_with_their_tensors():
    with gc_disabled():
        with fwAD.dual_level():
            dual = fwAD.make_dual(t64([0.5, 1.5]), t64([1.0, 2.0]))
            out = (dual * 3).tanh().exp()
            ref = weakref.ref(fwAD.unpack_dual(out).tangent)
            assert ref() is not None
            del out
            assert ref() is None
            del dual
            assert len(_registry.carriers) == 0


def test_nothing_stays_registered():
    with fwAD.dual_level():
        duals = [fwAD.make_dual(t64([float(i)]), t64([1.0])) for i in range(5)]
        outs = [(d * d).sin() + 1 for d in duals]
        assert len(_registry.carriers) > 0
    assert len(_registry.carriers) == 0, "the level's weak set was not emptied on exit"
    assert all(fwAD.unpack_dual(o).tangent is None for o in outs + duals)
    assert all(not o._fw_grads for o in outs + duals)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(t64([float(i)]), t64([1.0])) for i in range(5)]
        outs = [d.exp() for d in duals]
        del duals, outs
        gc.collect()
        assert len(_registry.carriers) == 0, "dead duals are still registered"
    assert len(_registry.carriers) == 0


def test_detach_drops_the_tangent_no_grad_does_not():
    with fwAD.dual_level():
        dual = fwAD.make_dual(t64([1.0, 2.0]), t64([3.0, 4.0]))
        assert fwAD.unpack_dual(dual.detach()).tangent is None
        assert fwAD.unpack_dual(dual.detach() * 2).tangent is None
        with R.no_grad():
            out = dual * 2
            same = fwAD.unpack_dual(dual).tangent
        assert same is not None
        np.testing.assert_array_equal(arr(fwAD.unpack_dual(out).tangent), [6.0, 8.0])


# -- forward and reverse mode together ----------------------------------------------------
@SETTINGS
@given(one_array())
def test_reverse_mode_flows_through_make_dual_and_unpack_dual(a):
    def fn(x):
        return (x * 1.5).tanh() * x

    w = weight_like(a.shape)
    want = numeric_grads(fn, [a], w)[0]
    p = leaf(a)
    with fwAD.dual_level():
        dual = fwAD.make_dual(p, t64(np.ones_like(a)))
        assert dual.requires_grad
        primal = fwAD.unpack_dual(dual).primal
        (fn(primal) * t64(w)).sum().backward()
    np.testing.assert_allclose(arr(p.grad), want, rtol=1e-5, atol=1e-6)
    q = leaf(a)
    with fwAD.dual_level():
        (fn(fwAD.make_dual(q, t64(np.ones_like(a)))) * t64(w)).sum().backward()
    np.testing.assert_allclose(arr(q.grad), want, rtol=1e-5, atol=1e-6)


REVERSE_OVER_FORWARD = {
    "tanh-mul": lambda x: (x * 1.5).tanh() * x,
    "exp-sum": lambda x: x.exp().sum(0, keepdim=True) + x.sin(),
    "matmul": lambda x: x.reshape(-1, 1) @ x.reshape(1, -1),
    "div-pow": lambda x: (x ** 2 + 1).sqrt() / (x.sigmoid() + 0.5),
}


@pytest.mark.parametrize("name", sorted(REVERSE_OVER_FORWARD))
@SETTINGS
@given(one_array(nonempty_shapes))
def test_reverse_over_forward(name, a):
    """A tangent that requires grad gives a differentiable output tangent; the gradient
    of sum(jvp * w) w.r.t. the tangent is J^T w (finite differences of fn itself)."""
    fn = REVERSE_OVER_FORWARD[name]
    tv = weight_like(a.shape, seed=3)
    tangent = leaf(tv)
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(t64(a), tangent))
        jvp = fwAD.unpack_dual(out).tangent
        assert jvp.requires_grad, "the output tangent does not record a graph"
        w = weight_like(tuple(jvp.shape))
        (jvp * t64(w)).sum().backward()
    np.testing.assert_allclose(arr(tangent.grad), numeric_grads(fn, [a], w)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(arr(jvp), directional_fd(fn, [a], [tv]), rtol=1e-5, atol=1e-6)


def test_dual_of_a_tangent_that_requires_grad_is_cleaned_up_at_exit():
    # evidence forward_levels.level-exit-with-graph-cycle: the tangent's graph saves the dual; exiting must not hang or leak
    def make():
        a = leaf(np.linspace(0.1, 1.0, 10))
        da = fwAD.make_dual(t64(np.linspace(0.0, 0.5, 10)), a)
        db = da.exp()
        return weakref.ref(da), weakref.ref(db)

    with fwAD.dual_level():
        refs = make()
    gc.collect()
    assert all(r() is None for r in refs)
    assert len(_registry.carriers) == 0


# -- custom Functions (evidence: forward_levels.custom-function-needs-jvp, custom-function-static-jvp) --------------------------------------------------
class Cube(R.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x ** 3 * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x ** 2 * ctx.scale, None

    @staticmethod
    def jvp(ctx, x_t, scale_t):
        assert scale_t is None, "a non-tensor argument must get a None tangent"
        (x,) = ctx.saved_tensors
        return x_t * 3 * x ** 2 * ctx.scale


class NoJvp(R.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


class InplaceMul(R.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.mul_(2)
        ctx.mark_dirty(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        return grad * 2

    @staticmethod
    def jvp(ctx, x_t):
        return x_t.mul_(2)


class BadInplace(InplaceMul):
    @staticmethod
    def jvp(ctx, x_t):
        return x_t * 2


@SETTINGS
@given(one_array(), st.floats(-2, 2))
def test_custom_function_jvp(a, scale):
    check_jvp(lambda x: Cube.apply(x, scale), a)


def test_custom_function_without_jvp_under_forward_ad():
    with fwAD.dual_level():
        dual = fwAD.make_dual(t64([1.0, 2.0]), t64([1.0, 1.0]))
        assert error_of(lambda: NoJvp.apply(dual)) == (NotImplementedError, NO_JVP)
        # without a dual input the Function runs as usual, level or not
        np.testing.assert_array_equal(arr(NoJvp.apply(t64([1.0, 2.0]))), [1.0, 2.0])


def test_custom_function_mark_dirty_with_inplace_jvp():
    with fwAD.dual_level():
        x = t64([1.0, 3.0])
        t = t64([1.0, 0.5])
        xd = fwAD.make_dual(x, t)
        out = InplaceMul.apply(xd)
        assert out is xd
        primal, tangent = fwAD.unpack_dual(out)
        assert tangent is t
        np.testing.assert_array_equal(arr(primal), [2.0, 6.0])
        np.testing.assert_array_equal(arr(tangent), [2.0, 1.0])
        kind, message = error_of(lambda: BadInplace.apply(fwAD.make_dual(t64([1.0]), t64([1.0]))))
        assert kind is RuntimeError
        assert message.startswith("An inplace custom Function is not modifying the forward mode gradients inplace.")


def test_disabled_forward_mode_computes_no_tangents():
    with fwAD.dual_level():
        dual = fwAD.make_dual(R.ones(2), R.full((2,), 3.0))
        assert fwAD._is_fwd_grad_enabled()
        fwAD.set_fwd_grad_mode(False)
        try:
            assert not fwAD._is_fwd_grad_enabled()
            assert fwAD.unpack_dual(dual * 2).tangent is None
            with fwAD._set_fwd_grad_enabled(True):  # a block may turn it back on
                np.testing.assert_allclose(fwAD.unpack_dual(dual * 2).tangent.numpy(), [6.0, 6.0])
            assert not fwAD._is_fwd_grad_enabled()
        finally:
            fwAD.set_fwd_grad_mode(True)
        np.testing.assert_allclose(fwAD.unpack_dual(dual * 2).tangent.numpy(), [6.0, 6.0])


def test_forward_mode_switch_is_per_thread():
    seen = []
    fwAD.set_fwd_grad_mode(False)
    try:
        worker = threading.Thread(target=lambda: seen.append(fwAD._is_fwd_grad_enabled()))
        worker.start()
        worker.join()
    finally:
        fwAD.set_fwd_grad_mode(True)
    assert seen == [True]


class ReturnsTangentUnchanged(InplaceMul):
    @staticmethod
    def jvp(ctx, x_t):
        return x_t  # the input's tangent itself, but not modified


class ReturnsAnotherModifiedTensor(InplaceMul):
    @staticmethod
    def jvp(ctx, x_t):
        other = x_t.clone().mul_(2)  # modified in place too, so its version moved
        x_t.mul_(2)
        return other


def test_custom_function_mark_dirty_jvp_must_modify_and_return_the_tangent():
    # torch checks the returned tangent's version against the input tangent's before jvp,
    # then its identity: returning the tangent untouched is refused like returning a new one
    with fwAD.dual_level():
        kind, message = error_of(lambda: ReturnsTangentUnchanged.apply(fwAD.make_dual(t64([1.0]), t64([1.0]))))
        assert kind is RuntimeError
        assert message.startswith("An inplace custom Function is not modifying the forward mode gradients inplace.")
        kind, message = error_of(lambda: ReturnsAnotherModifiedTensor.apply(fwAD.make_dual(t64([1.0]), t64([1.0]))))
        assert kind is RuntimeError
        assert message.startswith("An inplace custom Function is not returning the forward mode gradients as-is.")
