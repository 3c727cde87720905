"""Helpers shared by the reference engine's own tests (tests/reference/test_*.py).

Numbers are always compared through numpy: a tensor is turned into an array with
``arr(t)`` (detached first), and expected values are computed with numpy or with
central finite differences of the function under test.
"""
from __future__ import annotations

import contextlib
import gc
import warnings

import numpy as np
from hypothesis import HealthCheck, settings

import reference as R

# Moderate example counts: the whole reference test suite must run in minutes on 2 cores.
settings.register_profile(
    "reference-engine",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SETTINGS = settings.get_profile("reference-engine")
FEW = settings(SETTINGS, max_examples=10)

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)
INPLACE_HINT = (
    "Hint: enable anomaly detection to find the operation that failed to compute its "
    "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)


def arr(t) -> np.ndarray:
    """The values of a tensor as a numpy array (a copy, detached from any graph)."""
    return np.array(t.detach().numpy(), copy=True)


def leaf(values, requires_grad=True) -> R.Tensor:
    """A float64 leaf tensor holding a copy of ``values``."""
    return R.tensor(np.asarray(values, dtype=np.float64), dtype=R.float64, requires_grad=requires_grad)


def numeric_grads(fn, arrays, weight, eps=1e-6):
    """Central finite differences of ``sum(fn(*arrays) * weight)`` w.r.t. each array.

    ``fn`` takes and returns reference tensors; it is evaluated under no_grad on copies.
    """
    def value(values):
        with R.no_grad():
            out = fn(*[R.tensor(v, dtype=R.float64) for v in values])
        return float(np.sum(arr(out) * weight))

    grads = []
    for index, base in enumerate(arrays):
        grad = np.zeros_like(base)
        flat = grad.reshape(-1)
        for k in range(base.size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[index].reshape(-1)[k] += eps
            minus[index].reshape(-1)[k] -= eps
            flat[k] = (value(plus) - value(minus)) / (2 * eps)
        grads.append(grad)
    return grads


def weight_like(shape, seed=0):
    """A fixed, non-trivial weight for the output (so every output element matters)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def check_gradients(fn, *arrays, rtol=1e-5, atol=1e-6):
    """Backward of ``sum(fn(*inputs) * w)`` matches finite differences for every input."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    inputs = [leaf(a) for a in arrays]
    out = fn(*inputs)
    weight = weight_like(tuple(out.shape))
    (out * R.tensor(weight, dtype=R.float64)).sum().backward()
    expected = numeric_grads(fn, arrays, weight)
    for index, (x, want) in enumerate(zip(inputs, expected)):
        assert x.grad is not None, f"input {index} got no gradient"
        assert tuple(x.grad.shape) == want.shape, f"input {index}: grad shape {tuple(x.grad.shape)}"
        np.testing.assert_allclose(arr(x.grad), want, rtol=rtol, atol=atol, err_msg=f"input {index}")


def check_double_backward(fn, *arrays, rtol=1e-4, atol=1e-5):
    """The gradient of ``sum(grad_x(sum(fn(x) * w)) * v)`` matches finite differences of
    the first gradient (computed by the engine at perturbed points)."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    inputs = [leaf(a) for a in arrays]
    out = fn(*inputs)
    w = weight_like(tuple(out.shape))
    w_t = R.tensor(w, dtype=R.float64)
    firsts = R.autograd.grad((out * w_t).sum(), inputs, create_graph=True)
    vs = [weight_like(a.shape, seed=i + 1) for i, a in enumerate(arrays)]
    total = None
    for g, v in zip(firsts, vs):
        assert g.requires_grad, "first gradient should be differentiable under create_graph=True"
        term = (g * R.tensor(v, dtype=R.float64)).sum()
        total = term if total is None else total + term
    seconds = R.autograd.grad(total, inputs, allow_unused=True)

    def first_grad_dot_v(*values):
        xs = [leaf(val) for val in values]
        with R.enable_grad():
            o = fn(*xs)
            gs = R.autograd.grad((o * w_t).sum(), xs, allow_unused=True)
        s = 0.0
        for g, v in zip(gs, vs):
            if g is not None:
                s += float(np.sum(arr(g) * v))
        return s

    eps = 1e-6
    for index, base in enumerate(arrays):
        want = np.zeros_like(base)
        for k in range(base.size):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[index].reshape(-1)[k] += eps
            minus[index].reshape(-1)[k] -= eps
            want.reshape(-1)[k] = (first_grad_dot_v(*plus) - first_grad_dot_v(*minus)) / (2 * eps)
        got = seconds[index]
        got = np.zeros_like(base) if got is None else arr(got)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"input {index}")


@contextlib.contextmanager
def gc_disabled():
    """Reference counting only, as in 'freed without the cycle collector'."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def caught_warnings(fn):
    """The warnings ``fn()`` emits, as (category, message) pairs."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in seen]


def error_of(fn):
    """(exception type, message) raised by ``fn()``; fails if nothing is raised."""
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - the tests compare types explicitly
        return type(exc), str(exc)
    raise AssertionError("expected an exception, none was raised")
