"""Storages: tensors that share memory (views, detach, dual tensors) report one storage."""
from __future__ import annotations

import warnings

import numpy as np

import reference as R
import reference.autograd.forward_ad as fwAD
from reference import storage as storage_module


def test_views_and_detached_tensors_share_their_base_storage_but_a_clone_does_not():
    x = R.arange(6.0).reshape(2, 3)
    for alias in (x[1], x.t(), x.detach(), x.view(6)[2:4], x.expand(2, 2, 3)):
        assert alias.untyped_storage() == x.untyped_storage()
        assert alias.untyped_storage().data_ptr() == x.data_ptr()
    assert x.clone().untyped_storage() != x.untyped_storage()
    u = x.untyped_storage()
    assert u.nbytes() == len(u) == u.size() == 24 and u.device.type == "cpu" and u.element_size() == 1


def test_storage_offset_and_strides_count_elements():
    x = R.arange(12.0, dtype=R.float64).reshape(3, 4)
    assert x.stride() == (4, 1) and x.storage_offset() == 0 and x.is_contiguous()
    assert x[1].storage_offset() == 4 and x[1, 2:].storage_offset() == 6 and x[:, 1].stride() == (4,)
    assert x.t().stride() == (1, 4) and not x.t().is_contiguous() and x.stride(0) == 4
    assert x.expand(2, 3, 4).stride() == (0, 4, 1)
    assert x[1:2].is_contiguous() and not x[:, :1].is_contiguous() and R.zeros(2, 0).is_contiguous()


def test_typed_storage_reads_the_whole_memory_as_the_dtype_and_warns_once_that_it_is_deprecated():
    storage_module._warned[0] = False
    x = R.arange(6.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = x[2:4].storage()
        x.storage()
    assert [str(w.message).startswith("TypedStorage is deprecated") for w in caught] == [True]
    assert s.size() == len(s) == 6 and s.nbytes() == 24 and s.element_size() == 4 and s.dtype is R.float32
    assert s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and s[5] == 5.0 and s.data_ptr() == x.data_ptr()
    assert s.untyped() == x.untyped_storage()


def test_a_dual_tensor_and_its_unpacked_parts_share_the_primal_and_tangent_storages():
    foo, bar = R.rand(2), R.ones(2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        primal, tangent = fwAD.unpack_dual(dual)
        assert dual.untyped_storage() == foo.untyped_storage() == primal.untyped_storage()
        assert tangent.untyped_storage() == bar.untyped_storage()
    np.testing.assert_array_equal(np.asarray(foo.numpy()), np.asarray(primal.numpy()))
