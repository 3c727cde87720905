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


def test_legacy_new_and_typed_constructors_take_sizes_or_data():
    import numpy as np

    x = R.zeros(2, dtype=R.float64)
    assert x.new(2, 3).shape == (2, 3) and x.new(R.Size([4])).shape == (4,) and x.new().shape == (0,)
    made = x.new([1, 2])
    assert made.dtype is R.float64 and made.tolist() == [1.0, 2.0] and made.grad_fn is None
    assert R.LongTensor([1, 3]).dtype is R.int64 and R.FloatTensor(2, 3).shape == (2, 3)
    np.testing.assert_array_equal(R.BoolTensor([True, False]).numpy(), [True, False])


def test_int32_is_torch_int_and_keeps_its_dtype_through_integer_ops():
    import numpy as np

    a = R.zeros(3, dtype=R.int)
    assert R.int is R.int32 and a.dtype is R.int32 and a.numpy().dtype == np.int32
    b = R.from_numpy(np.arange(3, dtype=np.int32))
    assert (b * 2).dtype is R.int32 and (b + 1).tolist() == [1, 2, 3]
    np.testing.assert_array_equal(b.to(R.float32).numpy(), np.arange(3, dtype=np.float32))
    R.autograd.graph.increment_version(a)
    assert a._version == 1
