"""Forward-mode AD: dual tensors and the process-wide level that scopes their tangents.

The design follows PyTorch's ``forward_grad.h``:
  * Levels are process-wide (not thread-local) and guarded by one lock. Only one level
    can be open at a time; its index is reused after it exits (so it is always 0).
  * A tensor owns its tangents, per level (``tensor._fw_grads``): a tangent lives exactly
    as long as its dual tensor, never longer because a level still exists.
  * A level knows, weakly, which tensors carry one of its tangents, so that exiting the
    level clears every one of them, while a tensor that dies simply drops out of the
    weak set (nothing grows without bound, nothing is kept alive by the level).
Ops propagate tangents through the rules next to their backward formulas (``jvp``);
tangent arithmetic uses ordinary tensor ops, so a tangent that requires grad records a
reverse-mode graph (reverse-over-forward works).
"""
from __future__ import annotations

import threading
import weakref
from collections import namedtuple

from reference.tensor import Tensor

#: ``reference.ops.views``: a dual tensor is a view of its primal. The ops sit above this module
#: (they propagate its tangents), so ``reference/__init__.py`` sets this once both are imported.
_views = None

NESTED = "Nested forward mode AD is not supported at the moment"
NO_LEVEL = "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
NOT_POSITIVE = "Dual level must be a positive number."
EXIT_NOT_LAST = (
    "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
)
# torch's own spelling, "level0" included
DUAL_TANGENT = "Setting a forward grad that itself has a forward gradient at the same level{} is not supported."

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _WeakIdentitySet:
    """A set of objects held weakly and compared by identity.

    ``weakref.WeakSet`` compares members with ``==``, which a tensor answers elementwise;
    this one keys on ``id`` and drops an entry when its object dies.
    """

    def __init__(self):
        self._refs = {}

    def add(self, obj) -> None:
        key = id(obj)
        if key in self._refs and self._refs[key]() is obj:
            return
        refs = self._refs

        def forget(ref, key=key):
            if refs.get(key) is ref:
                del refs[key]

        refs[key] = weakref.ref(obj, forget)

    def __iter__(self):
        for ref in list(self._refs.values()):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _LevelRegistry:
    """The process-wide level state; every mutation holds ``lock``."""

    def __init__(self):
        # rules: forward_levels.levels-process-global, forward_levels.concurrent-duals-one-level
        self.lock = threading.RLock()
        self.current = None  # index of the open level, or None
        self.carriers = _WeakIdentitySet()  # tensors holding a tangent of the open level

    def enter(self) -> int:
        with self.lock:
            if self.current is not None:
                # rules: forward_levels.nesting-is-error, forward_levels.dual-level-yields-zero, forward_levels.level-index-reused
                raise RuntimeError(NESTED)
            self.current = 0
            return 0

    def exit(self, level) -> None:
        with self.lock:
            if level is None:
                level = -1 if self.current is None else self.current
            if level < 0:
                raise RuntimeError(NOT_POSITIVE)
            if self.current is None or level != self.current:
                # rules: forward_levels.exit-not-current-errors, forward_levels.exit-none-open-errors
                raise RuntimeError(EXIT_NOT_LAST)
            # rules: forward_levels.tangents-cleared-at-exit, forward_levels.new-level-starts-clean, forward_levels.enter-exit-api, forward_levels.threads-enter-exit-rounds
            dropped = []
            for tensor in self.carriers:
                grads = tensor._fw_grads
                if grads and level in grads:
                    dropped.append(grads.pop(level))
            self.carriers = _WeakIdentitySet()
            self.current = None
        del dropped  # outside the lock: dropping a tangent may free a graph

    def set_tangent(self, tensor, tangent, level) -> None:
        """Attach ``tangent`` if ``level`` is (still) the open one, atomically with exit."""
        with self.lock:
            if self.current is None or level != self.current:
                return
            self.carriers.add(tensor)
            if tensor._fw_grads is None:
                tensor._fw_grads = {}
            # rule: forward_levels.tangent-owned-by-dual
            tensor._fw_grads[level] = tangent


_registry = _LevelRegistry()


class _Suppressed(threading.local):
    """Per thread: tangent propagation is off while a jvp rule or custom forward runs."""

    depth = 0


_suppressed = _Suppressed()


class suppress_propagation:
    def __enter__(self):
        _suppressed.depth += 1

    def __exit__(self, *exc):
        _suppressed.depth -= 1
        return False


