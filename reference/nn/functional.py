"""``nn.functional``: the stateless functions modules are made of."""
from __future__ import annotations

from reference.ops.linalg import addmm
from reference.tensor import Tensor


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - torch's parameter name
    """max(input, 0); with ``inplace=True`` written into ``input`` (``input.relu_()``)."""
    return input.relu_() if inplace else input.relu()


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``: a fully connected layer. With a bias, one ``addmm`` as in
    torch 2.13 (``AddmmBackward0`` over the bias, the input and ``TBackward0`` of the weight;
    an input of other than two dimensions is viewed as a matrix and the result viewed back)."""
    if bias is None or input.dim() == 0:
        out = input.matmul(weight.t())
        return out if bias is None else out + bias
    if input.dim() == 2:
        return addmm(bias, input, weight.t())
    shape = tuple(input.shape)
    out = addmm(bias, input.reshape(-1, shape[-1]), weight.t())
    return out.view(*shape[:-1], out.shape[-1])
