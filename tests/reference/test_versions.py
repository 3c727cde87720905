"""Version counters set from outside the engine: bumped, set, or preserved across a block."""
import pytest

import reference as R
from reference.autograd import versions


def test_increment_version_makes_a_saved_input_stale():
    x = R.ones(3, requires_grad=True)
    a = x * 1
    b = a * a  # saves a
    R.autograd.graph.increment_version(a)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_preserved_counter_ignores_inplace_changes_in_the_block():
    x = R.ones(2, requires_grad=True).clone()
    x.add_(1)
    with R.autograd._unsafe_preserve_version_counter(x):
        x.mul_(2)
        x.mul_(3)
    assert x._version == 1
    y = R.ones(2).clone()
    with R.autograd._unsafe_preserve_version_counter((x, y)):
        x.mul_(2)
        y.mul_(2)
    assert (x._version, y._version) == (1, 0)


def test_preserved_counter_keeps_a_saved_tensor_usable():
    x = R.ones(2, requires_grad=True)
    a = x * 2
    b = a * a
    with R.autograd._unsafe_preserve_version_counter(a):
        a.detach().mul_(1)  # an in-place change the caller vouches for
    b.sum().backward()
    assert x.grad.tolist() == [8.0, 8.0]


def test_set_versions_sets_each_and_refuses_negative_versions():
    x, y = R.ones(2).clone(), R.ones(2).clone()
    x.add_(1)
    versions.set_versions((x, y), (0, 5))
    assert (x._version, y._version) == (0, 5)
    view = y[:1]
    assert view._version == 5  # a view shares its base's counter
    with pytest.raises(RuntimeError, match="negative"):
        versions.set_versions((x,), (-1,))
    assert x._version == 0
    with pytest.raises(ValueError):
        versions.set_versions((x, y), (1,))
