"""all / any: bool reductions that never join the graph."""
from __future__ import annotations

import reference as R


def test_all_and_any_reduce_to_bool_tensors_without_history():
    x = R.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
    assert x.all().tolist() is False and R.any(x).tolist() is True
    assert x.all(dim=1).tolist() == [False, True] and x.any(0, keepdim=True).tolist() == [[True, True]]
    assert x.all().grad_fn is None and not x.all().requires_grad
    assert (x * 0 == 0).all().tolist() is True
