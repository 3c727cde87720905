"""device='cuda' (cupy): the same ops forward and backward, compared with numpy.

Skipped, with a reason naming what is missing, where cupy is not installed or no GPU
is visible.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import reference as R
from reference import array_backend


@pytest.fixture(scope="module")
def cupy():
    try:
        module = importlib.import_module("cupy")
    except ImportError as exc:
        pytest.skip(f"cupy is not installed ({exc}); device='cuda' tests need cupy and a GPU")
    if not array_backend.cuda_available():
        try:
            count = module.cuda.runtime.getDeviceCount()
            detail = f"CUDA reports {count} devices"
        except Exception as exc:  # noqa: BLE001 - cupy raises its own runtime error types
            detail = f"CUDA error: {exc}"
        pytest.skip(f"cupy is installed but no GPU is usable ({detail})")
    return module


def host(t):
    return array_backend.to_host(t.detach()._array)


def test_device_and_round_trip(cupy):
    a = np.arange(6.0).reshape(2, 3)
    t = R.tensor(a, dtype=R.float64, device="cuda")
    assert t.device == "cuda" and t.is_cuda
    assert isinstance(t._array, cupy.ndarray)
    np.testing.assert_array_equal(host(t.cpu()), a)
    assert t.cpu().device == "cpu"
    assert R.cuda.is_available()


def _run(device, fn, *arrays):
    inputs = [R.tensor(a, dtype=R.float64, device=device, requires_grad=True) for a in arrays]
    out = fn(*inputs)
    out.sum().backward()
    return host(out), [host(x.grad) for x in inputs], [x.grad.device.type for x in inputs]


CASES = {
    "elementwise": (lambda a, b: (a * b + a / (b * b + 1)).tanh().exp(), [(3, 4), (4,)]),
    "unary": (lambda a: a.sigmoid() * a.sin() + a.cos().abs() + a.relu() + (a * a + 1).log().sqrt(), [(5,)]),
    "matmul": (lambda a, b: (a @ b).sum(0) ** 2, [(3, 4), (4, 2)]),
    "batched_matmul": (lambda a, b: a @ b, [(2, 3, 4), (4,)]),
    "reductions_views": (lambda a: a.transpose(0, 1).reshape(-1)[1:5].mean() + a.sum(1, keepdim=True).expand(3, 4).sum(),
                         [(3, 4)]),
    "indexing": (lambda a: a[1] * a[:, 0].unsqueeze(1), [(3, 3)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_backward_matches_numpy(cupy, name):
    fn, shapes = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1.0, 1.0, size=s) for s in shapes]
    out_cpu, grads_cpu, _ = _run("cpu", fn, *arrays)
    out_gpu, grads_gpu, devices = _run("cuda", fn, *arrays)
    assert devices == ["cuda"] * len(arrays)
    np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-10, atol=1e-12)
    for g_gpu, g_cpu in zip(grads_gpu, grads_cpu):
        np.testing.assert_allclose(g_gpu, g_cpu, rtol=1e-10, atol=1e-12)


def test_inplace_and_custom_function_on_cuda(cupy):
    class Square(R.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    a = np.array([1.0, -2.0, 3.0])
    x = R.tensor(a, dtype=R.float64, device="cuda", requires_grad=True)
    y = x * 1
    y.mul_(3)
    y[0] = 0.5
    Square.apply(y).sum().backward()
    want = np.array([0.0, 2 * (3 * -2.0) * 3, 2 * (3 * 3.0) * 3])
    np.testing.assert_allclose(host(x.grad), want)


def test_transfer_between_devices_is_differentiable(cupy):
    x = R.tensor([1.0, 2.0], dtype=R.float64, requires_grad=True)
    y = (x.cuda() * 2).exp().cpu()
    assert y.device == "cpu"
    y.sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(host(x.grad), 2 * np.exp(2 * np.array([1.0, 2.0])))
