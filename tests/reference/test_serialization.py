"""save / load, pickling and deepcopy of tensors: data, requires_grad and shared storage survive;
history, .grad and hooks do not; a weights-only load refuses other globals."""
from __future__ import annotations

import collections
import copy
import io
import pickle
import warnings

import numpy as np
import pytest

import reference as R
from tests.reference.helpers import arr, leaf


def _round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    R.save(obj, buffer)
    buffer.seek(0)
    return R.load(buffer, **load_kwargs)


def test_a_saved_tensor_loads_as_a_leaf_with_its_values_dtype_and_requires_grad():
    x = leaf([1.0, 2.0, 3.0])
    for saved in (x, x * 2, R.ones(2, dtype=R.int64), R.zeros(0)):
        loaded = _round_trip(saved)
        assert loaded.is_leaf and loaded.requires_grad == saved.requires_grad and loaded.dtype is saved.dtype
        np.testing.assert_array_equal(arr(loaded), arr(saved))
        assert loaded._version == 1  # torch sets the storage on a new tensor: a write
        assert saved.numel() == 0 or loaded.data_ptr() != saved.data_ptr()
    x.grad = R.ones(3, dtype=R.float64)
    assert _round_trip(x).grad is None


def test_a_file_path_works_and_the_loaded_leaf_backpropagates_on_its_own(tmp_path):
    x = leaf([1.0, 2.0])
    R.save(x, tmp_path / "x.pt")
    loaded = R.load(str(tmp_path / "x.pt"))
    (loaded * loaded).sum().backward()
    np.testing.assert_array_equal(arr(loaded.grad), [2.0, 4.0])
    assert x.grad is None


def test_tensors_saved_together_that_share_memory_share_it_again_with_their_strides():
    a = R.arange(6.0)
    view, t = a[2:4], a.view(2, 3).t()
    a2, view2, t2 = _round_trip([a, view, t])
    assert view2.storage_offset() == 2 and t2.stride() == (1, 3) and t2.shape == (3, 2)
    view2.fill_(7.0)
    np.testing.assert_array_equal(arr(a2), [0, 1, 7, 7, 4, 5])
    np.testing.assert_array_equal(arr(t2), arr(a2).reshape(2, 3).T)
    np.testing.assert_array_equal(arr(a), np.arange(6.0))


def test_attributes_survive_and_hooks_are_dropped_with_a_warning():
    x = leaf([1.0])
    x.note = {"k": 1}
    x.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        loaded = _round_trip(x)
    assert loaded.note == {"k": 1} and not loaded._backward_hooks


class Opaque:
    def __eq__(self, other):
        return type(other) is Opaque


def test_a_weights_only_load_refuses_arbitrary_globals_unless_told_otherwise():
    plain = {"a": 1, "meta": (R.float64, R.device("cpu"), R.Size([2])), "o": collections.OrderedDict(b=2),
             "s": {1, 2}, "bytes": b"xy", "c": collections.Counter("ab")}
    assert _round_trip(plain) == plain
    buffer = io.BytesIO()
    R.save({"f": Opaque()}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        R.load(buffer)
    buffer.seek(0)
    assert R.load(buffer, weights_only=False) == {"f": Opaque()}
    with pytest.raises(RuntimeError, match="magic number"):
        R.load(io.BytesIO(b"not a reference file"))


def test_pickle_and_copy_keep_memory_sharing_within_one_call():
    a = R.arange(4.0, requires_grad=True)
    b = pickle.loads(pickle.dumps(a * 1))
    assert b.is_leaf and b.requires_grad
    shallow = copy.copy(a)
    assert shallow is not a and shallow.data_ptr() == a.data_ptr()


def test_deepcopy_copies_leaves_only_with_their_grad_and_attributes():
    x = leaf([1.0, 2.0])
    x.grad = R.ones(2, dtype=R.float64)
    x.tags = [1]
    y = copy.deepcopy(x)
    assert y.requires_grad and y.is_leaf and y.data_ptr() != x.data_ptr() and y._version == 1
    assert y.grad is not x.grad and y.tags == [1] and y.tags is not x.tags
    np.testing.assert_array_equal(arr(y.grad), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)
    base = R.arange(4.0)
    base2, view2 = copy.deepcopy([base, base[1:3]])
    view2.fill_(9.0)
    np.testing.assert_array_equal(arr(base2), [0, 9, 9, 3])
    np.testing.assert_array_equal(arr(base), [0, 1, 2, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy.deepcopy(R.ones(1))
