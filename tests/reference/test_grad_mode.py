"""Grad-mode switches of reference/grad_mode.py that no other test file covers."""
from __future__ import annotations

import threading

import pytest

import reference as R
from reference.grad_mode import is_multithreading_enabled


def test_set_multithreading_enabled_is_thread_local_and_restored_as_torch():
    assert is_multithreading_enabled()
    switch = R.autograd.set_multithreading_enabled(False)  # set at once
    assert not is_multithreading_enabled()
    with switch:
        seen = []
        worker = threading.Thread(target=lambda: seen.append(is_multithreading_enabled()))
        worker.start()
        worker.join()
    assert seen == [True] and is_multithreading_enabled()  # restored on exit; other threads unaffected
    with pytest.raises(TypeError, match="must be bool, not int"):
        R.autograd.set_multithreading_enabled(1)
    x = R.ones(2, requires_grad=True)
    with R.autograd.set_multithreading_enabled(False):
        (x * 2).sum().backward()  # backward runs in this thread either way
    assert x.grad.tolist() == [2.0, 2.0]


def test_is_multithreading_enabled_is_public_as_torch():
    """torch.autograd.is_multithreading_enabled reads the switch; code ported from torch calls it."""
    assert R.autograd.is_multithreading_enabled() is True
    with R.autograd.set_multithreading_enabled(False):
        assert R.autograd.is_multithreading_enabled() is False
    assert R.autograd.is_multithreading_enabled() is True
