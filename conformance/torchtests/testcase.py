"""The stand-in for PyTorch's testing helpers (``torch.testing._internal``), the same on both engines.

PyTorch's tests import their TestCase and decorators from ``torch.testing._internal``; those are
test infrastructure, not the engine under test, so both runs get these instead: a ``TestCase``
whose ``assertEqual`` compares tensors through numpy (values, shapes; not dtypes), and
decorators that either do nothing (dynamo, MPS, Windows skips) or mark a test not applicable
(CUDA-only, parametrized or dtype-instantiated tests, C++ extensions).
"""
from __future__ import annotations

import contextlib
import gc
import math
import re
import sys
import unittest
import warnings

import numpy as np


class NotApplicable(unittest.SkipTest):
    """The test needs something this tool does not provide (CUDA, parametrization, C++ builds)."""


def _skip_with(reason: str):
    def decorate(fn):
        def skipped(*args, **kwargs):
            raise NotApplicable(reason)

        skipped.__name__ = getattr(fn, "__name__", "test")
        return skipped

    return decorate


def _identity_decorator(*args, **kwargs):
    """``@deco`` and ``@deco(...)``: both leave the function as it is."""
    if len(args) == 1 and not kwargs and callable(args[0]):
        return args[0]
    return lambda fn: fn


def _is_tensor(value) -> bool:
    return hasattr(value, "requires_grad") and hasattr(value, "detach") and hasattr(value, "shape")


def _to_numpy(value):
    if _is_tensor(value):
        value = value.detach()
        if getattr(value, "is_sparse", False):
            value = value.to_dense()
        if hasattr(value, "cpu"):
            value = value.cpu()
        if hasattr(value, "resolve_conj"):
            value = value.resolve_conj().resolve_neg()
        return np.asarray(value.numpy())
    return np.asarray(value)


def _sequence(value) -> bool:
    return isinstance(value, (list, tuple)) and not _is_tensor(value)


class TestCase(unittest.TestCase):
    """unittest's TestCase with PyTorch's tensor-aware equality."""

    def assertEqual(self, first, second, msg=None, *, atol=None, rtol=None, exact_dtype=True,
                    exact_device=False, **kwargs):  # noqa: N802 - unittest's name
        problem = self._difference(first, second, atol, rtol)
        if problem:
            raise self.failureException(f"{problem}{': ' + str(msg) if msg else ''}")

    def assertNotEqual(self, first, second, msg=None, **kwargs):  # noqa: N802
        if not self._difference(first, second, kwargs.get("atol"), kwargs.get("rtol")):
            raise self.failureException(f"values are equal{': ' + str(msg) if msg else ''}")

    def _difference(self, first, second, atol, rtol) -> str | None:
        if _is_tensor(first) or _is_tensor(second):
            if first is None or second is None:
                return f"{first!r} != {second!r}"
            a, b = _to_numpy(first), _to_numpy(second)
            if a.shape != b.shape and a.size != 1 and b.size != 1:
                return f"shapes differ: {a.shape} != {b.shape}"
            if a.dtype == bool or b.dtype == bool:
                return None if np.array_equal(np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)),
                                              np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape))) \
                    else f"{a} != {b}"
            ok = np.allclose(a.astype(complex) if np.iscomplexobj(a) or np.iscomplexobj(b) else a.astype(float),
                             b.astype(complex) if np.iscomplexobj(a) or np.iscomplexobj(b) else b.astype(float),
                             rtol=1.3e-6 if rtol is None else rtol, atol=1e-5 if atol is None else atol,
                             equal_nan=True)
            return None if ok else f"tensors differ: {a!r} != {b!r}"
        if _sequence(first) and _sequence(second) or (
                type(first).__name__ == "Size" or type(second).__name__ == "Size") and (
                _sequence(first) or _sequence(second) or hasattr(first, "__len__") and hasattr(second, "__len__")):
            first, second = list(first), list(second)
            if len(first) != len(second):
                return f"lengths differ: {len(first)} != {len(second)}"
            for index, (x, y) in enumerate(zip(first, second)):
                problem = self._difference(x, y, atol, rtol)
                if problem:
                    return f"item {index}: {problem}"
            return None
        if isinstance(first, dict) and isinstance(second, dict):
            if first.keys() != second.keys():
                return f"keys differ: {sorted(map(str, first))} != {sorted(map(str, second))}"
            for key in first:
                problem = self._difference(first[key], second[key], atol, rtol)
                if problem:
                    return f"[{key!r}]: {problem}"
            return None
        if isinstance(first, (int, float, complex)) and isinstance(second, (int, float, complex)) \
                and not isinstance(first, bool) and not isinstance(second, bool):
            if isinstance(first, complex) or isinstance(second, complex):
                return None if first == second else f"{first!r} != {second!r}"
            if math.isnan(first) and math.isnan(second):
                return None
            ok = math.isclose(first, second, rel_tol=1.3e-6 if rtol is None else rtol,
                              abs_tol=1e-5 if atol is None else atol) or first == second
            return None if ok else f"{first!r} != {second!r}"
        return None if first == second else f"{first!r} != {second!r}"

    def assertExpectedInline(self, actual, expect, skip=0):  # noqa: N802
        if actual.strip() != expect.strip():
            raise self.failureException(f"{actual!r} != {expect!r}")

    def assertExpected(self, *args, **kwargs):  # noqa: N802
        raise NotApplicable("assertExpected needs PyTorch's expect files")

    def assertNotWarn(self, fn, msg=None):  # noqa: N802
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn()
        if caught:
            raise self.failureException(f"unexpected warning: {caught[0].message}")

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex=""):  # noqa: N802
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
        if not any(isinstance(w.message, category) and re.search(regex, str(w.message)) for w in caught):
            raise self.failureException(f"no {category.__name__} matching {regex!r}")


