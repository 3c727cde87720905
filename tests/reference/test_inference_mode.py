"""inference_mode: no graph recorded, inference tensors marked, views of them not tracked as views."""
from __future__ import annotations

import threading

import numpy as np

import reference as R


def test_inference_mode_records_nothing_and_marks_the_tensors_made_inside():
    x = R.ones(3, requires_grad=True)
    with R.inference_mode():
        assert not R.is_grad_enabled() and R.is_inference_mode_enabled()
        y = x * 2
        assert y.grad_fn is None and not y.requires_grad and R.is_inference(y)
        with R.inference_mode(False):  # leaves inference mode and turns grad mode on
            assert R.is_grad_enabled() and not R.is_inference_mode_enabled() and not R.zeros(1).is_inference()
        seen = []
        worker = threading.Thread(target=lambda: seen.append((R.is_grad_enabled(), R.is_inference_mode_enabled())))
        worker.start()
        worker.join()
        assert seen == [(True, False)]  # thread-local
    assert R.is_grad_enabled() and not R.is_inference_mode_enabled() and not x.is_inference()

    @R.inference_mode()
    def made():
        return R.zeros(2)

    assert made().is_inference() and R.is_grad_enabled()


def test_views_of_inference_tensors_are_untracked_and_views_of_normal_tensors_stay_normal():
    with R.inference_mode():
        a = R.zeros(3)
        b = a.view(3)
        assert R.is_inference(b) and not b._is_view() and b._base is None
        b.add_(1)  # the same data
        np.testing.assert_array_equal(a.numpy(), [1.0, 1.0, 1.0])
    x = R.zeros(3)
    with R.inference_mode():
        v, d = x.view(3), x.detach()
        assert v._is_view() and not v.is_inference() and not d.is_inference()


def test_in_place_inside_inference_mode_still_invalidates_what_was_saved_outside():
    s = R.ones(2, requires_grad=True)
    a = s.clone()
    out = a * a
    with R.inference_mode():
        a.add_(2)
    assert not a.is_inference() and a._version == 1
    try:
        out.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
    else:
        raise AssertionError("backward used a saved tensor modified in place")


def test_a_view_made_in_inference_mode_or_a_view_of_it_is_refused_in_place_once_it_requires_grad():
    import pytest

    for mode, words in ((R.inference_mode, "created in inference mode and is being modified inplace in normal mode"),
                        (R.no_grad, "created in no_grad mode and is being modified inplace with grad mode enabled")):
        x = R.zeros(2)
        with mode():
            y = x.view(2)
        y.requires_grad_(True)
        z = y.view(2)
        with pytest.raises(RuntimeError, match="a view of a view which was " + words):
            z /= 2
        with pytest.raises(RuntimeError, match="A view was " + words):
            y.mul_(2)
        np.testing.assert_array_equal(x.numpy(), [0.0, 0.0])


def test_a_no_grad_view_of_a_leaf_is_refused_for_being_made_under_no_grad_first():
    import pytest

    a = R.ones(4, requires_grad=True)
    with R.no_grad():
        v = a[:2]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        a[:2].mul_(2)
