"""Tensor dtypes with PyTorch's public names, each backed by a numpy dtype."""
from __future__ import annotations

import numpy


class dtype:
    """A tensor element type (``reference.float32`` ...), comparable by identity."""

    __slots__ = ("name", "numpy", "is_floating_point", "legacy_name", "scalar_name", "c_name", "__weakref__")

    def __init__(self, name: str, numpy_dtype, is_floating_point: bool, legacy_name: str, scalar_name: str,
                 c_name: str):
        self.name = name
        self.numpy = numpy.dtype(numpy_dtype)
        self.is_floating_point = is_floating_point
        # the names torch's messages use: tensor type, scalar type, C++ element type
        self.legacy_name = legacy_name
        self.scalar_name = scalar_name
        self.c_name = c_name

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    def __repr__(self) -> str:
        return f"reference.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


float32 = dtype("float32", numpy.float32, True, "FloatTensor", "Float", "float")
float64 = dtype("float64", numpy.float64, True, "DoubleTensor", "Double", "double")
int64 = dtype("int64", numpy.int64, False, "LongTensor", "Long", "long int")
int32 = dtype("int32", numpy.int32, False, "IntTensor", "Int", "int")
bool_ = dtype("bool", numpy.bool_, False, "BoolTensor", "Bool", "bool")
float = float32  # noqa: A001 - torch's alias
double = float64
long = int64
int = int32  # noqa: A001

_ALL = (float32, float64, int64, int32, bool_)
_BY_NUMPY = {d.numpy: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The reference dtype of a numpy dtype; other numpy types are refused clearly."""
    try:
        return _BY_NUMPY[numpy.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"the reference engine supports float32, float64, int64, int32 and bool; got numpy dtype {np_dtype}"
        ) from None


def to_numpy_dtype(dt) -> numpy.dtype:
    if isinstance(dt, dtype):
        return dt.numpy
    raise TypeError(f"dtype must be a reference dtype such as reference.float32, got {dt!r}")
