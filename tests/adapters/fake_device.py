"""A stand-in for an out-of-tree torch device, in pure Python, for the project's own tests.

Why: accelerator back ends (NPU, XPU, wrapper-subclass devices) run the torch suites with a
device string torch does not know by itself; the harness must take such a string, run every
test on it and name it in the results. No such back end is installed here, so this module makes
one the way an out-of-tree back end does, without C++: it renames torch's ``PrivateUse1``
dispatch key to ``fakedev`` (with torch's Python hooks for a back end: device module, device
guard, hooks object), registers for that key the few kernels reached without the ``Python``
key (the allocations factory functions end in, ``empty.memory_format``, ``empty_strided``,
``_efficientzerotensor``, and ``_copy_from``, the copy between devices), and lets them return
:class:`FakeDeviceTensor`: a ``__torch_dispatch__`` wrapper subclass that reports the device
``fakedev:0`` and computes every operator on the CPU tensor it wraps. Autograd runs above the
``Python`` dispatch key, on the wrapper itself, as it would on a real device.

``--adapter tests.adapters.fake_device:FakeDeviceTorchAdapter --device fakedev`` runs the suites
on it (tests/harness/test_any_device.py). With ``FAKEDEV_EVIDENCE=DIR`` each process writes how
many tensors it made on the device to ``DIR/<pid>.count`` at every 500th (xdist's workers end
without running ``atexit`` handlers). Needs torch's Python back-end hooks (``torch._C._acc``:
2.13.0 has them; a torch without them skips the test).
"""
from __future__ import annotations

import os
from pathlib import Path

from adapters.torch_adapter import TorchAdapter

DEVICE = "fakedev"

_state: dict = {}   # the installed library and wrapper class: installed once per interpreter


def install():
    """Register the ``fakedev`` back end with torch (idempotent); return the wrapper class."""
    if "tensor" in _state:
        return _state["tensor"]
    import torch
    from torch.utils import _pytree
    from torch.utils import backend_registration

    named = torch._C._get_privateuse1_backend_name()
    if named not in ("privateuseone", DEVICE):
        raise RuntimeError(f"torch's PrivateUse1 back end is already {named!r}")
    if named != DEVICE:
        backend_registration._setup_privateuseone_for_python_backend(DEVICE)
    fake = torch.device(DEVICE, 0)

    def on_cpu(value):
        """A device argument for the wrapped computation: ``fakedev`` becomes the CPU."""
        if isinstance(value, FakeDeviceTensor):
            return value.inner
        if isinstance(value, torch.device) and value.type == DEVICE:
            return torch.device("cpu")
        if isinstance(value, str) and value.split(":")[0] == DEVICE:
            return "cpu"
        return value

    class FakeDeviceTensor(torch.Tensor):
        """A tensor on ``fakedev``: its values live in ``inner``, a CPU tensor."""

        @staticmethod
        def __new__(cls, inner):
            return torch.Tensor._make_wrapper_subclass(
                cls, inner.shape, strides=inner.stride(), storage_offset=inner.storage_offset(),
                dtype=inner.dtype, layout=inner.layout, device=fake, requires_grad=False)

        def __init__(self, inner):
            self.inner = inner
            made = _state["made"] = _state.get("made", 0) + 1
            if made % 500 == 0 and os.environ.get("FAKEDEV_EVIDENCE"):   # see the docstring
                Path(os.environ["FAKEDEV_EVIDENCE"], f"{os.getpid()}.count").write_text(str(made))

        def __repr__(self):
            return f"FakeDeviceTensor({self.inner!r}, device='{fake}')"

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            originals = {id(t.inner): t for t in _pytree.tree_leaves((args, kwargs))
                         if isinstance(t, FakeDeviceTensor)}
            out = func(*_pytree.tree_map(on_cpu, args), **_pytree.tree_map(on_cpu, kwargs))
            target = kwargs.get("device")
            stays = target is None or on_cpu(target) != target   # the result's device: ours?

            def back(value):
                if not isinstance(value, torch.Tensor) or isinstance(value, FakeDeviceTensor):
                    return value
                if id(value) in originals:   # in place or out=: the very tensor given
                    return originals[id(value)]
                return FakeDeviceTensor(value) if stays else value
            return _pytree.tree_map(back, out)

    def empty(size, dtype=None, layout=None, device=None, pin_memory=None,
              memory_format=None):
        return FakeDeviceTensor(torch.empty(size, dtype=dtype, layout=layout,
                                            memory_format=memory_format))

    def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
        return FakeDeviceTensor(torch.empty_strided(size, stride, dtype=dtype, layout=layout))

    def efficient_zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
        # plain zeros: a wrapped CPU ZeroTensor crashes the CPU kernels it reaches (add)
        return FakeDeviceTensor(torch.zeros(size, dtype=dtype, layout=layout))

    def copy_from(src, dst, non_blocking=False):   # a copy between the CPU and fakedev
        on_cpu(dst).copy_(on_cpu(src))
        return dst

    library = torch.library.Library("aten", "IMPL")
    library.impl("empty.memory_format", empty, "PrivateUse1")
    library.impl("empty_strided", empty_strided, "PrivateUse1")
    library.impl("_efficientzerotensor", efficient_zeros, "PrivateUse1")
    library.impl("_copy_from", copy_from, "PrivateUse1")
    _state.update(library=library, tensor=FakeDeviceTensor)
    return FakeDeviceTensor


class FakeDeviceTorchAdapter(TorchAdapter):
    """torch with the ``fakedev`` back end registered, as importing an out-of-tree back end's
    package registers its device; the name stays ``torch``: its expectations are torch's.

    What a wrapper-subclass device lacks is declared for that device only: every tensor on it
    already is an instance of a Python subclass, so ``as_subclass`` to another one raises
    ("the raw Tensor object is already associated to a python object"). Not declared, because
    the feature is there and behaves differently: assigning ``.data`` swaps the wrapper's
    TensorImpl while the Python object keeps computing with the CPU tensor it wraps (the two
    ``.data`` assignment rules DIVERGE on this device, as they would on any wrapper device
    that does not handle it).
    """

    device_unsupported = {DEVICE: {
        "tensor_subclass": "every tensor on it is a FakeDeviceTensor wrapper already; "
                           "as_subclass to another class raises",
    }}

    def _import(self):
        torch = super()._import()
        install()
        return torch
