"""``nn.functional``: the stateless functions modules are made of."""
from __future__ import annotations

from reference.tensor import Tensor


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - torch's parameter name
    """max(input, 0); with ``inplace=True`` written into ``input`` (``input.relu_()``)."""
    return input.relu_() if inplace else input.relu()


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``: a fully connected layer."""
    out = input.matmul(weight.t())
    return out if bias is None else out + bias
