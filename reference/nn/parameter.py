"""``nn.Parameter``: a leaf tensor that a module registers as one of its parameters."""
from __future__ import annotations

from reference.creation import empty
from reference.overrides import _disabled_torch_function_impl
from reference.tensor import Tensor, instance_of


class Parameter(Tensor):
    """A leaf sharing ``data``'s memory and version counter (as ``data.detach()`` does), that
    requires grad unless told otherwise; assigned to a Module attribute, it is registered.
    Ops on it return plain tensors: it takes no part in subclass dispatch, as in torch."""

    __torch_function__ = _disabled_torch_function_impl
    _prints_as_tensor = True  # inside "Parameter containing:", as torch

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, not {type(data).__name__}")
        out = instance_of(cls, data._array)
        out._version_counter = data._version_counter
        out.requires_grad_(requires_grad)  # refuses an integer dtype, as torch does
        return out

    def __init__(self, data=None, requires_grad=True):
        pass  # all done in __new__ (Tensor.__init__ would copy ``data``)

    def __deepcopy__(self, memo):
        # as torch: a Parameter of a clone of the data, same requires_grad; .grad is not copied
        if id(self) in memo:
            return memo[id(self)]
        result = memo[id(self)] = type(self)(self.detach().clone(), self._requires_grad)
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
