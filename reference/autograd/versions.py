"""Version counters from the outside: bump one, set one, or keep one unchanged for a block.

A tensor's version counter (a one-element list shared by a base and its views) is what a
saved tensor compares against at unpack time. These are the escape hatches torch gives code
that knows better than the engine: ``torch.autograd.graph.increment_version`` (an in-place
change the engine could not see), ``torch.autograd._unsafe_preserve_version_counter`` (an
in-place change that must not count) and ``torch._C._autograd._unsafe_set_version_counter``
(here ``set_versions``).
"""
from __future__ import annotations

from reference.tensor import Tensor

NEGATIVE_VERSION = "Cannot set a version counter to a negative value ({}): versions only count up from 0"


def _tensors(tensors) -> tuple:
    return (tensors,) if isinstance(tensors, Tensor) else tuple(tensors)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place change would: nodes that saved it then refuse to unpack it."""
    for t in _tensors(tensor):
        t._version_counter[0] += 1  # rule: engine.increment-version-invalidates-saved


def set_versions(tensors, versions) -> None:
    """Set each tensor's version counter (shared with its views) to the matching version."""
    tensors, versions = _tensors(tensors), tuple(versions)
    if len(tensors) != len(versions):
        raise ValueError(f"set_versions: {len(tensors)} tensors but {len(versions)} versions")
    for version in versions:
        if version < 0:
            raise RuntimeError(NEGATIVE_VERSION.format(version))
    for tensor, version in zip(tensors, versions):
        tensor._version_counter[0] = int(version)


class _unsafe_preserve_version_counter:  # noqa: N801 - torch's name
    """Within the block, in-place changes to ``tensor`` (or to each tensor of a tuple) do not
    count: on exit every version counter is set back to what it was on entry."""

    def __init__(self, tensor):
        self.tensors = _tensors(tensor)
        self.versions = tuple(t._version_counter[0] for t in self.tensors)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_versions(self.tensors, self.versions)
        return False