@contextlib.contextmanager
def disable_gc():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def support(torch_module) -> dict:
    """The names PyTorch's test file imports from ``torch.testing._internal``, for one engine."""
    autograd = getattr(torch_module, "autograd", None)
    return {
        "TestCase": TestCase,
        "run_tests": lambda *a, **k: None,
        "load_tests": None,
        "disable_gc": disable_gc,
        "gradcheck": getattr(autograd, "gradcheck"),
        "gradgradcheck": getattr(autograd, "gradgradcheck"),
        "set_warn_always_context": lambda *a, **k: contextlib.nullcontext(),
        "instantiate_parametrized_tests": lambda *a, **k: None,
        "instantiate_device_type_tests": lambda *a, **k: None,
        "parametrize": lambda *a, **k: _skip_with("a parametrized test (this tool runs plain methods)"),
        "dtypes": lambda *a, **k: _skip_with("a dtype-instantiated test"),
        "dtypesIfCUDA": lambda *a, **k: (lambda fn: fn),
        "dtypesIfMPS": lambda *a, **k: (lambda fn: fn),
        "deviceCountAtLeast": lambda *a, **k: _skip_with("needs a list of devices"),
        "onlyCUDA": _skip_with("CUDA only"),
        "onlyCPU": _identity_decorator,
        "skipMeta": _identity_decorator,
        "expectedFailureMPS": _identity_decorator,
        "scoped_load_inline": _skip_with("builds a C++ extension"),
        "skipCUDANonDefaultStreamIf": _identity_decorator,
        "skipIfMPS": _identity_decorator,
        "skipIfNoLapack": _identity_decorator,
        "skipIfSlowGradcheckEnv": _identity_decorator,
        "skipIfTorchDynamo": _identity_decorator,
        "skipIfWindows": _identity_decorator,
        "skipIfXpu": _identity_decorator,
        "slowTest": _identity_decorator,
        "IS_MACOS": sys.platform == "darwin",
        "IS_WINDOWS": sys.platform == "win32",
        "TEST_CUDA": False,
        "TEST_WITH_TORCHDYNAMO": False,
    }
