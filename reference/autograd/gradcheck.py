"""``reference.autograd.gradcheck`` / ``gradgradcheck``: analytical gradients against finite differences.

Not part of the lifetime specification: PyTorch's own tests use them to check the gradients of
the graphs they build (views, in-place ops, custom Functions). The Jacobian is compared column
by column (``reference/__init__.py`` installs both as ``reference.autograd.gradcheck`` /
``gradgradcheck``, as torch's package shadows its submodule): the analytical one from ``autograd.grad`` with one-hot ``grad_outputs``, the numerical
one from central differences of the outputs (each input element perturbed in its array, no
version bump, and restored; the graphs built meanwhile are dropped).
"""
from __future__ import annotations

from reference import creation
from reference.array_backend import namespace_of, to_host
from reference.autograd import grad
from reference.tensor import Tensor


class GradcheckError(RuntimeError):
    """The analytical and numerical Jacobians differ (torch's class name)."""


def _as_tuple(value) -> tuple:
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return (value,)


def _differentiable(values) -> list:
    return [v for v in _as_tuple(values) if isinstance(v, Tensor) and v.requires_grad]


def _positions(values) -> list[int]:
    """Where the differentiable outputs are among ``func``'s results."""
    return [i for i, v in enumerate(_as_tuple(values)) if isinstance(v, Tensor) and v.requires_grad]


def _numerical(func, inputs, wrt, outputs, positions, eps):
    """``jac[out][inp]``: a (numel(inp), numel(out)) array of central differences."""
    jacobians = [[None] * len(wrt) for _ in outputs]
    for k, x in enumerate(wrt):
        flat = x._array.reshape(-1) if x._array.flags.c_contiguous else None
        xp = namespace_of(x._array)
        columns = [xp.zeros((x.numel(), o.numel()), dtype="float64") for o in outputs]
        for i in range(x.numel()):
            index = i if flat is not None else xp.unravel_index(i, x._array.shape)
            target = flat if flat is not None else x._array
            original = target[index].copy()
            values = []
            for delta in (eps, -eps):
                target[index] = original + delta
                results = _as_tuple(func(*inputs))
                values.append([to_host(results[p]._array).astype("float64").reshape(-1) for p in positions])
            target[index] = original
            for j in range(len(outputs)):
                columns[j][i] = (values[0][j] - values[1][j]) / (2 * eps)
        for j in range(len(outputs)):
            jacobians[j][k] = columns[j]
    return jacobians


def _analytical(outputs, wrt):
    jacobians = [[None] * len(wrt) for _ in outputs]
    for j, out in enumerate(outputs):
        columns = [namespace_of(x._array).zeros((x.numel(), out.numel()), dtype="float64") for x in wrt]
        for m in range(out.numel()):
            one_hot = creation.zeros(*out.shape, dtype=out.dtype)
            one_hot._array.reshape(-1)[m] = 1
            grads = grad(out, wrt, grad_outputs=one_hot, retain_graph=True, allow_unused=True)
            for k, g in enumerate(grads):
                if g is not None:
                    columns[k][:, m] = to_host(g._array).astype("float64").reshape(-1)
        for k in range(len(wrt)):
            jacobians[j][k] = columns[k]
    return jacobians


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_options):
    """True when ``func``'s backward agrees with finite differences at ``inputs`` (float64 advised)."""
    inputs = _as_tuple(inputs)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    results = func(*inputs)
    positions = _positions(results)
    outputs = [_as_tuple(results)[p] for p in positions]
    analytical = _analytical(outputs, wrt)
    numerical = _numerical(func, inputs, wrt, outputs, positions, eps)
    for j in range(len(outputs)):
        for k in range(len(wrt)):
            a, n = analytical[j][k], numerical[j][k]
            if not namespace_of(a).allclose(a, n, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(f"Jacobian mismatch for output {j} with respect to input {k},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **_options):
    """gradcheck of the backward: ``(inputs, grad_outputs) -> autograd.grad(..., create_graph=True)``."""
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        grad_outputs = tuple(creation.randn(*o.shape, dtype=o.dtype, requires_grad=True)
                             for o in _differentiable(func(*inputs)))
    grad_outputs = _as_tuple(grad_outputs)
    count = len(grad_outputs)

    def backward_of_func(*args):
        outputs = _differentiable(func(*args[:-count]))
        wrt = [x for x in args[:-count] if isinstance(x, Tensor) and x.requires_grad]
        grads = grad(outputs, wrt, args[-count:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(backward_of_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
