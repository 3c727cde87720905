"""Tensor's operators and op methods (``x + y``, ``x.sum()``, ``x.view(...)``, ``x.to(...)``).

The ops are defined in the modules of ``reference.ops``, which sit above the tensor in the
import order (they make tensors), so the methods are installed on ``Tensor`` once, when the
package is imported (``reference/__init__.py`` calls ``bind_tensor_methods``).
"""
from __future__ import annotations

from reference import creation, serialization, storage
from reference.ops import inplace, linalg, pointwise, reduction, views
from reference.tensor import Tensor


def bind_tensor_methods() -> None:
    """Install the arithmetic, comparison and op methods on Tensor."""
    methods = {
        "__add__": pointwise.add, "__radd__": pointwise.radd,
        "__sub__": pointwise.sub, "__rsub__": pointwise.rsub,
        "__mul__": pointwise.mul, "__rmul__": pointwise.rmul,
        "__truediv__": pointwise.div, "__rtruediv__": pointwise.rdiv,
        "__pow__": pointwise.pow, "__rpow__": pointwise.rpow,
        "__neg__": pointwise.neg, "__abs__": pointwise.abs,
        "__matmul__": linalg.matmul, "__rmatmul__": linalg.rmatmul,
        "__eq__": pointwise.eq, "__ne__": pointwise.ne, "__lt__": pointwise.lt,
        "__le__": pointwise.le, "__gt__": pointwise.gt, "__ge__": pointwise.ge,
        "__getitem__": views.getitem, "__setitem__": inplace.setitem,
        "__iadd__": inplace.add_, "__isub__": inplace.sub_,
        "__imul__": inplace.mul_, "__itruediv__": inplace.div_,
        "add": pointwise.add, "sub": pointwise.sub, "mul": pointwise.mul, "div": pointwise.div,
        "pow": pointwise.pow, "neg": pointwise.neg, "abs": pointwise.abs,
        "exp": pointwise.exp, "log": pointwise.log, "tanh": pointwise.tanh,
        "sigmoid": pointwise.sigmoid, "relu": pointwise.relu, "sin": pointwise.sin,
        "cos": pointwise.cos, "sqrt": pointwise.sqrt, "sign": pointwise.sign,
        "clone": pointwise.clone, "to": pointwise.to, "type_as": pointwise.type_as,
        "eq": pointwise.eq, "ne": pointwise.ne, "lt": pointwise.lt, "le": pointwise.le,
        "gt": pointwise.gt, "ge": pointwise.ge,
        "matmul": linalg.matmul, "mm": linalg.matmul,
        "sum": reduction.sum, "mean": reduction.mean, "all": reduction.all, "any": reduction.any,
        "var_mean": reduction.var_mean, "prod": reduction.prod, "masked_fill": pointwise.masked_fill,
        "new": creation.new,
        "reshape": views.reshape, "view": views.view, "view_as": views.view_as,
        "reshape_as": views.reshape_as, "transpose": views.transpose, "t": views.t,
        "expand": views.expand, "expand_as": views.expand_as, "squeeze": views.squeeze,
        "unsqueeze": views.unsqueeze, "flatten": views.flatten, "as_subclass": views.as_subclass,
        "narrow": views.narrow, "gather": views.gather, "select": views.select, "unbind": views.unbind, "split": views.split,
        "split_with_sizes": views.split_with_sizes, "chunk": views.chunk, "unsafe_split": views.unsafe_split,
        "unsafe_split_with_sizes": views.unsafe_split_with_sizes, "unsafe_chunk": views.unsafe_chunk,
        "add_": inplace.add_, "sub_": inplace.sub_, "mul_": inplace.mul_, "div_": inplace.div_,
        "zero_": inplace.zero_, "copy_": inplace.copy_, "fill_": inplace.fill_,
        "storage": storage.storage, "untyped_storage": storage.untyped_storage,
        "storage_offset": storage.tensor_storage_offset,
        "__reduce_ex__": serialization.reduce_tensor, "__deepcopy__": serialization.deepcopy_tensor,
        "resize_": inplace.resize_, "resize_as_": inplace.resize_as_,
        "as_strided": views.as_strided, "swapdims": views.transpose, "swapaxes": views.transpose,
        "as_strided_": inplace.as_strided_, "transpose_": inplace.transpose_, "t_": inplace.t_,
        "swapdims_": inplace.transpose_, "swapaxes_": inplace.transpose_,
        "squeeze_": inplace.squeeze_, "unsqueeze_": inplace.unsqueeze_,
        "exp_": inplace.exp_, "relu_": inplace.relu_, "sin_": inplace.sin_, "cos_": inplace.cos_,
    }
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(views.t)
    Tensor.mT = property(views.mT)
    Tensor.__iter__ = lambda self: (self[i] for i in range(len(self)))
