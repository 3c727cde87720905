"""Gradient mode: whether ops record the graph. Thread-local, as in PyTorch.

Each thread starts with grad mode enabled; ``no_grad`` in one thread never changes
what another thread records.
"""
from __future__ import annotations

import functools
import threading
import warnings


# rules: engine.grad-mode-thread-local, engine.no-grad-records-nothing
class _State(threading.local):
    enabled = True
    inference = False  # inside inference_mode (this thread)
    multithreading = True  # set_multithreading_enabled (this thread)


_state = _State()
# [True] once any thread has entered inference_mode: until then a new tensor skips the
# thread-local look-up (the tensor's hot path)
_inference_used = [False]


def is_grad_enabled() -> bool:
    return _state.enabled


# rule: engine.grad-mode-switch-spellings
class _GradModeContext:
    """Base of the grad-mode context managers; also usable as decorators (a decorated function
    runs inside a fresh context; decorating changes no mode)."""

    _target: bool

    def __enter__(self):
        self._prev = _state.enabled
        _state.enabled = self._target
        return None

    def __exit__(self, *exc):
        _state.enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    _target = False


class enable_grad(_GradModeContext):
    _target = True


# rule: engine.grad-mode-switch-spellings -- a plain call, a context and a decorator
class set_grad_enabled(_GradModeContext):
    """``set_grad_enabled(mode)``: sets the mode at once, and restores it as a context."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self._prev = _state.enabled
        self._target = mode
        _state.enabled = self._target

    def __enter__(self):
        return None

    def __call__(self, fn):
        mode = self._target
        _state.enabled = self._prev

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_multithreading_enabled() -> bool:
    return _state.multithreading


class set_multithreading_enabled:
    """``set_multithreading_enabled(mode)``: whether backward may run device work on worker
    threads; thread-local, set at once and restored as a context, as in torch. The reference
    runs every backward in the calling thread, so the flag changes nothing it does (it is kept
    for code that sets it). As torch's, using it as a decorator sets it when decorating and
    leaves it set."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_multithreading_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self._prev = _state.multithreading
        self.mode = mode
        _state.multithreading = mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _state.multithreading = self._prev
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    return _state.inference


class inference_mode(_GradModeContext):
    """``inference_mode(mode=True)``: no graph is recorded (as under ``no_grad``) and the tensors
    made inside are inference tensors (``torch.is_inference``); ``mode=False`` leaves inference
    mode and turns grad mode on. Thread-local, like the grad mode.

    The reference does not implement what torch refuses of inference tensors outside the mode
    (saving them for backward, writing them in place) nor their missing version counter."""

    def __init__(self, mode: bool = True):
        self._mode = bool(mode)

    def __enter__(self):
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = not self._mode  # inference_mode(False) turns grad mode on, as in torch
        if self._mode:
            _inference_used[0] = True
        _state.inference = self._mode
        return None

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self._prev
        return False

    def __call__(self, fn):
        mode = self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


# -- anomaly mode: process-wide, as in torch ----------------------------------------------------
_anomaly = [False, True]  # [enabled, check_nan]; the engine reads it after every node


def is_anomaly_enabled() -> bool:
    return _anomaly[0]


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly[1]


class set_detect_anomaly:
    """``set_detect_anomaly(mode, check_nan=True)``: sets anomaly mode at once, and restores the
    previous mode when used as a context. In anomaly mode a backward refuses a node that
    returns NaN (with ``check_nan``). The reference records no forward traceback."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = tuple(_anomaly)
        _anomaly[:] = [bool(mode), bool(check_nan)]

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _anomaly[:] = self._prev
        return False


class detect_anomaly:
    """``detect_anomaly(check_nan=True)``: anomaly mode inside the context (or decorated function)."""

    def __init__(self, check_nan: bool = True):
        self._check_nan = bool(check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._prev = tuple(_anomaly)
        _anomaly[:] = [True, self._check_nan]
        return None

    def __exit__(self, *exc):
        _anomaly[:] = self._prev
        return False

    def __call__(self, fn):
        check_nan = self._check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(check_nan):
                return fn(*args, **kwargs)

        return wrapper
