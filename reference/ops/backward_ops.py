"""The op-set that backward formulas are written against.

Every node's ``apply(ops, grads)`` is written once. In a plain backward ``ops`` is
``RAW_OPS``: gradients are raw arrays and formulas cost what numpy costs, with no graph
and no tensor objects. Under ``create_graph=True`` it is ``TENSOR_OPS``: gradients are
tensors and the same formulas record a differentiable graph (double backward). Python's
operators (``+ - * / **``) work on both, so formulas use them directly and call
``ops.<name>`` only for what operators cannot say.
"""
from __future__ import annotations

from reference.array_backend import namespace_of, scatter_index, sum_to, to_device, zero_at_index
from reference.ops import inplace, pointwise, reduction, views
from reference.tensor import Tensor


class RawOps:
    """Formulas on raw arrays: the fast path of every backward."""

    differentiable = False

    # conversions between the engine's values and tensors (for hooks, custom Functions)
    @staticmethod
    def as_tensor(value):
        return Tensor._wrap(value)

    @staticmethod
    def from_tensor(tensor):
        return tensor._array

    @staticmethod
    def raw(value):
        return value

    @staticmethod
    def fresh_grad(grad):
        return Tensor._wrap(namespace_of(grad).array(grad, copy=True))

    @staticmethod
    def fresh_leaf_grad(grad, variable):
        return RawOps.fresh_grad(grad)

    sum_to = staticmethod(sum_to)

    @staticmethod
    def expand_to(grad, shape):
        return namespace_of(grad).broadcast_to(grad, shape)

    @staticmethod
    def reshape(grad, shape):
        return grad.reshape(shape)

    @staticmethod
    def swapaxes(grad, a, b):
        return namespace_of(grad).swapaxes(grad, a, b)

    @staticmethod
    def mT(grad):
        return namespace_of(grad).swapaxes(grad, -1, -2)

    @staticmethod
    def matmul(a, b):
        return namespace_of(a).matmul(a, b)

    @staticmethod
    def exp(x):
        return namespace_of(x).exp(x)

    @staticmethod
    def log(x):
        return namespace_of(x).log(x)

    @staticmethod
    def sin(x):
        return namespace_of(x).sin(x)

    @staticmethod
    def cos(x):
        return namespace_of(x).cos(x)

    @staticmethod
    def sign(x):
        return namespace_of(x).sign(x)

    @staticmethod
    def positive_mask(x):
        """1 where x > 0 else 0, in x's dtype."""
        return (x > 0).astype(x.dtype)

    @staticmethod
    def sum_dims(grad, dims, keepdim):
        return namespace_of(grad).sum(grad, axis=dims, keepdims=keepdim)

    @staticmethod
    def unsqueeze_dims(grad, dims):
        return namespace_of(grad).expand_dims(grad, dims) if dims else grad

    scatter_index = staticmethod(scatter_index)
    scatter_add = staticmethod(scatter_index)  # gather's backward: the same sum on arrays

    @staticmethod
    def index(grad, index):
        return grad[index]

    zero_at_index = staticmethod(zero_at_index)

    @staticmethod
    def zeros(shape, like):
        """Zeros of ``shape`` in ``like``'s dtype and device."""
        return namespace_of(like).zeros(shape, dtype=like.dtype)

    @staticmethod
    def cat(parts, dim):
        return namespace_of(parts[0]).concatenate(parts, axis=dim)

    @staticmethod
    def to_dtype_of(grad, like_dtype):
        return grad.astype(like_dtype.numpy, copy=False)

    to_device = staticmethod(to_device)


class TensorOps:
    """The same formulas on tensors, recording a graph (``create_graph=True``)."""

    differentiable = True

    @staticmethod
    def as_tensor(value):
        return value

    @staticmethod
    def from_tensor(tensor):
        return tensor

    @staticmethod
    def raw(value):
        return value._array

    @staticmethod
    def fresh_grad(grad):
        return grad.clone()

    @staticmethod
    def fresh_leaf_grad(grad, variable):
        """A leaf's first ``.grad`` under create_graph. torch 2.13 makes it in the leaf's layout:
        a new empty tensor like the leaf, with the gradient copied in (a CopyBackwards node, and
        version 1, even for a gradient without history); a clone when the leaf's memory is not
        dense."""
        data = variable._array
        if not _non_overlapping_and_dense(data):
            return grad.clone()
        return inplace.copy_(Tensor._wrap(namespace_of(data).empty_like(data)), grad)

    @staticmethod
    def sum_to(grad, shape):
        return reduction.sum_to_size(grad, shape)

    @staticmethod
    def expand_to(grad, shape):
        return grad.expand(*shape)

    @staticmethod
    def reshape(grad, shape):
        return grad.reshape(*shape) if shape else grad.reshape(())

    @staticmethod
    def swapaxes(grad, a, b):
        return grad.transpose(a, b)

    @staticmethod
    def mT(grad):
        return grad.transpose(-1, -2)

    @staticmethod
    def matmul(a, b):
        return a @ b

    @staticmethod
    def exp(x):
        return x.exp()

    @staticmethod
    def log(x):
        return x.log()

    @staticmethod
    def sin(x):
        return x.sin()

    @staticmethod
    def cos(x):
        return x.cos()

    @staticmethod
    def sign(x):
        return x.sign()

    @staticmethod
    def positive_mask(x):
        return pointwise.to_dtype(x.detach() > 0, x.dtype)

    @staticmethod
    def sum_dims(grad, dims, keepdim):
        return grad.sum(dim=dims, keepdim=keepdim)

    @staticmethod
    def unsqueeze_dims(grad, dims):
        for d in sorted(dims):
            grad = grad.unsqueeze(d)
        return grad

    @staticmethod
    def scatter_index(grad, shape, index):
        return views.scatter_index(grad, shape, index)

    @staticmethod
    def scatter_add(grad, shape, index):
        return views.scatter_add(grad, shape, index)

    @staticmethod
    def index(grad, index):
        return grad[index]

    @staticmethod
    def zero_at_index(grad, index):
        return views.zero_at_index(grad, index)

    @staticmethod
    def zeros(shape, like):
        return Tensor._wrap(namespace_of(like._array).zeros(shape, dtype=like._array.dtype))

    @staticmethod
    def cat(parts, dim):
        return views.cat(parts, dim)

    @staticmethod
    def to_dtype_of(grad, like_dtype):
        return pointwise.to_dtype(grad, like_dtype)

    @staticmethod
    def to_device(grad, device_type):
        return pointwise.to_device(grad, device_type)


def _non_overlapping_and_dense(array) -> bool:
    """Whether the array's elements fill its memory exactly once, in some order of its axes
    (torch's is_non_overlapping_and_dense: contiguous up to a permutation of the dimensions)."""
    expected = array.itemsize
    for stride, size in sorted((st, sz) for st, sz in zip(array.strides, array.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


RAW_OPS = RawOps()
TENSOR_OPS = TensorOps()
