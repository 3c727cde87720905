"""OneFlow 0.9.0 / 0.8.0 (Python 3.10 only): the young framework the suites were seeded by.

Why the preloading: OneFlow's CPU wheels still link against CUDA 11 cuDNN/cuBLAS, shipped as
the ``nvidia-cudnn-cu11`` / ``nvidia-cublas-cu11`` packages but not on the loader's path;
loading them globally first lets ``import oneflow`` succeed without LD_LIBRARY_PATH.

Why nothing of the harness reads a OneFlow object's ``__dict__`` (conformance/feature_claims.py
looks names up on the class, then on the object): on 0.9.0 each read of a custom Function
ctx's ``__dict__`` returns it without a reference of its own (``sys.getrefcount`` drops by one
per read), so after a few reads the dict is freed under the ctx and the next garbage collection
segfaults; ``inspect.getattr_static(ctx, name)`` reads it once per call.
"""
from __future__ import annotations

import ctypes
import glob
import os
import site
import sys

from adapters.base import Adapter, Run

_CUDA_LIBRARIES = ["nvidia-cudnn-cu11==8.5.0.96", "nvidia-cublas-cu11==11.10.3.66"]
_LIBRARIES = (
    ("cublas", "libcublasLt.so.11*"),
    ("cublas", "libcublas.so.11*"),
    ("cudnn", "libcudnn*.so.8*"),
)


def _preload_cuda_libraries() -> None:
    """dlopen the nvidia wheels' cuBLAS and cuDNN with RTLD_GLOBAL (absent ones are skipped:
    a CUDA install on the loader path works as well)."""
    roots = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    for package, pattern in _LIBRARIES:
        for root in roots:
            paths = sorted(glob.glob(os.path.join(root, "nvidia", package, "lib", pattern)))
            # cuDNN's sub-libraries depend on libcudnn.so.8 itself: load it first.
            paths.sort(key=lambda p: os.path.basename(p) != "libcudnn.so.8")
            for path in paths:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            if paths:
                break


class OneFlowAdapter(Adapter):
    name = "oneflow"
    install_hint = (
        'pip install oneflow==0.9.0 "numpy<2" nvidia-cudnn-cu11==8.5.0.96 '
        "nvidia-cublas-cu11==11.10.3.66  (needs Python 3.10: OneFlow has no wheels for newer "
        'Pythons; for 0.8.0 use oneflow==0.8.0 "numpy<1.24")'
    )
    devices = ("cpu", "cuda")
    module = "oneflow"
    # CI may fail to install OneFlow (large CUDA wheels): a missing run is a warning there.
    runs = tuple(
        Run(label=f"oneflow-{version}", version=version, python="3.10", required=False,
            install=(f"oneflow=={version}", numpy, *_CUDA_LIBRARIES))
        for version, numpy in (("0.9.0", "numpy<2"), ("0.8.0", "numpy<1.24")))

    def preamble(self) -> str:
        import inspect

        return ("# OneFlow's CPU wheels link against CUDA 11 cuBLAS/cuDNN from the nvidia-* pip\n"
                "# packages, which are not on the loader's path: load them first.\n"
                "import ctypes\nimport glob\nimport os\nimport site\nimport sys\n\n"
                f"_LIBRARIES = {_LIBRARIES!r}\n\n\n"
                + inspect.getsource(_preload_cuda_libraries)
                + "\n\n_preload_cuda_libraries()\nimport oneflow\n")
    unsupported = {
        "forward_ad": "oneflow.autograd has no forward_ad (dual_level, make_dual)",
        "mark_dirty": "the Function context has no mark_dirty (in-place custom Functions)",
        "node_hooks": "graph nodes take no Python hooks: FunctionNode.register_hook is bound taking "
                      "no arguments (every call raises TypeError) and there is no register_prehook",
        "node_metadata": "graph nodes have no metadata dict (reading .metadata raises TypeError)",
        "saved_tensor_attributes": "graph nodes expose no _saved_* attributes",
        "saved_tensor_register_hooks": "graph nodes expose no _raw_saved_* saved tensors to register hooks on",
        "disable_saved_tensors_hooks": "oneflow.autograd.graph has saved_tensors_hooks only, no disable_saved_tensors_hooks",
        "save_on_cpu": "oneflow.autograd.graph has saved_tensors_hooks only, no save_on_cpu",
        "allow_mutation_on_saved_tensors": "oneflow.autograd.graph has no allow_mutation_on_saved_tensors",
        "weak_tensor_utils": "oneflow.utils has no weak module (WeakIdKeyDictionary, WeakIdRef, TensorWeakRef)",
        "graph_node_class": "oneflow.autograd.graph has no Node class (grad_fn objects are FunctionNode, with no public base)",
    }
    unsupported_although_present = {
        "node_hooks": {"register_hook": "FunctionNode.register_hook (0.9.0) is bound as "
                                        "register_hook() -> None with no self: every call, with a "
                                        "hook or without, raises TypeError (incompatible function "
                                        "arguments), so no hook is ever registered"},
        "node_metadata": {"metadata": "FunctionNode.metadata (0.8.0, 0.9.0) is a property whose "
                                      "getter is bound taking no arguments: every read raises "
                                      "TypeError (incompatible function arguments), so no node "
                                      "ever gives a dict"},
    }

    def _import(self):
        if sys.version_info[:2] != (3, 10):
            raise ImportError(f"OneFlow wheels exist for Python 3.10, this is "
                              f"{sys.version_info.major}.{sys.version_info.minor}")
        _preload_cuda_libraries()
        import oneflow

        return self.namespace(oneflow, self.functions_from_methods(oneflow, oneflow.Tensor))

    def register_node_hook(self, node, hook):
        self.require("node_hooks")

    def register_node_prehook(self, node, hook):
        self.require("node_hooks")

    def liveness(self, tensor):
        """OneFlow's own channel, for tensors that refuse weak references: a storage-delete hook
        (``Tensor._register_storage_delete_hook``, private on 0.8.0 and 0.9.0; what
        ``oneflow.multiprocessing`` frees shared memory with) runs once the tensor's storage is
        freed. Frees go through OneFlow's asynchronous VM, so each check drains it first
        (``_oneflow_internal.eager.Sync()``); the hook's closure holds no reference to the tensor.
        It watches the storage: a view or a detached alias that shares it keeps it alive."""
        register = getattr(tensor, "_register_storage_delete_hook", None)
        sync = getattr(getattr(self.fw._oneflow_internal, "eager", None), "Sync", None)
        if register is None or sync is None:
            return super().liveness(tensor)
        freed = []
        register(lambda: freed.append(True))

        def alive():
            sync()
            return not freed
        return alive

    def subclass_instance(self, cls, tensor):
        """No ``as_subclass``, but ``class T(oneflow.Tensor)`` constructs from a tensor."""
        return cls(tensor)

    def check_device(self, device: str) -> None:
        if device == "cuda" and not self.fw.cuda.is_available():
            raise ValueError("adapter 'oneflow': --device cuda but oneflow.cuda.is_available() "
                             "is False on this machine; use --device cpu")
        super().check_device(device)
