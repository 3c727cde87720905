"""Random tensors shaped like another, and random integers."""
from __future__ import annotations

import numpy as np

import reference as R


def test_like_functions_take_shape_dtype_and_device_from_their_input():
    x = R.ones(2, 3, dtype=R.float64)
    for fn in (R.rand_like, R.randn_like):
        out = fn(x)
        assert out.shape == x.shape and out.dtype == R.float64 and not out.requires_grad
        assert fn(x, dtype=R.float32, requires_grad=True).requires_grad
    assert (R.rand_like(x).numpy() < 1).all()


def test_randint_draws_int64_in_the_half_open_range():
    low_high = R.randint(3, 5, (100,))
    assert low_high.dtype == R.int64 and set(np.unique(low_high.numpy())) <= {3, 4}
    assert R.randint(2, [4, 2]).shape == (4, 2) and int(R.randint(2, (50,)).numpy().max()) <= 1