class _FwdGradMode(threading.local):
    """Per thread, like grad mode: whether ops compute tangents at all (torch's fw_grad_mode)."""

    enabled = True


_fwd_grad_mode = _FwdGradMode()


def _is_fwd_grad_enabled() -> bool:
    """Whether forward-mode AD is enabled on this thread (torch.autograd.forward_ad's name)."""
    return _fwd_grad_mode.enabled


def set_fwd_grad_mode(enabled: bool) -> None:
    """Enable or disable forward-mode AD on this thread (torch spells it ``torch._C._set_fwd_grad_enabled``):
    while disabled, ops on dual tensors compute no tangents."""
    _fwd_grad_mode.enabled = bool(enabled)


class _set_fwd_grad_enabled:  # noqa: N801 - torch.autograd.forward_ad's name
    """Context manager: forward-mode AD enabled (or disabled) for the block, then as before."""

    def __init__(self, mode: bool):
        self.previous = _fwd_grad_mode.enabled
        set_fwd_grad_mode(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_fwd_grad_mode(self.previous)
        return False


def __getattr__(name):
    if name == "_current_level":
        current = _registry.current
        return -1 if current is None else current
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- public API ----------------------------------------------------------------------
def enter_dual_level() -> int:
    """Open the (single) forward-AD level and return its index."""
    return _registry.enter()


def exit_dual_level(*, level=None) -> None:
    """Close the open level, clearing every tangent registered with it."""
    _registry.exit(level)


class dual_level:
    """Context manager: ``with dual_level() as level:`` opens a level for its body."""

    def __enter__(self):
        self._level = enter_dual_level()
        return self._level

    def __exit__(self, *exc):
        exit_dual_level(level=self._level)
        return False


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` at ``level`` (the open level by default)."""
    if level is None:
        level = _registry.current
    if level is None or level != _registry.current:
        # rule: forward_levels.make-dual-needs-level
        raise RuntimeError(NO_LEVEL)
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual expects Tensors for both the primal and the tangent")
    if not tensor.dtype.is_floating_point:
        # rule: forward_levels.make-dual-floating-only
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    # rule: forward_levels.make-dual-size-check
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, "
            f"this is not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient "
            f"is of size {list(tangent.shape)}."
        )
    if tangent.device != tensor.device:
        raise RuntimeError(
            f"Trying to set a forward gradient on device {tangent.device} for a Tensor on device {tensor.device}."
        )
    if get_tangent(tensor, level) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level "
            f"{level} is not supported."
        )
    if get_tangent(tangent, level) is not None:  # rule: forward_levels.dual-tangent-refused
        raise RuntimeError(DUAL_TANGENT.format(level))
    # rules: forward_levels.make-dual-aliases-primal, forward_levels.reverse-through-dual
    dual = _views.make_dual_view(tensor)
    set_tangent(dual, tangent, level)
    return dual


# rules: forward_levels.unpack-dual-namedtuple, forward_levels.unpack-non-dual-tangent-none, forward_levels.unpack-outside-level
def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)``: a new tangent-free view, and the tangent."""
    if level is None:
        level = _registry.current
    if level is None or not _fwd_grad_mode.enabled:
        # rule: forward_levels.fwd-grad-mode-switch -- while disabled, a tangent is kept but not seen
        return UnpackedDualTensor(tensor, None)
    tangent = get_tangent(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_views.unpack_primal_view(tensor), tangent)


# -- engine side ---------------------------------------------------------------------
def get_tangent(tensor, level=None):
    grads = tensor._fw_grads
    if not grads:
        return None
    if level is None:
        level = _registry.current
    return grads.get(level)


def set_tangent(tensor, tangent, level=None) -> None:
    if level is None:
        level = _registry.current
    if level is not None:
        _registry.set_tangent(tensor, tangent, level)


def propagating() -> bool:
    """Whether tangents propagate now: a level is open, forward AD is enabled and no jvp rule is running."""
    # rule: forward_levels.no-grad-keeps-tangent
    return _suppressed.depth == 0 and _registry.current is not None and _fwd_grad_mode.enabled


def active(*values) -> bool:
    """Whether an op on ``values`` must propagate tangents (cheap when none has one)."""
    for value in values:
        if getattr(value, "_fw_grads", None):
            return propagating()
    return False


def tangents_of(*values):
    """The open level's tangent of each value (None for non-tensors and tangent-free ones)."""
    return tuple(get_tangent(v) if isinstance(v, Tensor) else None for v in values)
