"""Witness: on a device registered with torch's Python back-end helper, an exception raised
by a hook during backward aborts the process (torch 2.13.0; docs/devices.md).

Imports torch alone. The same hook on a CPU tensor raises its ValueError to the caller; on
``fakedev`` the process ends with SIGABRT ("terminate called without an active exception")
before the second line is printed. Run by tests/harness/test_any_device.py, which leaves the
suites' four tests that meet this out of its fakedev run.
"""
import torch
from torch.utils import _pytree, backend_registration

backend_registration._setup_privateuseone_for_python_backend("fakedev")   # torch's own helper


class OnFakedev(torch.Tensor):
    """A wrapper subclass on ``fakedev`` that computes on the CPU tensor it wraps."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype,
                                                   device=torch.device("fakedev", 0))

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(value):
            return value.inner if isinstance(value, OnFakedev) else value

        out = func(*_pytree.tree_map(unwrap, args), **_pytree.tree_map(unwrap, kwargs or {}))
        return _pytree.tree_map(lambda v: OnFakedev(v) if type(v) is torch.Tensor else v, out)


def hook(grad):
    raise ValueError("raised by the hook")


for leaf in (torch.ones(3, requires_grad=True), OnFakedev(torch.ones(3)).requires_grad_()):
    out = leaf * 2
    out.register_hook(hook)
    try:
        out.sum().backward()
    except ValueError as exc:
        print(f"{leaf.device.type}: the hook's error reached the caller: {exc}", flush=True)
